"""Shared helpers of the coexistence scenarios (tests/gpu/coexistence/sc_*.py).

A scenario is a script run as its own process by tests/gpu/run_coexistence.py. It calls `common.main(fn)`; `fn(r)`
gets a Report, raises `Skip(reason)` to skip, calls `r.partial(reason)` when it could only do part of its job, and
fails by raising. The last line the process prints is `@@RESULT {json}` (status, reason, metrics, checks); exit
code 0 = PASS, 3 = PARTIAL, 4 = SKIP, anything else = FAIL.

Importing this module imports neither kilnrt nor torch (scenarios control the import order); it puts the kilnrt
package directory named by KILNRT_PYTHONPATH first on sys.path. Engines were built by the runner into
KILNRT_COEX_ENGINES: <model>.cuda.engine and <model>.cpu.engine.
"""
import json
import os
import sys
import threading
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "dynamo")
MODELS = ("transformer_encoder_layer", "mobilenet_v3_small")

if os.environ.get("KILNRT_PYTHONPATH") and os.environ.get("KILNRT_COEX_NO_PATH") != "1":
    for _p in reversed(os.environ["KILNRT_PYTHONPATH"].split(os.pathsep)):
        if _p and _p not in sys.path:
            sys.path.insert(0, _p)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import ctxcheck  # noqa: E402

EXIT = {"PASS": 0, "PARTIAL": 3, "SKIP": 4, "FAIL": 1}


class Skip(Exception):
    pass


class Report:
    def __init__(self):
        self.partials = []
        self.notes = []
        self.worst_rel = 0.0
        self.min_cos = 1.0
        self.compared = 0
        self._lock = threading.Lock()

    def partial(self, reason):
        with self._lock:
            if reason not in self.partials:
                self.partials.append(reason)

    def note(self, text):
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)

    def record(self, rel, cos):
        with self._lock:
            self.worst_rel = max(self.worst_rel, rel)
            self.min_cos = min(self.min_cos, cos)
            self.compared += 1


REPORT = Report()


def engines_dir():
    d = os.environ.get("KILNRT_COEX_ENGINES")
    if not d or not os.path.isdir(d):
        raise RuntimeError("KILNRT_COEX_ENGINES is not set to the runner's engine directory")
    return d


def engine_path(model, kind="cuda"):
    return os.path.join(engines_dir(), "%s.%s.engine" % (model, kind))


def fixture_input(model, batch=None):
    """The fixture's input, its samples repeated to `batch` (default: the fixture's own batch)."""
    x = np.load(os.path.join(FIXTURES, model + ".input.npy"))
    if batch is None or batch == x.shape[0]:
        return np.ascontiguousarray(x)
    idx = [i % x.shape[0] for i in range(batch)]
    return np.ascontiguousarray(x[idx])


_cpu_engines = {}
_refs = {}
_ref_lock = threading.Lock()


def reference(model, x):
    """The CPU engine's output for x (the oracle), cached per input content."""
    import kilnrt
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    key = (model, x.shape, hash(x.tobytes()))
    with _ref_lock:
        if key not in _refs:
            if model not in _cpu_engines:
                _cpu_engines[model] = kilnrt.Engine(engine_path(model, "cpu"))
            _refs[key] = np.array(_cpu_engines[model](x), copy=True)
        return _refs[key]


def to_numpy(y):
    """numpy copy of an output: ndarray, torch tensor (synchronises torch's current stream), cupy array."""
    mod = type(y).__module__.split(".")[0]
    if mod == "torch":
        import torch
        if y.is_cuda:
            torch.cuda.current_stream(y.device).synchronize()
        return y.detach().cpu().numpy()
    if mod == "cupy":
        import cupy
        cupy.cuda.get_current_stream().synchronize()
        return cupy.asnumpy(y)
    return np.asarray(y)


