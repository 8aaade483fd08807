#!/usr/bin/env bash
# Sets up, builds and runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release -DTAPEFLOW_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j"$(nproc)" --target demo
build/release/examples/demo
