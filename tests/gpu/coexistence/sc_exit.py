"""Interpreter exit with live engines: fresh interpreters that keep CUDA and CPU engines (and torch tensors from
them) alive to the end exit with status 0, without a hang or a crash: a plain end of script, sys.exit right after
enqueueing work that nobody waited for, and exit while a daemon thread is inside engine calls."""
import os
import subprocess
import sys
import threading
import time

import common

VARIANTS = ("plain", "pending", "daemon-thread")
BAD = ("Segmentation fault", "terminate called", "Aborted", "core dumped", "Fatal Python error")


def child(variant):
    import kilnrt
    engines = [kilnrt.Engine(common.engine_path(m, k)) for m in common.MODELS for k in ("cuda", "cpu")]
    x = common.fixture_input("transformer_encoder_layer", 2)
    outs = [engines[0](x)]
    t = x
    try:
        import torch
        t = torch.from_numpy(x).cuda()
        outs.append(engines[0](t))
    except Exception:  # noqa: BLE001  (no torch / no interop: numpy only)
        t = x
    if variant == "pending":
        for _ in range(20):
            outs.append(engines[0](t))  # torch tensors: enqueued on torch's stream, nobody waits
        sys.exit(0)
    if variant == "daemon-thread":
        def spin():
            while True:
                engines[0](x)
                engines[2](common.fixture_input("mobilenet_v3_small", 1))
        for _ in range(2):
            threading.Thread(target=spin, daemon=True).start()
        time.sleep(0.5)
    print("child %s: exiting with %d engines alive" % (variant, len(engines)), flush=True)


def run(r):
    for v in VARIANTS:
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "child", v], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            raise AssertionError("variant %s: the interpreter did not exit within 90 s (hang at exit)" % v)
        text = p.stdout + p.stderr
        sys.stdout.write("--- %s (rc %d, %.1f s)\n%s\n" % (v, p.returncode, time.time() - t0, text[-3000:]))
        if p.returncode != 0:
            raise AssertionError("variant %s: exit status %d: %s" % (v, p.returncode, text.strip().splitlines()[-1:] ))
        bad = [b for b in BAD if b in text]
        if bad:
            raise AssertionError("variant %s: %s in the output" % (v, bad))
        r.note("%s: rc 0 in %.1f s" % (v, time.time() - t0))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2])
    else:
        common.main(run)
