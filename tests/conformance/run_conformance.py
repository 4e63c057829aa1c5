#!/usr/bin/env python3
"""ONNX node conformance for kilnrt.

Generates ONNX's node test cases from the installed `onnx` package's generators (`onnx.backend.test.case.node`,
Debian's python3-onnx 1.12 in CI), or reads cases saved earlier (--cases DIR, ONNX's on-disk layout: <case>/model.onnx
+ test_data_set_0/{input,output}_N.pb), builds every case with kilnrt on --device, runs it and compares the outputs.

    run_conformance.py [--device cpu|cuda] [--precision fp32|fp16|bf16] [--filter REGEX] [--list-failures]
                       [--json OUT] [--save-cases DIR] [--cases DIR] [--jobs N] [--min-pass-rate R]

Counts: every generated case is exactly one of passed / failed / excluded; exclusions (with reasons) count as not
passed. The pass rate is passed / all cases. Cases run in worker processes (--jobs, default: CPU count), so a crash
or hang in one case is recorded as that case's failure and the run goes on.

Comparison: floats with np.isclose(rtol, atol) (the case's tolerances; ONNX's defaults rtol 1e-3 / atol 1e-7 for
float32 and float64; float16 and bfloat16 at least rtol 1e-3 / atol 1e-3); NaN positions must match and infinities
must match exactly; integers and bool exactly; shapes and dtypes exactly.

Sequences: engines take and return tensors, so cases with sequence-typed graph inputs / outputs are rewritten
(sequence_io.py: sequences built from tensor inputs inside the graph, read back element by element + their length);
optional / map types stay excluded.

CUDA (--device cuda): additionally every layer of every engine must have placement "cuda" (Engine.layers).

16-bit (--device cuda --precision fp16|bf16): each case is built as a 16-bit CUDA engine (kilnrt.build(fp16=True) /
(bf16=True): float activations stored in 16 bits, float32 math inside the kernels, float32 I/O) and compared with the
CPU float32 engine's output, not with ONNX's expected output (which is float64 math for some cases). Both engines get
the same inputs: float32 inputs rounded to the 16-bit type first (fp16: IEEE round to nearest even; bf16: round to
nearest even of the top 16 bits), so that the comparison measures what the 16-bit engine adds, not the input
rounding (which flips ArgMax ties, comparisons, Floor ...). Tolerance, per output, with scale = the largest finite
|reference| value (1 when all are 0): |got - ref| <= tol * scale + tol * |ref|, tol = 1e-2 (fp16), 4e-2 (bf16);
NaN positions and infinities must match (an infinite reference also matches the same-signed largest finite value of
the type: 16-bit engines clamp infinite constants such as attention masks to the finite range); integer and bool
outputs exactly; shapes and dtypes exactly. A failure where the reference exceeds the 16-bit type's finite range is
labelled "[range]" (a limit of the type, not a kernel bug). --freeze-inputs auto (default): when the CUDA build
refuses a graph input that must be a constant (axes, pads, k, scales ... fed as inputs are data-dependent shapes,
which the CUDA backend does not run yet), the input becomes an initializer holding the case's value, the build is
retried, and the CPU reference runs the same frozen model; the summary counts those cases. `--freeze-inputs on` does
the same in fp32 CUDA runs (compared with ONNX's expected outputs as usual); there `auto` means off.
The summary also lists the registry ops (`kilnrt ops`) that no runnable case covers, and in 16-bit mode the ops none
of whose cases passed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sequence_io import lower_sequence_io  # noqa: E402
from precision16 import (CONST_INPUT_RE, TOL_16BIT, compare_16bit, freeze_inputs, registry_ops,  # noqa: E402
                         round_to_16bit)

# ---- exclusion policy -------------------------------------------------------------------------------------------
# (regex on the case name, reason). Ordered; the first match wins. Anything here counts as not passed.
NAME_EXCLUSIONS = [
    (r"^test_gradient", "training-only op (ai.onnx.preview.training Gradient: needs automatic differentiation)"),
    (r"^test_(bernoulli|random|multinomial)", "random outputs (no reference value to compare)"),
    (r"^test_training_dropout(?!_zero_ratio)", "random outputs (Dropout in training mode with ratio > 0)"),
    (r"^test_(string|strnorm|regex|tfidf)", "string dtype"),
    (r"^test_adam_multiple$",
     "broken case in onnx 1.12: the expected values use epsilon=1e-2, the node leaves epsilon at its default 1e-6"),
    (r"^test_castlike_(BFLOAT16_to_FLOAT|FLOAT_to_BFLOAT16)(_expanded)?$",
     "broken case data in onnx 1.12: input 'like' is declared 3x4 but its data has shape (1,)"),
]
OP_EXCLUSIONS = {
    "Gradient": "training-only op",
    "RandomNormal": "random outputs", "RandomUniform": "random outputs", "RandomNormalLike": "random outputs",
    "RandomUniformLike": "random outputs", "Bernoulli": "random outputs", "Multinomial": "random outputs",
    "StringNormalizer": "string dtype", "TfIdfVectorizer": "string dtype", "RegexFullMatch": "string dtype",
    "ImageDecoder": "image file decoding (JPEG / PNG / BMP / WebP / TIFF / JPEG 2000 codecs) is out of kilnrt's scope",
}
# ONNX element types kilnrt has (include/kilnrt/dtype.h): float32 uint8 int8 uint16 int16 int32 int64 bool float16
# float64 uint32 uint64 bf16.
KILNRT_ELEM_TYPES = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16}
# Element types the Python binding may not map to numpy yet (python/src: numpy_dtype_name): cases with such inputs or
# outputs run through the CLI (`kilnrt run` with .npy files) when the binding refuses them.
CLI_FALLBACK_ELEM_TYPES = {4, 5, 12, 13}


def restore_numpy_aliases():
    """NumPy >= 1.24 removed np.float/np.int/np.bool/np.object/...; onnx 1.12's generators still use them."""
    for name, value in (("float", float), ("int", int), ("bool", bool), ("object", object), ("str", str),
                        ("complex", complex), ("long", int), ("unicode", str)):
        if name not in np.__dict__:
            setattr(np, name, value)


