"""A patched module's original forward: its class's. patch refuses modules
with a forward of their own (an instance attribute: a wrapper, accelerate's
hooks), which posenc would skip. Patching leaves a marker and the forward,
plain data, so that patched models copy and pickle."""

_PATCHED = "_posenc_patched"


def is_patched(module):
    return _PATCHED in module.__dict__


def has_own_forward(module):
    """Whether module's forward is its instance's own, not its class's or patch's."""
    return "forward" in module.__dict__ and not is_patched(module)


def mark_patched(module, dtype):
    """Marks module patched to run in dtype (None: the input's)."""
    setattr(module, _PATCHED, dtype)


def patched_dtype(module):
    return module.__dict__[_PATCHED]


def original_forward(module):
    return type(module).forward.__get__(module)


def restore(module):
    """Gives a patched module its class's forward back."""
    del module.__dict__[_PATCHED]
    del module.forward
