"""timm's attention modules with a pos_embed_rel bias (rel_pos), through
posenc_attention: vision_transformer_relpos.RelPosAttention (the vit_relpos
and vit_srelpos models) and maxxvit's AttentionCl and Attention2d (MaxViT's
window and grid attention, CoAtNet's transformer stages).

Each adds rel_pos.get_bias() [1, heads, N, N] to scale q k^T over the
Wh x Ww tokens of rel_pos.window_size (and a prefix token), a table over
(query - key) gathered per pair, which posenc's TABLE_2D reads as Swin's
[(2Wh - 1)(2Ww - 1), heads] table:
- RelPosBias: its relative_position_bias_table as stored; a prefix token
  (prefix_tokens 1) takes its last 3 rows as BEiT's class token does;
- RelPosBiasTf (MaxViT's TensorFlow weights): its table [heads, 2Wh - 1,
  2Ww - 1] is read by key minus query (its one-hot lookups), so posenc's
  table is it flipped on both axes, heads last;
- RelPosMlp: its mlp of rel_coords_log, bias_act and bias_gain applied to
  the table (they act on each entry, so before the gather as after), a
  prefix token's zero row and column as 3 zero class-token rows.
Without rel_pos, a shared_rel_pos (vit_srelpos's model-wide bias) is the
mask, read in place. The qkv projection, RelPosAttention's q_norm and
k_norm and the output projection run as timm runs them.
"""
import collections
import math

import torch

from . import _ops
from ._original import original_forward, original_scale
from ._skipped import attn_drop_reason, plain
from .swin import relative_position_index

# The submodules timm's explicit path calls and this forward does not, or
# not as timm does (_skipped.py): rel_pos's forward adds the bias to the
# scores there, and RelPosMlp's bias_act acts on the gathered bias, where
# posenc gives it the table.
SKIPPED = ("rel_pos", "rel_pos.bias_act", "attn_drop")

_REL_POS_MODULE = "timm.layers.pos_embed_rel"
_REL_POS_CLASSES = ("RelPosBias", "RelPosBiasTf", "RelPosMlp")


def _one_hot_lookup(length):
    """timm's generate_lookup_tensor(length) from its definition:
    [length, length, 2 length - 1], 1 where v = m - n + length - 1."""
    n, m = torch.meshgrid(torch.arange(length), torch.arange(length), indexing="ij")
    lookup = torch.zeros(length, length, 2 * length - 1)
    lookup[n, m, m - n + length - 1] = 1
    return lookup


def _known(rel_pos):
    """Whether rel_pos is of one of the classes posenc reads (not a subclass)."""
    return type(rel_pos).__module__ == _REL_POS_MODULE and \
        type(rel_pos).__name__ in _REL_POS_CLASSES


def _meta(*tensors):
    return any(t is not None and t.is_meta for t in tensors)


def _flat_index_mismatch(rel_pos, class_token):
    """Why rel_pos's relative_position_index (flattened, as timm keeps it)
    is not the standard one of its window, or None."""
    wh, ww = rel_pos.window_size
    index = rel_pos.relative_position_index
    if _meta(index):
        return "rel_pos's buffers are on the meta device: patch once they hold values"
    expected = relative_position_index(wh, ww, class_token).flatten()
    if index is None or index.shape != expected.shape or \
            not torch.equal(index.cpu(), expected.to(index.dtype)):
        return f"rel_pos's relative_position_index is not the standard one of a {wh}x{ww} window"
    return None


