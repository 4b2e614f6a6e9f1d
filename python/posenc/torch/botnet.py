"""timm's BottleneckAttn (BoTNet) through posenc_bottleneck_mhsa.

PosEmbedRel's logits are q . R[k - q + S - 1] (the skew of rel_logits_1d),
the height table with rows and the width table with columns: posenc's
RELATIVE_2D as it is. scale_pos_embed=True scales them with q k^T
(bias_uses_scaled_q = 1, posenc_bottleneck_mhsa's rule); with False they
come from the unscaled q, which is (scale q) . (R / scale): the tables are
divided by scale.
"""
from . import _ops


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    if module.dim_head_qk != module.dim_head_v:
        return (f"q/k head size {module.dim_head_qk} differs from v's {module.dim_head_v} "
                "(qk_ratio != 1)")
    if module.qkv.bias is not None:
        return "the qkv projection has a bias (qkv_bias=True)"
    return None


def forward(module, dtype, x):
    """The patched forward; other map sizes go to timm's (which refuses them)."""
    batch, channels, height, width = x.shape
    pos = module.pos_embed
    if (height, width) != (pos.height, pos.width):
        return module._posenc_original_forward(x)
    run_dtype = dtype or x.dtype
    table_h, table_w = pos.height_rel, pos.width_rel
    if not module.scale_pos_embed:
        table_h, table_w = table_h / module.scale, table_w / module.scale
    weight = module.qkv.weight.reshape(module.qkv.weight.shape[0], channels)
    fmap = x if x.dtype == run_dtype else x.to(run_dtype)
    out = _ops.bottleneck(fmap.contiguous(), weight.to(run_dtype).contiguous(),
                          table_h.to(run_dtype).contiguous(), table_w.to(run_dtype).contiguous(),
                          module.num_heads, module.scale, x.dtype)
    return module.pool(out)
