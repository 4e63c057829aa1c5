"""The 16-bit mode of tests/conformance/run_conformance.py (--device cuda --precision fp16|bf16), on the CPU: input
rounding, the dtype-scaled comparison, and the freezing of graph inputs that a CUDA build needs as constants. The
CUDA side itself runs on the GPU machine (scripts/gpu_suite.sh, stage conformance); here a stand-in for the CUDA build
(the CPU engine, refusing non-constant 'axes' the way the CUDA backend does) drives the retry path."""
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rc():
    spec = importlib.util.spec_from_file_location("run_conformance", ROOT / "tests" / "conformance" /
                                                  "run_conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_round_to_16bit_is_round_to_nearest_even(rc):
    a = np.array([1.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 3.14159, 7e4, np.nan], np.float32)
    fp16 = rc.round_to_16bit(a, "fp16")
    assert fp16[:4].tolist() == [1.0, 1.0, 1 + 2.0 ** -9, np.float32(np.float16(3.14159))]
    assert np.isinf(fp16[4]) and np.isnan(fp16[5])
    b = np.array([1.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -2.5e-3, 7e4, np.nan], np.float32)
    bf16 = rc.round_to_16bit(b, "bf16")
    assert bf16[:3].tolist() == [1.0, 1.0, 1 + 2.0 ** -6]
    assert (bf16[:5].view(np.uint32) & 0xFFFF).tolist() == [0] * 5  # only the top 16 bits remain
    assert abs(bf16[3] / -2.5e-3 - 1) < 2.0 ** -8 and abs(bf16[4] / 7e4 - 1) < 2.0 ** -8
    assert np.isnan(bf16[5])
    ints = np.array([1, 2], np.int64)
    assert rc.round_to_16bit(ints, "fp16") is ints


def test_compare_16bit_tolerance_scales_with_the_output(rc):
    ref = np.array([100.0, 1.0, -3.0], np.float32)
    assert rc.compare_16bit("y", ref + np.float32(0.9), ref, 1, "fp16") is None  # 0.9 <= 1e-2 * (100 + |ref|)
    msg = rc.compare_16bit("y", ref + np.array([0, 0, 1.5], np.float32), ref, 1, "fp16")
    assert msg and "1 of 3 values" in msg and "(2,)" in msg
    assert rc.compare_16bit("y", ref + np.array([0, 0, 1.5], np.float32), ref, 1, "bf16") is None  # 4e-2
    assert "shape" in rc.compare_16bit("y", ref[:2], ref, 1, "fp16")


def test_compare_16bit_exact_integers_nan_and_infinities(rc):
    assert rc.compare_16bit("i", np.array([1, 2]), np.array([1, 2]), 7, "fp16") is None
    assert "1 of 2 values differ" in rc.compare_16bit("i", np.array([1, 2]), np.array([1, 3]), 7, "fp16")
    nan = np.array([np.nan, 1.0], np.float32)
    assert "NaN positions" in rc.compare_16bit("y", np.array([0.0, 1.0], np.float32), nan, 1, "fp16")
    # an infinite reference matches the same-signed largest finite value (clamped mask constants) ...
    assert rc.compare_16bit("y", np.array([-65504.0, 1.0], np.float32), np.array([-np.inf, 1.0], np.float32), 1,
                            "fp16") is None
    # ... but not the opposite sign, and a finite reference never matches an infinity
    assert "infinities" in rc.compare_16bit("y", np.array([65504.0, 1.0], np.float32),
                                            np.array([-np.inf, 1.0], np.float32), 1, "fp16")
    msg = rc.compare_16bit("y", np.array([np.inf, 1.0], np.float32), np.array([7e4, 1.0], np.float32), 1, "fp16")
    assert "infinities" in msg and "[range]" in msg
    # bfloat16 outputs travel as uint16 bits: compared as values
    bits = np.array([0x3F80, 0x4000], np.uint16)  # 1.0, 2.0
    assert rc.compare_16bit("b", bits, np.array([0x3F80, 0x4001], np.uint16), 16, "bf16") is None
    assert rc.compare_16bit("b", bits, np.array([0x3F80, 0x4080], np.uint16), 16, "bf16") is not None  # 2 vs 4


def _reduce_sum_case(case_dir):
    import onnx
    from onnx import TensorProto, helper
    node = helper.make_node("ReduceSum", ["data", "axes"], ["reduced"], keepdims=1)
    graph = helper.make_graph([node], "reduce_sum_axes_input",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("reduced", TensorProto.FLOAT, [3, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    axes = np.array([1], np.int64)
    return model, [data, axes], [data.sum(axis=1, keepdims=True)]


def test_16bit_case_freezes_inputs_the_cuda_build_needs_as_constants(rc, tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    import onnx
    kilnrt = pytest.importorskip("kilnrt")
    model, inputs, outputs = _reduce_sum_case(tmp_path)
    case_dir = tmp_path / "case"
    rc.save_case(str(case_dir), model, inputs, outputs, {"name": "case"})
    real_build = kilnrt.build
    cuda_builds = []

    def stand_in_build(onnx_path, engine_path, device="cpu", fp16=False, shapes=None, bf16=False, tf32=False):
        if device != "cpu":  # the "CUDA" build: refuses a non-constant axes input, like the CUDA backend
            names = [i.name for i in onnx.load(onnx_path).graph.input]
            cuda_builds.append(names)
            if "axes" in names:
                raise kilnrt.Error("kilnrt unsupported [ReduceSum 'ReduceSum_0']: input 'axes' must be a constant "
                                   "or computed from shapes: data-dependent shapes are not supported",
                                   "unsupported", "ReduceSum_0")
        return real_build(onnx_path, engine_path, device="cpu", shapes=shapes)

    monkeypatch.setattr(kilnrt, "build", stand_in_build)
    monkeypatch.setattr(rc, "_run_built", lambda path, feeds, types, device, work: rc._run_engine(
        kilnrt.Engine(path), feeds))
    work = tmp_path / "work"
    work.mkdir()
    status, msg = rc.run_case(str(case_dir), "cuda", str(work), "fp16")
    assert (status, msg) == ("passed", "inputs frozen: axes")
    assert cuda_builds == [["data", "axes"], ["data"]]
    frozen = onnx.load(str(work / "frozen.onnx"))
    assert [i.name for i in frozen.graph.input] == ["data"]
    assert [t.name for t in frozen.graph.initializer] == ["axes"]
    # without freezing the refusal is the case's failure, named
    status, msg = rc.run_case(str(case_dir), "cuda", str(work), "bf16", freeze=False)
    assert status == "failed" and "input 'axes' must be a constant" in msg
    # fp32 runs keep graph inputs as inputs unless asked (--freeze-inputs on), then compare with ONNX's outputs
    status, msg = rc.run_case(str(case_dir), "cuda", str(work), "fp32")
    assert status == "failed" and "input 'axes' must be a constant" in msg

    class PlacedOnCuda(kilnrt.Engine):  # the fp32 path checks every layer's placement itself
        @property
        def layers(self):
            return [dict(layer, placement="cuda") for layer in super().layers]
    monkeypatch.setattr(kilnrt, "Engine", PlacedOnCuda)
    assert rc.run_case(str(case_dir), "cuda", str(work), "fp32", freeze=True) == ("passed", "inputs frozen: axes")
    # a wrong "CUDA" result is caught: the stand-in returns twice the reference
    monkeypatch.setattr(rc, "_run_built", lambda path, feeds, types, device, work: {
        k: v * (2 if device != "cpu" else 1) for k, v in rc._run_engine(kilnrt.Engine(path), feeds).items()})
    status, msg = rc.run_case(str(case_dir), "cuda", str(work), "fp16")
    assert status == "failed" and "beyond tol" in msg and "inputs frozen: axes" in msg


def test_precision_mode_needs_cuda(rc):
    with pytest.raises(SystemExit):
        rc.main(["--device", "cpu", "--precision", "fp16", "--filter", "^test_relu$"])
