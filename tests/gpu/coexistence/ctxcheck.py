"""The calling thread's CUDA context state, read with the driver API (docs/architecture.md, invariant 1).

    import ctxcheck
    with ctxcheck.unchanged("engine(x)"):
        y = engine(x)
    y = ctxcheck.call("engine(x)", engine, x)       # the same, as a call

`state()` is (current context handle as an int, context-stack depth). The depth is measured by popping every
context of the calling thread into a list and pushing them back in order, so the stack is left as it was.

cuda-python's driver bindings are used (`cuda.bindings.driver`, or the older `cuda.cuda`); without cuda-python the
same calls go through ctypes on libcuda.so.1, so the suite also runs on boxes without cuda-python.
"""
import contextlib
import ctypes
import os
import threading

CHECKS = {"count": 0}
_lock = threading.Lock()
_backend = None


class ContextChanged(AssertionError):
    pass


class _CudaPython:
    name = "cuda-python"

    def __init__(self):
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            from cuda import cuda as cu  # cuda-python < 12.6
        self.cu = cu
        self._ok(cu.cuInit(0), "cuInit")

    def _ok(self, result, what):
        err = result[0] if isinstance(result, tuple) else result
        if int(err) != 0:
            raise RuntimeError("%s failed: %r" % (what, err))
        return result[1:] if isinstance(result, tuple) else ()

    def get_current(self):
        (ctx,) = self._ok(self.cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
        return ctx, int(ctx) if ctx is not None else 0

    def pop(self):
        (ctx,) = self._ok(self.cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
        return ctx

    def push(self, ctx):
        self._ok(self.cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")


class _Ctypes:
    name = "ctypes(libcuda.so.1)"

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._check(self.lib.cuInit(0), "cuInit")

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s failed: CUresult %d" % (what, rc))

    def get_current(self):
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        return ctx, ctx.value or 0

    def pop(self):
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctx)), "cuCtxPopCurrent")
        return ctx

    def push(self, ctx):
        self._check(self.lib.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")


class _Fake:
    """KILNRT_COEX_FAKE_GPU=1 (plumbing self-test of the runner on machines without a GPU): a per-thread stack."""
    name = "fake"

    def __init__(self):
        self.tls = threading.local()

    def _stack(self):
        if not hasattr(self.tls, "stack"):
            self.tls.stack = []
        return self.tls.stack

    def get_current(self):
        s = self._stack()
        return (s[-1] if s else 0), (s[-1] if s else 0)

    def pop(self):
        return self._stack().pop()

    def push(self, ctx):
        self._stack().append(ctx)


def backend():
    """The driver-API binding in use (initialises the driver with cuInit on first use)."""
    global _backend
    with _lock:
        if _backend is None and os.environ.get("KILNRT_COEX_FAKE_GPU") == "1":
            _backend = _Fake()
        if _backend is None:
            try:
                _backend = _CudaPython()
            except ImportError:
                _backend = _Ctypes()
        return _backend


def current():
    """The calling thread's current context as an int handle (0: none)."""
    return backend().get_current()[1]


def state():
    """(current context handle, context-stack depth) of the calling thread; the stack is restored."""
    b = backend()
    _, handle = b.get_current()
    popped = []
    try:
        while True:
            _, h = b.get_current()
            if not h:
                break
            popped.append(b.pop())
            if len(popped) > 64:
                raise RuntimeError("context stack deeper than 64: refusing to go on")
    finally:
        for ctx in reversed(popped):
            b.push(ctx)
    return handle, len(popped)


def describe(s):
    return "current=%s depth=%d" % (hex(s[0]) if s[0] else "none", s[1])


@contextlib.contextmanager
def unchanged(label):
    """Asserts that the block leaves the calling thread's current context and stack depth as they were (also when
    the block raises: the exception propagates, a context change is reported first)."""
    before = state()
    failed = False
    try:
        yield before
    except BaseException:
        failed = True
        after = state()
        if after != before:
            raise ContextChanged("%s (raised) changed the caller's CUDA context: before %s, after %s" % (
                label, describe(before), describe(after)))
        raise
    finally:
        if not failed:
            after = state()
            with _lock:
                CHECKS["count"] += 1
            if after != before:
                raise ContextChanged("%s changed the caller's CUDA context: before %s, after %s" % (
                    label, describe(before), describe(after)))


def call(label, fn, *args, **kwargs):
    """fn(*args, **kwargs) under `unchanged(label)`; returns its result."""
    with unchanged(label):
        return fn(*args, **kwargs)


def checks():
    return CHECKS["count"]
