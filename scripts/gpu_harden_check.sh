#!/usr/bin/env bash
# GPU check of the hardening, in one command: CUDA failure injection (every driver / cuDNN / cuBLASLt / NVRTC entry
# point of build, load and inference made to fail; every call index of a steady inference), hostile device inputs
# (C++ and Python), the foreign-pointer and engine tests of the buffer checks. Logs to OUT_DIR, summary on stdout.
#   scripts/gpu_harden_check.sh OUT_DIR     (KILNRT_PREFIX: where CLI11 is, e.g. $PWD/.deps/usr)
set -uo pipefail
out=${1:?usage: scripts/gpu_harden_check.sh OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=passive
py=$(command -v python3)
b=build-gpu-harden
start=$SECONDS
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="${KILNRT_PREFIX:-/usr}" \
  -DKILNRT_CUDA_ARCHS=90 -DPython_EXECUTABLE="$py" >"$out/cmake.log" 2>&1 \
  && cmake --build $b -j"$(nproc)" --target kilnrt_tests kilnrt_cli _kilnrt >"$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log" "$out/cmake.log"; exit 1; }
echo "build: $((SECONDS - start)) s"
left() { echo $(( ${KILNRT_CHECK_BUDGET:-270} - SECONDS )); }

echo "== gtest: failure injection + hostile inputs + fuzz regressions"
timeout 110 $b/tests/kilnrt_tests --gtest_filter='CudaFailureInjection*:*/CudaFailureInjection*:FailureInjection*:*/FailureInjection*:HostileInputs*:FuzzRegressions*' \
  >"$out/gtest_fi.log" 2>&1; echo "rc=$?"
grep -E "^\[ fi-cuda  \] [a-z_]+ |FAILED|PASSED|SKIPPED|Failure|not a kilnrt|unusable" "$out/gtest_fi.log" | head -40

echo "== pytest: hostile inputs + GPU interop"
PYTHONPATH=$b/python KILNRT_CLI=$b/kilnrt timeout $(( $(left) > 30 ? 50 : 20 )) "$py" -m pytest -q -x -p no:cacheprovider \
  tests/python/test_hostile_inputs.py tests/python/test_gpu_interop.py >"$out/pytest.log" 2>&1; echo "rc=$?"
tail -15 "$out/pytest.log"

t=$(left); if [ "$t" -gt 15 ]; then
  echo "== gtest: other CUDA engine / foreign tests (${t}s budget)"
  timeout "$t" $b/tests/kilnrt_tests --gtest_filter='CudaForeign*:CudaBackendEngine*:CudaGuard*:CudaLoader*' \
    >"$out/gtest_cuda.log" 2>&1; echo "rc=$?"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests? ran" "$out/gtest_cuda.log" | head -20
fi
echo "total: $SECONDS s"
