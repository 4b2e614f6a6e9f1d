"""Rotary embeddings (posenc/rope.h): configs, cos/sin caches, rotating q
and k. Tensors are [batch, tokens, heads, head_dim] ("bthd") or [batch,
heads, tokens, head_dim] ("bhtd"), float32 or bfloat16 (torch)."""
import ctypes

import numpy as np

from . import _abi, _tensor
from ._lib import Handle, check, lib
from .context import handle

_ENUM_FIELDS = {"pairing": _abi.ROPE_PAIRING, "scaling": _abi.ROPE_SCALING}
_INT64_FIELDS = {name for name, kind in _abi.RopeConfig._fields_ if kind is ctypes.c_int64}
_DOUBLE_FIELDS = {name for name, kind in _abi.RopeConfig._fields_ if kind is ctypes.c_double}
_FLAG_FIELDS = {name for name, kind in _abi.RopeConfig._fields_
                if kind is ctypes.c_int} - _ENUM_FIELDS.keys()  # c_enum is c_int too


def rope_config(rotary_dim, **fields):
    """A posenc_rope_config with posenc's defaults (posenc_rope_config_init)
    and the given fields: pairing ("half_split", "interleaved"), base,
    grid_width, scaling ("none", "linear", "dynamic_ntk", "yarn", "llama3"),
    factor, original_max_positions, sequence_length, extrapolation_factor,
    attention_factor, beta_fast, beta_slow, low_freq_factor, high_freq_factor,
    fractional_correction_range (True: transformers' YaRN truncate=False),
    column_first (2D: True turns the first half of the pairs by the column,
    as SAM 2 does; timm's EVA turns them by the row)."""
    config = _abi.RopeConfig()
    check(lib.posenc_rope_config_init(ctypes.byref(config), _abi.integer(rotary_dim, "rotary_dim")))
    names = {name for name, _ in _abi.RopeConfig._fields_}
    for name, value in fields.items():
        if name not in names:
            raise TypeError(f"rope_config: no field {name!r}")
        if name in _ENUM_FIELDS:
            value = _abi.enum_value(_ENUM_FIELDS[name], value, name)
        elif name in _INT64_FIELDS:
            value = _abi.integer(value, name)
        elif name in _DOUBLE_FIELDS:
            value = _abi.real(value, name)
        elif name in _FLAG_FIELDS:
            value = _abi.flag(value, name)
        setattr(config, name, value)
    return config


def _config(config):
    """config, a posenc_rope_config (rope_config), or a TypeError naming it."""
    if not isinstance(config, _abi.RopeConfig):
        raise TypeError(f"config: expected a posenc.rope_config(...), got {type(config).__name__}")
    return config


