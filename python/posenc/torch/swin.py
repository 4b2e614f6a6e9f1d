"""timm's Swin (v1) window attention, swin_transformer.WindowAttention,
through posenc_attention.

WindowAttention attends within windows of Wh x Ww tokens (token n = y*Ww +
x), the windows of all images folded into the batch (window w of image b is
batch item b*nW + w, window_partition's order):
  softmax(scale q k^T + table[index(i,j), h] + mask[w]) v,
index(i,j) = (dy + Wh - 1)(2Ww - 1) + dx + Ww - 1 with (dy, dx) query minus
key (relative_position_index): posenc's TABLE_2D as the table is stored. The
shifted windows' mask [nW, N, N] (0 or -100) is posenc's mask with
mask_batch nW, batch item b reading mask b % nW. timm's fused path (SDPA
with the bias and mask as attn_mask) and its explicit one (q * scale @ k^T
+ bias + mask) compute the same, but that the fused one's scale is
head_dim^-1/2 whatever module.scale says (original_scale).
"""
import torch

from . import _ops
from ._original import original_forward, original_scale
from ._skipped import attn_drop_reason, plain

# The submodules timm's explicit path calls and this forward does not
# (_skipped.py).
SKIPPED = ("softmax", "attn_drop")


def relative_position_index(window_height, window_width, class_token=False):
    """Swin's relative_position_index from its definition (and BEiT's, whose
    class token takes rows L, L + 1, L + 2 of a table of L + 3)."""
    y, x = torch.meshgrid(torch.arange(window_height), torch.arange(window_width),
                          indexing="ij")
    y, x = y.flatten(), x.flatten()
    dy = y[:, None] - y[None, :] + window_height - 1
    dx = x[:, None] - x[None, :] + window_width - 1
    index = dy * (2 * window_width - 1) + dx
    if not class_token:
        return index
    entries = (2 * window_height - 1) * (2 * window_width - 1)
    tokens = index.shape[0] + 1
    full = torch.empty(tokens, tokens, dtype=index.dtype)
    full[1:, 1:] = index
    full[0, 1:] = entries      # class to token
    full[1:, 0] = entries + 1  # token to class
    full[0, 0] = entries + 2
    return full


def index_mismatch(module, class_token):
    """Why module's table or relative_position_index is not the one posenc
    computes for its window_size, or None."""
    wh, ww = module.window_size
    rows = (2 * wh - 1) * (2 * ww - 1) + 3 * class_token
    table = module.relative_position_bias_table
    if table.dim() != 2 or table.shape[0] != rows:
        return (f"relative_position_bias_table {list(table.shape)} is not "
                f"[{rows}, heads] for a {wh}x{ww} window")
    return position_index_mismatch(module, class_token)


def position_index_mismatch(module, class_token):
    """Why module's relative_position_index is not the one posenc computes
    for its window_size, or None."""
    wh, ww = module.window_size
    index = module.relative_position_index
    expected = relative_position_index(wh, ww, class_token)
    if index is not None and index.is_meta:
        return "relative_position_index is on the meta device: patch once it holds values"
    if index is None or index.shape != expected.shape or \
            not torch.equal(index.cpu(), expected.to(index.dtype)):
        return f"relative_position_index is not the standard one of a {wh}x{ww} window"
    return None


def cannot_run_softmax(module):
    """Why module's softmax (Swin v1's and v2's) is not one over the keys
    that posenc's replaces, or None."""
    softmax = module.softmax
    if not plain(softmax, (torch.nn.Softmax,)) or softmax.dim not in (-1, 3):
        return f"softmax ({type(softmax).__name__}) is not an nn.Softmax over the keys"
    return None


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    return cannot_run_softmax(module) or attn_drop_reason(module) or \
        index_mismatch(module, False)


def takes_window_call(module, x, mask):
    """Whether x [B*nW, N, C] is a window's tokens and mask None or
    SwinTransformerBlock's [nW, N, N] (Swin v1's and v2's alike)."""
    windows, tokens, _ = x.shape
    wh, ww = module.window_size
    # Else timm's own broadcasting (or error; a mask of a wider dtype than
    # x, fp32 in a bf16 module, makes its scores fp32, which its product
    # with v refuses).
    return tokens == wh * ww and (mask is None or (
        mask.dim() == 3 and tuple(mask.shape[1:]) == (tokens, tokens) and
        mask.shape[0] > 0 and windows % mask.shape[0] == 0 and
        torch.promote_types(x.dtype, mask.dtype) == x.dtype))


def window_mask(mask):
    """SwinTransformerBlock's mask [nW, N, N] as attention reads it (batch
    item b reading mask b % nW), or None."""
    if mask is None:
        return None
    return mask.reshape(mask.shape[0], 1, *mask.shape[1:]).contiguous()


def forward(module, dtype, x, mask=None):
    """The patched forward: x [B*nW, N, C], mask [nW, N, N] or None."""
    if not takes_window_call(module, x, mask):
        return original_forward(module)(x, mask)
    windows, tokens, _ = x.shape
    run_dtype = dtype or x.dtype
    qkv = module.qkv(x).reshape(windows, tokens, 3, module.num_heads, -1)
    if qkv.dtype != run_dtype:
        qkv = qkv.to(run_dtype)
    q, k, v = qkv.unbind(2)  # [B*nW, N, heads, d] views
    table = module.relative_position_bias_table.to(run_dtype).contiguous()
    out = _ops.attention_table_2d(q, k, v, table, list(module.window_size), False,
                                  window_mask(mask), original_scale(module, q.shape[-1]),
                                  x.dtype)
    out = module.proj(out.reshape(windows, tokens, -1))
    return module.proj_drop(out)
