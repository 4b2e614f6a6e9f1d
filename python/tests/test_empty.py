"""Empty batches, heads, tokens and queries: every function returns an empty
result of the shape torch's own operations give (worked out here from the
definitions), of the input's kind, or the caller's `out` untouched. posenc's
C ABI takes these calls itself (count axes may be 0). A zero axis that
leaves a result with elements is still posenc's to refuse."""
import numpy as np
import pytest
import torch

import posenc


def randn(*shape):
    return torch.randn(*shape)


def rope_config():
    return posenc.rope_config(8)


# (name, call, expected shape): each call's shape follows its definition,
# with torch's empty-tensor rules (x + p keeps x's shape, a matmul over no
# rows has none, cat along the last axis adds its sizes).
CASES = [
    ("sinusoid_table", lambda: posenc.sinusoid_table(0, 6, dtype=torch.float32), (0, 6)),
    ("sinusoid_table_2d", lambda: posenc.sinusoid_table_2d(0, 5, 8, dtype=torch.float32), (0, 8)),
    ("add_sinusoid_batch", lambda: posenc.add_sinusoid(randn(0, 7, 6)), (0, 7, 6)),
    ("add_sinusoid_tokens", lambda: posenc.add_sinusoid(randn(2, 0, 6), offset=3), (2, 0, 6)),
    ("add_learned", lambda: posenc.add_learned(randn(0, 3, 6), randn(5, 6)), (0, 3, 6)),
    ("concat_sinusoid", lambda: posenc.concat_sinusoid(randn(2, 0, 6), 4), (2, 0, 10)),
    ("absolute_logits", lambda: posenc.absolute_logits(randn(2, 0, 5, 4), randn(7, 4)),
     (2, 0, 5, 7)),
    ("absolute_logits_no_keys", lambda: posenc.absolute_logits(randn(2, 3, 5, 4), randn(0, 4)),
     (2, 3, 5, 0)),
    ("rel_to_abs", lambda: posenc.rel_to_abs(randn(0, 2, 4, 7)), (0, 2, 4, 4)),
    ("relative_logits_1d", lambda: posenc.relative_logits_1d(randn(0, 2, 5, 4), randn(9, 4)),
     (0, 2, 5, 5)),
    ("relative_logits_1d_no_queries",
     lambda: posenc.relative_logits_1d(randn(1, 2, 0, 4), randn(9, 4)), (1, 2, 0, 10)),
    ("relative_logits_1d_no_keys",
     lambda: posenc.relative_logits_1d(randn(1, 2, 5, 4), randn(4, 4)), (1, 2, 5, 0)),
    ("relative_logits_2d",
     lambda: posenc.relative_logits_2d(randn(0, 2, 6, 4), randn(3, 4), randn(5, 4), 2, 3),
     (0, 2, 6, 6)),
    ("relative_logits_2d_decomposed",
     lambda: posenc.relative_logits_2d_decomposed(randn(2, 0, 6, 4), randn(3, 4), randn(5, 4),
                                                  2, 3), ((2, 0, 6, 2), (2, 0, 6, 3))),
    ("relative_logits_2d_maps",
     lambda: posenc.relative_logits_2d_maps(randn(0, 2, 6, 4), randn(3, 4), randn(5, 4), (2, 3)),
     ((0, 2, 6, 2), (0, 2, 6, 3))),
    ("position_bias_no_queries",
     lambda: posenc.position_bias("alibi", None, heads=4, q_len=0, kv_len=9, bidirectional=False,
                                  dtype=torch.float32), (4, 0, 9)),
    ("position_bias_no_keys",
     lambda: posenc.position_bias("t5", randn(32, 3), q_len=5, kv_len=0,
                                  bidirectional=True), (3, 5, 0)),
    ("alibi_slopes", lambda: posenc.alibi_slopes(0, dtype=torch.float32), (0,)),
    ("resize_relative_table", lambda: posenc.resize_relative_table(randn(5, 4), 0), (0, 4)),
    ("rope_batch", lambda: posenc.rope(randn(0, 5, 3, 8), config=rope_config()), (0, 5, 3, 8)),
    ("rope_tokens", lambda: posenc.rope(randn(2, 0, 3, 8), cache=posenc.RopeCache(rope_config(),
                                                                                  4)),
     (2, 0, 3, 8)),
    ("rope_qk", lambda: posenc.rope_qk(randn(2, 0, 4, 8), randn(2, 0, 2, 8),
                                       config=rope_config()), ((2, 0, 4, 8), (2, 0, 2, 8))),
    ("bottleneck_mhsa",
     lambda: posenc.bottleneck_mhsa(randn(0, 6, 3, 4), randn(24, 6), randn(5, 4), randn(7, 4),
                                    2), (0, 8, 3, 4)),
]


