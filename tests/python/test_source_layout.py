"""The source layout of docs/architecture.md, checked on the files themselves (runs without a build):

- op folders (src/ops/**) never include the CUDA executor (backends/cuda/...); tests under src/ops may, for its test
  helpers (the CPU control-flow ops run their bodies through the CPU executor, backends/cpu);
- shared CUDA code (src/cuda/**) includes neither op folders nor the executor;
- CUDA layers are registered in op folders' cuda/ folders, or by the executor's control_flow/ (executor-owned);
- src/backends/cuda holds no kernels (.cu) and no op layers.
The registry-based check that each layer sits in its own op's folder is tests/cpp/test_cuda_op_folders.cc.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
REGISTER = re.compile(r"^\s*KILNRT_REGISTER_CUDA_LAYER\(", re.M)


def sources():
    for d, _, files in os.walk(SRC):
        for f in files:
            if f.endswith((".cc", ".h", ".cu", ".cuh")):
                p = os.path.join(d, f)
                yield os.path.relpath(p, SRC).replace(os.sep, "/"), open(p, encoding="utf-8").read()


def test_sources_found():
    n = sum(1 for _ in sources())
    assert n > 300, "only %d source files under %s" % (n, SRC)


def test_op_folders_do_not_include_the_executor():
    bad = ["%s includes %s" % (p, inc) for p, text in sources()
           if p.startswith("ops/") and not p.endswith("_test.cc")
           for inc in INCLUDE.findall(text) if inc.startswith("backends/cuda/")]
    assert not bad, "op folders must not include the CUDA executor:\n" + "\n".join(bad)


def test_shared_cuda_code_includes_no_op_or_executor_code():
    bad = ["%s includes %s" % (p, inc) for p, text in sources() if p.startswith("cuda/")
           for inc in INCLUDE.findall(text) if inc.startswith(("ops/", "backends/", "engine/", "passes/"))]
    assert not bad, "src/cuda is shared infrastructure below the ops:\n" + "\n".join(bad)


def test_cuda_layers_register_in_op_folders_or_the_executor():
    bad = []
    for p, text in sources():
        if not REGISTER.search(text) or p == "ops/cuda/cuda_layer.h":
            continue
        in_op_folder = p.startswith("ops/") and "/cuda/" in p
        if not (in_op_folder or p.startswith("backends/cuda/control_flow/")):
            bad.append(p)
    assert not bad, "CUDA layers registered outside op folders' cuda/ and control_flow/:\n" + "\n".join(bad)


def test_executor_folder_holds_no_kernels():
    bad = [p for p, _ in sources() if p.startswith("backends/cuda/") and p.endswith((".cu", ".cuh"))]
    assert not bad, "kernels belong to op folders or src/cuda/kernels:\n" + "\n".join(bad)
