"""Fingerprints of the zoo's engines: what a change that must not alter arithmetic (a move, a rename) is checked by.

For each model of bench/zoo_models.py, exports it (torch's default exporter, seeded random weights), builds kilnrt
CUDA engines and records, per (model, precision, batch):
  heuristic  an engine built with every timed choice off (KILNRT_CONV_TUNING=0, KILNRT_GEMM_TUNING=0,
             KILNRT_CUDA_LAYOUT_TIMING=0, KILNRT_GEMM_WEIGHT_LAYOUT=0): its tactics depend on the code alone, so two
             versions of kilnrt that compute the same thing give outputs with the same SHA-256;
  tuned      an engine built with tactic timing on, through one timing-cache file (--timing-cache; kept between runs
             so that both versions pick the same tactics where the cache decides): its median time (CUDA events,
             --rounds x --iters synchronised runs) and the SHA-256 of its outputs.
Also the SHA-256 of each exported ONNX file (the same input model in both runs) and each engine's layer tactics.

  PYTHONPATH=build-gpu/python python3 bench/zoo_fingerprint.py --out before.json --timing-cache tc.txt
  PYTHONPATH=build-gpu/python python3 bench/zoo_fingerprint.py --out after.json --timing-cache tc.txt \
      --compare before.json --table after.md
--compare prints a table (same outputs or not, time ratio after / before) and exits 1 when a heuristic engine's
outputs differ.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_torch  # noqa: E402
import zoo_models  # noqa: E402

UNTIMED = {"KILNRT_CONV_TUNING": "0", "KILNRT_GEMM_TUNING": "0", "KILNRT_CUDA_LAYOUT_TIMING": "0",
           "KILNRT_GEMM_WEIGHT_LAYOUT": "0"}


def sha(path_or_bytes):
    h = hashlib.sha256()
    if isinstance(path_or_bytes, bytes):
        h.update(path_or_bytes)
    else:
        with open(path_or_bytes, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:24]


def outputs_sha(outs):
    return [sha(t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()) for t in outs]


def median_ms(fn, iters, rounds):
    """(median of the round medians, [round medians]): bench_vs_torch.gpu_time `rounds` times."""
    medians = [bench_vs_torch.gpu_time(fn, iters) for _ in range(rounds)]
    return float(np.median(medians)), medians


def build(spec, onnx_path, prec, batch, path, env):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        t0 = time.perf_counter()
        kilnrt.build(onnx_path, path, device="cuda", fp16=(prec == "fp16"), bf16=(prec == "bf16"),
                     shapes=spec.static_shapes(batch), io16=prec in ("fp16", "bf16"))
        return time.perf_counter() - t0
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def tactics(engine):
    try:
        return [[l.get("name"), l.get("tactic"), l.get("precision")] for l in engine.layers]
    except Exception:  # noqa: BLE001 - describe() fields are informative only
        return None


def run_point(spec, onnx_path, prec, batch, work, args):
    x = spec.inputs(batch, seed=batch)
    xk = zoo_models.torch_inputs(x, prec, False)
    rec = {"model": spec.name, "precision": prec, "batch": batch}
    for mode in ("heuristic", "tuned"):
        if mode == "tuned" and not args.tuned:
            continue
        env = dict(UNTIMED) if mode == "heuristic" else {"KILNRT_TIMING_CACHE": os.path.abspath(args.timing_cache)}
        path = os.path.join(work, "%s.%s.b%d.%s.engine" % (spec.name, prec, batch, mode))
        try:
            build_s = build(spec, onnx_path, prec, batch, path, env)
            engine = kilnrt.Engine(path)
            with torch.no_grad():
                got = zoo_models.run_engine(engine, spec, xk)
                torch.cuda.synchronize()
                r = {"build_s": round(build_s, 2), "outputs": outputs_sha(got), "tactics": tactics(engine)}
                if mode == "tuned":
                    outs = {n: torch.empty_like(g) for n, g in zip(spec.output_names, got)}
                    feeds = dict(zip(spec.input_names, xk))
                    r["ms"], r["rounds"] = median_ms(lambda: engine.run(feeds, out=outs), args.iters, args.rounds)
            del engine
        except Exception as e:  # noqa: BLE001 - a failing point is a row, not the end of the run
            r = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")}
        finally:
            if os.path.exists(path):
                os.remove(path)
        rec[mode] = r
        print("   %s %s b%d %s: %s" % (spec.name, prec, batch, mode,
                                       r.get("error") or "%s %s" % (r["outputs"], "%.4f ms" % r["ms"] if "ms" in r
                                                                    else "")), flush=True)
    return rec


def compare(before, after):
    old = {(r["model"], r["precision"], r["batch"]): r for r in before["points"]}
    rows = ["| model | precision | batch | heuristic outputs | tuned outputs | tuned ms before | after | ratio |",
            "|---|---|---|---|---|---|---|---|"]
    bad = 0
    for r in after["points"]:
        o = old.get((r["model"], r["precision"], r["batch"]))
        if o is None:
            continue
        h_same = "error" not in r["heuristic"] and r["heuristic"].get("outputs") == o["heuristic"].get("outputs")
        bad += not h_same
        cells = ["identical" if h_same else "DIFFERENT"]
        t, to = r.get("tuned", {}), o.get("tuned", {})
        if "outputs" in t and "outputs" in to:
            same_tac = t.get("tactics") == to.get("tactics")
            cells.append(("identical" if t["outputs"] == to["outputs"] else "different") +
                         ("" if same_tac else " (tactics differ)"))
            cells += ["%.4f" % to["ms"], "%.4f" % t["ms"], "%.3f" % (t["ms"] / to["ms"])]
        else:
            cells += ["-", "-", "-", "-"]
        rows.append("| %s | %s | %d | %s |" % (r["model"], r["precision"], r["batch"], " | ".join(cells)))
    onnx_same = all(before["onnx"].get(k) == v for k, v in after["onnx"].items())
    rows.append("")
    rows.append("ONNX exports identical in both runs: %s" % ("yes" if onnx_same else "NO"))
    return rows, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,mobilenet_v3_large,efficientnet_b0,convnext_tiny,vit_b_16,bert")
    ap.add_argument("--points", default="fp16:1,fp16:32,fp32:1", help="PRECISION:BATCH list")
    ap.add_argument("--timing-cache", required=True, help="timing-cache file shared by the tuned builds")
    ap.add_argument("--no-tuned", dest="tuned", action="store_false", help="heuristic engines only")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True, help="JSON of every point")
    ap.add_argument("--compare", help="an earlier --out JSON: print the comparison table")
    ap.add_argument("--table", help="write the comparison table (markdown) here")
    args = ap.parse_args()
    zoo_models.reference_settings()
    points = [(p.split(":")[0], int(p.split(":")[1])) for p in args.points.split(",")]
    result = {"gpu": torch.cuda.get_device_name(0), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
              "onnx": {}, "points": []}
    with tempfile.TemporaryDirectory() as work:
        for spec in zoo_models.select(args.models):
            print("== %s" % spec.name, flush=True)
            model = spec.make()
            onnx_path = os.path.join(work, spec.name + ".onnx")
            spec.export(model, onnx_path)
            result["onnx"][spec.name] = sha(onnx_path)
            del model
            for prec, b in points:
                result["points"].append(run_point(spec, onnx_path, prec, b, work, args))
            os.remove(onnx_path)
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if args.compare:
        with open(args.compare) as f:
            before = json.load(f)
        rows, bad = compare(before, result)
        text = "\n".join(["%s, %s (before: %s)" % (result["gpu"], result["date"], before["date"]), ""] + rows) + "\n"
        print(text)
        if args.table:
            with open(args.table, "w") as f:
                f.write(text)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
