#!/usr/bin/env python3
"""Zoo accuracy check (GPU machine): kilnrt CUDA engines against PyTorch fp32 on the model zoo.

For each model (bench/zoo_models.py: torchvision resnet50, mobilenet_v3_large, efficientnet_b0, convnext_tiny,
vit_b_16, and transformers' BertModel with the bert-base config at sequence length 128), with random weights and
recalibrated BatchNorm statistics:
  1. export with torch's default exporter (dynamo=True), dynamic batch;
  2. build ONE dynamic-batch kilnrt CUDA engine (batch 1..32) per precision (fp32, fp16, bf16);
  3. compare with PyTorch fp32 with TF32 off, at batch 1 and 32: mean-centred cosine (fp32 >= 0.99999, fp16 / bf16
     >= 0.999: the worst output counts) and max abs error / std of the reference output (reported);
  4. classifiers: over 8 batches of 32 random inputs (256), the share of inputs whose reference top-1 class is in
     kilnrt's top-5 (>= 99%); top-1 agreement is reported too.
Writes zoo_accuracy.md (table) and zoo_accuracy.json (all figures) into --out; the exit status is 1 when a threshold
fails or a model does not export / build / run, 0 otherwise.

    PYTHONPATH=build-gpu/python python3 scripts/zoo_accuracy.py --out OUT [--models a,b] [--precisions fp32,fp16]

BERT needs `transformers`; on a box without network access install the carried wheels first (pinned versions and the
download command: docstring of bench/zoo_models.py):
    pip install --no-index --no-deps --target /tmp/pydeps .wheels/*.whl && export PYTHONPATH=/tmp/pydeps:$PYTHONPATH
Time on an H100 (whole zoo, three precisions): see bench/results/README.md; scripts/gpu_suite.sh splits the zoo into
two stages of at most 10 minutes each.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))

import torch  # noqa: E402

import kilnrt  # noqa: E402
import zoo_models  # noqa: E402

COS_MIN = {"fp32": 0.99999, "fp16": 0.999, "bf16": 0.999}
TOP5_MIN = 0.99


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="all", help="comma-separated zoo names, or 'all' (default): " +
                   ", ".join(zoo_models.zoo()))
    p.add_argument("--precisions", default="fp32,fp16,bf16")
    p.add_argument("--batches", default="1,32", help="batch sizes compared (each within 1..32)")
    p.add_argument("--top5-batches", type=int, default=8, help="batches of 32 for the top-5 agreement (default 8)")
    p.add_argument("--out", default="zoo_accuracy_out", help="directory for zoo_accuracy.md / .json")
    p.add_argument("--bert-attn", default="sdpa", choices=["sdpa", "eager"],
                   help="transformers attention implementation (sdpa: transformers' default; if its export fails, "
                        "eager is tried and the table says so)")
    p.add_argument("--keep-onnx", action="store_true", help="keep the exported models in OUT/onnx")
    return p.parse_args(argv)


def export_model(spec, args, work):
    """(model, onnx path, export seconds, note). For BERT an export failure with sdpa falls back to eager."""
    attempts = [args.bert_attn] + (["eager"] if spec.kind == "text" and args.bert_attn != "eager" else [])
    last = None
    for attn in attempts:
        spec.attn = attn
        model = spec.make()
        path = os.path.join(work, spec.name + ".onnx")
        t0 = time.perf_counter()
        try:
            spec.export(model, path)
            note = spec.note
            if last is not None:
                note += "; export with %s failed (%s), used eager" % (attempts[0], last)
            return model, path, time.perf_counter() - t0, note
        except Exception as e:  # noqa: BLE001 - recorded, next attempt or failure
            last = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])
            traceback.print_exc()
            del model
    raise RuntimeError("export failed: " + last)


def placements(engine):
    counts = {}
    for layer in engine.layers:
        counts[layer["placement"]] = counts.get(layer["placement"], 0) + 1
    return counts


def check_precision(spec, prec, onnx_path, refs, top5_sets, args, work):
    """Builds and checks one engine. Returns a result dict."""
    res = {"precision": prec, "batches": {}, "failures": []}
    eng_path = os.path.join(work, "%s.%s.engine" % (spec.name, prec))
    t0 = time.perf_counter()
    kilnrt.build(onnx_path, eng_path, device="cuda", fp16=(prec == "fp16"), bf16=(prec == "bf16"),
                 shapes=spec.kilnrt_shapes())
    res["build_s"] = time.perf_counter() - t0
    res["engine_mb"] = os.path.getsize(eng_path) / 2**20
    t0 = time.perf_counter()
    engine = kilnrt.Engine(eng_path)
    res["load_s"] = time.perf_counter() - t0
    res["placements"] = placements(engine)
    off = {k: v for k, v in res["placements"].items() if k not in ("cuda", "host")}
    if off:
        res["failures"].append("layers placed off the GPU: %s" % off)
    with torch.no_grad():
        for b, (inputs, ref_outs) in refs.items():
            got = zoo_models.run_engine(engine, spec, inputs)
            torch.cuda.synchronize()
            per = {}
            for name, g, r in zip(spec.output_names, got, ref_outs):
                if tuple(g.shape) != tuple(r.shape):
                    res["failures"].append("batch %d %s: shape %s, expected %s" % (b, name, tuple(g.shape),
                                                                                   tuple(r.shape)))
                    continue
                cos, err = zoo_models.accuracy(g.float(), r)
                finite = bool(torch.isfinite(g.float()).all())
                per[name] = {"cosine": cos, "max_err_over_std": err, "finite": finite}
                if not finite:
                    res["failures"].append("batch %d %s: non-finite values" % (b, name))
                if not cos >= COS_MIN[prec]:
                    res["failures"].append("batch %d %s: cosine %.7f < %g" % (b, name, cos, COS_MIN[prec]))
            res["batches"][b] = per
        if top5_sets:
            hits = top1 = total = 0
            for inputs, ref_top1 in top5_sets():
                logits = zoo_models.run_engine(engine, spec, inputs)[0].float()
                top5 = logits.topk(5, dim=1).indices
                hits += int((top5 == ref_top1[:, None]).any(dim=1).sum())
                top1 += int((top5[:, 0] == ref_top1).sum())
                total += ref_top1.numel()
            res["top5"] = hits / total
            res["top1"] = top1 / total
            res["top5_inputs"] = total
            if not res["top5"] >= TOP5_MIN:
                res["failures"].append("top-5 agreement %.4f < %g over %d inputs" % (res["top5"], TOP5_MIN, total))
    del engine
    os.remove(eng_path)
    return res


def check_model(spec, args, work):
    rec = {"model": spec.name, "precisions": [], "failures": []}
    t_model = time.perf_counter()
    try:
        model, onnx_path, rec["export_s"], rec["note"] = export_model(spec, args, work)
    except Exception as e:  # noqa: BLE001
        rec["failures"].append(str(e))
        return rec
    batches = [int(b) for b in args.batches.split(",")]
    with torch.no_grad():
        refs = {}
        for b in batches:
            inputs = spec.inputs(b, seed=b)
            refs[b] = (inputs, tuple(o.float() for o in zoo_models.as_tuple(model(*inputs))))
        top5_refs = []
        if spec.classifier and args.top5_batches > 0:
            for i in range(args.top5_batches):
                top5_refs.append(zoo_models.as_tuple(model(*spec.inputs(32, seed=500 + i)))[0].argmax(dim=1))

    def top5_sets():
        for i, ref_top1 in enumerate(top5_refs):
            yield spec.inputs(32, seed=500 + i), ref_top1

    del model
    torch.cuda.empty_cache()
    for prec in args.precisions.split(","):
        t0 = time.perf_counter()
        try:
            res = check_precision(spec, prec, onnx_path, refs, top5_sets if top5_refs else None, args, work)
        except Exception as e:  # noqa: BLE001 - a build/run failure fails this precision only
            traceback.print_exc()
            res = {"precision": prec, "failures": ["%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0])]}
        res["seconds"] = time.perf_counter() - t0
        rec["precisions"].append(res)
        print("  %-18s %-4s %s (%.0f s)" % (spec.name, prec, "FAIL: " + "; ".join(res["failures"]) if res["failures"]
                                           else "ok", res["seconds"]), flush=True)
        torch.cuda.empty_cache()
    if args.keep_onnx:
        os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
        for f in os.listdir(work):  # the model and its external data file, if any
            if f.startswith(spec.name + ".onnx"):
                shutil.copy(os.path.join(work, f), os.path.join(args.out, "onnx"))
    rec["seconds"] = time.perf_counter() - t_model
    return rec


def fmt(v, spec="%.6f"):
    return "-" if v is None else spec % v


def table(records, header):
    rows = [header, "",
            "| model | prec | cosine b1 | cosine b32 | max err/std b1 | max err/std b32 | top-5 (inputs) | top-1 | "
            "build s | load s | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for rec in records:
        if not rec["precisions"]:
            rows.append("| %s | - | | | | | | | | | FAIL: %s |" % (rec["model"], "; ".join(rec["failures"])[:200]))
            continue
        for res in rec["precisions"]:
            cells = []
            for b in ("1", "32"):
                per = res.get("batches", {}).get(b) or res.get("batches", {}).get(int(b))
                cells.append(min(v["cosine"] for v in per.values()) if per else None)
            errs = []
            for b in ("1", "32"):
                per = res.get("batches", {}).get(b) or res.get("batches", {}).get(int(b))
                errs.append(max(v["max_err_over_std"] for v in per.values()) if per else None)
            top5 = "%.2f%% (%d)" % (100 * res["top5"], res["top5_inputs"]) if "top5" in res else "-"
            top1 = "%.2f%%" % (100 * res["top1"]) if "top1" in res else "-"
            verdict = "FAIL: " + "; ".join(res["failures"])[:200] if res["failures"] else "PASS"
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                rec["model"], res["precision"], fmt(cells[0], "%.7f"), fmt(cells[1], "%.7f"), fmt(errs[0], "%.2e"),
                fmt(errs[1], "%.2e"), top5, top1, fmt(res.get("build_s"), "%.1f"), fmt(res.get("load_s"), "%.2f"),
                verdict))
    notes = ["- %s: %s; export %.0f s, whole model %.0f s" % (r["model"], r.get("note") or "torchvision",
                                                               r.get("export_s", 0), r.get("seconds", 0))
             for r in records if "export_s" in r]
    return "\n".join(rows + [""] + notes) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("zoo_accuracy: no CUDA device visible to torch; this check needs the GPU machine")
        return 2
    zoo_models.reference_settings()
    os.makedirs(args.out, exist_ok=True)
    for prec in args.precisions.split(","):
        if prec not in COS_MIN:
            raise SystemExit("unknown precision %r (fp32, fp16, bf16)" % prec)
    specs = zoo_models.select(args.models)
    header = ("Zoo accuracy: kilnrt CUDA engines (one dynamic engine, batch 1..%d, per model and precision) vs "
              "PyTorch fp32 (TF32 off). GPU %s, torch %s, kilnrt %s, %s. Thresholds: cosine (mean-centred, worst "
              "output) fp32 >= %g, fp16/bf16 >= %g; top-5 agreement >= %g%%." % (
                  zoo_models.MAX_BATCH, torch.cuda.get_device_name(), torch.__version__, kilnrt.__version__,
                  time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), COS_MIN["fp32"], COS_MIN["fp16"],
                  100 * TOP5_MIN))
    work = tempfile.mkdtemp(prefix="kilnrt-zoo-")
    records = []
    t0 = time.perf_counter()
    try:
        for spec in specs:
            print("== %s" % spec.name, flush=True)
            records.append(check_model(spec, args, work))
            for f in os.listdir(work):
                os.remove(os.path.join(work, f))
            with open(os.path.join(args.out, "zoo_accuracy.json"), "w") as f:  # after each model: a timeout
                json.dump({"header": header, "models": records}, f, indent=1)  # keeps what was done
            with open(os.path.join(args.out, "zoo_accuracy.md"), "w") as f:
                f.write(table(records, header))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failures = [(r["model"], x) for r in records for x in r["failures"]] + \
               [(r["model"] + " " + p["precision"], x) for r in records for p in r["precisions"] for x in p["failures"]]
    print(table(records, header))
    print("zoo accuracy: %d models, %d checks failed, %.0f s" % (len(records), len(failures),
                                                                  time.perf_counter() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
