"""ctypes mirrors of the C ABI's enums and structs (include/posenc/*.h).

Field for field as the headers declare them: C enums are `int`, sizes
`int64_t`. tests/test_abi.py compiles a C program against the headers and
compares every struct's size and every field's offset with these.
"""
import ctypes
import math
import operator

import numpy as np

c_enum = ctypes.c_int

STATUS_NAMES = {
    0: "ok", 1: "null pointer", 2: "invalid argument", 3: "shape mismatch",
    4: "overflow", 5: "aliasing", 6: "unsupported", 7: "out of memory", 8: "internal",
}
UNSUPPORTED = 6

ISA = {"auto": 0, "baseline": 1, "avx2": 2, "avx512": 3, "neon": 4}
F32, BF16 = 0, 1
SINCOS_LAYOUT = {"interleaved": 0, "split": 1}
INTERPOLATION = {"bicubic": 0, "bilinear": 1}
ATTENTION_LAYOUT = {"bhtd": 0, "bthd": 1, "strided": 2}
ATTENTION_BIAS = {"none": 0, "absolute": 1, "relative_1d": 2, "relative_2d": 3,
                  "table_2d": 4, "table_1d": 5, "t5": 6, "alibi": 7, "disentangled": 8}
RELATIVE_ORDER = {"key_minus_query": 0, "query_minus_key": 1}
POSITION_BIAS_KIND = {"table_2d": 0, "table_1d": 1, "t5": 2, "alibi": 3}
INDEX_TYPE = {"int32": 0, "int64": 1}
ROPE_PAIRING = {"interleaved": 0, "half_split": 1}
ROPE_LAYOUT = {"bthd": 0, "bhtd": 1}
ROPE_SCALING = {"none": 0, "linear": 1, "dynamic_ntk": 2, "yarn": 3, "llama3": 4}
ROPE_POSITIONS = {"int32": 0, "int64": 1}
# The library version whose structs these mirror (major, minor: the soname's).
ABI_VERSION = ("0", "11")
ROPE_MAX_ROTARY_DIM = 65536  # POSENC_ROPE_MAX_ROTARY_DIM
MAX_THREADS = 1024  # POSENC_MAX_THREADS


def enum_value(table, name, argument):
    """The C value of an option given by name, or ValueError naming it."""
    try:
        return table[name.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"{argument}: {name!r} is not one of {sorted(table)}") from None


def integer(value, argument, bits=64):
    """value as a C int64_t (or int of `bits`), or an error naming the
    argument: ctypes would keep the low bits of a larger int without a word.
    A bool is no integer here (sliding_window=True is not a window of 1)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{argument}: expected an integer, got {type(value).__name__}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{argument}: expected an integer, got {type(value).__name__}") from None
    limit = 1 << (bits - 1)
    if not -limit <= value < limit:
        raise OverflowError(f"{argument}: {value} does not fit in int{bits}")
    return value


def count(value, argument):
    """A size as integer() takes it, and >= 0: an empty axis is one."""
    value = integer(value, argument)
    if value < 0:
        raise ValueError(f"{argument}: must be >= 0, got {value}")
    return value


def positive(value, argument):
    """A size as integer() takes it, and >= 1: an axis that cannot be empty."""
    value = integer(value, argument)
    if value < 1:
        raise ValueError(f"{argument}: must be >= 1, got {value}")
    return value


def real(value, argument):
    """value as a C double, or a TypeError naming the argument (ctypes'
    own error names only the position; an OverflowError, naming it, beyond
    a double's range). A bool is no real number here (softcap=True is not a
    cap of 1)."""
    if not isinstance(value, (str, bytes, bool, np.bool_)):
        try:
            return float(value)
        except (TypeError, ValueError, RuntimeError):  # RuntimeError: torch's, e.g. a meta tensor
            pass
        except OverflowError:
            raise OverflowError(f"{argument}: beyond a double's range") from None
    raise TypeError(f"{argument}: expected a real number, got {type(value).__name__}")


def real32(value, argument):
    """real(value) for a C float field: a finite value that rounds to inf in
    float32 would reach posenc as not finite."""
    value = real(value, argument)
    if math.isfinite(value) and math.isinf(ctypes.c_float(value).value):
        raise ValueError(f"{argument}: {value!r} is outside float32's range")
    return value


def flag(value, argument):
    """A yes/no option as 0 or 1: a bool or the integers 0 and 1; anything
    else (a string such as "no", which is truthy) a TypeError naming it."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if number not in (0, 1):
        raise TypeError(f"{argument}: expected True or False, got {value!r}")
    return number


def sizes(value, argument, count=2):
    """A tuple of `count` integers of at least 1 (a map's or window's height
    and width), or an error naming the argument."""
    try:
        items = tuple(value)
    except TypeError:
        items = ()
    if len(items) != count:
        raise TypeError(f"{argument}: expected {count} integers, got {value!r}")
    values = tuple(integer(n, argument) for n in items)
    if min(values) < 1:
        raise ValueError(f"{argument}: sizes must be >= 1, got {value!r}")
    return values


class RelativeOptions(ctypes.Structure):  # posenc_relative_options
    _fields_ = [("query_offset", ctypes.c_int64), ("clip", ctypes.c_int64),
                ("causal", ctypes.c_int)]


