"""Failure injection along resnet18 (torchvision, exported by torch 1.13 in the test session): every host allocation
of the build, of the load and of an inference fails once, one at a time (CPU, in CI); on a GPU, every driver /
cuDNN / cuBLASLt / NVRTC call of a CUDA build, load and inference fails once. Each failure must surface as a
kilnrt.Error (out_of_memory for allocations) or be survived with the exact reference result; afterwards the same
engine / a rebuilt one gives the reference result, or, for CUDA inference, the context is cleanly unusable (a
kilnrt.Error) and a new engine works.
The hooks are kilnrt._kilnrt._testing (src/core/failure_injection.h), not a public API."""
import numpy as np
import pytest

import kilnrt
from kilnrt import _kilnrt

T = _kilnrt._testing
SHAPE = (1, 3, 224, 224)
NEVER = 1 << 62  # an armed countdown that never fires: the hooks count only while armed


@pytest.fixture(scope="module")
def resnet18(get_torch_model):
    return get_torch_model("resnet18")


def _expect_clean(fn, fired, code=None):
    """Runs fn(); returns (result or None, error or None). An exception other than kilnrt.Error fails the test."""
    try:
        return fn(), None
    except kilnrt.Error as e:
        assert fired(), "a kilnrt.Error without an injected failure: %s" % e
        if code is not None:
            assert e.code == code, "injected failure surfaced as %r: %s" % (e.code, e)
        return None, e


def _sweep_host(label, n, fn, check):
    errors = survived = 0
    for i in range(n):
        T.fail_host_allocation_at(i)
        try:
            out, err = _expect_clean(fn, T.host_failure_fired, "out_of_memory")
            fired = T.host_failure_fired()
        finally:
            T.reset()
        if err is not None:
            errors += 1
        elif fired:
            survived += 1
            check(out)
    print("%s: %d allocations, %d clean errors, %d survived with the reference result" % (label, n, errors, survived))
    assert errors > 0


def test_every_host_allocation_of_resnet18_fails_cleanly(resnet18, tmp_path):
    x = resnet18.input(1, seed=3)
    want = resnet18.reference(x)
    path = str(tmp_path / "r18.engine")

    def build():
        kilnrt.build(str(resnet18.onnx_path), path, device="cpu", shapes={"x": SHAPE})
        return path

    T.fail_host_allocation_at(NEVER)
    build()
    n_build = T.host_allocations_seen()
    T.fail_host_allocation_at(NEVER)
    engine = kilnrt.Engine(path)
    n_load = T.host_allocations_seen()
    T.fail_host_allocation_at(NEVER)
    np.testing.assert_allclose(engine(x), want, rtol=1e-3, atol=1e-4)
    n_run = T.host_allocations_seen()
    T.reset()
    print("host allocations: build %d, load %d, inference %d" % (n_build, n_load, n_run))
    assert n_build > 0 and n_load > 0 and n_run > 0

    def same_engine_file(_):
        np.testing.assert_allclose(kilnrt.Engine(path)(x), want, rtol=1e-3, atol=1e-4)

    _sweep_host("build", n_build, build, same_engine_file)
    build()  # the file is whole again whatever the last failure hit
    _sweep_host("load", n_load, lambda: kilnrt.Engine(path),
                lambda e: np.testing.assert_allclose(e(x), want, rtol=1e-3, atol=1e-4))

    def run_and_recheck():
        return engine(x)

    _sweep_host("inference", n_run, run_and_recheck, lambda y: np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4))
    # The engine that saw every inference failure still computes the reference.
    np.testing.assert_allclose(engine(x), want, rtol=1e-3, atol=1e-4)


def test_every_cuda_call_of_resnet18_fails_cleanly(resnet18, tmp_path):
    if not kilnrt.cuda_available():
        pytest.skip("no usable CUDA GPU: %s" % kilnrt.doctor().splitlines()[-1])
    x = resnet18.input(1, seed=4)
    want = resnet18.reference(x)
    path = str(tmp_path / "r18_cuda.engine")

    def build():
        kilnrt.build(str(resnet18.onnx_path), path, device="cuda", shapes={"x": SHAPE})
        return path

    def close(y):
        np.testing.assert_allclose(y, want, rtol=2e-3, atol=2e-3)

    T.fail_call_at(NEVER)
    build()
    n_build = T.calls_seen()
    T.fail_call_at(NEVER)
    engine = kilnrt.Engine(path)
    n_load = T.calls_seen()
    T.reset()
    close(engine(x))
    close(engine(x))  # second call: graph capture; count a steady call (graph replay) next
    T.fail_call_at(NEVER)
    close(engine(x))
    n_run = T.calls_seen()
    T.reset()
    print("cuda calls: build %d, load %d, steady inference %d" % (n_build, n_load, n_run))
    assert n_build > 0 and n_load > 0 and n_run > 0
    counts = {}
    for label, n, fn in (("build", n_build, build), ("load", n_load, lambda: kilnrt.Engine(path))):
        errors = survived = 0
        for i in range(n):
            T.fail_call_at(i)
            try:
                _, err = _expect_clean(fn, T.call_failure_fired)
                fired = T.call_failure_fired()
            finally:
                T.reset()
            errors += err is not None
            survived += err is None and fired
        counts[label] = (n, errors, survived)
        build()  # whatever the last failure hit, a clean build and load work again
        close(kilnrt.Engine(path)(x))
    errors = survived = unusable = 0
    for i in range(n_run):
        T.fail_call_at(i)
        try:
            y, err = _expect_clean(lambda: engine(x), T.call_failure_fired)
            fired = T.call_failure_fired()
        finally:
            T.reset()
        if err is None and fired:
            survived += 1
            close(y)
        errors += err is not None
        try:
            close(engine(x))  # still works ...
        except kilnrt.Error:
            unusable += 1     # ... or is cleanly unusable: a new engine works
            engine = kilnrt.Engine(path)
            close(engine(x))
    counts["inference"] = (n_run, errors, survived)
    for label, (n, e, s) in counts.items():
        print("cuda %s: %d calls, %d clean errors, %d survived with the reference result" % (label, n, e, s))
    print("cuda inference: %d failures left the context cleanly unusable (a new engine worked)" % unusable)
    assert counts["build"][1] > 0 and counts["inference"][1] > 0
