"""`kilnrt bench` and `kilnrt profile`: the JSON report's fields and their consistency, the per-layer table, the
Chrome trace (one "X" event per layer per iteration), option errors; CUDA engines on a GPU (skipped without one).
Figures are checked for consistency only (ordering, counts, sums), never for speed."""
import json

import pytest
from onnx import helper

import kilnrt
from conftest import make_onnx_model, run_cli

STAT_KEYS = ("count", "min", "mean", "median", "p90", "p95", "p99", "max")


@pytest.fixture(scope="module")
def chain_engine(tmp_path_factory):
    """x[batch,3,8,8] -> Conv -> Relu -> Sigmoid -> Neg -> y: a few layers, dynamic batch 1..8 (opt 2)."""
    import numpy as np
    tmp = tmp_path_factory.mktemp("bench")
    w = np.random.RandomState(3).standard_normal((4, 3, 3, 3)).astype(np.float32)
    onnx_path = make_onnx_model(
        tmp / "chain.onnx",
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
         helper.make_node("Neg", ["s"], ["y"], name="neg")],
        [("x", ["batch", 3, 8, 8])], [("y", ["batch", 4, 8, 8])], [("w", w)])
    engine = tmp / "chain.engine"
    run_cli("build", onnx_path, "-o", engine, "--shapes", "x:1x3x8x8/2x3x8x8/8x3x8x8")
    return onnx_path, engine


def check_stats(stats, count):
    assert set(STAT_KEYS) <= set(stats), stats
    assert stats["count"] == count
    assert 0 <= stats["min"] <= stats["median"] <= stats["p90"] <= stats["p95"] <= stats["p99"] <= stats["max"]
    assert stats["min"] <= stats["mean"] <= stats["max"]


def test_bench_json_report(chain_engine, tmp_path):
    _, engine = chain_engine
    report = tmp_path / "bench.json"
    proc = run_cli("bench", engine, "--batch", "4", "--iterations", "30", "--warmup", "2", "--json", report,
                   "--device-memory")
    data = json.loads(report.read_text())
    assert data["device"] == "cpu" and data["target"] == "cpu" and data["timing"] == "wall-clock"
    assert data["batch"] == 4 and data["iterations"] == 30 and data["warmup"] == 2
    assert data["inputs"] == [{"name": "x", "shape": [4, 3, 8, 8], "dtype": "float32"}]
    assert data["kilnrt_version"] == kilnrt.__version__ and data["transfers"] is False
    for key in ("latency_ms", "compute_ms", "wall_ms"):
        check_stats(data[key], 30)
    lat = data["latency_ms"]
    assert data["throughput_inferences_per_s"] == pytest.approx(4 * 1000.0 / lat["mean"], rel=1e-3)
    assert data["duration_s"] * 1000.0 >= lat["mean"] * 30 * 0.99  # the samples fit in the measured time
    assert data["memory"]["weights_bytes"] > 0 and data["memory"]["context_device_bytes"] == 0
    assert data["memory"]["input_bytes"] == 4 * 3 * 8 * 8 * 4 and data["memory"]["output_bytes"] == 4 * 4 * 8 * 8 * 4
    assert "input  x 4x3x8x8 float32 (random)" in proc.stdout
    assert "throughput:" in proc.stdout and "(batch 4," in proc.stdout and "memory: weights" in proc.stdout
    # Not a terminal: plain progress lines on stderr, ending at 100%.
    assert "bench: 100% (30 iterations" in proc.stderr and "\r" not in proc.stderr


def test_bench_duration_and_default_shapes(chain_engine, tmp_path):
    _, engine = chain_engine
    report = tmp_path / "bench.json"
    run_cli("bench", engine, "--iterations", "3", "--warmup", "0", "--duration", "0.3", "--json", report)
    data = json.loads(report.read_text())
    assert data["duration_s"] >= 0.3 and data["iterations"] >= 3
    check_stats(data["latency_ms"], data["iterations"])
    assert data["batch"] == 2 and data["inputs"][0]["shape"] == [2, 3, 8, 8]  # the profile's opt
    run_cli("bench", engine, "--shapes", "x:8x3x8x8", "--iterations", "2", "--json", report)
    assert json.loads(report.read_text())["inputs"][0]["shape"] == [8, 3, 8, 8]


def test_bench_and_profile_option_errors(chain_engine, tmp_path):
    onnx_path, engine = chain_engine
    assert "outside the engine's profiles" in run_cli("bench", engine, "--batch", "16", expect_rc=1).stderr
    assert "no input named 'z'" in run_cli("bench", engine, "--shapes", "z:1x3x8x8", expect_rc=1).stderr
    assert "--iterations" in run_cli("bench", engine, "--iterations", "0", expect_rc=2).stderr
    assert "--top" in run_cli("profile", engine, "--top", "0", expect_rc=2).stderr
    fixed = tmp_path / "fixed.engine"
    run_cli("build", onnx_path, "-o", fixed, "--shapes", "x:1x3x8x8")
    assert "fixed to 1" in run_cli("bench", fixed, "--batch", "2", expect_rc=1).stderr
    assert run_cli("bench", tmp_path / "missing.engine", expect_rc=None).returncode != 0


