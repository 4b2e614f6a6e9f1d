"""Models' attention as transformers writes it (their eager paths, in torch)
and torch's scaled_dot_product_attention (through the float64 reference):
the definitions posenc's options are checked against."""
import torch

import reference


def gemma2_attention(q, k, v, scale, softcap, mask):
    """Gemma 2's eager attention as transformers writes it: the scaled
    logits divided by the cap, tanh, times the cap, then the mask."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    logits = torch.matmul(q, k.transpose(2, 3)) * scale
    logits = torch.tanh(logits / softcap) * softcap
    return torch.matmul(torch.softmax(logits + mask, dim=-1), v)


def gpt_oss_attention(q, k, v, sinks, scale, mask):
    """gpt-oss's eager attention as transformers writes it: the head's sink
    concatenated to each row's scaled, masked logits, the softmax over both,
    the sink's column dropped before the product with v."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    logits = torch.matmul(q, k.transpose(2, 3)) * scale + mask
    sink = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[2], -1)
    combined = torch.cat([logits, sink], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = torch.softmax(combined, dim=-1, dtype=combined.dtype)
    return torch.matmul(probs[..., :-1], v)


def sdpa_attention(q, k, v, mask=None, scale=None, is_causal=False):
    """torch's scaled_dot_product_attention as its documentation defines it
    (float64, numpy): k and v repeated to q's heads (enable_gqa), scale
    1/sqrt(d) by default, is_causal aligned top-left, a bool mask's False
    -inf, a float mask added; a row that sees no key is zeros (torch 2.5's)."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.where(mask, 0.0, -torch.inf)
    return reference.attention(q.numpy(), k.numpy(), v.numpy(),
                               q.shape[-1] ** -0.5 if scale is None else scale,
                               causal=is_causal, mask=None if mask is None else mask.numpy())
