#!/usr/bin/env bash
# GPU check of CUDA If / Loop / Scan: builds kilnrt_tests + CLI + Python module, runs the control-flow
# gtests (+ the segmented-runner ones), compute-sanitizer memcheck on them, and the control-flow ONNX conformance
# cases on cuda vs cpu (and as --fp16 engines: log appended to conf_compare.txt). Logs to $1 (default $OUT). When
# kilnrt_tests does not link (another test file does not compile), a test binary of the control-flow / segmented test
# files alone is linked instead.
set -u
out=${1:-$OUT}; mkdir -p "$out"
b=build-gpu-ctrl; py=$(command -v python3)
filter='CudaControlFlow*:CudaDataDependent*:CudaSegments*:ControlFlowTypes*:CudaIsland*'
cases='^test_(if|loop|scan|range_.*expanded|linear_attention)'
t0=$(date +%s)
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython_EXECUTABLE=$py > "$out/build.log" 2>&1
timeout 200 ninja -C $b -k 0 kilnrt_cli _kilnrt tests/kilnrt_tests >> "$out/build.log" 2>&1
echo "build rc $? after $(( $(date +%s) - t0 )) s"; grep -E '^FAILED' "$out/build.log" | head -5
tests=$b/tests/kilnrt_tests
if [ ! -x "$tests" ] || grep -q 'FAILED: tests/kilnrt_tests' "$out/build.log"; then
  objs="cpp/test_cuda_control_flow.cc.o cpp/test_cuda_segments.cc.o cpp/test_control_flow_types.cc.o"
  ninja -C $b -t commands tests/kilnrt_tests | tail -1 | OBJS="$objs" "$py" -c "
import os, sys
keep = os.environ['OBJS'].split()
cmd = [c for c in sys.stdin.read().split(' && ') if '-o tests/kilnrt_tests' in c][0].split()
print(' '.join(x for x in cmd if not x.endswith('.cc.o') or any(x.endswith(k) for k in keep)).replace('tests/kilnrt_tests', 'tests/ctrl_tests'))" > /tmp/ctrl_link.sh
  ( cd $b && bash /tmp/ctrl_link.sh ) >> "$out/build.log" 2>&1
  tests=$b/tests/ctrl_tests; echo "fallback test binary: $tests"
fi
timeout 40 $tests --gtest_filter="$filter" > "$out/gtest.log" 2>&1; echo "gtest rc $?"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gtest.log" | head -12
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 $tests --gtest_filter='CudaControlFlow*' > "$out/memcheck.log" 2>&1
echo "memcheck rc $?"; grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/memcheck.log" | head -4
export PYTHONPATH=$PWD/$b/python
timeout 100 $py tests/conformance/run_conformance.py --device cuda --save-cases /tmp/ctrl-cases --filter "$cases" \
  --jobs 16 --json "$out/conf_cuda.json" > "$out/conf_cuda.log" 2>&1; echo "conf cuda rc $?"
timeout 40 $py tests/conformance/run_conformance.py --device cpu --cases /tmp/ctrl-cases --filter "$cases" \
  --jobs 16 --json "$out/conf_cpu.json" > "$out/conf_cpu.log" 2>&1; echo "conf cpu rc $?"
timeout 60 $py tests/conformance/run_conformance.py --device cuda --precision fp16 --cases /tmp/ctrl-cases \
  --filter "$cases" --jobs 16 > /tmp/ctrl_conf_fp16.log 2>&1; echo "conf fp16 rc $? (16-bit engines refuse control flow)"
grep -E '^passed [0-9]+ / failed' "$out/conf_cuda.log" "$out/conf_cpu.log" /tmp/ctrl_conf_fp16.log
$py scripts/conformance_cpu_vs_cuda.py "$out/conf_cpu.json" "$out/conf_cuda.json" > "$out/conf_compare.txt" 2>&1
{ echo; echo "--- --precision fp16 (at most 8 files come back: appended here)"; cat /tmp/ctrl_conf_fp16.log; } >> "$out/conf_compare.txt"
head -c 3500 "$out/conf_compare.txt"; echo; echo "total $(( $(date +%s) - t0 )) s"
