"""Position biases that need no q (posenc/bias.h): Swin's and BEiT's learned
2D tables, per-head 1D tables, T5's buckets and ALiBi, as the dense bias
[heads, q_len, kv_len]; ALiBi's slopes; the resizing of relative tables.
Tables are float32 and loaded as the models store them:
- "table_2d": relative_position_bias_table [(2Wh-1)(2Ww-1) + 3*class_token, heads]
  (window (Wh, Ww); class_token: BEiT's 3 extra rows);
- "table_1d": [heads, 2K+1] (K = max_distance, from the table's columns);
- "t5": relative_attention_bias.weight [num_buckets, heads];
- "alibi": the slopes [heads], or None for alibi_slopes(heads).
posenc.attention takes the same kinds and parameters (bias="table_2d", ...).
"""
import ctypes

from . import _abi, _tensor
from ._lib import check, lib
from .context import handle

KINDS = tuple(_abi.POSITION_BIAS_KIND)
T5_MAX_DISTANCE = 128  # T5's default (and posenc_position_bias_desc_init's)


class Fields:
    """A kind's sizes and parameters, checked against its table."""

    __slots__ = ("heads", "window", "class_token", "max_distance", "num_buckets",
                 "bidirectional")

    def __init__(self):
        self.heads, self.window, self.class_token = None, (0, 0), 0
        self.max_distance = self.num_buckets = self.bidirectional = 0


def _shape_error(kind, expected, table):
    return ValueError(f"table: a {kind} table is {expected}, got {list(table.shape)}")


def kind_fields(kind, table, heads=None, window=None, class_token=False, max_distance=None,
                num_buckets=None, bidirectional=None):
    """The Fields of `kind` for `table` (a View or None): heads from the
    table where it has them (then `heads`, if given, must agree), the table's
    shape checked against the parameters, parameters the kind does not take
    refused."""
    f = Fields()
    class_token = _abi.flag(class_token, "class_token")
    if num_buckets is not None:
        num_buckets = _abi.count(num_buckets, "num_buckets")
    if max_distance is not None:
        max_distance = _abi.integer(max_distance, "max_distance")
    given = {"window": window is not None, "class_token": bool(class_token),
             "num_buckets": num_buckets is not None, "bidirectional": bidirectional is not None}
    takes = {"table_2d": ("window", "class_token"), "table_1d": (), "t5":
             ("num_buckets", "bidirectional"), "alibi": ("bidirectional",)}[kind]
    for name, is_given in given.items():
        if is_given and name not in takes:
            raise ValueError(f"{name}: not a parameter of the {kind} bias")
    if kind in ("t5", "alibi") and bidirectional is None:
        raise ValueError(f"bidirectional: say True (an encoder) or False (a decoder) for the "
                         f"{kind} bias")
    if kind != "alibi" and table is None:
        raise ValueError(f"table: the {kind} bias needs its table")
    if kind in ("table_2d", "alibi") and max_distance is not None:
        raise ValueError(f"max_distance: not a parameter of the {kind} bias")
    shape = None if table is None else tuple(table.shape)
    if kind == "table_2d":
        if window is None:
            raise ValueError("window: the table_2d bias needs (window_height, window_width)")
        wh, ww = _abi.sizes(window, "window")
        rows = (2 * wh - 1) * (2 * ww - 1) + 3 * class_token
        if len(shape) != 2 or shape[0] != rows:
            raise _shape_error(kind, f"[{rows}, heads] for a {wh}x{ww} window"
                               f"{' with a class token' if class_token else ''}", table)
        f.heads, f.window, f.class_token = shape[1], (wh, ww), class_token
    elif kind == "table_1d":
        if len(shape) != 2 or shape[1] % 2 != 1:
            raise _shape_error(kind, "[heads, 2K+1]", table)
        k = shape[1] // 2
        if max_distance is not None and max_distance != k:
            raise ValueError(f"max_distance: {max_distance}, but the table's {shape[1]} "
                             f"columns are 2*{k}+1")
        f.heads, f.max_distance = shape[0], k
    elif kind == "t5":
        if len(shape) != 2 or (num_buckets is not None and shape[0] != num_buckets):
            buckets = "num_buckets" if num_buckets is None else f"num_buckets = {num_buckets}"
            raise _shape_error(kind, f"[{buckets}, heads]", table)
        f.heads, f.num_buckets = shape[1], shape[0]
        f.max_distance = T5_MAX_DISTANCE if max_distance is None else max_distance
        f.bidirectional = _abi.flag(bidirectional, "bidirectional")
    else:
        if shape is not None:
            if len(shape) != 1:
                raise _shape_error(kind, "[heads] slopes", table)
            f.heads = shape[0]
        f.bidirectional = _abi.flag(bidirectional, "bidirectional")
    if heads is not None:
        heads = _abi.count(heads, "heads")
        if f.heads is not None and f.heads != heads:
            raise ValueError(f"table: has {f.heads} heads, not {heads}")
        f.heads = heads
    if f.heads is None:
        raise ValueError("heads: needed for alibi without slopes")
    return f


