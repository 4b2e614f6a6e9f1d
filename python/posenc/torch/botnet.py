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
from ._skipped import plain

# The submodules timm's forward calls and this one does not (_skipped.py;
# qkv, run from its weight and bias, has its own check: _qkv_is_plain).
SKIPPED = ("pos_embed", "pool")


def _qkv_is_plain(qkv):
    """Whether qkv computes what its weight and bias say: an nn.Conv2d itself
    (not a subclass such as timm's StdConv2d), 1x1, stride 1, no groups,
    without hooks (weight_norm's among them) or a forward of its own."""
    return type(qkv) is torch.nn.Conv2d and qkv.kernel_size == (1, 1) and \
        qkv.stride == (1, 1) and qkv.padding == (0, 0) and qkv.groups == 1 and \
        not qkv._forward_hooks and not qkv._forward_pre_hooks and "forward" not in qkv.__dict__


def cannot_reproduce(module):
    """Why posenc cannot run this module exactly, or None: every
    BottleneckAttn it can (both scale_pos_embed, qkv_bias, stride 2 and
    any qk_ratio) whose qkv is timm's plain 1x1 convolution, which posenc
    runs from its weight and bias."""
    if not _qkv_is_plain(module.qkv):
        return (f"qkv ({type(module.qkv).__name__}) is not a plain 1x1 nn.Conv2d without hooks, "
                "which posenc runs from its weight and bias")
    if type(module.pos_embed).__name__ != "PosEmbedRel" or "forward" in module.pos_embed.__dict__:
        return f"pos_embed ({type(module.pos_embed).__name__}) is not timm's PosEmbedRel"
    pool = module.pool
    if not (plain(pool, (torch.nn.Identity,)) or (
            plain(pool, (torch.nn.AvgPool2d,)) and _pools_2x2(pool))):
        return f"pool ({type(pool).__name__}) is neither nn.Identity nor nn.AvgPool2d(2, 2)"
    return None


def _pools_2x2(pool):
    """Whether an AvgPool2d averages whole 2x2 blocks, as timm's stride 2."""
    pair = (lambda v: v if isinstance(v, tuple) else (v, v))
    return pair(pool.kernel_size) == (2, 2) and pair(pool.stride) == (2, 2) and \
        pair(pool.padding) == (0, 0) and not pool.ceil_mode and pool.divisor_override is None


def forward(module, dtype, x):
    """The patched forward; other map sizes, an empty batch, or an input of
    another dtype than qkv's weight go to timm's (which refuses them), and so
    does a qkv replaced after patching (hooks: _skipped.py)."""
    batch, channels, height, width = x.shape
    pos = module.pos_embed
    if (height, width) != (pos.height, pos.width) or batch == 0 or \
            not _qkv_is_plain(module.qkv) or x.dtype != module.qkv.weight.dtype:
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
