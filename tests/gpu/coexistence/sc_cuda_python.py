"""cuda-python's runtime API in the same process: cudaSetDevice(0) (makes the primary context current) and its own
stream; device memory from cudaMalloc on that stream is passed to kilnrt through __cuda_array_interface__ (out=
too), numpy I/O works, the runtime's current context is unchanged by every kilnrt call."""
import numpy as np

import common
import ctxcheck
from cai import DevArray


def run(r):
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart
        except ImportError as e:
            raise common.Skip("cuda-python is not installed: %s" % e)
    import kilnrt

    def ok(res, what):
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise AssertionError("%s failed: %r" % (what, err))
        return res[1] if isinstance(res, tuple) and len(res) > 1 else None

    ok(cudart.cudaSetDevice(0), "cudaSetDevice")
    stream = ok(cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking), "cudaStreamCreate")
    s0 = ctxcheck.state()
    if not s0[0]:
        raise AssertionError("cudaSetDevice did not make a context current")
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    common.check_numpy_io(kilnrt, engines)
    H2D, D2H = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
    for model, engine in engines.items():
        x = common.fixture_input(model, 2)
        ref = common.reference(model, x)
        px = ok(cudart.cudaMalloc(x.nbytes), "cudaMalloc")
        py_ = ok(cudart.cudaMalloc(ref.nbytes), "cudaMalloc")
        ok(cudart.cudaMemcpyAsync(px, x.ctypes.data, x.nbytes, H2D, stream), "cudaMemcpyAsync")
        ok(cudart.cudaMemsetAsync(py_, 0xff, ref.nbytes, stream), "cudaMemsetAsync")
        ok(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        dx, dy = DevArray(px, x.shape, int(stream)), DevArray(py_, ref.shape, int(stream))
        try:
            common.kcall("%s CAI out=" % model, engine, dx, out=dy)
        except (TypeError, kilnrt.Error) as e:
            if isinstance(e, TypeError) or common._interop_missing(e) or "cuda_array_interface" in str(e):
                r.partial("__cuda_array_interface__ input/out= not accepted (%s: %s)" % (
                    type(e).__name__, str(e).splitlines()[0][:100]))
                continue
            raise
        ok(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        ok(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize")
        host = np.empty_like(ref)
        ok(cudart.cudaMemcpy(host.ctypes.data, py_, ref.nbytes, D2H), "cudaMemcpy")
        common.check_close(host, ref, "%s CAI out=" % model)
        ok(cudart.cudaFree(px), "cudaFree")
        ok(cudart.cudaFree(py_), "cudaFree")
    if ctxcheck.state() != s0:
        raise AssertionError("the runtime's context changed")
    err, dev = cudart.cudaGetDevice()
    if int(err) != 0 or dev != 0:
        raise AssertionError("cudaGetDevice: %r %r" % (err, dev))
    ok(cudart.cudaStreamDestroy(stream), "cudaStreamDestroy")


common.main(run)
