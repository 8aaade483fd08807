#!/usr/bin/env bash
# Installs what the benchmarks need and the normal build does not (idempotent; needs root):
# LibTorch (C++) and PyTorch for bench/compare, jemalloc (preloaded for LibTorch's large-tensor
# rows), ADOL-C (the operator-overloading tape replayed by `compare --group function`), Google
# Benchmark for bench/*.cpp. Never needed for the library build or the tests.
set -euo pipefail

packages=(libtorch-dev python3-torch libjemalloc2 libadolc-dev libbenchmark-dev libopenblas-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bench_setup: installing ${missing[*]}"
  as_root=()
  [ "$(id -u)" -ne 0 ] && as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
