"""GPU smoke check through the Python API: builds CUDA engines for the bundled fixtures, compares with torch's
expected outputs and with the CPU engine, and times kilnrt against torch eager on the same data (host numpy I/O for
kilnrt, so transfers are included on kilnrt's side only: a rough figure, not the benchmark)."""
import os
import tempfile
import time

import numpy as np

import kilnrt

FIX = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "dynamo")


def compare(got, want):
    err = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
    a, b = got.ravel() - got.mean(), want.ravel() - want.mean()
    cos = float(a @ b / np.sqrt((a @ a) * (b @ b)))
    return err, cos


def main():
    print("kilnrt", kilnrt.__version__, "cuda_available", kilnrt.cuda_available())
    tmp = tempfile.mkdtemp()
    for name in ["mobilenet_v3_small", "transformer_encoder_layer"]:
        x = np.load(os.path.join(FIX, name + ".input.npy"))
        y = np.load(os.path.join(FIX, name + ".expected.npy"))
        for dev in ["cpu", "cuda"]:
            path = os.path.join(tmp, f"{name}.{dev}.engine")
            t0 = time.perf_counter()
            kilnrt.build(os.path.join(FIX, name + ".onnx"), path, device=dev)
            t_build = time.perf_counter() - t0
            t0 = time.perf_counter()
            eng = kilnrt.Engine(path)
            t_load = time.perf_counter() - t0
            out = eng(x)
            err, cos = compare(out, y)
            for _ in range(3):
                eng(x)
            n = 20
            t0 = time.perf_counter()
            for _ in range(n):
                eng(x)
            dt = (time.perf_counter() - t0) / n
            ok = err <= 1e-4 and cos >= 0.99999
            print(f"{name:28s} {dev:4s} build {t_build:6.2f}s load {t_load:5.3f}s rel_err {err:.2e} cos {cos:.9f} "
                  f"run(host I/O, batch {x.shape[0]}) {dt*1e3:8.3f} ms {'OK' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
