"""kilnrt: build optimized inference engines from ONNX models and run them (CPU; CUDA where available).

    import kilnrt, numpy as np
    kilnrt.build("model.onnx", "model.engine", shapes={"x": ((1, 3, 224, 224), (8, 3, 224, 224), (32, 3, 224, 224))})
    engine = kilnrt.Engine("model.engine")
    y = engine(np.random.rand(4, 3, 224, 224).astype(np.float32))     # positional, in input order
    outputs = engine.run({"x": x})                                    # {output name: ndarray}

bfloat16 tensors have no numpy dtype: they are passed and returned as uint16 arrays holding the raw bits.
"""
import os as _os

import numpy as _np

from ._errors import Error
from . import _kilnrt

__all__ = ["Error", "Engine", "TensorSpec", "build", "doctor", "cuda_available", "describe_onnx_model", "cli_path",
           "__version__"]

Error.__module__ = "kilnrt"

__version__ = _kilnrt.version()


class TensorSpec:
    """An engine input or output: name, shape (-1 for dynamic dims), dtype (numpy dtype)."""

    __slots__ = ("name", "shape", "dtype", "kilnrt_dtype", "dim_names")

    def __init__(self, info):
        self.name = info["name"]
        self.shape = tuple(int(d) for d in info["shape"])
        self.dtype = _np.dtype(info["numpy_dtype"])
        self.kilnrt_dtype = info["dtype"]  # "float32", "bfloat16", ... (bfloat16 travels as numpy uint16)
        self.dim_names = tuple(info["dim_names"])

    def __repr__(self):
        return "TensorSpec(name=%r, shape=%r, dtype=%s)" % (self.name, self.shape, self.kilnrt_dtype)


def _dims_text(dims, what):
    try:
        dims = [int(d) for d in dims]
    except (TypeError, ValueError):
        raise Error("shape %r for %s is not a sequence of integers" % (dims, what), "invalid_argument", what) from None
    return "x".join(str(d) for d in dims)


def _shape_specs(shapes):
    """Converts build(shapes=...) to "NAME:D0xD1" / "NAME:MIN/OPT/MAX" strings."""
    if shapes is None:
        return []
    if isinstance(shapes, str):
        return [shapes]
    if isinstance(shapes, dict):
        specs = []
        for name, value in shapes.items():
            if isinstance(value, str):
                specs.append("%s:%s" % (name, value))
            elif len(value) == 3 and all(isinstance(v, (tuple, list)) for v in value):
                specs.append("%s:%s" % (name, "/".join(_dims_text(v, name) for v in value)))
            else:
                specs.append("%s:%s" % (name, _dims_text(value, name)))
        return specs
    return [str(s) for s in shapes]


def build(onnx_path, engine_path, device="cpu", fp16=False, shapes=None, bf16=False, tf32=False):
    """Builds an engine file from an ONNX model.

    shapes: {name: (d0, d1, ...)} for fixed shapes, {name: ((min...), (opt...), (max...))} for a dynamic range, or
    a list of "NAME:1x3x224x224" / "NAME:1x3x224x224/8x3x224x224/32x3x224x224" strings (the CLI's --shapes).
    """
    _kilnrt.build_engine_file(_os.fspath(onnx_path), _os.fspath(engine_path), device, bool(fp16), bool(bf16),
                              bool(tf32), _shape_specs(shapes))
    return _os.fspath(engine_path)


class Engine:
    """A built engine, loaded from a file (Engine(path)) or bytes (Engine.from_bytes(data))."""

    def __init__(self, engine_path=None, *, _handle=None):
        if _handle is None:
            if engine_path is None:
                raise TypeError("Engine(engine_path) needs the path of an engine file")
            _handle = _kilnrt.EngineHandle.load(_os.fspath(engine_path))
        self._handle = _handle
        self._inputs = tuple(TensorSpec(i) for i in _handle.inputs)
        self._outputs = tuple(TensorSpec(o) for o in _handle.outputs)

    @classmethod
    def from_bytes(cls, data, label="<memory>"):
        return cls(_handle=_kilnrt.EngineHandle.from_bytes(bytes(data), label))

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def layers(self):
        """[{name, op_type, placement, tactic, inputs, outputs}] in execution order."""
        return self._handle.layers

    @property
    def header(self):
        """{format_version, kilnrt_version, target, build_options, model_hash, file_size, weights_bytes}."""
        return self._handle.header

    @property
    def profiles(self):
        """[[(name, min, opt, max), ...], ...]: the dynamic-shape profiles the engine was built with."""
        return self._handle.profiles

    def describe(self):
        return self._handle.describe()

    def _prepare(self, spec, value):
        array = _np.asarray(value)
        if array.dtype != spec.dtype:
            if not _np.can_cast(array.dtype, spec.dtype, casting="same_kind"):
                raise Error("input %r has dtype %s; the engine expects %s" % (spec.name, array.dtype, spec.kilnrt_dtype),
                            "invalid_argument", spec.name)
            array = array.astype(spec.dtype)
        return _np.ascontiguousarray(array)

    def run(self, inputs):
        """Runs the engine: {input name: array} -> {output name: ndarray}. Arrays of another float/int width are
        converted to the input's dtype; C-contiguous arrays of the right dtype are used without copying."""
        if not isinstance(inputs, dict):
            raise TypeError("Engine.run expects a dict {input name: array}; call the engine for positional inputs")
        specs = {s.name: s for s in self._inputs}
        feeds = {}
        for name, value in inputs.items():
            spec = specs.get(name)
            if spec is None:
                raise Error("the engine has no input named %r (inputs: %s)" % (name, ", ".join(specs)),
                            "invalid_argument", str(name))
            feeds[name] = self._prepare(spec, value)
        missing = [n for n in specs if n not in feeds]
        if missing:
            raise Error("missing input(s): %s" % ", ".join(missing), "invalid_argument", missing[0])
        return self._handle.run(feeds)

    def __call__(self, *arrays):
        """engine(x, ...) with inputs in order; returns one array for a single output, else a tuple."""
        if len(arrays) != len(self._inputs):
            raise Error("the engine takes %d input(s) (%s), got %d" % (
                len(self._inputs), ", ".join(s.name for s in self._inputs), len(arrays)), "invalid_argument")
        result = self.run({s.name: a for s, a in zip(self._inputs, arrays)})
        values = tuple(result[s.name] for s in self._outputs)
        return values[0] if len(values) == 1 else values

    def __repr__(self):
        return "kilnrt.Engine(target=%r, inputs=%r, outputs=%r)" % (self.header["target"], self.inputs, self.outputs)


def doctor():
    """What kilnrt found on this machine (GPU, driver, CUDA libraries), as text."""
    return _kilnrt.doctor_report()


def cuda_available():
    """True when a CUDA driver and a GPU are usable."""
    return bool(_kilnrt.cuda_available()[0])


def describe_onnx_model(onnx_path):
    return _kilnrt.describe_onnx_model(_os.fspath(onnx_path))


def cli_path():
    """Path of the `kilnrt` command-line tool that ships with this package (None if absent)."""
    path = _os.path.join(_os.path.dirname(_os.path.realpath(__file__)), "bin", "kilnrt")
    local = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "bin", "kilnrt")
    for p in (local, path):
        if _os.path.isfile(p) and _os.access(p, _os.X_OK):
            return p
    return None