def _table_mismatch(rel_pos, heads):
    """Why posenc cannot read rel_pos's bias as a TABLE_2D table of `heads`
    heads, or None."""
    kind = type(rel_pos).__name__
    if not _known(rel_pos) or "get_bias" in rel_pos.__dict__ or "forward" in rel_pos.__dict__:
        return (f"rel_pos ({kind}) is not one of timm's {', '.join(_REL_POS_CLASSES)} "
                "without a forward or get_bias of its own")
    table_heads = rel_pos.num_heads if kind == "RelPosMlp" else \
        rel_pos.relative_position_bias_table.shape[-1 if kind == "RelPosBias" else 0]
    if table_heads != heads:
        return f"rel_pos has {table_heads} heads, the module {heads}"
    wh, ww = rel_pos.window_size
    entries = (2 * wh - 1) * (2 * ww - 1)
    if kind == "RelPosBias":
        table = rel_pos.relative_position_bias_table
        if rel_pos.prefix_tokens not in (0, 1) or table.dim() != 2 or \
                table.shape[0] != entries + 3 * rel_pos.prefix_tokens:
            return (f"rel_pos's relative_position_bias_table {list(table.shape)} is not the "
                    f"table of a {wh}x{ww} window")
        return _flat_index_mismatch(rel_pos, rel_pos.prefix_tokens == 1)
    if kind == "RelPosBiasTf":
        table = rel_pos.relative_position_bias_table
        if table.dim() != 3 or tuple(table.shape[1:]) != (2 * wh - 1, 2 * ww - 1):
            return (f"rel_pos's relative_position_bias_table {list(table.shape)} is not "
                    f"[heads, {2 * wh - 1}, {2 * ww - 1}]")
        if _meta(rel_pos.height_lookup, rel_pos.width_lookup):
            return "rel_pos's buffers are on the meta device: patch once they hold values"
        for name, length in (("height_lookup", wh), ("width_lookup", ww)):
            lookup = getattr(rel_pos, name)
            expected = _one_hot_lookup(length)
            if lookup.shape != expected.shape or \
                    not torch.equal(lookup.cpu().float(), expected):
                return f"rel_pos's {name} is not the one-hot lookup of a {wh}x{ww} window"
        return None
    if rel_pos.prefix_tokens not in (0, 1):
        return f"rel_pos has {rel_pos.prefix_tokens} prefix tokens (posenc takes 0 or 1)"
    if not plain(rel_pos.bias_act, (torch.nn.Sigmoid, torch.nn.Identity)):
        return (f"rel_pos's bias_act ({type(rel_pos.bias_act).__name__}) is not an "
                "nn.Sigmoid or nn.Identity")
    if tuple(rel_pos.rel_coords_log.shape[:2]) != (2 * wh - 1, 2 * ww - 1):
        return "rel_pos's rel_coords_log is not of its window"
    return _flat_index_mismatch(rel_pos, False)


def _qkv_width_mismatch(module):
    """Why module's qkv projection does not give 3 x heads x head size
    channels, or None (maxxvit asserts it in AttentionCl, not Attention2d)."""
    qkv = module.qkv
    width = getattr(qkv, "out_features", None) or getattr(qkv, "out_channels", None)
    head_dim = getattr(module, "dim_head", None) or module.head_dim
    if width != 3 * module.num_heads * head_dim:
        return (f"qkv gives {width} channels, not 3 x {module.num_heads} heads x "
                f"{head_dim}")
    return None


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    reason = attn_drop_reason(module) or _qkv_width_mismatch(module)
    if reason or module.rel_pos is None:
        return reason
    return _table_mismatch(module.rel_pos, module.num_heads)


def position_table(rel_pos, run_dtype):
    """(table, window, class_token): rel_pos's bias as TABLE_2D reads it,
    made from its parameters each call, as timm's get_bias makes it."""
    kind = type(rel_pos).__name__
    class_token = getattr(rel_pos, "prefix_tokens", 0) == 1
    if kind == "RelPosBias":
        table = rel_pos.relative_position_bias_table
    elif kind == "RelPosBiasTf":
        tf_table = rel_pos.relative_position_bias_table  # [heads, 2Wh - 1, 2Ww - 1]
        table = tf_table.flip(1, 2).permute(1, 2, 0).reshape(-1, tf_table.shape[0])
    else:
        table = rel_pos.mlp(rel_pos.rel_coords_log).reshape(-1, rel_pos.num_heads)
        table = rel_pos.bias_act(table)
        if rel_pos.bias_gain is not None:
            table = rel_pos.bias_gain * table
        if class_token:  # timm pads the prefix token's row and column with zeros
            table = torch.cat((table, table.new_zeros(3, table.shape[1])))
    return table.to(run_dtype).contiguous(), list(rel_pos.window_size), class_token


def _shared_mask(mask, x, batch, heads, tokens):
    """A shared_rel_pos as attention's mask, or False where timm's forward
    must take it: another dtype than x's or fewer than 2 axes (timm's two
    paths differ there: SDPA refuses them, the explicit sum widens or
    broadcasts), or a shape torch would not broadcast to [B, heads, N, N]
    (timm's error; posenc would read a batch of m as items b % m)."""
    if mask is None:
        return None
    scores = (batch, heads, tokens, tokens)
    if mask.dtype != x.dtype or not 2 <= mask.dim() <= 4:
        return False
    try:
        return mask if torch.broadcast_shapes(mask.shape, scores) == scores else False
    except RuntimeError:
        return False


def _bias_dtype(rel_pos):
    """The dtype of rel_pos's bias as timm makes it."""
    if type(rel_pos).__name__ == "RelPosMlp":
        return rel_pos.rel_coords_log.dtype
    return rel_pos.relative_position_bias_table.dtype


