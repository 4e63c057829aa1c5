"""The conventions every `kilnrt` command follows (docs/cli.md): exit status 0 / 1 (failure) / 2 (usage), one
readable error line (the failing check and source location only with --verbose or KILNRT_LOG_LEVEL=debug),
--quiet / --verbose, --device, --json, value checks, and output details (paths, plurals, shapes, program name)."""
import json
import os
import re
import subprocess

import numpy as np
import pytest
from onnx import helper

from conftest import cli_executable, make_onnx_model, run_cli

DETAIL_MARKERS = ("failed at", "check '")


def assert_one_readable_error(proc, *words):
    """stderr starts with one "error: ..." line mentioning `words`, without the failing check or source location."""
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[0].startswith("error: "), proc.stderr
    for word in words:
        assert word in proc.stderr, "stderr should mention %r:\n%s" % (word, proc.stderr)
    for marker in DETAIL_MARKERS:
        assert marker not in proc.stderr, "no %r without --verbose:\n%s" % (marker, proc.stderr)


@pytest.fixture
def junk_onnx(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(np.random.RandomState(0).bytes(300))
    return path


# ---- exit status 1: the command failed ---------------------------------------------------------------------------

def test_missing_model_file(tmp_path):
    missing = tmp_path / "missing_model.onnx"
    proc = run_cli("build", missing, "-o", tmp_path / "e.engine", expect_rc=1)
    assert_one_readable_error(proc, "missing_model.onnx", "No such file")
    for command in ("run", "bench", "profile", "inspect"):
        proc = run_cli(command, tmp_path / "missing.engine", expect_rc=1)
        assert_one_readable_error(proc, "missing.engine", "No such file")


def test_non_onnx_file(junk_onnx, tmp_path):
    proc = run_cli("build", junk_onnx, "-o", tmp_path / "never.engine", expect_rc=1)
    assert_one_readable_error(proc, "junk.onnx", "not an ONNX model")
    assert not (tmp_path / "never.engine").exists()
    proc = run_cli("inspect", junk_onnx, expect_rc=1)
    assert_one_readable_error(proc, "not an ONNX model")


def test_verbose_shows_where_the_error_was_detected(conv_engine_path, tmp_path):
    truncated = tmp_path / "truncated.engine"
    truncated.write_bytes(conv_engine_path.read_bytes()[:-100])
    quiet = run_cli("run", truncated, expect_rc=1)
    assert_one_readable_error(quiet, "truncated.engine", "truncated")
    assert "--verbose" in quiet.stderr  # says how to see more
    for args, env in ((("-v", "run", truncated), None),
                      (("run", truncated, "--verbose"), None),  # the global flags also work after the command
                      (("run", truncated), dict(os.environ, KILNRT_LOG_LEVEL="debug"))):
        proc = run_cli(*args, expect_rc=1, env=env)
        # verbose also turns on the library's debug log: the error line comes after those lines
        assert [line for line in proc.stderr.splitlines() if line.startswith("error: ")], proc.stderr
        assert "failed at" in proc.stderr and ".cc:" in proc.stderr, proc.stderr


def test_engine_for_the_other_device(conv_engine_path):
    proc = run_cli("run", conv_engine_path, "--device", "cuda", expect_rc=1)
    assert_one_readable_error(proc, "CPU engine", "--device cpu")
    run_cli("run", conv_engine_path, "--device", "cpu")


# ---- exit status 2: the command line is wrong --------------------------------------------------------------------

def test_unknown_flag(conv_engine_path):
    proc = run_cli("inspect", conv_engine_path, "--frobnicate", expect_rc=2)
    assert proc.stderr.startswith("error: ") and "--frobnicate" in proc.stderr, proc.stderr
    run_cli("--frobnicate", "inspect", conv_engine_path, expect_rc=2)
    run_cli("build", expect_rc=2)  # missing arguments
    run_cli(expect_rc=2)  # no command
    run_cli("frobnicate", expect_rc=2)


def test_device_gpu_is_a_usage_error(conv_model, conv_engine_path, tmp_path):
    for args in (("build", conv_model[0], "-o", tmp_path / "e.engine", "--device", "gpu"),
                 ("run", conv_engine_path, "--device", "gpu"),
                 ("bench", conv_engine_path, "--device", "gpu"),
                 ("profile", conv_engine_path, "--device", "gpu"),
                 ("run", conv_engine_path, "--device", "cuda:x")):
        proc = run_cli(*args, expect_rc=2)
        assert "cpu, cuda or cuda:N" in proc.stderr, proc.stderr


def test_bench_batch_and_iterations_zero(conv_engine_path):
    proc = run_cli("bench", conv_engine_path, "--batch", "0", expect_rc=2)
    assert "--batch" in proc.stderr and "at least 1" in proc.stderr, proc.stderr
    for command in ("bench", "profile", "run"):
        proc = run_cli(command, conv_engine_path, "--iterations", "0", expect_rc=2)
        assert "--iterations" in proc.stderr, proc.stderr
    run_cli("bench", conv_engine_path, "--warmup", "-1", expect_rc=2)
    run_cli("bench", conv_engine_path, "--duration", "-1", expect_rc=2)
    run_cli("profile", conv_engine_path, "--top", "0", expect_rc=2)


def test_zero_dim_in_shapes(conv_model, conv_engine_path, tmp_path):
    proc = run_cli("bench", conv_engine_path, "--shapes", "x:0x3x8x8", expect_rc=2)
    assert "x:0x3x8x8" in proc.stderr and "at least 1" in proc.stderr, proc.stderr
    run_cli("profile", conv_engine_path, "--shapes", "x:0x3x8x8", expect_rc=2)
    run_cli("build", conv_model[0], "-o", tmp_path / "e.engine", "--shapes", "x:1x3x8x8/0x3x8x8/4x3x8x8", expect_rc=2)
    run_cli("build", conv_model[0], "-o", tmp_path / "e.engine", "--shapes", "x", expect_rc=2)
    assert not (tmp_path / "e.engine").exists()


def test_build_16bit_options_on_the_cpu(conv_model, tmp_path):
    engine = tmp_path / "e.engine"
    for flags in (("--fp16", "--device", "cpu"), ("--bf16",), ("--tf32", "--device", "cpu")):
        proc = run_cli("build", conv_model[0], "-o", engine, *flags, expect_rc=2)
        assert proc.stderr.startswith("error: ") and "CUDA build option" in proc.stderr, proc.stderr
        assert flags[0] in proc.stderr
    assert not engine.exists()


def test_verbose_and_quiet_together(conv_engine_path):
    run_cli("-v", "-q", "inspect", conv_engine_path, expect_rc=2)


# ---- --json, standard output -------------------------------------------------------------------------------------

def test_inspect_json(conv_model, conv_engine_path, tmp_path):
    report = tmp_path / "engine.json"
    proc = run_cli("inspect", conv_engine_path, "--json", report)
    assert "input  x: float32[" in proc.stdout  # the text still goes to stdout
    text = report.read_text()
    assert text.endswith("\n")
    data = json.loads(text)
    assert data["kind"] == "engine" and data["target"] == "cpu"
    assert [t["name"] for t in data["inputs"]] == ["x"] and data["inputs"][0]["shape"][1:] == [3, 8, 8]
    assert data["layers"] and all("op" in layer for layer in data["layers"])

    proc = run_cli("inspect", conv_model[0], "--json", "-")
    assert proc.stdout.endswith("\n")
    data = json.loads(proc.stdout)  # standard output carries the JSON alone
    assert data["kind"] == "onnx" and data["ops"] == {"Conv": 1, "Relu": 1}
    assert data["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 3, 8, 8]}]


def test_profile_json(conv_engine_path):
    proc = run_cli("profile", conv_engine_path, "--iterations", "2", "--warmup", "0", "--json", "-")
    assert proc.stdout.endswith("\n")
    data = json.loads(proc.stdout)
    assert data["iterations"] == 2 and data["device"] == "cpu" and data["layers"]


def test_inspect_to_a_full_device_fails(conv_engine_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([cli_executable(), "inspect", str(conv_engine_path)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "error: cannot write to standard output" in proc.stderr


# ---- --quiet / --verbose -----------------------------------------------------------------------------------------

def test_quiet(conv_model, conv_engine_path, tmp_path):
    proc = run_cli("build", conv_model[0], "-o", tmp_path / "q.engine", "--quiet")
    assert proc.stdout == "" and proc.stderr == ""
    assert (tmp_path / "q.engine").exists()
    proc = run_cli("bench", conv_engine_path, "--iterations", "3", "-q")
    assert proc.stderr == "" and "throughput:" in proc.stdout  # no progress lines, the result stays
    # An old-opset model imports with a warning; --quiet leaves errors only.
    old = make_onnx_model(tmp_path / "old.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                          [("x", [1, 4])], [("y", [1, 4])], opset=11)
    assert "opset 11" in run_cli("inspect", old).stderr
    proc = run_cli("-q", "inspect", old)
    assert proc.stderr == "" and "ONNX model" in proc.stdout
    # Errors still show.
    proc = run_cli("-q", "run", tmp_path / "missing.engine", expect_rc=1)
    assert proc.stderr.startswith("error: ")


def test_verbose_logs(conv_engine_path):
    proc = run_cli("--verbose", "run", conv_engine_path)
    assert "[kilnrt info] engine load" in proc.stderr, proc.stderr
    assert "[kilnrt info]" not in run_cli("run", conv_engine_path).stderr


# ---- output details ----------------------------------------------------------------------------------------------

def test_usage_line_says_kilnrt():
    for args in (("--help",), ("run", "--help"), ("bench", "--help")):
        proc = run_cli(*args)
        usage = [line for line in proc.stdout.splitlines() if line.startswith("Usage:")]
        assert usage and usage[0].startswith("Usage: kilnrt"), proc.stdout
        assert cli_executable() not in proc.stdout
    assert "Usage: kilnrt run" in run_cli("run", "--help").stdout
    assert run_cli("run", expect_rc=2).stderr.startswith("error: ")  # the engine argument is missing


def test_save_outputs_no_double_slash(conv_engine_path, tmp_path):
    out_dir = str(tmp_path / "out") + "/"
    proc = run_cli("run", conv_engine_path, "--save-outputs", out_dir)
    saved = [line for line in proc.stdout.splitlines() if "saved to" in line]
    assert saved and "//" not in saved[0], proc.stdout
    assert saved[0].strip() == "saved to " + str(tmp_path / "out" / "y.npy")
    assert np.load(tmp_path / "out" / "y.npy").shape[1:] == (4, 8, 8)


def test_shapes_plurals_and_rounding(conv_model, conv_engine_path, tmp_path):
    text = run_cli("inspect", conv_model[0]).stdout
    assert "input  x: float32[batch, 3, 8, 8]" in text and "batchx" not in text
    assert "Conv x 1" in text and "Relux1" not in text
    text = run_cli("inspect", conv_engine_path).stdout
    assert "input  x: float32[" in text and ", 3, 8, 8]" in text and "x3x8x8]" not in text
    proc = run_cli("bench", conv_engine_path, "--iterations", "1", "--warmup", "0")
    assert "timed 1 iteration in" in proc.stdout and "1 iterations" not in proc.stdout + proc.stderr
    proc = run_cli("build", conv_model[0], "-o", tmp_path / "r.engine")
    assert re.search(r" in [0-9]+\.[0-9]{1,2} s\n", proc.stdout), proc.stdout
