#!/usr/bin/env bash
# GPU check of the fast elementwise / copy kernels, in one command: builds build-gpu (sm_90 only), runs the
# fast-kernel GPU test and the CUDA op suites, the per-layer speed probe (scripts/gpu_speed_probe.sh) on MODELS, then
# a longer per-layer listing of each probed engine. Stages are bounded so that the whole fits in LIMIT seconds.
#   scripts/gpu_kernels_check.sh OUT [MODELS] [LIMIT]      (MODELS default bert,vit_b_16; LIMIT default 230)
set -u
out=${1:?usage: scripts/gpu_kernels_check.sh OUT [MODELS] [LIMIT]}
models=${2:-bert,vit_b_16}
limit=${3:-230}
b=build-gpu
mkdir -p "$out"
left() { echo $((limit - SECONDS)); }
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKILNRT_CUDA_ARCHS=90 \
  -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
  cmake --build $b -j"$(nproc)" --target kilnrt_tests kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
echo "build ok at ${SECONDS}s"
t=$b/tests/kilnrt_tests
timeout 40 $t --gtest_filter='CudaFastKernels*:ElementwisePlan*:StridedCopyPlan*:CudaBackendOps*:CudaBackendPrecision*:CudaOpParity*' \
  >"$out/tests_ops.log" 2>&1
echo "op tests rc=$? at ${SECONDS}s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[  SKIPPED \]" "$out/tests_ops.log" | head -20
timeout $(( $(left) - 20 )) scripts/gpu_speed_probe.sh "$out" "$models" >"$out/probe.log" 2>&1
echo "probe rc=$? at ${SECONDS}s"; cat "$out/probe.log"
for e in /tmp/kilnrt_probe/*.engine; do
  [ -f "$e" ] && [ "$(left)" -gt 12 ] || continue
  echo "==== $(basename "$e")" >>"$out/profiles_top.txt"
  timeout 8 $b/kilnrt profile "$e" --batch 32 --iterations 20 --warmup 5 --top 150 >>"$out/profiles_top.txt" 2>&1
done
echo "long profiles at ${SECONDS}s"
[ "$(left)" -gt 5 ] && timeout $(left) $t --gtest_filter='CudaAttention*:Dynamo*' >"$out/tests_attn.log" 2>&1
echo "attention/dynamo tests rc=$? at ${SECONDS}s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[  SKIPPED \]" "$out/tests_attn.log" | head -20