def _mask_of_call(module, x, batch, tokens, shared_rel_pos):
    """The call's mask (None, or shared_rel_pos as attention reads it), or
    False where timm's forward must run: tokens other than rel_pos's window
    (timm's error, or its broadcasting), a rel_pos of another class than
    patch saw or a bias of another dtype than x's (timm's explicit sum
    widens the scores, which its product with v refuses), or a
    shared_rel_pos it must take."""
    rel_pos = module.rel_pos
    if rel_pos is None:
        return _shared_mask(shared_rel_pos, x, batch, module.num_heads, tokens)
    if not _known(rel_pos) or _bias_dtype(rel_pos) != x.dtype:
        return False
    wh, ww = rel_pos.window_size
    return None if tokens == wh * ww + getattr(rel_pos, "prefix_tokens", 0) else False


def _attend(module, dtype, x, q, k, v, mask):
    """Attention of [B, N, heads, d] views q, k, v (in x's dtype) with
    module's rel_pos bias and the call's mask; out [B, N, heads, d] of x's
    dtype."""
    run_dtype = dtype or x.dtype
    q, k, v = (t.to(run_dtype) if t.dtype != run_dtype else t for t in (q, k, v))
    table, window, class_token = None, [0, 0], False
    if module.rel_pos is not None:
        table, window, class_token = position_table(module.rel_pos, run_dtype)
    return _ops.attention_table_2d(q, k, v, table, window, class_token, mask,
                                   original_scale(module, q.shape[-1]), x.dtype)


def relpos_forward(module, dtype, x, shared_rel_pos=None):
    """RelPosAttention's patched forward: x [B, N, C]."""
    batch, tokens, channels = x.shape
    mask = _mask_of_call(module, x, batch, tokens, shared_rel_pos)
    if mask is False:
        return original_forward(module)(x, shared_rel_pos)
    qkv = module.qkv(x).reshape(batch, tokens, 3, module.num_heads, module.head_dim)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # [B, heads, N, d], as timm norms them
    q, k = module.q_norm(q), module.k_norm(k)
    out = _attend(module, dtype, x, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                  mask)
    return module.proj_drop(module.proj(out.reshape(batch, tokens, channels)))


def _split_heads(qkv, batch, tokens, module):
    """q, k, v [B, N, heads, d] views of qkv's 3 x heads x d channels per
    token: head after head of q, k and v (head_first), or q's heads, k's,
    v's (timm's TensorFlow ports)."""
    heads, d = module.num_heads, module.dim_head
    if module.head_first:
        return qkv.reshape(batch, tokens, heads, 3, d).unbind(3)
    return qkv.reshape(batch, tokens, 3, heads, d).unbind(2)


def channels_last_forward(module, dtype, x, shared_rel_pos=None):
    """maxxvit.AttentionCl's patched forward: x [B, ..., C] (MaxViT's windows
    and grids [B * partitions, ph, pw, C])."""
    batch, restore_shape = x.shape[0], x.shape[:-1]
    tokens = math.prod(restore_shape[1:])
    mask = _mask_of_call(module, x, batch, tokens, shared_rel_pos)
    if batch == 0 or mask is False:  # (an empty batch: timm's view refuses it)
        return original_forward(module)(x, shared_rel_pos)
    q, k, v = _split_heads(module.qkv(x), batch, tokens, module)
    out = _attend(module, dtype, x, q, k, v, mask).reshape(restore_shape + (-1,))
    return module.proj_drop(module.proj(out))


def nchw_forward(module, dtype, x, shared_rel_pos=None):
    """maxxvit.Attention2d's patched forward: x [B, C, H, W] (CoAtNet's
    transformer stages over the whole map)."""
    batch, _, height, width = x.shape
    mask = _mask_of_call(module, x, batch, height * width, shared_rel_pos)
    if batch == 0 or mask is False:
        return original_forward(module)(x, shared_rel_pos)
    qkv = module.qkv(x).flatten(2).transpose(1, 2)  # [B, N, channels], read with a copy
    q, k, v = _split_heads(qkv, batch, height * width, module)
    out = _attend(module, dtype, x, q, k, v, mask)
    # [B, heads, d, N], as timm's SDPA output transposed, onto the map
    return module.proj_drop(module.proj(out.permute(0, 2, 3, 1).reshape(batch, -1, height,
                                                                         width)))


# The three kinds' implementations, as posenc.torch.patch reads a kind's.
Kind = collections.namedtuple("Kind", "forward cannot_reproduce SKIPPED")
RELPOS_ATTENTION = Kind(relpos_forward, cannot_reproduce, SKIPPED)
CHANNELS_LAST_ATTENTION = Kind(channels_last_forward, cannot_reproduce, SKIPPED)
NCHW_ATTENTION = Kind(nchw_forward, cannot_reproduce, SKIPPED)
