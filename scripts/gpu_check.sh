#!/usr/bin/env bash
# Builds kilnrt on a GPU box and runs the GPU-relevant checks; logs go to the directory given as $1.
# Usage: scripts/gpu_check.sh OUT_DIR   (CLI11 may come from a carried prefix: KILNRT_PREFIX=$PWD/.deps/usr)
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=passive
py=$(command -v python3)
b=build-gpu
cmake -S . -B $b -G Ninja -DCMAKE_PREFIX_PATH="${KILNRT_PREFIX:-/usr}" -DPython_EXECUTABLE="$py" >"$out/cmake.log" 2>&1 \
  && cmake --build $b -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log" "$out/cmake.log"; exit 1; }
echo "== gtest"; $b/tests/kilnrt_tests >"$out/gtest.log" 2>&1; echo "gtest rc=$?"; grep -E "PASSED|FAILED|SKIPPED \]" "$out/gtest.log" | head -20
echo "== doctor"; $b/kilnrt doctor | tee "$out/doctor.txt" | head -40
echo "== CLI on the bundled model (cuda)"
m=tests/fixtures/dynamo/mobilenet_v3_small.onnx
( time $b/kilnrt build $m -o /tmp/m.engine --device cuda --shapes x:1x3x224x224/8x3x224x224/32x3x224x224 ) 2>&1 | tail -5
$b/kilnrt inspect /tmp/m.engine | head -20
$b/kilnrt run /tmp/m.engine --input x=tests/fixtures/dynamo/mobilenet_v3_small.input.npy --iterations 20 2>&1 | tail -12
echo "== Python API on the GPU"
PYTHONPATH=$b/python "$py" scripts/gpu_python_check.py 2>&1 | tee "$out/python.txt"
