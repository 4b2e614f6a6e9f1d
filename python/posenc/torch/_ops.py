"""The posenc calls the patched modules and posenc.torch.attention make, as
torch custom ops with torch 2.4 and later (torch.library.custom_op:
torch.compile and torch.export keep them in their graphs as opaque nodes,
with shapes from their fake implementations) where a tracer would see the
call, and as plain calls elsewhere and before."""
import functools
import inspect
from typing import List, Optional

import torch
from torch.utils import _python_dispatch

from .._attention import attention, bottleneck_mhsa

_CUSTOM_OPS = hasattr(torch.library, "custom_op")
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _attention_2d(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  table_h: Optional[torch.Tensor], table_w: Optional[torch.Tensor],
                  scale: float, bias_uses_scaled_q: bool, out_dtype: torch.dtype,
                  query_minus_key: bool = False, map_size: Optional[List[int]] = None,
                  kv_map_size: Optional[List[int]] = None) -> torch.Tensor:
    """Attention over [B, N, H, d] (BTHD) q, k, v, with the 2D relative bias
    when the tables are given (rows by query minus key with
    query_minus_key; the queries' map and the keys' where they differ, as
    MViTv2's pooled keys); out [B, N, H, v's head size] of out_dtype."""
    options = {}
    if query_minus_key and table_h is not None:
        options["relative_order"] = "query_minus_key"
    if map_size is not None and table_h is not None:
        options["map_size"] = tuple(map_size)
    if kv_map_size is not None and table_h is not None:
        options["kv_map_size"] = tuple(kv_map_size)
    return attention(q, k, v, layout="bthd", scale=scale, table_h=table_h, table_w=table_w,
                     bias_uses_scaled_q=bias_uses_scaled_q, out_dtype=out_dtype, **options)


def _attention_table_2d(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        table: Optional[torch.Tensor], window: List[int], class_token: bool,
                        mask: Optional[torch.Tensor], scale: float,
                        out_dtype: torch.dtype) -> torch.Tensor:
    """Attention over [B, N, H, d] (BTHD) q, k, v with Swin's or BEiT's learned
    bias table [entries, H] (window (Wh, Ww), BEiT's class token) when it is
    given, and the mask as attention takes it ([m, 1 or H, N, N], batch item
    b reading b % m, or fewer leading axes) when it is; out [B, N, H, v's
    head size] of out_dtype."""
    options = dict(bias="table_2d", table=table, window=tuple(window),
                   class_token=class_token) if table is not None else {}
    return attention(q, k, v, layout="bthd", scale=scale, mask=mask, out_dtype=out_dtype,
                     **options)


def _bottleneck(fmap: torch.Tensor, w_qkv: torch.Tensor, qkv_bias: Optional[torch.Tensor],
                rel_h: torch.Tensor, rel_w: torch.Tensor, heads: int, scale: float,
                bias_uses_scaled_q: bool, stride: int, out_dtype: torch.dtype) -> torch.Tensor:
    """BoTNet's MHSA over NCHW fmap: [B, heads*value_head_dim, H/stride, W/stride] of
    out_dtype (value_head_dim: what w_qkv's rows leave past q's and k's)."""
    return bottleneck_mhsa(fmap, w_qkv, rel_h, rel_w, heads, scale=scale, out_dtype=out_dtype,
                           qkv_bias=qkv_bias, bias_uses_scaled_q=bias_uses_scaled_q,
                           stride=stride)


