"""Finding and loading libposenc, the C functions' prototypes, errors.

The library is the first of this package's minor version (_abi mirrors
its structs) among:
  1. the file named by the environment variable POSENC_LIBRARY;
  2. the package's own copy (posenc/libposenc.so*, put there by
     `POSENC_LIBRARY=... pip install ./python` or a build that copies it);
  3. the install prefix: <sys.prefix>/lib/libposenc.so*, then what the
     dynamic linker finds (ldconfig, LD_LIBRARY_PATH);
  4. a build tree beside the sources: <repository>/build/src/libposenc.so
     (running from a checkout).
"""
import ctypes
import ctypes.util
import glob
import os
import sys

from . import _abi

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAMES = ("libposenc.so", "libposenc.dylib", "posenc.dll")


def _candidates():
    env = os.environ.get("POSENC_LIBRARY")
    if env:
        yield env
        return  # an explicit choice is never silently replaced
    for directory in (_HERE, os.path.join(sys.prefix, "lib")):
        for name in _NAMES:
            yield from sorted(glob.glob(os.path.join(directory, name + "*")))
    found = ctypes.util.find_library("posenc")
    if found:
        yield found
    yield os.path.join(_HERE, "..", "..", "build", "src", "libposenc.so")


def abi_mismatch(library):
    """Why library's structs are not those _abi mirrors (another minor
    version, as its soname says), or None."""
    version_of = getattr(library, "posenc_version", None)
    if version_of is None:
        return "no posenc_version: not libposenc"
    version_of.restype = ctypes.c_char_p
    version = version_of().decode()
    if tuple(version.split(".")[:2]) != _abi.ABI_VERSION:
        return f"version {version}, where this package takes {'.'.join(_abi.ABI_VERSION)}.x"
    return None


def _load():
    tried = []
    for path in _candidates():
        try:
            library = ctypes.CDLL(path)
        except OSError as error:
            tried.append(f"{path}: {error}")
            continue
        mismatch = abi_mismatch(library)
        if mismatch is None:
            return library, path
        tried.append(f"{path}: {mismatch}")
    raise ImportError("posenc: no libposenc of this package's version found; build it (cmake) "
                      "and set POSENC_LIBRARY to its path. Tried:\n  " + "\n  ".join(tried))


lib, library_path = _load()

