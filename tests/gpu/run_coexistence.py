#!/usr/bin/env python3
"""kilnrt coexistence suite: each scenario of tests/gpu/coexistence/ runs as its own process with a
timeout (a hang fails); prints a PASS / PARTIAL / SKIP / FAIL table with reasons and exits non-zero on any FAIL.

    python3 tests/gpu/run_coexistence.py [--build build-gpu] [--out DIR] [--timeout 240] [-k NAME] [--list]

--build: the CMake build directory (its python/ folder is the in-tree kilnrt package; the relocation scenario
installs from it). Engines of the fixtures are built once (CPU + CUDA) into a temporary directory. Without a usable
GPU every scenario is SKIP (with the reason) and the exit status is 0. See docs/coexistence.md.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SC_DIR = os.path.join(HERE, "coexistence")
REPO = os.path.dirname(os.path.dirname(HERE))

# name, script, args, extra environment, what it proves
SCENARIOS = [
    ("torch_imported_before_kilnrt", "sc_torch_import.py", ["before"], {}, "import order torch -> kilnrt"),
    ("torch_imported_after_kilnrt", "sc_torch_import.py", ["after"], {}, "import order kilnrt -> torch"),
    ("torch_cuda_work_before_engine", "sc_torch_work.py", ["before"], {}, "torch initialises CUDA first"),
    ("torch_cuda_work_after_engine", "sc_torch_work.py", ["after"], {}, "kilnrt initialises CUDA first"),
    ("torch_alloc_expandable_segments", "sc_torch_alloc.py", [], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
     "VMM memory (NULL owning context) accepted"),
    ("torch_alloc_cudaMallocAsync", "sc_torch_alloc.py", [], {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
     "stream-ordered pool memory accepted"),
    ("cupy_pools_and_streams", "sc_cupy.py", [], {}, "cupy default pool, stream, MemoryAsyncPool"),
    ("cuda_python_setdevice_stream", "sc_cuda_python.py", [], {}, "runtime cudaSetDevice + own stream"),
    ("user_context_cuCtxCreate", "sc_user_context.py", [], {}, "user context kept; its memory refused clearly"),
    ("torch_cuda_graph_capture_warmed_stream", "sc_torch_graph.py", ["warmed"], {},
     "kilnrt recorded into torch.cuda.graph on a warmed-up stream; replay"),
    ("torch_cuda_graph_capture_fresh_stream", "sc_torch_graph.py", ["fresh"], {},
     "capture on torch's own capture stream (no kilnrt allocation while capturing)"),
    ("onnxruntime_same_process", "sc_onnxruntime.py", [], {}, "ORT session in the same process"),
    ("threads_8_one_engine", "sc_threads.py", [], {}, "8 threads, one engine, own streams/contexts"),
    ("engine_created_on_other_thread", "sc_cross_thread.py", [], {}, "engines are not thread-affine"),
    ("fork_before_gpu_use", "sc_fork.py", ["before"], {}, "child forked before CUDA init works"),
    ("fork_after_gpu_use", "sc_fork.py", ["after"], {}, "child gets the clear error; parent fine"),
    ("spawn_after_gpu_use", "sc_fork.py", ["spawn"], {}, "spawn children work"),
    ("relocated_library", "sc_relocated.py", [], {}, "bundled-app layout loads from its own directory"),
    ("interpreter_exit_live_engines", "sc_exit.py", [], {}, "exit 0 with live engines, no hang/crash"),
    ("two_gpus_engine_on_device_1", "sc_two_gpu.py", [], {}, "engine on cuda:1 while torch is on cuda:0"),
]


def parse_result(text):
    result = None
    for line in text.splitlines():
        if line.startswith("@@RESULT "):
            try:
                result = json.loads(line[len("@@RESULT "):])
            except ValueError:
                pass
    return result


EXIT = {"PASS": 0, "PARTIAL": 3, "SKIP": 4}


def describe_rc(rc):
    if rc is not None and rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %s" % rc


def judge(result, rc, timed_out, timeout, stderr_tail):
    """(status, reason) from the scenario's result line, exit status and timeout."""
    if timed_out:
        after = " (after reporting %s)" % result["status"] if result else ""
        return "FAIL", "hang: no exit within %d s%s" % (timeout, after)
    if result is None:
        return "FAIL", "no result line, %s: %s" % (describe_rc(rc), stderr_tail)
    status = result.get("status", "FAIL")
    if status == "FAIL":
        return "FAIL", result.get("reason", "")
    if EXIT.get(status) != rc:
        return "FAIL", "reported %s but then %s (crash at interpreter exit?)" % (status, describe_rc(rc))
    return status, result.get("reason", "")


def run_one(name, script, args, extra_env, env, python, timeout, log_dir):
    e = dict(env)
    e.update(extra_env)
    t0 = time.time()
    timed_out = False
    try:
        p = subprocess.run([python, os.path.join(SC_DIR, script)] + args, env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=REPO, start_new_session=True)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as exc:
        timed_out = True
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        rc = None
    seconds = time.time() - t0
    with open(os.path.join(log_dir, name + ".log"), "w") as f:
        f.write("$ %s %s %s\n# env %s\n--- stdout\n%s\n--- stderr\n%s\n" % (
            python, script, " ".join(args), extra_env, out, err))
    result = parse_result(out)
    tail = " | ".join([line for line in err.strip().splitlines() if line.strip()][-2:])[:300]
    status, reason = judge(result, rc, timed_out, timeout, tail)
    return {"name": name, "status": status, "reason": reason, "seconds": round(seconds, 1),
            "result": result or {}, "rc": rc}