def shapes_of(result):
    return (tuple(r.shape for r in result) if isinstance(result, tuple)
            else tuple(result.shape))


@pytest.mark.parametrize("name,call,shape", CASES, ids=[c[0] for c in CASES])
def test_empty_axes_give_empty_results(name, call, shape):
    result = call()
    assert shapes_of(result) == shape
    for r in result if isinstance(result, tuple) else (result,):
        assert isinstance(r, torch.Tensor) and r.dtype == torch.float32


def test_empty_results_on_numpy_and_torch_agree():
    """The shapes are torch's: x + table rows, cat, q @ table^T."""
    x, table = randn(0, 3, 6), randn(5, 6)
    assert posenc.add_learned(x.numpy(), table.numpy()).shape == (x + table[:3]).shape
    assert posenc.concat_sinusoid(x.numpy(), 4).shape == torch.cat(
        [x, torch.zeros(0, 3, 4)], dim=2).shape
    q = randn(2, 0, 5, 4)
    assert posenc.absolute_logits(q.numpy(), table[:, :4].numpy()).shape == (
        q @ table[:, :4].T).shape
    assert isinstance(posenc.sinusoid_table(0, 6), np.ndarray)


def test_an_empty_call_returns_out_as_it_is():
    x = randn(0, 4, 6)
    assert posenc.add_sinusoid(x, out=x) is x
    out = torch.empty(2, 0, 5, 7)
    assert posenc.absolute_logits(randn(2, 0, 5, 4), randn(7, 4), out=out) is out
    q_out, k_out = torch.empty(0, 3, 2, 8), torch.empty(0, 3, 1, 8)
    q, k = posenc.rope_qk(randn(0, 3, 2, 8), randn(0, 3, 1, 8), config=rope_config(),
                          q_out=q_out, k_out=k_out)
    assert q is q_out and k is k_out


def test_empty_calls_still_check_what_python_checks():
    with pytest.raises(ValueError, match="table: expected 6 columns"):
        posenc.add_learned(randn(0, 3, 6), randn(5, 4))
    with pytest.raises(ValueError, match="out: expected shape"):
        posenc.add_sinusoid(randn(0, 3, 6), out=torch.empty(0, 3, 5))
    with pytest.raises(ValueError, match="positions: expected shape"):
        posenc.rope(randn(0, 5, 3, 8), config=rope_config(),
                    positions=torch.zeros(1, 5, dtype=torch.int64))
    with pytest.raises(ValueError, match="layout:"):
        posenc.add_sinusoid(randn(0, 3, 6), layout="bogus")
    with pytest.raises(ValueError, match="layout:"):
        posenc.sinusoid_table(0, 6, layout="bogus")
    with pytest.raises(ValueError, match="width: must be >= 0"):
        posenc.sinusoid_table_2d(0, -3, 8)
    with pytest.raises(ValueError, match="kv_len: must be >= 0"):
        posenc.position_bias("alibi", None, heads=4, q_len=0, kv_len=-1, bidirectional=False)


def test_a_zero_axis_that_leaves_elements_is_refused():
    """No reduction over an empty axis, no projection of no channels:
    posenc refuses those axes at 0, and says which one."""
    with pytest.raises(posenc.Error, match="dim must be >= 1"):
        posenc.absolute_logits(randn(2, 3, 5, 0), randn(7, 0))
    with pytest.raises(posenc.Error, match="channels must be >= 1"):
        posenc.bottleneck_mhsa(randn(2, 0, 3, 4), randn(24, 0), randn(5, 4), randn(7, 4), 2)
    with pytest.raises(posenc.Error, match="x_dim must be >= 1"):
        posenc.concat_sinusoid(randn(2, 3, 0), 4)
    with pytest.raises(ValueError, match="k: 0 heads for q's 4"):
        posenc.attention(randn(1, 4, 5, 8), randn(1, 0, 5, 8), randn(1, 0, 5, 8))
    with pytest.raises(ValueError, match="k: 2 heads for q's 0"):
        posenc.attention(randn(1, 0, 5, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8))
    # Empty calls keep grouped-query attention's rule: k's heads divide q's.
    with pytest.raises(ValueError, match="k: 3 heads for q's 4"):
        posenc.attention(randn(1, 4, 5, 8), randn(1, 3, 0, 8), randn(1, 3, 0, 8))
    with pytest.raises(ValueError, match="k: 3 heads for q's 4"):
        posenc.attention(randn(0, 4, 5, 8), randn(0, 3, 5, 8), randn(0, 3, 5, 8))


