#!/usr/bin/env bash
# GPU check of custom ops: builds kilnrt (sm_90 only), then runs the C++ custom-op / op edge tests, the
# CUDA custom-op tests under compute-sanitizer memcheck, a CUDA backend regression subset, the Python custom-op tests
# and both examples on the GPU. Logs and summary.txt go to OUT_DIR; the summary is printed at the end.
#   scripts/gpu_custom_op_check.sh OUT_DIR [DEADLINE_SECONDS]
set -u
out=${1:?usage: scripts/gpu_custom_op_check.sh OUT_DIR [DEADLINE_SECONDS]}
deadline=${2:-280}
mkdir -p "$out"
cd "$(dirname "$0")/.."
b=build-gpu-ops
py=$(command -v python3)
start=$(date +%s)
summary=$out/summary.txt
: >"$summary"
left() { echo $((deadline - ($(date +%s) - start))); }
step() {  # step NAME LIMIT LOG -- command...
  local name=$1 lim=$2 log=$3
  shift 4
  local l
  l=$(left)
  [ "$l" -lt "$lim" ] && lim=$l
  if [ "$lim" -le 5 ]; then echo "$name: not run (out of time)" >>"$summary"; return; fi
  local t0=$(date +%s)
  timeout "$lim" "$@" >"$log" 2>&1
  local rc=$?
  local tail_line
  tail_line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|passed|failed|max abs error|skipped' "$log" | tail -4 | tr '\n' ' ')
  echo "$name: rc=$rc ($(( $(date +%s) - t0 )) s) $tail_line" >>"$summary"
}
# Configure with the Python module; without pybind11 on the box, configure again without it.
cfg="cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DKILNRT_CUDA_ARCHS=90 \
  -DPython_EXECUTABLE=$py"
step build 200 "$out/build.log" -- bash -c "{ $cfg || $cfg -DKILNRT_BUILD_PYTHON=OFF; } && \
  cmake --build $b -j16 --target kilnrt_tests kilnrt_cli && { cmake --build $b -j16 --target _kilnrt || true; }"
export KILNRT_CACHE_DIR=/tmp/kilnrt-cache-ops
step gtest_custom 60 "$out/gtest_custom.log" -- "$b/tests/kilnrt_tests" \
  --gtest_filter='CustomOp*:OpEdge*:NnPool*'
step memcheck_custom 60 "$out/memcheck.log" -- compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$b/tests/kilnrt_tests" --gtest_filter='CustomOpCuda*'
step gtest_cuda_regress 60 "$out/gtest_cuda_regress.log" -- "$b/tests/kilnrt_tests" \
  --gtest_filter='CudaBackendOps*:CudaBackendEngine*:CudaOpParity*'
export PYTHONPATH=$PWD/$b/python KILNRT_BUILD_DIR=$PWD/$b KILNRT_CLI=$PWD/$b/kilnrt
step pytest_custom 90 "$out/pytest_custom.log" -- "$py" -m pytest -q -rs tests/python/test_custom_op.py \
  tests/python/test_op_test_audit.py
step example_py 40 "$out/example_py.log" -- "$py" examples/custom_op/scaled_tanh.py --dir /tmp/kilnrt-custom-op-example
echo "total $(( $(date +%s) - start )) s" >>"$summary"
cat "$summary"
