"""Engine load time on the GPU machine (the aim: a load in <= 0.2 s in a warm process).

For each zoo model (bench/zoo_models.py) and precision: export, build ONE dynamic CUDA engine (batch 1..32), then in
this process (CUDA and the libraries already initialised by the build):
  first load    the first kilnrt.Engine(path) after the build (one-off initialisation, if any, lands here)
  warm load     the second kilnrt.Engine(path): the figure compared with the 0.2 s aim
  warm median   median of 5 more loads
  cold process  a new Python process: `import kilnrt` + kilnrt.Engine(path), timed inside it (CUDA initialisation and
                the loading of cuDNN / cuBLASLt included: what a fresh service pays)
and a check that the loaded engine still computes the model: cosine vs torch fp32 at batch 1 (and max err / std).
The page cache holds the file (it was just written), as in any warm process. `--log` sets KILNRT_LOG_LEVEL=info
for the loads, so stderr shows the breakdown (read, validate + parse, plan + device weights, the one weight copy).

Usage (GPU box):
  PYTHONPATH=build-gpu/python python3 bench/load_time.py [--models resnet50,bert] [--precisions fp16,fp32]
      [--out table.md]
(also reached as bench/bench_vs_torch.py --load-only ...)
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402

DEFAULT_MODELS = "resnet50,bert,vit_b_16,convnext_tiny,mobilenet_v3_large,efficientnet_b0"


def timed_load(path):
    t0 = time.perf_counter()
    engine = kilnrt.Engine(path)
    return engine, 1000 * (time.perf_counter() - t0)


COLD = ("import time; t0 = time.perf_counter(); import kilnrt; e = kilnrt.Engine(%r); "
        "print('COLD_MS %%.1f' %% (1000 * (time.perf_counter() - t0)))")


def cold_load_ms(path):
    proc = subprocess.run([sys.executable, "-c", COLD % path], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "KILNRT_LOG_LEVEL"})
    for line in proc.stdout.splitlines():
        if line.startswith("COLD_MS "):
            return float(line.split()[1])
    raise RuntimeError("cold-process load failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160])


def measure(spec, prec, work):
    model = spec.make()
    onnx_path = os.path.join(work, spec.name + ".onnx")
    try:
        spec.export(model, onnx_path)
    except Exception:  # noqa: BLE001 - BERT: fall back to transformers' eager attention, as bench_vs_torch does
        if spec.kind != "text":
            raise
        spec.attn = "eager"
        model = spec.make()
        spec.export(model, onnx_path)
    path = os.path.join(work, "%s.%s.engine" % (spec.name, prec))
    t0 = time.perf_counter()
    kilnrt.build(onnx_path, path, device="cuda", fp16=(prec == "fp16"), bf16=(prec == "bf16"),
                 shapes=spec.kilnrt_shapes())
    rec = {"model": spec.name, "precision": prec, "build_s": time.perf_counter() - t0,
           "file_mb": os.path.getsize(path) / 2**20}
    _, rec["first_ms"] = timed_load(path)
    engine, rec["warm_ms"] = timed_load(path)
    rec["median_ms"] = statistics.median(timed_load(path)[1] for _ in range(5))
    rec["cold_ms"] = cold_load_ms(path)
    x = spec.inputs(1, seed=1)
    with torch.no_grad():
        ref = zoo_models.as_tuple(model(*x))
    got = zoo_models.run_engine(engine, spec, x)
    acc = [zoo_models.accuracy(g.float(), r.float()) for g, r in zip(got, ref)]
    rec["cosine"] = min(c for c, _ in acc)
    rec["max_err_over_std"] = max(e for _, e in acc)
    del engine, model
    torch.cuda.empty_cache()
    return rec


def run(models=DEFAULT_MODELS, precisions="fp16", out=None, log=False):
    if log:
        os.environ["KILNRT_LOG_LEVEL"] = "info"  # read by kilnrt at each log call
    zoo_models.reference_settings()
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="kilnrt-load-")
    rows = ["| model | prec | engine MB | build s | first load ms | warm load ms | warm median of 5 ms | "
            "<= 200 ms | cold process ms | cosine vs torch fp32 (b1) | max err/std |", "|" + "---|" * 11]
    for spec in zoo_models.select(models):
        for prec in precisions.split(","):
            print("== %s %s" % (spec.name, prec), flush=True)
            try:
                r = measure(spec, prec, work)
            except Exception as e:  # noqa: BLE001 - a row, not a crash
                rows.append("| %s | %s | failed: %s |" % (spec.name, prec, str(e).splitlines()[0][:160]))
                print(rows[-1], flush=True)
                continue
            rows.append("| %s | %s | %.1f | %.1f | %.0f | %.0f | %.0f | %s | %.0f | %.6f | %.2e |" % (
                r["model"], r["precision"], r["file_mb"], r["build_s"], r["first_ms"], r["warm_ms"],
                r["median_ms"], "yes" if r["warm_ms"] <= 200 else "NO", r["cold_ms"], r["cosine"],
                r["max_err_over_std"]))
            print(rows[-1], flush=True)
            for f in os.listdir(work):
                os.remove(os.path.join(work, f))
    text = ("GPU: %s, torch %s, kilnrt %s, %s. One dynamic engine (batch 1..32) per model; loads in the process "
            "that built it (CUDA initialised, libraries loaded, file in the page cache).\n\n" % (
                torch.cuda.get_device_name(), torch.__version__, kilnrt.__version__,
                time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))) + "\n".join(rows) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--precisions", default="fp16")
    ap.add_argument("--out", default=None)
    ap.add_argument("--log", action="store_true", help="KILNRT_LOG_LEVEL=info: per-phase load times on stderr")
    args, _ = ap.parse_known_args(argv)
    run(args.models, args.precisions, args.out, args.log)


if __name__ == "__main__":
    main()