def check_trace(path, layer_names, iterations):
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in events} == set(layer_names)
    assert len(events) == len(layer_names) * iterations
    for name in layer_names:
        mine = [e for e in events if e["name"] == name]
        assert sorted(e["args"]["iteration"] for e in mine) == list(range(iterations))
    assert len({(e["pid"], e["tid"]) for e in events}) == 1  # one stream, one track
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in events)
    starts = [e["ts"] for e in events]
    assert starts == sorted(starts)
    names = [m for m in trace["traceEvents"] if m["ph"] == "M" and m["name"] == "thread_name"]
    assert len(names) == 1
    return events


def test_profile_table_and_trace(chain_engine, tmp_path):
    _, engine = chain_engine
    layers = [l["name"] for l in kilnrt.Engine(engine).layers]
    assert len(layers) >= 2
    trace = tmp_path / "trace.json"
    proc = run_cli("profile", engine, "--batch", "3", "--iterations", "5", "--warmup", "1", "--trace", trace)
    events = check_trace(trace, layers, 5)
    # Within an iteration, layers run one after another in engine order.
    for it in range(5):
        seq = [e for e in events if e["args"]["iteration"] == it]
        assert [e["name"] for e in seq] == layers
        for a, b in zip(seq, seq[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-3
    assert "%d layers, 5 profiled iterations" % len(layers) in proc.stdout
    assert "input  x 3x3x8x8 float32" in proc.stdout
    for name in layers:
        assert name in proc.stdout
    assert "sum of layer means:" in proc.stdout and "whole engine: median" in proc.stdout
    # --top 1: one row, then the rest as "others".
    proc = run_cli("profile", engine, "--iterations", "2", "--top", "1")
    assert "others (%d layers)" % (len(layers) - 1) in proc.stdout
    table = proc.stdout.split("%")[1].split("sum of layer means")[0]
    assert sum(name in table for name in layers) == 1


def test_profile_wide_keeps_whole_names(tmp_path):
    """A layer name longer than the table's column is cut with '...' by default and printed whole with --wide."""
    import numpy as np
    long_name = "encoder/layer_11/attention/output/dense/a_very_long_layer_name"
    onnx_path = make_onnx_model(
        tmp_path / "long.onnx", [helper.make_node("Relu", ["x"], ["y"], name=long_name)],
        [("x", [2, 3])], [("y", [2, 3])], [])
    engine = tmp_path / "long.engine"
    run_cli("build", onnx_path, "-o", engine)
    cut = run_cli("profile", engine, "--iterations", "2").stdout
    assert long_name not in cut and long_name[:40] + "..." in cut
    wide = run_cli("profile", engine, "--iterations", "2", "--wide").stdout
    assert long_name in wide
    assert np.isclose(sum(percent_column(wide)), 100.0, atol=0.3)


def percent_column(stdout):
    """The % column of the profile table (rows start with a rank or are the 'others' row)."""
    values = []
    for line in stdout.splitlines():
        parts = line.split()
        if line.startswith("  ") and parts and (parts[0].isdigit() or parts[0] == "others"):
            values.append(float(parts[-1]))
    return values


def test_profile_percentages_add_up(chain_engine):
    _, engine = chain_engine
    proc = run_cli("profile", engine, "--iterations", "3", "--top", "2")
    values = percent_column(proc.stdout)
    assert len(values) == 3 and sum(values) == pytest.approx(100.0, abs=0.3)
    assert values[0] >= values[1]  # sorted by time


def cuda_engine(tmp_path, onnx_path, *extra):
    if not kilnrt.cuda_available():
        pytest.skip("no usable CUDA GPU: %s" % kilnrt.doctor().splitlines()[0])
    engine = tmp_path / "cuda.engine"
    run_cli("build", onnx_path, "-o", engine, "--device", "cuda", "--shapes", "x:1x3x8x8/2x3x8x8/8x3x8x8", *extra)
    return engine


def test_cuda_bench_phases(chain_engine, tmp_path):
    engine = cuda_engine(tmp_path, chain_engine[0])
    report = tmp_path / "bench.json"
    run_cli("bench", engine, "--batch", "8", "--iterations", "50", "--json", report, "--device-memory")
    data = json.loads(report.read_text())
    assert data["timing"] == "cuda-events" and data["device"] == "cuda:0" and data["gpu"]
    assert data["transfers"] is True and data["execution_mode"] == "graph-replay"
    for key in ("latency_ms", "compute_ms", "h2d_ms", "d2h_ms", "wall_ms"):
        check_stats(data[key], 50)
    assert data["latency_ms"]["mean"] == pytest.approx(
        data["h2d_ms"]["mean"] + data["compute_ms"]["mean"] + data["d2h_ms"]["mean"], rel=1e-3)
    assert data["memory"]["context_device_bytes"] > 0
    run_cli("bench", engine, "--no-transfers", "--iterations", "20", "--json", report)
    data = json.loads(report.read_text())
    assert data["transfers"] is False and "h2d_ms" not in data
    assert data["latency_ms"]["mean"] == pytest.approx(data["compute_ms"]["mean"], rel=1e-6)


def test_cuda_profile_trace(chain_engine, tmp_path):
    engine = cuda_engine(tmp_path, chain_engine[0])
    trace = tmp_path / "trace.json"
    proc = run_cli("profile", engine, "--iterations", "4", "--trace", trace)
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in events}
    assert names and names <= {l["name"] for l in kilnrt.Engine(engine).layers}
    assert len(events) == 4 * len(names)
    assert all(e["args"]["tactic"].startswith("cuda:") for e in events)
    assert "CUDA events around each layer" in proc.stdout and "execution: graph-replay" in proc.stdout
