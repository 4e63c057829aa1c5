"""A user context made with cuCtxCreate (what pycuda's make_context / autoinit do), current around kilnrt calls:
numpy I/O works and the user context stays current with the same stack depth (invariant 1: no cudaSetDevice); a
device pointer allocated in that context is refused with kilnrt's clear error naming the user-created context
(invariant 2), never "invalid resource handle" or silent zeros. Then the user context pushed on top of torch's
primary context (stack depth 2) around kilnrt calls."""
import numpy as np

import common
import ctxcheck
from cai import DevArray


def run(r):
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu
        except ImportError as e:
            raise common.Skip("cuda-python is not installed: %s" % e)
    import kilnrt

    def ok(res, what):
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise AssertionError("%s failed: %r" % (what, err))
        return res[1] if isinstance(res, tuple) and len(res) > 1 else None

    ok(cu.cuInit(0), "cuInit")
    dev = ok(cu.cuDeviceGet(0), "cuDeviceGet")
    try:
        user = ok(cu.cuCtxCreate(None, 0, dev), "cuCtxCreate")  # CUDA 13 bindings: (params, flags, dev)
    except TypeError:
        user = ok(cu.cuCtxCreate(0, dev), "cuCtxCreate")  # CUDA 12 bindings: (flags, dev)
    s_user = ctxcheck.state()
    if s_user[0] != int(user):
        raise AssertionError("cuCtxCreate did not make the user context current: %s" % ctxcheck.describe(s_user))
    r.note("user context current, depth %d" % s_user[1])
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    common.check_numpy_io(kilnrt, engines, tag=" (user ctx)")

    # Memory of the user context: a clear error.
    model = "transformer_encoder_layer"
    x = common.fixture_input(model, 2)
    ref = common.reference(model, x)
    px = ok(cu.cuMemAlloc(x.nbytes), "cuMemAlloc")
    py_ = ok(cu.cuMemAlloc(ref.nbytes), "cuMemAlloc")
    ok(cu.cuMemcpyHtoD(px, x.ctypes.data, x.nbytes), "cuMemcpyHtoD")
    try:
        common.kcall("user-context pointer", engines[model], DevArray(int(px), x.shape), out=DevArray(int(py_), ref.shape))
    except kilnrt.Error as e:
        text = str(e)
        if "context" not in text.lower() or "invalid resource handle" in text.lower():
            raise AssertionError("unclear error for user-context memory: %s" % text)
        r.note("user-ctx pointer refused: " + text.splitlines()[0][:140])
    except TypeError as e:
        r.partial("device tensors not accepted here (%s): the user-context pointer error was not observed" %
                  str(e).splitlines()[0][:100])
    else:
        raise AssertionError("a pointer from a user-created context was accepted")
    ok(cu.cuMemFree(px), "cuMemFree")
    ok(cu.cuMemFree(py_), "cuMemFree")
    if ctxcheck.state() != s_user:
        raise AssertionError("the user context state changed")

    # Depth 2: the user context pushed on top of torch's primary context.
    popped = ok(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
    try:
        import torch
        torch.zeros(1, device="cuda")  # torch makes the primary context current (stack depth 1)
        ok(cu.cuCtxPushCurrent(popped), "cuCtxPushCurrent")
        s2 = ctxcheck.state()
        r.note("stack with user ctx over torch's primary: depth %d" % s2[1])
        common.check_numpy_io(kilnrt, engines, tag=" (user ctx over primary)")
        if ctxcheck.state() != s2:
            raise AssertionError("stack changed")
        ok(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
    except ImportError:
        r.note("torch missing: depth-2 case not run")
    ok(cu.cuCtxDestroy(popped), "cuCtxDestroy")
    common.check_numpy_io(kilnrt, engines, tag=" (after destroy)")


common.main(run)