_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_int = ctypes.c_int
_dbl = ctypes.c_double
_st = _abi.c_enum
_PROTOTYPES = {
    # core.h
    "posenc_status_string": (ctypes.c_char_p, [_st]),
    "posenc_last_error": (ctypes.c_char_p, []),
    "posenc_version": (ctypes.c_char_p, []),
    "posenc_isa_name": (ctypes.c_char_p, [_st]),
    "posenc_isa_from_name": (_st, [ctypes.c_char_p, ctypes.POINTER(_st)]),
    "posenc_isa_available": (_st, [_st, ctypes.POINTER(_int)]),
    "posenc_set_max_isa": (_st, [_st]),
    "posenc_max_isa": (_st, []),
    "posenc_best_isa": (_st, []),
    "posenc_context_create": (_st, [_st, _int, ctypes.POINTER(_p)]),
    "posenc_context_destroy": (None, [_p]),
    "posenc_context_isa": (_st, [_p]),
    "posenc_context_num_threads": (_int, [_p]),
    "posenc_set_primitive_cache_capacity": (_st, [_i64]),
    "posenc_primitive_cache_capacity": (_i64, []),
    "posenc_primitive_cache_size": (_i64, []),
    "posenc_primitive_cache_evictions": (_i64, []),
    "posenc_release_thread_memory": (None, []),
    "posenc_f32_to_bf16": (ctypes.c_uint16, [ctypes.c_float]),
    "posenc_bf16_to_f32": (ctypes.c_float, [ctypes.c_uint16]),
    # absolute.h
    "posenc_sinusoid_table": (_st, [_p, _i64, _i64, _i64, _dbl, _st, _st, _p]),
    "posenc_sinusoid_table_2d": (_st, [_p, _i64, _i64, _i64, _dbl, _st, _st, _p]),
    "posenc_add_sinusoid": (_st, [_p, _i64, _i64, _i64, _i64, _dbl, _st, _p, _p]),
    "posenc_add_learned": (_st, [_p, _i64, _i64, _i64, _i64, _p, _i64, _p, _p]),
    "posenc_concat_sinusoid": (_st, [_p, _i64, _i64, _i64, _i64, _i64, _dbl, _st, _p, _p]),
    "posenc_absolute_resize_desc_init": (None, [ctypes.POINTER(_abi.AbsoluteResizeDesc), _i64,
                                                _i64, _i64, _i64, _i64]),
    "posenc_resize_absolute_table_2d": (_st, [_p, ctypes.POINTER(_abi.AbsoluteResizeDesc), _p,
                                              _p]),
    # relative.h
    "posenc_absolute_logits": (_st, [_p, _i64, _i64, _i64, _i64, _i64, _p, _p, _i64, _p]),
    "posenc_rel_to_abs": (_st, [_p, _i64, _i64, _i64, _p, _p]),
    "posenc_relative_logits_1d": (_st, [_p, _i64, _i64, _i64, _i64, _i64, _p, _p, _i64,
                                        ctypes.POINTER(_abi.RelativeOptions), _p]),
    "posenc_relative_logits_2d_decomposed": (_st, [_p, _i64, _i64, _i64, _i64, _i64, _p,
                                                   _p, _p, _i64, _p, _p]),
    "posenc_relative_logits_2d": (_st, [_p, _i64, _i64, _i64, _i64, _i64, _p, _p, _p,
                                        _i64, _p]),
    "posenc_relative_2d_desc_init": (None, [ctypes.POINTER(_abi.Relative2dDesc), _i64, _i64,
                                            _i64, _i64, _i64]),
    "posenc_relative_logits_2d_maps": (_st, [_p, ctypes.POINTER(_abi.Relative2dDesc), _p, _p,
                                             _p, _p, _p]),
    # bias.h
    "posenc_position_bias_desc_init": (None, [ctypes.POINTER(_abi.PositionBiasDesc), _st,
                                              _i64, _i64, _i64]),
    "posenc_position_bias": (_st, [_p, ctypes.POINTER(_abi.PositionBiasDesc), _p, _p]),
    "posenc_alibi_slopes": (_st, [_i64, _p]),
    "posenc_resize_relative_table": (_st, [_i64, _i64, _p, _i64, _p]),
    "posenc_resize_relative_bias_table_2d": (_st, [_i64, _i64, _i64, _i64, _i64, _int, _p,
                                                   _p]),
    # attention.h
    "posenc_attention_desc_init": (None, [ctypes.POINTER(_abi.AttentionDesc), _i64, _i64,
                                          _i64, _i64, _i64]),
    "posenc_attention_workspace_size": (_st, [_p, ctypes.POINTER(_abi.AttentionDesc),
                                              ctypes.POINTER(ctypes.c_size_t)]),
    "posenc_attention": (_st, [_p, ctypes.POINTER(_abi.AttentionDesc),
                               ctypes.POINTER(_abi.AttentionTensors), _p, ctypes.c_size_t]),
    "posenc_bottleneck_desc_init": (None, [ctypes.POINTER(_abi.BottleneckDesc), _i64, _i64,
                                           _i64, _i64, _i64, _i64]),
    "posenc_bottleneck_workspace_size": (_st, [_p, ctypes.POINTER(_abi.BottleneckDesc),
                                               ctypes.POINTER(ctypes.c_size_t)]),
    "posenc_bottleneck_mhsa": (_st, [_p, ctypes.POINTER(_abi.BottleneckDesc), _p, _p, _p,
                                     _p, _p, _p, ctypes.c_size_t]),
    "posenc_bottleneck": (_st, [_p, ctypes.POINTER(_abi.BottleneckDesc),
                                ctypes.POINTER(_abi.BottleneckTensors), _p, ctypes.c_size_t]),
    # rope.h
    "posenc_rope_config_init": (_st, [ctypes.POINTER(_abi.RopeConfig), _i64]),
    "posenc_rope_inverse_frequencies": (_st, [ctypes.POINTER(_abi.RopeConfig), _p,
                                              ctypes.POINTER(_dbl)]),
    "posenc_rope_cache_create": (_st, [_p, ctypes.POINTER(_abi.RopeConfig), _i64,
                                       ctypes.POINTER(_p)]),
    "posenc_rope_cache_create_from_tables": (_st, [_p, _i64, _st, _i64, _p, _p,
                                                   ctypes.POINTER(_p)]),
    "posenc_rope_cache_tables": (_st, [_p, _p, _p]),
    "posenc_rope_cache_destroy": (None, [_p]),
    "posenc_rope_cache_max_positions": (_i64, [_p]),
    "posenc_rope_cache_rotary_dim": (_i64, [_p]),
    "posenc_rope_cache_config": (_st, [_p, ctypes.POINTER(_abi.RopeConfig)]),
    "posenc_rope": (_st, [_p, ctypes.POINTER(_abi.RopeConfig), _p,
                          ctypes.POINTER(_abi.RopePositions), _st, _st, _i64, _i64, _i64,
                          _i64, _p, _p]),
    "posenc_rope_qk": (_st, [_p, ctypes.POINTER(_abi.RopeConfig), _p,
                             ctypes.POINTER(_abi.RopePositions), _st, _st, _i64, _i64, _i64,
                             _i64, _i64, _p, _p, _p, _p]),
}
for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _function = getattr(lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes


class Error(RuntimeError):
    """A posenc call failed: .status is its posenc_status (an int),
    .status_name its name, the message posenc_last_error()."""

    def __init__(self, status, message):
        self.status, self.message = status, message
        self.status_name = _abi.STATUS_NAMES.get(status, f"status {status}")
        super().__init__(f"posenc ({self.status_name}): {message}")

    def __reduce__(self):  # pickling, copying, multiprocessing's results
        return type(self), (self.status, self.message)


def check(status):
    """Raises Error with posenc_last_error() for a non-zero status."""
    if status != 0:
        raise Error(status, lib.posenc_last_error().decode())


class Handle:
    """Owns one C object, passed to the C function named by _destroy when
    collected. The objects are immutable: a copy is the object itself (a
    copy of the pointer would destroy it twice); pickling makes a new one
    from what __reduce__ gives. ctypes passes the object itself as its
    handle (_as_parameter_), so a call holds the object while it runs."""

    _destroy = None

    def __init__(self, handle):
        self._handle = handle

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def handle(self):
        return self._handle

    @property
    def _as_parameter_(self):  # what ctypes passes for the object
        return self._handle

    def __del__(self):
        if getattr(self, "_handle", None) and lib is not None:
            getattr(lib, self._destroy)(self._handle)
            self._handle = None
