"""Hostile inputs through the Python API: each gives a kilnrt.Error naming the tensor (or the node, for hostile
values) before anything runs, and the engine keeps working. Complements test_python_api.py (names, count, profile
batch), test_engine_errors.py (damaged files) and test_gpu_interop.py (device tensors, foreign pointers)."""
import numpy as np
import pytest

import kilnrt

_GPU_OK, _GPU_WHY = kilnrt._kilnrt.cuda_available()


@pytest.fixture(scope="module")
def gather_engine(tmp_path_factory):
    """y[batch,3] = Gather(x[batch,4], idx[3] int64, axis=1) * 2; profile batch 1..4."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "idx"], ["g"], name="gather_node", axis=1),
         helper.make_node("Mul", ["g", "two"], ["y"], name="mul")],
        "hostile",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    d = tmp_path_factory.mktemp("hostile")
    onnx.save(model, str(d / "gather.onnx"))
    kilnrt.build(d / "gather.onnx", d / "gather.engine", shapes={"x": ((1, 4), (2, 4), (4, 4))})
    return kilnrt.Engine(d / "gather.engine")


def _expect(fn, where, *fragments, code="invalid_argument"):
    with pytest.raises(kilnrt.Error) as info:
        fn()
    assert info.value.code == code, (info.value.code, str(info.value))
    assert where in info.value.where, (info.value.where, str(info.value))
    for f in fragments:
        assert f in str(info.value), str(info.value)


def _want(x, idx):
    return 2.0 * x[:, idx]


X = np.arange(8, dtype=np.float32).reshape(2, 4)
IDX = np.array([3, 0, 1], np.int64)


def test_wrong_dtypes_and_shapes_name_the_tensor(gather_engine):
    e = gather_engine
    _expect(lambda: e.run({"x": X, "idx": IDX.astype(np.float64)}), "idx", "float64")  # no float -> int64 cast
    _expect(lambda: e.run({"x": X.astype(np.complex64), "idx": IDX}), "x", "complex64")
    _expect(lambda: e.run({"x": np.array(["a"] * 8).reshape(2, 4), "idx": IDX}), "x")
    _expect(lambda: e.run({"x": np.float32(1.0), "idx": IDX}), "x", "rank")
    _expect(lambda: e.run({"x": X, "idx": IDX[:2]}), "idx", "dimension 0 must be 3")
    _expect(lambda: e.run({"x": np.zeros((0, 4), np.float32), "idx": IDX}), "x", "outside the engine's profiles")
    _expect(lambda: e.run({"x": np.zeros((5, 4), np.float32), "idx": IDX}), "x", "outside the engine's profiles")
    _expect(lambda: e.run({"x": X}), "idx", "missing input")
    _expect(lambda: e(X), "", "")  # one positional input for two
    np.testing.assert_array_equal(e.run({"x": X, "idx": IDX})["y"], _want(X, IDX))


def test_hostile_values_name_the_node(gather_engine):
    e = gather_engine
    for bad in ([0, 4, 1], [0, -5, 1], [np.iinfo(np.int64).min, 0, 1], [np.iinfo(np.int64).max, 0, 1]):
        _expect(lambda: e.run({"x": X, "idx": np.array(bad, np.int64)}), "gather_node", "out of range")
    np.testing.assert_array_equal(e.run({"x": X, "idx": np.array([-1, 0, 1], np.int64)})["y"],
                                  _want(X, [3, 0, 1]))


def test_odd_but_valid_arrays_work(gather_engine):
    e = gather_engine
    view = np.ndarray((2, 4), np.float32, buffer=bytearray(X.tobytes() + b"\0"), offset=0)
    unaligned = np.ndarray((2, 4), np.float32, buffer=bytearray(b"\0" + X.tobytes()), offset=1)
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(e.run({"x": unaligned, "idx": IDX})["y"], _want(X, IDX))
    np.testing.assert_array_equal(e.run({"x": view, "idx": IDX})["y"], _want(X, IDX))
    big_endian = X.astype(">f4")
    np.testing.assert_array_equal(e.run({"x": big_endian, "idx": IDX.astype(">i8")})["y"], _want(X, IDX))
    strided = np.arange(16, dtype=np.float32).reshape(2, 8)[:, ::2]
    np.testing.assert_array_equal(e.run({"x": strided, "idx": IDX})["y"], _want(strided, IDX))
    nan = X.copy()
    nan[0, 3] = np.nan
    assert np.isnan(e.run({"x": nan, "idx": IDX})["y"][0, 0])


def test_raw_enqueue_hostile_pointers(tmp_path):
    if not _GPU_OK:
        pytest.skip("no usable CUDA GPU: %s" % _GPU_WHY)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no usable CUDA GPU: torch %s sees none" % torch.__version__)
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "relu.onnx"))
    engine = kilnrt.Engine(kilnrt.build(tmp_path / "relu.onnx", tmp_path / "relu.engine", device="cuda"), device=0)
    ctx = engine.create_context()
    x = torch.randn(4, 16, device="cuda")
    y = torch.empty(4, 16, device="cuda")
    raw = torch.empty(4 * 16 * 4 + 16, dtype=torch.uint8, device="cuda")
    shape = (4, 16)
    _expect(lambda: ctx.enqueue({"x": (0, shape, "float32")}, {"y": (y.data_ptr(), shape, "float32")}, stream=0),
            "x", "null")
    _expect(lambda: ctx.enqueue({"x": (raw.data_ptr() + 2, shape, "float32")},
                                {"y": (y.data_ptr(), shape, "float32")}, stream=0), "x", "not aligned")
    host = np.zeros(shape, np.float32)
    _expect(lambda: ctx.enqueue({"x": (host.ctypes.data, shape, "float32")},
                                {"y": (y.data_ptr(), shape, "float32")}, stream=0), "x")
    _expect(lambda: ctx.enqueue({"x": (x.data_ptr(), shape, "float32")}, {"y": (y.data_ptr(), (4, 15), "float32")},
                                stream=0), "y", "expected shape")
    _expect(lambda: ctx.enqueue({"x": (x.data_ptr(), shape, "float32")}, {"y": (y.data_ptr(), shape, "float16")},
                                stream=0), "y", "dtype")
    ctx.enqueue({"x": (x.data_ptr(), shape, "float32")}, {"y": (y.data_ptr(), shape, "float32")}, stream=0)
    torch.cuda.synchronize()
    assert torch.equal(y, torch.relu(x))
