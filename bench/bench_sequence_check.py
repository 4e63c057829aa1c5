"""bench_vs_torch's per-batch sequence for one zoo model, step by step, with a device sync after each step: which
step is the first to fail? Written for an "unspecified launch failure" on an H100: BERT / ConvNeXt at b32, in
bench_vs_torch's default setup, after their b1 rows (the cause: torch's graph lost its cuBLAS workspace,
bench/graph_streams.py; bench/results/zoo_vs_torch_h100_2026-11-23.md).

First, as bench_vs_torch: the library floor of every batch, in a child process (library_floor.floors_in_child). Then
for each batch (1, then 32): kilnrt build and loads (bench_vs_torch.build_engine), the torch fp32 reference, a kilnrt
run and its accuracy, a torch CUDA graph of the fp16 model (bench_vs_torch.torch_graph), torch.compile
(reduce-overhead), the interleaved timing of every callable (as bench_vs_torch), torch._dynamo.reset(). Every batch's
kilnrt engine stays alive through the later batches, as in bench_vs_torch. Options take steps out or change them, to
bisect:

  PYTHONPATH=build-gpu/python python3 bench/bench_sequence_check.py --model bert [--no-kilnrt] [--no-compile]
      [--no-floor] [--drop-b1-engine] [--no-sync] [--batches 1,32]

Exit status 0 when every step passed, 1 at the first failed step (printed with its error).
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import bench_vs_torch as bvt  # noqa: E402
import library_floor  # noqa: E402
import zoo_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="bert")
    ap.add_argument("--batches", default="1,32")
    switches = [
        ("--no-kilnrt", "torch's steps only"),
        ("--no-compile", "leave torch.compile out"),
        ("--no-floor", "leave the library floor out"),
        ("--drop-b1-engine", "delete the earlier batches' kilnrt engines before the next batch starts"),
        ("--no-sync", "no device sync after each step (bench_vs_torch's way)"),
    ]
    for flag, text in switches:
        ap.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_sequence_check.py needs a CUDA GPU (torch.cuda.is_available() is False)")

    kilnrt = None if args.no_kilnrt else __import__("kilnrt")
    zoo_models.reference_settings()
    spec = zoo_models.select(args.model)[0]
    model = spec.make()
    work = tempfile.mkdtemp(prefix="kilnrt_seq_")
    onnx_path = os.path.join(work, spec.name + ".onnx")
    if kilnrt:
        spec.export(model, onnx_path)
    variant = zoo_models.torch_variant(model, spec, "fp16", spec.is_cnn)

    def step(label, fn):
        t0 = time.perf_counter()
        try:
            r = fn()
            if not args.no_sync:
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the step that failed is the result
            print("%-26s FAILED: %s: %s" % (label, type(e).__name__, (str(e).splitlines() or [""])[0][:200]),
                  flush=True)
            sys.exit(1)
        print("%-26s ok  %.1f s" % (label, time.perf_counter() - t0), flush=True)
        return r

    batches = [int(v) for v in args.batches.split(",")]
    if not args.no_floor:
        step("library floor (child)", lambda: library_floor.floors_in_child(spec.name, batches, "fp16"))
    engines, engine = {}, None
    for b in batches:
        timers = {}
        if args.drop_b1_engine and engines:
            engines.clear()
            engine = None
            step("drop previous engines", lambda: None)
        x = spec.inputs(b, seed=b)
        xt = zoo_models.torch_inputs(x, "fp16", spec.is_cnn)
        with torch.no_grad():
            if kilnrt:
                engine = step("b%d kilnrt build + loads" % b,
                              lambda: bvt.build_engine(spec, onnx_path, "fp16", work, batch=b, io16=True)[0])
                engines[b] = engine  # alive through the later batches, as bench_vs_torch's engines
            ref = step("b%d torch fp32 reference" % b, lambda: zoo_models.as_tuple(model(*x)))
            if kilnrt:
                xk = zoo_models.torch_inputs(x, "fp16", False)
                got = step("b%d kilnrt run" % b, lambda: zoo_models.run_engine(engine, spec, xk))
                acc = step("b%d accuracy" % b, lambda: [zoo_models.accuracy(g.float(), r.float())
                                                        for g, r in zip(got, ref)])
                print("   cosine %.6f" % min(c for c, _ in acc), flush=True)
                outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
                feeds = dict(zip(spec.input_names, xk))
                timers["kilnrt"] = lambda e=engine, f=feeds, o=outs: e.run(f, out=o)
            timers["eager"] = lambda: variant(*xt)
            timers["graph"] = step("b%d torch graph capture" % b, lambda: bvt.torch_graph(lambda: variant(*xt)))
            if not args.no_compile:
                timers["compile"] = step("b%d torch.compile" % b,
                                         lambda: bvt.compiled_timer(variant, xt, "reduce-overhead")[0])
            errors = []
            med = step("b%d interleaved timing" % b, lambda: bvt.interleaved_times(timers, 100, 3, errors)[0])
            print("   medians %s" % {k: round(t, 3) for k, t in med.items()}, flush=True)
            for e in errors:
                print("   error (in timing order): %s" % e, flush=True)
            if errors:
                sys.exit(1)
            if not args.no_compile:
                step("b%d dynamo reset" % b, torch._dynamo.reset)
    print("every step passed")


if __name__ == "__main__":
    main()
