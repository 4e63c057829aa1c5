#!/usr/bin/env bash
# Sanitizer stage (called by scripts/test.sh; runnable on its own): builds the C++ library + GoogleTest suite with
# AddressSanitizer + UndefinedBehaviorSanitizer (KILNRT_SANITIZE=ON, CUDA / Python / CLI off) in its own tree and runs
# the suite. Any ASan / LeakSanitizer / UBSan report fails it (non-zero exit). The suite includes the failure-injection
# tests (tests/cpp/test_failure_injection.cc: every host allocation of build / load / inference made to fail once), so
# LeakSanitizer checks that no failure path leaks.
#   KILNRT_ASAN_BUILD_DIR  build tree (default: <repo>/build-asan)
# Built at -O1 (sanitizer-friendly and much quicker to compile on 2 cores than the default -O3).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

KILNRT_ASAN_BUILD_DIR="${KILNRT_ASAN_BUILD_DIR:-$KILNRT_ROOT/build-asan}"

kilnrt_log "sanitizer build (ASan + UBSan, CUDA off) in $KILNRT_ASAN_BUILD_DIR"
start=$SECONDS
cmake -S "$KILNRT_ROOT" -B "$KILNRT_ASAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DKILNRT_SANITIZE=ON -DKILNRT_WITH_CUDA=OFF -DKILNRT_BUILD_PYTHON=OFF -DKILNRT_BUILD_CLI=OFF || exit 1
cmake --build "$KILNRT_ASAN_BUILD_DIR" -j "$KILNRT_JOBS" || exit 1
kilnrt_log "sanitizer build took $((SECONDS - start)) s"

kilnrt_log "C++ suite under ASan + UBSan ($KILNRT_ASAN_BUILD_DIR/tests/kilnrt_tests)"
start=$SECONDS
# LeakSanitizer suppressions may only name third-party libraries (OpenBLAS / libgomp thread pools), never kilnrt.
lsan_supp="$KILNRT_ROOT/tests/sanitizers/lsan.supp"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
if [ -f "$lsan_supp" ]; then export LSAN_OPTIONS="suppressions=$lsan_supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"; fi
"$KILNRT_ASAN_BUILD_DIR/tests/kilnrt_tests"
rc=$?
kilnrt_log "sanitizer run took $((SECONDS - start)) s (exit $rc)"
if [ "$rc" != 0 ]; then kilnrt_log "SANITIZER STAGE FAILED (a test failed or ASan / LSan / UBSan reported; see above)"; fi
exit $rc
