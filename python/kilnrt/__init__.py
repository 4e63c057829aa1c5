"""kilnrt: build optimized inference engines from ONNX models and run them (CPU; CUDA where available).

    import kilnrt, numpy as np
    kilnrt.build("model.onnx", "model.engine", shapes={"x": ((1, 3, 224, 224), (8, 3, 224, 224), (32, 3, 224, 224))})
    engine = kilnrt.Engine("model.engine")
    y = engine(np.random.rand(4, 3, 224, 224).astype(np.float32))     # positional, in input order
    outputs = engine.run({"x": x})                                    # {output name: ndarray}

bfloat16 tensors have no numpy dtype: they are passed and returned as uint16 arrays holding the raw bits.

CUDA engines also take device tensors, zero-copy: torch CUDA tensors, cupy arrays, anything with
__cuda_array_interface__ or DLPack. Outputs are new tensors of the same kind on the same device, enqueued on the
caller's current stream (torch's / cupy's), without a device sync:

    engine = kilnrt.Engine("model.engine", device=0)
    y = engine(torch.randn(4, 3, 224, 224, device="cuda"))           # a torch CUDA tensor, on torch's stream
    engine(x, out=y)                                                 # into preallocated outputs
    ctx = engine.create_context()                                    # raw pointers:
    ctx.enqueue({"x": (ptr, (4, 3, 224, 224), "float32")}, {"y": (out_ptr, (4, 1000), "float32")}, stream=s)

kilnrt.cuda has Stream, Event, DeviceBuffer, PinnedBuffer, DeviceArray and Kernel (NVRTC).
"""
import os as _os

import numpy as _np

from ._errors import Error
from . import _kilnrt
from . import _interop
from . import cuda
from ._custom_op import register_op, registered_ops