def inverse_frequencies(config):
    """(inv_freq [rotary_dim/2] float64, attention factor) after scaling."""
    # A rotary_dim out of range gets a buffer of 1, and posenc's refusal.
    in_range = 2 <= _config(config).rotary_dim <= _abi.ROPE_MAX_ROTARY_DIM
    inv_freq = np.empty(config.rotary_dim // 2 if in_range else 1, dtype=np.float64)
    factor = ctypes.c_double()
    check(lib.posenc_rope_inverse_frequencies(ctypes.byref(config), inv_freq.ctypes.data,
                                              ctypes.byref(factor)))
    return inv_freq, factor.value


class RopeCache(Handle):
    """An immutable cos/sin table of a config for positions [0, max_positions),
    or of a model's own tables (from_tables)."""

    __module__ = "posenc"  # pickled by its public name, not its file's

    _destroy = "posenc_rope_cache_destroy"
    _tables_pairing = None  # a cache of tables: its pairing ("half_split", "interleaved")

    def __init__(self, config, max_positions, context=None):
        cache = ctypes.c_void_p()
        check(lib.posenc_rope_cache_create(handle(context), ctypes.byref(_config(config)),
                                           _abi.integer(max_positions, "max_positions"),
                                           ctypes.byref(cache)))
        super().__init__(cache)

    @classmethod
    def from_tables(cls, cos, sin, pairing="half_split", context=None):
        """A cache of a model's own angles (posenc_rope_cache_create_from_tables):
        cos and sin [max_positions, rotary_dim/2] float32, pair j's cosine and
        sine at position p, used as they are (any scaling and attention factor
        in them): ONNX Runtime's cos_cache and sin_cache. Of Hugging Face's
        cos and sin over positions 0 .. max_positions - 1 ([1, T, rotary_dim],
        cos[0]) they are cos[0, :, :rotary_dim // 2] where the model builds them
        as cat(freqs, freqs) (Llama, Mistral, Qwen; GLM's interleaved pairs
        too), cos[0, :, ::2] where it repeats each frequency (Cohere), as
        float32. The tables are copied. Such a cache has no config."""
        code = _abi.enum_value(_abi.ROPE_PAIRING, pairing, "pairing")
        cv, sv = _tensor.dense(cos, "cos", 2), _tensor.dense(sin, "sin", 2)
        _tensor.expect_shape(sv, cv.shape, "sin")
        max_positions, pairs = cv.shape
        if max_positions == 0 or pairs == 0:
            raise ValueError(f"cos: expected [max_positions, rotary_dim / 2], neither 0, got "
                             f"shape {list(cv.shape)}")
        cache = ctypes.c_void_p()
        check(lib.posenc_rope_cache_create_from_tables(handle(context), 2 * pairs, code,
                                                       max_positions, cv.ptr, sv.ptr,
                                                       ctypes.byref(cache)))
        self = cls.__new__(cls)
        Handle.__init__(self, cache)
        self._tables_pairing = pairing.lower()
        return self

    @property
    def max_positions(self):
        return lib.posenc_rope_cache_max_positions(self._handle)

    @property
    def config(self):
        """The config it was made from; None for a cache of tables."""
        if self._tables_pairing is not None:
            return None
        config = _abi.RopeConfig()
        check(lib.posenc_rope_cache_config(self._handle, ctypes.byref(config)))
        return config

    @property
    def rotary_dim(self):
        return lib.posenc_rope_cache_rotary_dim(self._handle)

    def tables(self):
        """(cos, sin), [max_positions, rotary_dim/2] float32 numpy arrays each,
        as from_tables takes them (a config's with its attention factor in
        them; in 2D per grid cell)."""
        shape = (self.max_positions, self.rotary_dim // 2)
        cos = _tensor.new_array(shape, "tables: cos")
        sin = _tensor.new_array(shape, "tables: sin")
        check(lib.posenc_rope_cache_tables(self._handle, cos.ctypes.data, sin.ctypes.data))
        return cos, sin

    def __reduce__(self):
        if self._tables_pairing is None:
            return RopeCache, (self.config, self.max_positions)
        return RopeCache.from_tables, (*self.tables(), self._tables_pairing)


def _angles(config, cache, offset, positions, batch, tokens):
    """The config and cache pointers and the positions struct of a call
    (positions [batch, tokens]), and what must stay alive."""
    if (config is None) == (cache is None):
        raise ValueError("config, cache: give exactly one")
    if cache is not None and not isinstance(cache, RopeCache):
        raise TypeError(f"cache: expected a posenc.RopeCache, got {type(cache).__name__}")
    config_p = ctypes.byref(_config(config)) if config is not None else None
    cache_p = cache.handle if cache is not None else None
    offset = _abi.integer(offset, "offset")
    if positions is None:
        return config_p, cache_p, _abi.RopePositions(offset, None, 0), None
    ids = _tensor.dense(positions, "positions", 2, _tensor.INDICES)
    _tensor.expect_shape(ids, (batch, tokens), "positions")
    return (config_p, cache_p,
            _abi.RopePositions(offset, ids.ptr, _abi.ROPE_POSITIONS[ids.dtype]), ids)


def _rope_tensor(x, name, layout):
    xv = _tensor.dense(x, name, 4, _tensor.FLOATS)
    batch, first, second, head_dim = xv.shape
    tokens, heads = (first, second) if layout == "bthd" else (second, first)
    return xv, batch, tokens, heads, head_dim


def rope(x, config=None, cache=None, offset=0, positions=None, layout="bthd", out=None,
         context=None):
    """x rotated by the angles of `config` (on the fly) or `cache`; token t at
    position offset + t, or positions[b, t] ([batch, tokens] int32/int64).
    out=x rotates in place. layout is "bthd" unless given, unlike attention's
    "bhtd": transformers rotates q and k as [B, H, T, D], layout="bhtd"."""
    layout_code = _abi.enum_value(_abi.ROPE_LAYOUT, layout, "layout")
    xv, batch, tokens, heads, head_dim = _rope_tensor(x, "x", layout.lower())
    o = _tensor.output(out, x, xv.shape, xv.dtype)
    config_p, cache_p, where, keep = _angles(config, cache, offset, positions, batch, tokens)
    check(lib.posenc_rope(handle(context), config_p, cache_p, ctypes.byref(where), layout_code,
                          xv.dtype, batch, tokens, heads, head_dim, xv.ptr, o.ptr))
    del keep
    return o.obj


def rope_qk(q, k, config=None, cache=None, offset=0, positions=None, layout="bthd",
            q_out=None, k_out=None, context=None):
    """(q, k) rotated with the same angles in one pass; k may have fewer heads.
    q_out=q and k_out=k rotate in place."""
    layout_code = _abi.enum_value(_abi.ROPE_LAYOUT, layout, "layout")
    qv, batch, tokens, q_heads, head_dim = _rope_tensor(q, "q", layout.lower())
    kv, k_batch, k_tokens, k_heads, k_dim = _rope_tensor(k, "k", layout.lower())
    if (k_batch, k_tokens, k_dim) != (batch, tokens, head_dim):
        raise ValueError("k: batch, tokens and head_dim must be q's")
    if kv.dtype != qv.dtype:
        raise TypeError("k: must have q's dtype")
    qo = _tensor.output(q_out, q, qv.shape, qv.dtype, "q_out")
    ko = _tensor.output(k_out, k, kv.shape, kv.dtype, "k_out")
    config_p, cache_p, where, keep = _angles(config, cache, offset, positions, batch, tokens)
    check(lib.posenc_rope_qk(handle(context), config_p, cache_p, ctypes.byref(where),
                             layout_code, qv.dtype, batch, tokens, q_heads, k_heads, head_dim,
                             qv.ptr, qo.ptr, kv.ptr, ko.ptr))
    del keep
    return qo.obj, ko.obj
