"""Absolute encodings (posenc/absolute.h): sinusoid tables, adding a sinusoid
or a learned table, concatenating a sinusoid."""
from . import _abi, _tensor
from ._lib import check, lib
from .context import handle


def _layout(layout):
    return _abi.enum_value(_abi.SINCOS_LAYOUT, layout, "layout")


def _table_output(out, dtype, shape):
    """A table's output: `out` (its own dtype, which a dtype given must be)
    or a new one of `dtype`."""
    like, code = _tensor.result_kind(dtype)
    if out is not None:
        out_code = _tensor.view(out, "out", kinds=_tensor.FLOATS).dtype
        if dtype is not None and code != out_code:
            raise TypeError(f"dtype: {dtype} is not out's dtype")
        return _tensor.output(out, None, shape, out_code)
    return _tensor.output(None, like, shape, code, dtype_argument="dtype")


def sinusoid_table(length, dim, start=0, base=10000.0, layout="interleaved", dtype=None,
                   out=None, context=None):
    """[length, dim] sinusoid for positions start ..; dtype a torch dtype for a
    torch result (float32 or bfloat16), else a numpy float32 array."""
    length, dim = _abi.count(length, "length"), _abi.count(dim, "dim")
    o = _table_output(out, dtype, (length, dim))
    start, base = _abi.integer(start, "start"), _abi.real(base, "base")
    layout_code = _layout(layout)
    check(lib.posenc_sinusoid_table(handle(context), length, dim, start, base, layout_code,
                                    o.dtype, o.ptr))
    return o.obj


def sinusoid_table_2d(height, width, dim, base=10000.0, layout="interleaved", dtype=None,
                      out=None, context=None):
    """[height*width, dim] 2D sin-cos table (token n = x*width + y)."""
    height, width = _abi.count(height, "height"), _abi.count(width, "width")
    dim = _abi.count(dim, "dim")
    o = _table_output(out, dtype, (height * width, dim))
    base, layout_code = _abi.real(base, "base"), _layout(layout)
    check(lib.posenc_sinusoid_table_2d(handle(context), height, width, dim, base, layout_code,
                                       o.dtype, o.ptr))
    return o.obj


def add_sinusoid(x, offset=0, base=10000.0, layout="interleaved", out=None, context=None):
    """x[B, T, D] + the sinusoid of positions offset ..; out=x works in place."""
    xv = _tensor.dense(x, "x", 3)
    o = _tensor.output(out, x, xv.shape, _abi.F32)
    offset, base = _abi.integer(offset, "offset"), _abi.real(base, "base")
    layout_code = _layout(layout)
    check(lib.posenc_add_sinusoid(handle(context), *xv.shape, offset, base, layout_code, xv.ptr,
                                  o.ptr))
    return o.obj


def add_learned(x, table, offset=0, out=None, context=None):
    """x[B, T, D] + table[offset : offset + T] for table [rows, D]."""
    xv = _tensor.dense(x, "x", 3)
    tv = _tensor.dense(table, "table", 2)
    if tv.shape[1] != xv.shape[2]:
        raise ValueError(f"table: expected {xv.shape[2]} columns (x's), got {tv.shape[1]}")
    o = _tensor.output(out, x, xv.shape, _abi.F32)
    offset = _abi.integer(offset, "offset")
    check(lib.posenc_add_learned(handle(context), *xv.shape, offset, tv.ptr, tv.shape[0],
                                 xv.ptr, o.ptr))
    return o.obj


def concat_sinusoid(x, pos_dim, offset=0, base=10000.0, layout="interleaved", out=None,
                    context=None):
    """[x, P] along the last axis: x[B, T, Dx] -> [B, T, Dx + pos_dim]."""
    xv = _tensor.dense(x, "x", 3)
    batch, tokens, x_dim = xv.shape
    pos_dim = _abi.count(pos_dim, "pos_dim")
    o = _tensor.output(out, x, (batch, tokens, x_dim + pos_dim), _abi.F32)
    offset, base = _abi.integer(offset, "offset"), _abi.real(base, "base")
    layout_code = _layout(layout)
    check(lib.posenc_concat_sinusoid(handle(context), batch, tokens, x_dim, pos_dim, offset,
                                     base, layout_code, xv.ptr, o.ptr))
    return o.obj
