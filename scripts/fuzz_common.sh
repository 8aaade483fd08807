# Sourced by scripts/fuzz.sh and scripts/fuzz_explore.sh: the harness list, the build, and one
# harness run with the options both use. Not a script of its own.

# Builds the libFuzzer harnesses (clang, ASan + UBSan; preset fuzz).
fuzz_build() {
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake --preset fuzz "${launcher[@]}" >/dev/null
  cmake --build --preset fuzz -j"$(nproc)" --target tapeflow_fuzzers
}

# Prints every harness's name (fuzz/fuzz_*.cpp but the shared input decoder), one a line.
fuzz_harnesses() {
  local src name
  for src in fuzz/fuzz_*.cpp; do
    name="$(basename "$src" .cpp)"
    [ "$name" = fuzz_input ] || echo "$name"
  done
}

# Prefix of the harness command (fuzz.sh sets it to run without address randomisation).
fuzz_launch=()

# fuzz_run HARNESS NEW_INPUTS_DIR [libFuzzer options...]: runs HARNESS on its committed corpus
# fuzz/corpus/HARNESS/ (only read), writing new inputs to NEW_INPUTS_DIR, with its dictionary
# fuzz/dict/HARNESS.dict if there is one. A crash, sanitizer report, leak, timeout or an exception
# that is not a tapeflow::Error exits non-zero with the input saved as
# build/fuzz/artifacts/HARNESS-crash-<sha1> (reproduce: build/fuzz/fuzz/HARNESS <file>).
fuzz_run() {
  local h="$1" out="$2"
  shift 2
  local corpus="fuzz/corpus/$h" log="build/fuzz/artifacts/$h.log" dict=() status=0
  mkdir -p build/fuzz/artifacts "$out"
  if [ -f "fuzz/dict/$h.dict" ]; then dict=(-dict="fuzz/dict/$h.dict"); fi
  export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
  "${fuzz_launch[@]}" build/fuzz/fuzz/"$h" "$out" "$corpus" "${dict[@]}" "$@" -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$h-" >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz: $h found a problem (exit $status); log $log, input in build/fuzz/artifacts/" >&2
    return "$status"
  fi
}
