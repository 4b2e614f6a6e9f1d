"""posenc.attention's relative_query_bias against the Conformer's relative
attention as NeMo writes it (tests/models.py: its RelPositionalEncoding,
linear_pos, pos_bias_u and pos_bias_v, the pad-and-reshape shift, the
padding mask), computed in float64; fp32 within 1e-5 of the output's
magnitude, bf16 within 2e-2."""
import pytest
import torch

import models
import posenc
from checks import close


def conformer_layer(batch, heads, tokens, head_dim, seed):
    """q, k, v [B, H, T, d], the projected positions p [1, H, 2T-1, d] (a
    linear_pos without bias, as NeMo's, of the sinusoids), pos_bias_u and
    pos_bias_v [H, d]."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, tokens, head_dim, generator=g) for _ in range(3))
    d_model = heads * head_dim
    linear_pos = torch.randn(d_model, d_model, generator=g) / d_model ** 0.5
    pos_emb = models.relative_positions(tokens, d_model)
    p = (pos_emb @ linear_pos.T).view(1, -1, heads, head_dim).transpose(1, 2)
    u, v_bias = (torch.randn(heads, head_dim, generator=g) for _ in range(2))
    return q, k, v, p, u, v_bias


def posenc_conformer(q, k, v, p, pos_bias_u, pos_bias_v, **options):
    """The layer through posenc: q + pos_bias_u as q, pos_bias_v - pos_bias_u
    as the relative query bias, p's [H, 2T-1, d] as the unclipped table."""
    shifted = q + pos_bias_u[None, :, None, :]
    return posenc.attention(shifted, k, v, bias="relative_1d", table=p[0].contiguous(),
                            relative_query_bias=pos_bias_v - pos_bias_u, **options)


@pytest.mark.parametrize("tokens", [1, 2, 17, 64, 129])
def test_matches_nemo_conformer(tokens):
    q, k, v, p, u, v_bias = conformer_layer(2, 4, tokens, 16, tokens)
    want = models.conformer_attention(*(x.double() for x in (q, k, v, p, u, v_bias)))
    close(posenc_conformer(q, k, v, p, u, v_bias), want.numpy())


def test_padded_batch_matches_nemo_mask():
    """A padded batch: NeMo's pad mask over keys and queries is posenc's
    kv_lengths and q_lengths (its padded query rows are zeros either way)."""
    tokens, lengths = 50, torch.tensor([50, 31, 1])
    q, k, v, p, u, v_bias = conformer_layer(3, 2, tokens, 8, 7)
    valid = torch.arange(tokens)[None, :] < lengths[:, None]
    pad_mask = ~(valid[:, :, None] & valid[:, None, :])
    want = models.conformer_attention(*(x.double() for x in (q, k, v, p, u, v_bias)), pad_mask)
    close(posenc_conformer(q, k, v, p, u, v_bias, kv_lengths=lengths, q_lengths=lengths),
          want.numpy())


def test_bf16_and_bthd():
    q, k, v, p, u, v_bias = conformer_layer(1, 4, 70, 32, 3)
    want = models.conformer_attention(*(x.double() for x in (q, k, v, p, u, v_bias)))
    bf16 = [x.bfloat16() for x in (q, k, v, p, u, v_bias)]
    close(posenc_conformer(*bf16), want.numpy(), rtol=2e-2)
    # NeMo's q as it comes from linear_q: [B, T, H, d], read in place.
    bthd = [x.transpose(1, 2) for x in (q, k, v)]
    got = posenc.attention(bthd[0] + u, bthd[1], bthd[2], layout="bthd", bias="relative_1d",
                           table=p[0].contiguous(), relative_query_bias=v_bias - u)
    close(got.transpose(1, 2), want.numpy())


def test_errors_name_the_argument():
    q, k, v, p, u, v_bias = conformer_layer(1, 2, 5, 8, 1)
    table = p[0].contiguous()
    with pytest.raises(TypeError, match="relative_query_bias: must have q's dtype"):
        posenc.attention(q, k, v, bias="relative_1d", table=table,
                         relative_query_bias=u.bfloat16())
    with pytest.raises(ValueError, match="relative_query_bias"):
        posenc.attention(q, k, v, bias="relative_1d", table=table, relative_query_bias=u[:1])
    with pytest.raises(posenc.Error, match="desc->relative_query_bias"):
        posenc.attention(q, k, v, relative_query_bias=u)
