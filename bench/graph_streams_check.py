"""Does a torch CUDA graph survive other graphs being captured and destroyed after it? The sequence of
bench_vs_torch's default setup, reduced to split-K GEMMs (which use cuBLAS's workspace):

  graph A (the model's graph) captured; graph B (a library-floor graph) captured, replayed and destroyed;
  torch.cuda.empty_cache(); other allocations come and go; A replayed and compared with eager.

  python3 bench/graph_streams_check.py shared   # every capture on torch's class-wide default capture stream
  python3 bench/graph_streams_check.py own      # each capture on a stream of its own (graph_streams.capture)

Prints "graph A replay matches eager (max err E)" and exits 0, or exits 1 naming what went wrong (a CUDA error, or
a wrong result). `shared` is pytorch/pytorch#193402's pattern: B's destruction drops the workspace A still uses.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_streams  # noqa: E402


def shared_capture(fn):
    """bench_vs_torch's capture before session 20: warm-up on the capture stream, then torch.cuda.graph(g)."""
    if torch.cuda.graph.default_capture_stream is None:  # as torch.cuda.graph.__init__ makes it
        torch.cuda.graph.default_capture_stream = torch.cuda.Stream()
    s = torch.cuda.graph.default_capture_stream
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "own"
    if mode not in ("shared", "own"):
        sys.exit("usage: graph_streams_check.py shared|own")
    if not torch.cuda.is_available():
        sys.exit("graph_streams_check.py needs a CUDA GPU")
    capture = shared_capture if mode == "shared" else (lambda fn: graph_streams.capture(fn)[0])
    torch.manual_seed(0)
    # tall-K products: cuBLAS picks split-K kernels that reduce through the workspace
    a = torch.randn(64, 16384, device="cuda", dtype=torch.float16)
    b = torch.randn(16384, 256, device="cuda", dtype=torch.float16)
    out_a = torch.empty(64, 256, device="cuda", dtype=torch.float16)
    graph_a = capture(lambda: torch.matmul(a, b, out=out_a))
    for rounds in range(3):
        c = torch.randn(32, 32768, device="cuda", dtype=torch.float16)
        d = torch.randn(32768, 128, device="cuda", dtype=torch.float16)
        graph_b = capture(lambda: torch.matmul(c, d))
        graph_b.replay()
        torch.cuda.synchronize()
        del graph_b, c, d
        torch.cuda.empty_cache()
        churn = [torch.empty(1 << 22, device="cuda") for _ in range(8)]  # other memory comes and goes
        del churn
        torch.cuda.empty_cache()
    want = torch.matmul(a.float(), b.float())
    try:
        out_a.zero_()
        graph_a.replay()
        torch.cuda.synchronize()
    except RuntimeError as e:
        print("graph A replay failed: %s" % str(e).splitlines()[0])
        sys.exit(1)
    err = float((out_a.float() - want).abs().max())
    tol = 2e-2 * float(want.abs().max())
    if not err <= tol:
        print("graph A replay is wrong: max err %.3g > %.3g" % (err, tol))
        sys.exit(1)
    print("graph A replay matches eager (max err %.3g, mode %s)" % (err, mode))


if __name__ == "__main__":
    main()
