"""Python GPU interop: torch / cupy / __cuda_array_interface__ / DLPack tensors in and out of CUDA engines
(zero-copy, on the caller's stream), out=, raw ExecutionContext.enqueue, the checks made before anything launches,
and the kilnrt.cuda objects. GPU tests skip with a reason where no usable CUDA GPU (or torch / cupy with CUDA) is
present; the tests at the top run everywhere.
"""
import ctypes
import sys

import numpy as np
import pytest
from onnx import helper

import kilnrt
import kilnrt.cuda as kc
from conftest import DYNAMO_FIXTURES, DYNAMO_MODELS, assert_matches_reference, conv_reference, make_onnx_model

_GPU_OK, _GPU_WHY = kilnrt._kilnrt.cuda_available()
needs_gpu = pytest.mark.skipif(not _GPU_OK, reason="no usable CUDA GPU: %s" % _GPU_WHY)


def _torch_cuda():
    if not _GPU_OK:
        pytest.skip("no usable CUDA GPU: %s" % _GPU_WHY)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no usable CUDA GPU: torch %s sees none (CPU-only build?)" % torch.__version__)
    return torch


def _cupy():
    if not _GPU_OK:
        pytest.skip("no usable CUDA GPU: %s" % _GPU_WHY)
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - any cupy failure means no usable cupy here
        pytest.skip("no usable CUDA GPU: cupy cannot use it (%s)" % e)
    return cupy


