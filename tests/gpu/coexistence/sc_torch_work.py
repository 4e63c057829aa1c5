"""torch CUDA work before engine creation (argv[1] = before) or after it (after): kilnrt and torch share the
primary context without disturbing each other; torch's own results stay correct, torch's current device is kept,
and the thread's context state is unchanged by every kilnrt call (also when nothing was current before)."""
import sys

import numpy as np

import common
import ctxcheck

when = sys.argv[1]


def torch_work(torch, r):
    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # 64 MiB from torch's caching allocator
    c = (a @ b).cpu().numpy()
    want = a.cpu().numpy().astype(np.float64) @ b.cpu().numpy().astype(np.float64)
    if np.max(np.abs(c - want)) > 1e-2 * np.max(np.abs(want)):
        raise AssertionError("torch's matmul is wrong next to kilnrt")
    del big
    if torch.cuda.current_device() != 0:
        raise AssertionError("torch's current device changed")


def run(r):
    import torch
    import kilnrt
    if when == "before":
        torch_work(torch, r)
        r.note("context before kilnrt: %s" % ctxcheck.describe(ctxcheck.state()))
        engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
        common.check_numpy_io(kilnrt, engines)
        if common.torch_interop(kilnrt, engines, torch):
            common.check_torch_io(kilnrt, engines, torch)
        torch_work(torch, r)
    else:
        s0 = ctxcheck.state()
        engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
        common.check_numpy_io(kilnrt, engines)
        if ctxcheck.state() != s0 or s0[0] != 0:
            raise AssertionError("kilnrt left a context current on a thread that had none: %s" % ctxcheck.describe(ctxcheck.state()))
        torch_work(torch, r)
        common.check_numpy_io(kilnrt, engines, tag=" after torch")
        if common.torch_interop(kilnrt, engines, torch):
            common.check_torch_io(kilnrt, engines, torch)
        torch_work(torch, r)


common.main(run)
