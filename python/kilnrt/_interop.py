"""Device tensors for Engine.run / __call__ / ExecutionContext.enqueue: torch CUDA tensors, cupy arrays, anything
with __cuda_array_interface__ (numba, ...) or DLPack (__dlpack__ / __dlpack_device__), read zero-copy.

Neither torch nor cupy is imported here: a value is a torch tensor only if `torch` is already in sys.modules and
isinstance(value, torch.Tensor), likewise for cupy.
"""
import sys

import numpy as _np

from . import _kilnrt
from ._errors import Error

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


class DeviceValue:
    """A device tensor as kilnrt sees it."""

    __slots__ = ("kind", "obj", "ptr", "shape", "dtype", "device", "contiguous", "stream", "keep")

    def __init__(self, kind, obj, ptr, shape, dtype, device, contiguous, stream=None, keep=None):
        self.kind = kind              # "torch", "cupy", "cai", "dlpack"
        self.obj = obj
        self.ptr = int(ptr)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype            # kilnrt dtype name ("float32", "bfloat16", "uint16" ...) or the producer's
        self.device = device          # CUDA ordinal, or None when the producer does not say (CAI)
        self.contiguous = contiguous
        self.stream = stream          # the producer's stream (CAI v3 "stream"), or None
        self.keep = keep              # keeps a DLPack capsule alive

    def describe(self):
        return {"torch": "torch tensor", "cupy": "cupy array", "cai": "CUDA array", "dlpack": "DLPack tensor"}[
            self.kind]


def _numpy_dtype_name(dtype):
    dtype = _np.dtype(dtype)
    if dtype.byteorder == ">" and dtype.itemsize > 1:
        return "big-endian " + dtype.name
    return dtype.name


def _c_contiguous(shape, strides, itemsize):
    """strides in bytes."""
    if strides is None:
        return True
    if any(d == 0 for d in shape):
        return True
    expected = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def torch_module():
    return sys.modules.get("torch")


def cupy_module():
    return sys.modules.get("cupy")


def is_torch_tensor(value):
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def classify(value, what):
    """-> ("host", value) for numpy / lists / scalars / CPU torch tensors / CPU DLPack, ("torch_cpu", tensor), or
    ("device", DeviceValue). `what` names the tensor for errors ("input 'x'")."""
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        dev = value.device
        if dev.type == "cpu":
            return "torch_cpu", value
        if dev.type != "cuda":
            raise Error("%s is a torch tensor on %s; kilnrt takes CUDA tensors or host (CPU) tensors" % (what, dev),
                        "invalid_argument", what)
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        name = str(value.dtype).replace("torch.", "")
        return "device", DeviceValue("torch", value, value.data_ptr(), value.shape, name, index,
                                     value.is_contiguous())
    cupy = cupy_module()
    if cupy is not None and isinstance(value, cupy.ndarray):
        return "device", DeviceValue("cupy", value, value.data.ptr, value.shape, _numpy_dtype_name(value.dtype),
                                     value.device.id, bool(value.flags.c_contiguous))
    if isinstance(value, _np.ndarray):
        return "host", value
    if hasattr(type(value), "__cuda_array_interface__") or hasattr(value, "__cuda_array_interface__"):
        try:
            cai = value.__cuda_array_interface__
        except Exception as e:  # e.g. a producer that refuses (grad-tracking tensors)
            raise Error("%s: reading __cuda_array_interface__ failed: %s" % (what, e), "invalid_argument",
                        what) from None
        if cai.get("mask") is not None:
            raise Error("%s: masked CUDA arrays are not supported" % what, "invalid_argument", what)
        dtype = _np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        return "device", DeviceValue("cai", value, cai["data"][0] or 0, shape, _numpy_dtype_name(dtype), None,
                                     _c_contiguous(shape, cai.get("strides"), dtype.itemsize), cai.get("stream"))
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if callable(dlpack_device) and callable(getattr(value, "__dlpack__", None)):
        device_type, device_id = dlpack_device()
        if device_type == _KDL_CPU:
            return "host", value
        if device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            raise Error("%s is a DLPack tensor on device type %d; kilnrt takes CUDA or CPU tensors"
                        % (what, device_type), "invalid_argument", what)
        # Read later (dlpack_value), once the stream kilnrt enqueues on is known.
        return "device", DeviceValue("dlpack", value, 0, (), "", int(device_id), True)
    return "host", value