class FakeCudaArray:
    """Only __cuda_array_interface__ (what numba and others offer)."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None, stream=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3, "stream": stream}


class DLPackOnly:
    """Only the DLPack protocol, delegating to another array."""

    def __init__(self, inner):
        self._inner = inner

    def __dlpack__(self, stream=None):
        return self._inner.__dlpack__(stream=stream) if stream is not None else self._inner.__dlpack__()

    def __dlpack_device__(self):
        return self._inner.__dlpack_device__()


@pytest.fixture(scope="module")
def add_model(tmp_path_factory):
    """a[batch,4] + b[batch,4] -> y."""
    path = tmp_path_factory.mktemp("add") / "add.onnx"
    return make_onnx_model(path, [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                           [("a", ["batch", 4]), ("b", ["batch", 4])], [("y", ["batch", 4])])


# ---- everywhere: host paths, argument handling, errors that need no GPU -------------------------------------------

def test_device_tensor_to_cpu_engine_is_a_clear_error(conv_engine_path):
    engine = kilnrt.Engine(conv_engine_path)
    assert engine.device == -1 and not engine.is_cuda
    with pytest.raises(kilnrt.Error) as info:
        engine(FakeCudaArray(0x7F0000000000, (2, 3, 8, 8)))
    assert info.value.code == "invalid_argument" and info.value.where == "x"
    assert "runs on the CPU" in str(info.value)


def test_mixed_host_and_device_inputs_are_a_clear_error(add_model, tmp_path):
    engine = kilnrt.Engine(kilnrt.build(add_model, tmp_path / "add.engine"))
    with pytest.raises(kilnrt.Error) as info:
        engine.run({"a": FakeCudaArray(0x7F0000000000, (2, 4)), "b": np.ones((2, 4), np.float32)})
    assert info.value.where == "b" and "mix device tensors (a) and host arrays (b)" in str(info.value)


def test_cpu_torch_tensors_use_the_host_path(conv_model, conv_engine_path):
    torch = pytest.importorskip("torch")
    _, w, b = conv_model
    engine = kilnrt.Engine(conv_engine_path)
    x = torch.randn(2, 3, 8, 8)
    y = engine(x)
    assert isinstance(y, torch.Tensor) and y.device.type == "cpu" and y.dtype == torch.float32
    np.testing.assert_allclose(y.numpy(), conv_reference(x.numpy(), w, b), rtol=1e-4, atol=1e-4)
    out = torch.empty(2, 4, 8, 8)
    assert engine(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), y.numpy())


def test_host_out_and_its_checks(conv_model, conv_engine_path):
    _, w, b = conv_model
    engine = kilnrt.Engine(conv_engine_path)
    x = np.random.RandomState(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = np.zeros((2, 4, 8, 8), np.float32)
    assert engine(x, out=out) is out
    np.testing.assert_allclose(out, conv_reference(x, w, b), rtol=1e-4, atol=1e-4)
    assert engine.run({"x": x}, out={"y": out})["y"] is out
    with pytest.raises(kilnrt.Error, match="has shape"):
        engine(x, out=np.zeros((1, 4, 8, 8), np.float32))
    with pytest.raises(kilnrt.Error, match="unknown output"):
        engine.run({"x": x}, out={"z": out})


def test_engine_device_argument(conv_engine_path):
    assert kilnrt.Engine(conv_engine_path, device="cuda:1").device == -1  # ignored for CPU engines
    with pytest.raises(kilnrt.Error, match="cuda:N"):
        kilnrt.Engine(conv_engine_path, device="gpu1")


def test_raw_enqueue_on_a_cpu_engine_is_unsupported(conv_engine_path):
    ctx = kilnrt.Engine(conv_engine_path).create_context()
    with pytest.raises(kilnrt.Error) as info:
        ctx.enqueue({"x": (0x1000, (1, 3, 8, 8), "float32")}, {"y": (0x2000, (1, 4, 8, 8), np.float32)}, stream=0)
    assert info.value.code == "unsupported"
    with pytest.raises(kilnrt.Error, match="pointer, shape, dtype"):
        ctx.enqueue({"x": (0x1000, (1, 3, 8, 8))}, {}, stream=0)
    with pytest.raises(kilnrt.Error, match="host arrays"):
        ctx.enqueue({"x": np.zeros((1, 3, 8, 8), np.float32)}, {}, stream=0)


def test_stream_handles():
    class TorchLike:
        cuda_stream = 1234

    class CupyLike:
        ptr = 99

    class NumbaLike:
        handle = ctypes.c_void_p(77)

    class Protocol:
        def __cuda_stream__(self):
            return (0, 4321)

    assert kc.stream_handle(None) == 0 and kc.stream_handle(5) == 5
    assert kc.stream_handle(TorchLike()) == 1234 and kc.stream_handle(CupyLike()) == 99
    assert kc.stream_handle(NumbaLike()) == 77 and kc.stream_handle(Protocol()) == 4321
    for bad in (-1, True, "s", object()):
        with pytest.raises(kilnrt.Error):
            kc.stream_handle(bad)


def test_kernel_argument_packing():
    pack = kc._pack_argument
    assert pack(0, 3) == np.int32(3).tobytes() and pack(0, 2.5) == np.float32(2.5).tobytes()
    assert pack(0, np.int64(7)) == np.int64(7).tobytes() and pack(0, True) == b"\x01"
    assert pack(0, FakeCudaArray(0xABC0, (4,))) == np.uint64(0xABC0).tobytes()
    with pytest.raises(kilnrt.Error, match="int32"):
        pack(0, 2 ** 40)
    with pytest.raises(kilnrt.Error, match="argument 1"):
        pack(1, "text")
    assert kc._dim3(4, "grid") == [4, 1, 1] and kc._dim3((2, 3), "grid") == [2, 3, 1]


def test_dlpack_reading_on_the_host():
    if not hasattr(np.ndarray, "__dlpack__"):
        pytest.skip("numpy %s has no DLPack export" % np.__version__)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ptr, shape, strides, dtype, device_type, _ = kilnrt._kilnrt.dlpack_info(a.__dlpack__())
    assert ptr == a.ctypes.data and shape == (3, 4) and dtype == "float32" and device_type == 1
    assert strides in (None, (4, 1))
    kind, _ = kilnrt._interop.classify(DLPackOnly(a), "input 'x'")
    assert kind == "host"


@pytest.mark.skipif(_GPU_OK, reason="checks the error without a GPU")
def test_cuda_objects_without_a_gpu_raise_kilnrt_errors():
    for make in (lambda: kc.Stream(), lambda: kc.Event(), lambda: kc.DeviceBuffer(16), lambda: kc.PinnedBuffer(16)):
        with pytest.raises(kilnrt.Error) as info:
            make()
        assert info.value.code in ("cuda", "unsupported")


# ---- GPU: engines on device tensors -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_conv_engine(conv_model, tmp_path_factory):
    if not _GPU_OK:
        pytest.skip("no usable CUDA GPU: %s" % _GPU_WHY)
    path = tmp_path_factory.mktemp("cuda_conv") / "conv.engine"
    kilnrt.build(conv_model[0], path, device="cuda", shapes={"x": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))})
    engine = kilnrt.Engine(path, device=0)
    assert engine.device == 0 and engine.is_cuda
    return engine


@pytest.fixture(scope="module")
def dynamo_engines(tmp_path_factory):
    """{name: (cpu engine, cuda engine, x, expected)} for the committed dynamo fixtures."""
    if not _GPU_OK:
        pytest.skip("no usable CUDA GPU: %s" % _GPU_WHY)
    engines = {}
    for name in DYNAMO_MODELS:
        x = np.load(DYNAMO_FIXTURES / (name + ".input.npy"))
        expected = np.load(DYNAMO_FIXTURES / (name + ".expected.npy"))
        shapes = {"x": tuple((b,) + x.shape[1:] for b in (1, 2, 4))}
        d = tmp_path_factory.mktemp(name)
        onnx = DYNAMO_FIXTURES / (name + ".onnx")
        cpu = kilnrt.Engine(kilnrt.build(onnx, d / "cpu.engine", device="cpu", shapes=shapes))
        gpu = kilnrt.Engine(kilnrt.build(onnx, d / "cuda.engine", device="cuda:0", shapes=shapes), device="cuda:0")
        engines[name] = (cpu, gpu, x, expected)
    return engines


def _round512(n):
    return (n + 511) // 512 * 512


@pytest.mark.parametrize("name", DYNAMO_MODELS)
def test_torch_in_out_zero_copy(name, dynamo_engines):
    torch = _torch_cuda()
    cpu, gpu, x_np, expected = dynamo_engines[name]
    want = cpu(x_np)
    assert_matches_reference(want, expected, "%s CPU engine" % name)
    x = torch.from_numpy(x_np).to("cuda:0")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(0)
    y = gpu(x)
    # The only torch allocation is the output: the input was not copied (kilnrt's own memory is not torch's).
    assert torch.cuda.memory_allocated(0) - before == _round512(y.numel() * y.element_size())
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.dtype == torch.float32
    assert y.is_contiguous() and tuple(y.shape) == want.shape and y.data_ptr() != x.data_ptr()
    torch.cuda.current_stream().synchronize()
    assert_matches_reference(y.cpu().numpy(), want, "%s torch vs CPU engine" % name)
    # Read in place: a tensor modified in place (on the same stream) gives the new result.
    x.mul_(0.5)
    y2 = gpu.run({"x": x})["y"]
    torch.cuda.current_stream().synchronize()
    assert_matches_reference(y2.cpu().numpy(), cpu(x_np * np.float32(0.5)), "%s after in-place change" % name)
    # Batch 1 and 4 through the same engine.
    for xb in (x_np[:1], np.concatenate([x_np, x_np[::-1]])):
        yb = gpu(torch.from_numpy(np.ascontiguousarray(xb)).cuda())
        assert_matches_reference(yb.cpu().numpy(), cpu(np.ascontiguousarray(xb)), "%s batch %d" % (name, len(xb)))


@pytest.mark.parametrize("name", DYNAMO_MODELS)
def test_cupy_in_out(name, dynamo_engines):
    cupy = _cupy()
    cpu, gpu, x_np, _ = dynamo_engines[name]
    x = cupy.asarray(x_np)
    y = gpu(x)
    assert isinstance(y, cupy.ndarray) and y.device.id == 0 and y.dtype == np.float32 and y.flags.c_contiguous
    cupy.cuda.get_current_stream().synchronize()
    assert_matches_reference(cupy.asnumpy(y), cpu(x_np), "%s cupy vs CPU engine" % name)
    out = cupy.zeros_like(y)
    assert gpu(x, out=out) is out
    cupy.cuda.get_current_stream().synchronize()
    assert_matches_reference(cupy.asnumpy(out), cpu(x_np), "%s cupy out=" % name)
    # cupy's current stream is honoured.
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y3 = gpu(x)
    s.synchronize()
    assert_matches_reference(cupy.asnumpy(y3), cpu(x_np), "%s cupy side stream" % name)


def test_out_preallocated_torch(cuda_conv_engine, conv_model):
    torch = _torch_cuda()
    _, w, b = conv_model
    x = torch.randn(3, 3, 8, 8, device="cuda")
    out = torch.full((3, 4, 8, 8), float("nan"), device="cuda")
    ptr = out.data_ptr()
    assert cuda_conv_engine(x, out=out) is out and out.data_ptr() == ptr
    got = cuda_conv_engine.run({"x": x}, out={"y": out})
    assert got["y"] is out
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), conv_reference(x.cpu().numpy(), w, b), rtol=1e-4, atol=1e-4)


def test_repeated_run_with_the_same_tensors(cuda_conv_engine, conv_model, add_model, tmp_path):
    """run() with the same torch tensors and out= again takes the fast path (no Python-side checks, the runner then
    replays a CUDA graph on the caller's memory): values stay right when the tensors' contents change, and a call
    with other tensors (or a bad out=) goes through every check again."""
    torch = _torch_cuda()
    _, w, b = conv_model
    engine = cuda_conv_engine
    x = torch.randn(3, 3, 8, 8, device="cuda")
    out = torch.empty(3, 4, 8, 8, device="cuda")
    for i in range(6):
        x.copy_(torch.randn(3, 3, 8, 8, device="cuda"))
        got = engine.run({"x": x}, out={"y": out})
        assert got["y"] is out
        torch.cuda.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), conv_reference(x.cpu().numpy(), w, b), rtol=1e-4, atol=1e-4,
                                   err_msg="call %d" % i)
    assert len(engine._fast_feeds) >= 1, "the repeated call was not remembered"
    # A tensor of another shape / dtype / contiguity is checked again (not served from the remembered call).
    _expect_error(lambda: engine.run({"x": x}, out={"y": torch.empty(3, 4, 8, 7, device="cuda")}), "y", "has shape")
    _expect_error(lambda: engine.run({"x": x.half()}, out={"y": out}), "x", "float16")
    _expect_error(lambda: engine.run({"x": x.transpose(2, 3)}, out={"y": out}), "x", "non-contiguous")
    # Other tensors, then the first ones again.
    x2, out2 = torch.randn(3, 3, 8, 8, device="cuda"), torch.empty(3, 4, 8, 8, device="cuda")
    for xi, oi in ((x2, out2), (x, out), (x2, out2)):
        assert engine(xi, out=oi) is oi
        torch.cuda.synchronize()
        np.testing.assert_allclose(oi.cpu().numpy(), conv_reference(xi.cpu().numpy(), w, b), rtol=1e-4, atol=1e-4)
    # Two inputs: the key holds both, in the engine's output order.
    add = kilnrt.Engine(kilnrt.build(add_model, tmp_path / "add_fast.engine", device="cuda"))
    a, bb, y = torch.ones(2, 4, device="cuda"), torch.full((2, 4), 2.0, device="cuda"), torch.empty(2, 4, device="cuda")
    for i in range(4):
        bb.fill_(float(i))
        assert add.run({"a": a, "b": bb}, out={"y": y})["y"] is y
        torch.cuda.synchronize()
        assert torch.equal(y.cpu(), torch.full((2, 4), 1.0 + i))
    assert add.run({"b": bb, "a": a}, out=y)["y"] is y  # other key order, single-output out=


def test_caller_stream_is_honoured(cuda_conv_engine, conv_model):
    torch = _torch_cuda()
    _, w, b = conv_model
    x = torch.randn(2, 3, 8, 8, device="cuda")
    want = conv_reference(x.cpu().numpy(), w, b)
    xin = torch.zeros_like(x)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        # Warm-up: the first call on a stream sets up that stream's execution context and runs directly, the second
        # captures the CUDA graph of this shape; from then on calls only enqueue (a replay).
        cuda_conv_engine(x)
        cuda_conv_engine(x)
    side.synchronize()
    with torch.cuda.stream(side):
        assert torch.cuda.current_stream() == side
        # The input is written on `side` only after a long sleep: kilnrt reads it correctly only if it runs on
        # `side` after the copy (another stream would see the zeros).
        torch.cuda._sleep(1_000_000_000)
        xin.copy_(x)
        y = cuda_conv_engine(xin)
        assert not side.query(), "the call waited for the GPU (it must return after enqueueing)"
    side.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    # An explicit stream= wins over torch's current stream; kilnrt.cuda.Stream works as one too.
    with kc.Stream(device=0) as s:
        y2 = cuda_conv_engine(x, stream=s)
        s.synchronize()
    np.testing.assert_allclose(y2.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    # The legacy default stream (torch reports handle 0).
    with torch.cuda.stream(torch.cuda.default_stream()):
        assert torch.cuda.current_stream().cuda_stream == 0
        y3 = cuda_conv_engine(x)
    torch.cuda.synchronize()
    np.testing.assert_allclose(y3.cpu().numpy(), want, rtol=1e-4, atol=1e-4)


def test_cuda_array_interface_and_dlpack_inputs(cuda_conv_engine, conv_model):
    torch = _torch_cuda()
    _, w, b = conv_model
    x = torch.randn(2, 3, 8, 8, device="cuda")
    want = conv_reference(x.cpu().numpy(), w, b)
    torch.cuda.synchronize()
    y = cuda_conv_engine(FakeCudaArray(x.data_ptr(), x.shape))
    assert isinstance(y, kc.DeviceArray) and y.shape == (2, 4, 8, 8)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)  # numpy() waits (legacy default stream)
    y2 = cuda_conv_engine(DLPackOnly(x))
    assert isinstance(y2, kc.DeviceArray)
    np.testing.assert_allclose(y2.numpy(), want, rtol=1e-4, atol=1e-4)
    # kilnrt's own DeviceArray in, torch out via out= through __cuda_array_interface__.
    out = torch.empty(2, 4, 8, 8, device="cuda")
    cuda_conv_engine(kc.DeviceArray.from_numpy(x.cpu().numpy()), out=FakeCudaArray(out.data_ptr(), out.shape))
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-4, atol=1e-4)


def test_numpy_and_cpu_torch_on_a_cuda_engine(cuda_conv_engine, conv_model):
    torch = _torch_cuda()
    _, w, b = conv_model
    x = np.random.RandomState(3).standard_normal((4, 3, 8, 8)).astype(np.float32)
    y = cuda_conv_engine(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, conv_reference(x, w, b), rtol=1e-4, atol=1e-4)
    yt = cuda_conv_engine(torch.from_numpy(x))  # a CPU torch tensor: host path, CPU torch output
    assert isinstance(yt, torch.Tensor) and yt.device.type == "cpu"
    np.testing.assert_allclose(yt.numpy(), y, rtol=1e-6, atol=1e-6)


def test_raw_context_enqueue(cuda_conv_engine, conv_model):
    torch = _torch_cuda()
    _, w, b = conv_model
    ctx = cuda_conv_engine.create_context()
    assert ctx.device == 0
    assert ctx.output_shapes({"x": (4, 3, 8, 8)}) == {"y": (4, 4, 8, 8)}
    x = torch.randn(4, 3, 8, 8, device="cuda")
    y = torch.empty(4, 4, 8, 8, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    ctx.enqueue(inputs={"x": (x.data_ptr(), (4, 3, 8, 8), "float32")},
                outputs={"y": (y.data_ptr(), tuple(y.shape), np.float32)}, stream=s.cuda_stream)
    s.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), conv_reference(x.cpu().numpy(), w, b), rtol=1e-4, atol=1e-4)
    y.zero_()
    ctx.enqueue({"x": x}, {"y": y}, stream=s)  # tensors and stream objects work as well
    s.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), conv_reference(x.cpu().numpy(), w, b), rtol=1e-4, atol=1e-4)
    with pytest.raises(kilnrt.Error) as info:
        ctx.enqueue({"x": (x.data_ptr(), (4, 3, 8, 8), "float32")}, {"y": (y.data_ptr(), (4, 4, 8, 9), "float32")},
                    stream=0)
    assert "y" in info.value.where and "expected shape" in str(info.value)


# ---- GPU: checks before anything launches --------------------------------------------------------------------------

def _expect_error(fn, where, *fragments):
    with pytest.raises(kilnrt.Error) as info:
        fn()
    assert where in info.value.where, (info.value.where, str(info.value))
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    return info.value


def test_device_tensor_errors(cuda_conv_engine, add_model, tmp_path):
    torch = _torch_cuda()
    engine = cuda_conv_engine
    x = torch.randn(2, 3, 8, 8, device="cuda")
    _expect_error(lambda: engine(x.transpose(2, 3)), "x", "non-contiguous", ".contiguous()")
    _expect_error(lambda: engine(x.half()), "x", "float16", "float32")
    _expect_error(lambda: engine(x.double()), "x", "float64")
    _expect_error(lambda: engine(torch.randn(8, 3, 8, 8, device="cuda")), "x", "outside the engine's profiles")
    _expect_error(lambda: engine(torch.randn(2, 3, 9, 8, device="cuda")), "x", "dimension 2")
    _expect_error(lambda: engine(x, out=torch.empty(2, 4, 8, 7, device="cuda")), "y", "has shape")
    _expect_error(lambda: engine(x, out=torch.empty(2, 4, 8, 8, device="cuda", dtype=torch.float16)), "y", "float16")
    _expect_error(lambda: engine(x, out=torch.empty(2, 8, 8, 4, device="cuda").permute(0, 3, 1, 2)), "y",
                  "non-contiguous")
    _expect_error(lambda: engine(x, out=np.empty((2, 4, 8, 8), np.float32)), "y", "host array")
    # Pointers that are not device memory of the engine's device (the C++ foreign checks).
    _expect_error(lambda: engine(FakeCudaArray(np.zeros((2, 3, 8, 8), np.float32).ctypes.data, (2, 3, 8, 8))), "x",
                  "not CUDA memory")
    pinned = torch.zeros(2, 3, 8, 8).pin_memory()
    _expect_error(lambda: engine(FakeCudaArray(pinned.data_ptr(), (2, 3, 8, 8))), "x", "page-locked")
    # Mixed torch CUDA + numpy.
    add = kilnrt.Engine(kilnrt.build(add_model, tmp_path / "add.engine", device="cuda"))
    _expect_error(lambda: add.run({"a": torch.ones(2, 4, device="cuda"), "b": np.ones((2, 4), np.float32)}), "b",
                  "mix device tensors")
    got = add.run({"a": torch.ones(2, 4, device="cuda"), "b": torch.full((2, 4), 2.0, device="cuda")})["y"]
    torch.cuda.synchronize()
    assert torch.equal(got.cpu(), torch.full((2, 4), 3.0))


def test_tensor_on_another_device(cuda_conv_engine):
    torch = _torch_cuda()
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (found %d)" % torch.cuda.device_count())
    x = torch.randn(2, 3, 8, 8, device="cuda:1")
    _expect_error(lambda: cuda_conv_engine(x), "x", "cuda:1", "cuda:0")


class _UserContext:
    """A context created with cuCtxCreate (what pycuda's make_context does), through ctypes on libcuda."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        self.ctx = ctypes.c_void_p()
        assert self.cu.cuInit(0) == 0 and self.cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
        assert self.cu.cuCtxCreate_v2(ctypes.byref(self.ctx), 0, dev) == 0  # pushed: now current

    def current(self):
        cur = ctypes.c_void_p()
        assert self.cu.cuCtxGetCurrent(ctypes.byref(cur)) == 0
        return cur.value

    def alloc(self, nbytes):
        ptr = ctypes.c_uint64()
        assert self.cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)) == 0
        return ptr.value

    def close(self, *ptrs):
        for p in ptrs:
            self.cu.cuMemFree_v2(ctypes.c_uint64(p))
        out = ctypes.c_void_p()
        self.cu.cuCtxPopCurrent_v2(ctypes.byref(out))
        self.cu.cuCtxDestroy_v2(self.ctx)


