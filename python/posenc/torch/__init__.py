"""posenc.torch.patch(model): the attention modules posenc knows, run
through posenc, in one line.

    import posenc.torch
    replaced = posenc.torch.patch(model)   # [(name, kind), ...]

Known modules (matched by class, so timm and segment_anything are never
imported here):
- timm's vision_transformer_sam.Attention (windowed and global, with or
  without use_rel_pos) and segment_anything's modeling.image_encoder.Attention:
  kind "sam_attention" (posenc_attention, 2D relative bias);
- timm's layers.bottleneck_attn.BottleneckAttn (both scale_pos_embed
  settings, qkv_bias, stride 2, qk_ratio != 1; its qkv a plain 1x1
  nn.Conv2d, run from its weight and bias): kind "bottleneck_attention"
  (posenc_bottleneck);
- timm's swin_transformer.WindowAttention (Swin v1: the learned bias table,
  the shifted windows' mask): kind "swin_attention";
- timm's swin_transformer_v2.WindowAttention (Swin V2: cosine attention
  with its per-head logit scale, the continuous position bias of its
  cpb_mlp, the shifted windows' mask): kind "swinv2_attention";
- timm's beit.Attention (its bias table with the class token's entries, or
  none; q_bias and v_bias; a shared_rel_pos_bias argument): kind
  "beit_attention";
- timm's attention with a layers.pos_embed_rel bias (RelPosBias, the
  TensorFlow ports' RelPosBiasTf, RelPosMlp; with a prefix token or none;
  or none and a shared_rel_pos): vision_transformer_relpos.RelPosAttention
  (vit_relpos, vit_srelpos; its qk_norm), kind "relpos_attention", and
  maxxvit's AttentionCl and Attention2d (MaxViT, CoAtNet, MaxxViT), kinds
  "maxxvit_attention" and "maxxvit_attention_2d" (relpos.py) (these six
  with posenc_attention's TABLE_2D bias);
- timm's mvitv2.MultiScaleAttention (MViTv2 without a class token: its
  pooled q, k and v, the decomposed relative positions of the pooled maps,
  residual pooling): kind "mvitv2_attention" (posenc_attention, 2D
  relative bias with a key map).
The model's weights and every other layer stay as they are. A module posenc
cannot reproduce exactly makes patch raise PatchError naming it and why, and
nothing is patched (a module with a forward of its own, an instance
attribute such as a wrapper, among them: posenc would skip it). A patched
module falls back to its original forward in
training mode (the module's, or its attn_drop's with p > 0, as in Monte
Carlo dropout), when autograd would record it (grad enabled and the input or
a parameter requires grad: run inference under torch.no_grad() or
torch.inference_mode()), under forward-mode AD (an input or a parameter
with a tangent) and torch.func's transforms (vmap, grad, jvp), under
torch.autocast, under torch.jit.trace and torch.fx.symbolic_trace (which
record timm's ops then, as does torch.onnx.export with dynamo=False: no
exporter knows posenc's op), and for inputs posenc does not take (an input or mask not on the
CPU, or neither float32 nor bfloat16), and where timm's forward would
refuse the call or run more than posenc does: a BottleneckAttn given
another map size, an empty batch or an input of another dtype than its qkv
weight; a BEiT shared bias torch would not broadcast; a Swin mask of a wider
dtype than its input (fp32 in a bf16 block); a pos_embed_rel module given
tokens other than its window's, an empty batch (maxxvit), a shared_rel_pos
of another dtype than its input, of one axis or that torch would not
broadcast, a rel_pos of another class than patch saw or a bias of another
dtype than the input; an MViTv2 map reaching past its tables, or tables
of another dtype than q; while global forward
hooks are registered, or forward hooks on a submodule timm's forward calls
and posenc's does not, or not as timm does (attn_drop, Swin's softmax,
SAM's q_norm and k_norm, BottleneckAttn's pos_embed and pool, rel_pos and
a RelPosMlp's bias_act, whose classes patch checks: _skipped.py). A query
whose mask row is -inf for every key gets attention output zeros, where
timm's explicit softmax gives NaN. A module is checked when it is patched:
a Swin, BEiT or rel_pos index or table size or SAM's rope changed
afterwards is not seen until it is unpatched and patched again. A patched model can be deep-copied,
pickled and saved as it is (a shallow copy.copy's forward stays the
original module's). With torch 2.4 and later torch.compile keeps posenc's
custom ops in its graph and traces the fallback; torch.export keeps them
under torch.no_grad(); unpatch before ONNX's dynamo exporter (torch 2.9's
default) or torch.jit.script. dtype=torch.bfloat16 runs the attention in bf16
(outputs keep the input's dtype); None runs it in the input's dtype.
posenc's threads follow torch.get_num_threads() (posenc.set_default_context
overrides it).

posenc.torch.attention is posenc.attention for code torch.compile and
torch.export trace: the custom op torch.ops.posenc.attention (functional.py).

posenc.torch.transformers_attention is an attention function for Hugging Face
transformers' AttentionInterface (transformers_attention.py): a model loaded
with the attn_implementation it is registered under runs its attention
layers through posenc_attention.
"""
import collections
import functools

