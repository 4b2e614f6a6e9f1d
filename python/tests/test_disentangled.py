"""posenc.attention's bias "disentangled" against DeBERTa-v2's disentangled
attention as transformers writes it (tests/models.py: its log buckets in
float32, build_relative_position, the c2p and p2c gathers, XSoftmax's
padding), computed in float64; fp32 within 1e-5 of the output's magnitude,
bf16 within 2e-2."""
import math

import numpy as np
import pytest
import torch

import models
import posenc
from checks import close


def deberta_layer(batch, heads, tokens, head_dim, span, seed, kv_heads=None, per_head=True):
    """q [B, H, T, d], k and v [B, Hk, T, d], pos_key and pos_query [H, 2S, d]
    (or [2S, d] shared), of about the magnitudes of projected embeddings."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, tokens, head_dim, generator=g)
    k, v = (torch.randn(batch, kv_heads or heads, tokens, head_dim, generator=g)
            for _ in range(2))
    table_shape = ((heads,) if per_head else ()) + (2 * span, head_dim)
    pos_key, pos_query = (torch.randn(table_shape, generator=g) for _ in range(2))
    return q, k, v, pos_key, pos_query


def posenc_deberta(q, k, v, pos_key, pos_query, buckets, max_relative, **options):
    """The layer through posenc: DeBERTa's scale 1/sqrt(3 d), its tables as
    table (c2p) and key_table (p2c)."""
    return posenc.attention(q, k, v, scale=1 / math.sqrt(3 * q.shape[-1]), bias="disentangled",
                            table=pos_key, key_table=pos_query, num_buckets=buckets,
                            max_distance=max_relative, **options)


def reference(q, k, v, pos_key, pos_query, buckets, max_relative, attention_mask=None):
    return models.deberta_attention(*(x.double() for x in (q, k, v, pos_key, pos_query)),
                                    buckets, max_relative, attention_mask).numpy()


@pytest.mark.parametrize("per_head", [True, False])
@pytest.mark.parametrize("tokens", [1, 2, 17, 70])
def test_matches_deberta_small_buckets(tokens, per_head):
    """16 buckets up to 32: past |r| = 8 the log buckets, past |r| = 58 the
    clamp to the last row."""
    inputs = deberta_layer(2, 3, tokens, 16, 16, tokens, per_head=per_head)
    close(posenc_deberta(*inputs, 16, 32), reference(*inputs, 16, 32))


def test_matches_deberta_v3_buckets():
    """DeBERTa-v3's 256 buckets up to 512, at distances up to 299."""
    inputs = deberta_layer(1, 2, 300, 64, 256, 5)
    close(posenc_deberta(*inputs, 256, 512), reference(*inputs, 256, 512))


def test_matches_deberta_without_buckets():
    """position_buckets 0: the span is max_relative_positions (8 here), the
    distances past it clamped."""
    inputs = deberta_layer(2, 2, 20, 8, 8, 11)
    close(posenc_deberta(*inputs, 0, 8), reference(*inputs, 0, 8))
    # num_buckets left out is 0.
    q, k, v, pos_key, pos_query = inputs
    got = posenc.attention(q, k, v, scale=1 / math.sqrt(24), bias="disentangled",
                           table=pos_key, key_table=pos_query, max_distance=8)
    close(got, reference(*inputs, 0, 8))


def test_transformers_float32_buckets_are_the_exact_ones():
    """The header's claim posenc's double buckets rest on: for DeBERTa-v3's
    256 and 512, transformers' float32 buckets equal the formula in double
    at every |r| <= 4 * 512."""
    r = torch.arange(-2048, 2049, dtype=torch.long)
    got = models.log_bucket_position(r, 256, 512).to(torch.long).numpy()
    mid, rn = 128, r.numpy()
    far = np.maximum(np.abs(rn), mid)  # (the log of the near ones is not used)
    log_pos = np.ceil(np.log(far / mid) / np.log(511 / mid) * (mid - 1)) + mid
    exact = np.where(np.abs(rn) <= mid, rn, np.sign(rn) * log_pos).astype(np.int64)
    np.testing.assert_array_equal(got, exact)


def test_bert_relative_key_query():
    """BERT's relative_key_query is the disentangled bias without buckets,
    S = M, both tables its distance_embedding with a row before it (row
    r + M for its row r + M - 1, query minus key r within +-(M - 1): the
    first row, distance -M, is never used); an encoder and a decode step."""
    longest, g = 64, torch.Generator().manual_seed(21)
    q, k, v = (torch.randn(2, 3, 40, 16, generator=g) for _ in range(3))
    embedding = torch.randn(2 * longest - 1, 16, generator=g)
    table = torch.cat([torch.zeros(1, 16), embedding])
    options = dict(bias="disentangled", table=table, key_table=table, max_distance=longest)
    want = models.bert_relative_key_query(*(x.double() for x in (q, k, v, embedding)))
    close(posenc.attention(q, k, v, **options), want.numpy())
    step = models.bert_relative_key_query(*(x.double() for x in (q[:, :, -1:], k, v, embedding)),
                                          query_offset=39)
    close(posenc.attention(q[:, :, -1:], k, v, query_offset=39, **options), step.numpy())


