"""posenc for Python: positional encodings and relative-position attention on
CPU torch tensors (float32, bfloat16) and numpy arrays (float32), through
libposenc's C ABI (ctypes; nothing is compiled against torch).

Every function checks shapes and dtypes, writes into a new tensor or the
caller's `out`, and raises posenc.Error (with .status and posenc's message)
when the library refuses a call. A result without elements (an empty batch,
heads, tokens or queries axis) is returned as it is, as torch does; no
keys give attention rows of zeros. A feature axis of 0 (dim, head_dim,
channels) and out-of-range parameters are refused even then. posenc
computes no gradients: a tensor requiring grad is refused while grad mode
is on (use torch.no_grad() or torch.inference_mode()), as are a dual tensor
of forward-mode AD and a torch.func transform's tensor. `context=None` means
a context with torch's
intra-op thread count (torch.get_num_threads()), see posenc.context.
posenc.torch.patch(model) runs the attention of timm and Segment Anything
models through posenc.
"""
import ctypes as _ctypes

from . import _abi
from ._lib import Error, check as _check, library_path, lib as _lib
from ._absolute import (add_learned, add_sinusoid, concat_sinusoid, resize_absolute_table_2d,
                       sinusoid_table, sinusoid_table_2d)
from ._attention import (attention, attention_workspace_size, bottleneck_mhsa,
                        strided_supported)
from ._bias import (alibi_slopes, position_bias, resize_relative_bias_table_2d,
                   resize_relative_table)
from .context import Context, default_context, set_default_context
from ._relative import (absolute_logits, rel_to_abs, relative_logits_1d, relative_logits_2d,
                       relative_logits_2d_decomposed, relative_logits_2d_maps)
from ._rope import RopeCache, inverse_frequencies, rope, rope_config, rope_qk

__version__ = "0.11.0"

# What `from posenc import *` takes: the functions and classes, not the
# submodules (posenc.torch would stand in for torch).
__all__ = [
    "Context", "Error", "RopeCache", "absolute_logits", "add_learned", "add_sinusoid",
    "alibi_slopes", "attention", "attention_workspace_size", "best_isa", "bottleneck_mhsa",
    "concat_sinusoid", "default_context", "inverse_frequencies", "isa_available",
    "library_path", "position_bias", "primitive_cache_capacity", "primitive_cache_evictions",
    "primitive_cache_size", "rel_to_abs",
    "relative_logits_1d", "relative_logits_2d", "relative_logits_2d_decomposed",
    "relative_logits_2d_maps", "release_thread_memory", "resize_absolute_table_2d",
    "resize_relative_bias_table_2d",
    "resize_relative_table", "rope", "rope_config", "rope_qk", "set_default_context",
    "set_max_isa", "set_primitive_cache_capacity", "sinusoid_table", "sinusoid_table_2d",
    "strided_supported", "version",
]


def version():
    """The loaded libposenc's version ("0.11.0")."""
    return _lib.posenc_version().decode()


def best_isa():
    """The ISA path calls run on by default ("avx2", "avx512", ...)."""
    return _lib.posenc_isa_name(_lib.posenc_best_isa()).decode()


def isa_available(isa):
    """Whether this build and CPU have the path ("avx2", "avx512", ...)."""
    available = _ctypes.c_int()
    _check(_lib.posenc_isa_available(_abi.enum_value(_abi.ISA, isa, "isa"),
                                     _ctypes.byref(available)))
    return bool(available.value)


def set_max_isa(isa):
    """Caps posenc's kernels and oneDNN (before oneDNN's first primitive).
    The cap is the process's: a torch linked to the same libdnnl (Debian's
    is) is capped as well, and has no bf16 matmul below "avx512"."""
    _check(_lib.posenc_set_max_isa(_abi.enum_value(_abi.ISA, isa, "isa")))


def set_primitive_cache_capacity(capacity):
    """The most oneDNN primitives kept (least recently used dropped)."""
    _check(_lib.posenc_set_primitive_cache_capacity(_abi.integer(capacity, "capacity")))


def primitive_cache_capacity():
    return _lib.posenc_primitive_cache_capacity()


def primitive_cache_size():
    """The primitives the cache holds now."""
    return _lib.posenc_primitive_cache_size()


def primitive_cache_evictions():
    """The primitives the cache has dropped since the process started: a
    count growing under steady traffic says its shapes outnumber the
    capacity, and each call of a dropped shape makes them again."""
    return _lib.posenc_primitive_cache_evictions()


def release_thread_memory():
    """Frees what the calling thread keeps between calls: the workspaces an
    op took where none was given (the default here), scratch, oneDNN's
    streams and buffers. The thread's next call of each shape makes them
    again; the oneDNN primitives, shared by all threads, stay."""
    _lib.posenc_release_thread_memory()
