"""The forward a patched module had before patch: kept as the module's own
forward where it had one (an instance attribute), else its class's. Only
that instance attribute is stored, never a bound method or the
implementation's Python module, so that patched models copy and pickle."""

OWN_FORWARD = "_posenc_own_forward"


def is_patched(module):
    return OWN_FORWARD in module.__dict__


def original_forward(module):
    own = module.__dict__.get(OWN_FORWARD)
    return own if own is not None else type(module).forward.__get__(module)
