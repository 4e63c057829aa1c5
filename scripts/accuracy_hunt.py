#!/usr/bin/env python3
"""Finds where an engine's accuracy goes wrong, layer by layer.

Builds two engines of MODEL with every intermediate tensor marked as an output (mark_all_outputs): a reference
(CPU, float32) and a candidate (default: CUDA with --fp16), runs both on the same inputs, and compares each tensor in
execution order. Prints a table and the first tensor whose error exceeds the threshold (exit status 1), or says that
none does (exit status 0).

    scripts/accuracy_hunt.py model.onnx --input x=x.npy --fp16 --threshold 1e-2
    scripts/accuracy_hunt.py model.onnx --bf16 --layer-precision Softmax=fp32 --shapes x:1x3x224x224

Error of a tensor: max |candidate - reference| / max |reference| (relative max error), and the cosine similarity of
the mean-centred tensors. Needs the kilnrt Python module (PYTHONPATH=build/python).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

import kilnrt


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="ONNX model")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input (repeat per input); missing inputs get random normal values")
    p.add_argument("--device", default="cuda", help="candidate device (cuda, cuda:N or cpu)")
    precision = p.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true", help="candidate built with --fp16 (the default)")
    precision.add_argument("--bf16", action="store_true", help="candidate built with --bf16")
    precision.add_argument("--fp32", action="store_true", help="candidate in float32")
    p.add_argument("--tf32", action="store_true", help="candidate allows TF32")
    p.add_argument("--layer-precision", action="append", default=[], metavar="PATTERN=PRECISION",
                   help="per-layer precision of the candidate (repeatable, as kilnrt build)")
    p.add_argument("--shapes", action="append", default=[], metavar="NAME:SHAPE",
                   help="input shape spec for both engines (as kilnrt build --shapes)")
    p.add_argument("--threshold", type=float, default=1e-2, help="relative max error that counts as wrong")
    p.add_argument("--all", action="store_true", help="print every tensor (default: up to the first wrong one + 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs")
    return p.parse_args(argv)


def tensor_error(got, want):
    """(relative max error, cosine of the mean-centred tensors); exact mismatch fraction for non-float tensors."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return float("inf"), float("nan")
    if want.size == 0:
        return 0.0, 1.0
    if not np.issubdtype(want.dtype, np.floating):
        return float(np.mean(got != want)), float("nan")
    a = got.astype(np.float64).ravel()
    b = want.astype(np.float64).ravel()
    finite = np.isfinite(b)
    if not np.array_equal(np.isfinite(a), finite):
        return float("inf"), float("nan")
    a, b = a[finite], b[finite]
    if b.size == 0:
        return 0.0, 1.0
    scale = np.max(np.abs(b))
    rel = float(np.max(np.abs(a - b)) / scale) if scale > 0 else float(np.max(np.abs(a)))
    ac, bc = a - a.mean(), b - b.mean()
    denom = np.sqrt(np.dot(ac, ac) * np.dot(bc, bc))
    cos = float(np.dot(ac, bc) / denom) if denom > 0 else (1.0 if np.allclose(ac, bc) else 0.0)
    return rel, cos


def make_inputs(engine, given, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in engine.inputs:
        if spec.name in given:
            feeds[spec.name] = np.load(given[spec.name])
            continue
        shape = list(spec.shape)
        for profile in engine.profiles:
            for name, _mn, opt, _mx in profile:
                if name == spec.name:
                    shape = list(opt)
        shape = [d if d >= 0 else 1 for d in shape]
        if np.issubdtype(spec.dtype, np.floating):
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
        else:
            feeds[spec.name] = np.zeros(shape, dtype=spec.dtype)
    return feeds


def execution_order(engine):
    """Engine outputs in the order their layers run (the model's outputs where their layer runs)."""
    outputs = {o.name for o in engine.outputs}
    order = []
    for layer in engine.layers:
        order += [name for name in layer["outputs"] if name in outputs and name not in order]
    order += [o.name for o in engine.outputs if o.name not in order]
    producer = {name: layer for layer in engine.layers for name in layer["outputs"]}
    return order, producer


def main(argv=None):
    args = parse_args(argv)
    given = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep:
            sys.exit("--input %r: expected NAME=FILE.npy" % item)
        given[name] = path
    precisions = []
    for item in args.layer_precision:
        pattern, sep, value = item.rpartition("=")
        if not sep:
            sys.exit("--layer-precision %r: expected PATTERN=fp32|fp16|bf16" % item)
        precisions.append((pattern, value))
    fp16 = not (args.bf16 or args.fp32) if args.device != "cpu" else False
    with tempfile.TemporaryDirectory() as tmp:
        ref_path = os.path.join(tmp, "reference.engine")
        cand_path = os.path.join(tmp, "candidate.engine")
        kilnrt.build(args.model, ref_path, device="cpu", shapes=args.shapes or None, mark_all_outputs=True)
        kilnrt.build(args.model, cand_path, device=args.device, shapes=args.shapes or None, fp16=fp16,
                     bf16=args.bf16, tf32=args.tf32, layer_precisions=precisions, mark_all_outputs=True)
        reference = kilnrt.Engine(ref_path)
        device = 0 if args.device in ("cpu", "cuda") else int(args.device.split(":")[1])
        candidate = kilnrt.Engine(cand_path, device=device)
    feeds = make_inputs(reference, given, args.seed)
    want = reference.run(feeds)
    got = candidate.run(feeds)
    order, producer = execution_order(reference)
    cand_precision = {layer["name"]: layer.get("precision", "?") for layer in candidate.layers}
    kind = "fp32" if args.fp32 else "bf16" if args.bf16 else "fp16" if fp16 else "fp32"
    print("accuracy hunt: %s, candidate %s %s%s vs CPU float32, %d tensors, threshold %g" % (
        args.model, args.device, kind, " tf32" if args.tf32 else "", len(order), args.threshold))
    print("  %-4s %-44s %-18s %-6s %12s %12s" % ("#", "tensor", "op", "prec", "rel max err", "cosine"))
    first_bad = None
    shown_after = 0
    for i, name in enumerate(order):
        if name not in got:
            continue
        rel, cos = tensor_error(got[name], want[name])
        layer = producer.get(name, {})
        bad = not (rel <= args.threshold)
        if first_bad is None and bad:
            first_bad = (i, name, layer, rel, cos)
        if args.all or first_bad is None or shown_after < 5:
            print("  %-4d %-44s %-18s %-6s %12.4g %12.6f%s" % (
                i, name[-44:], layer.get("op_type", "?")[:18], cand_precision.get(layer.get("name"), "?"), rel, cos,
                "  <-- first above threshold" if first_bad is not None and first_bad[1] == name else ""))
            if first_bad is not None:
                shown_after += 1
    if first_bad is None:
        print("no tensor above the threshold %g" % args.threshold)
        return 0
    i, name, layer, rel, cos = first_bad
    print("first tensor above the threshold: #%d '%s' (layer '%s', %s): relative max error %.4g, cosine %.6f" % (
        i, name, layer.get("name", "?"), layer.get("op_type", "?"), rel, cos))
    print("try: --layer-precision '%s=fp32'" % layer.get("name", name))
    return 1


if __name__ == "__main__":
    sys.exit(main())
