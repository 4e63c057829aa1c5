"""kilnrt vs PyTorch on the GPU, in one process per run (docs/architecture.md, performance method).

For each model of the zoo (bench/zoo_models.py: torchvision CNNs, vit_b_16, BERT-base seq 128): export with torch's
default exporter (dynamo, dynamic batch), build kilnrt CUDA engines (default: ONE dynamic engine per precision,
batch 1..32; --engine-per-batch: one static engine per batch size), then time, with CUDA events, the median of
>= 100 enqueue-to-completion runs (launch overhead included, a sync after each run) with inputs already on the device,
after warm-up, in --rounds interleaved rounds (default 3; the figure is the median of the round medians):
  kilnrt      engine(*inputs, out=outputs) on torch's current stream (CUDA graphs are kilnrt's default);
  torch       eager and CUDA graph, NCHW and (CNNs) channels_last; torch.compile(mode="reduce-overhead") (channels_last
              for CNNs); --compile-max-autotune adds mode="max-autotune" (minutes per model: off by default).
Columns also give the library floor (bench/library_floor.py) and cold-process load time.
Precisions: fp32 (TF32 off in torch and kilnrt) and fp16 (torch: .half(); kilnrt: --fp16 engine), bf16 on request.
Accuracy of each kilnrt engine against the torch fp32 model (mean-centred cosine, max abs err / std; the worst
output for BERT) is in every row: the fp16 rows are the fp16 accuracy. Build time and load time (a second load in the
warm process: CUDA and the libraries already initialised) per engine.

Usage (GPU box):
  PYTHONPATH=build-gpu/python python3 bench/bench_vs_torch.py [--models resnet50,bert] [--batches 1,32]
      [--precisions fp32,fp16] [--no-compile] [--compile-max-autotune] [--engine-per-batch] [--out table.md]
  ... bench/bench_vs_torch.py --load-only [--models ...] [--precisions ...] [--log]: load times only (load_time.py)
torch.compile costs ~20-60 s per model, precision and batch size: select models / batches to stay within a budget
(scripts/gpu_suite.sh's bench stage passes its own selection).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_streams  # noqa: E402
import library_floor  # noqa: E402
import load_time  # noqa: E402
import zoo_models  # noqa: E402


def gpu_time(fn, iters=100, warmup=10):
    """Median ms of `iters` runs of fn, each timed with CUDA events on the current stream and synchronised."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def interleaved_times(timers, iters, rounds, errors):
    """Times every callable of `timers` (name -> fn) in `rounds` rounds, each fn `iters` runs per round (gpu_time), the
    first fn of a round rotating. Returns ({name: median of its round medians, ms}, {name: [round medians]}); a fn that
    raises is dropped (its error in `errors`)."""
    names = list(timers)
    per_round = {n: [] for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            n = names[(r + k) % len(names)]
            if n not in per_round:
                continue
            got = safe(n, errors, gpu_time, timers[n], iters)
            if got is None:
                del per_round[n]
            else:
                per_round[n].append(got)
    return {n: float(np.median(v)) for n, v in per_round.items() if v}, per_round


def torch_graph(fn):
    """A torch.cuda.CUDAGraph of fn, warmed up and captured on a stream of its own (graph_streams.py says why);
    returns its replay."""
    return graph_streams.capture(fn).replay


def compiled_timer(model, inputs, mode):
    """(timed fn, compile seconds) for torch.compile(model, mode): the first call compiles; cudagraph trees are told
    a new step starts before each call (outputs of earlier steps are not read)."""
    cm = torch.compile(model, mode=mode, dynamic=False)
    torch.compiler.cudagraph_mark_step_begin()
    t0 = time.perf_counter()
    cm(*inputs)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0

    def fn():
        torch.compiler.cudagraph_mark_step_begin()
        cm(*inputs)
    return fn, compile_s


def safe(label, errors, fn, *a):
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001 - a torch variant that fails is a table cell, not a crash
        errors.append("%s: %s: %s" % (label, type(e).__name__, (str(e).splitlines() or [""])[0][:160]))
        print("   " + errors[-1], flush=True)
        return None


def build_engine(spec, onnx_path, prec, work, batch=None, io16=False):
    """(engine, build s, load s in the warm process, load ms in a cold process). batch=None: one dynamic engine
    1..32. The build starts from cold caches: a fresh KILNRT_TIMING_CACHE file per build (the in-process cache only holds
    other engines' shapes)."""
    path = os.path.join(work, "%s.%s.%s.engine" % (spec.name, prec, "dyn" if batch is None else "b%d" % batch))
    shapes = spec.kilnrt_shapes() if batch is None else spec.static_shapes(batch)
    # a timing-cache file that does not exist yet: the build times every tactic (cold caches)
    os.environ["KILNRT_TIMING_CACHE"] = os.path.join(work, "timing-%s.cache" % os.path.basename(path))
    t0 = time.perf_counter()
    kilnrt.build(onnx_path, path, device="cuda", fp16=(prec == "fp16"), bf16=(prec == "bf16"), shapes=shapes,
                 io16=io16 and prec in ("fp16", "bf16"))
    build_s = time.perf_counter() - t0
    kilnrt.Engine(path)  # first load in this process may pay for one-off initialisation
    t0 = time.perf_counter()
    engine = kilnrt.Engine(path)
    load_s = time.perf_counter() - t0
    try:
        cold_ms = load_time.cold_load_ms(path)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print("   cold-process load: %s" % e, flush=True)
        cold_ms = None
    return engine, build_s, load_s, cold_ms


def bench_model(spec, args, work, rows, records):
    print("== %s" % spec.name, flush=True)
    model = spec.make()
    onnx_path = os.path.join(work, spec.name + ".onnx")
    t0 = time.perf_counter()
    try:
        spec.export(model, onnx_path)
    except Exception as e:  # noqa: BLE001 - reported in the table
        if spec.kind != "text":
            rows.append("| %s | | | export failed: %s |" % (spec.name, type(e).__name__))
            return
        spec.attn = "eager"  # BERT: fall back to transformers' eager attention
        model = spec.make()
        spec.export(model, onnx_path)
    export_s = time.perf_counter() - t0
    batches = [int(b) for b in args.batches.split(",")]
    layouts = [False, True] if spec.is_cnn else [False]
    for prec in args.precisions.split(","):
        engines = {}
        if not args.engine_per_batch:
            try:
                engines[None] = build_engine(spec, onnx_path, prec, work, io16=not args.float32_io)
            except kilnrt.Error as e:
                rows.append("| %s | | %s | build failed: %s |" % (spec.name, prec, str(e).splitlines()[0][:120]))
                continue
        variants = {cl: zoo_models.torch_variant(model, spec, prec, cl) for cl in layouts}
        floors, floor_error = {}, None
        if not args.no_floor:  # in a child process: library_floor.floors_in_child says why
            try:
                floors = library_floor.floors_in_child(spec.name, batches, prec, getattr(spec, "attn", None))
            except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as e:
                floor_error = "library floor: %s" % e
                print("   " + floor_error, flush=True)
        for b in batches:
            errors = []
            key = b if args.engine_per_batch else None
            if key not in engines:
                try:
                    engines[key] = build_engine(spec, onnx_path, prec, work, batch=b, io16=not args.float32_io)
                except kilnrt.Error as e:
                    rows.append("| %s | %d | %s | build failed: %s |" % (spec.name, b, prec,
                                                                         str(e).splitlines()[0][:120]))
                    continue
            engine, build_s, load_s, cold_ms = engines[key]
            x = spec.inputs(b, seed=b)
            # 16-bit engines bind float inputs / outputs in their 16-bit type (--io16), as torch's fp16 / bf16
            # models take and return them: the inputs are cast once here, outside the timing, as for torch.
            xk = zoo_models.torch_inputs(x, prec, False) if not args.float32_io else x
            rec = {"model": spec.name, "batch": b, "precision": prec, "build_s": build_s, "load_s": load_s,
                   "cold_load_ms": cold_ms,
                   "engine": "static b%d" % b if args.engine_per_batch else "dynamic 1..%d" % zoo_models.MAX_BATCH,
                   "export_s": export_s, "note": spec.note, "torch": {}, "compile_s": {}}
            with torch.no_grad():
                ref = zoo_models.as_tuple(model(*x))
                got = zoo_models.run_engine(engine, spec, xk)
                acc = [zoo_models.accuracy(g.float(), r.float()) for g, r in zip(got, ref)]
                rec["cosine"] = min(c for c, _ in acc)
                rec["max_err_over_std"] = max(e for _, e in acc)
                outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
                feeds = dict(zip(spec.input_names, xk))
                # Every timed callable first, then interleaved rounds (interleaved_times): the GPU's clocks drift
                # within a second of back-to-back work, so that no mode is timed only cold or only hot.
                timers = {"kilnrt": lambda: engine.run(feeds, out=outs)}
                for cl in layouts:
                    tag = "CL" if cl else ("NCHW" if spec.is_cnn else "")
                    tm, xt = variants[cl], zoo_models.torch_inputs(x, prec, cl)
                    timers[("eager " + tag).strip()] = lambda tm=tm, xt=xt: tm(*xt)
                    g = safe("graph " + tag, errors, torch_graph, lambda tm=tm, xt=xt: tm(*xt))
                    if g:
                        timers[("graph " + tag).strip()] = g
                modes = ([] if args.no_compile else ["reduce-overhead"]) + \
                    (["max-autotune"] if args.compile_max_autotune else [])
                for mode in modes:
                    cl = spec.is_cnn  # compile the layout torch prefers for CNNs
                    got_fn = safe("compile " + mode, errors, compiled_timer, variants[cl],
                                  zoo_models.torch_inputs(x, prec, cl), mode)
                    if got_fn:
                        timers["compile " + mode], rec["compile_s"][mode] = got_fn
                medians, rec["rounds"] = interleaved_times(timers, args.iters, args.rounds, errors)
                if "kilnrt" not in medians:
                    raise RuntimeError("%s: %s" % (spec.name, next(e for e in errors if e.startswith("kilnrt: "))))
                rec["kilnrt_ms"] = medians.pop("kilnrt")
                rec["torch"] = medians
                if modes:
                    torch._dynamo.reset()
                rec["floor_ms"] = None
                if b in floors:
                    rec["floor_ms"], rec["floor_parts"] = floors[b]
                elif floor_error:
                    errors.append(floor_error)
            rec["errors"] = errors
            records.append(rec)
            rows.append(format_row(rec, args))
            print(rows[-1], flush=True)
        del variants, engines
        torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()


def format_row(rec, args):
    t = rec["torch"]

    def ms(v):
        return "-" if v is None else "%.3f" % v
    best = [v for v in t.values() if v]
    ratio = rec["kilnrt_ms"] / min(best) if best else float("nan")
    cells = [rec["model"], str(rec["batch"]), rec["precision"], rec["engine"], ms(rec["kilnrt_ms"]),
             ms(t.get("eager NCHW")), ms(t.get("graph NCHW")), ms(t.get("eager CL", t.get("eager"))),
             ms(t.get("graph CL", t.get("graph"))), ms(t.get("compile reduce-overhead"))]
    if args.compile_max_autotune:
        cells.append(ms(t.get("compile max-autotune")))
    floor = rec.get("floor_ms")
    cold = rec.get("cold_load_ms")
    cells += ["%.2f" % ratio, "-" if floor is None else "%.3f" % floor,
              "-" if floor is None else "%.0f%%" % (100 * floor / rec["kilnrt_ms"]),
              "%.6f" % rec["cosine"], "%.2e" % rec["max_err_over_std"], "%.1f" % rec["build_s"],
              "%.0f" % (1000 * rec["load_s"]), "-" if cold is None else "%.0f" % cold]
    return "| " + " | ".join(cells) + " |"


def header(args):
    cols = ["model", "batch", "prec", "kilnrt engine", "kilnrt ms", "torch eager NCHW", "torch graph NCHW",
            "torch eager CL*", "torch graph CL*", "torch.compile r-o"]
    if args.compile_max_autotune:
        cols.append("torch.compile m-a")
    cols += ["kilnrt / best torch", "library floor ms", "floor / kilnrt", "cosine vs torch fp32", "max err/std",
             "build s", "load ms", "cold-process load ms"]
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]