def metrics_text(res):
    r = res.get("result") or {}
    parts = []
    if r.get("compared"):
        parts.append("%d cmp, err/max_ref %.1e, min cos %.7f" % (r["compared"], r["worst_rel_err"], r["min_cosine"]))
    if r.get("checks"):
        parts.append("%d ctx checks" % r["checks"])
    return "; ".join(parts)


def table(results):
    rows = [("scenario", "result", "time", "figures", "reason / notes")]
    for res in results:
        notes = res["reason"]
        extra = (res.get("result") or {}).get("notes") or []
        if res["status"] != "PASS" and extra:
            notes = notes + (" | " if notes else "") + "; ".join(extra)
        rows.append((res["name"], res["status"], "%.1fs" % res["seconds"], metrics_text(res), notes))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(r[k].ljust(widths[k]) for k in range(4)) + "  " + r[4])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 14)
    return "\n".join(lines)


def markdown(results, prep):
    md = ["# kilnrt coexistence suite", "", "Setup: %s" % json.dumps(prep), "",
          "| scenario | result | time | figures | reason / notes |", "|---|---|---|---|---|"]
    for res in results:
        notes = res["reason"]
        extra = (res.get("result") or {}).get("notes") or []
        if extra and extra != [notes]:
            notes = notes + (" | " if notes else "") + "; ".join(extra)
        md.append("| %s | %s | %.1f s | %s | %s |" % (res["name"], res["status"], res["seconds"], metrics_text(res),
                                                      notes.replace("|", "\\|")))
    return "\n".join(md) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("KILNRT_BUILD_DIR", os.path.join(REPO, "build-gpu")))
    ap.add_argument("--pythonpath", default=None, help="directory holding the kilnrt package (default BUILD/python)")
    ap.add_argument("--out", default=None, help="log directory (default: a temporary one)")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per scenario (default 240)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("-k", dest="only", action="append", default=[], help="run scenarios whose name contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--fake-gpu", action="store_true", help="plumbing self-test without a GPU: CPU engines stand in "
                    "for CUDA ones and a fake context stack for the driver's (results say nothing about CUDA)")
    a = ap.parse_args()
    if a.list:
        for name, script, args, extra, proves in SCENARIOS:
            print("%-34s %-22s %s" % (name, " ".join([script] + args), proves))
        return 0
    chosen = [s for s in SCENARIOS if not a.only or any(k in s[0] for k in a.only)]
    build = os.path.abspath(a.build)
    pythonpath = os.path.abspath(a.pythonpath or os.path.join(build, "python"))
    out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="kilnrt-coex-logs-"))
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kilnrt-coex-")
    engines = os.path.join(work, "engines")
    os.makedirs(engines)
    env = dict(os.environ, KILNRT_PYTHONPATH=pythonpath, KILNRT_COEX_ENGINES=engines, KILNRT_BUILD_DIR=build,
               PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if a.fake_gpu:
        env["KILNRT_COEX_FAKE_GPU"] = "1"
    print("kilnrt coexistence suite: package %s, logs %s" % (pythonpath, out), flush=True)

    # Step 0: build the engines, find out whether a GPU is usable.
    t0 = time.time()
    prep = {}
    try:
        p = subprocess.run([a.python, os.path.join(SC_DIR, "prepare.py")], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600, cwd=REPO)
        with open(os.path.join(out, "prepare.log"), "w") as f:
            f.write(p.stdout)
        for line in p.stdout.splitlines():
            if line.startswith("@@PREPARE "):
                prep = json.loads(line[len("@@PREPARE "):])
        prep_error = None if (p.returncode == 0 and prep) else "prepare failed (rc %s): %s" % (
            p.returncode, " | ".join(p.stdout.strip().splitlines()[-3:])[:400])
    except subprocess.TimeoutExpired:
        prep_error = "prepare (engine builds) did not finish within 600 s"
    print("prepare (%.1f s): %s" % (time.time() - t0, prep_error or json.dumps(prep)), flush=True)

    results = []
    for name, script, args, extra, proves in chosen:
        if prep_error:
            results.append({"name": name, "status": "FAIL", "reason": prep_error, "seconds": 0.0, "result": {}})
        elif not prep.get("cuda_available") and not a.fake_gpu:
            results.append({"name": name, "status": "SKIP", "reason": "no usable CUDA GPU: %s" % prep.get("why"),
                            "seconds": 0.0, "result": {}})
        else:
            res = run_one(name, script, args, extra, env, a.python, a.timeout, out)
            results.append(res)
            print("  %-34s %-7s %5.1fs  %s" % (name, res["status"], res["seconds"], res["reason"][:150]), flush=True)
    shutil.rmtree(work, ignore_errors=True)

    print()
    print(table(results))
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = ", ".join("%d %s" % (counts[k], k) for k in ("PASS", "PARTIAL", "SKIP", "FAIL") if k in counts)
    print("\n%s (logs in %s)" % (summary, out))
    with open(os.path.join(out, "coexistence.md"), "w") as f:
        f.write(markdown(results, prep) + "\n" + summary + "\n")
    with open(os.path.join(out, "coexistence.json"), "w") as f:
        json.dump({"prepare": prep, "results": results}, f, indent=1)
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