@pytest.mark.parametrize("tokens", [5, 20])
def test_deberta_v1(tokens):
    """DeBERTa (v1, transformers' modeling_deberta) is the bias without
    buckets, max_distance its max_relative_positions S (8 here): q + q_bias
    as q, v + v_bias as v, its pos_proj and pos_q_proj (with their bias) of
    the whole rel_embeddings [2S, D] as the tables per head. Its span
    min(T, S) slices the table's middle, whose clamp is the whole table's:
    below S (T 5) no distance reaches the slice's ends, past it (T 20) the
    slice is the table; a padded batch (its pair mask)."""
    heads, head_dim, longest, g = 2, 8, 8, torch.Generator().manual_seed(31 + tokens)
    q, k, v = (torch.randn(2, heads, tokens, head_dim, generator=g) for _ in range(3))
    q_bias, v_bias = (torch.randn(heads, head_dim, generator=g) for _ in range(2))
    hidden = heads * head_dim
    rel_embeddings = torch.randn(2 * longest, hidden, generator=g)
    pos_proj, pos_q_proj = (torch.randn(hidden, hidden, generator=g) / hidden ** 0.5
                            for _ in range(2))
    pos_q_bias = torch.randn(hidden, generator=g)
    lengths = torch.tensor([tokens, tokens - 3])
    mask = (torch.arange(tokens)[None, :] < lengths[:, None]).long()
    want = models.deberta_v1_attention(
        *(x.double() for x in (q, k, v, q_bias, v_bias, rel_embeddings, pos_proj, pos_q_proj,
                               pos_q_bias)), longest, mask)

    def per_head(x):  # [2S, H d] -> [H, 2S, d]
        return x.view(2 * longest, heads, head_dim).permute(1, 0, 2).contiguous()

    got = posenc.attention(q + q_bias[:, None], k, v + v_bias[:, None],
                           scale=1 / math.sqrt(3 * head_dim), bias="disentangled",
                           table=per_head(rel_embeddings @ pos_proj.T),
                           key_table=per_head(rel_embeddings @ pos_q_proj.T + pos_q_bias),
                           max_distance=longest, kv_lengths=lengths, q_lengths=lengths)
    close(got, want.numpy())


def test_padded_batch_matches_deberta_mask():
    """DeBERTa's attention_mask over keys and queries is posenc's kv_lengths
    and q_lengths (its padded query rows are zeros either way)."""
    tokens, lengths = 50, torch.tensor([50, 31, 1])
    inputs = deberta_layer(3, 2, tokens, 8, 16, 7)
    attention_mask = (torch.arange(tokens)[None, :] < lengths[:, None]).long()
    close(posenc_deberta(*inputs, 16, 32, kv_lengths=lengths, q_lengths=lengths),
          reference(*inputs, 16, 32, attention_mask))


def test_bthd_views_and_packed_qkv():
    q, k, v, pos_key, pos_query = deberta_layer(2, 4, 70, 16, 16, 3)
    want = reference(q, k, v, pos_key, pos_query, 16, 32)
    # DeBERTa's projections as [B, T, H, d], read in place.
    bthd = [x.transpose(1, 2) for x in (q, k, v)]
    got = posenc_deberta(*bthd, pos_key, pos_query, 16, 32, layout="bthd")
    close(got.transpose(1, 2), want)
    # One packed [B, T, 3, H, d] qkv.
    packed = torch.stack(bthd, dim=2)
    got = posenc_deberta(*packed.unbind(2), pos_key, pos_query, 16, 32, layout="bthd")
    close(got.transpose(1, 2), want)


def test_bf16():
    inputs = deberta_layer(1, 4, 70, 32, 16, 9)
    want = reference(*inputs, 16, 32)
    close(posenc_deberta(*(x.bfloat16() for x in inputs), 16, 32), want, rtol=2e-2)


def test_grouped_query_heads():
    """k's head of each query head meets that query head's key_table rows."""
    inputs = deberta_layer(2, 4, 40, 16, 16, 13, kv_heads=2)
    close(posenc_deberta(*inputs, 16, 32), reference(*inputs, 16, 32))


def test_query_offsets_and_unscaled_position_logits():
    """A chunk of the queries at their positions (query_offset, or the
    sequence's query_offsets) is those rows of the whole; with
    bias_uses_scaled_q False the tables carry DeBERTa's 1/sqrt(3 d)."""
    q, k, v, pos_key, pos_query = deberta_layer(2, 2, 40, 16, 16, 2)
    want = reference(q, k, v, pos_key, pos_query, 16, 32)
    for offsets in (dict(query_offset=10), dict(query_offsets=torch.tensor([10, 10]))):
        got = posenc_deberta(q[:, :, 10:20], k, v, pos_key, pos_query, 16, 32, **offsets)
        close(got, want[:, :, 10:20])
    close(posenc_deberta(q[:, :, -1:], k, v, pos_key, pos_query, 16, 32, query_offset=39),
          want[:, :, -1:])
    scale = math.sqrt(48)
    got = posenc.attention(q, k, v, scale=1 / scale, bias="disentangled",
                           table=pos_key / scale, key_table=pos_query / scale, num_buckets=16,
                           max_distance=32, bias_uses_scaled_q=False)
    close(got, want)


