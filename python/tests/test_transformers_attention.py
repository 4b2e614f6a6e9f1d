"""posenc.torch.transformers_attention called as transformers calls an
attention function (a layer module, query [B, H, Tq, d] as the transpose
of its projection's [B, Tq, H, d], key and value of the cache [B, kv heads,
Tk, d], the mask sdpa_mask makes: bool, or None), against what its sdpa
path computes (torch's scaled_dot_product_attention as documented) and
Gemma 2's and gpt-oss's eager attention for the soft cap and the sinks;
fp32 within 1e-5 of the output's magnitude, bf16 within 2e-2. (transformers
itself is not installed here: its tokenizers are no pure-Python package.)"""
import pytest
import torch

import models
import posenc.torch as posenc_torch
from checks import close


class Layer(torch.nn.Module):
    """What the function reads of transformers' attention module."""

    def __init__(self, is_causal=True):
        super().__init__()
        self.is_causal = is_causal


def projected(batch, tokens, heads, dim):
    """[B, H, T, d] as transformers passes query: a view of [B, T, H, d]."""
    return torch.randn(batch, tokens, heads, dim).transpose(1, 2)


def cache(batch, kv_heads, tokens, dim):
    return torch.randn(batch, kv_heads, tokens, dim), torch.randn(batch, kv_heads, tokens, dim)


def run(*args, **kwargs):
    """The function's output, checked to be as transformers takes it."""
    out, weights = posenc_torch.transformers_attention(*args, **kwargs)
    assert weights is None and out.is_contiguous()
    return out.transpose(1, 2)  # back to [B, H, Tq, dv] for the comparisons


def test_no_mask_is_causal_for_a_prefill_and_not_for_a_step():
    """sdpa_mask gives None where is_causal serves: a prefill is causal
    (the module's is_causal, or the call's), a decode step sees every key,
    a module that is not causal (an encoder) sees all of them too."""
    q = projected(2, 7, 4, 16)
    k, v = cache(2, 2, 7, 16)
    close(run(Layer(), q, k, v, None), models.sdpa_attention(q, k, v, is_causal=True))
    close(run(Layer(), q, k, v, None, is_causal=False), models.sdpa_attention(q, k, v))
    close(run(Layer(is_causal=False), q, k, v, None), models.sdpa_attention(q, k, v))
    close(run(torch.nn.Module(), q, k, v, None), models.sdpa_attention(q, k, v, is_causal=True))
    fewer = projected(2, 3, 4, 16)  # causal aligned top-left, as sdpa's is_causal
    close(run(Layer(), fewer, k, v, None), models.sdpa_attention(fewer, k, v, is_causal=True))
    step = projected(2, 1, 4, 16)
    close(run(Layer(), step, k, v, None, scaling=0.3),
          models.sdpa_attention(step, k, v, scale=0.3))


def test_a_bool_mask_of_padding_and_a_window():
    """sdpa_mask's bool mask (True: the key takes part) of a left-padded
    batch, 5 queries after 20 cached keys under a sliding window of 8 (item
    1's first 16 keys padding, inside the windows), in fp32 and bf16; the
    additive mask of older versions, wider than the keys (eager drops the
    columns past them); a padding query that sees no key gets zeros, as
    sdpa gives it from torch 2.5."""
    q = projected(2, 5, 6, 8)
    k, v = cache(2, 3, 25, 8)
    position, key = 20 + torch.arange(5)[:, None], torch.arange(25)[None, :]
    window = (key <= position) & (key > position - 8)
    padding = key >= torch.tensor([0, 16])[:, None, None]
    mask = (window[None] & padding)[:, None]
    assert not torch.equal(mask[1, 0], window)  # the padding hides keys of the windows
    expected = models.sdpa_attention(q, k, v, mask=mask)
    close(run(Layer(), q, k, v, mask), expected)
    additive = torch.where(mask, 0.0, torch.finfo(torch.float32).min)
    wider = torch.cat([additive, torch.zeros(2, 1, 5, 3)], dim=-1)
    close(run(Layer(), q, k, v, wider), expected)
    bf16 = [x.to(torch.bfloat16) for x in (q, k, v)]
    got = run(Layer(), *bf16, mask)
    want = models.sdpa_attention(*[x.float() for x in bf16], mask=mask)
    assert got.dtype == torch.bfloat16 and abs(got.float().numpy() - want).max() < 2e-2
    unseen = mask.clone()
    unseen[1, :, 0] = False  # item 1's first query: a padding token
    got = run(Layer(), q, k, v, unseen)
    assert torch.equal(got[1, :, 0], torch.zeros(6, 8))
    close(got[:, :, 1:], expected[:, :, 1:])


def test_softcap_as_gemma2_and_sinks_as_gpt_oss():
    """The keyword arguments of Gemma 2's (softcap) and gpt-oss's (s_aux)
    attention, in fp32 and bf16."""
    q = 3 * projected(2, 6, 4, 8)
    k, v = cache(2, 2, 6, 8)
    k = 3 * k
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    additive = torch.where(causal, 0.0, -torch.inf)
    sinks = torch.tensor([-1.0, 0.5, 2.0, 4.0])
    close(run(Layer(), q, k, v, causal[None, None].expand(2, 1, 6, 6), scaling=0.25,
              softcap=2.0, sliding_window=None),
          models.gemma2_attention(q, k, v, 0.25, 2.0, additive))
    close(run(Layer(), q, k, v, None, scaling=0.25, s_aux=sinks),
          models.gpt_oss_attention(q, k, v, sinks, 0.25, additive))
    parameter = torch.nn.Parameter(sinks)  # as the model holds them, under generate's no_grad
    with torch.no_grad():
        close(run(Layer(), q, k, v, None, scaling=0.25, s_aux=parameter),
              models.gpt_oss_attention(q, k, v, sinks, 0.25, additive))
    bf16 = [x.to(torch.bfloat16) for x in (q, k, v, sinks)]
    # (fp32 sinks with bf16 q and k, as under CPU autocast: rounded to bf16)
    got = run(Layer(), *bf16[:3], None, scaling=0.25, softcap=2.0, s_aux=sinks)
    assert got.dtype == torch.bfloat16
    logits = torch.tanh(torch.matmul(bf16[0].float(), bf16[1].float().repeat_interleave(2, 1)
                                     .transpose(2, 3)) * 0.25 / 2.0) * 2.0
    # (the soft cap first, then gpt-oss's softmax with the sinks, on the capped logits)
    sink = bf16[3].float().reshape(1, -1, 1, 1).expand(2, -1, 6, -1)
    probs = torch.softmax(torch.cat([logits + additive, sink], dim=-1), dim=-1)[..., :-1]
    want = torch.matmul(probs, bf16[2].float().repeat_interleave(2, 1))
    assert (got.float() - want).abs().max() < 2e-2


def test_inference_only():
    """A dropout is refused, naming it, as are tensors autograd would record
    and a dtype posenc does not take."""
    q = projected(1, 3, 2, 8)
    k, v = cache(1, 2, 3, 8)
    with pytest.raises(ValueError, match=r"^dropout: posenc runs attention for inference, "
                       r"got 0.1$"):
        run(Layer(), q, k, v, None, dropout=0.1)
    with pytest.raises(RuntimeError, match="^q: requires grad, and posenc computes no "
                       "gradients"):
        run(Layer(), q.requires_grad_(), k, v, None)
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        run(Layer(), q.detach().half(), k.half(), v.half(), None)
