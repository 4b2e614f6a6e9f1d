"""torch tensors and numpy arrays as posenc sees them: data pointer, posenc
dtype, shape, element strides; outputs made or checked.

torch is never imported here: a torch tensor can only exist once the caller
has imported it, so numpy alone serves the functions without tensors.
"""
import ctypes
import math
import sys

import numpy as np

from . import _abi

_NUMPY_DTYPES = {np.dtype(np.float32): _abi.F32, np.dtype(np.int32): "int32",
                 np.dtype(np.int64): "int64"}


def torch_module():
    """torch, imported by the caller (a torch tensor exists)."""
    return sys.modules["torch"]


def is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def is_torch_dtype(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.dtype)


def forward_ad_level():
    """Whether a level of torch.autograd.forward_ad is in force (only then
    can a tensor carry a tangent)."""
    return torch_module().autograd.forward_ad._current_level >= 0


def refuse_gradient(x, name):
    """A RuntimeError naming x if autograd would record a call on it (grad
    mode on and x requiring grad): posenc computes no gradients."""
    if x.requires_grad and torch_module().is_grad_enabled():
        raise RuntimeError(f"{name}: requires grad, and posenc computes no gradients: "
                           "call it under torch.no_grad() or torch.inference_mode(), "
                           "or pass a detached tensor")


def has_tangent(x):
    """Whether torch tensor x carries a forward-mode tangent (a dual tensor
    of torch.autograd.forward_ad's level in force), which posenc would drop.
    Outside a level none can (unpack_dual answers so without asking)."""
    return forward_ad_level() and \
        torch_module().autograd.forward_ad.unpack_dual(x).tangent is not None


def storage_address(x):
    """x.data_ptr() (0 for an empty tensor without storage), or None for a
    tensor whose elements are not in memory of its own: one of a torch.func
    (functorch) transform, such as vmap's batched tensors, and one with
    elements and data_ptr 0 (a __torch_dispatch__ wrapper subclass's on
    older torch, an efficient zero tensor's)."""
    try:
        address = x.data_ptr()
    except RuntimeError:
        return None
    return None if address == 0 and x.numel() > 0 else address


_torch_dtype_codes = None


def _torch_dtypes():
    global _torch_dtype_codes
    if _torch_dtype_codes is None:
        torch = torch_module()
        _torch_dtype_codes = {torch.float32: _abi.F32, torch.bfloat16: _abi.BF16,
                              torch.int32: "int32", torch.int64: "int64"}
    return _torch_dtype_codes


# The address an empty tensor without storage is passed as: aligned for any
# element, and never read or written (it has no elements).
_NOWHERE_BUFFER = ctypes.c_int64()
_NOWHERE = ctypes.addressof(_NOWHERE_BUFFER)