import torch

from .._tensor import has_tangent, storage_address
from . import _ops, beit, botnet, mvitv2, relpos, sam, swin, swinv2
from .functional import attention
from .transformers_attention import transformers_attention
from ._original import (has_own_forward, is_patched, original_forward, patched_dtype,
                        restore, set_patched_forward)
from ._skipped import attn_drop_drops, hooks_need_original

PatchedModule = collections.namedtuple("PatchedModule", "name kind")

# (module of the class, class name) -> kind; kind -> its implementation here
KNOWN = {
    ("timm.models.vision_transformer_sam", "Attention"): "sam_attention",
    ("segment_anything.modeling.image_encoder", "Attention"): "sam_attention",
    ("timm.layers.bottleneck_attn", "BottleneckAttn"): "bottleneck_attention",
    ("timm.models.swin_transformer", "WindowAttention"): "swin_attention",
    ("timm.models.swin_transformer_v2", "WindowAttention"): "swinv2_attention",
    ("timm.models.beit", "Attention"): "beit_attention",
    ("timm.models.vision_transformer_relpos", "RelPosAttention"): "relpos_attention",
    ("timm.models.maxxvit", "AttentionCl"): "maxxvit_attention",
    ("timm.models.maxxvit", "Attention2d"): "maxxvit_attention_2d",
    ("timm.models.mvitv2", "MultiScaleAttention"): "mvitv2_attention",
}
_IMPLEMENTATIONS = {"sam_attention": sam, "bottleneck_attention": botnet,
                    "swin_attention": swin, "swinv2_attention": swinv2, "beit_attention": beit,
                    "relpos_attention": relpos.RELPOS_ATTENTION,
                    "maxxvit_attention": relpos.CHANNELS_LAST_ATTENTION,
                    "maxxvit_attention_2d": relpos.NCHW_ATTENTION, "mvitv2_attention": mvitv2}
_INPUT_DTYPES = (torch.float32, torch.bfloat16)  # what posenc takes
_DTYPES = (None,) + _INPUT_DTYPES  # patch's dtype argument


class PatchError(ValueError):
    """Modules posenc cannot reproduce exactly (patch), or whose wrapper
    unpatch would drop: .refused is [(name, reason)]."""

    def __init__(self, refused, lead="posenc cannot reproduce"):
        self.refused = refused
        super().__init__(f"{lead}: " +
                         "; ".join(f"{name}: {reason}" for name, reason in refused))


def _modules_of(model):
    """model.named_modules(), or a TypeError naming model."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    return model.named_modules()


def known_modules(model):
    """[(name, module, kind)] of the modules of model that patch knows."""
    found = []
    for name, module in _modules_of(model):
        kind = KNOWN.get((type(module).__module__, type(module).__name__))
        if kind is not None:
            found.append((name, module, kind))
    return found


def _needs_torch(module, inputs):
    """Whether the call's tensors (its inputs, the module's parameters) ask
    for what posenc does not do: a gradient (grad mode on and a tensor
    requiring grad), a forward-mode tangent, or a torch.func transform's
    tensors without storage."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if torch.is_grad_enabled() and (any(t.requires_grad for t in tensors) or
                                    any(p.requires_grad for p in module.parameters())):
        return True
    if _ops.compiling():
        return False
    if any(has_tangent(t) or storage_address(t) is None for t in tensors):
        return True
    if any(storage_address(p) is None for p in module.parameters()):
        return True
    if torch.autograd.forward_ad._current_level < 0:  # no dual tensor can exist
        return False
    # The parameters as forward reads them: functional_call's stand-ins
    # (torch 1.13's through the class's attribute lookup) included.
    return any(has_tangent(getattr(owner, name)) for owner in module.modules()
               for name, _ in owner.named_parameters(recurse=False))


