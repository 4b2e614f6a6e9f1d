"""timm's BottleneckAttn (BoTNet) through posenc_bottleneck.

PosEmbedRel's logits are q . R[k - q + S - 1] (the skew of rel_logits_1d),
the height table with rows and the width table with columns: posenc's
RELATIVE_2D as it is. scale_pos_embed is bias_uses_scaled_q, qkv.bias the
qkv bias, and stride 2's AvgPool2d(2, 2) runs in posenc.
"""
import torch

from . import _ops


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None."""
    if module.dim_head_qk != module.dim_head_v:
        return (f"q/k head size {module.dim_head_qk} differs from v's {module.dim_head_v} "
                "(qk_ratio != 1)")
    return None


def forward(module, dtype, x):
    """The patched forward; other map sizes go to timm's (which refuses them)."""
    batch, channels, height, width = x.shape
    pos = module.pos_embed
    if (height, width) != (pos.height, pos.width):
        return module._posenc_original_forward(x)
    run_dtype = dtype or x.dtype
    weight = module.qkv.weight.reshape(module.qkv.weight.shape[0], channels)
    bias = module.qkv.bias
    fmap = x if x.dtype == run_dtype else x.to(run_dtype)
    stride = 1 if isinstance(module.pool, torch.nn.Identity) else 2
    return _ops.bottleneck(fmap.contiguous(), weight.to(run_dtype).contiguous(),
                           None if bias is None else bias.to(run_dtype).contiguous(),
                           pos.height_rel.to(run_dtype).contiguous(),
                           pos.width_rel.to(run_dtype).contiguous(), module.num_heads,
                           module.scale, module.scale_pos_embed, stride, x.dtype)
