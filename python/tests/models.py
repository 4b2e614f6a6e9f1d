"""Models' attention as transformers writes it (their eager paths, in torch):
the definitions posenc's options are checked against."""
import torch


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
    """torch's scaled_dot_product_attention as its documentation defines it,
    k and v repeated to q's heads (enable_gqa): softmax(scale q k^T + bias) v,
    the bias -inf above the diagonal aligned top-left with is_causal and
    where a bool mask is False, a float mask added."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    q_len, kv_len = q.shape[2], k.shape[2]
    bias = torch.zeros(q_len, kv_len, dtype=q.dtype)
    if is_causal:
        bias = bias.masked_fill(~torch.ones(q_len, kv_len, dtype=torch.bool).tril(), -torch.inf)
    if mask is not None:
        bias = torch.where(mask, bias, -torch.inf) if mask.dtype == torch.bool else bias + mask
    return torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * scale + bias, dim=-1) @ v
