"""Fused attention and the BoTNet bottleneck block (posenc/attention.h).

q, k, v and out are 4-d with the axes of `layout`: "bhtd" [batch, heads,
tokens, head_dim] or "bthd" [batch, tokens, heads, head_dim]. When all four
are dense in that layout they are passed as they are; otherwise (views of a
packed qkv, a KV cache of larger capacity) they are passed in place with
their strides (POSENC_LAYOUT_STRIDED), except inputs it cannot read so
(head_dim not of stride 1, a negative stride, rows of tokens overlapping),
which are copied to dense ones, as all of them are with a libposenc that
does not take STRIDED yet. out must have head_dim of stride 1 and no
negative stride on an axis of more than one element.
"""
import ctypes
import inspect
import math

import numpy as np

from . import _abi, _tensor
from . import _bias, _call_plans
from ._lib import check, lib
from .context import handle

_strided = None


def strided_supported():
    """Whether this libposenc runs POSENC_LAYOUT_STRIDED (asked once, with a
    one-element call)."""
    global _strided
    if _strided is None:
        desc = _abi.AttentionDesc()
        lib.posenc_attention_desc_init(ctypes.byref(desc), 1, 1, 1, 1, 1)
        desc.layout = _abi.ATTENTION_LAYOUT["strided"]
        buffers = [ctypes.c_float(1.0) for _ in range(4)]
        tensors = _abi.AttentionTensors(*[ctypes.addressof(b) for b in buffers[:3]],
                                        None, None, None, None, ctypes.addressof(buffers[3]))
        _strided = lib.posenc_attention(None, ctypes.byref(desc), ctypes.byref(tensors),
                                        None, 0) == 0
    return _strided


def _token_strides(x, layout):
    """(batch, head, token) element strides of a 4-d View in `layout` as
    POSENC_LAYOUT_STRIDED takes them, or None where it cannot take x as it
    is (attention.h): head_dim not of stride 1, or a negative stride. An
    axis of one element places nothing: its stride is passed as 0 (numpy
    may leave it negative)."""
    b, first, second, d = [0 if size == 1 else stride
                           for size, stride in zip(x.shape, x.strides)]
    if (d != 1 and x.shape[3] != 1) or min(b, first, second) < 0:
        return None
    return _abi.TokenStrides(b, first, second) if layout == "bhtd" else \
        _abi.TokenStrides(b, second, first)


def _sizes(v, layout):
    """(batch, heads, tokens, head_dim) of a 4-d View in `layout`."""
    b, first, second, d = v.shape
    return (b, first, second, d) if layout == "bhtd" else (b, second, first, d)


def _table(table, name, dtype, input_name="q"):
    t = _tensor.dense(table, name, (2, 3), _tensor.FLOATS)
    if t.dtype != dtype:
        raise TypeError(f"{name}: must have {input_name}'s dtype")
    return t


def _no_q_table(desc, kind, table, dtype, heads, window, class_token, max_distance,
                num_buckets, bidirectional):
    """Sets desc's fields of a bias of posenc/bias.h; its table's View."""
    t = None if table is None else _tensor.dense(table, "table", None, _tensor.FLOATS)
    if t is not None and t.dtype != dtype:
        raise TypeError("table: must have q's dtype")
    f = _bias.kind_fields(kind, t, heads, window, class_token, max_distance, num_buckets,
                          bidirectional)
    if kind == "table_2d":
        _bias.expect_window_tokens(f, desc.q_len, desc.kv_len, "q's and k's tokens")
    desc.map_height, desc.map_width = f.window
    desc.class_token, desc.max_distance = f.class_token, f.max_distance
    desc.num_buckets, desc.bidirectional = f.num_buckets, f.bidirectional
    return t


def _relative_2d_options(desc, relative_order, kv_map_size, map_source):
    """SAM's conventions of a relative_2d desc: the table order and the key
    map (the query map's when None); the maps against q's and k's tokens,
    the query map named by map_source (the argument it came from)."""
    desc.relative_order = _abi.enum_value(_abi.RELATIVE_ORDER, relative_order,
                                          "relative_order")
    if desc.map_height * desc.map_width != desc.q_len:
        raise ValueError(f"{map_source}: a {desc.map_height} x {desc.map_width} map, but q has "
                         f"{desc.q_len} tokens")
    if kv_map_size is None:
        if desc.kv_len != desc.q_len:
            needed = "kv_map_size" if map_source == "map_size" else "map_size and kv_map_size"
            raise ValueError(f"{needed}: needed for k, whose tokens ({desc.kv_len}) are not "
                             f"the {desc.map_height} x {desc.map_width} query map")
        return
    desc.kv_map_height, desc.kv_map_width = _abi.sizes(kv_map_size, "kv_map_size")
    if desc.kv_map_height * desc.kv_map_width != desc.kv_len:
        raise ValueError(f"kv_map_size: a {desc.kv_map_height} x {desc.kv_map_width} map, but "
                         f"k has {desc.kv_len} tokens")


