"""Contexts (ISA path and thread count) and the default one each call uses."""
import ctypes
import sys
import threading

from . import _abi
from ._lib import Handle, check, lib


class Context(Handle):
    """posenc_context: the ISA path ("auto", "avx2", ...) and thread count
    (0: OpenMP's default) of the calls made with it."""

    _destroy = "posenc_context_destroy"

    def __init__(self, num_threads=0, isa="auto"):
        handle = ctypes.c_void_p()
        check(lib.posenc_context_create(_abi.enum_value(_abi.ISA, isa, "isa"),
                                        _abi.integer(num_threads, "num_threads", 32),
                                        ctypes.byref(handle)))
        super().__init__(handle)
        self._requested_isa = isa  # "auto" stays auto where a pickle is loaded

    @property
    def isa(self):
        return lib.posenc_isa_name(lib.posenc_context_isa(self._handle)).decode()

    @property
    def num_threads(self):
        return lib.posenc_context_num_threads(self._handle)

    def __repr__(self):
        return f"posenc.Context(num_threads={self.num_threads}, isa={self.isa!r})"

    def __reduce__(self):
        return Context, (self.num_threads, self._requested_isa)


_lock = threading.Lock()
_by_threads = {}
_override = None


def set_default_context(context):
    """Makes every call without a context= argument use `context`; None goes
    back to following torch's thread count."""
    global _override
    _override = None if context is None else _expect_context(context)


def default_context():
    """The context of calls given none: the one set by set_default_context,
    else one with torch.get_num_threads() threads once torch is imported (so
    posenc follows torch.set_num_threads; at most posenc's maximum), else
    OpenMP's default."""
    if _override is not None:
        return _override
    torch = sys.modules.get("torch")
    threads = min(torch.get_num_threads(), _abi.MAX_THREADS) if torch is not None else 0
    context = _by_threads.get(threads)  # made once a thread count, never replaced
    if context is not None:
        return context
    with _lock:
        context = _by_threads.get(threads)
        if context is None:
            context = _by_threads[threads] = Context(threads)
        return context


def _expect_context(context):
    """context, or a TypeError naming the argument when it is no Context."""
    if not isinstance(context, Context):
        raise TypeError(f"context: expected a posenc.Context, got {type(context).__name__}")
    return context


def handle(context):
    """What a C call takes for a context argument (None: the default): the
    Context itself, which ctypes passes as its handle; an argument of the
    call, it outlives the call even when another thread sets a new default
    meanwhile."""
    return _expect_context(context if context is not None else default_context())
