"""Segment Anything's attention, as timm's vision_transformer_sam.Attention
and segment_anything's modeling.image_encoder.Attention write it, through
posenc_attention.

Both compute softmax(scale q k^T + rel_h + rel_w) v over a [B, H, W, C]
input (a window, or the whole map), with the decomposed relative position
logits of the UNscaled q (bias_uses_scaled_q = 0). Their tables are indexed
by query minus key (get_rel_pos: row q - k + S - 1): posenc reads them as
stored with relative_order "query_minus_key". A table whose rows differ
from 2S - 1 is first resized as get_rel_pos does (linear interpolation; for
equal query and key sizes its indices are then exact integers).
"""
import torch
import torch.nn.functional as F

from . import _ops
from ._original import original_scale
from ._skipped import attn_drop_reason, plain

# The submodules timm's forward calls and this one does not (_skipped.py;
# segment_anything's Attention has none): attn_drop, and q_norm and k_norm
# where they are nn.Identity.
SKIPPED = ("attn_drop", "q_norm", "k_norm")


def _table(rel_pos, size, dtype):
    """The [2*size-1, d] table of a SAM table, resized as get_rel_pos does
    where it has other rows (else as stored)."""
    rows = 2 * size - 1
    if rel_pos.shape[0] != rows:
        rel_pos = F.interpolate(rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1),
                                size=rows, mode="linear").reshape(-1, rows).permute(1, 0)
    return rel_pos.to(dtype).contiguous()


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    if getattr(module, "rope", None) is not None:
        return "rotary embeddings (rope) are not reproduced"
    return attn_drop_reason(module)


def _normed(norm, x):
    """x [B, N, heads, d] after timm's q_norm or k_norm, given x as timm
    gives it, [B * heads, N, d]; a plain nn.Identity is skipped."""
    if norm is None or plain(norm, (torch.nn.Identity,)):
        return x
    batch, tokens, heads, head_dim = x.shape
    x = norm(x.transpose(1, 2).reshape(batch * heads, tokens, head_dim))
    return x.reshape(batch, heads, tokens, head_dim).transpose(1, 2)


def forward(module, dtype, x):
    """The patched forward of either Attention class."""
    batch, height, width, channels = x.shape
    heads = module.num_heads
    head_dim = channels // heads
    tokens = height * width
    run_dtype = dtype or x.dtype
    qkv = module.qkv(x.reshape(batch, tokens, channels)).view(batch, tokens, 3, heads, head_dim)
    q, k, v = qkv.unbind(2)  # [B, N, heads, d] views, token stride 3C
    q = _normed(getattr(module, "q_norm", None), q)  # in the module's dtype, as timm's
    k = _normed(getattr(module, "k_norm", None), k)
    if qkv.dtype != run_dtype:
        q, k, v = (t.to(run_dtype) for t in (q, k, v))
    table_h = table_w = None
    if module.use_rel_pos:
        table_h = _table(module.rel_pos_h, height, run_dtype)
        table_w = _table(module.rel_pos_w, width, run_dtype)
    out = _ops.attention_2d(q, k, v, table_h, table_w, original_scale(module, head_dim), False,
                            x.dtype, True)
    out = module.proj(out.view(batch, tokens, channels))
    proj_drop = getattr(module, "proj_drop", None)
    if proj_drop is not None:
        out = proj_drop(out)
    return out.view(batch, height, width, -1)
