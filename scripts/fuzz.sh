#!/usr/bin/env bash
# Fuzzing (fuzz/README.md): builds the libFuzzer harnesses (clang, libFuzzer + ASan + UBSan, CUDA off) in their own
# tree, writes the seed corpora (fuzz/make_seed_corpus.py: ONNX node-test models + CPU engines built from them) and
# runs each fuzzer for a while. Any crash, sanitizer report, leak, out-of-memory or timeout fails (exit 1); the input
# that triggered it is saved as <work dir>/<fuzzer>-crash-* (or -leak-, -oom-, -timeout-).
#   KILNRT_FUZZ_SECONDS    seconds per fuzzer (default 60; CI's short stage)
#   KILNRT_FUZZ_TARGETS    which fuzzers (default "engine_file onnx_build")
#   KILNRT_FUZZ_BUILD_DIR  build tree (default <repo>/build-fuzz)
#   KILNRT_FUZZ_WORK_DIR   corpora + artifacts (default <build tree>/fuzz-work); the corpora grow across runs
#   KILNRT_FUZZ_JOBS       build jobs (default KILNRT_JOBS)
#   KILNRT_FUZZ_STRICT     1: a finding of the timed exploration fails the stage (default 0: reported, not gating;
#                          the replay of seeds + tests/fixtures/fuzz/<target> regression inputs always gates)
#   KILNRT_FUZZ_SEED       libFuzzer -seed (default 1: the same mutation sequence on every run, so CI's short stage
#                          does not fail at random on a finding only another seed reaches; 0 = random, for long runs)
# Longer runs: KILNRT_FUZZ_SECONDS=3600 scripts/fuzz.sh, or run the binaries directly (fuzz/README.md).
# Cost on CI's 2 cores: the instrumented build of the library dominates (several minutes from scratch, seconds with a
# warm ccache); seeds ~20 s; then KILNRT_FUZZ_SECONDS per fuzzer.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BUILD="${KILNRT_FUZZ_BUILD_DIR:-$KILNRT_ROOT/build-fuzz}"
WORK="${KILNRT_FUZZ_WORK_DIR:-$BUILD/fuzz-work}"
SECONDS_EACH="${KILNRT_FUZZ_SECONDS:-60}"
TARGETS="${KILNRT_FUZZ_TARGETS:-engine_file onnx_build}"
SEED="${KILNRT_FUZZ_SEED:-1}"
CXX_FUZZ="$(command -v clang++-14 || command -v clang++ || true)"
CC_FUZZ="$(command -v clang-14 || command -v clang || true)"
if [ -z "$CXX_FUZZ" ]; then
  echo "fuzz stage: clang++ not found (apt-get install clang-14 libclang-rt-14-dev), or skip with KILNRT_SKIP_FUZZ=1" >&2
  exit 1
fi

kilnrt_log "fuzz build (clang, libFuzzer + ASan + UBSan, CUDA off) in $BUILD"
start=$SECONDS
CC="$CC_FUZZ" CXX="$CXX_FUZZ" cmake -S "$KILNRT_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG -gline-tables-only" -DKILNRT_FUZZ=ON -DKILNRT_WITH_CUDA=OFF -DKILNRT_BUILD_PYTHON=OFF \
  -DKILNRT_BUILD_TESTS=OFF >/dev/null || exit 1
cmake --build "$BUILD" -j "${KILNRT_FUZZ_JOBS:-$KILNRT_JOBS}" --target engine_file_fuzzer onnx_build_fuzzer kilnrt_cli || exit 1
kilnrt_log "fuzz build took $((SECONDS - start)) s"

mkdir -p "$WORK"
if [ ! -d "$WORK/seeds/engine" ] || [ -z "$(ls -A "$WORK/seeds/engine" 2>/dev/null)" ]; then
  kilnrt_log "seed corpora -> $WORK/seeds"
  "$KILNRT_PY" "$KILNRT_ROOT/fuzz/make_seed_corpus.py" --out "$WORK/seeds" --cli "$BUILD/kilnrt" \
    --max-engines "${KILNRT_FUZZ_MAX_SEED_ENGINES:-150}" || exit 1
fi

# The leak check stays on (-detect_leaks=1); OpenBLAS / libgomp thread pools are suppressed like in sanitize.sh.
lsan_supp="$KILNRT_ROOT/tests/sanitizers/lsan.supp"
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
if [ -f "$lsan_supp" ]; then export LSAN_OPTIONS="suppressions=$lsan_supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"; fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

status=0
for t in $TARGETS; do
  case "$t" in
    engine_file) seeds="$WORK/seeds/engine"; max_len=65536 ;;
    onnx_build) seeds="$WORK/seeds/onnx"; max_len=32768 ;;
    *) echo "unknown fuzz target '$t'" >&2; exit 1 ;;
  esac
  corpus="$WORK/corpus-$t"
  mkdir -p "$corpus"
  # 1. Gate: every seed (ONNX node-test models / engines) and every committed regression input replayed once: a crash,
  #    sanitizer report or leak here is a bug in code that real inputs reach, and fails the stage.
  regress="$KILNRT_ROOT/tests/fixtures/fuzz/$t"
  kilnrt_log "replaying the $t seeds${regress:+ and regression inputs} (gate)"
  "$BUILD/fuzz/${t}_fuzzer" -runs=0 -max_len="$max_len" -timeout=20 -rss_limit_mb=3072 \
    -artifact_prefix="$WORK/$t-replay-" "$seeds" $( [ -d "$regress" ] && echo "$regress" ) 2>&1 | tail -n 5
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    kilnrt_log "FUZZER $t FAILED on a seed / regression input (exit $rc): see $WORK"
    status=1
    continue
  fi
  # 2. Exploration for SECONDS_EACH (fixed seed). A finding fails only with KILNRT_FUZZ_STRICT=1 (long runs,
  #    fuzz/README.md); by default it is reported with its artifact, so that a short CI run cannot block every change
  #    on whatever new input the mutator happens to reach. Findings get fixed with a regression test.
  kilnrt_log "fuzzing $t for $SECONDS_EACH s (corpus $corpus, seeds $seeds, seed $SEED)"
  "$BUILD/fuzz/${t}_fuzzer" "$corpus" "$seeds" -max_total_time="$SECONDS_EACH" -max_len="$max_len" -timeout=20 \
    -seed="$SEED" -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$WORK/$t-" 2>&1 | tail -n 25
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    if [ "${KILNRT_FUZZ_STRICT:-0}" = 1 ]; then
      kilnrt_log "FUZZER $t FAILED (exit $rc): reproduce with $BUILD/fuzz/${t}_fuzzer <artifact> (see $WORK)"
      status=1
    else
      kilnrt_log "FUZZ FINDING in $t (exit $rc, not gating; KILNRT_FUZZ_STRICT=1 makes it fail): reproduce with" \
        "$BUILD/fuzz/${t}_fuzzer <artifact>: $(ls "$WORK/$t"-crash-* "$WORK/$t"-leak-* "$WORK/$t"-timeout-* \
        "$WORK/$t"-oom-* 2>/dev/null | tr '\n' ' ')"
    fi
  fi
done
exit $status
