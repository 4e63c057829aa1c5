#!/usr/bin/env bash
# Per-layer speed probe, in one command: builds (if needed), exports the zoo models given, builds static
# fp16 engines at one batch size (bench/conv_engines.py) and runs `kilnrt profile` on each — for CNNs once with the
# default NCHW plan and once with KILNRT_CUDA_NHWC=1. Everything goes into OUT/profiles.txt (+ build/engines logs).
#   scripts/gpu_speed_probe.sh OUT [MODELS]     (MODELS: zoo names, default resnet50,convnext_tiny,vit_b_16,bert)
# Environment: KILNRT_GPU_BUILD (build-gpu), KILNRT_PREFIX ($PWD/.deps/usr), KILNRT_PROBE_BATCH (32).
set -u
out=${1:?usage: scripts/gpu_speed_probe.sh OUT [MODELS]}
models=${2:-resnet50,convnext_tiny,vit_b_16,bert}
batch=${KILNRT_PROBE_BATCH:-32}
b=${KILNRT_GPU_BUILD:-build-gpu}
prefix=${KILNRT_PREFIX:-$PWD/.deps/usr}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$b/python
if [ ! -x "$b/kilnrt" ]; then
  cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
    cmake --build "$b" -j"$(nproc)" --target kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 ||
    cmake --build "$b" -j"$(nproc)" >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
echo "build ok at ${SECONDS}s"
dir=/tmp/kilnrt_probe
python3 bench/conv_engines.py --models "$models" --batch "$batch" --dir "$dir" >"$out/engines.log" 2>&1
echo "engines rc=$? at ${SECONDS}s"
p="$out/profiles.txt"
: >"$p"
for e in "$dir"/*.engine; do
  n=$(basename "$e" .engine)
  modes="0"
  case "$n" in vit*|bert*) ;; *) modes="0 1" ;; esac
  for nhwc in $modes; do
    echo "================ $n  KILNRT_CUDA_NHWC=$nhwc" >>"$p"
    KILNRT_CUDA_NHWC=$nhwc timeout 90 "$b/kilnrt" profile "$e" --batch "$batch" --iterations 20 --warmup 5 --top 30 \
      >>"$p" 2>&1
    echo "rc=$?" >>"$p"
  done
done
grep -E "^=====|whole engine|sum of layer|^rc=[1-9]" "$p"