class Relative2dDesc(ctypes.Structure):  # posenc_relative_2d_desc
    _fields_ = [("batch", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("map_height", ctypes.c_int64), ("map_width", ctypes.c_int64),
                ("kv_map_height", ctypes.c_int64), ("kv_map_width", ctypes.c_int64),
                ("dim", ctypes.c_int64), ("table_heads", ctypes.c_int64),
                ("relative_order", c_enum)]


class TokenStrides(ctypes.Structure):  # posenc_token_strides
    _fields_ = [("batch", ctypes.c_int64), ("head", ctypes.c_int64),
                ("token", ctypes.c_int64)]


class AttentionDesc(ctypes.Structure):  # posenc_attention_desc
    _fields_ = [("batch", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("q_len", ctypes.c_int64), ("kv_len", ctypes.c_int64),
                ("head_dim", ctypes.c_int64), ("layout", c_enum), ("dtype", c_enum),
                ("out_dtype", c_enum), ("scale", ctypes.c_float), ("causal", ctypes.c_int),
                ("query_offset", ctypes.c_int64), ("bias", c_enum),
                ("tables_per_head", ctypes.c_int), ("bias_uses_scaled_q", ctypes.c_int),
                ("max_distance", ctypes.c_int64), ("map_height", ctypes.c_int64),
                ("map_width", ctypes.c_int64), ("relative_values", ctypes.c_int),
                ("kv_heads", ctypes.c_int64), ("q_strides", TokenStrides),
                ("k_strides", TokenStrides), ("v_strides", TokenStrides),
                ("out_strides", TokenStrides), ("index_type", c_enum),
                ("mask_batch", ctypes.c_int64), ("mask_heads", ctypes.c_int64),
                ("mask_q_len", ctypes.c_int64), ("mask_dtype", c_enum),
                ("relative_order", c_enum), ("kv_map_height", ctypes.c_int64),
                ("kv_map_width", ctypes.c_int64), ("class_token", ctypes.c_int),
                ("num_buckets", ctypes.c_int64), ("bidirectional", ctypes.c_int),
                ("value_head_dim", ctypes.c_int64), ("sliding_window", ctypes.c_int64),
                ("sinks", ctypes.c_int), ("softcap", ctypes.c_float),
                ("relative_query_bias", ctypes.c_int), ("bias_gate", ctypes.c_int)]


class AttentionTensors(ctypes.Structure):  # posenc_attention_tensors
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("q", "k", "v", "table", "table_h", "table_w", "value_table", "out",
                 "mask", "kv_lengths", "q_lengths", "query_offsets", "sinks",
                 "relative_query_bias", "key_table", "bias_gate")]


class AbsoluteResizeDesc(ctypes.Structure):  # posenc_absolute_resize_desc
    _fields_ = [("dim", ctypes.c_int64), ("prefix_tokens", ctypes.c_int64),
                ("height", ctypes.c_int64), ("width", ctypes.c_int64),
                ("new_height", ctypes.c_int64), ("new_width", ctypes.c_int64),
                ("interpolation", c_enum), ("antialias", ctypes.c_int),
                ("height_scale", ctypes.c_double), ("width_scale", ctypes.c_double)]


class PositionBiasDesc(ctypes.Structure):  # posenc_position_bias_desc
    _fields_ = [("kind", c_enum), ("heads", ctypes.c_int64), ("q_len", ctypes.c_int64),
                ("kv_len", ctypes.c_int64), ("query_offset", ctypes.c_int64),
                ("window_height", ctypes.c_int64), ("window_width", ctypes.c_int64),
                ("class_token", ctypes.c_int), ("max_distance", ctypes.c_int64),
                ("num_buckets", ctypes.c_int64), ("bidirectional", ctypes.c_int)]


class BottleneckDesc(ctypes.Structure):  # posenc_bottleneck_desc
    _fields_ = [("batch", ctypes.c_int64), ("channels", ctypes.c_int64),
                ("height", ctypes.c_int64), ("width", ctypes.c_int64),
                ("heads", ctypes.c_int64), ("head_dim", ctypes.c_int64),
                ("dtype", c_enum), ("out_dtype", c_enum), ("scale", ctypes.c_float),
                ("tables_per_head", ctypes.c_int), ("bias_uses_scaled_q", ctypes.c_int),
                ("stride", ctypes.c_int64), ("value_head_dim", ctypes.c_int64)]


class BottleneckTensors(ctypes.Structure):  # posenc_bottleneck_tensors
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("fmap", "w_qkv", "qkv_bias", "rel_h", "rel_w", "out")]


class RopeConfig(ctypes.Structure):  # posenc_rope_config
    _fields_ = [("rotary_dim", ctypes.c_int64), ("pairing", c_enum),
                ("base", ctypes.c_double), ("grid_width", ctypes.c_int64),
                ("scaling", c_enum), ("factor", ctypes.c_double),
                ("original_max_positions", ctypes.c_int64),
                ("sequence_length", ctypes.c_int64),
                ("extrapolation_factor", ctypes.c_double),
                ("attention_factor", ctypes.c_double), ("beta_fast", ctypes.c_double),
                ("beta_slow", ctypes.c_double), ("low_freq_factor", ctypes.c_double),
                ("high_freq_factor", ctypes.c_double),
                ("fractional_correction_range", ctypes.c_int), ("column_first", ctypes.c_int)]


class RopePositions(ctypes.Structure):  # posenc_rope_positions
    _fields_ = [("offset", ctypes.c_int64), ("ids", ctypes.c_void_p), ("ids_type", c_enum)]


# C struct name -> ctypes mirror, for the layout test.
STRUCTS = {
    "posenc_absolute_resize_desc": AbsoluteResizeDesc,
    "posenc_relative_options": RelativeOptions,
    "posenc_relative_2d_desc": Relative2dDesc,
    "posenc_token_strides": TokenStrides,
    "posenc_attention_desc": AttentionDesc,
    "posenc_attention_tensors": AttentionTensors,
    "posenc_position_bias_desc": PositionBiasDesc,
    "posenc_bottleneck_desc": BottleneckDesc,
    "posenc_bottleneck_tensors": BottleneckTensors,
    "posenc_rope_config": RopeConfig,
    "posenc_rope_positions": RopePositions,
}
