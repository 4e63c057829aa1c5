"""Custom ops from Python (kilnrt.register_op): numpy CPU and shape functions, NVRTC CUDA kernels, errors naming
the node or op, engines loaded where the op is not registered, callbacks from several threads, and the examples
in examples/custom_op (Python, and the C++ one compiled against the build)."""
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
import onnx

import kilnrt

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = "kilnrt.pytest"
_GPU_OK, _GPU_WHY = kilnrt._kilnrt.cuda_available()
needs_gpu = pytest.mark.skipif(not _GPU_OK, reason="no usable CUDA GPU: %s" % _GPU_WHY)

CPU_CALLS = {"n": 0}

SCALE_ADD_CUDA = r"""
extern "C" __global__ void scale_add(const float* a, const float* b, float* y, long long n, float scale) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * a[i] + b[i];
}
"""

# Halves: x[..., 2k] -> (x[..., :k] + x[..., k:], x[..., :k] - x[..., k:]); one block per row, k as an int arg.
HALVES_CUDA = r"""
extern "C" __global__ void halves(const float* x, float* s, float* d, long long n, long long k) {
  long long row = blockIdx.x;
  for (long long j = threadIdx.x; j < k; j += blockDim.x) {
    float a = x[row * 2 * k + j], b = x[row * 2 * k + k + j];
    s[row * k + j] = a + b;
    d[row * k + j] = a - b;
  }
}
"""


def scale_add_cpu(inputs, attrs):
    CPU_CALLS["n"] += 1
    a, b = inputs
    assert not a.flags.writeable, "inputs must be read-only views"
    return (np.float32(attrs.get("scale", 1.0)) * a + b).astype(np.float32)


def halves_shape(types, attrs):
    (shape, dtype), = types
    if shape is None:
        return [(None, dtype), (None, dtype)]
    last = None if shape[-1] is None else shape[-1] // 2
    out = tuple(shape[:-1]) + (last,)
    return [(out, dtype), (out, dtype)]


def halves_cpu(inputs, attrs):
    x = inputs[0]
    if x.shape[-1] % 2:
        raise ValueError("last dim %d is odd" % x.shape[-1])
    k = x.shape[-1] // 2
    return x[..., :k] + x[..., k:], x[..., :k] - x[..., k:]


def halves_launch(in_shapes, out_shapes):
    rows = int(np.prod(out_shapes[0][:-1])) if len(out_shapes[0]) > 1 else 1
    return max(rows, 1), 64, 0, [out_shapes[0][-1]]


def fails_cpu(inputs, attrs):
    raise RuntimeError("deliberate failure in the Python CPU function")


def register_once():
    if DOMAIN + ":ScaleAdd" in kilnrt.registered_ops():
        return
    kilnrt.register_op(DOMAIN, "ScaleAdd", cpu=scale_add_cpu, cuda_source=SCALE_ADD_CUDA, cuda_kernel="scale_add",
                       float_attrs={"scale": 1.0}, doc="scale * a + b")
    kilnrt.register_op(DOMAIN, "Halves", cpu=halves_cpu, shape=halves_shape, cuda_source=HALVES_CUDA,
                       cuda_kernel="halves", launch=halves_launch)
    kilnrt.register_op(DOMAIN, "Fails", cpu=fails_cpu)


def save_model(path, nodes, inputs, outputs):
    graph = helper.make_graph(nodes, "custom", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    onnx.save(model, str(path))
    return str(path)


def scale_add_model(tmp_path, scale=0.5):
    return save_model(tmp_path / "scale_add.onnx",
                      [helper.make_node("Relu", ["a"], ["r"]),
                       helper.make_node("ScaleAdd", ["r", "b"], ["t"], domain=DOMAIN, name="my_scale_add", scale=scale),
                       helper.make_node("Neg", ["t"], ["y"])],
                      [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 6]),
                       helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6])])


def halves_model(tmp_path):
    return save_model(tmp_path / "halves.onnx",
                      [helper.make_node("Halves", ["x"], ["s", "d"], domain=DOMAIN, name="my_halves")],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 10])],
                      [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["n", 5]),
                       helper.make_tensor_value_info("d", TensorProto.FLOAT, ["n", 5])])


def build(onnx_path, device, shapes):
    engine_path = str(onnx_path) + "." + device + ".engine"
    kilnrt.build(onnx_path, engine_path, device=device, shapes=shapes)
    return kilnrt.Engine(engine_path)


