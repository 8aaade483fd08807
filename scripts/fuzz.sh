#!/usr/bin/env bash
# The test suite's fuzz stage: every libFuzzer harness replays its committed corpus
# fuzz/corpus/<harness>/ and then makes a fixed number of mutations from a fixed seed, so that
# a run is a regression test: the same inputs in the same order on every machine, and a pass or a
# failure does not depend on luck or on the machine's speed. Open-ended fuzzing, whose findings
# become corpus entries and tests, is scripts/fuzz_explore.sh.
#
#   scripts/fuzz.sh [--runs N] [--no-build] [HARNESS...]
#
# N (default 1000, or FUZZ_RUNS) mutations per harness after the corpus; seed 1. New inputs go
# to a temporary folder, deleted afterwards: the committed corpus is only read. What makes a run
# repeat itself exactly: the seed; -reload=0 (libFuzzer otherwise re-reads its corpus folders
# every second, so what it mutates depends on timing); and no address randomisation (setarch -R):
# Abseil seeds its hash tables from an address, and the coverage of their probing guides the
# mutations. Where setarch -R is not permitted, the runs may differ between machines.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/fuzz_common.sh
runs="${FUZZ_RUNS:-1000}"
build=1
harnesses=()
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --runs) runs="$2"; shift ;;
    *) harnesses+=("$1") ;;
  esac
  shift
done
((build)) && fuzz_build
((${#harnesses[@]})) || mapfile -t harnesses < <(fuzz_harnesses)
if setarch "$(uname -m)" -R true 2>/dev/null; then
  fuzz_launch=(setarch "$(uname -m)" -R)
else
  echo "fuzz.sh: setarch -R is not permitted here: runs may differ from other machines' runs" >&2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for h in "${harnesses[@]}"; do
  committed="$(find "fuzz/corpus/$h" -type f | wc -l)"
  echo "--- fuzz.sh: $h: $committed committed inputs, then $runs mutations (seed 1)"
  # -runs counts the corpus's executions too.
  fuzz_run "$h" "$scratch/$h" -seed=1 -reload=0 -runs="$((committed + runs))"
done
