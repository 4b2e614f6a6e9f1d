"""Every op family through the package against the float64 references of
reference.py, on numpy arrays and torch tensors, odd and non-square sizes."""

import math

import numpy as np
import pytest
import torch

import models
import posenc
import reference
from checks import close

rng = np.random.default_rng(17)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("layout", ["interleaved", "split"])
@pytest.mark.parametrize("dim", [1, 7, 64])
def test_sinusoid_table(layout, dim):
    close(posenc.sinusoid_table(13, dim, start=5, layout=layout),
          reference.sinusoid(np.arange(5, 18), dim, layout=layout))
    table = posenc.sinusoid_table(13, dim, start=5, layout=layout, dtype=torch.float32)
    assert isinstance(table, torch.Tensor) and table.shape == (13, dim)


def test_sinusoid_tables_into_a_bf16_out():
    """out's own dtype, bf16 as dtype=torch.bfloat16 gives it."""
    for make, args in ((posenc.sinusoid_table, (13, 8)), (posenc.sinusoid_table_2d, (3, 5, 8))):
        want = make(*args, dtype=torch.bfloat16)
        out = torch.empty(want.shape, dtype=torch.bfloat16)
        assert make(*args, out=out) is out and torch.equal(out, want)


def test_sinusoid_table_2d_rows_then_columns():
    height, width, dim = 3, 5, 12
    x, y = np.repeat(np.arange(height), width), np.tile(np.arange(width), height)
    expected = np.concatenate([reference.sinusoid(x, dim // 2), reference.sinusoid(y, dim // 2)],
                              axis=1)
    close(posenc.sinusoid_table_2d(height, width, dim), expected)


def test_add_sinusoid_learned_concat():
    x = randn(2, 7, 10)
    p = reference.sinusoid(np.arange(3, 10), 10, layout="split")
    close(posenc.add_sinusoid(x, offset=3, layout="split"), x + p)
    table = randn(12, 10)
    close(posenc.add_learned(torch.from_numpy(x), torch.from_numpy(table), offset=4),
          x + table[4:11])
    close(posenc.concat_sinusoid(x, 5, offset=3),
          np.concatenate([x, np.broadcast_to(reference.sinusoid(np.arange(3, 10), 5),
                                             (2, 7, 5))], axis=2))


def test_add_sinusoid_in_place():
    x = torch.randn(1, 4, 6)
    expected = x.numpy() + reference.sinusoid(np.arange(4), 6)
    assert posenc.add_sinusoid(x, out=x) is x
    close(x, expected)


def test_absolute_logits_shared_and_per_head():
    q = randn(2, 3, 5, 8)
    shared, per_head = randn(7, 8), randn(3, 7, 8)
    close(posenc.absolute_logits(q, shared), np.einsum("bhid,jd->bhij", q, shared))
    close(posenc.absolute_logits(q, per_head), np.einsum("bhid,hjd->bhij", q, per_head))


def test_rel_to_abs():
    x = randn(2, 3, 5, 9)
    i, j = np.arange(5)[:, None], np.arange(5)[None, :]
    np.testing.assert_array_equal(posenc.rel_to_abs(x), x[:, :, i, j - i + 4])


@pytest.mark.parametrize("offset,clip,causal", [(0, 0, False), (3, 0, True), (2, 2, False)])
def test_relative_logits_1d(offset, clip, causal):
    q = randn(1, 2, 4, 6)
    keys = 4 + offset
    rows = reference.relative_rows_1d(4, keys, offset, clip)
    table = randn(2 * clip + 1 if clip else offset + 4 + keys - 1, 6)
    expected = reference.table_logits(q.astype(np.float64), table, rows)
    if causal:
        visible = np.arange(keys)[None, :] <= offset + np.arange(4)[:, None]
        expected = np.where(visible, expected, -np.inf)
    actual = posenc.relative_logits_1d(q, table, keys=keys if clip else None,
                                       query_offset=offset, clip=clip, causal=causal)
    assert actual.shape == (1, 2, 4, keys)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_relative_logits_2d_non_square():
    height, width = 3, 5
    q = randn(2, 2, height * width, 8)
    rh, rw = randn(2, 2 * height - 1, 8), randn(2, 2 * width - 1, 8)
    full = reference.relative_2d(q.astype(np.float64), rh, rw, height, width)
    close(posenc.relative_logits_2d(q, rh, rw, height, width), full)
    rel_h, rel_w = posenc.relative_logits_2d_decomposed(torch.from_numpy(q), torch.from_numpy(rh),
                                                        torch.from_numpy(rw), height, width)
    recombined = (rel_h.numpy()[:, :, :, :, None] + rel_w.numpy()[:, :, :, None, :])
    close(recombined.reshape(full.shape), full)


def sam_rows(q_size, k_size):
    """The table row of every (query, key) coordinate pair along one axis by
    the rule of posenc/attention.h (SAM's get_rel_pos): a*max(k/q, 1) -
    c*max(q/k, 1) + (k-1)*max(q/k, 1), the ratios and the offset rounded to
    float32, products, difference and sum in float32, truncated."""
    q_scale, k_scale = max(k_size / q_size, 1.0), max(q_size / k_size, 1.0)
    a = torch.arange(q_size, dtype=torch.float32)[:, None] * q_scale
    c = torch.arange(k_size, dtype=torch.float32)[None, :] * k_scale
    return ((a - c) + (k_size - 1) * k_scale).long()


def test_sam_rows_by_hand():
    # get_rel_pos(2, 4): 2a - c + 3; get_rel_pos(4, 2): a - 2c + 2.
    assert sam_rows(2, 4).tolist() == [[3, 2, 1, 0], [5, 4, 3, 2]]
    assert sam_rows(4, 2).tolist() == [[2, 0], [3, 1], [4, 2], [5, 3]]
    # get_rel_pos(8, 6) in float32: 3.99999976 -> 3 and 0.99999952 -> 0.
    assert sam_rows(8, 6)[0, 2] == 3 and sam_rows(8, 6)[1, 5] == 0


def sam_decomposed(q, rh, rw, query_map, key_map):
    """SAM's add_decomposed_rel_pos terms in float64, written from its
    definition: with r_q = q as [B*H, X, Y, d] and R = table[rows],
    einsum("bhwc,hkc->bhwk", r_q, Rh) and einsum("bhwc,wkc->bhwk", r_q, Rw);
    per-head tables ([H, rows, d]) take their head's rows."""
    batch, heads, _, dim = q.shape
    r_q = torch.from_numpy(q).double().reshape(batch, heads, *query_map, dim)
    rh, rw = torch.from_numpy(rh).double(), torch.from_numpy(rw).double()
    if rh.dim() == 2:
        rh, rw = rh.expand(heads, *rh.shape), rw.expand(heads, *rw.shape)
    rel_h = torch.stack([torch.einsum("bhwc,hkc->bhwk", r_q[:, h],
                                      rh[h][sam_rows(query_map[0], key_map[0])])
                         for h in range(heads)], dim=1)
    rel_w = torch.stack([torch.einsum("bhwc,wkc->bhwk", r_q[:, h],
                                      rw[h][sam_rows(query_map[1], key_map[1])])
                         for h in range(heads)], dim=1)
    tokens = query_map[0] * query_map[1]
    return (rel_h.reshape(batch, heads, tokens, key_map[0]).numpy(),
            rel_w.reshape(batch, heads, tokens, key_map[1]).numpy())


@pytest.mark.parametrize("query_map, key_map, per_head", [
    ((2, 3), (4, 6), False), ((4, 6), (2, 3), True), ((8, 5), (6, 7), False),
    ((7, 7), (7, 7), True), ((1, 9), (3, 2), False), ((14, 14), (64, 64), False)])
def test_relative_logits_2d_maps_is_sams_add_decomposed_rel_pos(query_map, key_map, per_head):
    heads, dim = 3, 16
    rows_h, rows_w = (2 * max(q, k) - 1 for q, k in zip(query_map, key_map))
    lead = (heads,) if per_head else ()
    q = randn(2, heads, query_map[0] * query_map[1], dim)
    rh, rw = randn(*lead, rows_h, dim), randn(*lead, rows_w, dim)
    want_h, want_w = sam_decomposed(q, rh, rw, query_map, key_map)
    rel_h, rel_w = posenc.relative_logits_2d_maps(torch.from_numpy(q), torch.from_numpy(rh),
                                                  torch.from_numpy(rw), query_map, key_map,
                                                  relative_order="query_minus_key")
    close(rel_h, want_h)
    close(rel_w, want_w)
    # Key minus query reads the mirrored rows: the tables reversed give the same.
    flipped = posenc.relative_logits_2d_maps(q, np.ascontiguousarray(rh[..., ::-1, :]),
                                             np.ascontiguousarray(rw[..., ::-1, :]), query_map,
                                             key_map, relative_order="key_minus_query")
    close(flipped[0], want_h)
    close(flipped[1], want_w)


def test_relative_logits_2d_maps_defaults_are_the_decomposed_logits():
    q, rh, rw = randn(2, 2, 15, 8), randn(5, 8), randn(9, 8)
    rel_h, rel_w = posenc.relative_logits_2d_maps(q, rh, rw, (3, 5))
    want_h, want_w = posenc.relative_logits_2d_decomposed(q, rh, rw, 3, 5)
    assert np.array_equal(rel_h, want_h) and np.array_equal(rel_w, want_w)


ATTENTION_CASES = {
    "none": dict(),
    "causal offset": dict(causal=True, query_offset=2),
    "absolute": dict(bias="absolute", table=(7,)),
    "relative_1d": dict(bias="relative_1d", table=(5 + 7 - 1,)),
    "relative_1d clipped values": dict(bias="relative_1d", max_distance=2, table=(5,),
                                       value_table=(5,)),
    "relative_1d per head": dict(bias="relative_1d", table=(3, 11)),
}


@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_attention_1d_biases(case):
    options = dict(ATTENTION_CASES[case])
    q, k, v = randn(2, 3, 5, 8), randn(2, 3, 7, 8), randn(2, 3, 7, 8)
    for name in ("table", "value_table"):
        if name in options:
            options[name] = randn(*options[name], 8)
    offset, clip = options.get("query_offset", 0), options.get("max_distance", 0)
    rows = reference.relative_rows_1d(5, 7, offset, clip)
    if options.get("bias") == "absolute":
        rows = np.broadcast_to(np.arange(7), (5, 7))
    tables = (lambda q_: reference.table_logits(q_, options["table"], rows)) \
        if "table" in options else None
    expected = reference.attention(q, k, v, 8 ** -0.5, causal=options.get("causal", False),
                                   offset=offset, tables=tables, value_rows=rows,
                                   value_table=options.get("value_table"))
    close(posenc.attention(q, k, v, **options), expected)


@pytest.mark.parametrize("scaled", [True, False])
def test_attention_2d_bthd_torch(scaled):
    height, width, heads, dim = 3, 5, 2, 8
    q, k, v = (torch.randn(2, height * width, heads, dim) for _ in range(3))
    rh, rw = torch.randn(2 * height - 1, dim), torch.randn(2 * width - 1, dim)
    out = posenc.attention(q, k, v, layout="bthd", table_h=rh, table_w=rw, scale=0.3,
                           bias_uses_scaled_q=scaled)
    bhtd = [x.transpose(1, 2).numpy() for x in (q, k, v)]
    expected = reference.attention(
        *bhtd, 0.3, bias_uses_scaled_q=scaled,
        tables=lambda q_: reference.relative_2d(q_, rh.numpy(), rw.numpy(), height, width))
    assert out.shape == q.shape
    close(out.transpose(1, 2), expected)


def test_attention_views_of_packed_qkv_and_caller_out():
    """q, k, v as the views of one packed [B, N, 3, H, d] tensor (strided, or
    copied by a libposenc without STRIDED), out given by the caller."""
    qkv = torch.randn(2, 6, 3, 2, 8)
    q, k, v = qkv.unbind(2)
    assert not q.is_contiguous()
    out = torch.empty(2, 6, 2, 8)
    assert posenc.attention(q, k, v, layout="bthd", out=out) is out
    bhtd = [x.transpose(1, 2).numpy() for x in (q, k, v)]
    close(out.transpose(1, 2), reference.attention(*bhtd, 8 ** -0.5))


def test_attention_strided_out():
    """A caller's out that is a view (every other head of a wider buffer):
    written in place with STRIDED, or refused by a libposenc without it."""
    q, k, v = (torch.randn(1, 5, 2, 8) for _ in range(3))
    buffer = torch.zeros(1, 5, 4, 8)
    out = buffer[:, :, ::2]
    if not posenc.strided_supported():
        with pytest.raises(ValueError, match="out: must be dense"):
            posenc.attention(q, k, v, layout="bthd", out=out)
        return
    posenc.attention(q, k, v, layout="bthd", out=out)
    bhtd = [x.transpose(1, 2).numpy() for x in (q, k, v)]
    close(out.transpose(1, 2), reference.attention(*bhtd, 8 ** -0.5))
    assert bool((buffer[:, :, 1::2] == 0).all())


def test_attention_workspace():
    q = torch.randn(1, 2, 9, 8)
    size = posenc.attention_workspace_size(q, q, q, causal=True)
    assert size > 0
    workspace = torch.empty(size, dtype=torch.uint8)
    close(posenc.attention(q, q, q, causal=True, workspace=workspace),
          reference.attention(q.numpy(), q.numpy(), q.numpy(), 8 ** -0.5, causal=True))
    # attention's own arguments taken as they are; out looked at, not written.
    out = torch.empty(1, 9, 2, 8).transpose(1, 2)
    assert posenc.attention_workspace_size(q, q, q, causal=True, out=out,
                                           workspace=workspace) > 0
    assert out._version == 0
    # ... and refused where attention refuses it: numpy results have no bf16.
    with pytest.raises(TypeError, match="out_dtype: bfloat16 results need torch"):
        posenc.attention_workspace_size(q.numpy(), q.numpy(), q.numpy(), out_dtype="bfloat16")


def test_attention_mask():
    q, k, v = randn(2, 2, 4, 8), randn(2, 2, 6, 8), randn(2, 2, 6, 8)
    mask = np.where(rng.random((2, 1, 4, 6)) < 0.3, -np.inf, 0).astype(np.float32)
    mask[..., 0] = 0
    out = posenc.attention(q, k, v, mask=mask)
    close(out, reference.attention(q, k, v, 8 ** -0.5, mask=mask))


def test_attention_kv_lengths():
    q, k, v = randn(2, 2, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    lengths = np.array([5, 2], dtype=np.int32)
    out = posenc.attention(q, k, v, kv_lengths=lengths)
    mask = np.where(np.arange(5)[None, :] < lengths[:, None], 0, -np.inf)[:, None, None, :]
    close(out, reference.attention(q, k, v, 8 ** -0.5, mask=mask))


def test_attention_q_lengths_and_query_offsets():
    q, k, v = randn(2, 2, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    q_lengths = np.array([3, 1], dtype=np.int64)
    offsets = np.array([2, 0], dtype=np.int64)
    out = posenc.attention(
        q, k, v, causal=True, q_lengths=q_lengths, query_offsets=offsets)
    for b in range(2):
        expected = reference.attention(q[b:b + 1], k[b:b + 1], v[b:b + 1], 8 ** -0.5,
                                       causal=True, offset=offsets[b])
        expected[:, :, q_lengths[b]:] = 0
        close(out[b:b + 1], expected)


def test_attention_grouped_heads():
    """Query head h reads kv head h // (heads / kv_heads)."""
    q, k, v = randn(2, 4, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    out = posenc.attention(q, k, v)
    close(out, reference.attention(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1),
                                   8 ** -0.5))


@pytest.mark.parametrize("value_dim", [1, 12])
def test_attention_value_head_dim(value_dim):
    """v, out and the relative values' table of another head size than q's."""
    q, k, v = randn(2, 3, 5, 8), randn(2, 3, 7, 8), randn(2, 3, 7, value_dim)
    table, value_table = randn(3, 5, 8), randn(3, 5, value_dim)  # per head, both
    out = posenc.attention(
        q, k, v, causal=True, query_offset=2, bias="relative_1d", max_distance=2, table=table,
        value_table=value_table)
    assert out.shape == (2, 3, 5, value_dim)
    rows = reference.relative_rows_1d(5, 7, 2, 2)
    expected = reference.attention(
        q, k, v, 8 ** -0.5, causal=True, offset=2, value_rows=rows, value_table=value_table,
        tables=lambda q_: reference.table_logits(q_, table, rows))
    close(out, expected)


def test_bottleneck_mhsa_value_head_dim():
    """w_qkv's rows: q and k of heads*dim (the tables' size), v of
    heads*value_dim, as timm's BottleneckAttn splits them (qk_ratio != 1)."""
    batch, channels, height, width, heads, dim, value_dim = 2, 6, 3, 4, 2, 4, 6
    fmap = randn(batch, channels, height, width)
    w = randn(heads * (2 * dim + value_dim), channels)
    rh, rw = randn(2 * height - 1, dim), randn(2 * width - 1, dim)
    out = posenc.bottleneck_mhsa(fmap, w, rh, rw, heads)
    qkv = np.einsum("oc,bcn->bon", w, fmap.reshape(batch, channels, -1))
    parts = np.split(qkv, [heads * dim, 2 * heads * dim], axis=1)
    q, k, v = (x.reshape(batch, heads, x.shape[1] // heads, -1).transpose(0, 1, 3, 2)
               for x in parts)
    expected = reference.attention(
        q, k, v, dim ** -0.5, tables=lambda q_: reference.relative_2d(q_, rh, rw, height, width))
    close(out, expected.transpose(0, 1, 3, 2).reshape(batch, heads * value_dim, height, width))


@pytest.mark.parametrize("window", [1, 5, 40])
def test_attention_sliding_window_matches_transformers_mask(window):
    """sliding_window as transformers defines Mistral's: key j is seen by the
    query at position p when p - window < j <= p; a chunk of 6 queries after
    34 cached keys, grouped heads, and decode steps whose kept plan follows
    the window."""
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 40, 8), torch.randn(2, 2, 40, 8)

    def expected(w):
        position, key = 34 + np.arange(6)[:, None], np.arange(40)[None, :]
        seen = (key <= position) & (key > position - w)
        return reference.attention(q.numpy(), k.repeat_interleave(2, 1).numpy(),
                                   v.repeat_interleave(2, 1).numpy(), 8 ** -0.5,
                                   mask=np.where(seen, 0.0, -np.inf))

    close(posenc.attention(q, k, v, causal=True, query_offset=34, sliding_window=window),
          expected(window))
    for w in (window, window, window, window + 1):  # a kept plan is one window's
        step = posenc.attention(q[:, :, 5:], k, v, causal=True, query_offset=39,
                                sliding_window=w)
        close(step, expected(w)[:, :, 5:])
    with pytest.raises(TypeError, match="sliding_window: expected an integer, got bool"):
        posenc.attention(q, k, v, causal=True, sliding_window=True)  # not a window of 1


@pytest.mark.parametrize("local_attention", [2, 16, 128])
def test_attention_bidirectional_window_matches_modernbert(local_attention):
    """A window on both sides as ModernBERT's local attention: key j seen by
    query i when |i - j| <= local_attention // 2 (transformers builds the
    mask from the distance), W = local_attention // 2 + 1; a padded batch
    whose padding keys the mask hides too."""
    q, k, v = torch.randn(2, 4, 50, 8), torch.randn(2, 4, 50, 8), torch.randn(2, 4, 50, 8)
    distance = (torch.arange(50)[:, None] - torch.arange(50)[None, :]).abs()
    window_mask = distance <= local_attention // 2
    lengths = torch.tensor([50, 31], dtype=torch.int32)
    padding = torch.arange(50)[None, :] < lengths[:, None].long()
    seen = window_mask[None, None] & padding[:, None, None, :]
    expected = reference.attention(q.numpy(), k.numpy(), v.numpy(), 8 ** -0.5,
                                   mask=np.where(seen.numpy(), 0.0, -np.inf))
    got = posenc.attention(q, k, v, sliding_window=local_attention // 2 + 1, kv_lengths=lengths)
    close(got[0], expected[0])
    close(got[1, :, :31], expected[1, :, :31])  # (rows past kv_lengths alone: not compared)


@pytest.mark.parametrize("window", [0, 8])
def test_attention_softcap_matches_gemma2(window):
    """softcap as Gemma 2's attn_logit_softcapping (its local and global
    layers) at caps that bend these logits: a chunk of 6 queries after 34
    cached keys on grouped heads, decode steps whose kept plans follow the
    cap, bf16 within its bound."""
    q, k = 3 * torch.randn(2, 4, 6, 8), 3 * torch.randn(2, 2, 40, 8)
    v = torch.randn(2, 2, 40, 8)
    options = dict(causal=True, sliding_window=window, scale=0.25)
    for cap in (2.0, 2.0, 2.0, 5.0):  # a kept plan is one cap's
        close(posenc.attention(q, k, v, query_offset=34, softcap=cap, **options),
              models.gemma2_attention(q, k, v, 0.25, cap, chunk_mask(window)).numpy())
    bf16 = [x.to(torch.bfloat16) for x in (q, k, v)]
    got = posenc.attention(*bf16, query_offset=34, softcap=2.0, **options)
    want = models.gemma2_attention(*[x.float() for x in bf16], 0.25, 2.0, chunk_mask(window))
    assert (got.float() - want).abs().max() < 2e-2
    with pytest.raises(posenc.Error, match="softcap caps scale q.k alone"):
        posenc.attention(q, k, v, softcap=2.0, bias="absolute", table=torch.randn(40, 8))
    with pytest.raises(TypeError, match="softcap: expected a real number, got bool"):
        posenc.attention(q, k, v, softcap=True)  # not a cap of 1


def chunk_mask(window):
    """The causal mask (with a sliding window: 0 none) of 6 queries at
    positions 34.. over 40 keys."""
    position, key = 34 + torch.arange(6)[:, None], torch.arange(40)[None, :]
    seen = (key <= position) & ((key > position - window) if window else True)
    return torch.where(seen, 0.0, -torch.inf)


@pytest.mark.parametrize("window", [0, 8])
def test_attention_sinks_match_gpt_oss(window):
    """sinks as gpt-oss's attention (full and sliding-window layers): a chunk
    of 6 queries after 34 cached keys on grouped heads, decode steps whose
    kept plan takes each call's sinks, bf16 within its bound."""
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 40, 8), torch.randn(2, 2, 40, 8)
    sinks = torch.tensor([-1.0, 0.5, 2.0, 4.0])

    def expected(s, rows=slice(None)):
        return models.gpt_oss_attention(q[:, :, rows], k, v, s, 8 ** -0.5,
                                 chunk_mask(window)[rows]).numpy()

    options = dict(causal=True, sliding_window=window)
    close(posenc.attention(q, k, v, query_offset=34, sinks=sinks, **options), expected(sinks))
    for s in (sinks, sinks, sinks, sinks - 3.0):  # a kept plan reads each call's sinks
        step = posenc.attention(q[:, :, 5:], k, v, query_offset=39, sinks=s, **options)
        close(step, expected(s, slice(5, 6)))
    parameter = torch.nn.Parameter(sinks + 1.0)  # as the model holds them
    with torch.no_grad():
        for _ in range(3):
            step = posenc.attention(q[:, :, 5:], k, v, query_offset=39, sinks=parameter, **options)
            close(step, expected(parameter.detach(), slice(5, 6)))
    bf16 = [x.to(torch.bfloat16) for x in (q, k, v, sinks)]
    got = posenc.attention(*bf16[:3], query_offset=34, sinks=bf16[3], **options)
    want = models.gpt_oss_attention(*[x.float() for x in bf16[:3]], bf16[3].float(), 8 ** -0.5,
                             chunk_mask(window))
    assert (got.float() - want).abs().max() < 2e-2
    with pytest.raises(TypeError, match="sinks: must have q's dtype"):
        posenc.attention(q, k, v, sinks=bf16[3])
    with pytest.raises(ValueError, match="sinks"):
        posenc.attention(q, k, v, sinks=sinks[:3])


def test_bottleneck_mhsa_matches_attention():
    batch, channels, height, width, heads, dim = 2, 6, 3, 4, 2, 4
    fmap = randn(batch, channels, height, width)
    w = randn(3 * heads * dim, channels)
    rh, rw = randn(2 * height - 1, dim), randn(2 * width - 1, dim)
    out = posenc.bottleneck_mhsa(fmap, w, rh, rw, heads)
    qkv = np.einsum("oc,bcn->bon", w, fmap.reshape(batch, channels, -1))
    q, k, v = (qkv[:, i * heads * dim:(i + 1) * heads * dim].reshape(batch, heads, dim, -1)
               .transpose(0, 1, 3, 2) for i in range(3))
    expected = reference.attention(
        q, k, v, dim ** -0.5, tables=lambda q_: reference.relative_2d(q_, rh, rw, height, width))
    close(out, expected.transpose(0, 1, 3, 2).reshape(batch, heads * dim, height, width))


@pytest.mark.parametrize("pairing", ["half_split", "interleaved"])
def test_rope_config_cache_positions(pairing):
    config = posenc.rope_config(8, pairing=pairing, base=500.0)
    inv_freq, factor = posenc.inverse_frequencies(config)
    np.testing.assert_allclose(inv_freq, 500.0 ** (-np.arange(4) * 2 / 8))
    assert factor == 1.0
    x = randn(2, 5, 3, 10)  # head_dim 10, rotary_dim 8: partial rotation
    positions = np.broadcast_to(np.arange(4, 9), (2, 5))
    expected = reference.rope(x, inv_freq, positions, pairing, rotary_dim=8)
    close(posenc.rope(x, config=config, offset=4), expected)
    cache = posenc.RopeCache(config, 16)
    assert cache.max_positions == 16 and cache.config.base == 500.0 and cache.rotary_dim == 8
    cos, sin = cache.tables()  # the exact angles, rounded once
    np.testing.assert_allclose(cos, np.cos(np.outer(np.arange(16), inv_freq)), rtol=0, atol=6e-8)
    np.testing.assert_allclose(sin, np.sin(np.outer(np.arange(16), inv_freq)), rtol=0, atol=6e-8)
    ids = torch.from_numpy(np.ascontiguousarray(positions)).to(torch.int64)
    close(posenc.rope(torch.from_numpy(x), cache=cache, positions=ids), expected)


def sam2_axial_rope(x, end_x, end_y, theta):
    """SAM 2's axial RoPE as its compute_axial_cis and apply_rotary_enc define
    it (in double): token t of an end_x-wide grid at t_x = t % end_x, t_y =
    t // end_x; f_j = theta^(-4j/dim), j < dim/4; x's interleaved pairs as
    complex numbers times [e^(i t_x f), e^(i t_y f)]. x [B, H, N, dim]."""
    dim = x.shape[-1]
    freqs = 1.0 / theta ** (torch.arange(0, dim, 4)[:dim // 4].double() / dim)
    t = torch.arange(end_x * end_y, dtype=torch.float64)
    t_x, t_y = t % end_x, torch.div(t, end_x, rounding_mode="floor")
    angles = torch.cat([torch.outer(t_x, freqs), torch.outer(t_y, freqs)], dim=-1)
    cis = torch.polar(torch.ones_like(angles), angles)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(pairs * cis).flatten(3)


def timm_eva_rope(x, height, width, temperature):
    """timm's RotaryEmbeddingCat (in_pixels=False) and apply_rot_embed_cat as
    they define it (in double): bands 1/temperature^(j/(dim/4)), j < dim/4;
    a meshgrid "ij" of (row, column) times the bands, [rows | columns] per
    token, each repeated twice; x cos + rot(x) sin with rot(x) = (-x1, x0)
    for each pair. x [B, H, N, dim]."""
    dim = x.shape[-1]
    bands = 1.0 / temperature ** (torch.arange(dim // 4).double() / (dim // 4))
    grid = torch.stack(torch.meshgrid(torch.arange(height).double(),
                                      torch.arange(width).double(), indexing="ij"), dim=-1)
    angles = (grid.unsqueeze(-1) * bands).reshape(height * width, -1)
    sin, cos = (f(angles).repeat_interleave(2, -1) for f in (torch.sin, torch.cos))
    x = x.double()
    rotated = torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)
    return x * cos + rotated * sin


@pytest.mark.parametrize("column_first", [False, True])
def test_rope_2d_matches_sam2_and_timm_eva(column_first):
    """A 3-row, 5-wide grid: column_first is SAM 2's axial RoPE, the default
    timm's EVA (row first); on the fly and from a cache, BHTD as both hold q."""
    height, width, dim = 3, 5, 16
    x = torch.randn(2, 4, height * width, dim)
    config = posenc.rope_config(dim, pairing="interleaved", grid_width=width,
                                column_first=column_first)
    if column_first:
        expected = sam2_axial_rope(x, width, height, 10000.0)
    else:
        expected = timm_eva_rope(x, height, width, 10000.0)
    close(posenc.rope(x, config=config, layout="bhtd"), expected.numpy())
    cache = posenc.RopeCache(config, height * width)
    assert cache.config.column_first == column_first
    close(posenc.rope(x, cache=cache, layout="bhtd"), expected.numpy())


def longrope_cos_sin(positions, dim, base, long_factor, factor, original_max_positions):
    """Phi-3's LongRoPE as transformers defines it (in double): inverse
    frequencies 1 / (ext_factor_j base^(2j/dim)), an attention factor
    sqrt(1 + ln(factor) / ln(original_max_positions)), and cos and sin
    [positions, dim] of the frequencies repeated twice (rotate_half)."""
    ext = torch.tensor(long_factor, dtype=torch.float64)
    inv_freq = 1.0 / (ext * base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = math.sqrt(1 + math.log(factor) / math.log(original_max_positions))
    freqs = torch.outer(torch.as_tensor(positions, dtype=torch.float64), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos() * scaling, emb.sin() * scaling


def rotate_half_rope(x, cos, sin):
    """transformers' apply_rotary_pos_emb: x [B, H, T, D] * cos + rotate_half(x)
    * sin, cos and sin [B, T, D] broadcast over the heads."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x.double() * cos[:, None] + rotated.double() * sin[:, None]


def test_rope_cache_from_tables_matches_transformers_longrope():
    """Tables posenc does not compute (LongRoPE's per-pair factors), from the
    model's own cos and sin: their first half, at explicit positions, q and
    k of grouped heads, BHTD as transformers holds them."""
    dim, max_positions = 16, 256
    long_factor = [1.0, 1.3, 2.0, 3.1, 5.2, 8.0, 11.5, 16.0]
    cos, sin = longrope_cos_sin(range(max_positions), dim, 10000.0, long_factor, 32.0, 64)
    cache = posenc.RopeCache.from_tables(cos[:, :dim // 2].float(), sin[:, :dim // 2].float())
    assert (cache.max_positions, cache.rotary_dim) == (max_positions, dim)
    q, k = torch.randn(2, 4, 9, dim), torch.randn(2, 2, 9, dim)
    positions = torch.randint(0, max_positions, (2, 9))
    got_q, got_k = posenc.rope_qk(q, k, cache=cache, positions=positions, layout="bhtd")
    close(got_q, rotate_half_rope(q, cos[positions], sin[positions]).numpy())
    close(got_k, rotate_half_rope(k, cos[positions], sin[positions]).numpy())
    assert cache.config is None
    with pytest.raises(ValueError, match=r"cos: expected \[max_positions, rotary_dim / 2\]"):
        posenc.RopeCache.from_tables(cos[:, :0].float(), sin[:, :0].float())


def test_rope_cache_from_tables_interleaved_as_onnx_runtime():
    """ONNX Runtime's RotaryEmbedding with interleaved=1: x[2j], x[2j+1] turn by
    cos_cache[p, j], sin_cache[p, j]; a partial rotation (12 of 20) and an
    offset. The tables come back as given, and a pickled cache makes them
    again."""
    import pickle
    rng = np.random.default_rng(3)
    angles = rng.uniform(-4, 4, (40, 6))
    cos_cache, sin_cache = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    cache = posenc.RopeCache.from_tables(cos_cache, sin_cache, pairing="interleaved")
    x = randn(1, 5, 3, 20)  # BTHD
    expected = x.astype(np.float64).copy()
    c, s = cos_cache[30:35, None, :], sin_cache[30:35, None, :]
    expected[0, :, :, 0:12:2] = x[0, :, :, 0:12:2] * c - x[0, :, :, 1:12:2] * s
    expected[0, :, :, 1:12:2] = x[0, :, :, 1:12:2] * c + x[0, :, :, 0:12:2] * s
    close(posenc.rope(x, cache=cache, offset=30), expected)
    back = cache.tables()
    assert np.array_equal(back[0], cos_cache) and np.array_equal(back[1], sin_cache)
    again = pickle.loads(pickle.dumps(cache))
    assert again is not cache and again.rotary_dim == 12
    assert np.array_equal(posenc.rope(x, cache=again, offset=30), posenc.rope(x, cache=cache,
                                                                             offset=30))
    with pytest.raises(ValueError, match="sin: expected shape"):
        posenc.RopeCache.from_tables(cos_cache, sin_cache[:, :5])
    with pytest.raises(TypeError, match="cos: expected float32"):
        posenc.RopeCache.from_tables(cos_cache.astype(np.float64), sin_cache)


def test_rope_qk_in_place_bhtd_and_linear_scaling():
    config = posenc.rope_config(8, scaling="linear", factor=2.0)
    inv_freq, _ = posenc.inverse_frequencies(config)
    np.testing.assert_allclose(inv_freq, 10000.0 ** (-np.arange(4) * 2 / 8) / 2)
    q, k = torch.randn(1, 4, 6, 8), torch.randn(1, 2, 6, 8)  # BHTD, fewer k heads
    positions = np.broadcast_to(np.arange(6), (1, 6))
    expected = [reference.rope(x.transpose(1, 2).numpy(), inv_freq, positions)
                for x in (q, k)]
    q_out, k_out = posenc.rope_qk(q, k, config=config, layout="bhtd", q_out=q, k_out=k)
    assert q_out is q and k_out is k
    close(q.transpose(1, 2), expected[0])
    close(k.transpose(1, 2), expected[1])


@pytest.mark.parametrize("scaling, fields", [
    ("linear", dict(factor=4.0)),
    ("dynamic_ntk", dict(factor=2.0, original_max_positions=2048, sequence_length=5000)),
    ("dynamic_ntk", dict(factor=2.0, original_max_positions=2048, sequence_length=1000)),
    ("yarn", dict(factor=4.0, original_max_positions=4096)),
    ("yarn", dict(factor=16.0, original_max_positions=8192, beta_fast=16.0, beta_slow=2.0)),
    ("yarn", dict(factor=0.5, original_max_positions=256)),
    ("yarn", dict(factor=32.0, original_max_positions=4096, fractional_correction_range=True)),
    ("yarn", dict(factor=8.0, original_max_positions=4096, beta_fast=4.0, beta_slow=4.0,
                  fractional_correction_range=True)),
    ("llama3", dict(factor=8.0, original_max_positions=8192)),
    ("llama3", dict(factor=32.0, original_max_positions=8192, low_freq_factor=2.0,
                    high_freq_factor=8.0)),
])
@pytest.mark.parametrize("dim, base", [(128, 500000.0), (64, 10000.0), (26, 1e6)])
def test_rope_scalings_match_transformers(scaling, fields, dim, base):
    """Every scaling against transformers' formulas (reference.py), with their
    floor and ceil of YaRN's correction range (or without: gpt-oss's
    truncate=False; or empty, equal betas widened by 0.001) and llama3's
    three bands."""
    inv_freq, attention_factor = posenc.inverse_frequencies(
        posenc.rope_config(dim, base=base, scaling=scaling, **fields))
    expected, expected_factor = reference.rope_inverse_frequencies(dim, base, scaling, **fields)
    np.testing.assert_allclose(inv_freq, expected, rtol=1e-12)
    assert attention_factor == pytest.approx(expected_factor, rel=1e-12)


def test_attention_masks_as_torch_takes_them():
    """Bool masks (True: the key takes part), masks of fewer axes and
    expanded masks are read as torch's scaled_dot_product_attention
    broadcasts them; an expanded axis is read in place, not copied out."""
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    keep = rng.random((4, 6)) < 0.7
    keep[:, 0] = True
    additive = np.where(keep, 0, -np.inf).astype(np.float32)
    expected = reference.attention(q, k, v, 8 ** -0.5, mask=additive)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    for mask in (torch.from_numpy(keep), torch.from_numpy(keep)[None], keep,
                 torch.from_numpy(additive).expand(2, 3, 4, 6),
                 torch.from_numpy(keep)[None, None].expand(2, 3, 4, 6)):
        close(posenc.attention(tq, tk, tv, mask=mask), expected)
    expanded = torch.from_numpy(additive[0]).expand(2, 3, 4, 6)  # every axis but the keys'
    assert posenc._attention._mask_as_read(expanded).shape == (1, 1, 1, 6)
    # A key axis of one, a value for every key: a query row that sees no key is zeros.
    rows = rng.random((2, 1, 4, 1)) < 0.5
    rows[0, 0, 0] = True
    by_rows = reference.attention(q, k, v, 8 ** -0.5,
                                  mask=np.where(rows, 0, -np.inf).astype(np.float32))
    assert np.abs(by_rows[~np.broadcast_to(rows[..., 0], (2, 3, 4))]).max() == 0
    for mask in (torch.from_numpy(rows), np.where(rows, np.float32(0), np.float32(-np.inf))):
        close(posenc.attention(tq, tk, tv, mask=mask), by_rows)
    with pytest.raises(ValueError, match="mask: expected"):
        posenc.attention(tq, tk, tv, mask=torch.zeros(3, 1, 4, 6))  # 3 does not divide 2
    # A bool mask becomes float32 whatever torch's default dtype.
    default = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        close(posenc.attention(tq, tk, tv, mask=torch.from_numpy(keep)), expected)
    finally:
        torch.set_default_dtype(default)


def test_attention_without_rows_or_keys():
    """Empty batches, heads or queries give empty results; rows without
    keys are zeros (a row that sees no key), as torch's attention gives."""
    q, k = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8)
    assert posenc.attention(q[:0], k[:0], k[:0]).shape == (0, 3, 4, 8)
    assert posenc.attention(q[:, :, :0], k, k).shape == (2, 3, 0, 8)
    assert posenc.attention_workspace_size(q[:0], k[:0], k[:0]) == 0
    out = torch.full((2, 3, 4, 8), 7.0)
    assert posenc.attention(q, k[:, :, :0], k[:, :, :0], out=out) is out
    assert bool((out == 0).all())


def test_star_import_takes_every_function_and_no_submodule():
    """`from posenc import *` must not bind torch to posenc.torch; every
    public function and class is in __all__."""
    import types
    names = {}
    exec("import torch\nimport posenc.torch\nfrom posenc import *", names)
    assert names["torch"] is torch
    public = {name for name, value in vars(posenc).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == set(posenc.__all__)