def test_user_context_memory_and_host_io_under_a_user_context(cuda_conv_engine, conv_model):
    _torch_cuda()
    _, w, b = conv_model
    try:
        user = _UserContext()
    except (OSError, AssertionError, AttributeError) as e:
        pytest.skip("cannot create a user CUDA context through libcuda: %s" % e)
    x_ptr = y_ptr = 0
    try:
        x_ptr, y_ptr = user.alloc(2 * 3 * 8 * 8 * 4), user.alloc(2 * 4 * 8 * 8 * 4)
        ctx = cuda_conv_engine.create_context()
        io = ({"x": (x_ptr, (2, 3, 8, 8), "float32")}, {"y": (y_ptr, (2, 4, 8, 8), "float32")})
        # Stream 0 under a user context names that context's default stream: refused before the pointers are read.
        err = _expect_error(lambda: ctx.enqueue(*io, stream=0), "stream", "user-created CUDA context")
        assert err.code == "invalid_argument"
        # With a stream of the primary context, the user context's memory is refused by name.
        with kc.Stream() as s:
            err = _expect_error(lambda: ctx.enqueue(*io, stream=s), "x", "not the primary context")
        assert err.code == "invalid_argument"
        assert user.current() == user.ctx.value, "kilnrt changed the caller's current context"
        # Host I/O works whatever context the caller has pushed; so do the kilnrt.cuda objects.
        x = np.random.RandomState(5).standard_normal((2, 3, 8, 8)).astype(np.float32)
        np.testing.assert_allclose(cuda_conv_engine(x), conv_reference(x, w, b), rtol=1e-4, atol=1e-4)
        with kc.Stream() as s, kc.DeviceBuffer(x.nbytes) as buf:
            buf.copy_from_host(x, stream=s)
            back = buf.copy_to_host(dtype=np.float32, shape=x.shape, stream=s)
            s.synchronize()
        np.testing.assert_array_equal(back, x)
        assert user.current() == user.ctx.value, "kilnrt changed the caller's current context"
    finally:
        user.close(*(p for p in (x_ptr, y_ptr) if p))


