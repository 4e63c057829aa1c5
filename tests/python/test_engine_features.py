"""Engine features from Python and the CLI: build(layer_precisions=..., mark_all_outputs=...),
engine.activation_memory_size, create_context(allocate_activations=False) + set_activation_memory, `kilnrt build
--layer-precision / --mark-all-outputs`, `kilnrt inspect` per-layer precision, scripts/accuracy_hunt.py. The GPU
tests skip with a reason where no usable CUDA GPU (or torch with CUDA) is present.
"""
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import kilnrt
from conftest import ROOT, make_onnx_model, run_cli

_GPU_OK, _GPU_WHY = kilnrt._kilnrt.cuda_available()
needs_gpu = pytest.mark.skipif(not _GPU_OK, reason="no usable CUDA GPU: %s" % _GPU_WHY)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """x[batch,32] -> MatMul 'mm' -> Relu 'relu' -> MatMul 'mm2' -> Softmax 'softmax' -> y[batch,8]."""
    rng = np.random.RandomState(4)
    w1 = (rng.standard_normal((32, 64)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((64, 8)) * 0.3).astype(np.float32)
    path = tmp_path_factory.mktemp("mlp") / "mlp.onnx"
    make_onnx_model(path,
                    [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm"),
                     helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
                     helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
                     helper.make_node("Softmax", ["h3"], ["y"], name="softmax", axis=-1)],
                    [("x", ["batch", 32])], [("y", ["batch", 8])], [("w1", w1), ("w2", w2)])

    def reference(x):
        h = np.maximum(x @ w1, 0) @ w2
        e = np.exp(h - h.max(axis=-1, keepdims=True))
        return {"h1": x @ w1, "h2": np.maximum(x @ w1, 0), "h3": h, "y": e / e.sum(axis=-1, keepdims=True)}
    return path, reference


def test_mark_all_outputs_from_python(mlp, tmp_path):
    path, reference = mlp
    engine_path = kilnrt.build(path, tmp_path / "all.engine", shapes={"x": ((1, 32), (4, 32), (16, 32))},
                               mark_all_outputs=True)
    engine = kilnrt.Engine(engine_path)
    assert [o.name for o in engine.outputs] == ["y", "h1", "h2", "h3"]
    x = np.random.RandomState(0).standard_normal((5, 32)).astype(np.float32)
    out = engine.run({"x": x})
    want = reference(x)
    for name in ("y", "h1", "h2", "h3"):
        np.testing.assert_allclose(out[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    assert "mark_all_outputs=1" in engine.header["build_options"]


def test_layer_precisions_from_python(mlp, tmp_path):
    path, _ = mlp
    with pytest.raises(kilnrt.Error) as e:
        kilnrt.build(path, tmp_path / "bad.engine", layer_precisions={"nothing*": "fp32"})
    assert e.value.code == "invalid_argument" and "matches no layer" in str(e.value)
    with pytest.raises(kilnrt.Error) as e:
        kilnrt.build(path, tmp_path / "bad.engine", layer_precisions=[("relu", "fp64")])
    assert "unknown precision 'fp64'" in str(e.value)
    engine = kilnrt.Engine(kilnrt.build(path, tmp_path / "p.engine", layer_precisions={"Softmax": "fp32"}))
    assert {layer["name"]: layer["precision"] for layer in engine.layers} == {
        "mm": "fp32", "relu": "fp32", "mm2": "fp32", "softmax": "fp32"}  # CPU engines compute in float32


def test_cpu_engine_activation_memory(mlp, tmp_path):
    path, _ = mlp
    engine = kilnrt.Engine(kilnrt.build(path, tmp_path / "cpu.engine"))
    assert engine.activation_memory_size == 0
    assert engine.activation_memory_sizes == []
    ctx = engine.create_context(allocate_activations=False)
    with pytest.raises(kilnrt.Error) as e:
        ctx.set_activation_memory(4096, 1024)
    assert e.value.code == "unsupported" and "CPU" in str(e.value)
    with pytest.raises(kilnrt.Error) as e:
        ctx.set_activation_memory(4096)
    assert "nbytes" in str(e.value)


def test_cli_layer_precision_and_mark_all_outputs(mlp, tmp_path):
    path, _ = mlp
    out = tmp_path / "cli.engine"
    run_cli("build", path, "-o", out, "--shapes", "x:1x32/2x32/8x32", "--layer-precision", "Softmax=fp32",
            "--layer-precision", "mm*=fp32", "--mark-all-outputs")
    text = run_cli("inspect", out).stdout
    assert "'softmax' [cpu:reference] fp32" in text
    assert "layer_precision:Softmax=fp32 layer_precision:mm*=fp32" in text
    assert text.count("  output ") == 4
    bad = run_cli("build", path, "-o", tmp_path / "bad.engine", "--layer-precision", "nothing=fp32", expect_rc=1)
    assert "matches no layer" in bad.stdout + bad.stderr
    bad = run_cli("build", path, "-o", tmp_path / "bad.engine", "--layer-precision", "nothing", expect_rc=1)
    assert "PATTERN=fp32|fp16|bf16" in bad.stdout + bad.stderr


def test_accuracy_hunt_script_on_the_cpu(mlp):
    path, _ = mlp
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "accuracy_hunt.py"), str(path), "--device", "cpu",
                           "--fp32", "--shapes", "x:3x32", "--all"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no tensor above the threshold" in proc.stdout
    for name in ("h1", "h2", "h3", "y"):
        assert " %s " % name in proc.stdout


@needs_gpu
def test_cuda_activation_memory_with_torch(mlp, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no usable CUDA GPU: torch %s sees none" % torch.__version__)
    path, reference = mlp
    engine = kilnrt.Engine(kilnrt.build(path, tmp_path / "gpu.engine", device="cuda",
                                        shapes={"x": ((1, 32), (8, 32), (64, 32))}))
    size = engine.activation_memory_size
    assert size > 0 and engine.activation_memory_sizes == [size]
    assert "activation memory at profile 0 max" in engine.describe()
    ctx = engine.create_context(allocate_activations=False)
    x = torch.randn(64, 32, device="cuda")
    y = torch.empty(64, 8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    with pytest.raises(kilnrt.Error) as e:
        ctx.enqueue({"x": x}, {"y": y}, stream=stream)
    assert "set_activation_memory" in str(e.value)
    with pytest.raises(kilnrt.Error) as e:
        ctx.set_activation_memory(torch.empty(size // 2, dtype=torch.uint8, device="cuda"))
    assert "too small" in str(e.value)
    with pytest.raises(kilnrt.Error):
        ctx.set_activation_memory(np.empty(size, dtype=np.uint8))  # host memory
    memory = torch.empty(size, dtype=torch.uint8, device="cuda")
    ctx.set_activation_memory(memory)
    for _ in range(3):
        ctx.enqueue({"x": x}, {"y": y}, stream=stream)
    torch.cuda.synchronize()
    want = reference(x.cpu().numpy())["y"]
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    ctx.set_activation_memory(memory.data_ptr(), size)  # an int pointer works too
    ctx.enqueue({"x": x}, {"y": y}, stream=stream)
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-4, atol=1e-5)


@needs_gpu
def test_accuracy_hunt_script_fp16_on_the_gpu():
    fixture = ROOT / "tests" / "fixtures" / "dynamo"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "accuracy_hunt.py"),
                           str(fixture / "transformer_encoder_layer.onnx"), "--input",
                           "x=%s" % (fixture / "transformer_encoder_layer.input.npy"), "--fp16", "--threshold", "1e-2"],
                          capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "accuracy hunt:" in proc.stdout
    assert ("no tensor above the threshold" in proc.stdout) == (proc.returncode == 0)