__all__ = ["Error", "Engine", "ExecutionContext", "TensorSpec", "cuda", "build", "doctor", "cuda_available", "describe_onnx_model", "cli_path", "register_op", "registered_ops",
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


def build(onnx_path, engine_path, device="cpu", fp16=False, shapes=None, bf16=False, tf32=False,
          layer_precisions=None, mark_all_outputs=False, io16=False):
    """Builds an engine file from an ONNX model.

    shapes: {name: (d0, d1, ...)} for fixed shapes, {name: ((min...), (opt...), (max...))} for a dynamic range, or
    a list of "NAME:1x3x224x224" / "NAME:1x3x224x224/8x3x224x224/32x3x224x224" strings (the CLI's --shapes).
    layer_precisions: {pattern: "fp32" | "fp16" | "bf16"} (or a list of (pattern, precision) pairs), applied in
    order, a later pattern winning; a pattern matches a layer name or op type, '*' any run of characters (the CLI's
    --layer-precision). mark_all_outputs: every intermediate tensor becomes an output (debugging accuracy).
    io16: with fp16 / bf16 on CUDA, the model's float32 inputs and outputs are bound in the engine's 16-bit type
    (float16 / bfloat16 arrays and tensors in and out, no conversion kernels; the CLI's --io16).
    """
    pairs = list(dict(layer_precisions).items() if isinstance(layer_precisions, dict) else layer_precisions or [])
    _kilnrt.build_engine_file(_os.fspath(onnx_path), _os.fspath(engine_path), device, bool(fp16), bool(bf16),
                              bool(tf32), _shape_specs(shapes), [(str(k), str(v)) for k, v in pairs],
                              bool(mark_all_outputs), bool(io16))
    return _os.fspath(engine_path)


def _device_ordinal(device):
    """0, 1, "cuda", "cuda:1" or a torch.device -> ordinal."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise Error("device %r: expected an ordinal (0, 1 ...) or 'cuda:N'" % (device,), "invalid_argument", "device")


def _as_tuple(shape):
    return tuple(int(d) for d in shape)


class Engine:
    """A built engine, loaded from a file (Engine(path, device=N)) or bytes (Engine.from_bytes(data, device=N)).

    device: the CUDA device a CUDA engine runs on (an ordinal or "cuda:N"; ignored for CPU engines)."""

    def __init__(self, engine_path=None, device=0, *, _handle=None):
        if _handle is None:
            if engine_path is None:
                raise TypeError("Engine(engine_path) needs the path of an engine file")
            _handle = _kilnrt.EngineHandle.load(_os.fspath(engine_path), _device_ordinal(device))
        self._handle = _handle
        self._inputs = tuple(TensorSpec(i) for i in _handle.inputs)
        self._outputs = tuple(TensorSpec(o) for o in _handle.outputs)
        self._input_names = frozenset(s.name for s in self._inputs)
        self._output_names = tuple(s.name for s in self._outputs)
        # run() with torch CUDA tensors and out=: the enqueue arguments of recent calls, keyed by every tensor's
        # (pointer, shape, dtype, device, contiguity) and the stream; a call like an earlier one skips the Python-side
        # checks (the C++ enqueue still checks every pointer and shape). Holds integers only, no tensors.
        self._fast_feeds = {}

    @classmethod
    def from_bytes(cls, data, label="<memory>", device=0):
        return cls(_handle=_kilnrt.EngineHandle.from_bytes(bytes(data), label, _device_ordinal(device)))

    @property
    def device(self):
        """The CUDA device ordinal the engine runs on, or -1 for a CPU engine."""
        return self._handle.device

    @property
    def is_cuda(self):
        return self._handle.device >= 0

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def layers(self):
        """[{name, op_type, placement, tactic, inputs, outputs, precision}] in execution order."""
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

    @property
    def activation_memory_size(self):
        """Device bytes a context needs for activations at the profiles' max shapes (0: CPU engine, or unbounded)."""
        return self._handle.activation_memory_size

    @property
    def activation_memory_sizes(self):
        """Per profile (-1: a dynamic dim without a bound); [] for CPU engines."""
        return list(self._handle.activation_memory_sizes)

    def create_context(self, allocate_activations=True):
        """An ExecutionContext for raw device-pointer execution (one stream at a time).

        allocate_activations=False: the context allocates no activation memory; give it with
        ctx.set_activation_memory(tensor_or_pointer, nbytes) before running."""
        return ExecutionContext(self, self._handle.create_context(bool(allocate_activations)))

    def _prepare(self, spec, value):
        array = _np.asarray(value)
        if array.dtype != spec.dtype:
            if not _np.can_cast(array.dtype, spec.dtype, casting="same_kind"):
                raise Error("input %r has dtype %s; the engine expects %s" % (spec.name, array.dtype, spec.kilnrt_dtype),
                            "invalid_argument", spec.name)
            array = array.astype(spec.dtype)
        # C-contiguous and aligned (a misaligned view is copied); keeps 0-d arrays 0-d (ascontiguousarray would not)
        return _np.require(array, requirements="CA")

    def run(self, inputs, out=None, stream=None):
        """Runs the engine: {input name: tensor} -> {output name: tensor}.

        Host inputs (numpy arrays, CPU torch tensors): arrays of another float/int width are converted to the
        input's dtype; C-contiguous arrays of the right dtype are used without copying; the call returns when the
        outputs are ready (numpy arrays, or CPU torch tensors sharing their memory for CPU torch inputs).

        Device inputs (CUDA engines only; torch CUDA tensors, cupy arrays, __cuda_array_interface__ / DLPack
        objects): read in place, never converted; they must be on the engine's device, C-contiguous and of the
        engine's dtype. Outputs are new tensors of the first device input's kind (torch.empty / cupy.empty /
        kilnrt.cuda.DeviceArray) on that device; the work is enqueued on `stream` (default: torch's current
        stream for torch inputs, cupy's for cupy inputs, the producer's stream for __cuda_array_interface__ v3,
        else the legacy default stream) and the call returns without waiting for the GPU.

        out: preallocated outputs, a dict {output name: tensor} (or one tensor for a single-output engine),
        checked for shape, dtype, device and contiguity; they are filled and returned.
        """
        key = self._fast_key(inputs, out, stream)
        if key is not None:
            bound = self._fast_feeds.get(key[:3])
            if bound is not None:
                self._handle.enqueue_bound(bound, key[2])
                return dict(zip(self._output_names, key[3]))
        if not isinstance(inputs, dict):
            raise TypeError("Engine.run expects a dict {input name: tensor}; call the engine for positional inputs")
        specs = {s.name: s for s in self._inputs}
        for name in inputs:
            if name not in specs:
                raise Error("the engine has no input named %r (inputs: %s)" % (name, ", ".join(specs)),
                            "invalid_argument", str(name))
        missing = [n for n in specs if n not in inputs]
        if missing:
            raise Error("missing input(s): %s" % ", ".join(missing), "invalid_argument", missing[0])
        classified = {name: _interop.classify(value, "input %r" % name) for name, value in inputs.items()}
        device_names = [n for n, (k, _) in classified.items() if k == "device"]
        if device_names:
            host_names = [n for n, (k, _) in classified.items() if k != "device"]
            if host_names:
                raise Error("inputs mix device tensors (%s) and host arrays (%s): pass all inputs on the device "
                            "(e.g. torch.as_tensor(a, device='cuda:%d')) or all on the host"
                            % (", ".join(device_names), ", ".join(host_names), max(self.device, 0)),
                            "invalid_argument", host_names[0])
            return self._run_device({n: v for n, (_, v) in classified.items()}, out, stream, key)
        return self._run_host(classified, out)

    def _fast_key(self, inputs, out, stream):
        """The fast-path key of a run() call with torch CUDA tensors only, out= given, on a CUDA engine; else None.
        (in tensors, out tensors, stream handle, out tensors in output order) — the first three are hashable keys."""
        if out is None or type(inputs) is not dict or self._handle.device < 0:
            return None
        torch = _interop.torch_module()
        if torch is None:
            return None
        if type(out) is dict:
            if len(out) != len(self._output_names):
                return None
            try:
                outs = tuple(out[n] for n in self._output_names)
            except KeyError:
                return None
        elif isinstance(out, torch.Tensor) and len(self._output_names) == 1:
            outs = (out,)
        else:
            return None
        if len(inputs) != len(self._input_names):
            return None
        tensor = torch.Tensor
        ins = []
        # No device in the key: a data pointer names one device's memory (unified addressing); a tensor on another
        # device has another pointer and takes the checked path.
        for name, t in inputs.items():
            if not isinstance(t, tensor) or not t.is_cuda or name not in self._input_names:
                return None
            ins.append((name, t.data_ptr(), t.shape, t.dtype, t.is_contiguous()))
        outk = []
        for t in outs:
            if not isinstance(t, tensor) or not t.is_cuda:
                return None
            outk.append((t.data_ptr(), t.shape, t.dtype, t.is_contiguous()))
        handle = (cuda.stream_handle(stream) if stream is not None
                  else _interop.torch_current_stream(self._handle.device))
        return (tuple(ins), tuple(outk), handle, outs)

    # ---- host path: numpy (and CPU torch tensors through numpy) ----------------------------------------------------

    def _run_host(self, classified, out):
        specs = {s.name: s for s in self._inputs}
        torch_inputs = False
        feeds = {}
        for name, (kind, value) in classified.items():
            if kind == "torch_cpu":
                torch_inputs = True
                if specs[name].kilnrt_dtype == "bfloat16" or str(value.dtype) == "torch.bfloat16":
                    raise Error("input %r: bfloat16 CPU torch tensors are not supported on the host path; pass a "
                                "numpy uint16 array of the raw bits, or a CUDA tensor to a CUDA engine" % name,
                                "invalid_argument", name)
                value = value.detach().numpy()  # shares memory (contiguity / dtype handled below like numpy)
            feeds[name] = self._prepare(specs[name], value)
        result = self._handle.run(feeds)
        if torch_inputs:
            torch = _interop.torch_module()
            result = {k: torch.from_numpy(v) for k, v in result.items()}
        if out is None:
            return result
        targets = self._out_dict(out)
        for name, value in result.items():
            target = targets[name]
            what = "output %r" % name
            kind, tv = _interop.classify(target, what)
            if kind == "device":
                raise Error("%s: out= holds a device tensor but the inputs are host arrays: pass host outputs, or "
                            "device inputs" % what, "invalid_argument", name)
            if tuple(target.shape) != tuple(value.shape):
                raise Error("%s has shape %s, the engine produced %s" % (what, tuple(target.shape),
                                                                       tuple(value.shape)), "invalid_argument", name)
            if kind == "torch_cpu":
                torch = _interop.torch_module()
                target.copy_(value if isinstance(value, torch.Tensor) else torch.from_numpy(value))
            else:
                if not isinstance(target, _np.ndarray):
                    raise Error("%s: out= must hold numpy arrays (or CPU torch tensors) for host inputs" % what,
                                "invalid_argument", name)
                _np.copyto(target, _np.asarray(value), casting="same_kind")
        return {name: targets[name] for name in result}

    def _out_dict(self, out):
        names = [s.name for s in self._outputs]
        if isinstance(out, dict):
            unknown = [n for n in out if n not in names]
            if unknown:
                raise Error("out= names unknown output(s) %s (outputs: %s)" % (", ".join(map(repr, unknown)),
                                                                            ", ".join(names)),
                            "invalid_argument", str(unknown[0]))
            missing = [n for n in names if n not in out]
            if missing:
                raise Error("out= lacks output(s) %s" % ", ".join(map(repr, missing)), "invalid_argument", missing[0])
            return dict(out)
        if isinstance(out, (tuple, list)):
            if len(out) != len(names):
                raise Error("out= holds %d tensor(s), the engine has %d output(s) (%s)" % (
                    len(out), len(names), ", ".join(names)), "invalid_argument")
            return dict(zip(names, out))
        if len(names) != 1:
            raise Error("the engine has %d outputs (%s): pass out= as a dict {name: tensor}" % (
                len(names), ", ".join(names)), "invalid_argument")
        return {names[0]: out}

    # ---- device path: zero-copy enqueue on the caller's stream ----------------------------------------------------

    def _resolve_stream(self, values, stream):
        if stream is not None:
            return cuda.stream_handle(stream)
        kinds = [v.kind for v in values]
        if "torch" in kinds and _interop.torch_module() is not None:
            return _interop.torch_current_stream(self.device)
        if "cupy" in kinds and _interop.cupy_module() is not None:
            return _interop.cupy_current_stream(self.device)
        for v in values:
            if v.kind == "cai" and isinstance(v.stream, int) and v.stream > 0:
                return v.stream  # CAI v3: 1 = legacy default, 2 = per-thread default, else a stream handle
        return 0

    def _run_device(self, values, out, stream, fast_key=None):
        if self.device < 0:
            name = next(iter(values))
            raise Error("input %r is a device tensor but this engine runs on the CPU: pass host tensors (e.g. "
                        "tensor.cpu()), or build a CUDA engine (kilnrt.build(..., device='cuda'))" % name,
                        "invalid_argument", name)
        specs = {s.name: s for s in self._inputs}
        handle = self._resolve_stream(values.values(), stream)
        for name, dv in values.items():
            if dv.kind == "dlpack":
                _interop.dlpack_value(dv, handle, "input %r" % name)
            _interop.check_device_value(dv, "input %r" % name, specs[name].kilnrt_dtype, self.device)
        in_shapes = {name: dv.shape for name, dv in values.items()}
        out_shapes = self._handle.output_shapes(in_shapes, handle)
        proto = next(iter(values.values()))
        results = {}
        if out is None:
            for spec in self._outputs:
                results[spec.name] = _interop.allocate_like(proto.kind, proto, out_shapes[spec.name],
                                                            spec.kilnrt_dtype, spec.dtype, self.device)
        else:
            results = self._out_dict(out)
        out_feeds = {}
        for spec in self._outputs:
            what = "output %r" % spec.name
            kind, dv = _interop.classify(results[spec.name], what)
            if kind != "device":
                raise Error("%s: out= holds a host array but the inputs are device tensors: pass device outputs "
                            "(or leave out= out)" % what, "invalid_argument", spec.name)
            if dv.kind == "dlpack":
                _interop.dlpack_value(dv, handle, what)
            _interop.check_device_value(dv, what, spec.kilnrt_dtype, self.device, out_shapes[spec.name])
            out_feeds[spec.name] = (dv.ptr, dv.shape, spec.kilnrt_dtype, self.device)
        in_feeds = {name: (dv.ptr, dv.shape, specs[name].kilnrt_dtype, self.device) for name, dv in values.items()}
        self._handle.enqueue(in_feeds, out_feeds, handle)
        if fast_key is not None and fast_key[2] == handle:
            if len(self._fast_feeds) >= 16:
                self._fast_feeds.clear()
            self._fast_feeds[fast_key[:3]] = self._handle.bind(in_feeds, out_feeds)  # converted once
        return {spec.name: results[spec.name] for spec in self._outputs}

    def __call__(self, *tensors, out=None, stream=None):
        """engine(x, ...) with inputs in order; returns one tensor for a single output, else a tuple."""
        if len(tensors) != len(self._inputs):
            raise Error("the engine takes %d input(s) (%s), got %d" % (
                len(self._inputs), ", ".join(s.name for s in self._inputs), len(tensors)), "invalid_argument")
        result = self.run({s.name: a for s, a in zip(self._inputs, tensors)}, out=out, stream=stream)
        values = tuple(result[s.name] for s in self._outputs)
        return values[0] if len(values) == 1 else values

    def __repr__(self):
        return "kilnrt.Engine(target=%r, device=%d, inputs=%r, outputs=%r)" % (
            self.header["target"], self.device, self.inputs, self.outputs)


class ExecutionContext:
    """Raw execution on device pointers (CUDA engines): engine.create_context().

        ctx.output_shapes({"x": (4, 3, 224, 224)})         -> {"y": (4, 1000)}
        ctx.enqueue(inputs={"x": (ptr, shape, dtype)}, outputs={"y": (ptr, shape, dtype)}, stream=handle)

    A tensor is (pointer, shape, dtype[, device]) with dtype a kilnrt name ("float32", "bfloat16"), a numpy dtype or
    a torch dtype, or a device tensor (torch / cupy / CUDA array) read like Engine.run reads it. `stream`: an int
    handle or a stream object (kilnrt.cuda.stream_handle); 0 = the legacy default stream. enqueue returns without
    waiting; the memory must stay valid until the stream reached that point. Use one context per stream.
    """

    def __init__(self, engine, handle):
        self.engine = engine
        self._handle = handle

    @property
    def device(self):
        return self._handle.device

    def _feeds(self, tensors, role):
        feeds = {}
        for name, value in dict(tensors).items():
            what = "%s %r" % (role, name)
            if isinstance(value, (tuple, list)):
                if len(value) not in (3, 4):
                    raise Error("%s: expected (pointer, shape, dtype[, device])" % what, "invalid_argument", str(name))
                entry = (int(value[0]), _as_tuple(value[1]), _interop.dtype_name_of(value[2]))
                feeds[name] = entry + ((int(value[3]),) if len(value) == 4 else ())
                continue
            kind, dv = _interop.classify(value, what)
            if kind != "device":
                raise Error("%s: enqueue takes device tensors or (pointer, shape, dtype) tuples; use "
                            "engine.run() for host arrays" % what, "invalid_argument", str(name))
            if dv.kind == "dlpack":
                _interop.dlpack_value(dv, 1, what)
            if not dv.contiguous:
                raise Error("%s is not C-contiguous" % what, "invalid_argument", str(name))
            entry = (dv.ptr, dv.shape, "bfloat16" if dv.dtype == "uint16" else dv.dtype)
            feeds[name] = entry + ((dv.device,) if dv.device is not None else ())
        return feeds

    def output_shapes(self, input_shapes):
        return self._handle.output_shapes({name: _as_tuple(s) for name, s in dict(input_shapes).items()})

    def set_input_shape(self, name, shape):
        self._handle.set_input_shape(name, _as_tuple(shape))

    def set_activation_memory(self, memory, nbytes=None):
        """Uses the caller's device memory as this context's activations: a torch / cupy / CUDA-array tensor (nbytes
        defaults to its size) or an int device pointer with nbytes. At least engine.activation_memory_size bytes,
        256-byte aligned, on the engine's device; the context keeps a reference to a tensor passed here."""
        if isinstance(memory, int) and not isinstance(memory, bool):
            if nbytes is None:
                raise Error("set_activation_memory(pointer, nbytes): give nbytes with an int pointer",
                            "invalid_argument", "activation memory")
            ptr = memory
        else:
            kind, dv = _interop.classify(memory, "activation memory")
            if kind != "device":
                raise Error("activation memory must be device memory (a CUDA tensor or an int device pointer), not "
                            "a host array", "invalid_argument", "activation memory")
            if dv.kind == "dlpack":
                _interop.dlpack_value(dv, 1, "activation memory")
            ptr = dv.ptr
            if nbytes is None:
                itemsize = 2 if dv.dtype in ("bfloat16", "float16", "uint16", "int16") else _np.dtype(dv.dtype).itemsize
                count = 1
                for d in dv.shape:
                    count *= d
                nbytes = count * itemsize
        self._handle.set_activation_memory(int(ptr), int(nbytes))
        self._activation_memory = memory

    def enqueue(self, inputs, outputs, stream=None):
        self._handle.enqueue(self._feeds(inputs, "input"), self._feeds(outputs, "output"), cuda.stream_handle(stream))


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
