"""Probe: does running a batch as concurrent sub-batches on forked streams beat one full-batch engine? (GPU machine)

The question (BERT b32): kilnrt's b32 engine runs one kernel at a time. Its memory-bound kernels
(LayerNorm, attention, copies) leave the tensor cores idle, and its GEMMs end in partial waves. Two b16 halves on two
streams let one half's GEMM run while the other half's memory-bound kernels run, and fill each other's tails.

For each model, exports it, builds static fp16 engines for the full batch and for the sub-batches, loads one engine
instance per sub-batch (each with its own activation memory and CUDA graph), and times, alternating the variants
over rounds (same thermal state):
  full     one engine of the full batch on the current stream
  seq N    N sub-batch engines one after the other on the current stream
  fork N   N sub-batch engines on N streams forked from the current stream and joined back to it
The outputs of the fork variant are checked against the full-batch engine's.

Usage (GPU box): PYTHONPATH=build-gpu/python python3 bench/split_batch_probe.py [--models bert] [--batch 32]
    [--splits 2,4] [--rounds 3] [--iters 200]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402
from bench_vs_torch import gpu_time  # noqa: E402  (CUDA events around one call, synchronised, median)


def build(spec, onnx_path, batch, work):
    path = os.path.join(work, "%s.b%d.engine" % (spec.name, batch))
    os.environ["KILNRT_TIMING_CACHE"] = os.path.join(work, "timing.cache")
    t0 = time.perf_counter()
    kilnrt.build(onnx_path, path, device="cuda", fp16=True, shapes=spec.static_shapes(batch))
    print("   built b%d in %.1f s" % (batch, time.perf_counter() - t0), flush=True)
    return path


def probe_model(spec, args, work):
    print("== %s batch %d" % (spec.name, args.batch), flush=True)
    model = spec.make()
    onnx_path = os.path.join(work, spec.name + ".onnx")
    try:
        spec.export(model, onnx_path)
    except Exception:  # noqa: BLE001 - BERT: transformers' eager attention, as bench_vs_torch does
        spec.attn = "eager"
        model = spec.make()
        spec.export(model, onnx_path)
    full = kilnrt.Engine(build(spec, onnx_path, args.batch, work))
    x = spec.inputs(args.batch, seed=args.batch)
    feeds = dict(zip(spec.input_names, x))
    got = zoo_models.run_engine(full, spec, x)
    outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
    variants = {"full": lambda: full.run(feeds, out=outs)}
    checks = {}
    main = torch.cuda.current_stream()
    for n in [int(s) for s in args.splits.split(",")]:
        sub = args.batch // n
        path = build(spec, onnx_path, sub, work)
        engines = [kilnrt.Engine(path) for _ in range(n)]
        streams = [torch.cuda.Stream() for _ in range(n)]
        part_feeds = [{k: v[i * sub:(i + 1) * sub] for k, v in feeds.items()} for i in range(n)]
        part_outs = [{k: v[i * sub:(i + 1) * sub] for k, v in outs.items()} for i in range(n)]

        def seq(engines=engines, part_feeds=part_feeds, part_outs=part_outs):
            for e, f, o in zip(engines, part_feeds, part_outs):
                e.run(f, out=o)

        def fork(engines=engines, streams=streams, part_feeds=part_feeds, part_outs=part_outs):
            for e, s, f, o in zip(engines, streams, part_feeds, part_outs):
                s.wait_stream(main)
                e.run(f, out=o, stream=s)
            for s in streams:
                main.wait_stream(s)

        variants["seq %d" % n] = seq
        variants["fork %d" % n] = fork
        for o in outs.values():
            o.zero_()
        fork()
        torch.cuda.synchronize()
        checks[n] = max(float((o.float() - g.float()).abs().max()) for o, g in zip(outs.values(), got))
        print("   fork %d: max |diff| against the full-batch engine %.3g" % (n, checks[n]), flush=True)
        # tensors handed to other streams: keep their memory from being reused by torch's allocator early
        for t in list(feeds.values()) + list(outs.values()):
            for s in streams:
                t.record_stream(s)
    results = {k: [] for k in variants}
    for r in range(args.rounds):
        for k, fn in variants.items():
            results[k].append(gpu_time(fn, args.iters, warmup=20))
        print("   round %d: %s" % (r + 1, ", ".join("%s %.4f" % (k, v[-1]) for k, v in results.items())), flush=True)
    base = np.mean(results["full"])
    rows = ["| %s | %d | %s | %s | %.4f | %.3f |" % (spec.name, args.batch, k, " / ".join("%.4f" % t for t in v),
                                                   np.mean(v), np.mean(v) / base) for k, v in results.items()]
    return rows, checks


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="bert")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--splits", default="2,4")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    rows = ["| model | batch | variant | ms per round | mean ms | / full |", "|---|---|---|---|---|---|"]
    notes = []
    with tempfile.TemporaryDirectory() as work, torch.no_grad():
        for spec in zoo_models.select(args.models):
            r, checks = probe_model(spec, args, work)
            rows += r
            notes += ["- %s fork %d: max |diff| of the outputs against the full-batch engine %.3g" % (spec.name, n, d)
                      for n, d in checks.items()]
    text = "\n".join(rows + [""] + notes) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
