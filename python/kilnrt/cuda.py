"""kilnrt.cuda: kilnrt's CUDA core as Python objects that expose raw handles and pointers for interop.

    import kilnrt.cuda as kc
    with kc.Stream(device=0) as s, kc.DeviceBuffer(4096, device=0) as buf:
        buf.copy_from_host(np.arange(1024, dtype=np.float32), stream=s)   # async on s
        s.synchronize()
        x = buf.copy_to_host(dtype=np.float32)                          # synchronous without stream=
    k = kc.Kernel(source, "saxpy", options=["--use_fast_math"])
    k.launch(grid=4, block=256, args=[np.float32(2.0), x_ptr, y_ptr, np.int32(n)], stream=torch_stream)

- Handles are the driver's: Stream.ptr is a cudaStream_t / CUstream of the device's primary context (the one torch
  and cupy use), so `torch.cuda.ExternalStream(s.ptr)` / `cupy.cuda.ExternalStream(s.ptr)` wrap it, and kilnrt takes
  torch / cupy streams (`stream=` accepts None = the legacy default stream, an int handle, or any object with
  `__cuda_stream__`, `.cuda_stream` (torch), `.ptr` (cupy, kilnrt) or `.handle` (numba)).
- Every call runs under kilnrt's context guard: a torch / cupy / pycuda context that is current stays current.
- Each object is a context manager: leaving the `with` block (or close()) frees it now. DeviceBuffer and
  DeviceArray expose `__cuda_array_interface__` (torch.as_tensor(buf, device="cuda"), cupy.asarray(buf)); a consumer's
  view must be gone before close(). PinnedBuffer's numpy views keep the pinned memory alive by themselves.
"""
import numpy as _np

from . import _kilnrt
from ._errors import Error

__all__ = ["Stream", "Event", "DeviceBuffer", "DeviceArray", "PinnedBuffer", "Kernel", "stream_handle"]

_AVAILABLE = bool(getattr(_kilnrt, "has_cuda_objects", False))


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise Error("this build of kilnrt has no CUDA support (built without the CUDA toolkit): kilnrt.cuda is "
                    "unavailable", "unsupported")


def _base(name):
    return getattr(_kilnrt, name) if _AVAILABLE else _Unavailable


