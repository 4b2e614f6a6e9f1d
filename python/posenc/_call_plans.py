"""The descs of attention calls made before, by call signature.

Most of a call's fixed cost in Python is seeing its tensors and building
its desc, and it grows after a call that pushed the interpreter out of the
caches (README, "Against PyTorch"). Calls whose torch tensors have the
same shapes, strides and dtypes, with the same options, get the same desc:
only the tensors' addresses differ, and what each call must still check of
a tensor's state (a lazy negation, the device, autograd, forward-mode
tangents, an output's version). From a signature's third call on, calls
reuse the desc kept here and pass the addresses; a tensor that needs more
than that sends the call the full way, which also says what is wrong with
it.

Kept only where every tensor reaches posenc as the caller's own (no copy,
no bool mask made additive) and no position bias is given (the full way
checks a bias's tables against values: query offsets). At most _CAPACITY
signatures, the oldest dropped first.
"""
import sys

from . import _abi, _tensor

_CAPACITY = 64

# The tensor arguments a kept desc serves, as posenc_attention_tensors
# names them; out may be None (a result is made).
TENSOR_FIELDS = ("q", "k", "v", "out", "mask", "kv_lengths", "q_lengths", "query_offsets",
                 "sinks")
_OUT = TENSOR_FIELDS.index("out")


def signature(tensors, layout, scale, causal, query_offset, out_dtype, sliding_window,
              softcap):
    """The key of a call whose `tensors` (in TENSOR_FIELDS order, None where
    not given) are plain torch tensors with strides and whose options are
    plain values (a tensor as the scale could change between calls), or
    None for a call that goes the full way."""
    torch = sys.modules.get("torch")
    if torch is None or type(layout) is not str or \
            type(scale) not in (float, int, type(None)) or type(causal) is not bool or \
            type(query_offset) is not int or type(sliding_window) is not int or \
            type(softcap) not in (float, int, type(None)) or \
            not (out_dtype is None or isinstance(out_dtype, (str, torch.dtype))):
        return None
    key = [layout, scale, causal, query_offset, out_dtype, sliding_window, softcap]
    for x in tensors:
        if x is None:
            key.append(None)
            continue
        # numpy, subclasses but a module's parameters (gpt-oss's sinks): the full way
        if type(x) is not torch.Tensor and type(x) is not torch.nn.Parameter:
            return None
        try:
            key += x.shape, x.stride(), x.dtype
        except RuntimeError:  # sparse or mkldnn tensors have no strides
            return None
    return tuple(key)


class Plan:
    """A kept desc and the result it writes (its shape and torch dtype)."""

    __slots__ = ("desc", "out_shape", "out_dtype")

    def __init__(self, desc, out_shape, out_dtype):
        self.desc, self.out_shape, self.out_dtype = desc, out_shape, out_dtype

    def tensors(self, given):
        """(posenc_attention_tensors, the result) for the tensors `given`
        (TENSOR_FIELDS order), or None where one of them needs the full
        way's checks: a lazy negation, not on the CPU, requiring grad in
        grad mode, a forward-mode level in force, no address of its own, or
        an output that is not written as by an in-place op here."""
        torch = _tensor.torch_module()
        if _tensor.forward_ad_level():
            return None
        grad = torch.is_grad_enabled()
        addresses = {}
        for name, x in zip(TENSOR_FIELDS, given):
            if x is None:
                continue
            if x.is_neg() or not x.is_cpu or (grad and x.requires_grad):
                return None
            addresses[name] = _address(x)
        out = given[_OUT]
        if out is None:
            try:
                out = torch.empty(self.out_shape, dtype=self.out_dtype, device="cpu")
            except (RuntimeError, TypeError):  # the full way names the failure
                return None
            addresses["out"] = _address(out) if type(out) is torch.Tensor else None
        if None in addresses.values():
            return None
        if given[_OUT] is not None:
            try:
                _tensor.write_in_place(out)
            except RuntimeError:  # the full way names the refusal
                return None
        return _abi.AttentionTensors(**addresses), out


def _address(x):
    """Where x's elements are, or None for a tensor without storage of its
    own, and for an empty one (which the full way passes elsewhere)."""
    return _tensor.storage_address(x) or None


class Plans:
    """Plans by signature, kept from a signature's second call on (a
    signature seen once costs a dict entry, where shapes change on every
    call: a KV cache that grows, in a model of one attention layer), at
    most _CAPACITY of each. No lock (dict reads and writes are atomic; a
    lock held by another thread at a fork would stay held in the child)."""

    def __init__(self):
        self._plans, self._seen = {}, {}

    def get(self, key):
        return self._plans.get(key)

    def keep(self, key, desc, tensors, given, result):
        """Keeps the desc of a call made the full way, the second of its
        signature, where every tensor reached posenc as given (`tensors`
        the posenc_attention_tensors it passed, `result` its output)."""
        if self._seen.pop(key, None) is None:
            _add(self._seen, key, True)
            return
        addresses = {name: x.data_ptr() for name, x in zip(TENSOR_FIELDS, given)
                     if x is not None}
        addresses.setdefault("out", result.data_ptr())
        if bytes(_abi.AttentionTensors(**addresses)) == bytes(tensors):
            _add(self._plans, key, Plan(desc, tuple(result.shape), result.dtype))

    def __len__(self):
        return len(self._plans)


def _add(entries, key, value):
    """entries[key] = value, the oldest entries dropped past _CAPACITY."""
    entries[key] = value
    while len(entries) > _CAPACITY:
        try:
            entries.pop(next(iter(entries)), None)
        except RuntimeError:  # another thread changed them meanwhile
            pass
