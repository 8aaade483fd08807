#!/usr/bin/env bash
# tapeflow against LibTorch, side by side (and one training epoch of each): installs what the
# benchmarks need (scripts/bench_setup.sh), builds bench/compare in build/bench (Release,
# -DTAPEFLOW_BUILD_BENCHMARKS=ON), and prints the tables. LibTorch runs at its best configuration:
# OMP_WAIT_POLICY=PASSIVE, and each group runs once per allocator (glibc malloc; jemalloc;
# jemalloc retaining freed memory, MALLOC_CONF=oversize_threshold:0,dirty_decay_ms:-1,
# muzzy_decay_ms:-1), after which every row is printed with LibTorch's best allocator and which
# one won (compare --every-malloc; tapeflow shares each process and its figure comes from the
# same run as LibTorch's best).
#
#   scripts/bench_compare.sh                  # both groups, all cores
#   THREADS=1 ROUNDS=11 scripts/bench_compare.sh small
#   EPOCH_BATCHES=100 scripts/bench_compare.sh large   # epochs timed on 100 batches, scaled
#   CLOCK=thread-cpu scripts/bench_compare.sh small    # CPU time of the thread (loaded machine)
#   scripts/bench_compare.sh function   # the peers for tf::function: ADOL-C, TorchScript
#   scripts/bench_compare.sh linalg     # tf::linalg against torch::linalg
#   scripts/bench_compare.sh layers     # the sequence layers against torch::nn's modules
#   LM_EPOCHS=10 scripts/bench_compare.sh charlm   # the CLI's char-lstm against LibTorch's, trained
#   scripts/bench_compare.sh science    # vectorized_map Hessians against PyTorch's vmap(hessian)
#   scripts/bench_compare.sh openmp     # OpenMP's wait policy: the CNN step, PASSIVE against unset
set -euo pipefail
cd "$(dirname "$0")/.."

groups=("$@")
((${#groups[@]})) || groups=(small large)
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-7}

scripts/bench_setup.sh
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake --preset bench -DTAPEFLOW_BUILD_TESTS=OFF -DTAPEFLOW_BUILD_EXAMPLES=OFF "${launcher[@]}" >/dev/null
cmake --build build/bench -j"$(nproc)" --target tapeflow_bench_compare
bin=build/bench/bench/compare/compare

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(uptime)"
export OMP_WAIT_POLICY=PASSIVE
common=(--threads "$threads" --rounds "$rounds" --clock "${CLOCK:-wall}")
for g in "${groups[@]}"; do
  case "$g" in
    small) "$bin" --every-malloc --group small "${common[@]}" --python /usr/bin/python3 \
             --script bench/compare/jacobian_torch.py ;;
    large|epoch) "$bin" --every-malloc --group "$g" "${common[@]}" --epoch-batches "${EPOCH_BATCHES:-0}" \
                   --data "${DATA:-fashion-mnist}" ;;
    function) "$bin" --every-malloc --group function "${common[@]}" ;;
    linalg) "$bin" --group linalg "${common[@]}" ;;
    layers) "$bin" --group layers "${common[@]}" ;;
    charlm) "$bin" --group charlm --threads "$threads" --lm-epochs "${LM_EPOCHS:-10}" ;;
    science) "$bin" --group science "${common[@]}" --python /usr/bin/python3 \
               --script bench/compare/hessian_torch.py ;;
    openmp) "$bin" --group openmp --threads "$threads" ;;
    *) echo "unknown group $g (small, large, epoch, function, linalg, layers, charlm, science, openmp)" >&2; exit 2 ;;
  esac
done
