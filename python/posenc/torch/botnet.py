"""timm's BottleneckAttn (BoTNet) through posenc_bottleneck.

PosEmbedRel's logits are q . R[k - q + S - 1] (the skew of rel_logits_1d),
the height table with rows and the width table with columns: posenc's
RELATIVE_2D as it is. scale_pos_embed is bias_uses_scaled_q, qkv.bias the
qkv bias, stride 2's AvgPool2d(2, 2) runs in posenc, and qk_ratio != 1 (a v
head size dim_head_v other than dim_head_qk) is value_head_dim: the tables
give the q/k head size and qkv.weight's other rows v's.
"""
import torch

from . import _ops
from ._original import original_forward


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None: every
    BottleneckAttn it can (both scale_pos_embed, qkv_bias, stride 2 and
    any qk_ratio)."""
    return None


def forward(module, dtype, x):
    """The patched forward; other map sizes go to timm's (which refuses them)."""
    batch, channels, height, width = x.shape
    pos = module.pos_embed
    if (height, width) != (pos.height, pos.width):
        return original_forward(module)(x)
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
