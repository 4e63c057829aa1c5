#!/usr/bin/env bash
# One-call GPU check of the NHWC plan (issue 7): build, the GPU tests of the layout plan / conv fusion / backend ops
# / dynamo fixtures, the per-layer speed probe (scripts/gpu_speed_probe.sh: NCHW and NHWC profiles) and the whole-
# model NHWC-vs-NCHW output check (scripts/nhwc_model_check.py), each stage cut to the time left of BUDGET seconds.
#   BUDGET=230 scripts/conv_nhwc_gpu_check.sh OUT [MODELS]
# Environment: KILNRT_GPU_BUILD (build-gpu-conv), KILNRT_PREFIX ($PWD/.deps/usr), KILNRT_PROBE_BATCH (32).
set -u
out=${1:?usage: conv_nhwc_gpu_check.sh OUT [MODELS]}
models=${2:-resnet50,efficientnet_b0,convnext_tiny,mobilenet_v3_large}
budget=${BUDGET:-230}
b=${KILNRT_GPU_BUILD:-build-gpu-conv}
prefix=${KILNRT_PREFIX:-$PWD/.deps/usr}
mkdir -p "$out"
left() { echo $((budget - SECONDS)); }
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
  timeout "$(left)" cmake --build "$b" -j"$(nproc)" --target kilnrt_tests kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; echo "BUILD FAILED at ${SECONDS}s"; exit 1; }
echo "build ok at ${SECONDS}s"
timeout $(( $(left) > 60 ? 45 : $(left) / 2 )) "$b/tests/kilnrt_tests" \
  --gtest_filter='CudaLayoutPlan*:CudaConvFusion*' >"$out/tests_conv.log" 2>&1
echo "conv/layout tests rc=$? at ${SECONDS}s"
timeout $(( $(left) > 100 ? 40 : $(left) / 3 )) "$b/tests/kilnrt_tests" \
  --gtest_filter='CudaBackendOps*:Dynamo*' >"$out/tests_ops.log" 2>&1
echo "ops/dynamo tests rc=$? at ${SECONDS}s"
KILNRT_GPU_BUILD=$b timeout $(( $(left) - 25 )) scripts/gpu_speed_probe.sh "$out" "$models" >"$out/probe.out" 2>&1
echo "probe rc=$? at ${SECONDS}s"
PYTHONPATH=$b/python timeout $(( $(left) - 3 )) python3 scripts/nhwc_model_check.py /tmp/kilnrt_probe/*.engine \
  >"$out/check.log" 2>&1
echo "model check rc=$? at ${SECONDS}s"
echo "---- tests"
grep -hE "^\[  (PASSED|FAILED) |^\[==========\]|tests? (ran|listed)" "$out"/tests_*.log
grep -hE "^\[  FAILED  \]" "$out"/tests_*.log | head -20
echo "---- probe"
cat "$out/probe.out" | tail -25
echo "---- model check"
cat "$out/check.log" | tail -15
