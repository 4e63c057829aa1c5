"""CUDA streams of their own for the benchmarks' torch CUDA graph captures.

Why: torch caches one cuBLAS workspace per (handle, stream), and destroying any torch.cuda.CUDAGraph drops the cached
workspace of the stream it was captured on, although other live graphs captured on that stream still hold its raw
address (pytorch/pytorch#193402). `with torch.cuda.graph(g):` captures on one class-wide stream taken from torch's
pool (32 per device, handed out round robin, so torch.compile's cudagraph trees and any `torch.cuda.Stream()` may
get the same one). In bench_vs_torch's default setup the library floor captures and destroys dozens of graphs after
each batch; at b32 torch's own model graph then replayed onto a freed workspace: CUDA_ERROR_LAUNCH_FAILED in every
callable after it (session 19, BERT and ConvNeXt b32 on the H100).

Here every capture gets a stream that no one else captures on: created with cudaStreamCreateWithFlags (non-blocking),
outside torch's pool, and wrapped as torch.cuda.ExternalStream. The warm-up runs on that same stream, so its cuBLAS
workspace is allocated eagerly, outside the graph's private pool, before the capture.
"""
import ctypes

import torch

_CUDA_STREAM_NON_BLOCKING = 1
_cudart = None


def _runtime():
    """The CUDA runtime torch loaded (found by its soname), or None if no name matches."""
    global _cudart
    if _cudart is None:
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            lib.cudaStreamCreateWithFlags.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
            lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]
            _cudart = lib
            break
    return _cudart


def own_stream():
    """A new torch.cuda.ExternalStream on the current device that is not one of torch's pool streams.

    The caller keeps it as long as any graph captured on it lives (the raw stream is not destroyed: a benchmark makes
    a few dozen)."""
    torch.cuda.init()
    lib = _runtime()
    handle = ctypes.c_void_p()
    if lib is not None:
        err = lib.cudaStreamCreateWithFlags(ctypes.byref(handle), _CUDA_STREAM_NON_BLOCKING)
        if err != 0:
            raise RuntimeError("cudaStreamCreateWithFlags failed with CUDA error %d" % err)
    else:  # torch's own runtime bindings: a blocking stream (torch and kilnrt never use the legacy stream)
        out = torch.zeros(1, dtype=torch.int64)
        err = torch.cuda.cudart().cudaStreamCreate(out.data_ptr())
        if int(getattr(err, "value", err)) != 0:
            raise RuntimeError("cudaStreamCreate failed: %s" % err)
        handle = ctypes.c_void_p(int(out.item()))
    return torch.cuda.ExternalStream(handle.value)


def capture(fn, stream=None, warmup=3):
    """A torch.cuda.CUDAGraph of fn captured on `stream` (default: a new own_stream()), after `warmup` eager calls on
    that same stream. Returns (graph, stream); keep both alive while the graph is replayed."""
    s = stream if stream is not None else own_stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    return g, s