def stream_handle(stream):
    """The integer CUstream handle of `stream`: None -> 0 (legacy default stream), an int, or an object with
    __cuda_stream__ (CUDA Python protocol), .cuda_stream (torch.cuda.Stream), .ptr (cupy / kilnrt) or .handle
    (numba, a ctypes pointer)."""
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise Error("stream=%r is not a CUDA stream" % (stream,), "invalid_argument", "stream")
    if isinstance(stream, int):
        if stream < 0:
            raise Error("stream handle %d is negative" % stream, "invalid_argument", "stream")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if callable(proto):
        value = proto()
        return int(value[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raw = getattr(value, "value", None)  # ctypes.c_void_p
        if attr == "handle" and (raw is None or isinstance(raw, int)):
            return int(raw or 0)
    raise Error("cannot read a CUDA stream handle from %r: pass an int handle, a torch.cuda.Stream, a "
                "cupy.cuda.Stream or a kilnrt.cuda.Stream" % (type(stream).__name__,), "invalid_argument", "stream")


class _Closing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Stream(_Closing, _base("_Stream")):
    """A CUDA stream of `device`'s primary context (non-blocking by default). .ptr is its cudaStream_t."""

    def __init__(self, device=0, non_blocking=True, priority=0):
        super().__init__(int(device), bool(non_blocking), int(priority))

    def __cuda_stream__(self):
        return (0, self.ptr)

    def wait(self, event):
        """Makes later work on this stream wait for `event` (a kilnrt.cuda.Event)."""
        self._wait_event(event)

    def __repr__(self):
        return "kilnrt.cuda.Stream(device=%d, ptr=0x%x)" % (self.device, self.ptr)


class Event(_Closing, _base("_Event")):
    """A CUDA event of `device` (timing enabled by default, for elapsed_time)."""

    def __init__(self, device=0, timing=True, blocking_sync=False):
        super().__init__(int(device), bool(timing), bool(blocking_sync))

    def record(self, stream=None):
        """Records the event on `stream` (see stream_handle; None = the legacy default stream)."""
        self._record(stream_handle(stream))
        return self

    def __repr__(self):
        return "kilnrt.cuda.Event(device=%d, ptr=0x%x)" % (self.device, self.ptr)


def _pointer_of(obj, what):
    """A device pointer from an int, a torch CUDA tensor, or an object with __cuda_array_interface__."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        return int(data_ptr())
    raise Error("%s: expected a device pointer (int) or a CUDA array, got %s" % (what, type(obj).__name__),
                "invalid_argument", what)


class DeviceBuffer(_Closing, _base("_DeviceBuffer")):
    """`nbytes` of device memory on `device` (cuMemAlloc: keep allocation off the hot path). .ptr, .size.

    Copies run on `stream`; without stream= they use the legacy default stream and wait for completion. With a
    stream the copy is asynchronous: keep host arrays alive (and, for pinned memory, unchanged) until it finished.
    """

    def __init__(self, nbytes, device=0):
        super().__init__(int(nbytes), int(device))

    @property
    def nbytes(self):
        return self.size

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "strides": None,
                "version": 3, "stream": None}

    def copy_from_host(self, array, stream=None, offset=0):
        array = _np.require(array, requirements="C")
        self._copy_from_host(array, stream_handle(stream), stream is None, int(offset))
        return self

    def copy_to_host(self, out=None, stream=None, offset=0, dtype=_np.uint8, shape=None):
        """Copies into `out` (a writable C-contiguous array), or into a new array of `dtype` / `shape` (default:
        the whole buffer as bytes). Returns the array."""
        if out is None:
            dtype = _np.dtype(dtype)
            if shape is None:
                shape = ((self.size - int(offset)) // dtype.itemsize,)
            out = _np.empty(shape, dtype)
        self._copy_to_host(out, stream_handle(stream), stream is None, int(offset))
        return out

    def copy_from_device(self, src, nbytes, stream=None, offset=0):
        """Copies `nbytes` from device memory `src` (an int pointer or a CUDA array) into the buffer."""
        self._copy_from_device(_pointer_of(src, "copy_from_device"), int(nbytes), stream_handle(stream),
                               stream is None, int(offset))
        return self

    def memset(self, value=0, stream=None):
        self._memset(int(value), stream_handle(stream), stream is None)
        return self

    def __repr__(self):
        return "kilnrt.cuda.DeviceBuffer(%d bytes, device=%d, ptr=0x%x)" % (self.size, self.device, self.ptr)


class DeviceArray(_Closing):
    """A C-contiguous typed array in a DeviceBuffer: what kilnrt returns for device inputs that are neither torch
    tensors nor cupy arrays. Exposes __cuda_array_interface__; .numpy() copies to the host."""

    def __init__(self, shape, dtype, device=0, kilnrt_dtype=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = _np.dtype(dtype)
        self.kilnrt_dtype = kilnrt_dtype or self.dtype.name
        self.buffer = DeviceBuffer(int(_np.prod(self.shape, dtype=_np.int64)) * self.dtype.itemsize, device)

    @classmethod
    def from_numpy(cls, array, device=0, stream=None):
        array = _np.require(array, requirements="C")
        result = cls(array.shape, array.dtype, device)
        result.buffer.copy_from_host(array, stream=stream)
        return result

    @property
    def ptr(self):
        return self.buffer.ptr

    @property
    def device(self):
        return self.buffer.device

    @property
    def nbytes(self):
        return self.buffer.size

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                "version": 3, "stream": None}

    def numpy(self, stream=None):
        return self.buffer.copy_to_host(_np.empty(self.shape, self.dtype), stream=stream)

    def close(self):
        self.buffer.close()

    def __repr__(self):
        return "kilnrt.cuda.DeviceArray(shape=%r, dtype=%s, device=%d)" % (self.shape, self.kilnrt_dtype, self.device)


class PinnedBuffer(_Closing, _base("_PinnedBuffer")):
    """`nbytes` of page-locked host memory (portable), for truly asynchronous copies. .numpy(dtype, shape) is a
    writable view that keeps the memory alive on its own (close() only drops this object's reference)."""

    def __init__(self, nbytes, device=0):
        super().__init__(int(nbytes), int(device))

    @property
    def nbytes(self):
        return self.size

    def numpy(self, dtype=_np.uint8, shape=None):
        view = self._bytes_view()
        dtype = _np.dtype(dtype)
        count = view.size // dtype.itemsize
        view = view[:count * dtype.itemsize].view(dtype)
        return view if shape is None else view.reshape(shape)

    def __array__(self, dtype=None, copy=None):
        view = self.numpy()
        if dtype is not None and _np.dtype(dtype) != view.dtype:
            return view.astype(dtype)
        return view.copy() if copy else view

    def __repr__(self):
        return "kilnrt.cuda.PinnedBuffer(%d bytes, ptr=0x%x)" % (self.size, self.ptr)


def _dim3(value, what):
    if isinstance(value, int):
        dims = (value,)
    else:
        dims = tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise Error("%s must be an int or up to 3 non-negative ints, got %r" % (what, value), "invalid_argument", what)
    return list(dims) + [1] * (3 - len(dims))


def _pack_argument(index, value):
    """The bytes of one kernel argument. Python int -> int32, float -> float32, bool -> 1 byte, numpy scalars as
    they are (np.int64, np.uint64, np.float64 ...), CUDA arrays / torch tensors / DeviceBuffers -> their pointer."""
    if isinstance(value, _np.generic):
        return value.tobytes()
    if isinstance(value, bool):
        return bytes([int(value)])
    if isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            return _np.int32(value).tobytes()
        raise Error("kernel argument %d (%d) does not fit int32: pass numpy.int64(...) or numpy.uint64(...) for "
                    "64-bit parameters" % (index, value), "invalid_argument", "argument %d" % index)
    if isinstance(value, float):
        return _np.float32(value).tobytes()
    try:
        return _np.uint64(_pointer_of(value, "argument %d" % index)).tobytes()
    except Error:
        raise Error("kernel argument %d has type %s: pass ints, floats, numpy scalars or CUDA arrays (pointers)"
                    % (index, type(value).__name__), "invalid_argument", "argument %d" % index) from None


class Kernel(_Closing, _base("_Kernel")):
    """CUDA C++ `source` compiled with NVRTC for `device` (cached on disk), kernel `name` (extern "C" name or a name
    expression such as "scale<float>"). Compile errors raise kilnrt.Error with NVRTC's log."""

    def __init__(self, source, name, options=(), device=0, disk_cache=True):
        super().__init__(source, name, [str(o) for o in options], int(device), bool(disk_cache))

    def launch(self, grid, block, args=(), stream=None, shared_mem=0):
        """Launches on `stream` (None = legacy default). Argument types must match the kernel's parameters exactly:
        Python ints are int32 and floats float32; use numpy scalars for other widths."""
        packed = [_pack_argument(i, a) for i, a in enumerate(args)]
        self._launch(_dim3(grid, "grid"), _dim3(block, "block"), int(shared_mem), stream_handle(stream), packed)

    def close(self):
        """Nothing to free early: the module is unloaded when its last Kernel object goes."""

    def __repr__(self):
        return "kilnrt.cuda.Kernel(%r, device=%d, target=%s)" % (self.name, self.device, self.target)