class View:
    """One tensor or array: obj (kept alive), ptr, dtype (posenc F32/BF16,
    "int32"/"int64", or None for any other), shape and strides in elements."""

    __slots__ = ("obj", "ptr", "dtype", "shape", "strides", "contiguous", "negated")

    def __init__(self, x, name):
        if is_torch(x):
            self._see_tensor(x, name, torch_module())
        elif isinstance(x, np.ndarray):
            dtype = _NUMPY_DTYPES.get(x.dtype)
            if any(s % x.itemsize for s in x.strides):
                raise ValueError(f"{name}: strides not a multiple of the element size")
            self.obj, self.dtype, self.shape, self.negated = x, dtype, x.shape, False
            self.ptr = x.ctypes.data
            self.strides = tuple(s // x.itemsize for s in x.strides)
            self.contiguous = _row_major(x.shape, self.strides)
        else:
            raise TypeError(f"{name}: expected a torch tensor or a numpy array, "
                            f"got {type(x).__name__}")
        if 0 in self.shape:
            # No element is ever reached by a stride: given the dense ones,
            # where numpy may give 0 (which reads as a broadcast axis).
            self.strides = _dense_strides(self.shape)

    def _see_tensor(self, x, name, torch):
        # A tensor with torch's negative bit (a lazy negation, such as a
        # complex tensor's conj().imag) holds the values before it in memory:
        # an input is read from a copy with the negation done (obj), an
        # output is refused (writable).
        self.negated = x.is_neg()
        if self.negated:
            x = x.resolve_neg()
        if not x.is_cpu:
            raise ValueError(f"{name}: posenc runs on the CPU, got a {x.device} tensor")
        if x.layout != torch.strided:
            raise TypeError(f"{name}: expected a strided (dense) tensor, got {x.layout}")
        refuse_gradient(x, name)
        if has_tangent(x):
            raise RuntimeError(f"{name}: has a forward-mode tangent (a dual tensor), and "
                               "posenc computes no derivatives: pass its primal "
                               "(torch.autograd.forward_ad.unpack_dual(x).primal)")
        address = storage_address(x)
        if address is None:
            raise TypeError(f"{name}: a tensor without storage of its own (a torch.func "
                            "transform's, such as vmap's, or a tensor subclass's), which "
                            "posenc cannot read")
        # Only an empty tensor has no storage (data_ptr 0), which posenc
        # would read as an optional tensor not given.
        self.obj, self.dtype, self.shape = x, _torch_dtypes().get(x.dtype), tuple(x.shape)
        self.ptr = address or _NOWHERE
        self.strides = x.stride()
        self.contiguous = x.is_contiguous()

    @classmethod
    def of_new(cls, obj, shape, dtype, ptr, strides):
        """The View of a dense output made here (obj: the array or CPU
        tensor, None where it is not made), of posenc dtype `dtype`, at ptr
        (0: nowhere) with element strides: nothing about it needs checking."""
        v = cls.__new__(cls)
        v.obj, v.dtype, v.shape, v.negated, v.contiguous = obj, dtype, tuple(shape), False, True
        v.ptr, v.strides = ptr or _NOWHERE, strides
        return v

    @classmethod
    def unmade(cls, shape, dtype):
        """A dense View of `shape` and posenc dtype that is not made (a dense
        copy of an input, or an output): what a workspace size depends on
        (ptr reaches no memory)."""
        return cls.of_new(None, shape, dtype, 0, _dense_strides(shape))

    @classmethod
    def unallocated(cls, shape, dtype, like):
        """The output output(None, like, shape, dtype) would make, unmade."""
        _require_result_kind(like, dtype, "out_dtype")
        return cls.unmade(shape, dtype)


def _dense_strides(shape):
    """The element strides of a row-major array of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _row_major(shape, strides):
    """Dense in row-major order, the strides of size-1 axes aside (as torch's
    is_contiguous, which also calls any tensor without elements dense)."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


# The element types a tensor argument takes.
F32_ONLY = (_abi.F32,)
FLOATS = (_abi.F32, _abi.BF16)
INDICES = ("int32", "int64")
_KIND_NAMES = {_abi.F32: "float32", _abi.BF16: "bfloat16", "int32": "int32", "int64": "int64"}


def view(x, name, ndim=None, kinds=F32_ONLY, kinds_text=None):
    """A View of x, checking its rank and element type (one of `kinds`;
    kinds_text: what the error says the argument takes, if not their names)."""
    v = View(x, name)
    if ndim is not None and len(v.shape) not in ((ndim,) if isinstance(ndim, int) else ndim):
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {list(v.shape)}")
    if v.dtype not in kinds:
        takes = kinds_text or " or ".join(_KIND_NAMES[k] for k in kinds)
        raise TypeError(f"{name}: expected {takes}, got {x.dtype}")
    return v


def dense(x, name, ndim=None, kinds=F32_ONLY, kinds_text=None):
    """A View of x in dense row-major order: x itself, or a contiguous copy
    for the functions whose C ABI takes no strides."""
    v = view(x, name, ndim, kinds, kinds_text)
    if v.contiguous:
        return v
    return view(contiguous_copy(x, name), name, ndim, kinds, kinds_text)


def contiguous_copy(x, name):
    """A row-major copy of a torch tensor or numpy array, or the error of one
    the allocator cannot make, naming it."""
    try:
        return x.contiguous() if is_torch(x) else np.ascontiguousarray(x)
    except (MemoryError, RuntimeError, ValueError) as error:
        itemsize = x.element_size() if is_torch(x) else x.itemsize
        unmade = _unmade(f"{name}: a dense copy", tuple(x.shape), itemsize, error)
        # torch raises a RuntimeError for a size past int64 and for one its
        # allocator cannot allocate; another is not about the copy's memory.
        if (isinstance(error, RuntimeError) and isinstance(unmade, MemoryError)
                and "allocate" not in str(error)):
            raise
        raise unmade from error


def expect_shape(v, shape, name):
    if tuple(v.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(v.shape)}")


def expect_table(v, rows, columns, heads, name, rows_rule):
    """A table the C ABI reads by its sizes alone: [rows, columns], or per
    head [heads, rows, columns]; rows_rule says where `rows` comes from."""
    shape = tuple(v.shape)
    if shape[-2:] != (rows, columns) or (len(shape) == 3 and shape[0] != heads):
        raise ValueError(f"{name}: expected [{rows}, {columns}] or [{heads}, {rows}, "
                         f"{columns}] ({rows_rule}), got {list(shape)}")


def writable(v, name):
    """v, a caller's output: refused if it is a read-only numpy array, or a
    torch tensor that torch would not let an in-place op write (an inference
    tensor outside inference mode). A torch tensor's version counter is
    bumped, as torch's in-place ops do, so that autograd refuses a backward
    through values saved before posenc overwrote them."""
    if isinstance(v.obj, np.ndarray) and not v.obj.flags.writeable:
        raise ValueError(f"{name}: read-only array")
    if v.negated:
        raise ValueError(f"{name}: a tensor with torch's negative bit (a lazy negation) is "
                         "not written in place: pass one without it (resolve_neg())")
    if is_torch(v.obj):
        try:
            write_in_place(v.obj)
        except RuntimeError as error:
            raise RuntimeError(f"{name}: {error}") from None
    return v


def write_in_place(x):
    """Does to torch tensor x what an in-place op writing it does: torch's
    checks (RuntimeError where it would refuse the write) and the version
    bump, by an in-place op on no element; an inference tensor in inference
    mode has no version to bump."""
    if not (x.is_inference() and torch_module().is_inference_mode_enabled()):
        x.as_strided((0,), (1,)).zero_()


def workspace_buffer(workspace):
    """(pointer, bytes, keep) of a caller's workspace: a bytearray, or a
    dense, writable numpy array or CPU torch tensor; (None, 0, None) for
    none. keep must stay referenced until the call returns: for a bytearray
    it holds the buffer's export, without which another thread could resize
    (and free) it while posenc writes there."""
    if workspace is None:
        return None, 0, None
    if isinstance(workspace, bytearray):
        keep = (ctypes.c_char * len(workspace)).from_buffer(workspace)
        return ctypes.addressof(keep), len(workspace), keep
    if is_torch(workspace):
        # As an output: on the CPU, not requiring grad in grad mode, and
        # written as by an in-place op.
        v = View(workspace, "workspace")
        if not v.contiguous:
            raise ValueError("workspace: must be a contiguous CPU tensor")
        writable(v, "workspace")
        return workspace.data_ptr(), workspace.numel() * workspace.element_size(), workspace
    if isinstance(workspace, np.ndarray):
        if not workspace.flags.c_contiguous or not workspace.flags.writeable:
            raise ValueError("workspace: must be a contiguous, writable array")
        if workspace.dtype.hasobject:  # posenc's writes would corrupt its objects
            raise TypeError(f"workspace: an array of {workspace.dtype} holds Python objects")
        return workspace.ctypes.data, workspace.nbytes, workspace
    raise TypeError(f"workspace: expected a bytearray, a numpy array or a torch tensor, "
                    f"got {type(workspace).__name__}")


def dtype_code(dtype, argument="dtype"):
    """posenc's dtype for a torch or numpy dtype, or a name."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        return _abi.enum_value({"float32": _abi.F32, "bfloat16": _abi.BF16}, dtype, argument)
    if is_torch_dtype(dtype):
        code = _torch_dtypes().get(dtype)
    else:
        try:
            code = _NUMPY_DTYPES.get(np.dtype(dtype))
        except TypeError:  # not a dtype at all
            code = None
    if code not in (_abi.F32, _abi.BF16):
        raise TypeError(f"{argument}: {dtype} is not float32 or bfloat16")
    return code


def output(out, like, shape, dtype, name="out", dtype_argument="out_dtype"):
    """The output View: `out` checked (dense, the shape and dtype), or a new
    tensor of the kind of `like` (torch tensor or numpy array; None: numpy;
    dtype_argument: the argument that asked for bfloat16)."""
    if out is not None:
        v = writable(view(out, name, kinds=FLOATS), name)
        expect_shape(v, shape, name)
        if v.dtype != dtype:
            raise TypeError(f"{name}: expected dtype {'bfloat16' if dtype else 'float32'}, "
                            f"got {out.dtype}")
        if not v.contiguous:
            raise ValueError(f"{name}: must be dense (row-major contiguous)")
        return v
    _require_result_kind(like, dtype, dtype_argument)
    if like is not None and is_torch(like):
        torch = torch_module()
        torch_dtype = torch.bfloat16 if dtype == _abi.BF16 else torch.float32
        try:
            x = torch.empty(shape, dtype=torch_dtype, device="cpu")
        except (RuntimeError, TypeError) as error:
            raise _unmade(f"{name}: a result", shape, _itemsize(dtype), error) from error
        address = storage_address(x)
        if address is None:
            raise TypeError(f"{name}: torch made a result without memory of its own (under a "
                            "fake or dispatch mode?), which posenc cannot write")
        return View.of_new(x, x.shape, dtype, address, x.stride())
    x = new_array(shape, f"{name}: a result")
    return View.of_new(x, x.shape, dtype, x.ctypes.data, _dense_strides(x.shape))


def new_array(shape, what):
    """A new float32 numpy array, or the error of one the allocator cannot
    make, naming `what` it is."""
    try:
        return np.empty(shape, dtype=np.float32)
    except (MemoryError, ValueError) as error:
        raise _unmade(what, shape, 4, error) from error


def _itemsize(dtype):
    return 2 if dtype == _abi.BF16 else 4


def _unmade(what, shape, itemsize, error):
    """The error of a tensor the allocator did not make (torch and numpy say
    it in several ways, none naming the argument): a ValueError where its
    bytes, or an empty one's strides, pass int64, else a MemoryError."""
    size = math.prod(shape) * itemsize
    text = f"{what} of shape {list(shape)} ({size} bytes)"
    if size >= 1 << 63:
        return ValueError(f"{text} is larger than any memory")
    if math.prod(max(n, 1) for n in shape) * itemsize >= 1 << 63:
        return ValueError(f"{text} has strides past int64")
    return MemoryError(f"{text} could not be allocated: {error}")


def _require_result_kind(like, dtype, dtype_argument):
    """A result of the kind of `like` can hold dtype: numpy has no bfloat16."""
    if dtype == _abi.BF16 and not (like is not None and is_torch(like)):
        raise TypeError(f"{dtype_argument}: bfloat16 results need torch (numpy has no "
                        "bfloat16): pass torch tensors")


def result_kind(dtype):
    """For functions without tensor inputs: a torch dtype asks for a torch
    result, anything else for numpy. Returns (`like` for output(), code)."""
    if is_torch_dtype(dtype):
        return torch_module().empty(0, device="cpu"), dtype_code(dtype)
    return None, dtype_code(dtype if dtype is not None else "float32")