def _float32_result(dtype):
    """result_kind's `like` for a result that is float32: another dtype is
    refused, not ignored."""
    like, code = _tensor.result_kind(dtype)
    if code != _abi.F32:
        raise TypeError(f"dtype: the result is float32, got {dtype}")
    return like


def expect_window_tokens(f, q_len, kv_len, lengths):
    """A table_2d bias's window (Fields f) against the lengths of its
    queries and keys (`lengths`: where they come from)."""
    tokens = f.window[0] * f.window[1] + f.class_token
    if not q_len == kv_len == tokens:
        raise ValueError(f"window: {f.window[0]} x {f.window[1]}"
                         f"{' plus the class token' if f.class_token else ''} is {tokens} "
                         f"tokens, but {lengths} are {q_len} and {kv_len}")


def position_bias(kind, table=None, *, heads=None, q_len=None, kv_len=None, query_offset=0,
                  window=None, class_token=False, max_distance=None, num_buckets=None,
                  bidirectional=None, out=None, dtype=None, context=None):
    """The dense bias [heads, q_len, kv_len] of `kind` (see the module's
    doc). q_len defaults to the window's tokens (table_2d), kv_len to
    q_len; heads to the table's. The result is float32 (a dtype other than
    float32 is refused); dtype (a torch dtype: a torch result) only matters
    for alibi without slopes, the result being otherwise of the kind of
    `table` (a torch tensor or a numpy array)."""
    kind_name = str(kind).lower()
    code = _abi.enum_value(_abi.POSITION_BIAS_KIND, kind_name, "kind")
    tv = None if table is None else _tensor.dense(table, "table", None, _tensor.F32_ONLY)
    f = kind_fields(kind_name, tv, heads, window, class_token, max_distance, num_buckets,
                    bidirectional)
    if q_len is None:
        if kind_name != "table_2d":
            raise ValueError(f"q_len: needed for the {kind_name} bias")
        q_len = f.window[0] * f.window[1] + f.class_token
    q_len = _abi.count(q_len, "q_len")
    kv_len = q_len if kv_len is None else _abi.count(kv_len, "kv_len")
    if kind_name == "table_2d":
        expect_window_tokens(f, q_len, kv_len, "q_len and kv_len")
    desc = _abi.PositionBiasDesc()
    lib.posenc_position_bias_desc_init(ctypes.byref(desc), code, f.heads, q_len, kv_len)
    desc.query_offset = _abi.integer(query_offset, "query_offset")
    desc.window_height, desc.window_width = f.window
    desc.class_token, desc.max_distance = f.class_token, f.max_distance
    desc.num_buckets, desc.bidirectional = f.num_buckets, f.bidirectional
    like = _float32_result(dtype)
    if tv is not None:
        like = table
    o = _tensor.output(out, like, (f.heads, q_len, kv_len), _abi.F32)
    check(lib.posenc_position_bias(handle(context), ctypes.byref(desc),
                                   None if tv is None else tv.ptr, o.ptr))
    return o.obj


def alibi_slopes(heads, dtype=None, out=None):
    """ALiBi's standard slopes [heads] (float32, another dtype refused; a
    torch tensor for a torch dtype, else numpy)."""
    heads = _abi.count(heads, "heads")
    o = _tensor.output(out, _float32_result(dtype), (heads,), _abi.F32)
    check(lib.posenc_alibi_slopes(heads, o.ptr))
    return o.obj


def resize_relative_table(table, new_rows, out=None):
    """table [rows, dim] resized to [new_rows, dim] by linear interpolation
    (SAM's get_rel_pos; torch's interpolate(mode="linear"))."""
    tv = _tensor.dense(table, "table", 2)
    rows, dim = tv.shape
    new_rows = _abi.count(new_rows, "new_rows")
    o = _tensor.output(out, table, (new_rows, dim), _abi.F32)
    check(lib.posenc_resize_relative_table(rows, dim, tv.ptr, new_rows, o.ptr))
    return o.obj


def resize_relative_bias_table_2d(table, window, new_window, class_token=False, out=None):
    """A table_2d table for `window` (Wh, Ww) resized to `new_window`: the
    (2Wh-1) x (2Ww-1) grid of each head bicubic (torch's interpolate(
    mode="bicubic", align_corners=False)), BEiT's 3 class-token rows kept."""
    tv = _tensor.dense(table, "table", 2)
    f = kind_fields("table_2d", tv, window=window, class_token=class_token)
    (wh, ww), (nh, nw) = f.window, _abi.sizes(new_window, "new_window")
    rows = (2 * nh - 1) * (2 * nw - 1) + 3 * f.class_token
    o = _tensor.output(out, table, (rows, f.heads), _abi.F32)
    check(lib.posenc_resize_relative_bias_table_2d(f.heads, wh, ww, nh, nw, f.class_token,
                                                   tv.ptr, o.ptr))
    return o.obj