def dlpack_value(dv, stream, what):
    """Fills a "dlpack" DeviceValue from value.__dlpack__(stream=...): the producer orders its work before
    `stream` (the DLPack stream convention: 1 = legacy default stream)."""
    try:
        capsule = dv.obj.__dlpack__(stream=stream if stream not in (0, None) else 1)
    except TypeError:
        capsule = dv.obj.__dlpack__()
    ptr, shape, strides, dtype, _, device_id = _kilnrt.dlpack_info(capsule)
    dv.ptr, dv.shape, dv.dtype, dv.device, dv.keep = ptr, tuple(shape), dtype, device_id, capsule
    dv.contiguous = strides is None or _c_contiguous(shape, [s * 1 for s in strides], 1)
    return dv


def torch_current_stream(device):
    torch = torch_module()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # the handle without a Stream object (faster)
    if raw is not None:
        return int(raw(device))
    return int(torch.cuda.current_stream(device).cuda_stream)


def cupy_current_stream(device):
    cupy = cupy_module()
    try:
        return int(cupy.cuda.get_current_stream(device).ptr)
    except TypeError:  # older cupy: no device argument
        return int(cupy.cuda.get_current_stream().ptr)


def allocate_like(kind, proto, shape, kilnrt_dtype, numpy_dtype, device):
    """A new C-contiguous output of the same kind as `proto` (a DeviceValue) on `device`."""
    if kind == "torch":
        torch = torch_module()
        return torch.empty(shape, dtype=getattr(torch, kilnrt_dtype), device=proto.obj.device)
    if kind == "cupy":
        cupy = cupy_module()
        if cupy.cuda.runtime.getDevice() == device:
            return cupy.empty(shape, dtype=numpy_dtype)
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=numpy_dtype)
    from .cuda import DeviceArray
    return DeviceArray(shape, numpy_dtype, device, kilnrt_dtype=kilnrt_dtype)


def dtype_matches(have, want):
    """Device dtypes: exact, except that bfloat16 may travel as uint16 bits (kilnrt's numpy convention)."""
    return have == want or (want == "bfloat16" and have == "uint16")


def hint_for(dv, want_dtype, engine_device):
    if dv.kind == "torch":
        return {"dtype": "convert it (tensor.to(torch.%s))" % want_dtype,
                "contiguous": "call .contiguous() on it",
                "device": "move it (tensor.to('cuda:%d')) or load the engine on that device "
                          "(kilnrt.Engine(path, device=N))" % engine_device}
    if dv.kind == "cupy":
        return {"dtype": "convert it (array.astype(cupy.%s))" % want_dtype,
                "contiguous": "use cupy.ascontiguousarray",
                "device": "copy it to device %d or load the engine on that device (kilnrt.Engine(path, device=N))"
                          % engine_device}
    return {"dtype": "convert it to %s" % want_dtype, "contiguous": "make a C-contiguous copy",
            "device": "copy it to device %d or load the engine on that device" % engine_device}


def check_device_value(dv, what, want_dtype, engine_device, want_shape=None):
    """The checks done before anything launches: device, contiguity, dtype (and shape for outputs)."""
    hints = hint_for(dv, want_dtype, engine_device)
    if dv.device is not None and dv.device != engine_device:
        raise Error("%s is a %s on cuda:%d but the engine runs on cuda:%d: %s" % (
            what, dv.describe(), dv.device, engine_device, hints["device"]), "invalid_argument", what)
    if not dv.contiguous:
        raise Error("%s is a non-contiguous %s (shape %s): kilnrt reads device tensors in place and needs "
                    "C-contiguous (row-major) memory: %s" % (what, dv.describe(), dv.shape, hints["contiguous"]),
                    "invalid_argument", what)
    if not dtype_matches(dv.dtype, want_dtype):
        raise Error("%s is a %s %s; the engine expects %s: %s (device tensors are never converted implicitly)"
                    % (what, dv.dtype, dv.describe(), want_dtype, hints["dtype"]), "invalid_argument", what)
    if want_shape is not None and tuple(dv.shape) != tuple(want_shape):
        raise Error("%s has shape %s, the engine produces %s for these inputs: pass a tensor of that shape (or "
                    "leave out= out to have kilnrt allocate it)" % (what, tuple(dv.shape), tuple(want_shape)),
                    "invalid_argument", what)


def dtype_name_of(dtype):
    """kilnrt dtype name from a str ("float32", "bfloat16"), a numpy dtype / type, or a torch dtype."""
    if isinstance(dtype, str):
        try:
            return _np.dtype(dtype).name if dtype not in ("bfloat16",) else dtype
        except TypeError:
            return dtype
    text = str(dtype)
    if text.startswith("torch."):
        return text[len("torch."):]
    return _np.dtype(dtype).name
