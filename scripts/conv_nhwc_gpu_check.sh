#!/usr/bin/env bash
# GPU check of the NHWC plan, in one command, every stage cut to the time left of BUDGET seconds:
#  1. build (tests, CLI, Python module);
#  2. zoo export + static fp16 engines (bench/conv_engines.py, as scripts/gpu_speed_probe.sh does) in the
#     background while the GPU tests run: CudaLayoutPlan* / CudaConvFusion*, then CudaBackendOps* / Dynamo*;
#  3. `kilnrt profile` of every engine with KILNRT_CUDA_NHWC=0 and =1 (nothing else on the GPU meanwhile);
#  4. whole-engine outputs NHWC (forced and default) vs NCHW (scripts/nhwc_model_check.py).
#   BUDGET=230 scripts/conv_nhwc_gpu_check.sh OUT [MODELS]
# Environment: KILNRT_GPU_BUILD (build-gpu-conv), KILNRT_PREFIX ($PWD/.deps/usr), KILNRT_PROBE_BATCH (32).
set -u
out=${1:?usage: conv_nhwc_gpu_check.sh OUT [MODELS]}
models=${2:-resnet50,efficientnet_b0,convnext_tiny,mobilenet_v3_large}
budget=${BUDGET:-230}
batch=${KILNRT_PROBE_BATCH:-32}
b=${KILNRT_GPU_BUILD:-build-gpu-conv}
prefix=${KILNRT_PREFIX:-$PWD/.deps/usr}
dir=/tmp/kilnrt_conv_probe
mkdir -p "$out" "$dir"
left() { local l=$((budget - SECONDS)); echo $((l > 1 ? l : 1)); }
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
  timeout "$(left)" cmake --build "$b" -j"$(nproc)" --target kilnrt_tests kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; echo "BUILD FAILED at ${SECONDS}s"; exit 1; }
echo "build ok at ${SECONDS}s"
PYTHONUNBUFFERED=1 PYTHONPATH=$b/python timeout "$(left)" python3 bench/conv_engines.py --models "$models" \
  --batch "$batch" --dir "$dir" >"$out/engines.log" 2>&1 &
engines=$!
timeout 40 "$b/tests/kilnrt_tests" --gtest_filter='CudaLayoutPlan*:CudaConvFusion*' >"$out/tests_conv.log" 2>&1
echo "conv/layout tests rc=$? at ${SECONDS}s"
timeout 40 "$b/tests/kilnrt_tests" --gtest_filter='CudaBackendOps*:Dynamo*' >"$out/tests_ops.log" 2>&1
echo "ops/dynamo tests rc=$? at ${SECONDS}s"
wait "$engines"
echo "engines rc=$? at ${SECONDS}s"
p="$out/profiles.txt"
: >"$p"
for e in "$dir"/*.engine; do
  n=$(basename "$e" .engine)
  for nhwc in 0 1; do
    [ "$(left)" -gt 30 ] || break 2
    echo "================ $n  KILNRT_CUDA_NHWC=$nhwc" >>"$p"
    KILNRT_CUDA_NHWC=$nhwc timeout 40 "$b/kilnrt" profile "$e" --batch "$batch" --iterations 20 --warmup 5 --top 30 \
      >>"$p" 2>&1
    echo "rc=$?" >>"$p"
  done
done
echo "profiles done at ${SECONDS}s"
PYTHONPATH=$b/python timeout "$(left)" python3 scripts/nhwc_model_check.py "$dir"/*.engine >"$out/check.log" 2>&1
echo "model check rc=$? at ${SECONDS}s"
echo "---- tests"
grep -hE "^\[  (PASSED|FAILED)  \]|^\[==========\]" "$out"/tests_*.log
grep -hE "^\[  FAILED  \]" "$out"/tests_*.log | head -20
echo "---- profiles"
grep -E "^=====|whole engine|^rc=[1-9]" "$p"
echo "---- model check"
tail -12 "$out/check.log"
