"""NHWC vs NCHW on whole 16-bit CUDA engines (GPU machine): for each engine given, loads it with
KILNRT_CUDA_NHWC=0 (NCHW), =1 (NHWC forced) and unset (the plan's prediction), runs the same random input and
prints the largest output difference relative to the NCHW output's largest magnitude, and how many layers run NHWC,
as views or with a reformatted input. Exit status 1 when NHWC outputs differ by more than --tol.

  PYTHONPATH=build-gpu/python python3 scripts/nhwc_model_check.py ENGINE... [--tol 0.05]
"""
import argparse
import os
import sys

import numpy as np

import kilnrt


def load(path, mode):
    if mode is None:
        os.environ.pop("KILNRT_CUDA_NHWC", None)
    else:
        os.environ["KILNRT_CUDA_NHWC"] = mode
    return kilnrt.Engine(path)  # the layout is planned at load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engines", nargs="+")
    ap.add_argument("--tol", type=float, default=0.05)
    args = ap.parse_args()
    bad = 0
    for path in args.engines:
        name = os.path.basename(path)
        ref_engine = load(path, "0")
        rng = np.random.default_rng(0)
        feeds = {s.name: rng.standard_normal(tuple(s.shape)).astype(np.float32) for s in ref_engine.inputs}
        ref = ref_engine.run(feeds)
        del ref_engine
        for mode in ("1", None):
            e = load(path, mode)
            layers = e.layers
            nhwc = sum("+nhwc" in l["tactic"] for l in layers)
            views = sum("+nhwc-view" in l["tactic"] for l in layers)
            refm = sum("+reformat" in l["tactic"] for l in layers)
            got = e.run(feeds)
            worst = 0.0
            for k, v in ref.items():
                scale = float(np.abs(v).max()) or 1.0
                worst = max(worst, float(np.abs(np.asarray(got[k], np.float32) - np.asarray(v, np.float32)).max()) / scale)
            ok = np.isfinite(worst) and worst <= args.tol
            bad += 0 if ok else 1
            print("%-34s NHWC=%-5s nhwc layers %3d (views %2d), reformatted %2d, max diff / max |ref| %.2e %s"
                  % (name, mode if mode else "unset", nhwc, views, refm, worst, "ok" if ok else "FAIL"))
            del e
    os.environ.pop("KILNRT_CUDA_NHWC", None)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
