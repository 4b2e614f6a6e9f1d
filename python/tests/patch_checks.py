"""What the tests of posenc.torch.patch share: a model run unpatched and
patched, each replaced module compared on the inputs it had unpatched."""
import torch

import posenc.torch as posenc_torch


def first_calls(model, x):
    """model(x), and each submodule's first call in it: name -> (args,
    kwargs, output), recorded through a forward of the instance's own,
    deleted before returning."""
    calls = {}

    def recording(name, module):
        def forward(*args, **kwargs):
            output = type(module).forward(module, *args, **kwargs)
            calls.setdefault(name, (args, kwargs, output))
            return output
        return forward

    modules = dict(model.named_modules())
    for name, module in modules.items():
        module.forward = recording(name, module)
    try:
        return model(x), calls
    finally:
        for module in modules.values():
            del module.forward


def assert_close_to(actual, expected, tolerance, what):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    error = (actual.float() - expected.float()).abs().max().item()
    assert error <= tolerance * expected.abs().max().item(), (what, error)


def compare(model, x, dtype=None, tolerance=1e-5, expect=None, output_tolerance=None):
    """Runs model unpatched and patched on x, and each module patch replaced
    on the inputs it had unpatched (in a model, bf16 rounding in one block
    moves the next one's inputs, which hid a bias table read one row off in
    BEiT's and Swin's models); returns what patch replaced.
    output_tolerance: the model output's, where it differs from the
    modules'."""
    model = model.eval()
    with torch.no_grad():
        expected, calls = first_calls(model, x)
        replaced = posenc_torch.patch(model, dtype=dtype)
        actual = model(x)
        assert_close_to(actual, expected, output_tolerance or tolerance, "the output")
        modules = dict(model.named_modules())
        for name, _ in replaced:
            args, kwargs, output = calls[name]
            actual = modules[name](*args, **kwargs)
            if isinstance(output, tuple):  # MViTv2's (output, its pooled map)
                assert actual[1:] == output[1:], name
                actual, output = actual[0], output[0]
            assert_close_to(actual, output, tolerance, name)
    if expect is not None:
        assert [r.kind for r in replaced] == expect
    return replaced


DTYPES = [(None, 1e-5), (torch.bfloat16, 2e-2)]


class MapCall(torch.nn.Module):
    """MViTv2's MultiScaleAttention called as its MultiScaleBlock calls it,
    with the map's size, returning its output without the pooled map's."""

    def __init__(self, attention, feat_size):
        super().__init__()
        self.attn, self.feat_size = attention, feat_size

    def forward(self, x):
        return self.attn(x, self.feat_size)[0]