def test_repeated_calls_and_workspace_size():
    """Calls of one signature keep their key_table (never a kept plan's
    call, which has none); the workspace size takes key_table."""
    inputs = deberta_layer(1, 2, 33, 16, 16, 17)
    q, k, v, pos_key, _ = inputs
    for seed in range(4):
        pos_query = torch.randn(pos_key.shape, generator=torch.Generator().manual_seed(seed))
        close(posenc_deberta(q, k, v, pos_key, pos_query, 16, 32),
              reference(q, k, v, pos_key, pos_query, 16, 32))
    size = posenc.attention_workspace_size(q, k, v, bias="disentangled", table=pos_key,
                                           key_table=pos_query, num_buckets=16,
                                           max_distance=32)
    assert size >= 0
    for _ in range(4):  # also where a call without it would be a kept plan's
        with pytest.raises(ValueError, match="^key_table: goes with bias 'disentangled', "
                           "not None"):
            posenc.attention(q, k, v, key_table=pos_query)


def test_errors_name_the_argument():
    q, k, v, pos_key, pos_query = deberta_layer(1, 2, 5, 8, 16, 1)
    options = dict(num_buckets=16, max_distance=32)
    refusals = [
        (ValueError, "^key_table: goes with bias 'disentangled', not 'relative_1d'",
         dict(bias="relative_1d", table=torch.randn(9, 8), key_table=pos_query)),
        (ValueError, "^key_table: goes with bias 'disentangled', not None",
         dict(key_table=pos_query, **options)),
        (ValueError, "^key_table: the disentangled bias takes table",
         dict(bias="disentangled", table=pos_key, **options)),
        (ValueError, "^table: the disentangled bias takes table",
         dict(bias="disentangled", key_table=pos_query, **options)),
        (ValueError, "^table, key_table: the disentangled bias takes",
         dict(bias="disentangled", **options)),
        (ValueError, "^max_distance: needed with bias 'disentangled'",
         dict(bias="disentangled", table=pos_key, key_table=pos_query, num_buckets=16)),
        (ValueError, r"^table: expected \[32, 8\] or \[2, 32, 8\] \(2 num_buckets\)",
         dict(bias="disentangled", table=pos_key[:, :30], key_table=pos_query, **options)),
        (ValueError, r"^key_table: expected \[16, 8\] or \[2, 16, 8\] \(2 max_distance",
         dict(bias="disentangled", table=pos_key[:, :16], key_table=pos_query,
              max_distance=8)),
        (ValueError, r"^key_table: expected \[32, 8\] or \[2, 32, 8\]",
         dict(bias="disentangled", table=pos_key, key_table=pos_query[:, :, :4], **options)),
        (ValueError, r"^key_table: expected \[32, 8\] or \[2, 32, 8\]",
         dict(bias="disentangled", table=pos_key,
              key_table=pos_query.repeat(2, 1, 1), **options)),
        (ValueError, "^table, key_table: all shared",
         dict(bias="disentangled", table=pos_key, key_table=pos_query[0], **options)),
        (TypeError, "^key_table: must have q's dtype",
         dict(bias="disentangled", table=pos_key, key_table=pos_query.bfloat16(), **options)),
        (ValueError, "^num_buckets: must be >= 0",
         dict(bias="disentangled", table=pos_key, key_table=pos_query, num_buckets=-2,
              max_distance=32)),
        (ValueError, "^window, class_token, num_buckets, bidirectional.*not of 'disentangled'",
         dict(bias="disentangled", table=pos_key, key_table=pos_query, bidirectional=True,
              **options)),
        (ValueError, "^value_table: .*not 'disentangled'",
         dict(bias="disentangled", table=pos_key, key_table=pos_query,
              value_table=torch.randn(65, 8), **options)),
        (posenc.Error, "desc->num_buckets",
         dict(bias="disentangled", table=pos_key[:, :2], key_table=pos_query[:, :2],
              num_buckets=1, max_distance=32)),
        (posenc.Error, "desc->max_distance",
         dict(bias="disentangled", table=pos_key, key_table=pos_query, num_buckets=16,
              max_distance=9)),
        (posenc.Error, "desc->max_distance",
         dict(bias="disentangled", table=pos_key[:, :0], key_table=pos_query[:, :0],
              max_distance=0)),
    ]
    out = torch.full(q.shape, 7.0)
    for error, message, call_options in refusals:
        with pytest.raises(error, match=message):
            posenc.attention(q, k, v, out=out, **call_options)
    assert bool((out == 7.0).all())
