#!/usr/bin/env bash
# Open-ended fuzzing: runs every libFuzzer harness (or the ones named) for SECONDS each from a
# random seed, starting from the committed corpus fuzz/corpus/<harness>/. New interesting inputs
# go to build/fuzz/corpus/<harness>/ (not committed); --merge minimises them together with the
# committed corpus back into fuzz/corpus/<harness>/. A finding stops the script with the input in
# build/fuzz/artifacts/: fix it, commit the input to the corpus (scripts/fuzz.sh then replays it
# in every test run) and add a regression test (docs/RELIABILITY.md, "Fuzzing").
#
#   scripts/fuzz_explore.sh [SECONDS] [--seed S] [--no-build] [--merge] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/fuzz_common.sh
seconds=60
seed=0  # libFuzzer picks a seed from the clock and prints it ("Seed: ...") for a replay
build=1
merge=0
harnesses=()
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --merge) merge=1 ;;
    --seed) seed="$2"; shift ;;
    [0-9]*) seconds="$1" ;;
    *) harnesses+=("$1") ;;
  esac
  shift
done
((build)) && fuzz_build
((${#harnesses[@]})) || mapfile -t harnesses < <(fuzz_harnesses)
for h in "${harnesses[@]}"; do
  echo "--- fuzz_explore.sh: $h for ${seconds}s"
  fuzz_run "$h" "build/fuzz/corpus/$h" -seed="$seed" -max_total_time="$seconds"
  grep -m1 -E '^INFO: Seed:' "build/fuzz/artifacts/$h.log" || true
  if ((merge)); then
    tmp="$(mktemp -d)"
    build/fuzz/fuzz/"$h" -merge=1 "$tmp" "fuzz/corpus/$h" "build/fuzz/corpus/$h" -max_len=4096 -timeout=20 >/dev/null 2>&1
    rm -rf "fuzz/corpus/$h" && mv "$tmp" "fuzz/corpus/$h" && chmod 755 "fuzz/corpus/$h"
    echo "fuzz_explore.sh: $h corpus merged: $(find "fuzz/corpus/$h" -type f | wc -l) inputs"
  fi
done
