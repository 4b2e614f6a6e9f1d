"""timm's Swin V2 window attention, swin_transformer_v2.WindowAttention,
through posenc_attention.

Swin V2 (Liu et al. 2022) attends within windows as Swin does (swin.py:
the windows folded into the batch, the shifted windows' mask [nW, N, N]),
with cosine attention and a continuous position bias:
  softmax(s_h cos(q_i, k_j) + 16 sigmoid(T)[index(i,j), h] + mask[w]) v,
s_h = exp(min(logit_scale_h, ln 100)) per head, T = cpb_mlp(relative
coords) [(2Wh-1)(2Ww-1), heads] made each call as timm makes it, index
Swin's relative_position_index. posenc runs it as TABLE_2D with
16 sigmoid(T) as the table, q normalized and multiplied by s_h (scale 1)
and k normalized; the qkv projection (q_bias, the zero k_bias, v_bias;
qkv_bias_separate) as timm writes it.
"""
import math

import torch
import torch.nn.functional as F

from . import _ops
from ._original import original_forward
from ._qkv import qkv_with_biases
from ._skipped import attn_drop_reason
from .swin import cannot_run_softmax, position_index_mismatch, takes_window_call, window_mask

# The submodules timm's forward calls and this forward does not
# (_skipped.py).
SKIPPED = ("softmax", "attn_drop")


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    return cannot_run_softmax(module) or attn_drop_reason(module) or \
        position_index_mismatch(module, False)


def forward(module, dtype, x, mask=None):
    """The patched forward: x [B*nW, N, C], mask [nW, N, N] or None."""
    wh, ww = module.window_size
    coords = module.relative_coords_table
    if not takes_window_call(module, x, mask) or \
            tuple(coords.shape[1:3]) != (2 * wh - 1, 2 * ww - 1) or \
            torch.promote_types(x.dtype, torch.promote_types(
                module.logit_scale.dtype, coords.dtype)) != x.dtype:
        # Not a window's tokens, not SwinTransformerBlock's mask, coordinates
        # of another window, or a logit scale or table of a wider dtype than
        # x (timm's scores then widen, which its product with v refuses):
        # timm's forward.
        return original_forward(module)(x, mask)
    windows, tokens, _ = x.shape
    heads = module.num_heads
    run_dtype = dtype or x.dtype
    # (qkv, then cpb_mlp: timm's order, which hooks on them see.)
    qkv = qkv_with_biases(module, x).reshape(windows, tokens, 3, heads, -1)
    q, k, v = qkv.unbind(2)  # [B*nW, N, heads, d] views
    logit_scale = torch.clamp(module.logit_scale, max=math.log(1.0 / 0.01)).exp()
    q = F.normalize(q, dim=-1) * logit_scale.view(heads, 1)
    k = F.normalize(k, dim=-1)
    table = 16 * torch.sigmoid(module.cpb_mlp(coords).view(-1, heads))
    q, k, v, table = (t.to(run_dtype) for t in (q, k, v, table))
    out = _ops.attention_table_2d(q, k, v, table.contiguous(), [wh, ww], False,
                                  window_mask(mask), 1.0, x.dtype)
    out = module.proj(out.reshape(windows, tokens, -1))
    return module.proj_drop(out)