# ---- generating cases -------------------------------------------------------------------------------------------

def generate_cases():
    """Returns (cases, generator_errors): cases = ONNX TestCase list; generator_errors = [(name, reason)] for each
    export function (or whole module) that raised while generating."""
    import warnings
    warnings.filterwarnings("ignore")
    restore_numpy_aliases()
    import importlib
    import pkgutil
    import onnx.backend.test.case.base as base
    import onnx.backend.test.case.node as node_pkg

    errors = []

    def exporter_init(cls, name, bases, dct):
        # Like onnx's _Exporter.__init__, but one export that raises does not lose the class's other cases.
        for k, v in dct.items():
            if k.startswith("export"):
                np.random.seed(seed=0)
                try:
                    getattr(cls, k)()
                except Exception as e:  # noqa: BLE001 - any generator failure is an exclusion with reason
                    label = "%s.%s" % (name, k)
                    errors.append((label, "generator error: %s: %s" % (type(e).__name__, str(e).splitlines()[0]
                                                                        if str(e) else "")))
        type.__init__(cls, name, bases, dct)

    base._Exporter.__init__ = exporter_init
    node_pkg._TargetOpType = None
    for _, modname, _ in pkgutil.iter_modules(node_pkg.__path__):
        try:
            importlib.import_module("%s.%s" % (node_pkg.__name__, modname))
        except Exception as e:  # noqa: BLE001
            errors.append((modname, "generator error (module): %s: %s" % (type(e).__name__, e)))
    # De-duplicate by name (the generators never repeat a name, but be safe): the last one wins, as in onnx.
    cases = {}
    for case in node_pkg._NodeTestCases:
        cases[case.name] = case
    return list(cases.values()), errors


def _elem_types(type_proto, out):
    """Collects tensor element types in a TypeProto; returns False for non-tensor (sequence/optional/map) types."""
    which = type_proto.WhichOneof("value")
    if which == "tensor_type":
        out.append(type_proto.tensor_type.elem_type)
        return True
    if which == "sparse_tensor_type":
        return False
    return False if which is not None else True


def exclusion_reason(name, model):
    """Why a case cannot pass on kilnrt by policy, or None."""
    for pattern, reason in NAME_EXCLUSIONS:
        if re.search(pattern, name):
            if "in onnx 1.12" in reason:  # broken data of that release only: newer releases' cases run
                import onnx
                if not onnx.__version__.startswith("1.12."):
                    continue
            return reason
    ops = [n.op_type for n in model.graph.node]
    for op in ops:
        if op in OP_EXCLUSIONS:
            return "%s: %s" % (OP_EXCLUSIONS[op], op)
    for vi in list(model.graph.input) + list(model.graph.output):
        types = []
        if not _elem_types(vi.type, types):
            return "optional/map types (or sequences of them) are not supported as kilnrt engine I/O (%s)" % vi.name
        for t in types:
            if t == 8:
                return "string dtype (%s)" % vi.name
            if t not in KILNRT_ELEM_TYPES:
                import onnx
                return "dtype %s not supported by kilnrt (%s)" % (onnx.TensorProto.DataType.Name(t).lower(), vi.name)
    return None


