"""Depthwise layers' share of `kilnrt profile` tables (scripts/dw_gpu_check.sh).

Usage: KILNRT_CUDA_NHWC=1 PYTHONPATH=BUILD/python python3 scripts/dw_profile_summary.py PROFILES.txt ENGINE_DIR
PROFILES.txt: sections "================ NAME  CONFIG" followed by `kilnrt profile ... --top 1000` output.
The depthwise layers are the engine layers whose tactic names the NHWC depthwise kernel (hence KILNRT_CUDA_NHWC=1
when loading here). Prints per model and config: whole-engine ms, the depthwise layers' summed ms and count, and
the slowest depthwise layers side by side over the configs.
"""
import os
import re
import sys

import kilnrt


def fit(name):  # as cmd_profile.cc prints a layer name
    return name if len(name) <= 43 else name[:40] + "..."


def main():
    prof, edir = sys.argv[1], sys.argv[2]
    sections = {}  # (model, config) -> {layer: ms}, plus "__whole__"
    key = None
    row = re.compile(r"^\s*\d+\s+(\S+)\s+.*?\s([0-9.]+)\s+[0-9.]+\s*$")
    for line in open(prof):
        if line.startswith("================"):
            parts = line.split()
            key = (parts[1], " ".join(parts[2:]))
            sections[key] = {}
            continue
        if key is None:
            continue
        m = re.search(r"whole engine[^0-9]*([0-9.]+)", line)
        if m:
            sections[key]["__whole__"] = float(m.group(1))
        m = row.match(line)
        if m:
            sections[key][m.group(1)] = float(m.group(2))
    models = sorted({k[0] for k in sections})
    for model in models:
        path = os.path.join(edir, model + ".engine")
        dw = [l["name"] for l in kilnrt.Engine(path).layers if "depthwise" in l["tactic"]]
        configs = [k for k in sections if k[0] == model]
        print("== %s: %d depthwise layers" % (model, len(dw)))
        for k in configs:
            t = sections[k]
            s = sum(t.get(fit(n), 0.0) for n in dw)
            print("  %-40s whole %8s ms   depthwise sum %.4f ms" % (k[1], t.get("__whole__", "?"), s))
        top = sorted(dw, key=lambda n: -max(sections[k].get(fit(n), 0.0) for k in configs))[:12]
        print("  %-44s %s" % ("layer", " | ".join(k[1] for k in configs)))
        for n in top:
            print("  %-44s %s" % (fit(n), " | ".join("%.4f" % sections[k].get(fit(n), -1) for k in configs)))


if __name__ == "__main__":
    main()
