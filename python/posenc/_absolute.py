"""Absolute encodings (posenc/absolute.h): sinusoid tables, adding a sinusoid
or a learned table, concatenating a sinusoid, resizing a learned table of a
grid."""
import ctypes
import math

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


def _new_grid(old_size, new_size, scale_factor):
    """(new_size, scales) from one of new_size and scale_factor, as torch's
    interpolate takes them: a scale factor gives floor(old * scale) cells
    and is passed on (it sets the source coordinates too); 0 where the sizes
    give them."""
    if (new_size is None) == (scale_factor is None):
        raise ValueError("give one of new_size and scale_factor")
    if new_size is not None:
        return _abi.sizes(new_size, "new_size"), (0.0, 0.0)
    try:
        items = tuple(scale_factor)
    except TypeError:
        items = (scale_factor, scale_factor)
    if len(items) != 2:
        raise TypeError(f"scale_factor: expected a number or 2, got {scale_factor!r}")
    scales = tuple(_abi.real(s, "scale_factor") for s in items)
    if not all(math.isfinite(s) and s > 0 for s in scales):
        raise ValueError(f"scale_factor: must be positive and finite, got {scale_factor!r}")
    new = tuple(math.floor(n * s) for n, s in zip(old_size, scales))
    if min(new) < 1:
        raise ValueError(f"scale_factor: {scale_factor!r} leaves no cells of {old_size}")
    return new, scales


def resize_absolute_table_2d(table, new_size=None, old_size=None, prefix_tokens=1,
                             interpolation="bicubic", antialias=True, scale_factor=None,
                             out=None, context=None):
    """A learned table of a grid resized to another: timm's
    resample_abs_pos_embed(table, new_size, old_size, num_prefix_tokens,
    interpolation, antialias), with its defaults, or with scale_factor
    (a number or (height, width)) as DINOv2's interpolate_pos_encoding
    passes it to torch's interpolate. table [N, D] or a model's pos_embed
    [1, N, D] (float32): prefix_tokens rows copied, then the grid's cells
    row by row, old_size (height, width) of them (by default the square of
    N - prefix_tokens). The result has the table's rank. interpolate's
    recompute_scale_factor=True is new_size = floor(old * scale)."""
    tv = _tensor.dense(table, "table", (2, 3))
    if len(tv.shape) == 3 and tv.shape[0] != 1:
        raise ValueError(f"table: expected [N, D] or [1, N, D], got shape {list(tv.shape)}")
    rows, dim = tv.shape[-2:]
    prefix = _abi.count(prefix_tokens, "prefix_tokens")
    cells = rows - prefix
    if cells < 1:
        raise ValueError(f"prefix_tokens: {prefix} leaves no grid in the table's {rows} rows")
    if old_size is None:
        side = math.isqrt(cells)
        if side * side != cells:
            raise ValueError(f"old_size: the table's {cells} cells are no square; give it")
        old_size = (side, side)
    height, width = _abi.sizes(old_size, "old_size")
    if height * width != cells:
        raise ValueError(f"old_size: {height} x {width} is not the table's {cells} cells")
    (new_height, new_width), (height_scale, width_scale) = _new_grid((height, width), new_size,
                                                                     scale_factor)
    desc = _abi.AbsoluteResizeDesc()
    lib.posenc_absolute_resize_desc_init(ctypes.byref(desc), dim, height, width, new_height,
                                         new_width)
    desc.prefix_tokens = prefix
    desc.interpolation = _abi.enum_value(_abi.INTERPOLATION, interpolation, "interpolation")
    desc.antialias = _abi.flag(antialias, "antialias")
    desc.height_scale, desc.width_scale = height_scale, width_scale
    shape = tv.shape[:-2] + (prefix + new_height * new_width, dim)
    o = _tensor.output(out, table, shape, _abi.F32)
    check(lib.posenc_resize_absolute_table_2d(handle(context), ctypes.byref(desc), tv.ptr,
                                              o.ptr))
    return o.obj
