"""Where the time of one `engine.run` goes besides the GPU work, on the GPU machine.

For each zoo model and batch size: builds a static fp16 engine (GEMM algorithm timing on, and off with
KILNRT_GEMM_TUNING=0 when --gemm-off is given) and measures, on torch's current stream:
  run ms        engine.run(feeds, out=outs), CUDA events around one call, synchronised after each (as
                bench_vs_torch.py measures it: the host work before the first launch counts)
  enqueue ms    ctx.enqueue on raw (pointer, shape, dtype) tuples of a created context, the same way
  pipelined ms  GPU time per call of 50 back-to-back engine.run calls between two events (host work overlaps the
                GPU's: close to the GPU time alone when the host is faster than the GPU)
  host us       wall time per engine.run call on the host (200 calls, one synchronisation at the end)
  queued ms     one engine.run between two events, issued behind a ~1 ms spin kernel so that the host work is done
                before the GPU reaches the call: the GPU time of one call alone (run ms - queued ms = host latency)
  queued host us  the host time of that call (the GPU busy: the call never waits)

With --host-parts, a second table: host microseconds of one call issued with the GPU idle (no call waits for the
GPU), medians, of
  run       engine.run(feeds, out=outs) (the Python fast path for torch CUDA tensors with out=)
  key       the fast path's key alone (tensor attributes, torch's current stream)
  handle    the C++ binding's enqueue of the cached binding (ExecutionContext::enqueue, the graph launch included)
  raw       ExecutionContext.enqueue on (pointer, shape, dtype) tuples
  torch     a torch.cuda.CUDAGraph replay of the fp16 model (what torch's graph mode pays per call)

Usage (GPU box): PYTHONPATH=build-gpu/python python3 bench/run_overhead.py --models bert,convnext_tiny --batches 1
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
from bench_vs_torch import gpu_time as events_ms  # noqa: E402  (CUDA events around one call, median)
from bench_vs_torch import torch_graph  # noqa: E402


def pipelined_ms(fn, calls=50, reps=5):
    fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        best.append(a.elapsed_time(b) / calls)
    return float(np.median(best))


def host_us(fn, calls=200):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def queued(fn, reps=30):
    """GPU ms of one fn() issued behind a spin kernel (host work hidden), and its host us; medians."""
    fn()
    torch.cuda.synchronize()
    gpu, host = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)  # ~1 ms of one spinning thread
        a.record()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        b.record()
        b.synchronize()
        gpu.append(a.elapsed_time(b))
        host.append((t1 - t0) * 1e6)
    return float(np.median(gpu)), float(np.median(host))


def idle_host_us(fn, calls=300):
    """Median host us of one fn() issued with the GPU idle (synchronised before each call). A spin kernel keeping
    the GPU busy does not work for this: the launch queue fills up behind it and large graph launches then wait."""
    fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        per.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    return float(np.median(per))


def host_parts(engine, spec, batch, model):
    """The --host-parts row: idle_host_us of run / key / handle / raw enqueue / torch's graph replay."""
    x, feeds, outs, run, enq = bindings(engine, spec, batch)
    run()
    key = engine._fast_key(feeds, outs, None)
    cached = engine._fast_feeds.get(key[:3])
    tx = zoo_models.torch_inputs(x, "fp16", False)
    with torch.no_grad():
        replay = torch_graph(lambda: model(*tx))
    return [idle_host_us(run), idle_host_us(lambda: engine._fast_key(feeds, outs, None)),
            idle_host_us(lambda: engine._handle.enqueue_bound(cached, key[2])) if cached else float("nan"),
            idle_host_us(enq), idle_host_us(replay)]


def bindings(engine, spec, batch):
    """Seeded inputs, feeds, preallocated outputs, engine.run(feeds, out=outs), and a raw ctx.enqueue of the same."""
    x = spec.inputs(batch, seed=batch)
    feeds = dict(zip(spec.input_names, x))
    got = zoo_models.run_engine(engine, spec, x)
    outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
    run = lambda: engine.run(feeds, out=outs)  # noqa: E731
    ctx = engine.create_context()
    stream = torch.cuda.current_stream().cuda_stream
    ins = {n: (t.data_ptr(), tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in feeds.items()}
    ous = {n: (t.data_ptr(), tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in outs.items()}
    enq = lambda: ctx.enqueue(ins, ous, stream)  # noqa: E731
    return x, feeds, outs, run, enq


def measure(engine, spec, batch):
    _, _, _, run, enq = bindings(engine, spec, batch)
    q_ms, q_us = queued(run)
    return {"run_ms": events_ms(run), "enqueue_ms": events_ms(enq), "pipelined_ms": pipelined_ms(run),
            "host_us": host_us(run), "enqueue_host_us": host_us(enq), "queued_ms": q_ms, "queued_host_us": q_us}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="bert,convnext_tiny,resnet50")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--dir", default="/tmp/run_overhead")
    ap.add_argument("--gemm-off", action="store_true", help="also build with KILNRT_GEMM_TUNING=0")
    ap.add_argument("--host-parts", action="store_true", help="also the host-time split with the GPU busy")
    args = ap.parse_args()
    parts = []
    os.makedirs(args.dir, exist_ok=True)
    print("| model | batch | GEMM tuning | run ms | enqueue ms | pipelined ms | queued ms | host us / run |"
          " host us / enqueue | queued host us |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec in zoo_models.select(args.models):
        model = spec.make()
        onnx_path = os.path.join(args.dir, spec.name + ".onnx")
        spec.export(model, onnx_path)
        model = zoo_models.torch_variant(model, spec, "fp16", False) if args.host_parts else None
        for b in [int(v) for v in args.batches.split(",")]:
            for tuning in (["1", "0"] if args.gemm_off else ["1"]):
                os.environ["KILNRT_GEMM_TUNING"] = tuning
                path = os.path.join(args.dir, "%s.b%d.t%s.engine" % (spec.name, b, tuning))
                kilnrt.build(onnx_path, path, device="cuda", fp16=True, shapes=spec.static_shapes(b))
                engine = kilnrt.Engine(path)
                r = measure(engine, spec, b)
                if args.host_parts:
                    parts.append((spec.name, b) + tuple(host_parts(engine, spec, b, model)))
                print("| %s | %d | %s | %.3f | %.3f | %.3f | %.3f | %.1f | %.1f | %.1f |" % (
                    spec.name, b, "on" if tuning == "1" else "off", r["run_ms"], r["enqueue_ms"], r["pipelined_ms"],
                    r["queued_ms"], r["host_us"], r["enqueue_host_us"], r["queued_host_us"]), flush=True)
    os.environ.pop("KILNRT_GEMM_TUNING", None)
    if parts:
        print("\n| model | batch | run us | key us | handle us | raw enqueue us | torch graph replay us |")
        print("|---|---|---|---|---|---|---|")
        for row in parts:
            print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |" % row)


if __name__ == "__main__":
    main()
