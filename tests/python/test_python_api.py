"""The Python API: build options, Engine metadata, run / __call__, numpy conversion, errors."""
import threading

import numpy as np
import pytest
from onnx import helper

import kilnrt
from conftest import conv_reference, make_onnx_model


def test_version_and_doctor():
    assert kilnrt.__version__ == "0.1.0"
    report = kilnrt.doctor()
    assert isinstance(report, str) and report.strip()
    assert isinstance(kilnrt.cuda_available(), bool)


def test_error_class():
    assert issubclass(kilnrt.Error, RuntimeError)
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.Engine("/nonexistent/dir/model.engine")
    assert info.value.code == "io"
    assert "/nonexistent/dir/model.engine" in info.value.where


def test_engine_metadata(conv_engine_path):
    engine = kilnrt.Engine(conv_engine_path)
    (x,), (y,) = engine.inputs, engine.outputs
    assert (x.name, x.shape, x.dtype) == ("x", (-1, 3, 8, 8), np.dtype(np.float32))
    assert (y.name, y.shape, y.dtype) == ("y", (-1, 4, 8, 8), np.dtype(np.float32))
    assert isinstance(x.dtype, np.dtype)
    assert engine.header["target"] == "cpu"
    assert engine.profiles == [[("x", (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))]]
    assert [l["op_type"] for l in engine.layers]
    assert "x" in engine.describe()


def test_run_and_call(conv_model, conv_engine_path):
    _, w, b = conv_model
    engine = kilnrt.Engine(conv_engine_path)
    for batch in (1, 3, 4):
        x = np.random.RandomState(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
        want = conv_reference(x, w, b)
        y = engine(x)
        assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (batch, 4, 8, 8)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        out = engine.run({"x": x})
        assert list(out) == ["y"]
        np.testing.assert_allclose(out["y"], want, rtol=1e-4, atol=1e-4)


def test_outputs_survive_later_runs(conv_engine_path):
    engine = kilnrt.Engine(conv_engine_path)
    x1 = np.ones((2, 3, 8, 8), np.float32)
    y1 = engine(x1)
    kept = y1.copy()
    engine(-x1)
    engine(np.full((2, 3, 8, 8), 7, np.float32))
    np.testing.assert_array_equal(y1, kept)


def test_inputs_are_converted(conv_model, conv_engine_path):
    _, w, b = conv_model
    engine = kilnrt.Engine(conv_engine_path)
    x = np.random.RandomState(0).standard_normal((2, 3, 8, 8))  # float64, converted to float32
    np.testing.assert_allclose(engine(x), conv_reference(x.astype(np.float32), w, b), rtol=1e-4, atol=1e-4)
    x_f = np.asfortranarray(x.astype(np.float32))  # not C-contiguous
    np.testing.assert_allclose(engine(x_f), conv_reference(x.astype(np.float32), w, b), rtol=1e-4, atol=1e-4)
    with pytest.raises(kilnrt.Error) as info:
        engine(np.array([["a"]]))
    assert info.value.code == "invalid_argument" and info.value.where == "x"


def test_input_errors(conv_engine_path):
    engine = kilnrt.Engine(conv_engine_path)
    x = np.zeros((2, 3, 8, 8), np.float32)
    with pytest.raises(kilnrt.Error, match="no input named 'nope'"):
        engine.run({"x": x, "nope": x})
    with pytest.raises(kilnrt.Error, match="missing input"):
        engine.run({})
    with pytest.raises(kilnrt.Error) as info:
        engine(np.zeros((9, 3, 8, 8), np.float32))  # batch outside the profile
    assert info.value.code == "invalid_argument" and "x" in info.value.where
    with pytest.raises(kilnrt.Error):
        engine(np.zeros((2, 3, 9, 8), np.float32))  # fixed dim mismatch
    with pytest.raises(kilnrt.Error):
        engine(x, x)  # wrong number of inputs


def test_from_bytes(conv_engine_path):
    data = conv_engine_path.read_bytes()
    a, b = kilnrt.Engine(conv_engine_path), kilnrt.Engine.from_bytes(data)
    x = np.random.RandomState(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(a(x), b(x))
    np.testing.assert_array_equal(kilnrt.Engine.from_bytes(bytearray(data))(x), a(x))


@pytest.mark.parametrize("shapes", [
    {"x": (2, 3, 8, 8)},
    {"x": ((1, 3, 8, 8), (2, 3, 8, 8), (3, 3, 8, 8))},
    ["x:1x3x8x8/2x3x8x8/3x3x8x8"],
    {"x": "2x3x8x8"},
    None,
])
def test_build_shapes_forms(shapes, conv_model, tmp_path):
    engine = kilnrt.Engine(kilnrt.build(conv_model[0], tmp_path / "e.engine", shapes=shapes))
    x = np.ones((2, 3, 8, 8), np.float32)
    assert engine(x).shape == (2, 4, 8, 8)
    if shapes is not None:
        name, lo, opt, hi = engine.profiles[0][0]
        assert name == "x" and opt == (2, 3, 8, 8)
        with pytest.raises(kilnrt.Error):
            engine(np.ones((5, 3, 8, 8), np.float32))


def test_bad_shape_spec(conv_model, tmp_path):
    with pytest.raises(kilnrt.Error):
        kilnrt.build(conv_model[0], tmp_path / "e.engine", shapes=["x:1xAx8x8"])
    with pytest.raises(kilnrt.Error):
        kilnrt.build(conv_model[0], tmp_path / "e.engine", shapes={"x": ("a", "b")})


@pytest.fixture(scope="module")
def two_output_engine(tmp_path_factory):
    d = tmp_path_factory.mktemp("two_out")
    bias = np.arange(3, dtype=np.float32)
    onnx_path = make_onnx_model(d / "two.onnx",
                                [helper.make_node("Add", ["x", "bias"], ["sum"], name="add"),
                                 helper.make_node("Mul", ["sum", "s"], ["prod"], name="mul")],
                                [("x", ["n", 3]), ("s", ["n", 3])], [("sum", ["n", 3]), ("prod", ["n", 3])],
                                [("bias", bias)])
    return kilnrt.Engine(kilnrt.build(onnx_path, d / "two.engine")), bias


def test_multiple_inputs_and_outputs(two_output_engine):
    engine, bias = two_output_engine
    assert [i.name for i in engine.inputs] == ["x", "s"]
    assert [o.name for o in engine.outputs] == ["sum", "prod"]
    x = np.random.RandomState(0).standard_normal((5, 3)).astype(np.float32)
    s = np.full((5, 3), 2.0, np.float32)
    out = engine(x, s)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[0], x + bias, rtol=1e-6)
    np.testing.assert_allclose(out[1], (x + bias) * 2, rtol=1e-6)
    named = engine.run({"s": s, "x": x})
    np.testing.assert_allclose(named["prod"], out[1])


def test_concurrent_calls(conv_model, conv_engine_path):
    _, w, b = conv_model
    engine = kilnrt.Engine(conv_engine_path)
    xs = [np.random.RandomState(i).standard_normal((2, 3, 8, 8)).astype(np.float32) for i in range(4)]
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = engine(xs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i], conv_reference(x, w, b), rtol=1e-4, atol=1e-4)
