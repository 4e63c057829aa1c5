#!/usr/bin/env python3
"""A model with a custom op, "my.domain:ScaledTanh" (y = alpha * tanh(x)), built with onnx.helper, registered
from Python (numpy CPU function, CUDA C kernel compiled with NVRTC) and run with kilnrt on the CPU, and on the GPU
when one is usable.

    PYTHONPATH=build/python python examples/custom_op/scaled_tanh.py [--device cpu|cuda|all] [--dir DIR]

Prints one line per device with the max abs error against numpy and exits 1 when it exceeds 1e-5.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

import kilnrt

DOMAIN = "my.domain"

SCALED_TANH_CUDA = r"""
extern "C" __global__ void scaled_tanh(const float* x, float* y, long long n, float alpha) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * tanhf(x[i]);
}
"""


def scaled_tanh_cpu(inputs, attrs):
    x = inputs[0]
    if x.dtype != np.float32:
        raise TypeError("ScaledTanh takes float32, got %s" % x.dtype)
    return (np.float32(attrs.get("alpha", 1.0)) * np.tanh(x)).astype(np.float32)


def register():
    if DOMAIN + ":ScaledTanh" in kilnrt.registered_ops():
        return
    kilnrt.register_op(DOMAIN, "ScaledTanh", cpu=scaled_tanh_cpu, cuda_source=SCALED_TANH_CUDA,
                       cuda_kernel="scaled_tanh", float_attrs={"alpha": 1.0}, doc="alpha * tanh(x)")


def make_model(path, alpha=1.5):
    """x[batch, 8] -> MatMul(w) -> ScaledTanh(alpha) -> Add(x) -> y: the custom op between built-in ones."""
    w = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("ScaledTanh", ["h"], ["t"], domain=DOMAIN, alpha=alpha),
        helper.make_node("Add", ["t", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "scaled_tanh_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor("w", TensorProto.FLOAT, [8, 8], w.flatten().tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    onnx.save(model, path)
    return w, alpha


def make_single_op_model(path, alpha=1.5):
    """x[batch, 8] -> ScaledTanh(alpha) -> y: read by the C++ example (scaled_tanh.cc)."""
    node = helper.make_node("ScaledTanh", ["x"], ["y"], domain=DOMAIN, alpha=alpha)
    graph = helper.make_graph([node], "scaled_tanh_only",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]),
              path)


def reference(x, w, alpha):
    return (alpha * np.tanh(x @ w) + x).astype(np.float32)


def run(device, workdir):
    register()
    onnx_path = os.path.join(workdir, "scaled_tanh.onnx")
    w, alpha = make_model(onnx_path)
    engine_path = os.path.join(workdir, "scaled_tanh_%s.engine" % device)
    kilnrt.build(onnx_path, engine_path, device=device, shapes={"x": ((1, 8), (4, 8), (16, 8))})
    engine = kilnrt.Engine(engine_path)  # device 0 for CUDA engines; ignored for CPU engines
    worst = 0.0
    for batch in (1, 4, 16, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 8)).astype(np.float32)
        y = engine(x)
        worst = max(worst, float(np.abs(y - reference(x, w, alpha)).max()))
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    ap.add_argument("--dir", default=None, help="where to write the model and engines (default: a temp dir)")
    args = ap.parse_args(argv)
    devices = ["cpu", "cuda"] if args.device == "all" else [args.device]
    workdir = args.dir or tempfile.mkdtemp(prefix="kilnrt_custom_op_")
    os.makedirs(workdir, exist_ok=True)
    make_single_op_model(os.path.join(workdir, "scaled_tanh_only.onnx"))
    ok = True
    for device in devices:
        if device == "cuda" and not kilnrt.cuda_available():
            print("cuda: skipped (no usable CUDA GPU)")
            continue
        err = run(device, workdir)
        good = err <= 1e-5
        ok &= good
        print("%s: max abs error vs numpy %.3g %s" % (device, err, "ok" if good else "TOO LARGE"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