# ---- GPU: kilnrt.cuda objects ---------------------------------------------------------------------------------------

@needs_gpu
def test_cuda_objects_round_trip():
    data = np.arange(1000, dtype=np.float32)
    with kc.Stream(device=0) as s, kc.Event() as start, kc.Event() as end, \
            kc.DeviceBuffer(data.nbytes) as buf, kc.PinnedBuffer(data.nbytes) as pinned:
        assert s.ptr != 0 and s.device == 0 and buf.size == data.nbytes and buf.ptr != 0
        cai = buf.__cuda_array_interface__
        assert cai["data"][0] == buf.ptr and cai["shape"] == (data.nbytes,)
        host = pinned.numpy(np.float32)
        host[:] = data
        start.record(s)
        buf.copy_from_host(host, stream=s)
        other = kc.DeviceBuffer(data.nbytes)
        other.copy_from_device(buf, data.nbytes, stream=s)
        s.synchronize()  # the pinned source must not change before the async copy ran
        host[:] = 0
        other.copy_to_host(host, stream=s)
        end.record(s)
        s.synchronize()
        end.synchronize()
        assert start.elapsed_time(end) >= 0.0
        np.testing.assert_array_equal(host, data)
        np.testing.assert_array_equal(buf.copy_to_host(dtype=np.float32), data)  # synchronous without stream=
        buf.memset(0)
        assert not buf.copy_to_host().any()
        view = pinned.numpy(np.float32, (10, 100))
        other.close()
        assert other.ptr == 0
    assert view[9, 99] == 999.0  # the view keeps the pinned memory alive after close()
    with pytest.raises(kilnrt.Error, match="do not fit"):
        kc.DeviceBuffer(16).copy_from_host(np.zeros(8, np.float32))


