"""Does a torch CUDA graph keep its cuBLAS workspace when the workspaces are cleared after its capture? The sequence
that broke bench_vs_torch's default setup (BERT / ConvNeXt b32 on an H100, 2026-11-23), reduced to split-K
GEMMs, which use cuBLAS's workspace:

  graph A captured (a GEMM);
  torch._C._cuda_clearCublasWorkspaces(): torch.compile(mode="reduce-overhead")'s cudagraph trees call it around
      every recording, so torch.compile's first call after A's capture does this;
  torch.cuda.empty_cache(); A replayed and compared with a float32 product.

  python3 bench/graph_streams_check.py uncleared  # graph_streams.capture(clear_workspaces=False), the failing
                                                  # pattern: A keeps the raw address of the workspace the warm-up
                                                  # cached in the caching allocator; the clear frees it, empty_cache
                                                  # unmaps it
  python3 bench/graph_streams_check.py cleared    # graph_streams.capture: the workspaces are cleared before the
                                                  # capture, which then allocates one inside A's private pool

Prints "graph A replay matches (max err E, mode M)" and exits 0, or exits 1 naming what went wrong (a CUDA error or a
wrong result); exits 3 where torch has no _cuda_clearCublasWorkspaces. Needs a CUDA GPU; no kilnrt.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_streams  # noqa: E402


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "cleared"
    if mode not in ("uncleared", "cleared"):
        sys.exit("usage: graph_streams_check.py uncleared|cleared")
    if not torch.cuda.is_available():
        sys.exit("graph_streams_check.py needs a CUDA GPU")
    if not hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        print("torch %s has no torch._C._cuda_clearCublasWorkspaces: nothing to check" % torch.__version__)
        sys.exit(3)
    clear_workspaces = mode == "cleared"
    torch.manual_seed(0)
    # tall-K products: cuBLAS picks split-K kernels that reduce through the workspace
    a = torch.randn(64, 16384, device="cuda", dtype=torch.float16)
    b = torch.randn(16384, 256, device="cuda", dtype=torch.float16)
    out = torch.empty(64, 256, device="cuda", dtype=torch.float16)
    graph = graph_streams.capture(lambda: torch.matmul(a, b, out=out), clear_workspaces=clear_workspaces)
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    want = torch.matmul(a.float(), b.float())
    try:
        for _ in range(3):
            out.zero_()
            graph.replay()
        torch.cuda.synchronize()
    except RuntimeError as e:
        print("graph A replay failed: %s (mode %s)" % (str(e).splitlines()[0], mode))
        sys.exit(1)
    err = float((out.float() - want).abs().max())
    tol = 2e-2 * float(want.abs().max())
    if not err <= tol:
        print("graph A replay is wrong: max err %.3g > %.3g (mode %s)" % (err, tol, mode))
        sys.exit(1)
    print("graph A replay matches (max err %.3g, mode %s)" % (err, mode))


if __name__ == "__main__":
    main()
