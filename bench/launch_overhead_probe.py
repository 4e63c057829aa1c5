"""How much of a synchronised single-run timing is host work while the GPU waits.

bench_vs_torch.py times each run alone: an event, the call, an event, a sync. The GPU is idle when the call starts, so
the host time between the first event and the first kernel (Python, argument checks, the graph launch) is inside the
figure. This probe separates it, per callable, on static fp16 engines of the zoo:
  single     median ms of one call between two events, synchronised after each (bench_vs_torch's gpu_time);
  pipelined  median ms per call of 20 back-to-back calls between two events (host work hidden by the queue);
  host       median µs of the call itself on the host, measured right after a sync (the queue is empty);
single - pipelined is what the host adds to bench_vs_torch's figure.
Usage: python3 bench/launch_overhead_probe.py [--models bert,vit_b_16] [--batch 32] [--compile] [--rounds 3]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_torch  # noqa: E402
import zoo_models  # noqa: E402
from run_overhead import pipelined_ms  # noqa: E402  (ms per call of back-to-back calls between two events)


def host_us(fn, iters):
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="bert,vit_b_16")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="also torch.compile(mode='reduce-overhead')")
    args = ap.parse_args()
    zoo_models.reference_settings()
    work = tempfile.mkdtemp(prefix="kilnrt-overhead-")
    print("| model | callable | single ms | pipelined ms | single - pipelined µs | host µs |")
    print("|---|---|---|---|---|---|")
    for spec in zoo_models.select(args.models):
        model = spec.make()
        onnx_path = spec.export(model, os.path.join(work, spec.name + ".onnx"))
        engine = bench_vs_torch.build_engine(spec, onnx_path, "fp16", work, batch=args.batch, io16=True)[0]
        x = spec.inputs(args.batch, seed=args.batch)
        xk = zoo_models.torch_inputs(x, "fp16", False)
        tm = zoo_models.torch_variant(model, spec, "fp16", False)
        with torch.no_grad():
            got = zoo_models.run_engine(engine, spec, xk)
            outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
            feeds = dict(zip(spec.input_names, xk))
            fns = {"kilnrt run": lambda e=engine: e.run(feeds, out=outs),
                   "torch graph": bench_vs_torch.torch_graph(lambda m=tm: m(*xk))}
            if args.compile:
                fns["torch compile r-o"] = bench_vs_torch.compiled_timer(tm, xk, "reduce-overhead")[0]
            rows = {n: [] for n in fns}
            for r in range(args.rounds):
                for n, fn in fns.items():
                    rows[n].append((bench_vs_torch.gpu_time(fn, iters=args.iters),
                                    pipelined_ms(fn, calls=20, reps=args.iters // 20 + 1), host_us(fn, 50)))
            for n, v in rows.items():
                s, p, h = (float(np.median([t[i] for t in v])) for i in range(3))
                print("| %s b%d | %s | %.4f | %.4f | %.1f | %.1f |"
                      % (spec.name, args.batch, n, s, p, (s - p) * 1e3, h), flush=True)
            if args.compile:
                torch._dynamo.reset()
        del engine, tm, model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