def check_scale_add(engine, batches, scale=0.5):
    rng = np.random.default_rng(1)
    for n in batches:
        a = rng.standard_normal((n, 6)).astype(np.float32)
        b = rng.standard_normal((n, 6)).astype(np.float32)
        y = engine(a, b)
        np.testing.assert_allclose(y, -(scale * np.maximum(a, 0) + b), rtol=1e-6, atol=1e-6)


def check_halves(engine, batches):
    rng = np.random.default_rng(2)
    for n in batches:
        x = rng.standard_normal((n, 10)).astype(np.float32)
        s, d = engine(x)
        np.testing.assert_allclose(s, x[:, :5] + x[:, 5:], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(d, x[:, :5] - x[:, 5:], rtol=1e-6, atol=1e-6)


def test_registration_is_checked():
    register_once()
    assert {DOMAIN + ":ScaleAdd", DOMAIN + ":Halves"} <= set(kilnrt.registered_ops())
    with pytest.raises(kilnrt.Error, match="already registered"):
        kilnrt.register_op(DOMAIN, "ScaleAdd", cpu=scale_add_cpu)
    with pytest.raises(kilnrt.Error, match="domain"):
        kilnrt.register_op("", "Relu", cpu=scale_add_cpu)
    with pytest.raises(TypeError):
        kilnrt.register_op(DOMAIN, "NotCallable", cpu=None)


def test_cpu_engine_runs_python_op(tmp_path):
    register_once()
    engine = build(scale_add_model(tmp_path), "cpu", {"a": ((1, 6), (4, 6), (8, 6)), "b": ((1, 6), (4, 6), (8, 6))})
    before = CPU_CALLS["n"]
    check_scale_add(engine, (1, 5, 8))
    assert CPU_CALLS["n"] == before + 3


def test_python_shape_function_two_outputs_dynamic_batch(tmp_path):
    register_once()
    engine = build(halves_model(tmp_path), "cpu", {"x": ((1, 10), (3, 10), (9, 10))})
    assert [o.shape for o in engine.outputs] == [(-1, 5), (-1, 5)]
    check_halves(engine, (1, 9, 3))


def test_python_exceptions_name_the_node(tmp_path):
    register_once()
    path = save_model(tmp_path / "fails.onnx",
                      [helper.make_node("Fails", ["x"], ["y"], domain=DOMAIN, name="node_that_fails")],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    engine = build(path, "cpu", None)
    with pytest.raises(kilnrt.Error) as info:
        engine(np.ones(2, np.float32))
    assert "node_that_fails" in str(info.value)
    assert "deliberate failure" in str(info.value)
    # A shape function error at build time names the node too (odd dims are fine for it; an exception is not).
    bad = save_model(tmp_path / "halves_bad.onnx",
                     [helper.make_node("Halves", ["x"], ["s"], domain=DOMAIN, name="halves_one_output")],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                     [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 2])])
    with pytest.raises(kilnrt.Error, match="halves_one_output"):
        kilnrt.build(bad, str(tmp_path / "bad.engine"))


def test_scalar_and_non_contiguous_results(tmp_path):
    # A 0-d result stays 0-d; a transposed (non-contiguous) result is copied in the right order.
    kilnrt.register_op(DOMAIN, "SumAll", cpu=lambda i, a: np.float32(i[0].sum()),
                       shape=lambda t, a: [((), t[0][1])])
    kilnrt.register_op(DOMAIN, "Transposed", cpu=lambda i, a: i[0].T,
                       shape=lambda t, a: [(tuple(reversed(t[0][0])), t[0][1])])
    path = save_model(tmp_path / "sum_t.onnx",
                      [helper.make_node("SumAll", ["x"], ["s"], domain=DOMAIN),
                       helper.make_node("Transposed", ["x"], ["t"], domain=DOMAIN)],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                       helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 2])])
    engine = build(path, "cpu", None)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s, t = engine(x)
    assert s.shape == () and float(s) == 15.0
    np.testing.assert_array_equal(t, x.T)


