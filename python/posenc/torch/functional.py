"""posenc.attention for torch code that torch.compile or torch.export
traces: with torch 2.4 and later the call is the custom op
torch.ops.posenc.attention, which their graphs keep as one opaque node
(its output's shape and dtype from a fake implementation), where a plain
posenc.attention call, a ctypes call, breaks Dynamo's graph (an error under
fullgraph=True). Called eagerly it runs the op's code directly. Before
torch 2.4 it is posenc.attention itself."""
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
    # (The op's own call runs below autograd, where posenc would not see it.)
    for name, x in (("q", q), ("k", k), ("v", v), ("table", table), ("table_h", table_h),
                    ("table_w", table_w), ("key_table", key_table),
                    ("value_table", value_table), ("mask", mask), ("sinks", sinks),
                    ("relative_query_bias", relative_query_bias), ("bias_gate", bias_gate)):
        if x is not None:
            refuse_gradient(x, name)
    sizes = [None if size is None else [int(n) for n in size]
             for size in (map_size, kv_map_size, window)]
    return _ops.attention_op(
        q, k, v, layout, layout if out_layout is None else out_layout, scale, causal,
        query_offset, bias, table, table_h, table_w, key_table, value_table, mask, kv_lengths,
        q_lengths, query_offsets, sinks, relative_query_bias, bias_gate, bias_uses_scaled_q,
        max_distance, *sizes, class_token, num_buckets, bidirectional, relative_order,
        sliding_window, softcap, out_dtype)