def _expect_q_tables(desc, views, query_offsets):
    """The tables of the biases from q and of the relative values (name ->
    View) against the sizes posenc_attention reads them by: the rows of
    attention.h, head_dim columns (value_head_dim for value_table), the
    query heads of per-head tables, all shared or all per head."""
    if desc.max_distance == 0:  # unclipped
        offset = desc.query_offset
        if query_offsets is not None and len(query_offsets) > 0:
            offset = int(query_offsets.max())
        # (No queries and no keys: the formula's -1 rows are none.)
        rows_1d = max(max(offset, 0) + desc.q_len + desc.kv_len - 1, 0)
        rule_1d = "max(query offset, 0) + q_len + kv_len - 1"
    else:
        rows_1d, rule_1d = 2 * desc.max_distance + 1, "2 max_distance + 1"
    expected = {"value_table": (rows_1d, desc.value_head_dim or desc.head_dim, rule_1d)}
    if desc.bias == _abi.ATTENTION_BIAS["absolute"]:
        expected["table"] = (desc.kv_len, desc.head_dim, "kv_len")
    elif desc.bias == _abi.ATTENTION_BIAS["relative_1d"]:
        expected["table"] = (rows_1d, desc.head_dim, rule_1d)
    elif desc.bias == _abi.ATTENTION_BIAS["disentangled"]:
        span = desc.num_buckets or desc.max_distance
        if span >= 1:  # else refused by posenc, naming the field
            rule = "2 num_buckets" if desc.num_buckets else "2 max_distance, num_buckets 0"
            for name in ("table", "key_table"):
                expected[name] = (2 * span, desc.head_dim, rule)
    elif desc.bias == _abi.ATTENTION_BIAS["relative_2d"]:
        key_map = (desc.kv_map_height or desc.map_height, desc.kv_map_width or desc.map_width)
        for name, q_size, k_size in zip(("table_h", "table_w"),
                                        (desc.map_height, desc.map_width), key_map):
            expected[name] = (2 * max(q_size, k_size) - 1, desc.head_dim,
                              f"2 max({q_size}, {k_size}) - 1 for a query map of {q_size} "
                              f"and a key map of {k_size} along its axis")
    tables = {name: views[name] for name in expected if name in views}
    for name, table in tables.items():
        rows, columns, rule = expected[name]
        _tensor.expect_table(table, rows, columns, desc.heads, name, rule)
    if len({len(t.shape) for t in tables.values()}) > 1:
        raise ValueError(f"{', '.join(tables)}: all shared [rows, d] or all per head "
                         "[heads, rows, d]")


_VALUE_TABLE_BIASES = {_abi.ATTENTION_BIAS[name] for name in ("none", "absolute", "relative_1d")}
_GATED_BIASES = {_abi.ATTENTION_BIAS[name] for name in ("table_1d", "t5", "alibi")}


