"""posenc.attention's bias_gate against WavLM's gated relative position bias
as transformers writes it (tests/models.py: its bidirectional buckets in
float32, rel_attn_embed, the gate of gru_rel_pos_linear and
gru_rel_pos_const, F.multi_head_attention_forward's key padding), computed
in float64; fp32 within 1e-5 of the output's magnitude, bf16 within 2e-2.
The gate of the ALiBi, table_1d and decoder T5 biases against
posenc.position_bias's bias times the gate; the refusals name bias_gate."""
import pytest
import torch

import models
import posenc
from checks import close

NUM_BUCKETS, MAX_DISTANCE = 320, 800  # WavLM's (num_buckets, max_bucket_distance)


def wavlm_layer(batch, heads, tokens, head_dim, seed):
    """The layer's input hidden [B, T, H*d] and what WavLMAttention makes of
    it: q, k, v [B, T, H, d] (its projections, viewed per head as the model
    does, before the transpose to [B, H, T, d]), rel_attn_embed [320, H]
    and the gate [B, H, T] (gru_rel_pos_const about its init of ones)."""
    g = torch.Generator().manual_seed(seed)
    embed = heads * head_dim
    hidden = torch.randn(batch, tokens, embed, generator=g)
    q, k, v = ((hidden @ (torch.randn(embed, embed, generator=g) / embed ** 0.5).T)
               .view(batch, tokens, heads, head_dim) for _ in range(3))
    rel_attn_embed = torch.randn(NUM_BUCKETS, heads, generator=g)
    weight = torch.randn(8, head_dim, generator=g) / head_dim ** 0.5
    bias = 0.1 * torch.randn(8, generator=g)
    const = 1.0 + 0.5 * torch.rand(1, heads, 1, 1, generator=g)
    gate = models.wavlm_gate(hidden, weight, bias, const)
    return q, k, v, rel_attn_embed, gate


def bhtd(q, k, v):
    return [x.transpose(1, 2).contiguous() for x in (q, k, v)]


def posenc_wavlm(q, k, v, rel_attn_embed, gate, **options):
    """The layer through posenc: WavLM's table as the T5 table, as stored,
    its buckets' parameters, its gate as bias_gate."""
    return posenc.attention(q, k, v, bias="t5", table=rel_attn_embed, num_buckets=NUM_BUCKETS,
                            max_distance=MAX_DISTANCE, bidirectional=True, bias_gate=gate,
                            **options)


def reference(q, k, v, rel_attn_embed, gate, key_padding_mask=None):
    """models.wavlm_attention in float64 of q, k, v [B, H, T, d]."""
    return models.wavlm_attention(*(x.double() for x in (q, k, v, rel_attn_embed, gate)),
                                  NUM_BUCKETS, MAX_DISTANCE, key_padding_mask).numpy()


