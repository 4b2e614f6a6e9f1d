"""The biases that need no q (posenc/bias.h) through the package: the dense
position_bias of each kind against references written from the models'
definitions (reference.py), the slopes and table resizes against Press et
al.'s code and torch's interpolate, the checks naming the argument, and
posenc.attention with each kind against the float64 attention with the
reference bias as its mask."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import posenc
import reference
from checks import close

rng = np.random.default_rng(23)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("window", [(3, 3), (2, 5), (1, 4), (7, 7)])
@pytest.mark.parametrize("class_token", [False, True])
def test_table_2d_is_swin_and_beit_index(window, class_token):
    heads = 3
    wh, ww = window
    table = randn((2 * wh - 1) * (2 * ww - 1) + 3 * class_token, heads)
    out = posenc.position_bias("table_2d", torch.from_numpy(table), window=window,
                               class_token=class_token)
    index = reference.swin_index(wh, ww, class_token)
    assert isinstance(out, torch.Tensor) and out.shape == (heads,) + index.shape
    np.testing.assert_array_equal(out.numpy(), table[index].transpose(2, 0, 1))


@pytest.mark.parametrize("offset", [0, 3, -2])
def test_table_1d_clipped_key_minus_query(offset):
    table = randn(2, 2 * 3 + 1)
    out = posenc.position_bias("table_1d", table, q_len=5, kv_len=9, query_offset=offset)
    d = np.clip(reference.distances(5, 9, offset), -3, 3) + 3
    np.testing.assert_array_equal(out, table[:, d])


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (8, 20), (5, 9)])
def test_t5_buckets(bidirectional, num_buckets, max_distance):
    if bidirectional and num_buckets < 4:
        pytest.skip("bidirectional needs 4 buckets")
    table = randn(num_buckets, 4)
    q_len, kv_len, offset = 37, 300, 150
    out = posenc.position_bias("t5", table, q_len=q_len, kv_len=kv_len, query_offset=offset,
                               max_distance=max_distance, bidirectional=bidirectional)
    buckets = reference.t5_buckets(reference.distances(q_len, kv_len, offset), bidirectional,
                                   num_buckets, max_distance)
    np.testing.assert_array_equal(out, table[buckets].transpose(2, 0, 1))


@pytest.mark.parametrize("heads", [1, 2, 5, 8, 12, 16, 24])
def test_alibi_slopes_are_press_et_al(heads):
    np.testing.assert_allclose(posenc.alibi_slopes(heads), reference.alibi_slopes(heads),
                               rtol=1e-7)
    assert isinstance(posenc.alibi_slopes(heads, dtype=torch.float32), torch.Tensor)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_alibi_bias(bidirectional):
    d = reference.distances(4, 6, 2)
    slopes = np.asarray(reference.alibi_slopes(3))[:, None, None]
    expected = -slopes * np.abs(d) if bidirectional else slopes * d
    close(posenc.position_bias("alibi", heads=3, q_len=4, kv_len=6, query_offset=2,
                               bidirectional=bidirectional), expected, 1e-6)
    own = randn(3)
    close(posenc.position_bias("alibi", own, q_len=4, kv_len=6, query_offset=2,
                               bidirectional=bidirectional),
          (-own[:, None, None] * np.abs(d)) if bidirectional else own[:, None, None] * d, 1e-6)


def test_resize_relative_table_is_torch_linear():
    table = torch.randn(13, 6)
    out = posenc.resize_relative_table(table, 27)
    expected = F.interpolate(table.t()[None], size=27, mode="linear")[0].t()
    close(out, expected.numpy())


def test_resizes_carry_non_finite_entries_as_torch():
    """inf * 0 is NaN where torch's kernels weigh an entry by 0; torch's 1D
    linear kernel, unlike a 2D one, has no second axis to read."""
    inf = float("inf")
    for rows, new_rows in [(2, 3), (2, 2), (5, 3)]:
        table = torch.arange(float(rows * 2)).reshape(rows, 2)
        table[0, 0], table[-1, 1] = inf, -inf
        expected = F.interpolate(table.t()[None], size=new_rows, mode="linear")[0].t()
        out = posenc.resize_relative_table(table, new_rows)
        for kind in (torch.isnan, torch.isposinf, torch.isneginf):
            assert torch.equal(kind(out), kind(expected)), (rows, new_rows)
    for (wh, ww), (nh, nw) in [((1, 1), (2, 2)), ((2, 2), (2, 2)), ((2, 3), (3, 2))]:
        grid = (2 * wh - 1) * (2 * ww - 1)
        table = torch.randn(grid, 2)
        table[0, 0] = inf
        expected = F.interpolate(table.t().reshape(1, 2, 2 * wh - 1, 2 * ww - 1),
                                 size=(2 * nh - 1, 2 * nw - 1), mode="bicubic",
                                 align_corners=False).reshape(2, -1).t()
        out = posenc.resize_relative_bias_table_2d(table, (wh, ww), (nh, nw))
        for kind in (torch.isnan, torch.isposinf, torch.isneginf):
            assert torch.equal(kind(out), kind(expected)), ((wh, ww), (nh, nw))


@pytest.mark.parametrize("class_token", [False, True])
def test_resize_relative_bias_table_2d_is_torch_bicubic(class_token):
    heads, (wh, ww), (nh, nw) = 3, (3, 4), (5, 6)
    grid = (2 * wh - 1) * (2 * ww - 1)
    table = torch.randn(grid + 3 * class_token, heads)
    out = posenc.resize_relative_bias_table_2d(table, (wh, ww), (nh, nw), class_token)
    resized = F.interpolate(table[:grid].t().reshape(1, heads, 2 * wh - 1, 2 * ww - 1),
                            size=(2 * nh - 1, 2 * nw - 1), mode="bicubic",
                            align_corners=False)
    expected = torch.cat([resized.reshape(heads, -1).t(), table[grid:]])
    close(out, expected.numpy())


def test_checks_name_the_argument():
    with pytest.raises(ValueError, match="table: a table_2d table is \\[25, heads\\]"):
        posenc.position_bias("table_2d", randn(24, 2), window=(3, 3))
    with pytest.raises(ValueError, match="window: the table_2d bias needs"):
        posenc.position_bias("table_2d", randn(25, 2))
    with pytest.raises(ValueError, match="bidirectional: say True"):
        posenc.position_bias("t5", randn(32, 2), q_len=3)
    with pytest.raises(ValueError, match="max_distance: 3, but the table's 5 columns"):
        posenc.position_bias("table_1d", randn(2, 5), q_len=3, max_distance=3)
    with pytest.raises(ValueError, match="num_buckets: not a parameter of the alibi"):
        posenc.position_bias("alibi", heads=2, q_len=3, bidirectional=True, num_buckets=4)
    with pytest.raises(ValueError, match="kind: 'rope' is not one of"):
        posenc.position_bias("rope", heads=2, q_len=3)
    with pytest.raises(posenc.Error, match="max_distance") as error:
        posenc.position_bias("t5", randn(32, 2), q_len=3, max_distance=8, bidirectional=True)
    assert error.value.status == 2
    q = torch.randn(1, 2, 10, 8)
    with pytest.raises(ValueError, match="table: has 3 heads, not 2"):
        posenc.attention(q, q, q, bias="table_2d", table=torch.randn(28, 3), window=(3, 3),
                         class_token=True)
    with pytest.raises(ValueError, match="window, class_token.*not of 'relative_1d'"):
        posenc.attention(q, q, q, bias="relative_1d", table=torch.randn(19, 8), window=(3, 3))
    with pytest.raises(TypeError, match="table: must have q's dtype"):
        posenc.attention(q, q, q, bias="table_1d", table=torch.randn(2, 5, dtype=torch.bfloat16))


def _attention_cases():
    """(name, heads, q_len, kv_len, options, dense bias [heads, q_len, kv_len])."""
    t2 = randn(3 * 7 + 3, 2)
    yield "table_2d class token", 2, 9, 9, dict(bias="table_2d", table=t2, window=(2, 4),
                                                  class_token=True), \
        t2[reference.swin_index(2, 4, True)].transpose(2, 0, 1)
    t1 = randn(2, 7)
    d = reference.distances(5, 11, 6)
    yield "table_1d decode offset", 2, 5, 11, dict(bias="table_1d", table=t1, query_offset=6), \
        t1[:, np.clip(d, -3, 3) + 3]
    t5 = randn(32, 2)
    d = reference.distances(9, 200)
    yield "t5 encoder", 2, 9, 200, dict(bias="t5", table=t5, bidirectional=True), \
        t5[reference.t5_buckets(d, True, 32, 128)].transpose(2, 0, 1)
    d = reference.distances(6, 6)
    slopes = np.asarray(reference.alibi_slopes(2))[:, None, None]
    yield "alibi causal", 2, 6, 6, dict(bias="alibi", bidirectional=False, causal=True), \
        slopes * d


ATTENTION_CASES = {case[0]: case[1:] for case in _attention_cases()}


@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_attention_with_each_kind(case):
    heads, q_len, kv_len, options, bias = ATTENTION_CASES[case]
    q, k, v = randn(2, heads, q_len, 8), randn(2, heads, kv_len, 8), randn(2, heads, kv_len, 8)
    out = posenc.attention(q, k, v, **options)
    expected = reference.attention(q, k, v, 8 ** -0.5, causal=options.get("causal", False),
                                   offset=options.get("query_offset", 0), mask=bias[None])
    close(out, expected)


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_attention_table_2d_with_swin_windows_folded_into_the_batch(dtype, tolerance):
    """Swin's layout: [B*nW, N, heads, d] views of a packed qkv, the shifted
    windows' mask [nW, 1, N, N] read by batch item b as mask b % nW."""
    windows, images, heads, window = 3, 2, 2, (3, 5)
    tokens = window[0] * window[1]
    qkv = torch.randn(images * windows, tokens, 3, heads, 8)
    table = torch.randn(5 * 9, heads)
    mask = torch.where(torch.rand(windows, 1, tokens, tokens) < 0.3, -100.0, 0.0)
    q, k, v = qkv.to(dtype).unbind(2)
    out = posenc.attention(q, k, v, layout="bthd", bias="table_2d", table=table.to(dtype),
                           window=window, mask=mask, out_dtype=torch.float32)
    bias = table.to(dtype).float().numpy()[reference.swin_index(*window)].transpose(2, 0, 1)
    bhtd = [x.float().transpose(1, 2).numpy() for x in (q, k, v)]
    expected = reference.attention(*bhtd, 8 ** -0.5,
                                   mask=bias[None] + np.tile(mask.numpy(), (images, 1, 1, 1)))
    close(out.transpose(1, 2), expected, tolerance)
