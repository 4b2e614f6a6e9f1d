"""timm's MViTv2 attention, mvitv2.MultiScaleAttention, through
posenc_attention.

MultiScaleAttention pools q, k and v over the H x W feature map (a
depthwise convolution and a norm, or an average or max pool), then takes
softmax(scale q k^T + rel_h + rel_w) v, plus q (residual_pooling), with
cal_rel_pos_type's decomposed relative positions: the logits of the pooled,
unscaled q against rel_pos_h and rel_pos_w at rows by query minus key, the
coordinates of the smaller map scaled by the ratio of the sizes, in float
arithmetic. That is posenc's 2D relative bias with relative_order
"query_minus_key" and the pooled keys' map as the key map (SAM's rule). The
pooling, norms, residual and projections run as timm runs them.
"""
from . import _ops
from ._original import original_forward

# The submodules timm's forward calls and this one does not (_skipped.py).
SKIPPED = ()


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    if module.has_cls_token:
        return "its class token skips the pooling and the relative positions: not reproduced"
    return None


def _pooled(x, pool, norm, feat_size, heads):
    """x [B, heads, N, d] pooled over the [H, W] map as timm's
    reshape_pre_pool, pool and reshape_post_pool make it (no class token),
    then normed; and its map (feat_size itself, as timm returns it, where
    nothing pools)."""
    if pool is not None:
        x = x.reshape(-1, *feat_size, x.shape[-1]).permute(0, 3, 1, 2).contiguous()
        x = pool(x)
        feat_size = [x.shape[2], x.shape[3]]
        x = x.reshape(-1, heads, x.shape[1], feat_size[0] * feat_size[1]).transpose(2, 3)
    if norm is not None:
        x = norm(x)
    return x, feat_size


def _tables(module, q_size, k_size, q_dtype, dtype):
    """rel_pos_h and rel_pos_w as the call reads them: cal_rel_pos_type's
    largest row is 2 max(q, k) - 2 on each axis, so a longer table's first
    2 max(q, k) - 1 rows; None where a table is shorter or not of q's dtype
    (timm's error: its index, or its einsum of q and the table)."""
    tables = []
    for table, q, k in ((module.rel_pos_h, q_size[0], k_size[0]),
                        (module.rel_pos_w, q_size[1], k_size[1])):
        rows = 2 * max(q, k) - 1
        if table.shape[0] < rows or table.dtype != q_dtype:
            return None
        tables.append(table[:rows].to(dtype).contiguous())
    return tables


def forward(module, dtype, x, feat_size):
    """The patched forward: x [B, N, C] over the feat_size [H, W] map;
    returns (out [B, N', dim_out], the pooled queries' map)."""
    batch, tokens, _ = x.shape
    heads = module.num_heads
    qkv = module.qkv(x).reshape(batch, tokens, 3, heads, -1).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(dim=0)  # [B, heads, N, d]
    q, q_size = _pooled(q, module.pool_q, module.norm_q, feat_size, heads)
    k, k_size = _pooled(k, module.pool_k, module.norm_k, feat_size, heads)
    v, _ = _pooled(v, module.pool_v, module.norm_v, feat_size, heads)
    run_dtype = dtype or x.dtype
    tables = [None, None]
    if module.rel_pos_type == "spatial":
        tables = _tables(module, q_size, k_size, q.dtype, run_dtype)
        if tables is None:
            return original_forward(module)(x, feat_size)
    q_run, k_run, v_run = (t.to(run_dtype) if t.dtype != run_dtype else t for t in (q, k, v))
    out = _ops.attention_2d(q_run.transpose(1, 2), k_run.transpose(1, 2), v_run.transpose(1, 2),
                            tables[0], tables[1], module.scale, False, x.dtype, True,
                            list(q_size), list(k_size))  # [B, N', heads, d]
    if module.residual_pooling:
        out = out + q.transpose(1, 2)
    out = module.proj(out.reshape(batch, -1, module.dim_out))
    return out, q_size
