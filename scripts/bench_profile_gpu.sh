#!/bin/bash
# GPU check of `kilnrt bench` / `kilnrt profile`: builds the CLI and the C++ tests, runs the profiling
# tests, builds fp32 and fp16 CUDA engines of the bundled mobilenet_v3_small, benches and profiles them.
# usage: scripts/bench_profile_gpu.sh OUT_DIR [PREFIX_PATH]   (results: OUT_DIR/*.json, results.txt, gtest.log)
set -u
out=${1:?OUT_DIR}; prefix=${2:-}
b=build-gpu-cli
mkdir -p "$out"
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILNRT_BUILD_PYTHON=OFF ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} \
  -DKILNRT_CUDA_ARCHS=90 > /tmp/build.log 2>&1 &&
  cmake --build $b -j"$(nproc)" --target kilnrt_cli kilnrt_tests >> /tmp/build.log 2>&1 ||
  { tail -40 /tmp/build.log; exit 1; }
r="$out/results.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$r" 2>&1
$b/tests/kilnrt_tests --gtest_filter='BenchProfile*:CudaBackendEngine.GraphReplay*:CudaBackendEngine.CallerStream*' \
  > "$out/gtest.log" 2>&1; echo "gtest rc $?" >> "$r"
m=tests/fixtures/dynamo/mobilenet_v3_small.onnx
for p in fp32 fp16; do
  flag=""; [ $p = fp16 ] && flag=--fp16
  $b/kilnrt build $m -o /tmp/mb_$p.engine --device cuda $flag --shapes x:1x3x224x224/8x3x224x224/32x3x224x224 >> "$r" 2>&1
  for bs in 1 32; do
    echo "=== bench $p batch $bs" >> "$r"
    $b/kilnrt bench /tmp/mb_$p.engine --batch $bs --iterations 300 --warmup 20 --device-memory \
      --json "$out/bench_${p}_b$bs.json" >> "$r" 2>/dev/null
    echo "=== bench $p batch $bs --no-transfers" >> "$r"
    $b/kilnrt bench /tmp/mb_$p.engine --batch $bs --iterations 300 --warmup 20 --no-transfers --json /tmp/nt.json \
      >> "$r" 2>/dev/null
    cat /tmp/nt.json >> "$r"
  done
  echo "=== profile $p batch 32" >> "$r"
  $b/kilnrt profile /tmp/mb_$p.engine --batch 32 --iterations 50 --top 15 --trace "$out/trace_${p}_b32.json" \
    >> "$r" 2>/dev/null
  echo "=== profile $p batch 1" >> "$r"
  $b/kilnrt profile /tmp/mb_$p.engine --batch 1 --iterations 50 --top 8 >> "$r" 2>/dev/null
done
grep -E "PASSED|FAILED|SKIPPED|tests ran" "$out/gtest.log" | head -20
grep -E "^=== |^  total|^  compute|^  h2d|^  d2h|throughput|sum of layer|profiled run|whole engine|memory:" "$r"
