"""An onnxruntime session in the same process: ORT and kilnrt run the same fixtures, also concurrently from two
threads, and both match the CPU engine. The GPU machine's onnxruntime is a CPU-only build: without
CUDAExecutionProvider the scenario is PARTIAL and says so (ORT's CUDA EP coexistence is not tested there)."""
import threading

import common


def run(r):
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise common.Skip("onnxruntime is not installed: %s" % e)
    import kilnrt
    providers = ort.get_available_providers()
    use = ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in providers:
        use = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        r.note("onnxruntime %s with CUDAExecutionProvider" % ort.__version__)
    else:
        r.partial("onnxruntime %s is a CPU-only build (providers %s): ORT's CUDA EP not tested, CPU EP only" % (
            ort.__version__, ",".join(providers)))
    import os
    sessions = {m: ort.InferenceSession(os.path.join(common.FIXTURES, m + ".onnx"), providers=use) for m in common.MODELS}
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    for m, s in sessions.items():
        x = common.fixture_input(m, 2)
        (y,) = s.run(None, {s.get_inputs()[0].name: x})
        common.check_close(y, common.reference(m, x), "%s onnxruntime" % m)
    common.check_numpy_io(kilnrt, engines)
    errors = []

    def ort_loop():
        try:
            for _ in range(10):
                for m, s in sessions.items():
                    x = common.fixture_input(m, 2)
                    (y,) = s.run(None, {s.get_inputs()[0].name: x})
                    common.check_close(y, common.reference(m, x), "%s onnxruntime (thread)" % m)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=ort_loop)
    t.start()
    for i in range(10):
        common.check_numpy_io(kilnrt, engines, batches=(2,), tag=" while ORT runs")
    t.join(120)
    if errors:
        raise errors[0]


common.main(run)