def test_an_empty_batch_takes_a_mask_of_no_items():
    for module in (torch, np):
        q = module.zeros((0, 2, 3, 4), dtype=module.float32)
        mask = module.ones((0, 2, 3, 3), dtype=module.bool_ if module is np else torch.bool)
        assert posenc.attention(q, q, q, mask=mask).shape == (0, 2, 3, 4)


def test_no_keys_give_zeros_in_every_layout_and_dtype():
    q, k = randn(2, 3, 5, 8), randn(2, 3, 0, 8)
    padded = torch.full((2, 5, 3, 16), 7.0)
    out = padded[..., :8]  # bthd rows with gaps between them
    posenc.attention(q.transpose(1, 2), k.transpose(1, 2), k.transpose(1, 2), layout="bthd",
                     causal=True, out=out)
    assert torch.equal(out, torch.zeros(2, 5, 3, 8))
    assert torch.equal(padded[..., 8:], torch.full((2, 5, 3, 8), 7.0))
    result = posenc.attention(q, k, k, bias="alibi", bidirectional=False,
                              out_dtype=torch.bfloat16)
    assert result.dtype == torch.bfloat16 and torch.equal(result.float(), torch.zeros(2, 3, 5, 8))
    assert posenc.attention_workspace_size(q, k, k) == 0


def test_empty_index_tensors_are_given_tensors():
    """An empty torch tensor has no storage; it is still a tensor given,
    not the option left out, on torch as on numpy."""
    cache = posenc.RopeCache(rope_config(), 4)
    for module in (torch, np):
        ids = module.zeros((0, 5), dtype=module.int64)
        assert posenc.rope(randn(0, 5, 3, 8), cache=cache, positions=ids).shape == (0, 5, 3, 8)
        with pytest.raises(posenc.Error, match="offset must be 0"):
            posenc.rope(randn(2, 0, 3, 8), config=rope_config(), offset=3,
                        positions=module.zeros((2, 0), dtype=module.int64))
        q = randn(0, 2, 3, 4)
        with pytest.raises(posenc.Error, match="query_offset must be 0"):
            posenc.attention(q, q, q, query_offset=3,
                             query_offsets=module.zeros((0,), dtype=module.int64))


def test_tables_of_no_rows():
    """The row rules give no rows (not -1) without queries and keys."""
    q = randn(1, 2, 0, 8)
    assert posenc.attention(q, q, q, bias="relative_1d", table=randn(0, 8)).shape == (1, 2, 0, 8)
    assert posenc.relative_logits_1d(randn(1, 2, 0, 4), randn(0, 4), keys=0).shape == (1, 2, 0, 0)
    assert posenc.rel_to_abs(randn(2, 2, 0, 0)).shape == (2, 2, 0, 0)
    assert posenc.add_learned(randn(2, 0, 6), randn(0, 6)).shape == (2, 0, 6)


def test_rope_qk_with_one_side_empty_rotates_the_other():
    k = randn(2, 3, 2, 8)
    q_out, k_out = posenc.rope_qk(randn(2, 3, 0, 8), k, config=rope_config())
    assert q_out.shape == (2, 3, 0, 8)
    assert torch.equal(k_out, posenc.rope(k, config=rope_config()))


def test_empty_numpy_arrays_are_dense():
    """numpy gives an array without elements strides of 0; it is read as
    dense, as torch's is_contiguous calls such a tensor, also where another
    tensor of the call is passed with its strides (q, v and out here)."""
    q, k = np.zeros((1, 4, 5, 8), np.float32), np.zeros((1, 2, 0, 8), np.float32)
    assert np.array_equal(posenc.attention(q, k, k), np.zeros((1, 4, 5, 8), np.float32))
    q_bthd = np.ones((1, 5, 4, 8), np.float32).transpose(0, 2, 1, 3)
    for keys in (k, torch.from_numpy(k)):
        assert np.array_equal(posenc.attention(q_bthd, keys, keys),
                              np.zeros((1, 4, 5, 8), np.float32))
    v = np.ones((1, 3, 2, 8), np.float32).transpose(0, 2, 1, 3)
    out = np.zeros((1, 2, 0, 8), np.float32)
    assert posenc.attention(np.zeros((1, 2, 0, 8), np.float32), v, v, out=out) is out
    assert posenc.attention(q[:0], q[:0], q[:0]).shape == (0, 4, 5, 8)
    assert posenc.add_sinusoid(np.zeros((0, 3, 6), np.float32)).shape == (0, 3, 6)