def test_engine_with_unregistered_op_is_a_clear_error(tmp_path):
    # Built in a child process that registers "Secret"; this process never does.
    script = (
        "import sys, numpy as np, kilnrt, onnx\n"
        "from onnx import helper, TensorProto\n"
        "kilnrt.register_op('%s', 'Secret', cpu=lambda i, a: i[0] * 2)\n"
        "g = helper.make_graph([helper.make_node('Secret', ['x'], ['y'], domain='%s')], 'g',\n"
        "    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [3])],\n"
        "    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [3])])\n"
        "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('%s', 1)])\n"
        "onnx.save(m, sys.argv[1])\n"
        "kilnrt.build(sys.argv[1], sys.argv[2])\n"
        "e = kilnrt.Engine(sys.argv[2])\n"
        "assert (e(np.arange(3, dtype=np.float32)) == [0, 2, 4]).all()\n") % (DOMAIN, DOMAIN, DOMAIN)
    onnx_path, engine_path = tmp_path / "secret.onnx", tmp_path / "secret.engine"
    subprocess.run([sys.executable, "-c", script, str(onnx_path), str(engine_path)], check=True,
                   env=dict(os.environ), timeout=300)
    assert DOMAIN + ":Secret" not in kilnrt.registered_ops()
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.Engine(str(engine_path))
    assert DOMAIN + ":Secret" in str(info.value) and "not registered" in str(info.value)
    with pytest.raises(kilnrt.Error, match="not registered"):
        kilnrt.build(str(onnx_path), str(tmp_path / "again.engine"))


def test_python_callbacks_from_several_threads(tmp_path):
    register_once()
    engine = build(scale_add_model(tmp_path), "cpu", {"a": ((1, 6), (4, 6), (8, 6)), "b": ((1, 6), (4, 6), (8, 6))})
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(25):
                a = rng.standard_normal((4, 6)).astype(np.float32)
                b = rng.standard_normal((4, 6)).astype(np.float32)
                np.testing.assert_allclose(engine(a, b), -(0.5 * np.maximum(a, 0) + b), rtol=1e-6, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "threads deadlocked"
    assert not errors, errors


def test_python_example_runs():
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_op" / "scaled_tanh.py")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cpu: max abs error" in proc.stdout and "ok" in proc.stdout


def _build_dir():
    d = os.environ.get("KILNRT_BUILD_DIR")
    if d:
        return Path(d)
    return Path(kilnrt.__file__).resolve().parents[2]  # <build>/python/kilnrt/__init__.py


def test_cpp_example_builds_and_runs(tmp_path):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    lib_dir = _build_dir()
    if not cxx:
        pytest.skip("no C++ compiler to build examples/custom_op/scaled_tanh.cc")
    if not (lib_dir / "libkilnrt.so").exists():
        pytest.skip("no in-tree libkilnrt.so at %s (installed package): the C++ example needs a build dir" % lib_dir)
    exe = tmp_path / "scaled_tanh_example"
    subprocess.run([cxx, "-std=c++17", "-O1", str(ROOT / "examples" / "custom_op" / "scaled_tanh.cc"),
                    "-I" + str(ROOT / "include"), "-L" + str(lib_dir), "-lkilnrt", "-Wl,-rpath," + str(lib_dir),
                    "-o", str(exe)], check=True, timeout=600)
    subprocess.run([sys.executable, str(ROOT / "examples" / "custom_op" / "scaled_tanh.py"), "--device", "cpu",
                    "--dir", str(tmp_path)], check=True, timeout=600)
    proc = subprocess.run([str(exe), str(tmp_path / "scaled_tanh_only.onnx"), "1.5"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cpu: max abs error" in proc.stdout
    if _GPU_OK:
        assert "cuda: max abs error" in proc.stdout, proc.stdout


@needs_gpu
def test_cuda_engine_runs_nvrtc_kernels(tmp_path):
    register_once()
    shapes = {"a": ((1, 6), (4, 6), (64, 6)), "b": ((1, 6), (4, 6), (64, 6))}
    engine = build(scale_add_model(tmp_path), "cuda", shapes)
    tactics = {l["name"]: (l["placement"], l["tactic"]) for l in engine.layers}
    assert tactics.get("my_scale_add") == ("cuda", "custom:%s:ScaleAdd" % DOMAIN), tactics
    before = CPU_CALLS["n"]
    check_scale_add(engine, (4, 4, 4, 64, 1))  # repeats: CUDA graph capture and replays
    assert CPU_CALLS["n"] == before, "the CUDA engine called the Python CPU function"
    check_halves(build(halves_model(tmp_path), "cuda", {"x": ((1, 10), (3, 10), (40, 10))}), (40, 1, 3, 3))
