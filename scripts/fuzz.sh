#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan; preset fuzz) and runs each for SECONDS
# (default 15) on its committed corpus fuzz/corpus/<harness>/, one after another.
#
#   scripts/fuzz.sh [SECONDS] [--no-build] [--merge] [HARNESS...]
#
# New interesting inputs go to build/fuzz/corpus/<harness>/ (not committed); --merge minimises
# them together with the committed corpus back into fuzz/corpus/<harness>/. A crash, sanitizer
# report, leak, timeout or an exception that is not a tapeflow::Error stops the script with a
# non-zero exit; the input is saved as build/fuzz/artifacts/<harness>-crash-<sha1>
# (reproduce: build/fuzz/fuzz/<harness> <file>). A harness with a dictionary fuzz/dict/<harness>.dict
# (byte sequences of fuzz/fuzz_input.h's encoding, such as a huge pooling window) gets it as
# -dict=. Results: docs/RELIABILITY.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=15
build=1
merge=0
harnesses=()
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    --merge) merge=1 ;;
    [0-9]*) seconds="$a" ;;
    *) harnesses+=("$a") ;;
  esac
done
if ((build)); then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake --preset fuzz -DTAPEFLOW_BUILD_TESTS=OFF -DTAPEFLOW_BUILD_EXAMPLES=OFF "${launcher[@]}" >/dev/null
  cmake --build --preset fuzz -j"$(nproc)" --target tapeflow_fuzzers
fi
if ((${#harnesses[@]} == 0)); then
  for src in fuzz/fuzz_*.cpp; do
    name="$(basename "$src" .cpp)"
    [ "$name" = fuzz_input ] || harnesses+=("$name")
  done
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
mkdir -p build/fuzz/artifacts
for h in "${harnesses[@]}"; do
  corpus="fuzz/corpus/$h"
  scratch="build/fuzz/corpus/$h"
  mkdir -p "$corpus" "$scratch"
  echo "--- fuzz.sh: $h for ${seconds}s ($(find "$corpus" -type f | wc -l) committed inputs)"
  # The first directory receives new inputs; the committed corpus is only read. The seed is fixed
  # (FUZZ_SEED, default 1) so that a run is repeatable: the same mutations in the same order, and
  # what a CI run finds can be replayed. Vary it for longer runs of your own.
  log="build/fuzz/artifacts/$h.log"
  dict=()
  if [ -f "fuzz/dict/$h.dict" ]; then dict=(-dict="fuzz/dict/$h.dict"); fi
  status=0
  build/fuzz/fuzz/"$h" "$scratch" "$corpus" "${dict[@]}" -max_total_time="$seconds" -seed="${FUZZ_SEED:-1}" -timeout=20 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$h-" >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz.sh: $h found a problem (exit $status); log $log, input in build/fuzz/artifacts/" >&2
    exit "$status"
  fi
  if ((merge)); then
    tmp="$(mktemp -d)"
    build/fuzz/fuzz/"$h" -merge=1 "$tmp" "$corpus" "$scratch" -max_len=4096 -timeout=20 >/dev/null 2>&1
    rm -rf "$corpus" && mv "$tmp" "$corpus" && chmod 755 "$corpus"
    echo "fuzz.sh: $h corpus merged: $(find "$corpus" -type f | wc -l) inputs, $(du -sh "$corpus" | cut -f1)"
  fi
done
