"""Compares two run_conformance.py --json results (CPU and CUDA over the same saved cases): lists the cases that pass
on the CPU and not on CUDA (the aim: none), and the reverse.
usage: python3 scripts/conformance_cpu_vs_cuda.py CPU.json CUDA.json [--out FILE.md]"""
import argparse
import json


def statuses(path):
    """({case: passed|failed|excluded}, summary, {case: message})"""
    with open(path) as f:
        data = json.load(f)
    st = {n: "passed" for n in data["passed"]}
    msgs = {}
    for kind in ("failed", "excluded"):
        for n, m in data[kind].items():
            st[n] = kind
            msgs[n] = m
    return st, data["summary"], msgs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cpu")
    ap.add_argument("cuda")
    ap.add_argument("--out")
    a = ap.parse_args()
    cpu, cpu_sum, _ = statuses(a.cpu)
    cuda, cuda_sum, cuda_cases = statuses(a.cuda)
    lost = sorted(n for n, s in cpu.items() if s == "passed" and cuda.get(n) != "passed")
    gained = sorted(n for n, s in cuda.items() if s == "passed" and cpu.get(n) != "passed")
    lines = ["CPU: %s" % json.dumps(cpu_sum), "CUDA: %s" % json.dumps(cuda_sum),
             "passed on CPU, not on CUDA: %d" % len(lost)]
    for n in lost:
        msg = cuda_cases.get(n, "not run")
        lines.append("  %-60s %s" % (n, str(msg).replace("\n", " ")[:220]))
    lines.append("passed on CUDA, not on CPU: %d%s" % (len(gained), (" (" + ", ".join(gained[:20]) + ")") if gained else ""))
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
