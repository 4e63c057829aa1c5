"""End-to-end acceptance on the CPU: real models -> ONNX -> engine -> run (CLI and Python) vs torch's outputs.

torch 1.13 exports (TorchScript exporter, opset 13) of resnet18, mobilenet_v3_small and a TransformerEncoderLayer,
plus the committed torch 2.11 dynamo exports (tests/fixtures/dynamo: mobilenet_v3_small, a TransformerEncoderLayer and
a small torchvision ViT). Every engine is built with a dynamic batch and
runs batch 1 and batch 4 (and the dynamo fixtures' batch 2) through the same engine.
"""
import os
import re

import numpy as np
import pytest

import kilnrt
from conftest import DYNAMO_FIXTURES, DYNAMO_MODELS, TORCH_MODELS, assert_matches_reference, run_cli


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_torch_export_python_api(name, get_torch_model, tmp_path):
    model = get_torch_model(name)
    engine_path = kilnrt.build(model.onnx_path, tmp_path / (name + ".engine"), device="cpu",
                               shapes=[model.shape_spec(1, 2, 4)])
    engine = kilnrt.Engine(engine_path)
    assert [i.name for i in engine.inputs] == ["x"] and [o.name for o in engine.outputs] == ["y"]
    assert engine.inputs[0].shape == (-1,) + model.sample_shape
    assert engine.inputs[0].dtype == np.float32
    for batch in (1, 4):
        x = model.input(batch, seed=batch)
        y = engine(x)
        assert_matches_reference(y, model.reference(x), "%s batch %d" % (name, batch))
        assert_matches_reference(engine.run({"x": x})["y"], model.reference(x), "%s run() batch %d" % (name, batch))


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_torch_export_cli(name, get_torch_model, tmp_path):
    model = get_torch_model(name)
    engine_path = tmp_path / (name + ".engine")
    run_cli("build", model.onnx_path, "-o", engine_path, "--device", "cpu", "--shapes", model.shape_spec(1, 2, 4))
    info = run_cli("inspect", engine_path).stdout
    assert "cpu" in info and "x" in info and "y" in info
    for batch in (1, 4):
        x = model.input(batch, seed=10 + batch)
        np.save(tmp_path / "x.npy", x)
        out_dir = tmp_path / ("out%d" % batch)
        proc = run_cli("run", engine_path, "--input", "x=%s" % (tmp_path / "x.npy"), "--save-outputs", out_dir)
        assert "y" in proc.stdout and "run time" in proc.stdout
        assert_matches_reference(np.load(out_dir / "y.npy"), model.reference(x), "%s CLI batch %d" % (name, batch))


def _dynamo_fixture(name):
    x = np.load(DYNAMO_FIXTURES / (name + ".input.npy"))
    expected = np.load(DYNAMO_FIXTURES / (name + ".expected.npy"))
    assert x.shape[0] == 2 and expected.shape[0] == 2
    return DYNAMO_FIXTURES / (name + ".onnx"), x, expected


def _batches(x, expected):
    """Batch 1, 2 and 4 inputs with exact references (samples are independent, so slices / repeats carry over)."""
    return [(x[:1], expected[:1]), (x, expected),
            (np.concatenate([x, x[::-1]]), np.concatenate([expected, expected[::-1]]))]


@pytest.mark.parametrize("name", DYNAMO_MODELS)
def test_dynamo_fixture_python_api(name, tmp_path):
    onnx_path, x, expected = _dynamo_fixture(name)
    dims = "x".join(str(d) for d in x.shape[1:])
    engine = kilnrt.Engine(kilnrt.build(onnx_path, tmp_path / "m.engine",
                                        shapes={"x": tuple((b,) + x.shape[1:] for b in (1, 2, 4))}))
    assert engine.inputs[0].shape[0] == -1, "the batch dim should stay dynamic (%s)" % dims
    for xb, want in _batches(x, expected):
        assert_matches_reference(engine(np.ascontiguousarray(xb)), want, "%s batch %d" % (name, xb.shape[0]))


@pytest.mark.parametrize("name", DYNAMO_MODELS)
def test_dynamo_fixture_cli(name, tmp_path):
    onnx_path, x, expected = _dynamo_fixture(name)
    dims = "x".join(str(d) for d in x.shape[1:])
    engine_path = tmp_path / "m.engine"
    run_cli("build", onnx_path, "-o", engine_path, "--shapes", "x:1x%s/2x%s/4x%s" % (dims, dims, dims))
    for xb, want in _batches(x, expected):
        np.save(tmp_path / "x.npy", np.ascontiguousarray(xb))
        out_dir = tmp_path / ("out%d" % xb.shape[0])
        run_cli("run", engine_path, "--input", "x=%s" % (tmp_path / "x.npy"), "--save-outputs", out_dir)
        assert_matches_reference(np.load(out_dir / "y.npy"), want, "%s CLI batch %d" % (name, xb.shape[0]))
    # Random inputs: the profile's opt batch (2).
    proc = run_cli("run", engine_path)
    assert "input  x 2x%s float32 (random)" % dims in proc.stdout
    assert "output y 2x" in proc.stdout and "run time" in proc.stdout


def test_vit_class_token_hoist(tmp_path):
    """torchvision's ViT (dynamo export) reads the class token after the last block: passes/hoist_gather moves that
    Gather above the last block's out-projection, MLP, LayerNorms and attention (12 ops, as on vit_b_16). The engine
    built with it and the one built without (KILNRT_NO_FUSION=gather-hoist) match torch at batch 1, 2 and 4."""
    onnx_path, x, expected = _dynamo_fixture("vit_tiny")
    moved = {}
    for off in ("", "gather-hoist"):
        engine_path = tmp_path / ("vit%s.engine" % off)
        proc = run_cli("build", onnx_path, "-o", engine_path, "--device", "cpu", "--shapes",
                       "x:1x3x32x32/2x3x32x32/4x3x32x32",
                       env=dict(os.environ, KILNRT_LOG_LEVEL="info", KILNRT_NO_FUSION=off))
        m = re.search(r"row Gathers moved above (\d+) op", proc.stdout + proc.stderr)
        moved[off] = int(m.group(1)) if m else 0
        engine = kilnrt.Engine(engine_path)
        for xb, want in _batches(x, expected):
            assert_matches_reference(engine(np.ascontiguousarray(xb)), want,
                                     "vit_tiny %s batch %d" % (off or "hoisted", xb.shape[0]))
    assert moved == {"": 12, "gather-hoist": 0}
