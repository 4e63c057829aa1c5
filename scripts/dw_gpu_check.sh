#!/usr/bin/env bash
# GPU check of the NHWC depthwise kernels, in one command, every stage cut to BUDGET seconds:
#  1. build (tests, CLI, Python module); 2. CudaDepthwiseVec* (strip widths: chosen, 1, 2, 4, 8), CudaLayoutPlan*,
#     CudaConvFusion*;
#  3. static fp16 engines at batch PBATCH (32) (bench/conv_engines.py) and `kilnrt profile` under each of CONFIGS
#     (default: NCHW / NHWC scalar / NHWC vec with strips of 4, 2, 8; TX=0: strip_width's choice), summarised by
#     scripts/dw_profile_summary.py (depthwise layers vs cuDNN NCHW);
#  4. bench_vs_torch.py (no compile) with KILNRT_CUDA_NHWC=0 and with the default plan;
#  5. (ACCURACY=1) scripts/zoo_accuracy.py fp16 for the models.
#   BUDGET=450 scripts/dw_gpu_check.sh OUT [MODELS]
set -u
out=${1:?usage: dw_gpu_check.sh OUT [MODELS]}
models=${2:-efficientnet_b0,convnext_tiny,mobilenet_v3_large}
budget=${BUDGET:-450}
b=${KILNRT_GPU_BUILD:-build-gpu-dw}
prefix=${KILNRT_PREFIX:-$PWD/.deps/usr}
dir=/tmp/kilnrt_dw_probe
mkdir -p "$out" "$dir"
left() { local l=$((budget - SECONDS)); echo $((l > 1 ? l : 1)); }
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
  timeout "$(left)" cmake --build "$b" -j"$(nproc)" --target kilnrt_tests kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; echo "BUILD FAILED at ${SECONDS}s"; exit 1; }
echo "build ok at ${SECONDS}s"
mv "$out/build.log" "$dir/build.log"  # at most 8 files come back from the device
export PYTHONUNBUFFERED=1 PYTHONPATH=$b/python
pbatch=${PBATCH:-32}
timeout "$(left)" python3 bench/conv_engines.py --models "$models" --batch "$pbatch" --dir "$dir" >"$out/engines.log" 2>&1 &
engines=$!
t=$out/tests.log
for tx in 0 1 2 4 8; do
  KILNRT_CUDA_DW_TX=$tx timeout 60 "$b/tests/kilnrt_tests" --gtest_filter='CudaDepthwiseVec*' >>"$t" 2>&1
  echo "CudaDepthwiseVec TX=$tx rc=$?" | tee -a "$t"
done
timeout 90 "$b/tests/kilnrt_tests" --gtest_filter='CudaLayoutPlan*:CudaConvFusion*' >>"$t" 2>&1
echo "CudaLayoutPlan/CudaConvFusion rc=$? at ${SECONDS}s" | tee -a "$t"
grep -E "^\[  FAILED|Failure" "$t" | head -10
wait $engines
echo "engines rc=$? at ${SECONDS}s"
p=$out/profiles.txt
: >"$p"
for e in "$dir"/*.engine; do
  n=$(basename "$e" .engine)
  for cfg in ${CONFIGS:-"NHWC=0,VEC=1,TX=0" "NHWC=1,VEC=0,TX=0" "NHWC=1,VEC=1,TX=4" "NHWC=1,VEC=1,TX=2" "NHWC=1,VEC=1,TX=8"}; do
    [ "$(left)" -gt 150 ] || break
    IFS=, read -r c1 c2 c3 <<<"$cfg"
    set -- "$c1" "$c2" "$c3"
    echo "================ $n  $cfg" >>"$p"
    KILNRT_CUDA_NHWC=${1#NHWC=} KILNRT_CUDA_DW_VEC=${2#VEC=} KILNRT_CUDA_DW_TX=${3#TX=} timeout 40 "$b/kilnrt" \
      profile "$e" --batch "$pbatch" --iterations 20 --warmup 5 --top 1000 >>"$p" 2>&1
  done
done
echo "profiles done at ${SECONDS}s"
KILNRT_CUDA_NHWC=1 timeout 60 python3 scripts/dw_profile_summary.py "$p" "$dir" 2>&1 | tee "$out/summary.txt"
bench() {  # NAME, then env assignments
  local name=$1; shift
  env "$@" timeout "$(left)" python3 bench/bench_vs_torch.py --models "$models" --batches 1,32 --precisions fp16 \
    --no-compile --out "$out/bench_$name.md" >/dev/null 2>>"$out/bench.err"
  echo "bench $name rc=$? at ${SECONDS}s"; cut -d'|' -f2-6,11 "$out/bench_$name.md" 2>/dev/null | tail -n +3
  mv "$out/bench_$name.json" "$dir/" 2>/dev/null
}
bench nchw KILNRT_CUDA_NHWC=0
bench default KILNRT_CUDA_DW_TX=${DEFAULT_TX:-4}
if [ "${ACCURACY:-0}" = 1 ] && [ "$(left)" -gt 30 ]; then
  timeout "$(left)" python3 scripts/zoo_accuracy.py --models "$models" --precisions fp16 --out "$out/acc" \
    >"$out/accuracy.log" 2>&1
  echo "accuracy rc=$? at ${SECONDS}s"; tail -12 "$out/accuracy.log"
  mv "$out/acc/zoo_accuracy.json" "$dir/" 2>/dev/null
fi