def main():
    if "--load-only" in sys.argv:  # engine load times only (no torch timing): bench/load_time.py
        import load_time
        return load_time.main([a for a in sys.argv[1:] if a != "--load-only"])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="mobilenet_v3_small,resnet50,mobilenet_v3_large,efficientnet_b0,"
                    "convnext_tiny,vit_b_16,bert")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--iters", type=int, default=100, help="timed runs per figure (median; at least 100)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved timing rounds (kilnrt and every torch mode take turns; figure: median of the "
                         "round medians)")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--compile-max-autotune", action="store_true",
                    help="also time torch.compile(mode='max-autotune') (takes minutes per model)")
    ap.add_argument("--engine-per-batch", action="store_true",
                    help="one static kilnrt engine per batch size instead of one dynamic engine (1..32)")
    ap.add_argument("--no-floor", action="store_true", help="leave the library floor (bench/library_floor.py) out")
    ap.add_argument("--float32-io", action="store_true",
                    help="fp16 / bf16 engines keep the model's float32 inputs and outputs (converted on the GPU inside "
                         "the timed run) instead of 16-bit I/O (kilnrt build --io16), which is what torch's fp16 / "
                         "bf16 models take and return")
    ap.add_argument("--out", default=None, help="markdown table (a .json with every figure is written beside it)")
    args = ap.parse_args()
    if args.iters < 100:
        raise SystemExit("--iters must be at least 100 (docs/architecture.md, performance method)")
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    zoo_models.reference_settings()
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="kilnrt-bench-")
    rows, records = header(args), []
    t0 = time.perf_counter()
    specs = zoo_models.select(args.models)
    for k, spec in enumerate(specs):
        bench_model(spec, args, work, rows, records)
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        # after each model, so that a run stopped by a time limit keeps the rows it has
        write_report(args, rows, records, t0, final=(k == len(specs) - 1))


