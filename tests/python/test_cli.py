"""The command-line tool: doctor, inspect, build options, run with random / given inputs, --save-outputs."""
import re

import numpy as np
from onnx import helper

import kilnrt
from conftest import conv_reference, make_onnx_model, run_cli


def test_doctor_and_version():
    proc = run_cli("doctor")

    # The CLI runs in a fresh process: the process state, the calling thread's context, free GPU memory and where
    # libraries were found (torch may have loaded cuDNN into this process first) may differ from this process's
    # report. The build, runtime, driver and GPU inventory must not.
    def stable(text):
        keep = ("kilnrt ", "CUDA runtime", "driver:", "GPUs:", "  GPU ")
        return [re.sub(r", [0-9]+ MiB free.*", "", line) for line in text.strip().splitlines() if line.startswith(keep)]
    got, want = stable(proc.stdout), stable(kilnrt.doctor())
    assert got and got == want
    assert "0.1.0" in run_cli("--version").stdout
    assert run_cli(expect_rc=None).returncode != 0  # no command: usage error, not a crash


def test_inspect_onnx_and_engine(conv_model, conv_engine_path):
    onnx_text = run_cli("inspect", conv_model[0]).stdout
    assert "Conv" in onnx_text and "x" in onnx_text and "y" in onnx_text
    engine_text = run_cli("inspect", conv_engine_path).stdout
    assert "cpu" in engine_text and "x" in engine_text and "y" in engine_text


def test_build_and_run_random_inputs(conv_model, tmp_path):
    engine = tmp_path / "conv.engine"
    out = run_cli("build", conv_model[0], "-o", engine, "--device", "cpu", "--shapes", "x:1x3x8x8/3x3x8x8/4x3x8x8")
    assert engine.exists() and "built" in out.stdout
    proc = run_cli("run", engine, "--save-outputs", tmp_path / "out", "--iterations", "3")
    assert "input  x 3x3x8x8 float32 (random)" in proc.stdout  # dynamic dim: the profile's opt
    assert "output y 3x4x8x8 float32: min" in proc.stdout and "first [" in proc.stdout
    assert "run time:" in proc.stdout and "mean of the next 2" in proc.stdout
    assert np.load(tmp_path / "out" / "y.npy").shape == (3, 4, 8, 8)


def test_run_given_input(conv_model, conv_engine_path, tmp_path):
    _, w, b = conv_model
    x = np.random.RandomState(5).standard_normal((4, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    run_cli("run", conv_engine_path, "--input", "x=%s" % (tmp_path / "x.npy"), "--save-outputs", tmp_path / "o")
    np.testing.assert_allclose(np.load(tmp_path / "o" / "y.npy"), conv_reference(x, w, b), rtol=1e-4, atol=1e-4)


def test_run_input_errors(conv_engine_path, tmp_path):
    assert "NAME=FILE.npy" in run_cli("run", conv_engine_path, "--input", "x", expect_rc=1).stderr
    np.save(tmp_path / "x.npy", np.zeros((2, 3, 8, 8), np.float32))
    proc = run_cli("run", conv_engine_path, "--input", "z=%s" % (tmp_path / "x.npy"), expect_rc=1)
    assert "no input named 'z'" in proc.stderr
    np.save(tmp_path / "bad.npy", np.zeros((2, 3, 7, 8), np.float32))
    run_cli("run", conv_engine_path, "--input", "x=%s" % (tmp_path / "bad.npy"), expect_rc=1)
    run_cli("run", conv_engine_path, "--input", "x=%s" % (tmp_path / "missing.npy"), expect_rc=1)
    run_cli("build", tmp_path / "missing.onnx", "-o", tmp_path / "e.engine", expect_rc=None)
    run_cli("build", conv_engine_path, "-o", tmp_path / "e.engine", "--device", "tpu", expect_rc=None)


def test_fixed_shape_build(conv_model, tmp_path):
    engine = tmp_path / "fixed.engine"
    run_cli("build", conv_model[0], "-o", engine, "--shapes", "x:2x3x8x8")
    assert "input  x 2x3x8x8" in run_cli("run", engine).stdout
    assert kilnrt.Engine(engine).profiles[0][0][1:] == ((2, 3, 8, 8),) * 3


def test_save_outputs_sanitizes_names(tmp_path):
    onnx_path = make_onnx_model(tmp_path / "names.onnx",
                                [helper.make_node("Relu", ["in:0"], ["out/relu:0"], name="relu"),
                                 helper.make_node("Neg", ["in:0"], ["ok.name-1_x"], name="neg")],
                                [("in:0", [2, 2])], [("out/relu:0", [2, 2]), ("ok.name-1_x", [2, 2])])
    engine = tmp_path / "names.engine"
    run_cli("build", onnx_path, "-o", engine)
    out_dir = tmp_path / "nested" / "outputs"
    proc = run_cli("run", engine, "--save-outputs", out_dir)
    assert "output out/relu:0 2x2 float32" in proc.stdout
    assert sorted(p.name for p in out_dir.iterdir()) == ["ok.name-1_x.npy", "out_relu_0.npy"]
    relu, neg = np.load(out_dir / "out_relu_0.npy"), np.load(out_dir / "ok.name-1_x.npy")
    np.testing.assert_array_equal(relu, np.maximum(-neg, 0))


def test_several_shapes_options(tmp_path):
    onnx_path = make_onnx_model(tmp_path / "two.onnx", [helper.make_node("Add", ["a", "b"], ["c"], name="add")],
                                [("a", ["n", 3]), ("b", ["n", 3])], [("c", ["n", 3])])
    engine = tmp_path / "two.engine"
    # Options before the positional model: each --shapes takes exactly one value.
    run_cli("build", "--shapes", "a:1x3/2x3/5x3", "--shapes", "b:1x3/2x3/5x3", onnx_path, "-o", engine)
    profile = kilnrt.Engine(engine).profiles[0]
    assert sorted(p[0] for p in profile) == ["a", "b"]
    assert all(p[2] == (2, 3) for p in profile)
    proc = run_cli("run", engine)
    assert "input  a 2x3 float32 (random)" in proc.stdout and "output c 2x3 float32" in proc.stdout
