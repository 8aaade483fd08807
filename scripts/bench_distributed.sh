#!/usr/bin/env bash
# Data-parallel figures on this machine (docs/PERFORMANCE.md, "Distributed training"):
#   1. all-reduce: tapeflow's op against MPI_Allreduce, 2 ranks on shared memory;
#   2. training steps of the MLP and the CNN at 1 and 2 ranks, one thread each: the job's
#      examples per second (scaling efficiency against 1 rank) and how much of the communication
#      the overlap hides.
# Needs the bench build: cmake --preset bench && cmake --build build/bench --target tapeflow_bench_distributed
set -euo pipefail
bench=${1:-build/bench/bench/bench_distributed}
[ -x "$bench" ] || { echo "no $bench: build the bench preset's tapeflow_bench_distributed first"; exit 1; }
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

echo "== all-reduce, 2 ranks (shared memory)"
"${mpirun[@]}" -np 2 "$bench" allreduce --max-bytes $((64 << 20))
for model in mlp cnn; do
  for ranks in 1 2; do
    echo "== $model, $ranks rank(s)"
    "${mpirun[@]}" -np "$ranks" "$bench" train --model "$model" --steps "${STEPS:-30}" --batch-size 64 \
      --bucket-bytes $((256 << 10))
  done
done
