"""posenc.attention for torch code that torch.compile or torch.export
traces: with torch 2.4 and later the call is the custom op
torch.ops.posenc.attention, which their graphs keep as one opaque node
(its output's shape and dtype from a fake implementation), where a plain
posenc.attention call, a ctypes call, breaks Dynamo's graph (an error under
fullgraph=True). Called eagerly it runs the op's code directly. Before
torch 2.4 it is posenc.attention itself."""
import torch

from .._tensor import refuse_gradient
from . import _ops


def attention(q, k, v, *, layout="bhtd", out_layout=None, scale=None, causal=False,
              query_offset=0, bias=None, table=None, table_h=None, table_w=None,
              key_table=None, value_table=None, mask=None, kv_lengths=None, q_lengths=None,
              query_offsets=None, sinks=None, relative_query_bias=None, bias_gate=None,
              bias_uses_scaled_q=True, max_distance=None, map_size=None, kv_map_size=None,
              window=None, class_token=False, num_buckets=None, bidirectional=None,
              relative_order="key_minus_query", sliding_window=0, softcap=None,
              out_dtype=None):
    """posenc.attention(q, k, v, ...) on torch tensors, with the same
    options (but out, workspace and context: the output is new, the
    workspace and context posenc's defaults) and the same errors; returns
    the output in out_layout ("bhtd" or "bthd"; default: layout), so that
    a model wanting [B, T, H, d] from [B, H, T, d] inputs (transformers')
    gets it without a copy."""
    layouts = ("bhtd", "bthd")
    if not isinstance(layout, str) or layout.lower() not in layouts:
        raise ValueError(f"layout: {layout!r} is not 'bhtd' or 'bthd'")
    if out_layout is None:
        out_layout = layout
    elif not isinstance(out_layout, str) or out_layout.lower() not in layouts:
        raise ValueError(f"out_layout: {out_layout!r} is not 'bhtd', 'bthd' or None")
    named = {name: x for name, x in (
        ("q", q), ("k", k), ("v", v), ("table", table), ("table_h", table_h),
        ("table_w", table_w), ("key_table", key_table), ("value_table", value_table),
        ("mask", mask), ("kv_lengths", kv_lengths), ("q_lengths", q_lengths),
        ("query_offsets", query_offsets), ("sinks", sinks),
        ("relative_query_bias", relative_query_bias), ("bias_gate", bias_gate))
        if isinstance(x, torch.Tensor)}
    if not _ops.traced(named.values()):  # the op's code, without torch's dispatch of an op
        call, sizes = _ops._attention, (map_size, kv_map_size, window)
    else:  # (its body runs below autograd, where posenc would not see a gradient)
        for name, x in named.items():
            refuse_gradient(x, name)
        call = _ops.attention_op
        sizes = [None if size is None else list(size) for size in (map_size, kv_map_size, window)]
    return call(
        q, k, v, layout, out_layout, scale, causal,
        query_offset, bias, table, table_h, table_w, key_table, value_table, mask, kv_lengths,
        q_lengths, query_offsets, sinks, relative_query_bias, bias_gate, bias_uses_scaled_q,
        max_distance, *sizes, class_token, num_buckets, bidirectional, relative_order,
        sliding_window, softcap, out_dtype)