def _bias_fields(desc, tensors, bias, tables, dtype, heads, map_size, relative_order,
                 kv_map_size, window, class_token, max_distance, num_buckets, bidirectional,
                 query_offsets, gated):
    """Sets desc's and tensors' fields of the position bias: `bias` and the
    given `tables` (name -> tensor), checked (gated: a bias_gate is given,
    which only the biases of _GATED_BIASES take); returns the tables' Views."""
    no_q = isinstance(bias, str) and bias.lower() in _bias.KINDS
    disentangled = isinstance(bias, str) and bias.lower() == "disentangled"
    if "key_table" in tables and not disentangled:
        raise ValueError(f"key_table: goes with bias 'disentangled', not {bias!r}")
    if disentangled:
        missing = [name for name in ("table", "key_table") if name not in tables]
        if missing:
            raise ValueError(f"{', '.join(missing)}: the disentangled bias takes table (c2p's "
                             "position keys) and key_table (p2c's position queries)")
        if max_distance is None:
            raise ValueError("max_distance: needed with bias 'disentangled' (DeBERTa's "
                             "max_relative_positions; with num_buckets 0 the span)")
    views = {name: _table(t, name, dtype) for name, t in tables.items()
             if not (no_q and name == "table")}
    tables_2d = "table_h" in views or "table_w" in views
    if bias is None:
        if "table" in views:
            raise ValueError("bias: say 'absolute' or 'relative_1d' for `table`")
        bias = "relative_2d" if tables_2d else "none"
    desc.bias = _abi.enum_value(_abi.ATTENTION_BIAS, bias, "bias")
    if desc.bias != _abi.ATTENTION_BIAS["relative_2d"] and tables_2d:
        raise ValueError(f"table_h, table_w: tables of bias 'relative_2d', not {bias!r}")
    if "value_table" in views and desc.bias not in _VALUE_TABLE_BIASES:
        # Shaw's value rows are by 1D distance, clipped at max_distance,
        # which the 2D and bucketed biases do not share.
        raise ValueError(f"value_table: goes with bias 'none', 'absolute' or 'relative_1d', "
                         f"not {bias!r}")
    if gated and desc.bias not in _GATED_BIASES:
        raise ValueError(f"bias_gate: goes with bias 'table_1d', 't5' or 'alibi', not {bias!r}")
    if desc.bias == _abi.ATTENTION_BIAS["relative_2d"]:
        if ("table_h" in views) != ("table_w" in views):
            raise ValueError("table_h, table_w: the relative_2d bias takes both")
        map_source = "map_size"
        if map_size is None:
            if not tables_2d:
                raise ValueError("map_size: needed without table_h and table_w")
            if kv_map_size is not None:
                raise ValueError("map_size: needed with kv_map_size")
            map_source = "table_h, table_w (their rows imply map_size)"
            map_size = ((views["table_h"].shape[-2] + 1) // 2,
                        (views["table_w"].shape[-2] + 1) // 2)
        desc.map_height, desc.map_width = _abi.sizes(map_size, "map_size")
        _relative_2d_options(desc, relative_order, kv_map_size, map_source)
    elif relative_order != "key_minus_query" or kv_map_size is not None or \
            map_size is not None:
        raise ValueError("map_size, relative_order, kv_map_size: for bias 'relative_2d' only")
    desc.tables_per_head = int(any(len(t.shape) == 3 for t in views.values()))
    desc.relative_values = int("value_table" in views)
    if no_q:
        no_q_table = _no_q_table(desc, bias.lower(), tables.get("table"), dtype, heads, window,
                                 class_token, max_distance, num_buckets, bidirectional)
        if no_q_table is not None:
            views["table"] = no_q_table
    elif window is not None or class_token or bidirectional is not None or \
            (num_buckets is not None and not disentangled):
        raise ValueError("window, class_token, num_buckets, bidirectional: parameters of "
                         f"the biases {', '.join(_bias.KINDS)} (and num_buckets of "
                         f"'disentangled'), not of {bias!r}")
    else:
        if disentangled:
            desc.num_buckets = _abi.count(num_buckets or 0, "num_buckets")
        _expect_q_tables(desc, views, query_offsets)
    for name, t in views.items():
        setattr(tensors, name, t.ptr)
    return list(views.values())


def _mask_as_read(mask):
    """The mask as posenc reads it, as torch broadcasts it: fewer than 4 axes
    get leading axes of one; an expanded axis (stride 0) but the last is read
    as one element, not copied out; a bool mask (True: the key takes part,
    as in torch's scaled_dot_product_attention) becomes the additive float32
    mask of 0 and -inf."""
    in_torch = _tensor.is_torch(mask)
    if not (in_torch or isinstance(mask, np.ndarray)) or \
            in_torch and (not mask.is_cpu or mask.layout != _tensor.torch_module().strided):
        return mask  # refused by _tensor.dense, naming the mask
    if not 1 <= mask.ndim <= 4:
        raise ValueError(f"mask: expected 1 to 4 dimensions, got {mask.ndim}")
    mask = mask[(None,) * (4 - mask.ndim)]
    strides = mask.stride() if in_torch else mask.strides
    for axis in range(3):
        if mask.shape[axis] > 1 and strides[axis] == 0:
            mask = mask[(slice(None),) * axis + (slice(0, 1),)]
    if in_torch:
        torch = _tensor.torch_module()
        if mask.dtype == torch.bool:
            additive = torch.zeros(mask.shape, dtype=torch.float32, device="cpu")
            return additive.masked_fill_(mask.logical_not(), -math.inf)
    elif mask.dtype == np.bool_:
        return np.where(mask, np.float32(0), np.float32(-np.inf))
    return mask


def _keys_copied_out(mask, kv_len):
    """A mask as read whose key axis is one (a value for every key), copied
    out to kv_len keys, which posenc reads."""
    keys = tuple(mask.shape[:3]) + (kv_len,)
    return _tensor.contiguous_copy(
        mask.expand(keys) if _tensor.is_torch(mask) else np.broadcast_to(mask, keys), "mask")


def _mask_and_length_fields(desc, tensors, mask, kv_lengths, q_lengths, query_offsets):
    """Sets desc's and tensors' fields of the mask and the per-sequence
    lengths and offsets; returns their Views."""
    views = {}
    batch, heads, q_len, kv_len = desc.batch, desc.heads, desc.q_len, desc.kv_len
    if mask is not None:
        m = _tensor.dense(_mask_as_read(mask), "mask", 4, _tensor.FLOATS,
                          "float32, bfloat16 or bool")
        # The shape as given: an expanded axis read as one still has a size.
        given_batch, given_heads, given_q_len, given_kv_len = \
            (1,) * (4 - mask.ndim) + tuple(mask.shape)
        fits = (batch % given_batch == 0 if given_batch else batch == 0, given_heads in (1, heads),
                given_q_len in (1, q_len), given_kv_len in (1, kv_len))
        if not all(fits):
            raise ValueError(f"mask: expected [m, 1 or {heads}, 1 or {q_len}, 1 or {kv_len}] with "
                             f"m dividing the batch {batch} (item b reads mask b % m), or fewer "
                             f"leading axes, got {list(mask.shape)}")
        if given_batch > 0:  # else no items to mask: posenc's mask_batch 0 is "no mask"
            if m.shape[3] != kv_len:
                m = _tensor.dense(_keys_copied_out(m.obj, kv_len), "mask", 4, _tensor.FLOATS)
            views["mask"] = m
            desc.mask_batch, desc.mask_heads, desc.mask_q_len = m.shape[:3]
            desc.mask_dtype = m.dtype
    index_types = set()
    for name, x in (("kv_lengths", kv_lengths), ("q_lengths", q_lengths),
                    ("query_offsets", query_offsets)):
        if x is not None:
            views[name] = _tensor.dense(x, name, 1, _tensor.INDICES)
            _tensor.expect_shape(views[name], (batch,), name)
            index_types.add(views[name].dtype)
    if len(index_types) > 1 or index_types - {"int32", "int64"}:
        raise TypeError("kv_lengths, q_lengths, query_offsets: all int32 or all int64")
    if index_types:
        desc.index_type = _abi.INDEX_TYPE[index_types.pop()]
    for name, x in views.items():
        setattr(tensors, name, x.ptr)
    return list(views.values())


# posenc_attention_desc_init's defaults, asked for once: each call's desc
# copies them and sets its sizes and scale (a copy costs less than a call).
_DESC_DEFAULTS = _abi.AttentionDesc()
lib.posenc_attention_desc_init(ctypes.byref(_DESC_DEFAULTS), 1, 1, 1, 1, 1)


# Calls made before, by signature (_call_plans): their descs reused.
_PLANS = _call_plans.Plans()


def _plan(q, k, v, layout="bhtd", scale=None, causal=False, query_offset=0, bias=None,
          table=None, table_h=None, table_w=None, bias_uses_scaled_q=True, max_distance=None,
          map_size=None, value_table=None, mask=None, kv_lengths=None, q_lengths=None,
          query_offsets=None, out=None, out_dtype=None, window=None, class_token=False,
          num_buckets=None, bidirectional=None, relative_order="key_minus_query",
          kv_map_size=None, sliding_window=0, sinks=None, softcap=None,
          relative_query_bias=None, key_table=None, bias_gate=None, sizing=False):
    """The desc and tensors of one call, the output View and what must stay
    alive until the call returns. (A call without a bias, mask or lengths
    costs a few microseconds here: the options are looked at only when
    given.) Sizing, for a workspace size: out is only looked at, and none
    is made."""
    layout = layout.lower() if isinstance(layout, str) else layout
    if layout not in ("bhtd", "bthd"):
        raise ValueError(f"layout: {layout!r} is not 'bhtd' or 'bthd'")
    views = [_tensor.view(x, name, 4, _tensor.FLOATS) for x, name in ((q, "q"), (k, "k"), (v, "v"))]
    qv, kv, vv = views
    batch, heads, q_len, head_dim = _sizes(qv, layout)
    _, kv_heads, kv_len, _ = _sizes(kv, layout)
    if kv.dtype != qv.dtype or vv.dtype != qv.dtype:
        raise TypeError(f"{'k' if kv.dtype != qv.dtype else 'v'}: must have q's dtype")
    value_head_dim = vv.shape[3]  # v's and out's head size may differ from q's and k's
    _tensor.expect_shape(vv, kv.shape[:3] + (value_head_dim,), "v")
    if _sizes(kv, layout)[::3] != (batch, head_dim):
        raise ValueError(f"k: batch and head_dim must be q's ({batch}, {head_dim})")
    if head_dim == 0 or value_head_dim == 0:
        raise ValueError(f"{'q' if head_dim == 0 else 'v'}: a head size of 0")
    if (kv_heads == 0) != (heads == 0) or (kv_heads and heads % kv_heads):
        raise ValueError(f"k: {kv_heads} heads for q's {heads} (k's heads must divide q's, "
                         f"as posenc_attention's kv_heads; even where the call is empty)")
    out_code = _tensor.dtype_code(out_dtype, "out_dtype")
    out_code = qv.dtype if out_code is None else out_code
    q_shape = qv.shape[:3] + (value_head_dim,)
    if out is None:
        ov = _tensor.View.unallocated(q_shape, out_code, q) if sizing else \
            _tensor.output(None, q, q_shape, out_code)
    else:
        ov = _tensor.view(out, "out", 4, _tensor.FLOATS)
        if not sizing:
            _tensor.writable(ov, "out")
        _tensor.expect_shape(ov, q_shape, "out")
        if ov.dtype != out_code:
            result = "out_dtype" if out_dtype is not None else "q's, as out_dtype is not given"
            raise TypeError(f"out: its dtype is not the result's ({result})")

    desc = _abi.AttentionDesc.from_buffer_copy(_DESC_DEFAULTS)
    desc.batch, desc.heads, desc.q_len, desc.kv_len = batch, heads, q_len, kv_len
    desc.head_dim = head_dim
    desc.layout = _abi.ATTENTION_LAYOUT[layout]
    if not (qv.contiguous and kv.contiguous and vv.contiguous and ov.contiguous):
        if strided_supported():
            strides = [_token_strides(x, layout) for x in views + [ov]]
            if strides[3] is None:
                raise ValueError("out: head_dim must have stride 1, and no axis of more than "
                                 "one element a negative stride")
            for i, name in enumerate(("q", "k", "v")):
                # An input's token rows are a GEMM's rows: at least a row apart.
                x, s = views[i], strides[i]
                if s is None or (_sizes(x, layout)[2] > 1 and s.token < x.shape[3]):
                    views[i] = _tensor.View.unmade(x.shape, x.dtype) if sizing else \
                        _tensor.dense(x.obj, name, 4, _tensor.FLOATS)
                    strides[i] = _token_strides(views[i], layout)
            for name, s in zip(("q", "k", "v", "out"), strides):
                setattr(desc, name + "_strides", s)
            desc.layout = _abi.ATTENTION_LAYOUT["strided"]
        else:
            if not ov.contiguous:
                raise ValueError("out: must be dense: this libposenc does not take "
                                 "strided attention tensors yet")
            views = [x if x.contiguous else _tensor.dense(x.obj, name, 4, _tensor.FLOATS)
                     for x, name in zip(views, ("q", "k", "v"))]
    desc.dtype, desc.out_dtype = qv.dtype, out_code
    desc.scale = 1.0 / math.sqrt(head_dim) if scale is None else _abi.real32(scale, "scale")
    desc.causal = _abi.flag(causal, "causal")
    desc.sliding_window = _abi.integer(sliding_window, "sliding_window")
    if softcap is not None:
        desc.softcap = _abi.real32(softcap, "softcap")
    desc.query_offset = _abi.integer(query_offset, "query_offset")
    desc.bias_uses_scaled_q = _abi.flag(bias_uses_scaled_q, "bias_uses_scaled_q")
    desc.max_distance = _abi.count(max_distance or 0, "max_distance")
    desc.kv_heads = kv_heads
    desc.value_head_dim = 0 if value_head_dim == head_dim else value_head_dim
    tensors = _abi.AttentionTensors(q=views[0].ptr, k=views[1].ptr, v=views[2].ptr, out=ov.ptr)

    keep = views
    if sinks is not None:
        sv = (_tensor.view if sizing else _tensor.dense)(sinks, "sinks", 1, _tensor.FLOATS)
        if sv.dtype != qv.dtype:
            raise TypeError("sinks: must have q's dtype")
        _tensor.expect_shape(sv, (heads,), "sinks")
        desc.sinks, tensors.sinks = 1, sv.ptr
        keep = keep + [sv]
    if relative_query_bias is not None:
        name = "relative_query_bias"
        uv = (_tensor.view if sizing else _tensor.dense)(relative_query_bias, name, 2,
                                                          _tensor.FLOATS)
        if uv.dtype != qv.dtype:
            raise TypeError("relative_query_bias: must have q's dtype")
        _tensor.expect_shape(uv, (heads, head_dim), name)
        desc.relative_query_bias, tensors.relative_query_bias = 1, uv.ptr
        keep = keep + [uv]
    if bias_gate is not None:
        gv = (_tensor.view if sizing else _tensor.dense)(bias_gate, "bias_gate", 3,
                                                          _tensor.FLOATS)
        if gv.dtype != qv.dtype:
            raise TypeError("bias_gate: must have q's dtype")
        _tensor.expect_shape(gv, (batch, heads, q_len), "bias_gate")
        desc.bias_gate, tensors.bias_gate = 1, gv.ptr
        keep = keep + [gv]
    # The lengths and offsets first: the 1D tables' rows follow query_offsets.
    if mask is not None or kv_lengths is not None or q_lengths is not None or \
            query_offsets is not None:
        keep = keep + _mask_and_length_fields(desc, tensors, mask, kv_lengths, q_lengths,
                                              query_offsets)
    # Every argument _bias_fields checks, so that one given alone is refused
    # (test_errors gives each alone).
    if bias is not None or table is not None or table_h is not None or table_w is not None or \
            value_table is not None or window is not None or class_token or \
            num_buckets is not None or bidirectional is not None or map_size is not None or \
            relative_order != "key_minus_query" or kv_map_size is not None or \
            key_table is not None or bias_gate is not None:
        tables = {name: t for name, t in (("table", table), ("table_h", table_h),
                                           ("table_w", table_w), ("value_table", value_table),
                                           ("key_table", key_table))
                  if t is not None}
        keep = keep + _bias_fields(desc, tensors, bias, tables, qv.dtype, heads, map_size,
                                   relative_order, kv_map_size, window, class_token,
                                   max_distance, num_buckets, bidirectional, query_offsets,
                                   bias_gate is not None)
    return desc, tensors, ov, keep


def attention(q, k, v, *, layout="bhtd", scale=None, causal=False, query_offset=0,
              bias=None, table=None, table_h=None, table_w=None, bias_uses_scaled_q=True,
              max_distance=None, map_size=None, value_table=None, mask=None, kv_lengths=None,
              q_lengths=None, query_offsets=None, out=None, out_dtype=None, workspace=None,
              context=None, window=None, class_token=False, num_buckets=None,
              bidirectional=None, relative_order="key_minus_query", kv_map_size=None,
              sliding_window=0, sinks=None, softcap=None, relative_query_bias=None,
              key_table=None, bias_gate=None):
    """softmax(scale q k^T + bias + mask) v, every option of posenc_attention.

    scale: default 1/sqrt(head_dim). bias: "none", "absolute" or
    "relative_1d" with `table`, "relative_2d" with table_h, table_w (the
    default when they are given; map_size (height, width) defaults to what
    their rows imply). Tables [rows, head_dim] or per head [heads, rows,
    head_dim] (then all of them). value_table: Shaw's relative values, with
    bias "none", "absolute" or "relative_1d".
    relative_query_bias: [heads, head_dim] of q's dtype, u added to q in the
    "relative_1d" logits only, (q_i + u_h) . table[row] (never rounded:
    q . table + u . table): Transformer-XL's relative attention as the
    Conformer keeps it (NeMo's RelPositionMultiHeadAttention, ESPnet's
    RelPositionMultiHeadedAttention of rel_pos_type "latest", transformers'
    Wav2Vec2Conformer) with q + pos_bias_u as q, u = pos_bias_v - pos_bias_u
    and their projected positions [heads, 2T-1, head_dim] as the table, as
    stored.
    bias "disentangled": DeBERTa's c2p and p2c terms, scale (q_i . table[row]
    + k_j . key_table[row]) (without scale if bias_uses_scaled_q is False),
    row = clamp(delta(query_offset + i - j) + S, 0, 2S - 1); both tables
    [2S, head_dim] or both [heads, 2S, head_dim], of q's dtype. num_buckets
    B >= 2: S = B and delta DeBERTa's log buckets up to max_distance M;
    num_buckets 0 (default): S = M and delta(r) = r. DeBERTa-v2/v3
    (transformers' DebertaV2): scale = 1/sqrt(3 head_dim), table =
    pos_key_layer and key_table = pos_query_layer [heads, 2S, head_dim],
    num_buckets = position_buckets, max_distance = max_relative_positions.
    mask: additive (float32 or bfloat16, -inf masks a key) or bool (True:
    the key takes part, as in torch's scaled_dot_product_attention), of
    [mask_batch, mask_heads, mask_q_len, kv_len] with mask_heads 1 or heads,
    mask_q_len 1 or q_len, and mask_batch any m dividing batch (item b reads
    mask b % m: Swin's windows folded into the batch; torch would refuse an
    m other than 1 or batch), or fewer leading axes; an expanded (stride 0)
    axis is read in place. A row that sees no key (masked everywhere, past
    kv_lengths, causal) is zeros, as torch's scaled_dot_product_attention
    gives from torch 2.5, where an explicit softmax gives NaN (one masked
    everywhere whose scores hold a NaN of q, k or a table is NaN, as in
    torch). causal: key j is seen by query i when j <= query_offset + i, so
    with query_offset 0 the mask is aligned top-left as torch's is_causal;
    kv_len - q_len aligns it bottom-right (decoding after a KV cache).
    sliding_window W: query i at position p = query_offset + i sees only
    keys less than W from it: with causal the W keys up to p, j > p - W
    (transformers' sliding_window), without |j - p| < W (ModernBERT's
    local attention of L tokens is W = L // 2 + 1).
    softcap c: each scale q.k becomes c tanh(scale q.k / c) before bias and
    mask (Gemma 2's attn_logit_softcapping); not with the biases of q.
    sinks: [heads] of q's dtype, a logit per head that joins each row's
    softmax as a key of value zero (gpt-oss's attention sinks; ONNX
    Runtime's head_sink); a row that sees no key stays zeros.
    kv_lengths, q_lengths, query_offsets: [batch] int32 or int64. k and v
    may have fewer heads than q (grouped-query). v may have another head
    size than q and k (value_head_dim), which out and value_table then have.
    out_dtype: default q's. workspace: a buffer of at least
    attention_workspace_size(...) bytes, or None: posenc's own, kept by the
    calling thread for its later calls (up to 256 MiB, or 16 MiB per
    thread of the call where more). An empty batch,
    heads or queries axis gives an empty result, no keys a result of zeros.

    The biases that need no q (posenc.position_bias describes their tables): bias=
    "table_2d" (Swin, BEiT) with window=(Wh, Ww) and class_token (BEiT),
    q_len = kv_len = Wh*Ww + class_token; "table_1d" (max_distance from the
    table); "t5" (num_buckets from the table, max_distance default 128,
    bidirectional); "alibi" (table = slopes [heads] or None, bidirectional).
    They are added as the mask is, to the scaled scores. max_distance: for
    "relative_1d" and value_table, 0 (default) unclipped or K.
    bias_gate: [batch, heads, q_len] of q's dtype (whatever the layout),
    with bias "table_1d", "t5" or "alibi" only: query i of head h in item b
    adds gate[b, h, i] * bias[h, i, j] (the mask is not gated). WavLM's
    gated relative position bias (transformers' WavLMAttention, torchaudio's
    WavLMSelfAttention, ONNX Runtime's GatedRelativePositionBias): bias="t5",
    table=rel_attn_embed.weight [num_buckets, heads] as stored,
    num_buckets=320, max_distance=800, bidirectional=True, the layer's
    gate_output (gate_a * (gate_b * gru_rel_pos_const - 1) + 2) [B, H, T] as
    bias_gate, the default scale, the padded keys as kv_lengths.

    relative_2d only: relative_order "key_minus_query" (posenc's and BoTNet's
    tables) or "query_minus_key" (SAM's and MViTv2's rel_pos_h and rel_pos_w
    as stored); kv_map_size (height, width) of a key map other than the
    query map (map_size then needed), with SAM's coordinate scaling: the
    tables have 2 max(query, key) - 1 rows per axis.
    """
    given = (q, k, v, out, mask, kv_lengths, q_lengths, query_offsets, sinks)  # TENSOR_FIELDS
    key = None
    if bias is None and table is None and table_h is None and table_w is None and \
            bias_uses_scaled_q is True and max_distance is None and map_size is None and \
            value_table is None and window is None and class_token is False and \
            num_buckets is None and bidirectional is None and \
            relative_order == "key_minus_query" and kv_map_size is None and \
            relative_query_bias is None and key_table is None and bias_gate is None:
        key = _call_plans.signature(given, layout, scale, causal, query_offset, out_dtype,
                                    sliding_window, softcap)
    plan = None if key is None else _PLANS.get(key)
    made = None if plan is None else plan.tensors(given)
    if made is not None:
        tensors, result = made
        pointer, size, pinned = _tensor.workspace_buffer(workspace)
        check(lib.posenc_attention(handle(context), ctypes.byref(plan.desc),
                                   ctypes.byref(tensors), pointer, size))
        return result
    desc, tensors, ov, keep = _plan(
        q, k, v, layout, scale, causal, query_offset, bias, table, table_h, table_w,
        bias_uses_scaled_q, max_distance, map_size, value_table, mask, kv_lengths, q_lengths,
        query_offsets, out, out_dtype, window, class_token, num_buckets, bidirectional,
        relative_order, kv_map_size, sliding_window, sinks, softcap, relative_query_bias,
        key_table, bias_gate)
    pointer, size, pinned = _tensor.workspace_buffer(workspace)
    check(lib.posenc_attention(handle(context), ctypes.byref(desc), ctypes.byref(tensors),
                               pointer, size))
    if key is not None:
        _PLANS.keep(key, desc, tensors, given, ov.obj)
    del keep, pinned
    return ov.obj


# attention's options, which attention_workspace_size takes too.
_OPTIONS = frozenset(inspect.signature(_plan).parameters) - {"q", "k", "v", "sizing"}


def attention_workspace_size(q, k, v, *, context=None, workspace=None, **options):
    """Bytes of the workspace attention(q, k, v, **options) needs (its
    workspace, if given, aside). Writes nothing, and makes no output."""
    del workspace  # attention's own, which the size does not depend on
    unknown = sorted(options.keys() - _OPTIONS)
    if unknown:
        raise TypeError(f"attention_workspace_size: {unknown[0]!r} is not an option of attention")
    desc, _, _, _ = _plan(q, k, v, **options, sizing=True)
    size = ctypes.c_size_t()
    check(lib.posenc_attention_workspace_size(handle(context), ctypes.byref(desc),
                                              ctypes.byref(size)))
    return size.value


def bottleneck_mhsa(fmap, w_qkv, rel_h, rel_w, heads, scale=None, out=None, out_dtype=None,
                    workspace=None, context=None, qkv_bias=None, bias_uses_scaled_q=True,
                    stride=1):
    """BoTNet's MHSA over fmap [B, C, H, W] (NCHW), as timm's BottleneckAttn:
    w_qkv [heads*(2*head_dim + value_head_dim), C] (a 1x1 convolution's
    [.., C, 1, 1] weight too; q, k, then v channels, as timm splits them),
    qkv_bias [same rows] or None, rel_h [2H-1, head_dim], rel_w [2W-1,
    head_dim] (or per head, [heads, .., head_dim]): head_dim is the tables',
    value_head_dim what w_qkv's other rows leave (timm's dim_head_v, which
    differs with qk_ratio != 1); position logits from the scaled q
    (bias_uses_scaled_q, timm's scale_pos_embed=True) or the unscaled q;
    stride 2 averages 2x2 windows (AvgPool2d(2, 2)). workspace: None
    (posenc's own, kept as attention's) or a buffer of at least the C ABI's
    posenc_bottleneck_workspace_size bytes. Returns
    [B, heads*value_head_dim, H // stride, W // stride]."""
    heads = _abi.integer(heads, "heads")
    if heads < 1:
        raise ValueError(f"heads: must be at least 1, got {heads}")
    f = _tensor.dense(fmap, "fmap", 4, _tensor.FLOATS)
    w = _tensor.dense(w_qkv, "w_qkv", (2, 4), _tensor.FLOATS)
    batch, channels, height, width = f.shape
    if height < 1 or width < 1:  # (before the tables' 2 size - 1 rows)
        raise ValueError(f"fmap: height and width must be >= 1, got {list(f.shape)}")
    rows = w.shape[0]
    th, tw = _table(rel_h, "rel_h", f.dtype, "fmap"), _table(rel_w, "rel_w", f.dtype, "fmap")
    head_dim = th.shape[-1]
    for name, table, size in (("rel_h", th, height), ("rel_w", tw, width)):
        _tensor.expect_table(table, 2 * size - 1, head_dim, heads, name,
                             f"2*{size}-1 rows, rel_h's head_dim columns")
    if len(th.shape) != len(tw.shape):
        raise ValueError("rel_w: shared or per head as rel_h is")
    if w.shape[1] != channels or (len(w.shape) == 4 and w.shape[2:] != (1, 1)):
        raise ValueError(f"w_qkv: expected [heads*(2*head_dim + value_head_dim), {channels}], "
                         f"got {list(w.shape)}")
    value_rows = rows - 2 * heads * head_dim
    if value_rows <= 0 or value_rows % heads:
        raise ValueError(f"w_qkv: {rows} rows are not heads ({heads}) * (2 * head_dim "
                         f"({head_dim}) + value_head_dim)")
    value_head_dim = value_rows // heads
    if w.dtype != f.dtype:
        raise TypeError("w_qkv: must have fmap's dtype")
    stride = _abi.integer(stride, "stride")
    if stride not in (1, 2):
        raise ValueError(f"stride: must be 1 or 2, got {stride}")
    b = None
    if qkv_bias is not None:
        b = _tensor.dense(qkv_bias, "qkv_bias", 1, _tensor.FLOATS)
        if tuple(b.shape) != (rows,):
            raise ValueError(f"qkv_bias: expected [{rows}], got {list(b.shape)}")
        if b.dtype != f.dtype:
            raise TypeError("qkv_bias: must have fmap's dtype")
    desc = _abi.BottleneckDesc()
    lib.posenc_bottleneck_desc_init(ctypes.byref(desc), batch, channels, height, width, heads,
                                    head_dim)
    out_code = _tensor.dtype_code(out_dtype, "out_dtype")
    desc.dtype, desc.out_dtype = f.dtype, f.dtype if out_code is None else out_code
    if scale is not None:
        desc.scale = _abi.real32(scale, "scale")
    desc.tables_per_head = int(len(th.shape) == 3)
    desc.bias_uses_scaled_q = _abi.flag(bias_uses_scaled_q, "bias_uses_scaled_q")
    desc.stride = stride
    desc.value_head_dim = 0 if value_head_dim == head_dim else value_head_dim
    o = _tensor.output(out, fmap, (batch, value_rows, height // stride, width // stride),
                       desc.out_dtype)
    tensors = _abi.BottleneckTensors(f.ptr, w.ptr, None if b is None else b.ptr, th.ptr, tw.ptr,
                                     o.ptr)
    pointer, size, pinned = _tensor.workspace_buffer(workspace)
    check(lib.posenc_bottleneck(handle(context), ctypes.byref(desc), ctypes.byref(tensors),
                                pointer, size))
    del pinned
    return o.obj
