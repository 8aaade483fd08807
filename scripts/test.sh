#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release -DTAPEFLOW_BUILD_TESTS=ON >/dev/null
cmake --build --preset release -j"$(nproc)"
ctest --test-dir build/release --output-on-failure -j"$(nproc)"
