"""Where the host time of one `engine.run` goes (issue 7), on the GPU machine.

The GPU is kept busy by a spin kernel while N calls are timed on the host, so no call waits for the GPU; medians of
per-call host microseconds for:
  run       engine.run(feeds, out=outs) (the Python fast path for torch CUDA tensors with out=)
  key       the fast path's key alone (tensor attributes, torch's current stream)
  handle    the C++ binding's enqueue with the cached feeds (pybind11 conversion + ExecutionContext::enqueue)
  raw       ExecutionContext.enqueue on (pointer, shape, dtype) tuples
  torch     a torch.cuda.CUDAGraph replay of the model (for scale: what torch's graph mode pays per call)

Usage (GPU box): PYTHONPATH=build-gpu/python python3 bench/host_time.py --models bert,efficientnet_b0 --batches 32
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402
from bench_vs_torch import torch_graph  # noqa: E402


def host_us(fn, calls=40, reps=5):
    fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(reps):
        torch.cuda._sleep(40_000_000)  # ~20 ms of one spinning thread: every call below finds the GPU busy
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            fn()
            per.append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda.synchronize()
    return float(np.median(per))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="bert,efficientnet_b0")
    ap.add_argument("--batches", default="32")
    ap.add_argument("--dir", default="/tmp/host_time")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    print("| model | batch | run us | key us | handle us | raw enqueue us | torch graph replay us |")
    print("|---|---|---|---|---|---|---|")
    for spec in zoo_models.select(args.models):
        model = spec.make()
        onnx_path = os.path.join(args.dir, spec.name + ".onnx")
        spec.export(model, onnx_path)
        model = zoo_models.torch_variant(model, spec, "fp16", False)
        for b in [int(v) for v in args.batches.split(",")]:
            path = os.path.join(args.dir, "%s.b%d.engine" % (spec.name, b))
            kilnrt.build(onnx_path, path, device="cuda", fp16=True, shapes=spec.static_shapes(b))
            engine = kilnrt.Engine(path)
            x = spec.inputs(b, seed=b)
            feeds = dict(zip(spec.input_names, x))
            got = zoo_models.run_engine(engine, spec, x)
            outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
            run = lambda: engine.run(feeds, out=outs)  # noqa: E731
            run()
            run()
            key = lambda: engine._fast_key(feeds, outs, None)  # noqa: E731
            k = key()
            cached = engine._fast_feeds.get(k[:3])
            handle = (lambda: engine._handle.enqueue(cached[0], cached[1], k[2])) if cached else None
            ctx = engine.create_context()
            stream = torch.cuda.current_stream().cuda_stream
            ins = {n: (t.data_ptr(), tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in feeds.items()}
            ous = {n: (t.data_ptr(), tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in outs.items()}
            raw = lambda: ctx.enqueue(ins, ous, stream)  # noqa: E731
            tx = zoo_models.torch_inputs(x, "fp16", False)
            with torch.no_grad():
                replay = torch_graph(lambda: model(*tx))
            r = [host_us(run), host_us(key), host_us(handle) if handle else float("nan"), host_us(raw), host_us(replay)]
            print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |" % ((spec.name, b) + tuple(r)), flush=True)


if __name__ == "__main__":
    main()