def write_report(args, rows, records, t0, final):
    notes = ("GPU: %s, torch %s, kilnrt %s, %s. Median of %d rounds' medians of %d runs each (CUDA events, inputs "
             "on the device, sync after each run; kilnrt and the torch modes take turns round by round, a different "
             "one first each round) after warm-up, one process. TF32 off. *CL: channels_last for CNNs (plain layout for ViT / "
             "BERT); torch.compile r-o: mode='reduce-overhead' (channels_last for CNNs). kilnrt / best torch: "
             "against the fastest torch column. library floor: every heavy layer (conv, GEMM, attention core) alone on "
             "torch's best library kernel in the same precision, summed (bench/library_floor.py); floor / kilnrt: "
             "100%% = kilnrt at the floor. build s: from ONNX with cold caches (fresh timing cache). load ms: second "
             "Engine() load of the file in the warm process; cold-process load: a new Python process, import kilnrt "
             "+ Engine() (CUDA initialisation and library loading included). kilnrt I/O: %s." % (
                 torch.cuda.get_device_name(), torch.__version__, kilnrt.__version__,
                 time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), args.rounds, args.iters,
                 "the model's float32 for every precision (--float32-io)" if args.float32_io else
                 "16-bit for fp16 / bf16 engines (--io16: 16-bit tensors in and out, as torch's), float32 otherwise"))
    compile_notes = ["- %s b%d %s: torch.compile %s" % (r["model"], r["batch"], r["precision"], ", ".join(
        "%s %.0f s" % kv for kv in r["compile_s"].items())) for r in records if r["compile_s"]]
    error_notes = ["- %s b%d %s: %s" % (r["model"], r["batch"], r["precision"], e) for r in records
                   for e in r["errors"]]
    text = notes + "\n\n" + "\n".join(rows) + "\n"
    if compile_notes:
        text += "\nCompile times:\n" + "\n".join(compile_notes) + "\n"
    if error_notes:
        text += "\nTorch variants that failed:\n" + "\n".join(error_notes) + "\n"
    text += "\n%s %.0f s.\n" % ("Total" if final else "Partial (run still going), so far", time.perf_counter() - t0)
    if final:
        print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