def _output_shape(q: torch.Tensor, v: torch.Tensor, layout: str, out_layout: str):
    """attention's output: q's shape in `layout` with v's head size, its
    token and head axes swapped where out_layout is the other layout."""
    shape = [*q.shape[:-1], v.shape[-1]]
    if out_layout.lower() != layout.lower():
        shape[1], shape[2] = shape[2], shape[1]
    return shape


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: str, out_layout: str,
               scale: Optional[float], causal: bool, query_offset: int, bias: Optional[str],
               table: Optional[torch.Tensor], table_h: Optional[torch.Tensor],
               table_w: Optional[torch.Tensor], key_table: Optional[torch.Tensor],
               value_table: Optional[torch.Tensor], mask: Optional[torch.Tensor],
               kv_lengths: Optional[torch.Tensor], q_lengths: Optional[torch.Tensor],
               query_offsets: Optional[torch.Tensor], sinks: Optional[torch.Tensor],
               relative_query_bias: Optional[torch.Tensor], bias_gate: Optional[torch.Tensor],
               bias_uses_scaled_q: bool, max_distance: Optional[int],
               map_size: Optional[List[int]], kv_map_size: Optional[List[int]],
               window: Optional[List[int]], class_token: bool, num_buckets: Optional[int],
               bidirectional: Optional[bool], relative_order: str, sliding_window: int,
               softcap: Optional[float], out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    """posenc.attention with every option (posenc.torch.attention's
    arguments), its output new, in out_layout."""
    swapped = out_layout.lower() != layout.lower()
    out = q.new_empty(_output_shape(q, v, layout, out_layout), dtype=out_dtype or q.dtype) \
        if swapped else None
    sizes = {name: None if size is None else tuple(size)
             for name, size in (("map_size", map_size), ("kv_map_size", kv_map_size),
                                ("window", window))}
    result = attention(
        q, k, v, layout=layout, scale=scale, causal=causal, query_offset=query_offset,
              bias=bias, table=table, table_h=table_h, table_w=table_w, key_table=key_table,
              value_table=value_table, mask=mask, kv_lengths=kv_lengths, q_lengths=q_lengths,
              query_offsets=query_offsets, sinks=sinks, relative_query_bias=relative_query_bias,
              bias_gate=bias_gate, bias_uses_scaled_q=bias_uses_scaled_q,
              max_distance=max_distance, class_token=class_token, num_buckets=num_buckets,
              bidirectional=bidirectional, relative_order=relative_order,
              sliding_window=sliding_window, softcap=softcap, out_dtype=out_dtype,
              out=out.transpose(1, 2) if swapped else None, **sizes)
    return out if swapped else result


def compiling():
    """Whether torch.compile is tracing the call (its tensors are fake: the
    custom ops carry posenc's call into the graph)."""
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return is_compiling is not None and is_compiling()


def traced(tensors):
    """Whether a tracer or transform would miss a plain call on tensors (with
    torch 2.4 and later): torch.compile's Dynamo, torch.jit.trace, a dispatch
    mode (make_fx, pre-dispatch too, torch.export's non-strict tracing,
    FlopCounterMode), a torch function mode, torch.func's transforms, or
    tensors that are not plain (fake, functional or another subclass's).
    Before torch 2.4 there is no op to trace: false."""
    if not _CUSTOM_OPS:
        return False
    if compiling() or torch.jit.is_tracing() or \
            _python_dispatch.is_in_torch_dispatch_mode() or \
            torch._C._len_torch_function_stack() > 0 or \
            torch._C._functorch.peek_interpreter_stack() is not None:
        return True
    return any(type(t) not in _PLAIN for t in tensors)


def _op(name, function, fake):
    """function as the custom op posenc::name (its fake implementation
    `fake`), or function itself before torch 2.4."""
    if not _CUSTOM_OPS:
        return function
    op = torch.library.custom_op(f"posenc::{name}", mutates_args=())(function)
    op.register_fake(fake)
    return op


def _dispatching(op, function):
    """Calls op where a tracer would see the call (traced) and function
    itself elsewhere: torch's dispatch of a Python op costs tens of
    microseconds a call."""
    if op is function:
        return function

    @functools.wraps(function)
    def call(*args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        return (op if traced(tensors) else function)(*args, **kwargs)
    return call


def _attention_fake(*args, **kwargs):
    a = inspect.signature(_attention).bind(*args, **kwargs).arguments
    return a["q"].new_empty(_output_shape(a["q"], a["v"], a["layout"], a["out_layout"]),
                            dtype=a["out_dtype"] or a["q"].dtype)


def _attention_table_2d_fake(q, k, v, table, window, class_token, mask, scale, out_dtype):
    return q.new_empty(_output_shape(q, v, "bthd", "bthd"), dtype=out_dtype)


def _attention_2d_fake(q, k, v, table_h, table_w, scale, bias_uses_scaled_q, out_dtype,
                       query_minus_key=False, map_size=None, kv_map_size=None):
    return q.new_empty(_output_shape(q, v, "bthd", "bthd"), dtype=out_dtype)


def _bottleneck_fake(fmap, w_qkv, qkv_bias, rel_h, rel_w, heads, scale, bias_uses_scaled_q,
                     stride, out_dtype):
    batch, _, height, width = fmap.shape
    value_rows = w_qkv.shape[0] - 2 * heads * rel_h.shape[-1]
    return fmap.new_empty((batch, value_rows, height // stride, width // stride),
                          dtype=out_dtype)


# posenc.torch.attention's op (functional.py calls it where traced);
# the patched modules' calls.
attention_op = _op("attention", _attention, _attention_fake)
attention_2d = _dispatching(_op("attention_2d", _attention_2d, _attention_2d_fake),
                            _attention_2d)
attention_table_2d = _dispatching(
    _op("attention_table_2d", _attention_table_2d, _attention_table_2d_fake), _attention_table_2d)
bottleneck = _dispatching(_op("bottleneck", _bottleneck, _bottleneck_fake), _bottleneck)
