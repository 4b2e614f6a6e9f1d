"""The forward a patched module had before patch: its own (an instance
attribute) where it had one, else its class's. Only that instance attribute
is kept, never a bound method or an implementation's Python module, so that
patched models copy and pickle."""

_OWN_FORWARD = "_posenc_own_forward"


def is_patched(module):
    return _OWN_FORWARD in module.__dict__


def remember(module):
    """Keeps module's own forward (or None) before patch replaces it."""
    setattr(module, _OWN_FORWARD, module.__dict__.get("forward"))


def original_forward(module):
    own = module.__dict__.get(_OWN_FORWARD)
    return own if own is not None else type(module).forward.__get__(module)


def restore(module):
    """Gives a patched module the forward it had before patch."""
    own = module.__dict__.pop(_OWN_FORWARD)
    del module.forward
    if own is not None:
        module.forward = own