@needs_gpu
def test_cuda_objects_with_torch_and_kernel():
    torch = _torch_cuda()
    buf = kc.DeviceBuffer(64 * 4)
    t = torch.as_tensor(kc.DeviceArray.from_numpy(np.arange(64, dtype=np.float32)), device="cuda")
    torch.cuda.synchronize()
    assert t.sum().item() == float(sum(range(64)))
    src = r"""extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }"""
    try:
        kernel = kc.Kernel(src, "saxpy", options=["--std=c++17"])
    except kilnrt.Error as e:
        if e.code == "unsupported":
            pytest.skip("NVRTC is not available: %s" % e)
        raise
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, device="cuda")
    stream = torch.cuda.current_stream()
    kernel.launch(grid=(1000 + 255) // 256, block=256, args=[2.0, x, y, 1000], stream=stream)
    stream.synchronize()
    assert torch.allclose(y, 2 * x + 1)
    buf.copy_from_device(x, 64 * 4)
    np.testing.assert_array_equal(buf.copy_to_host(dtype=np.float32), np.arange(64, dtype=np.float32))
    with pytest.raises(kilnrt.Error) as info:
        kc.Kernel("this is not CUDA", "nope")
    assert info.value.code in ("cuda", "unsupported")
    assert "torch" in sys.modules


def test_io16_half_tensors_in_and_out(conv_model, tmp_path):
    """An fp16 engine built with io16: its float32 I/O is float16 (Engine.inputs / outputs say so), torch float16 CUDA
    tensors go in and come out as they are, numpy float16 works on the host path, and a float32 torch tensor is a
    clear error naming the input. The CPU refuses io16 naming it (checked without a GPU in test_io16_needs_cuda_16bit).
    """
    torch = _torch_cuda()
    onnx, w, b = conv_model
    shapes = {"x": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))}
    engine = kilnrt.Engine(kilnrt.build(onnx, tmp_path / "io16.engine", device="cuda", fp16=True, shapes=shapes,
                                        io16=True))
    assert engine.inputs[0].kilnrt_dtype == "float16" and engine.outputs[0].kilnrt_dtype == "float16"
    x = torch.randn(3, 3, 8, 8, device="cuda").half()
    y = engine(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float16 and y.device == x.device
    torch.cuda.synchronize()
    want = conv_reference(x.float().cpu().numpy(), w, b)
    np.testing.assert_allclose(y.float().cpu().numpy(), want, rtol=2e-2, atol=2e-2)
    y_host = engine(x.cpu().numpy())  # numpy float16 on the host path
    assert y_host.dtype == np.float16
    np.testing.assert_allclose(y_host.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    _expect_error(lambda: engine.run({"x": x.float()}), "x", "float16")


def test_io16_needs_cuda_16bit(conv_model, tmp_path):
    with pytest.raises(kilnrt.Error, match="io16"):
        kilnrt.build(conv_model[0], tmp_path / "cpu_io16.engine", device="cpu", io16=True)
