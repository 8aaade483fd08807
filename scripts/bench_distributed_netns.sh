#!/usr/bin/env bash
# All-reduce beyond this machine, by simulation (docs/PERFORMANCE.md, "Distributed training"):
# 2, 4 and 8 ranks in a network namespace this script creates, talking TCP over its own loopback
# interface, whose bandwidth is shaped with tc (a token bucket: this kernel has no netem, so the
# latency is the loopback's own). Prints the measured all-reduce times beside the ring model
#   T(N, S) = 2 (N - 1) alpha + 2 (N - 1) / N * S / B_link
# where every rank has its own link of bandwidth B_link. Here all ranks share the one shaped
# interface (a bus, not a switch), so each of the 2 (N - 1) steps moves N segments of S / N bytes
# through it: T_bus = 2 (N - 1) alpha + 2 (N - 1) S / B. alpha is fitted from the 4-byte time.
# Needs root (ip netns, tc). Touches nothing outside the namespace, which it deletes at the end.
set -euo pipefail
bench=${1:-build/bench/bench/bench_distributed}
rate=${RATE:-1gbit}
[ -x "$bench" ] || { echo "no $bench: build the bench preset's tapeflow_bench_distributed first"; exit 1; }
ns=tapeflow-sim-$$
ip netns add "$ns"
trap 'ip netns del "$ns"' EXIT
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" tc qdisc add dev lo root tbf rate "$rate" burst 256kb latency 50ms
ip netns exec "$ns" tc qdisc show dev lo
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for ranks in 2 4 8; do
  echo "== $ranks ranks over TCP on a loopback shaped to $rate"
  ip netns exec "$ns" mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
    --mca btl tcp,self --mca btl_tcp_if_include lo "$bench" allreduce --max-bytes $((16 << 20)) --reps 5
done