def _fx_tracing():
    """Whether torch.fx.symbolic_trace is tracing the call (its inputs are
    proxies, which posenc's checks cannot read). torch 2.15's is_fx_tracing
    is also true under torch.export's default (non-strict) tracing, which
    keeps the custom ops; its is_fx_symbolic_tracing is not."""
    trace = torch.fx._symbolic_trace
    return getattr(trace, "is_fx_symbolic_tracing", trace.is_fx_tracing)()


def _autocast():
    """Whether torch.autocast is on for the CPU (its layers would then run
    in its dtype, which posenc does not follow)."""
    try:
        return torch.is_autocast_enabled("cpu")
    except TypeError:  # before torch 2.4
        return torch.is_autocast_cpu_enabled()


def _forward(module, kind, dtype, x, *args, **kwargs):
    """The patched forward; the extra arguments are those of the module's own
    (Swin's mask, BEiT's shared_rel_pos_bias: timm adds them to the scores,
    as posenc adds a float32 or bfloat16 mask, but a bool one as 0 and 1).
    Plain arguments only (the kind, not its implementation's Python
    module), so that a patched model can be copied, pickled and saved."""
    inputs = (x,) + args + tuple(kwargs.values())
    implementation = _IMPLEMENTATIONS[kind]
    if module.training or _autocast() or torch.jit.is_tracing() or _fx_tracing() or \
            any(isinstance(t, torch.Tensor) and (not t.is_cpu or t.dtype not in _INPUT_DTYPES)
                for t in inputs) or _needs_torch(module, inputs) or attn_drop_drops(module) or \
            hooks_need_original(module, implementation.SKIPPED):
        return original_forward(module)(x, *args, **kwargs)
    return implementation.forward(module, dtype, x, *args, **kwargs)



def patch(model, dtype=None):
    """Replaces the forward of every known attention module in model (model
    itself included); returns [PatchedModule(name, kind)] of those it
    patched (one patched before is patched again for another dtype). Raises
    PatchError, patching nothing, if any of them cannot be reproduced
    exactly."""
    if dtype not in _DTYPES:
        raise ValueError(f"dtype: {dtype!r} is not None, torch.float32 or torch.bfloat16")
    found, refused = [], []
    for name, module, kind in known_modules(model):
        if is_patched(module) and patched_dtype(module) == dtype:
            continue
        reason = "it has a forward of its own (a wrapper), which posenc would skip" \
            if has_own_forward(module) else _IMPLEMENTATIONS[kind].cannot_reproduce(module)
        if reason:
            refused.append((name or type(module).__name__, f"{kind}: {reason}"))
        found.append((name, module, kind))
    if refused:
        raise PatchError(refused)
    for name, module, kind in found:
        set_patched_forward(module, functools.partial(_forward, module, kind, dtype), dtype)
    return [PatchedModule(name, kind) for name, _, kind in found]


def unpatch(model):
    """Gives every patched module of model its original forward back;
    returns how many. Raises PatchError, unpatching nothing, if a patched
    module's forward was replaced since (a wrapper set after patch, such as
    accelerate's hooks): removing it would drop the wrapper, keeping it
    would keep posenc. Remove the wrapper first."""
    patched = [(name, module) for name, module in _modules_of(model) if is_patched(module)]
    wrapped = [(name or type(module).__name__, "its forward was replaced after patch (a "
                "wrapper): remove it first") for name, module in patched
               if has_own_forward(module)]
    if wrapped:
        raise PatchError(wrapped, "unpatch would drop a wrapper")
    for _, module in patched:
        restore(module)
    return len(patched)