def test_gate_lies_between_one_and_the_constant_plus_one():
    """gate_a (gate_b c - 1) + 2 with gate_a, gate_b in (0, 1): in (1, 2)
    for c = 1, the gru_rel_pos_const WavLM starts from."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(2, 50, 16, generator=g)
    weight = torch.randn(8, 8, generator=g) / 8 ** 0.5  # (no sigmoid saturated in float32)
    gate = models.wavlm_gate(hidden, weight, 0.1 * torch.randn(8, generator=g),
                             torch.ones(1, 2, 1, 1))
    assert gate.shape == (2, 2, 50)
    assert bool(((gate > 1) & (gate < 2)).all())


@pytest.mark.parametrize("tokens", [1, 2, 17, 299, 1000])
def test_matches_wavlm(tokens):
    """Past T = 160 the log buckets, past distance 800 the last bucket of
    each sign."""
    heads, head_dim = (2, 8) if tokens > 300 else (4, 16)
    q, k, v, table, gate = wavlm_layer(2, heads, tokens, head_dim, tokens)
    q, k, v = bhtd(q, k, v)
    close(posenc_wavlm(q, k, v, table, gate), reference(q, k, v, table, gate))


def test_padded_batch_matches_wavlm():
    """WavLM's attention_mask [B, T] (1: a frame, 0: padding): its
    key_padding_mask is posenc's kv_lengths. The padded frames' rows are
    compared too: WavLM computes them over the frames, as posenc does."""
    tokens, lengths = 1000, torch.tensor([1000, 611])
    q, k, v, table, gate = wavlm_layer(2, 2, tokens, 8, 3)
    q, k, v = bhtd(q, k, v)
    attention_mask = (torch.arange(tokens)[None, :] < lengths[:, None]).long()
    want = reference(q, k, v, table, gate, attention_mask.ne(1))
    close(posenc_wavlm(q, k, v, table, gate, kv_lengths=attention_mask.sum(-1)), want)
    close(posenc_wavlm(q, k, v, table, gate,
                       kv_lengths=attention_mask.sum(-1).to(torch.int32)), want)


def test_bf16():
    """bf16 q, k, v, table and gate, against the reference of their values."""
    q, k, v, table, gate = wavlm_layer(2, 4, 299, 16, 5)
    inputs = [x.bfloat16() for x in bhtd(q, k, v) + [table, gate]]
    close(posenc_wavlm(*inputs), reference(*inputs), rtol=2e-2)


def test_bthd_in_place_and_a_strided_gate():
    """q, k, v as WavLM's projections view them, [B, T, H, d], read in
    place; a gate that is not dense (copied) reads as its dense copy."""
    q, k, v, table, gate = wavlm_layer(2, 4, 70, 16, 7)
    want = reference(*bhtd(q, k, v), table, gate)
    strided = gate.transpose(1, 2).contiguous().transpose(1, 2)
    assert not strided.is_contiguous()
    got = posenc_wavlm(q, k, v, table, strided, layout="bthd")
    close(got.transpose(1, 2), want)


def test_a_gate_of_ones_is_the_ungated_bias():
    q, k, v, table, gate = wavlm_layer(2, 4, 90, 16, 9)
    q, k, v = bhtd(q, k, v)
    for dtype in (torch.float32, torch.bfloat16):
        inputs = [x.to(dtype) for x in (q, k, v, table)]
        ungated = posenc.attention(*inputs[:3], bias="t5", table=inputs[3],
                                   num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE,
                                   bidirectional=True)
        gated = posenc_wavlm(*inputs, torch.ones(gate.shape, dtype=dtype))
        assert torch.equal(gated, ungated)


def gated_reference(q, k, v, bias, gate, scale):
    """softmax(scale q k^T + gate[b, h, i] bias[h, i, j]) v in float64 (k, v
    repeated to q's heads)."""
    groups = q.shape[1] // k.shape[1]
    q, k, v = (x.double() for x in (q, k.repeat_interleave(groups, 1),
                                     v.repeat_interleave(groups, 1)))
    bias = torch.as_tensor(bias).double()
    scores = scale * (q @ k.transpose(-1, -2)) + gate.double()[..., None] * bias
    return (torch.softmax(scores, -1) @ v).numpy()


KINDS = {
    "alibi": lambda heads, g: dict(bidirectional=True),
    "alibi_decoder": lambda heads, g: dict(bidirectional=False),
    "table_1d": lambda heads, g: dict(table=torch.randn(heads, 2 * 6 + 1, generator=g)),
    "t5_decoder": lambda heads, g: dict(table=torch.randn(32, heads, generator=g),
                                        max_distance=128, bidirectional=False),
}


@pytest.mark.parametrize("q_len,kv_len,offset", [(37, 37, 0), (5, 40, 35)])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_gates_alibi_table_1d_and_t5_as_position_bias(kind, q_len, kv_len, offset):
    """The gate of query row i (not of its position query_offset + i) on
    position_bias's bias of the same parameters; k and v of half q's heads
    (grouped-query: the gate is the query head's)."""
    g = torch.Generator().manual_seed(q_len)
    heads, kv_heads, head_dim = 4, 2, 16
    q = torch.randn(2, heads, q_len, head_dim, generator=g)
    k, v = (torch.randn(2, kv_heads, kv_len, head_dim, generator=g) for _ in range(2))
    gate = 1.0 + 2.0 * torch.rand(2, heads, q_len, generator=g)
    options = KINDS[kind](heads, g)
    name = kind.split("_decoder")[0]
    bias = posenc.position_bias(name, options.get("table"), heads=heads, q_len=q_len,
                                kv_len=kv_len, query_offset=offset,
                                **{key: value for key, value in options.items() if key != "table"})
    got = posenc.attention(q, k, v, bias=name, query_offset=offset, bias_gate=gate, **options)
    close(got, gated_reference(q, k, v, bias, gate, head_dim ** -0.5))


def test_workspace_size_takes_the_gate():
    q, k, v, table, gate = wavlm_layer(1, 2, 40, 8, 11)
    q, k, v = bhtd(q, k, v)
    options = dict(bias="t5", table=table, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE,
                   bidirectional=True)
    size = posenc.attention_workspace_size(q, k, v, bias_gate=gate, **options)
    assert size >= 0
    posenc.attention(q, k, v, bias_gate=gate, workspace=bytearray(size), **options)
    with pytest.raises(ValueError, match="bias_gate"):
        posenc.attention_workspace_size(q, k, v, bias_gate=gate[:, :1], **options)


def test_errors_name_the_argument():
    q, k, v, table, gate = wavlm_layer(2, 2, 5, 8, 1)
    q, k, v = bhtd(q, k, v)
    out = torch.full(q.shape, 7.0)
    t5 = dict(bias="t5", table=table, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE,
              bidirectional=True)
    refusals = [
        (ValueError, "bias_gate: goes with bias 'table_1d', 't5' or 'alibi', not 'relative_1d'",
         dict(bias="relative_1d", table=torch.randn(9, 8), bias_gate=gate)),
        (ValueError, "bias_gate: goes with bias 'table_1d', 't5' or 'alibi', not 'none'",
         dict(bias_gate=gate)),
        (ValueError, "bias_gate: .* not 'none'", dict(bias="none", bias_gate=gate)),
        (ValueError, "bias_gate: .* not 'table_2d'",
         dict(bias="table_2d", window=(1, 5), table=torch.randn(9, 2), bias_gate=gate)),
        (ValueError, r"bias_gate: expected shape \[2, 2, 5\], got \[2, 2, 4\]",
         dict(t5, bias_gate=gate[..., :4])),
        (ValueError, r"bias_gate: expected shape \[2, 2, 5\], got \[2, 5, 2\]",
         dict(t5, bias_gate=gate.transpose(1, 2))),
        (ValueError, "bias_gate: expected 3 dimensions", dict(t5, bias_gate=gate[0])),
        (TypeError, "bias_gate: must have q's dtype", dict(t5, bias_gate=gate.bfloat16())),
        (TypeError, "bias_gate: expected float32 or bfloat16, got torch.float64",
         dict(t5, bias_gate=gate.double())),
    ]
    for error, message, options in refusals:
        with pytest.raises(error, match=message):
            posenc.attention(q, k, v, out=out, **options)
    # Grouped-query: the gate has q's heads, not k's.
    with pytest.raises(ValueError, match=r"bias_gate: expected shape \[2, 2, 5\]"):
        posenc.attention(q, k[:, :1], v[:, :1], bias_gate=gate[:, :1], **t5)
    with pytest.raises(TypeError, match="bias_gate: must have q's dtype"):
        posenc_wavlm(*(x.bfloat16() for x in (q, k, v, table)), gate)
    assert bool((out == 7.0).all())
