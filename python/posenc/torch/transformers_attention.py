"""posenc_attention as an attention function of Hugging Face transformers
(its AttentionInterface): registered under a name, it runs the attention
of every layer of a model loaded with that attn_implementation.

    from transformers import AttentionInterface, AutoModelForCausalLM
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    AttentionInterface.register("posenc", posenc.torch.transformers_attention)
    AttentionMaskInterface.register("posenc", sdpa_mask)
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="posenc")

Both registrations are needed: for a name without a mask function
transformers passes no mask (no padding, no window). The function is called
as transformers calls its sdpa_attention_forward and computes what that
computes with torch's scaled_dot_product_attention, with the options sdpa
does not take: Gemma 2's soft cap (softcap) and gpt-oss's sinks (s_aux), as
their eager attention does. It calls posenc.torch.attention, which
torch.compile keeps in its graph (torch 2.4 and later).
"""
from .functional import attention


def transformers_attention(module, query, key, value, attention_mask, dropout=0.0,
                           scaling=None, is_causal=None, softcap=None, s_aux=None, **kwargs):
    """Attention as transformers' attention functions take it: query [B, H,
    Tq, d], key and value [B, kv heads, Tk, d or dv] (grouped-query heads
    read in place), attention_mask bool (True: the key takes part) or
    additive of [B, 1, Tq, Tk or more] (keys past Tk dropped, as transformers'
    eager attention does), or None: then causal, aligned top-left, where
    is_causal (else module.is_causal, else True) and Tq > 1, as sdpa decides.
    scaling: default 1/sqrt(d). softcap: Gemma 2's attn_logit_softcapping.
    s_aux: gpt-oss's sinks [H] (in query's dtype: fp32 sinks of a model
    under CPU autocast are rounded to its bf16). Other keyword arguments
    (sliding_window among them: the mask holds the window) are not read.
    Returns ([B, Tq, H, dv] in query's dtype, None): no attention weights,
    as sdpa. A query row that sees no key (a padding token's) is zeros, as
    sdpa gives it from torch 2.5 for a bool mask; for an additive mask of
    finfo.min (older transformers) sdpa gives the mean of v there.

    Inference only: a dropout other than 0 is refused, as posenc refuses a
    tensor requiring grad while grad is enabled (generate runs under
    torch.no_grad()), tensors not on the CPU, and dtypes other than float32
    and bfloat16 (its errors name posenc.attention's q, k, v, mask and
    sinks)."""
    del kwargs
    if dropout:
        raise ValueError(f"dropout: posenc runs attention for inference, got {dropout}")
    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)
    q_len = query.shape[2]
    mask = attention_mask
    if mask is not None and mask.shape[-1] > key.shape[2]:
        mask = mask[..., :key.shape[2]]
    if s_aux is not None and s_aux.dtype != query.dtype:
        s_aux = s_aux.to(query.dtype)
    out = attention(query, key, value, out_layout="bthd", scale=scaling, mask=mask,
                    softcap=softcap, sinks=s_aux,
                    causal=q_len > 1 and mask is None and bool(is_causal))
    return out, None
