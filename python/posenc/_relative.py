"""Position logits (posenc/relative.h): absolute q R^T, the rel_to_abs skew,
1D and 2D relative logits. q is [batch, heads, queries, dim], float32; a
table is [rows, dim] shared by the heads or [heads, rows, dim] per head."""
import ctypes

from . import _abi, _tensor
from ._lib import check, lib
from .context import handle


def _q_and_table(q, table, name="table"):
    qv = _tensor.dense(q, "q", 4)
    tv = _tensor.dense(table, name, (2, 3))
    heads, dim = qv.shape[1], qv.shape[3]
    table_heads = 1 if len(tv.shape) == 2 else tv.shape[0]
    if tv.shape[-1] != dim:
        raise ValueError(f"{name}: expected {dim} columns (q's head dim), got {tv.shape[-1]}")
    if len(tv.shape) == 3 and table_heads != heads:
        raise ValueError(f"{name}: a per-head table has {heads} heads (q's), got {table_heads}")
    return qv, tv, table_heads


def absolute_logits(q, table, out=None, context=None):
    """out[b,h,i,j] = q[b,h,i] . table[j] (or table[h,j]): [B, H, Tq, Tk]."""
    qv, tv, table_heads = _q_and_table(q, table)
    batch, heads, queries, dim = qv.shape
    keys = tv.shape[-2]
    o = _tensor.output(out, q, (batch, heads, queries, keys), _abi.F32)
    check(lib.posenc_absolute_logits(handle(context), batch, heads, queries, keys, dim,
                                     qv.ptr, tv.ptr, table_heads, o.ptr))
    return o.obj


def rel_to_abs(x, out=None, context=None):
    """The skew: [B, H, L, 2L-1] -> [B, H, L, L], out[..,i,j] = x[..,i,j-i+L-1]."""
    xv = _tensor.dense(x, "x", 4)
    batch, heads, length, width = xv.shape
    if width != max(2 * length - 1, 0):
        raise ValueError(f"x: expected a last axis of 2*{length}-1, got {width}")
    o = _tensor.output(out, x, (batch, heads, length, length), _abi.F32)
    check(lib.posenc_rel_to_abs(handle(context), batch, heads, length, xv.ptr, o.ptr))
    return o.obj


def relative_logits_1d(q, table, keys=None, query_offset=0, clip=0, causal=False, out=None,
                       context=None):
    """out[b,h,i,j] = q[b,h,i] . table[row(i,j)] with the row rule of
    posenc_relative_logits_1d. keys defaults to what an unclipped table's
    rows imply (rows - query_offset - queries + 1); clipped tables need it."""
    qv, tv, table_heads = _q_and_table(q, table)
    batch, heads, queries, dim = qv.shape
    rows = tv.shape[-2]
    query_offset, clip = _abi.integer(query_offset, "query_offset"), _abi.count(clip, "clip")
    if keys is not None:
        keys = _abi.count(keys, "keys")
    else:
        if clip:
            raise ValueError("keys: needed with a clipped table")
        keys = rows - query_offset - queries + 1
        if keys < 0:
            raise ValueError(f"table: {rows} rows, fewer than query_offset + queries - 1 "
                             f"= {query_offset + queries - 1}")
    expected = 2 * clip + 1 if clip else max(query_offset + queries + keys - 1, 0)
    if rows != expected:
        rule = "2 clip + 1" if clip else "query_offset + queries + keys - 1"
        raise ValueError(f"table: expected {expected} rows ({rule}), got {rows}")
    options = _abi.RelativeOptions(query_offset, clip, _abi.flag(causal, "causal"))
    o = _tensor.output(out, q, (batch, heads, queries, keys), _abi.F32)
    check(lib.posenc_relative_logits_1d(handle(context), batch, heads, queries, keys, dim,
                                        qv.ptr, tv.ptr, table_heads, ctypes.byref(options),
                                        o.ptr))
    return o.obj


def _tables(q, row_table, column_table):
    qv, rv, table_heads = _q_and_table(q, row_table, "row_table")
    _, cv, column_heads = _q_and_table(q, column_table, "column_table")
    if column_heads != table_heads or len(cv.shape) != len(rv.shape):
        raise ValueError("column_table: shared or per head as row_table is")
    return qv, rv, cv, table_heads


