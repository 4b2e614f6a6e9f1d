"""A patched module's original forward: its class's. patch refuses modules
with a forward of their own (an instance attribute: a wrapper, accelerate's
hooks), which posenc would skip. Patching leaves the forward and a marker
(its dtype and that forward), plain data, so that patched models copy and
pickle."""

import functools

_PATCHED = "_posenc_patched"


def is_patched(module):
    return _PATCHED in module.__dict__


def has_own_forward(module):
    """Whether module's forward is its instance's own, not its class's or the
    one patch set (a wrapper set before patching or since)."""
    forward = module.__dict__.get("forward")
    return forward is not None and not (is_patched(module) and
                                        forward is module.__dict__[_PATCHED][1])


def set_patched_forward(module, forward, dtype):
    """Gives module patch's forward, which runs in dtype (None: the input's)."""
    module.forward = forward
    setattr(module, _PATCHED, (dtype, forward))


def patched_dtype(module):
    return module.__dict__[_PATCHED][0]


def original_forward(module):
    """The class's forward bound to module, as a partial: torch.compile traces
    it (not a function's __get__, which broke its graph at every fallback)."""
    return functools.partial(type(module).forward, module)


def original_scale(module, head_dim):
    """The scale of q k^T in the module's original forward: timm's fused path
    (fused_attn, scaled_dot_product_attention's default) is head_dim^-1/2
    whatever module.scale says; its explicit path reads module.scale."""
    return head_dim ** -0.5 if getattr(module, "fused_attn", False) else module.scale


def restore(module):
    """Gives a patched module its class's forward back (the instance's, if
    it still has one, removed)."""
    del module.__dict__[_PATCHED]
    module.__dict__.pop("forward", None)
