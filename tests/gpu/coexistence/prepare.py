"""Runner step 0: builds the CPU and CUDA engines of the fixtures into KILNRT_COEX_ENGINES and reports whether a
GPU is usable (a JSON line `@@PREPARE {...}`)."""
import json
import os
import sys
import time

import common  # noqa: F401  (sets sys.path)
import kilnrt

out = common.engines_dir()
ok, why = kilnrt._kilnrt.cuda_available()
info = {"cuda_available": bool(ok), "why": why, "kilnrt": kilnrt.__version__, "kilnrt_file": kilnrt.__file__,
        "python": sys.version.split()[0], "built": []}
for model in common.MODELS:
    onnx = os.path.join(common.FIXTURES, model + ".onnx")
    for kind in (("cpu", "cuda") if ok else ("cpu",)):
        t0 = time.time()
        kilnrt.build(onnx, common.engine_path(model, kind), device=kind)
        if kind == "cpu" and not ok and os.environ.get("KILNRT_COEX_FAKE_GPU") == "1":
            import shutil
            shutil.copy(common.engine_path(model, "cpu"), common.engine_path(model, "cuda"))
        info["built"].append("%s.%s (%.1f s)" % (model, kind, time.time() - t0))
try:
    import torch
    info["torch"] = torch.__version__
    info["gpus"] = torch.cuda.device_count() if ok else 0
except ImportError:
    info["torch"] = None
print("@@PREPARE " + json.dumps(info), flush=True)
