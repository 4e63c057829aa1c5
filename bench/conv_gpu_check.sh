#!/usr/bin/env bash
# GPU check of the fused convolutions, in one command: build, fused-conv GPU tests, bench vs torch, per-layer
# profile of resnet50 b32 fp16. Logs under $OUT; a short summary on stdout. Each stage is skipped when the time
# budget (BUDGET s) is nearly spent. Usage: OUT=dir BUDGET=280 [KILNRT_CUDA_NHWC=1] bench/conv_gpu_check.sh [bench models]
set -u
B=build-gpu-conv
BUDGET=${BUDGET:-280}
MODELS=${1:-resnet50,mobilenet_v3_large}
left() { echo $((BUDGET - SECONDS)); }
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILNRT_BUILD_PYTHON=ON -DCMAKE_PREFIX_PATH=$PWD/.deps/usr \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 && cmake --build $B -j16 -- -k 0 >>"$OUT/build.log" 2>&1
echo "build rc=$? at ${SECONDS}s"; grep -E "error|FAILED" "$OUT/build.log" | head -5
if [ -x $B/tests/kilnrt_tests ]; then
  timeout $(( $(left) > 70 ? 60 : 20 )) $B/tests/kilnrt_tests \
    --gtest_filter='CudaConvFusion*:CudaLayoutPlan*:ConvBnFold*:ConvEpilogueFusion*:FusedConvOp*:*CudaFixture*:CudaBackendPrecision*' \
    >"$OUT/tests.log" 2>&1
  echo "tests rc=$? at ${SECONDS}s"
  grep -E "^\[  PASSED|^\[  FAILED|^\[  SKIPPED \] [0-9]|Failure$" "$OUT/tests.log" | head -12
fi
export PYTHONPATH=$B/python
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 45 )) python3 bench/bench_vs_torch.py --models "$MODELS" --batches 1,32 --precisions fp16 \
    --no-compile --out "$OUT/bench.md" >"$OUT/bench.log" 2>&1
  echo "bench rc=$? at ${SECONDS}s"; grep "^| " "$OUT/bench.md" 2>/dev/null | cut -d'|' -f2-9
fi
if [ "$(left)" -gt 30 ]; then
  timeout $(( $(left) - 5 )) sh -c "python3 bench/conv_engines.py --models resnet50 --batch 32 --dir /tmp/conv_e \
    >'$OUT/engines.log' 2>&1 && $B/kilnrt profile /tmp/conv_e/resnet50.fp16.b32.engine --top 20 >'$OUT/profile.txt' 2>&1"
  echo "profile rc=$? at ${SECONDS}s"; head -12 "$OUT/engines.log" | grep -v Warning; head -30 "$OUT/profile.txt"
fi