def check_close(got, ref, label):
    """Acceptance metric: max abs err <= 1e-4 * max|ref| and mean-centred cosine >= 0.99999."""
    a = np.asarray(to_numpy(got), dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError("%s: output shape %s, reference %s" % (label, a.shape, b.shape))
    if not np.all(np.isfinite(a)):
        raise AssertionError("%s: non-finite values in the output" % label)
    max_mag = float(np.max(np.abs(b)))
    err = float(np.max(np.abs(a - b)))
    ac, bc = a - a.mean(), b - b.mean()
    cos = float(np.dot(ac.ravel(), bc.ravel()) / (np.sqrt(np.dot(ac.ravel(), ac.ravel()) * np.dot(bc.ravel(), bc.ravel())) + 1e-300))
    rel = err / (max_mag + 1e-300)
    REPORT.record(rel, cos)
    if not (err <= 1e-4 * max_mag and cos >= 0.99999):
        raise AssertionError("%s: max abs err %.3g > %.3g (1e-4*max|ref|) or cosine %.9f < 0.99999" % (
            label, err, 1e-4 * max_mag, cos))
    return rel, cos


def kcall(label, fn, *args, **kwargs):
    """A kilnrt call under the context check."""
    return ctxcheck.call(label, fn, *args, **kwargs)


def load_engine(kilnrt, model, kind="cuda", **kwargs):
    return kcall("kilnrt.Engine(%s.%s)" % (model, kind), kilnrt.Engine, engine_path(model, kind), **kwargs)


def check_numpy_io(kilnrt, engines, batches=(1, 2), tag=""):
    """Runs every engine with numpy I/O under the context check and compares with the CPU engine."""
    for model, engine in engines.items():
        for b in batches:
            x = fixture_input(model, b)
            y = kcall("%s numpy b%d%s" % (model, b, tag), engine, x)
            check_close(y, reference(model, x), "%s numpy b%d%s" % (model, b, tag))


def _interop_missing(exc):
    text = str(exc).lower()
    return isinstance(exc, TypeError) or "numpy" in text or "__array__" in text or "convert" in text


_interop = {}


def torch_interop(kilnrt, engines, torch, device=0):
    """True when engine(torch CUDA tensor) returns a torch tensor (the zero-copy torch interop). The probe is a
    real, checked call on the first engine of {model: engine}."""
    if "torch" in _interop:
        return _interop["torch"]
    model, engine = next(iter(engines.items()))
    x = fixture_input(model, 1)
    t = torch.from_numpy(x).to("cuda:%d" % device)
    try:
        y = kcall("probe engine(torch tensor)", engine, t)
    except ctxcheck.ContextChanged:
        raise
    except Exception as e:  # noqa: BLE001
        if _interop_missing(e):
            _interop["torch"] = False
            REPORT.partial("torch interop missing (engine(torch.Tensor) -> %s: %s): numpy I/O only" % (
                type(e).__name__, str(e).splitlines()[0][:100]))
            return False
        raise
    if not isinstance(y, torch.Tensor):
        _interop["torch"] = False
        REPORT.partial("engine(torch.Tensor) returned %s, not a torch tensor: numpy I/O only" % type(y).__name__)
        return False
    check_close(y, reference(model, x), "probe %s torch" % model)
    _interop["torch"] = True
    return True


def check_torch_io(kilnrt, engines, torch, batches=(1, 2), tag="", device=0, use_out=True):
    """engine(torch tensor) on torch's current stream (returns a torch tensor on the same device), and engine(x,
    out=y) when the keyword exists; every call under the context check, outputs compared with the CPU engine."""
    for model, engine in engines.items():
        for b in batches:
            x = fixture_input(model, b)
            t = torch.from_numpy(x).to("cuda:%d" % device)
            y = kcall("%s torch b%d%s" % (model, b, tag), engine, t)
            if not isinstance(y, torch.Tensor):
                raise AssertionError("engine(torch tensor) returned %s" % type(y).__name__)
            if y.device != t.device:
                raise AssertionError("output on %s, input on %s" % (y.device, t.device))
            ref = reference(model, x)
            check_close(y, ref, "%s torch b%d%s" % (model, b, tag))
            if use_out:
                out = torch.full(ref.shape, float("nan"), device=t.device)
                try:
                    r = kcall("%s torch out= b%d%s" % (model, b, tag), engine, t, out=out)
                except TypeError as e:
                    REPORT.partial("engine(x, out=...) not accepted: %s" % str(e).splitlines()[0][:100])
                    continue
                if r is not None and isinstance(r, torch.Tensor) and r.data_ptr() != out.data_ptr():
                    raise AssertionError("engine(x, out=y) returned a tensor that is not y")
                check_close(out, ref, "%s torch out= b%d%s" % (model, b, tag))


def emit(status, reason="", extra=None):
    info = {"status": status, "reason": reason, "checks": ctxcheck.checks() if ctxcheck._backend else 0,
            "compared": REPORT.compared, "worst_rel_err": REPORT.worst_rel, "min_cosine": REPORT.min_cos,
            "notes": REPORT.notes, "ctx_binding": ctxcheck._backend.name if ctxcheck._backend else None}
    if extra:
        info.update(extra)
    sys.stdout.flush()
    print("@@RESULT " + json.dumps(info), flush=True)
    return EXIT[status]


def main(fn):
    """Runs fn(REPORT) and exits with the scenario's result."""
    try:
        fn(REPORT)
    except Skip as e:
        code = emit("SKIP", str(e))
    except BaseException as e:  # noqa: BLE001
        traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        code = emit("FAIL", "%s: %s" % (type(e).__name__, first[:300]))
    else:
        if REPORT.partials:
            code = emit("PARTIAL", "; ".join(REPORT.partials))
        else:
            code = emit("PASS", "; ".join(REPORT.notes))
    sys.stdout.flush()
    sys.stderr.flush()
    # A normal interpreter exit, with the scenario's engines still alive: the runner reports a crash or hang at exit
    # even after a PASS line.
    sys.exit(code)
