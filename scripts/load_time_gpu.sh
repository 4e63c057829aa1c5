#!/usr/bin/env bash
# Engine load time on the GPU machine, in one command: build (CUDA + Python), the device-weights / engine
# file tests and a few CUDA engine tests, bench/load_time.py on the six zoo models (fp16; fp32 for two), and a quick
# zoo accuracy check of two models. Each stage has its own time limit so that a slow one leaves the others' logs.
#   scripts/load_time_gpu.sh OUT_DIR [SRC_TAR]
# SRC_TAR: a `git archive` of the commit to measure, built instead of the working tree (uncommitted changes in
# the checkout then cannot break the build). Logs and tables go to OUT_DIR (8 files at most); a summary is printed at
# the end.
set -u
out=${1:?usage: scripts/load_time_gpu.sh OUT_DIR [SRC_TAR]}
mkdir -p "$out"
root=$PWD
if [ -n "${2:-}" ]; then
  src=/tmp/kilnrt-src
  rm -rf "$src" && mkdir -p "$src" && tar -xf "$2" -C "$src"
  for d in .deps .wheels; do [ -e "$root/$d" ] && ln -sfn "$root/$d" "$src/$d"; done
  cd "$src"
fi
py=$(command -v python3)
b=build-gpu-speed
summary=()
budget=${KILNRT_STAGE_BUDGET:-450}  # seconds for all stages (the GPU machine's per-command limit, less a margin)
stage() {  # stage NAME SECONDS LOG -- command...   (SECONDS capped by what is left of the budget)
  local name=$1 secs=$2 log=$3
  shift 4
  local left=$((budget - SECONDS))
  [ "$left" -lt "$secs" ] && secs=$left
  [ "$secs" -le 5 ] && { summary+=("$name: skipped (time budget spent)"); return 124; }
  local t0=$SECONDS
  timeout "$secs" "$@" >"$log" 2>&1
  local rc=$?
  summary+=("$name: rc=$rc in $((SECONDS - t0)) s")
  return $rc
}

stage build 170 "$out/build.log" -- bash -c "cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKILNRT_BUILD_PYTHON=ON -DPython_EXECUTABLE=$py -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DCMAKE_CUDA_ARCHITECTURES=90 \
  && cmake --build $b -j16" || { tail -40 "$out/build.log"; printf '%s\n' "${summary[@]}"; exit 1; }

t=$b/tests/kilnrt_tests; [ -x "$t" ] || t=$b/kilnrt_tests
stage gtest 50 "$out/gtest.log" -- "$t" --gtest_filter='DeviceWeight*:EngineFile*:Crc32c*:BenchProfile.Cuda*'

export PYTHONPATH="$PWD/$b/python${PYTHONPATH:+:$PYTHONPATH}"
if ! "$py" -c "import transformers" >/dev/null 2>&1 && ls .wheels/*.whl >/dev/null 2>&1; then
  "$py" -m pip install --no-index --no-deps --target /tmp/kilnrt-pydeps .wheels/*.whl >/tmp/kilnrt-pydeps.log 2>&1
  export PYTHONPATH="$PYTHONPATH:/tmp/kilnrt-pydeps"
fi
KILNRT_LOG_LEVEL=info stage load16 150 "$out/load_fp16.log" -- "$py" bench/load_time.py --precisions fp16 \
  --out "$out/load_fp16.md"
stage zoo 100 "$out/zoo.log" -- "$py" scripts/zoo_accuracy.py --out /tmp/kilnrt-zoo --models resnet50,efficientnet_b0 \
  --precisions fp32,fp16
cp /tmp/kilnrt-zoo/zoo_accuracy.md "$out/" 2>/dev/null
stage gtest-cuda 60 "$out/gtest_cuda.log" -- "$t" \
  --gtest_filter='CudaEngineFeatures*:CudaBackendEngine*:CudaGraph*:CudaConvFusion*:CudaLayoutPlan*'
stage load32 40 /tmp/kilnrt-load_fp32.log -- "$py" bench/load_time.py --models resnet50 --precisions fp32 \
  --out "$out/load_fp32.md"

echo "==== summary"
printf '%s\n' "${summary[@]}"
grep -hE "^\[  (PASSED|FAILED|  SKIPPED) |^\[  FAILED  \]|tests ran" "$out/gtest.log" "$out/gtest_cuda.log" | head -30
cat "$out/load_fp16.md" "$out/load_fp32.md" 2>/dev/null
grep -E "engine load|device weights:" "$out/load_fp16.log" | head -40
grep -E "^zoo accuracy" "$out/zoo.log" | tail -2
