#!/usr/bin/env bash
# kilnrt GPU suite (issue 4): build, C++ GPU tests, the CUDA stress test, the Python coexistence suite and
# compute-sanitizer memcheck on a subset of the C++ CUDA tests. Logs and summary.md go to OUT_DIR.
#
#   scripts/gpu_suite.sh OUT_DIR
#
# Environment (all optional):
#   KILNRT_GPU_BUILD       build directory (build-gpu)
#   KILNRT_PREFIX          CMAKE_PREFIX_PATH for the configure (default: $PWD/.deps/usr when it exists, else /usr)
#   KILNRT_SUITE_STAGES    stages to run, in this order (default "build gtest stress coexistence memcheck")
#   KILNRT_SUITE_DEADLINE  seconds for the whole suite; later stages get what is left (default: none)
#   KILNRT_MEMCHECK_FILTER gtest filter for memcheck (default 'CudaBackend*:Dynamo*')
# Each stage runs under `timeout` (10 minutes at most) so that a hang fails the stage instead of the box.
# Exit status: 0 when every stage that ran passed.
set -uo pipefail
out=${1:?usage: scripts/gpu_suite.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=passive
py=$(command -v python3)
b=${KILNRT_GPU_BUILD:-build-gpu}
prefix=${KILNRT_PREFIX:-}
[ -z "$prefix" ] && { [ -d "$PWD/.deps/usr" ] && prefix=$PWD/.deps/usr || prefix=/usr; }
stages=${KILNRT_SUITE_STAGES:-build gtest stress coexistence memcheck}
deadline=${KILNRT_SUITE_DEADLINE:-0}
filter=${KILNRT_MEMCHECK_FILTER:-CudaBackend*:Dynamo*}
start=$(date +%s)
summary=$out/summary.md
rows=()
failed=0

# limit STAGE_MAX: seconds a stage may take (<= 600, <= what the deadline leaves).
limit() {
  local max=$1
  [ "$max" -gt 600 ] && max=600
  if [ "$deadline" -gt 0 ]; then
    local left=$(( deadline - ($(date +%s) - start) - 5 ))
    [ "$left" -lt "$max" ] && max=$left
  fi
  echo "$max"
}

# stage NAME MAX_SECONDS LOG -- command...
stage() {
  local name=$1 max lim=$2 log=$3
  shift 4
  max=$(limit "$lim")
  if [ "$max" -le 10 ]; then
    STAGE_RC=1 STAGE_LOG=$log STAGE_NOTE="no time left before the suite's deadline" STAGE_VERDICT="NOT RUN" STAGE_DT=0
    echo "== $name: not run (deadline)"; failed=1; return 1
  fi
  echo "== $name (limit ${max}s) -> $log"
  local t0 rc; t0=$(date +%s)
  timeout --kill-after=10 "$max" "$@" >"$log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 )) verdict=PASS note=""
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict=FAIL; note="timed out after ${max}s (hang?)"
  elif [ $rc -ne 0 ]; then verdict=FAIL; note="exit status $rc"; fi
  [ $verdict = FAIL ] && failed=1
  STAGE_RC=$rc STAGE_LOG=$log STAGE_NOTE=$note STAGE_VERDICT=$verdict STAGE_DT=$dt
  echo "   $verdict in ${dt}s $note"
  return $rc
}

add_row() {  # add_row NAME DETAIL
  rows+=("| $1 | $STAGE_VERDICT | ${STAGE_DT} s | ${STAGE_NOTE:+$STAGE_NOTE; }$2 |")
}

gtest_counts() {  # one line from a gtest log: passed / failed / skipped counts
  local log=$1
  local p f s
  p=$(grep -E '^\[  PASSED  \]' "$log" | tail -1 | grep -oE '[0-9]+ test' | head -1)
  f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$log" | tail -1 | grep -oE '[0-9]+ test' | head -1)
  s=$(grep -E '^\[  SKIPPED \] [0-9]+ test' "$log" | tail -1 | grep -oE '[0-9]+ test' | head -1)
  echo "passed ${p:-0 test}s, failed ${f:-0 test}s, skipped ${s:-0 test}s" | sed 's/tests*s/tests/g'
  grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/^\[  FAILED  \] /failed: /' | head -5 | tr '\n' ' '
}

for st in $stages; do
  case $st in
    build)
      stage build 600 "$out/build.log" -- bash -c "cmake -S . -B '$b' -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH='$prefix' -DPython_EXECUTABLE='$py' && cmake --build '$b' -j$(nproc)"
      add_row build "$(grep -cE '^\[[0-9]+/[0-9]+\]' "$out/build.log") build steps; $(tail -1 "$out/build.log" | cut -c1-120)"
      [ "$STAGE_VERDICT" = FAIL ] && { tail -30 "$out/build.log"; break; }
      ;;
    gtest)
      stage gtest 600 "$out/gtest.log" -- "$b/tests/kilnrt_tests" --gtest_filter='-CudaStress.*'
      add_row "C++ tests (kilnrt_tests, all but stress)" "$(gtest_counts "$out/gtest.log")"
      ;;
    stress)
      stage stress 300 "$out/stress.log" -- "$b/tests/kilnrt_tests" --gtest_filter='CudaStress.*'
      add_row "stress (16 threads x 1000 runs)" "$(gtest_counts "$out/stress.log"); $(grep -E 'runs in|free device memory|SKIPPED.*GPU|no usable' "$out/stress.log" | sed 's/^ *//' | tr '\n' ' ' | cut -c1-400)"
      ;;
    coexistence)
      stage coexistence 600 "$out/coexistence.log" -- "$py" tests/gpu/run_coexistence.py --build "$b" \
        --out "$out/coexistence" --timeout 150
      add_row "Python coexistence suite" "$(tail -1 "$out/coexistence.log" | cut -c1-200) (table: coexistence/coexistence.md)"
      ;;
    memcheck)
      if ! command -v compute-sanitizer >/dev/null; then
        rows+=("| compute-sanitizer memcheck | SKIP | 0 s | compute-sanitizer not found |"); continue
      fi
      stage memcheck 600 "$out/memcheck.log" -- compute-sanitizer --tool memcheck --error-exitcode 99 \
        --print-limit 50 "$b/tests/kilnrt_tests" --gtest_filter="$filter"
      add_row "compute-sanitizer memcheck ($filter)" "$(gtest_counts "$out/memcheck.log"); $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)"
      ;;
    *) echo "unknown stage $st"; failed=1 ;;
  esac
done

{
  echo "# kilnrt GPU suite"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+local changes'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo
  echo "| stage | result | time | details |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [ -f "$out/coexistence/coexistence.md" ]; then echo; sed 1d "$out/coexistence/coexistence.md"; fi
} >"$summary"
cat "$summary"
exit $failed
