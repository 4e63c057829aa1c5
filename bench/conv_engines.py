"""Exports zoo CNNs and builds static fp16 kilnrt engines for per-layer profiling (`kilnrt profile`).

Usage (GPU box): PYTHONPATH=build-gpu/python python3 bench/conv_engines.py --models resnet50 --batch 32 --dir /tmp/e
Prints one line per engine: MODEL PATH, plus the count of each tactic in the engine (FusedConv layers included).
"""
import argparse
import collections
import os
import sys

import kilnrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    for spec in zoo_models.select(args.models):
        model = spec.make()
        onnx_path = os.path.join(args.dir, spec.name + ".onnx")
        spec.export(model, onnx_path)
        path = os.path.join(args.dir, "%s.fp16.b%d.engine" % (spec.name, args.batch))
        kilnrt.build(onnx_path, path, device="cuda", fp16=True, shapes=spec.static_shapes(args.batch))
        engine = kilnrt.Engine(path)
        tactics = collections.Counter()
        for layer in engine.layers:  # dicts: name, op_type, placement, tactic, ...
            tactics["%s %s" % (layer["op_type"], layer["tactic"])] += 1
        print("ENGINE %s %s" % (spec.name, path))
        for t, n in tactics.most_common():
            print("   %4d  %s" % (n, t))


if __name__ == "__main__":
    main()
