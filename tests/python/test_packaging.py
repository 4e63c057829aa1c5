"""Packaging: `cmake --install` + find_package(kilnrt) from a consumer project, and `pip install .` into a venv.

Both need the CMake build tree (KILNRT_BUILD_DIR, set by scripts/test.sh). The pip test builds a wheel
(incrementally, in <build>/pip-build) and installs it into a fresh venv; KILNRT_SKIP_PIP_TEST=1 skips it.
The license checks (LICENSE is the Apache License 2.0 and pyproject.toml declares and ships it) need neither.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT

BUILD_DIR = os.environ.get("KILNRT_BUILD_DIR")
needs_build_tree = pytest.mark.skipif(not BUILD_DIR, reason="KILNRT_BUILD_DIR not set (run scripts/test.sh)")


def _run(cmd, cwd=None, env=None, timeout=1800):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, "%s failed (%d)\nstdout:\n%s\nstderr:\n%s" % (
        " ".join(map(str, cmd)), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def _clean_env():
    env = dict(os.environ)
    for key in ("PYTHONPATH", "KILNRT_CLI", "LD_LIBRARY_PATH"):
        env.pop(key, None)
    return env


def test_license_is_apache_2_and_declared():
    text = (Path(ROOT) / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert "Copyright 2026 The kilnrt authors" in text and "[yyyy]" not in text
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(Path(ROOT) / "pyproject.toml", "rb") as f:
        pyproject = tomllib.load(f)
    assert pyproject["project"]["license"] == {"text": "Apache-2.0"}
    assert "License :: OSI Approved :: Apache Software License" in pyproject["project"]["classifiers"]
    # scikit-build-core copies these into the wheel's .dist-info/licenses/.
    assert "LICENSE" in pyproject["tool"]["scikit-build"]["wheel"]["license-files"]
    # And the CMake installs: <prefix>/share/doc/kilnrt/LICENSE, kilnrt/LICENSE inside the Python package.
    cmake = (Path(ROOT) / "CMakeLists.txt").read_text(encoding="utf-8")
    assert "install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/kilnrt)" in cmake
    python_cmake = (Path(ROOT) / "python" / "CMakeLists.txt").read_text(encoding="utf-8")
    assert 'install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION kilnrt COMPONENT python)' in python_cmake


@needs_build_tree
def test_cmake_install_and_find_package(conv_model, tmp_path):
    prefix = tmp_path / "prefix"
    _run(["cmake", "--install", BUILD_DIR, "--prefix", prefix])
    libdirs = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu") if (prefix / d / "cmake" / "kilnrt").is_dir()]
    assert libdirs, "no kilnrt CMake package config installed under %s" % prefix
    assert (prefix / "include" / "kilnrt" / "engine.h").is_file()
    assert (prefix / libdirs[0] / "cmake" / "kilnrt" / "kilnrtConfig.cmake").is_file()
    assert "Apache License" in (prefix / "share" / "doc" / "kilnrt" / "LICENSE").read_text(encoding="utf-8")

    cli = prefix / "bin" / "kilnrt"
    assert "0.1.0" in _run([cli, "--version"], env=_clean_env()).stdout
    _run([cli, "doctor"], env=_clean_env())

    build = tmp_path / "consumer-build"
    _run(["cmake", "-S", ROOT / "tests" / "install_consumer", "-B", build, "-DCMAKE_PREFIX_PATH=%s" % prefix,
          "-DCMAKE_BUILD_TYPE=Release"])
    _run(["cmake", "--build", build])
    out = _run([build / "kilnrt_consumer", conv_model[0]], env=_clean_env()).stdout
    assert "kilnrt 0.1.0" in out and "output y 1x4x8x8" in out


@needs_build_tree
@pytest.mark.skipif(os.environ.get("KILNRT_SKIP_PIP_TEST") == "1", reason="KILNRT_SKIP_PIP_TEST=1")
def test_pip_install(conv_model, tmp_path):
    wheel_dir = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-build-isolation", "--no-deps", "-w", wheel_dir,
          "--config-settings=build-dir=%s" % (Path(BUILD_DIR) / "pip-build")])
    (wheel,) = list(wheel_dir.glob("kilnrt-*.whl"))
    venv = tmp_path / "venv"
    _run(["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable, "-m", "venv",
          "--system-site-packages", venv])
    py = venv / "bin" / "python"
    _run([py, "-m", "pip", "install", "--no-deps", "--no-index", wheel])

    script = r"""
import os, sys, numpy as np, kilnrt
pkg = os.path.dirname(kilnrt.__file__)
assert pkg.startswith(sys.prefix), pkg
files = sorted(os.listdir(pkg))
assert any(f.startswith("libkilnrt.so") for f in files), files
assert "LICENSE" in files, files
# The distribution carries the license in its .dist-info/licenses/ (wheel.license-files) and says which it is.
from importlib import metadata
dist = metadata.distribution("kilnrt")
assert dist.metadata["License"] == "Apache-2.0", dist.metadata["License"]
licenses = [f for f in dist.files if f.name == "LICENSE" and ".dist-info" in str(f)]
assert licenses and str(licenses[0]).endswith(".dist-info/licenses/LICENSE"), licenses
assert "Apache License" in licenses[0].read_text(), licenses[0]
engine_path = kilnrt.build(sys.argv[1], os.path.join(sys.argv[2], "c.engine"), shapes={"x": (2, 3, 8, 8)})
y = kilnrt.Engine(engine_path)(np.ones((2, 3, 8, 8), np.float32))
print("OK", kilnrt.__version__, y.shape)
"""
    out = _run([py, "-c", script, conv_model[0], tmp_path], cwd=tmp_path, env=_clean_env()).stdout
    assert "OK 0.1.0 (2, 4, 8, 8)" in out
    # The console script runs the CLI shipped inside the package.
    cli = venv / "bin" / "kilnrt"
    assert "0.1.0" in _run([cli, "--version"], cwd=tmp_path, env=_clean_env()).stdout
    proc = _run([cli, "run", tmp_path / "c.engine"], cwd=tmp_path, env=_clean_env())
    assert "output y 2x4x8x8" in proc.stdout
