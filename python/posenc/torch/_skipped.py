"""The submodules a kind's original forward calls and its patched forward
does not, or not as timm does: timm's explicit path gives its softmax and
attn_drop the attention probabilities, which posenc's fused attention
never makes, SAM's q_norm and k_norm are skipped where nn.Identity, and
BottleneckAttn's pos_embed and pool run inside posenc. In eval mode they
compute nothing posenc does not (each kind's cannot_reproduce checks their
classes; a call whose attn_drop is left in training mode falls back:
attn_drop_drops), but forward hooks on them would not run, or would see
other tensors: a call falls back to the original forward while one has
hooks, or while global forward hooks are registered (which would run on
them), so that every hook sees what it would without posenc (timm's
AttentionExtract reads the probabilities so)."""
import torch


def plain(submodule, classes):
    """Whether submodule is one of `classes` itself (not a subclass) without
    a forward of its own."""
    return type(submodule) in classes and "forward" not in submodule.__dict__


def attn_drop_reason(module):
    """Why module's attn_drop (where it has one) could compute something in
    eval mode, or None: an nn.Dropout or nn.Identity computes nothing."""
    drop = getattr(module, "attn_drop", None)
    if drop is None or plain(drop, (torch.nn.Dropout, torch.nn.Identity)):
        return None
    return f"attn_drop ({type(drop).__name__}) is not an nn.Dropout or nn.Identity"


def attn_drop_drops(module):
    """Whether module's attn_drop (where it has one) drops now: in training
    mode with p > 0, as in Monte Carlo dropout, where the model is in eval
    mode and its dropouts are not."""
    drop = getattr(module, "attn_drop", None)
    return isinstance(drop, torch.nn.Dropout) and drop.training and drop.p > 0


def global_hooks():
    """Whether forward hooks of every module are registered
    (torch.nn.modules.module.register_module_forward_hook and _pre_hook)."""
    module = torch.nn.modules.module
    return bool(getattr(module, "_global_forward_hooks", None) or
                getattr(module, "_global_forward_pre_hooks", None))


def hooks_need_original(module, skipped):
    """Whether a call must run the original forward for hooks: global ones,
    or hooks on one of module's submodules named in `skipped` (a dotted
    path for a submodule's own: "rel_pos.bias_act")."""
    if global_hooks():
        return True
    for name in skipped:
        submodule = module
        for part in name.split("."):
            submodule = getattr(submodule, part, None)
        if submodule is not None and (submodule._forward_hooks or submodule._forward_pre_hooks):
            return True
    return False