def _map_inputs(q, row_table, column_table, height, width):
    height, width = _abi.positive(height, "height"), _abi.positive(width, "width")
    qv, rv, cv, table_heads = _tables(q, row_table, column_table)
    if qv.shape[2] != height * width:
        raise ValueError(f"q: {qv.shape[2]} tokens, not height*width = {height * width}")
    for name, table, size in (("row_table", rv, height), ("column_table", cv, width)):
        if table.shape[-2] != 2 * size - 1:
            raise ValueError(f"{name}: expected 2*{size}-1 = {2 * size - 1} rows, got "
                             f"{table.shape[-2]}")
    return qv, rv, cv, table_heads, height, width


def _output_pair(out):
    """out as the pair (rel_h, rel_w), (None, None) for None."""
    if out is None:
        return None, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"out: expected the pair (rel_h, rel_w), got {type(out).__name__}")
    return out


def relative_logits_2d_decomposed(q, row_table, column_table, height, width, out=None,
                                  context=None):
    """(rel_h [B, H, N, height], rel_w [B, H, N, width]) of the 2D relative
    logits; out, if given, is the pair (rel_h, rel_w)."""
    qv, rv, cv, table_heads, height, width = _map_inputs(q, row_table, column_table, height,
                                                         width)
    batch, heads, tokens, dim = qv.shape
    out_h, out_w = _output_pair(out)
    h = _tensor.output(out_h, q, (batch, heads, tokens, height), _abi.F32, "out[0]")
    w = _tensor.output(out_w, q, (batch, heads, tokens, width), _abi.F32, "out[1]")
    check(lib.posenc_relative_logits_2d_decomposed(handle(context), batch, heads, height,
                                                   width, dim, qv.ptr, rv.ptr, cv.ptr,
                                                   table_heads, h.ptr, w.ptr))
    return h.obj, w.obj


def relative_logits_2d_maps(q, row_table, column_table, map_size, kv_map_size=None,
                            relative_order="key_minus_query", out=None, context=None):
    """(rel_h [B, H, N, X'], rel_w [B, H, N, Y']) of the query map map_size =
    (X, Y), N = X*Y, against the key map kv_map_size = (X', Y') (None: the
    query map), with the rows of posenc_relative_logits_2d_maps:
    relative_order "query_minus_key" takes SAM's and MViTv2's rel_pos_h and
    rel_pos_w as stored and gives SAM's add_decomposed_rel_pos terms, of
    2 max(q, k) - 1 rows per axis. out, if given, is the pair (rel_h, rel_w)."""
    qv, rv, cv, table_heads = _tables(q, row_table, column_table)
    batch, heads, tokens, dim = qv.shape
    height, width = _abi.sizes(map_size, "map_size")
    desc = _abi.Relative2dDesc()
    lib.posenc_relative_2d_desc_init(ctypes.byref(desc), batch, heads, height, width, dim)
    desc.table_heads = table_heads
    desc.relative_order = _abi.enum_value(_abi.RELATIVE_ORDER, relative_order, "relative_order")
    key_map = (height, width) if kv_map_size is None else _abi.sizes(kv_map_size, "kv_map_size")
    if kv_map_size is not None:
        desc.kv_map_height, desc.kv_map_width = key_map
    if tokens != height * width:
        raise ValueError(f"q: {tokens} tokens, not map_size's {height}*{width}")
    for name, table, q_size, k_size in (("row_table", rv, height, key_map[0]),
                                        ("column_table", cv, width, key_map[1])):
        if table.shape[-2] != 2 * max(q_size, k_size) - 1:
            raise ValueError(f"{name}: {2 * max(q_size, k_size) - 1} rows for a query map of "
                             f"{q_size} and a key map of {k_size} along its axis, got "
                             f"{table.shape[-2]}")
    out_h, out_w = _output_pair(out)
    h = _tensor.output(out_h, q, (batch, heads, tokens, key_map[0]), _abi.F32, "out[0]")
    w = _tensor.output(out_w, q, (batch, heads, tokens, key_map[1]), _abi.F32, "out[1]")
    check(lib.posenc_relative_logits_2d_maps(handle(context), ctypes.byref(desc), qv.ptr,
                                             rv.ptr, cv.ptr, h.ptr, w.ptr))
    return h.obj, w.obj


def relative_logits_2d(q, row_table, column_table, height, width, out=None, context=None):
    """The full 2D relative bias [B, H, N, N] (N = height*width)."""
    qv, rv, cv, table_heads, height, width = _map_inputs(q, row_table, column_table, height,
                                                         width)
    batch, heads, tokens, dim = qv.shape
    o = _tensor.output(out, q, (batch, heads, tokens, tokens), _abi.F32)
    check(lib.posenc_relative_logits_2d(handle(context), batch, heads, height, width, dim,
                                        qv.ptr, rv.ptr, cv.ptr, table_heads, o.ptr))
    return o.obj
