"""The 16-bit mode of run_conformance.py (--device cuda --precision fp16|bf16): input rounding, the comparison of a
16-bit CUDA engine's outputs with the CPU float32 engine's, the freezing of graph inputs that a CUDA build needs as
constants, and the op registry listing. The tolerances and rules are described in run_conformance.py's docstring."""
import re
import subprocess

import numpy as np

TOL_16BIT = {"fp16": 1e-2, "bf16": 4e-2}
MAX_16BIT = {"fp16": 65504.0, "bf16": 3.3895313892515355e38}


def round_to_16bit(a, precision):
    """float32 array rounded to the 16-bit type and back (other dtypes unchanged)."""
    a = np.asarray(a)
    if a.dtype != np.float32:
        return a
    if precision == "fp16":
        with np.errstate(over="ignore"):
            return a.astype(np.float16).astype(np.float32)
    bits = np.ascontiguousarray(a).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32).reshape(a.shape)
    return np.where(np.isnan(a), a, out).astype(np.float32)


def _as_float_values(a, elem_type):
    """Float64 values of an output: bfloat16 outputs (elem type 16) travel as uint16 bits."""
    a = np.asarray(a)
    if elem_type == 16 and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def compare_16bit(name, got, ref, elem_type, precision):
    """None when the 16-bit output is within tolerance of the float32 reference, else a one-line description."""
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return "%s: shape %s, reference %s" % (name, got.shape, ref.shape)
    if got.dtype != ref.dtype:
        return "%s: dtype %s, reference %s" % (name, got.dtype, ref.dtype)
    if ref.dtype.kind not in "fc" and elem_type != 16:
        if not np.array_equal(got, ref):
            ne = got != ref
            idx = np.unravel_index(int(np.argmax(ne)), ne.shape) if ne.ndim else ()
            return "%s: %d of %d values differ (first at %s: %r, expected %r)" % (
                name, int(ne.sum()), ne.size, tuple(int(i) for i in idx), got[idx].item(), ref[idx].item())
        return None
    g = _as_float_values(got, elem_type)
    r = _as_float_values(ref, elem_type)
    nan_g, nan_r = np.isnan(g), np.isnan(r)
    if not np.array_equal(nan_g, nan_r):
        return "%s: NaN positions differ (%d NaN, reference %d)" % (name, nan_g.sum(), nan_r.sum())
    inf_r = np.isinf(r)
    # An infinite reference matches the same infinity or the same-signed largest finite value of the 16-bit type:
    # 16-bit engines clamp infinite constants (attention masks) to the finite range (docs/cuda-backend.md).
    with np.errstate(invalid="ignore"):
        saturated = (np.sign(g) == np.sign(r)) & (np.abs(g) >= MAX_16BIT[precision] * (1 - 2.0 ** -9))
    inf_ok = np.where(inf_r, (g == r) | saturated, ~np.isinf(g))
    if not inf_ok.all():
        rng = " [range]" if (np.abs(r[np.isfinite(r)]) > MAX_16BIT[precision]).any() else ""
        return "%s: infinities differ (%d inf, reference %d)%s" % (name, np.isinf(g).sum(), inf_r.sum(), rng)
    finite = np.isfinite(r)
    scale = float(np.abs(r[finite]).max()) if finite.any() else 0.0
    scale = scale if scale > 0 else 1.0
    tol = TOL_16BIT[precision]
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(g - r), 0.0)
    bad = diff > tol * scale + tol * np.abs(np.where(finite, r, 0.0))
    if bad.any():
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        rng = " [range]" if scale > MAX_16BIT[precision] else ""
        return "%s: %d of %d values beyond tol %.0e x (scale %.3g + |ref|) (first at %s: %r, reference %r; max abs " \
               "err %.3g)%s" % (name, int(bad.sum()), bad.size, tol, scale, tuple(int(i) for i in idx),
                                g[idx].item(), r[idx].item(), float(diff.max()), rng)
    return None


CONST_INPUT_RE = re.compile(r"input '([^']+)' must be a constant or computed from shapes")


def freeze_inputs(model, feeds, names, path):
    """Writes a copy of the model in which the graph inputs `names` are initializers holding the case's values."""
    import onnx
    from onnx import numpy_helper
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    keep = [vi for vi in frozen.graph.input if vi.name not in names]
    del frozen.graph.input[:]
    frozen.graph.input.extend(keep)
    for name in names:
        frozen.graph.initializer.append(numpy_helper.from_array(np.asarray(feeds[name]), name))
    with open(path, "wb") as f:
        f.write(frozen.SerializeToString())
    return path


def registry_ops():
    """Op types of kilnrt's op registry (`kilnrt ops`), or None when the CLI is not there."""
    import kilnrt
    cli = kilnrt.cli_path()
    if not cli:
        return None
    proc = subprocess.run([cli, "ops"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    ops = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"^(?:([\w.]+)::)?(\w+)\s+opset", line)
        if m:  # op type only: the node tests name ops without their domain
            ops.add(m.group(2))
    return ops
