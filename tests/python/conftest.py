"""Shared fixtures of the pytest suite.

The `kilnrt` package under test is whatever `import kilnrt` finds: scripts/test.sh puts the in-tree build
(<build>/python) on PYTHONPATH and sets KILNRT_CLI / KILNRT_BUILD_DIR. Torch models are exported once per session
with the installed torch (Debian's 1.13 in CI: TorchScript exporter, opset 13, dynamic batch axis).
"""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kilnrt

ROOT = Path(__file__).resolve().parents[2]
DYNAMO_FIXTURES = ROOT / "tests" / "fixtures" / "dynamo"
TORCH_MODELS = ("resnet18", "mobilenet_v3_small", "transformer_encoder_layer")
DYNAMO_MODELS = ("mobilenet_v3_small", "transformer_encoder_layer", "vit_tiny")
OPSET = 13


def cli_executable():
    path = os.environ.get("KILNRT_CLI") or kilnrt.cli_path() or shutil.which("kilnrt")
    if not path or not os.path.isfile(path):
        pytest.fail("kilnrt CLI not found: set KILNRT_CLI or run through scripts/test.sh")
    return path


def run_cli(*args, expect_rc=0, timeout=900, env=None):
    """Runs the CLI (in `env`, default: this process's environment); checks the exit status (never a signal) and
    returns the CompletedProcess."""
    proc = subprocess.run([cli_executable()] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                          env=env)
    assert proc.returncode >= 0, "kilnrt %s crashed with signal %d\n%s" % (args[0], -proc.returncode, proc.stderr)
    if expect_rc is not None:
        assert proc.returncode == expect_rc, "kilnrt %s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(map(str, args)), proc.returncode, expect_rc, proc.stdout, proc.stderr)
    return proc


def assert_matches_reference(got, want, what=""):
    """Acceptance tolerance: max abs error <= 1e-4 x the output's max magnitude, and cosine similarity of the
    mean-centred outputs >= 0.99999."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape)
    assert np.all(np.isfinite(got)), "%s: non-finite values" % what
    scale = float(np.abs(want).max())
    err = float(np.abs(got - want).max())
    assert err <= 1e-4 * scale, "%s: max abs error %.3g > 1e-4 x max |ref| (%.3g)" % (what, err, scale)
    g, w = got - got.mean(), want - want.mean()
    cos = float((g * w).sum() / (np.linalg.norm(g) * np.linalg.norm(w) + 1e-30))
    assert cos >= 0.99999, "%s: cosine similarity %.7f < 0.99999" % (what, cos)


# ---- torch models -----------------------------------------------------------------------------------------------

class TorchModel:
    """An exported torch model: ONNX path, sample shape for a given batch, and the torch reference."""

    def __init__(self, name, module, sample_shape, onnx_path, reference_needs_grad):
        self.name = name
        self.module = module
        self.sample_shape = sample_shape  # without the batch dim
        self.onnx_path = onnx_path
        self._needs_grad = reference_needs_grad

    def input(self, batch, seed=0):
        return np.random.RandomState(seed).standard_normal((batch,) + self.sample_shape).astype(np.float32)

    def reference(self, x):
        import torch
        ctx = torch.enable_grad() if self._needs_grad else torch.no_grad()
        with ctx:
            return self.module(torch.from_numpy(x)).detach().numpy()

    def shape_spec(self, lo=1, opt=2, hi=4):
        dims = "x".join(str(d) for d in self.sample_shape)
        return "x:%dx%s/%dx%s/%dx%s" % (lo, dims, opt, dims, hi, dims)


def _make_torch_model(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    if name == "transformer_encoder_layer":
        module = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                  batch_first=True)
        module.eval()
        # Grad enabled keeps torch 1.13 off its fused fast path (aten::_transformer_encoder_layer_fwd has no ONNX
        # export); the reference is computed the same way.
        return module, (16, 64), True
    module = getattr(torchvision.models, name)(weights=None)
    module.train()  # recalibrate BatchNorm statistics so activations look like a trained network's
    with torch.no_grad():
        for _ in range(3):
            module(torch.randn(8, 3, 224, 224))
    module.eval()
    return module, (3, 224, 224), False


_torch_model_cache = {}


@pytest.fixture(scope="session")
def torch_model_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("torch_models")


@pytest.fixture(scope="session")
def get_torch_model(torch_model_dir):
    """get_torch_model(name) -> TorchModel, exported to ONNX once per session."""
    def get(name):
        if name not in _torch_model_cache:
            import torch
            torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
            module, sample_shape, needs_grad = _make_torch_model(name)
            path = torch_model_dir / (name + ".onnx")
            example = torch.randn((2,) + sample_shape)
            ctx = torch.enable_grad() if needs_grad else torch.no_grad()
            with ctx:
                torch.onnx.export(module, (example,), str(path), input_names=["x"], output_names=["y"],
                                  opset_version=OPSET, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                                  do_constant_folding=True)
            _torch_model_cache[name] = TorchModel(name, module, sample_shape, path, needs_grad)
        return _torch_model_cache[name]
    return get


# ---- small hand-made ONNX models --------------------------------------------------------------------------------

def make_onnx_model(path, nodes, inputs, outputs, initializers=(), opset=13, check=True):
    """Writes an ONNX model. inputs/outputs: [(name, dims)] of float32 tensors (str dims are symbolic)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        nodes, "test_model",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return Path(path)


@pytest.fixture(scope="session")
def conv_model(tmp_path_factory):
    """x[batch,3,8,8] -> Conv(3->4, 3x3, pad 1) -> Relu -> y[batch,4,8,8], with its weights."""
    from onnx import helper
    w = np.random.RandomState(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = np.random.RandomState(2).standard_normal((4,)).astype(np.float32)
    path = tmp_path_factory.mktemp("conv") / "conv.onnx"
    make_onnx_model(path,
                    [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                     helper.make_node("Relu", ["c"], ["y"], name="relu")],
                    [("x", ["batch", 3, 8, 8])], [("y", ["batch", 4, 8, 8])], [("w", w), ("b", b)])
    return path, w, b


def conv_reference(x, w, b):
    """Numpy reference of conv_model."""
    n, _, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), np.float64)
    for i in range(3):
        for j in range(3):
            patch = padded[:, :, i:i + h, j:j + wd]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    out += b[None, :, None, None]
    return np.maximum(out, 0).astype(np.float32)


@pytest.fixture(scope="session")
def conv_engine_path(conv_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("conv_engine") / "conv.engine"
    kilnrt.build(conv_model[0], path, shapes={"x": ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))})
    return path
