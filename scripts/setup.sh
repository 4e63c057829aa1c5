#!/usr/bin/env bash
# The main job: installs what is missing (apt + venv + pip), builds kilnrt, then builds an engine from the bundled
# model (tests/fixtures/dynamo/mobilenet_v3_small.onnx) for the GPU if one works, else the CPU, and runs it,
# printing the outputs and the time. Extra arguments go to the CMake configure step.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kilnrt_ensure_apt
kilnrt_ensure_venv
kilnrt_build "$@"
kilnrt_use_build_tree

kilnrt_log "kilnrt doctor"
"$KILNRT_CLI" doctor

device=cpu
if "$KILNRT_PY" -c 'import sys, kilnrt; sys.exit(0 if kilnrt.cuda_available() else 1)'; then device=cuda; fi
model="$KILNRT_ROOT/tests/fixtures/dynamo/mobilenet_v3_small.onnx"
engine="$KILNRT_BUILD_DIR/mobilenet_v3_small.$device.engine"

kilnrt_log "building an engine for $device from $model"
"$KILNRT_CLI" build "$model" -o "$engine" --device "$device" --shapes x:1x3x224x224/2x3x224x224/32x3x224x224
"$KILNRT_CLI" inspect "$engine" > "$engine.txt"
head -n 16 "$engine.txt"
echo "  ... (full description in $engine.txt)"

kilnrt_log "running it on the bundled input (batch 2)"
"$KILNRT_CLI" run "$engine" --input "x=$KILNRT_ROOT/tests/fixtures/dynamo/mobilenet_v3_small.input.npy" \
  --iterations 10 --save-outputs "$KILNRT_BUILD_DIR/main_job_outputs"
"$KILNRT_PY" - "$KILNRT_BUILD_DIR/main_job_outputs/y.npy" "$KILNRT_ROOT/tests/fixtures/dynamo/mobilenet_v3_small.expected.npy" <<'PY'
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got - want).max()) / float(np.abs(want).max())
print("max abs error vs torch, relative to the output's max magnitude: %.3g" % err)
PY
echo
echo "Done. The CLI is $KILNRT_CLI; for Python: PYTHONPATH=$KILNRT_BUILD_DIR/python $KILNRT_PY"
