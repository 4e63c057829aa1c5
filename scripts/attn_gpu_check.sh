#!/usr/bin/env bash
# GPU check of the transformer fusions, in one command: builds the CLI + Python module, then the test
# binary and the GPU tests (CudaAttention*, Dynamo*, CudaBackendOps* + the CPU fusion tests) while the zoo models are
# exported and their static fp16 engines built (bench/conv_engines.py, as scripts/gpu_speed_probe.sh does), then
# `kilnrt profile` of each engine with the GPU otherwise idle (same arguments as gpu_speed_probe.sh), then the op
# counts of the exported ONNX graphs. Logs in OUT: build.log tests.log engines.log profiles.txt onnx_ops.txt.
#   scripts/attn_gpu_check.sh OUT [MODELS]      (MODELS default bert,vit_b_16; env KILNRT_GPU_BUILD, KILNRT_PREFIX)
set -u
out=${1:?usage: scripts/attn_gpu_check.sh OUT [MODELS]}
models=${2:-bert,vit_b_16}
b=${KILNRT_GPU_BUILD:-build-gpu-attn}
prefix=${KILNRT_PREFIX:-$PWD/.deps/usr}
batch=32
dir=/tmp/kilnrt_probe_attn
mkdir -p "$out" "$dir"
export PYTHONUNBUFFERED=1 PYTHONPATH=$b/python
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 &&
  cmake --build "$b" -j16 --target kilnrt_cli _kilnrt >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "cli+python built at ${SECONDS}s"
(
  cmake --build "$b" -j12 --target kilnrt_tests >>"$out/build.log" 2>&1 || { echo "test build FAILED"; exit 1; }
  echo "tests built at ${SECONDS}s"
  timeout 90 "$b/tests/kilnrt_tests" --gtest_filter='CudaAttention*:Dynamo*:CudaBackendOps*:AttentionFusion*:GemmEpilogueFusion*' \
    >"$out/tests.log" 2>&1
  echo "tests rc=$? at ${SECONDS}s"
) >"$out/tests_status.txt" 2>&1 &
tests_pid=$!
python3 bench/conv_engines.py --models "$models" --batch "$batch" --dir "$dir" >"$out/engines.log" 2>&1
echo "engines rc=$? at ${SECONDS}s"
wait "$tests_pid"
cat "$out/tests_status.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/tests.log" | head -20
p="$out/profiles.txt"
: >"$p"
for e in "$dir"/*.engine; do
  echo "================ $(basename "$e" .engine)" >>"$p"
  timeout 60 "$b/kilnrt" profile "$e" --batch "$batch" --iterations 20 --warmup 5 --top 30 >>"$p" 2>&1
  echo "rc=$?" >>"$p"
done
grep -E "^=====|whole engine|sum of layer|^rc=[1-9]" "$p"
grep -E "^ENGINE|^ +[0-9]+ " "$out/engines.log"
python3 - "$dir" >"$out/onnx_ops.txt" 2>&1 <<'PY'
import collections, glob, sys
import onnx
for f in sorted(glob.glob(sys.argv[1] + "/*.onnx")):
    m = onnx.load(f, load_external_data=False)
    c = collections.Counter(n.op_type for n in m.graph.node)
    print(f, "opset", [(o.domain, o.version) for o in m.opset_import])
    print("  ", dict(c.most_common()))
    nodes = list(m.graph.node)
    for i, n in enumerate(nodes):  # the first attention block's neighbourhood
        if n.op_type == "Softmax":
            for x in nodes[max(0, i - 25):i + 12]:
                print("   %-10s %s -> %s" % (x.op_type, list(x.input), list(x.output)))
            break
PY
echo "done at ${SECONDS}s"