def save_case(case_dir, model, inputs, outputs, meta):
    from onnx import numpy_helper
    os.makedirs(os.path.join(case_dir, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    from onnx import TensorProto
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrays):
            # Newer onnx generators give some values as TensorProto already (exact Cast data): saved as they are.
            proto = a if isinstance(a, TensorProto) else numpy_helper.from_array(np.asarray(a))
            with open(os.path.join(case_dir, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(proto.SerializeToString())
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f)


def materialise(cases_dir, name_filter):
    """Generates the cases into cases_dir. Returns the list of metadata dicts (one per case / generator error)."""
    cases, errors = generate_cases()
    metas = []
    for case in sorted(cases, key=lambda c: c.name):
        if name_filter and not re.search(name_filter, case.name):
            continue
        meta = {"name": case.name, "rtol": case.rtol, "atol": case.atol,
                "ops": sorted({n.op_type for n in case.model.graph.node}),
                "opset": {o.domain or "ai.onnx": o.version for o in case.model.opset_import}}
        model = case.model
        inputs, outputs = case.data_sets[0]
        try:  # sequence graph I/O -> tensors around the sequence ops (the engine's I/O are tensors)
            lowered = lower_sequence_io(model, inputs, outputs)
            if lowered[0] is not model:
                model, inputs, outputs = lowered
                meta["sequence_io_lowered"] = True
        except ValueError:
            pass  # left as is: exclusion_reason names the value
        reason = exclusion_reason(case.name, model)
        if reason is None:
            try:
                save_case(os.path.join(cases_dir, case.name), model, inputs, outputs, meta)
            except Exception as e:  # noqa: BLE001 - e.g. data the proto converter cannot hold
                reason = "cannot save case data: %s: %s" % (type(e).__name__, e)
        if reason is not None:
            meta["excluded"] = reason
        metas.append(meta)
    for label, reason in errors:
        if name_filter and not re.search(name_filter, label):
            continue
        metas.append({"name": label, "excluded": reason})
    return metas


def load_saved(cases_dir, name_filter):
    metas = []
    for name in sorted(os.listdir(cases_dir)):
        path = os.path.join(cases_dir, name, "case.json")
        if name_filter and not re.search(name_filter, name):
            continue
        if os.path.isfile(path):
            with open(path) as f:
                metas.append(json.load(f))
    excluded = os.path.join(cases_dir, "excluded.json")
    if os.path.isfile(excluded):
        with open(excluded) as f:
            metas += [m for m in json.load(f) if not name_filter or re.search(name_filter, m["name"])]
    return metas


# ---- running one case (worker side) -----------------------------------------------------------------------------

def _read_arrays(case_dir, kind):
    from onnx import TensorProto, numpy_helper
    arrays = []
    i = 0
    while True:
        path = os.path.join(case_dir, "test_data_set_0", "%s_%d.pb" % (kind, i))
        if not os.path.isfile(path):
            return arrays
        t = TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        a = numpy_helper.to_array(t)
        if t.data_type == TensorProto.BFLOAT16:  # kilnrt passes bfloat16 as uint16 bits, in the tensor's shape
            a = np.asarray(a)
            if a.dtype == np.float32:  # onnx 1.12's to_array decodes bfloat16 to float32 values: take their top bits
                a = (np.ascontiguousarray(a).view(np.uint32) >> 16).astype(np.uint16)
            elif a.dtype.itemsize == 2:  # uint16 bits, or a 2-byte bfloat16 type of newer numpy stacks
                a = np.ascontiguousarray(a).view(np.uint16)
            else:
                a = a.astype(np.uint16)
            a = a.reshape(tuple(t.dims))
        arrays.append(a)
        i += 1


def compare(name, got, want, rtol, atol):
    """None when equal within tolerance, else a one-line description of the first difference."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if got.dtype != want.dtype:
        return "%s: dtype %s, expected %s" % (name, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        if want.dtype == np.float16:
            rtol, atol = max(rtol, 1e-3), max(atol, 1e-3)
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        if not np.array_equal(nan_g, nan_w):
            return "%s: NaN positions differ (%d NaN, expected %d)" % (name, nan_g.sum(), nan_w.sum())
        ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            idx = np.unravel_index(int(np.argmin(ok)), ok.shape) if ok.ndim else ()
            return "%s: %d of %d values differ (first at %s: %r, expected %r; max abs err %.3g)" % (
                name, int((~ok).sum()), ok.size, tuple(int(i) for i in idx), g[idx].item(), w[idx].item(),
                float(np.nanmax(np.abs(np.where(ok, 0, g - w)))))
        return None
    if not np.array_equal(got, want):
        ne = got != want
        idx = np.unravel_index(int(np.argmax(ne)), ne.shape) if ne.ndim else ()
        return "%s: %d of %d values differ (first at %s: %r, expected %r)" % (
            name, int(ne.sum()), ne.size, tuple(int(i) for i in idx), got[idx].item(), want[idx].item())
    return None


_ZERO_D_BROKEN = None


def _run_engine(engine, feeds):
    """engine.run(feeds). KNOWN ISSUE (python/kilnrt/__init__.py, Engine._prepare): np.ascontiguousarray turns 0-d
    inputs into shape (1,), so scalar inputs fail with "expected rank 0". While that is so (detected, not assumed),
    0-d inputs go through the low-level handle with the same dtype/contiguity preparation; everything else, and
    everything once it is fixed, uses the public Engine.run."""
    global _ZERO_D_BROKEN
    if _ZERO_D_BROKEN is None:
        _ZERO_D_BROKEN = np.ascontiguousarray(np.float32(0)).ndim != 0 and "ascontiguousarray" in \
            __import__("inspect").getsource(type(engine)._prepare)
    if _ZERO_D_BROKEN and any(np.ndim(a) == 0 for a in feeds.values()):
        specs = {s.name: s for s in engine.inputs}
        prepared = {}
        for name, a in feeds.items():
            a = np.asarray(a)
            if name in specs and a.dtype != specs[name].dtype:
                a = a.astype(specs[name].dtype)
            prepared[name] = np.require(a, requirements="C")
        return engine._handle.run(prepared)
    return engine.run(feeds)


def _save_npy(path, a):
    """np.save, except that uint16 gets the descr '=u2': kilnrt reads '<u2' as bfloat16 bits (its bfloat16 .npy
    convention) and '=u2' (native = little-endian u2, equally valid for numpy) as uint16."""
    a = np.ascontiguousarray(a)
    if a.dtype != np.uint16:
        np.save(path, a)
        return
    header = "{'descr': '=u2', 'fortran_order': False, 'shape': %r, }" % (tuple(a.shape),)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(a.tobytes())


def _run_cli(engine_path, feeds, work_dir):
    """Runs the engine with the CLI (`kilnrt run --input NAME=FILE.npy --save-outputs DIR`): for dtypes that the
    Python binding does not map to numpy yet."""
    import kilnrt
    cli = os.path.join(os.path.dirname(kilnrt.__file__), "bin", "kilnrt")
    out_dir = os.path.join(work_dir, "outputs")
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [cli, "run", engine_path, "--save-outputs", out_dir]
    for i, (name, a) in enumerate(feeds.items()):
        path = os.path.join(work_dir, "input%d.npy" % i)
        _save_npy(path, a)
        cmd += ["--input", "%s=%s" % (name, path)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise kilnrt.Error((proc.stderr or proc.stdout).strip().splitlines()[-1] if (proc.stderr or proc.stdout)
                           else "kilnrt run failed (%d)" % proc.returncode)
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir) if f.endswith(".npy")}


def run_case(case_dir, device, work_dir, precision="fp32", freeze=None):
    """Returns (status, message): status "passed" / "failed". freeze: see run_case_16bit; None = on in 16-bit mode,
    off for fp32 (inputs fed as graph inputs stay inputs; --freeze-inputs on turns it on for CUDA fp32 runs too)."""
    if freeze is None:
        freeze = precision != "fp32"
    if precision != "fp32":
        return run_case_16bit(case_dir, device, work_dir, precision, freeze)
    import onnx
    import kilnrt
    with open(os.path.join(case_dir, "case.json")) as f:
        meta = json.load(f)
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path)
    inputs = _read_arrays(case_dir, "input")
    outputs = _read_arrays(case_dir, "output")
    engine_path = os.path.join(work_dir, "case.engine")
    all_feeds = {vi.name: a for vi, a in zip(model.graph.input, inputs)}
    feeds = dict(all_feeds)
    elem = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input}
    frozen = []
    note = ""
    try:
        while True:
            try:
                kilnrt.build(model_path, engine_path, device=device)
                break
            except kilnrt.Error as e:
                m = CONST_INPUT_RE.search(str(e))
                name = m.group(1) if m else None
                if not (freeze and name in feeds and elem.get(name) != 16 and name not in frozen):
                    raise
                frozen.append(name)
                del feeds[name]
                model_path = freeze_inputs(model, all_feeds, frozen, os.path.join(work_dir, "frozen.onnx"))
                note = " (inputs frozen: %s)" % ", ".join(frozen)
        io_types = [vi.type.tensor_type.elem_type for vi in list(model.graph.input) + list(model.graph.output)]
        try:
            engine = kilnrt.Engine(engine_path)
            if device.startswith("cuda"):
                layers = engine.layers
                # Shape computations (Shape / Size, and nodes fed only by constants and shape values) are evaluated
                # on the host by design (docs/architecture.md): every other layer must be on the GPU.
                off = [l["name"] + " (" + l["op_type"] + ")" for l in layers if l["placement"] != "cuda"
                       and not (l["placement"] == "host" and l["tactic"] == "shape-computation")]
                if off:
                    return "failed", "layers not placed on cuda: " + ", ".join(off[:5]) + note
            result = _run_engine(engine, feeds)
        except kilnrt.Error as e:
            if not (any(t in CLI_FALLBACK_ELEM_TYPES for t in io_types) and device == "cpu" and
                    "no numpy equivalent" in str(e)):
                raise
            result = _run_cli(engine_path, feeds, work_dir)
    except kilnrt.Error as e:
        return "failed", "kilnrt.Error[%s]: %s%s" % (getattr(e, "code", "?"),
                                                     str(e).splitlines()[0] if str(e) else "", note)
    for vi, want in zip(model.graph.output, outputs):
        if vi.name not in result:
            return "failed", "output %s missing%s" % (vi.name, note)
        got, rtol, atol = result[vi.name], meta.get("rtol", 1e-3), meta.get("atol", 1e-7)
        if vi.type.tensor_type.elem_type == 16 and np.asarray(got).dtype == np.uint16 == np.asarray(want).dtype:
            # bfloat16 bits -> float32 values, compared at bfloat16's precision (8 significant bits), as float16
            # gets at least 1e-3 in compare().
            got, want = [(np.asarray(a).astype(np.uint32) << 16).view(np.float32) for a in (got, want)]
            rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
        diff = compare(vi.name, got, want, rtol, atol)
        if diff:
            return "failed", diff + note
    return "passed", ("inputs frozen: " + ", ".join(frozen)) if frozen else ""


# ---- 16-bit mode (--precision fp16|bf16) ----------------------------------------------------------------------

def _run_built(engine_path, feeds, io_types, device, work_dir):
    """Loads and runs an engine; falls back to the CLI for dtypes the binding cannot map (CPU engines)."""
    import kilnrt
    try:
        engine = kilnrt.Engine(engine_path)
        if device.startswith("cuda"):
            off = [l["name"] + " (" + l["op_type"] + ")" for l in engine.layers if l["placement"] != "cuda"
                   and not (l["placement"] == "host" and l["tactic"] == "shape-computation")]
            if off:
                raise kilnrt.Error("layers not placed on cuda: " + ", ".join(off[:5]))
        return _run_engine(engine, feeds)
    except kilnrt.Error as e:
        if not (any(t in CLI_FALLBACK_ELEM_TYPES for t in io_types) and "no numpy equivalent" in str(e)):
            raise
        return _run_cli(engine_path, feeds, work_dir)


def run_case_16bit(case_dir, device, work_dir, precision, freeze=True):
    """16-bit CUDA engine vs the CPU float32 engine on the same (16-bit-rounded) inputs.

    freeze: when the CUDA build refuses a graph input because it must be a constant (axes, pads, k, scales ... fed
    as inputs: data-dependent shapes, not supported by the CUDA backend yet), that input becomes an initializer
    holding the case's value and the build is retried (the CPU reference then runs the same model); the message of
    a passing case names the frozen inputs."""
    import onnx
    import kilnrt
    if not device.startswith("cuda"):
        return "failed", "--precision %s needs --device cuda" % precision
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path)
    inputs = [round_to_16bit(a, precision) for a in _read_arrays(case_dir, "input")]
    feeds = {vi.name: a for vi, a in zip(model.graph.input, inputs)}
    elem = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input}
    io_types = [vi.type.tensor_type.elem_type for vi in list(model.graph.input) + list(model.graph.output)]
    ref_path = os.path.join(work_dir, "ref.engine")
    got_path = os.path.join(work_dir, "case16.engine")

    def reference(path, run_feeds):
        kilnrt.build(path, ref_path, device="cpu")
        return _run_built(ref_path, run_feeds, io_types, "cpu", work_dir)

    try:
        ref = reference(model_path, feeds)
    except kilnrt.Error as e:
        return "failed", "cpu fp32 reference: kilnrt.Error[%s]: %s" % (getattr(e, "code", "?"),
                                                                       (str(e).splitlines() or [""])[0])
    frozen = []
    run_feeds = dict(feeds)
    while True:
        try:
            kilnrt.build(model_path, got_path, device=device, fp16=(precision == "fp16"), bf16=(precision == "bf16"))
            result = _run_built(got_path, run_feeds, io_types, device, work_dir)
            break
        except kilnrt.Error as e:
            m = CONST_INPUT_RE.search(str(e))
            name = m.group(1) if m else None
            if not (freeze and name in run_feeds and elem.get(name) != 16 and name not in frozen):
                why = "kilnrt.Error[%s]: %s" % (getattr(e, "code", "?"), (str(e).splitlines() or [""])[0])
                return "failed", why + (" (inputs frozen: %s)" % ", ".join(frozen) if frozen else "")
            frozen.append(name)
            del run_feeds[name]
            model_path = freeze_inputs(model, feeds, frozen, os.path.join(work_dir, "frozen.onnx"))
    if frozen:
        try:
            ref = reference(model_path, run_feeds)
        except kilnrt.Error as e:
            return "failed", "cpu fp32 reference (inputs frozen: %s): kilnrt.Error[%s]: %s" % (
                ", ".join(frozen), getattr(e, "code", "?"), (str(e).splitlines() or [""])[0])
    note = " (inputs frozen: %s)" % ", ".join(frozen) if frozen else ""
    for vi in model.graph.output:
        if vi.name not in result:
            return "failed", "output %s missing%s" % (vi.name, note)
        diff = compare_16bit(vi.name, result[vi.name], ref[vi.name], vi.type.tensor_type.elem_type, precision)
        if diff:
            return "failed", diff + note
    return "passed", ("inputs frozen: " + ", ".join(frozen)) if frozen else ""


def worker_main(args):
    """Runs the cases listed in args.worker (one name per line) and appends JSON lines to args.results."""
    freeze = args.freeze_inputs == "on" or (args.freeze_inputs == "auto" and args.precision != "fp32")
    with open(args.worker) as f:
        names = [l.strip() for l in f if l.strip()]
    work_dir = tempfile.mkdtemp(prefix="kilnrt-conf-")
    try:
        with open(args.results, "a") as out:
            for name in names:
                out.write(json.dumps({"start": name}) + "\n")
                out.flush()
                try:
                    status, msg = run_case(os.path.join(args.cases, name), args.device, work_dir, args.precision,
                                           freeze)
                except Exception as e:  # noqa: BLE001 - a Python-side surprise fails this case only
                    status, msg = "failed", "runner exception %s: %s" % (
                        type(e).__name__, (str(e).splitlines() or [""])[0])
                    if args.verbose:
                        traceback.print_exc()
                out.write(json.dumps({"name": name, "status": status, "message": msg}) + "\n")
                out.flush()
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


# ---- orchestration ----------------------------------------------------------------------------------------------

class Interrupted(Exception):
    """SIGTERM (e.g. `timeout` around the run): stop the workers and report what finished."""


def _raise_interrupted(signum, frame):
    raise Interrupted()


def run_all(names, args, timeout_s):
    """Runs `names` in --jobs worker processes; a worker that crashes or hangs fails its current case and is
    restarted on the remaining ones. Returns {name: (status, message)}; on SIGTERM the workers are stopped,
    args.interrupted is set and the cases that finished are returned."""
    import signal
    results = {}
    procs = []
    args.interrupted = False
    signal.signal(signal.SIGTERM, _raise_interrupted)
    tmp = tempfile.mkdtemp(prefix="kilnrt-conf-run-")
    shards = [names[i::args.jobs] for i in range(args.jobs)]
    workers = []  # [pending names, Popen, results path, list path, offset read, current (name, since)]

    def spawn(slot, pending):
        lst = os.path.join(tmp, "list%d.txt" % slot)
        res = os.path.join(tmp, "res%d.jsonl" % slot)
        with open(lst, "w") as f:
            f.write("\n".join(pending))
        open(res, "w").close()
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", lst, "--results", res, "--cases", args.cases,
               "--device", args.device, "--precision", args.precision,
               "--freeze-inputs", args.freeze_inputs] + (["--verbose"] if args.verbose else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL if not args.verbose else None,
                                stderr=subprocess.DEVNULL if not args.verbose else None)
        procs.append(proc)
        return {"pending": list(pending), "proc": proc, "res": res, "pos": 0, "current": None, "since": time.time()}

    for slot, shard in enumerate(shards):
        if shard:
            workers.append((slot, spawn(slot, shard)))
    try:
        while workers:
            time.sleep(0.05)
            alive = []
            for slot, w in workers:
                with open(w["res"]) as f:
                    f.seek(w["pos"])
                    data = f.read()
                lines = data.split("\n")
                complete, rest = lines[:-1], lines[-1]
                w["pos"] += len(data) - len(rest)
                for line in complete:
                    rec = json.loads(line)
                    if "start" in rec:
                        w["current"], w["since"] = rec["start"], time.time()
                    else:
                        results[rec["name"]] = (rec["status"], rec["message"])
                        w["pending"].remove(rec["name"])
                        w["current"] = None
                rc = w["proc"].poll()
                hung = w["current"] is not None and time.time() - w["since"] > timeout_s
                if hung:
                    w["proc"].kill()
                    w["proc"].wait()
                    rc = "timeout"
                if rc is None:
                    alive.append((slot, w))
                    continue
                if w["current"] is not None:
                    why = ("timed out after %ds" % timeout_s) if rc == "timeout" else (
                        "worker crashed (exit status %s)" % rc)
                    results[w["current"]] = ("failed", why)
                    w["pending"].remove(w["current"])
                elif w["pending"] and rc != 0:
                    # died before starting a case (import failure...): fail the rest rather than loop forever
                    for n in w["pending"]:
                        results[n] = ("failed", "worker exited with status %s before running the case" % rc)
                    w["pending"] = []
                if w["pending"]:
                    alive.append((slot, spawn(slot, w["pending"])))
            workers = alive
    except Interrupted:
        args.interrupted = True
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # a late SIGTERM: finish the report anyway
    shutil.rmtree(tmp, ignore_errors=True)
    return results


def op_coverage(metas, results, args):
    """Prints the registry ops without a runnable case (and in 16-bit mode those none of whose cases passed)."""
    covered, passing = set(), set()
    for m in metas:
        if "excluded" in m:
            continue
        covered.update(m.get("ops", []))
        if results.get(m["name"], ("",))[0] == "passed":
            passing.update(m.get("ops", []))
    registry = registry_ops()
    report = {"covered": sorted(covered), "passing": sorted(passing)}
    if registry is None:
        print("registry ops: `kilnrt ops` not found next to the kilnrt package: coverage not listed")
        return report
    missing = sorted(registry - covered)
    report["registry_without_case"] = missing
    print("\nregistry ops: %d; with a runnable case%s: %d; without: %d" % (
        len(registry), " (matching --filter)" if args.filter else "", len(registry & covered), len(missing)))
    if not args.filter:
        print("  without a case: " + (", ".join(missing) or "none"))
    if args.precision != "fp32":
        never = sorted((registry & covered) - passing)
        report["registry_no_passing_case"] = never
        print("  ops with cases, none passing in %s: %d: %s" % (args.precision, len(never), ", ".join(never)))
    return report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (default cpu)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                   help="fp16 / bf16 (with --device cuda): 16-bit CUDA engines against the CPU fp32 engine")
    p.add_argument("--freeze-inputs", default="auto", choices=["auto", "on", "off"],
                   help="graph inputs the CUDA build needs as constants (axes, pads, k ...) become initializers with "
                        "the case's values and the build is retried (on), or fail the case (off); auto (default): "
                        "on in 16-bit mode, off for fp32")
    p.add_argument("--filter", default=None, help="regex on case names")
    p.add_argument("--list-failures", action="store_true", help="print every failing case with its error")
    p.add_argument("--list-exclusions", action="store_true", help="print every excluded case (default: grouped)")
    p.add_argument("--json", default=None, help="write {summary, cases} to this file")
    p.add_argument("--save-cases", default=None, help="write the generated cases to this directory and go on")
    p.add_argument("--cases", default=None, help="run cases saved earlier with --save-cases instead of generating")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=int, default=120, help="seconds per case before it counts as hung")
    p.add_argument("--min-pass-rate", type=float, default=None, help="exit 1 when passed/total is below this")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--results", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.precision != "fp32" and not args.device.startswith("cuda"):
        p.error("--precision %s needs --device cuda" % args.precision)

    t0 = time.time()
    tmp_cases = None
    if args.cases:
        metas = load_saved(args.cases, args.filter)
        source = "saved cases in %s" % args.cases
    else:
        if args.save_cases:
            os.makedirs(args.save_cases, exist_ok=True)
            args.cases = args.save_cases
        else:
            tmp_cases = args.cases = tempfile.mkdtemp(prefix="kilnrt-conf-cases-")
        metas = materialise(args.cases, args.filter)
        if args.save_cases:
            with open(os.path.join(args.save_cases, "excluded.json"), "w") as f:
                json.dump([m for m in metas if "excluded" in m], f, indent=1)
        import onnx
        source = "generated from onnx %s" % onnx.__version__
    t_gen = time.time() - t0
    runnable = [m["name"] for m in metas if "excluded" not in m]
    results = run_all(runnable, args, args.timeout)
    if tmp_cases:
        shutil.rmtree(tmp_cases, ignore_errors=True)
    elapsed = time.time() - t0

    not_run = sorted(set(runnable) - set(results))
    passed = sorted(n for n, (s, _) in results.items() if s == "passed")
    failed = sorted((n, m) for n, (s, m) in results.items() if s != "passed")
    excluded = sorted((m["name"], m["excluded"]) for m in metas if "excluded" in m)
    total = len(passed) + len(failed) + len(excluded) + len(not_run)
    rate = len(passed) / total if total else 0.0

    mode = args.device if args.precision == "fp32" else "%s %s (vs the CPU fp32 engine, tol %g)" % (
        args.device, args.precision, TOL_16BIT[args.precision])
    print("kilnrt ONNX node conformance (%s), device %s" % (source, mode))
    if failed and (args.list_failures or len(failed) <= 400):
        print("\nFAILED (%d):" % len(failed))
        for n, m in failed:
            print("  %-60s %s" % (n, m[:240]))
    print("\nEXCLUDED (%d), by reason:" % len(excluded))
    by_reason = {}
    for n, r in excluded:
        key = re.sub(r" \(.*\)$", "", r) if not args.list_exclusions else r
        by_reason.setdefault(key, []).append(n)
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        print("  %4d  %s" % (len(names), reason))
        print("        " + ", ".join(names if args.list_exclusions else names[:12])
              + ("" if args.list_exclusions or len(names) <= 12 else ", ..."))
    print("\npassed %d / failed %d / excluded %d%s  (total %d, pass rate %.1f%%)  in %.0fs (generation %.0fs, %d jobs)"
          % (len(passed), len(failed), len(excluded), " / not run %d" % len(not_run) if not_run else "", total,
             100 * rate, elapsed, t_gen, args.jobs))
    frozen_passed = {n: m for n, (st, m) in results.items() if st == "passed" and m.startswith("inputs frozen")}
    if frozen_passed or args.precision != "fp32":
        print("%d of the passed cases ran with graph inputs frozen as constants (--freeze-inputs %s)" % (
            len(frozen_passed), args.freeze_inputs))
    if not_run:
        print("INTERRUPTED (SIGTERM): %d runnable cases did not run; they count as not passed" % len(not_run))
    if args.device.startswith("cuda"):
        print("cuda: every layer's placement was checked to be 'cuda' (Engine.layers)")
    op_report = op_coverage(metas, results, args)
    if args.precision != "fp32":
        kinds = {}
        for _, m in failed:
            k = "cpu reference failed" if m.startswith("cpu fp32 reference") else \
                "kilnrt error on cuda" if m.startswith("kilnrt.Error") else \
                "out of the 16-bit range" if "[range]" in m else "worker crash / timeout" if "worker" in m or \
                "timed out" in m else "16-bit result beyond tolerance"
            kinds[k] = kinds.get(k, 0) + 1
        print("16-bit failures by kind: " + (", ".join("%s %d" % kv for kv in sorted(kinds.items())) or "none"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": {"device": args.device, "source": source, "passed": len(passed),
                                   "failed": len(failed), "excluded": len(excluded), "not_run": len(not_run), "total": total,
                                   "pass_rate": rate, "seconds": elapsed, "precision": args.precision},
                       "ops": op_report, "passed_with_frozen_inputs": frozen_passed,
                       "passed": passed, "failed": dict(failed), "excluded": dict(excluded)}, f, indent=1)
    if not_run:
        return 1
    if args.min_pass_rate is not None and rate < args.min_pass_rate:
        print("pass rate %.1f%% is below the required %.1f%%" % (100 * rate, 100 * args.min_pass_rate))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
