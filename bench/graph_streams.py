"""torch CUDA graph captures for the benchmarks that keep their cuBLAS workspace.

torch (2.11) caches one cuBLAS workspace per (handle, stream). A graph captured on a stream whose workspace is already
cached (by a warm-up on that stream, or by an earlier capture) bakes that workspace's raw address into its GEMM nodes
without owning it. torch._C._cuda_clearCublasWorkspaces() then frees it while the graph lives: torch.compile's
cudagraph trees call it around every recording, and destroying any graph drops the workspace of the stream it was
captured on (pytorch/pytorch#193402). The freed block goes back to the caching allocator, which reuses or unmaps it.
In bench_vs_torch's default setup, BERT and ConvNeXt b32's torch graph, captured just before torch.compile's, failed at
its first replay with CUDA_ERROR_LAUNCH_FAILED, and every later call of every callable (kilnrt's included) with it
(H100, 2026-11-23; bench/results/zoo_vs_torch_h100_2026-11-23.md).

capture() clears the cached workspaces right before the capture, as the cudagraph trees do, so that the capture
allocates its workspace inside the graph's private pool, where a later clear cannot give it away. Each capture also
gets a stream of its own, created with cudaStreamCreateWithFlags outside torch's pool of 32 streams per device (from
which torch.cuda.graph's class-wide default capture stream and torch.compile's streams come), so that no other graph is
ever captured, and destroyed, on it. bench/graph_streams_check.py reproduces the failure and checks the cure.
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
            _cudart = lib
            break
    return _cudart


def own_stream():
    """A new torch.cuda.ExternalStream on the current device that is not one of torch's pool streams.

    The raw stream is never destroyed (a benchmark makes a few dozen), so graphs captured on it stay valid."""
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


def capture(fn, stream=None, warmup=3, clear_workspaces=True):
    """A torch.cuda.CUDAGraph of fn captured on `stream` (default: a new own_stream()), after `warmup` eager calls on
    that same stream. clear_workspaces=False leaves the cached cuBLAS workspaces as they are (the failing pattern:
    graph_streams_check.py's control)."""
    s = stream if stream is not None else own_stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    s.synchronize()
    # the capture allocates its own workspace inside the graph's private pool (the module's docstring says why)
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear_workspaces and clear is not None:
        clear()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    return g
