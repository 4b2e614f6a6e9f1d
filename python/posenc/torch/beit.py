"""timm's BEiT attention, beit.Attention, through posenc_attention.

With a window (use_rel_pos_bias) the bias is
relative_position_bias_table[relative_position_index] over Wh*Ww patches and
a class token (token 0), the table's last 3 rows the class token's (class to
patch, patch to class, class to class): posenc's TABLE_2D with class_token.
The qkv projection (q_bias, the zero k_bias and v_bias; qkv_bias_separate)
runs as timm writes it. A shared_rel_pos_bias (the model's
use_shared_rel_pos_bias: [heads, N, N]; any shape broadcast to [B, heads, N,
N]) is added after the module's own bias: posenc's mask, read in place.
timm's fused path (SDPA with the biases as attn_mask) and its explicit one
compute the same, but for the scale, as in swin.py.
"""
from . import _ops
from ._original import original_forward, original_scale
from ._qkv import qkv_with_biases
from ._skipped import attn_drop_reason
from .swin import index_mismatch

# The submodules timm's explicit path calls and this forward does not
# (_skipped.py).
SKIPPED = ("attn_drop",)


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    reason = attn_drop_reason(module)
    if reason or module.relative_position_bias_table is None:
        return reason
    return index_mismatch(module, True)


def forward(module, dtype, x, shared_rel_pos_bias=None):
    """The patched forward: x [B, N, C], shared_rel_pos_bias broadcast to
    [B, heads, N, N] or None. One that torch would not broadcast so (a
    batch other than 1 and B, which posenc would read as items b % its
    batch; more than 4 axes) goes to timm's forward."""
    batch, tokens, channels = x.shape
    mask = shared_rel_pos_bias
    windowed = module.relative_position_bias_table is not None
    if (windowed and tokens != module.window_size[0] * module.window_size[1] + 1) or \
            (mask is not None and (mask.dim() > 4 or
                                   (mask.dim() == 4 and mask.shape[0] not in (1, batch)))):
        # Not the window's tokens and the class token, or a mask torch would
        # not broadcast: timm's forward (and its error).
        return original_forward(module)(x, mask)
    run_dtype = dtype or x.dtype
    qkv = qkv_with_biases(module, x).reshape(batch, tokens, 3, module.num_heads, -1)
    if qkv.dtype != run_dtype:
        qkv = qkv.to(run_dtype)
    q, k, v = qkv.unbind(2)  # [B, N, heads, d] views
    table, window = module.relative_position_bias_table, [0, 0]
    if table is not None:
        table, window = table.to(run_dtype).contiguous(), list(module.window_size)
    if mask is not None:  # attention broadcasts every axis as timm adds it but the keys'
        mask = mask.expand(*mask.shape[:-1], tokens)
    out = _ops.attention_table_2d(q, k, v, table, window, table is not None, mask,
                                  original_scale(module, q.shape[-1]), x.dtype)
    out = module.proj(out.reshape(batch, tokens, channels))
    return module.proj_drop(out)
