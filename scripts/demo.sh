#!/usr/bin/env bash
# Sets up, builds the tapeflow program and trains the MLP on Fashion-MNIST for two epochs
# (about a minute): progress on stderr, test accuracy per epoch, a checkpoint and a plot.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release -DTAPEFLOW_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j"$(nproc)" --target tapeflow_cli
build/release/tools/cli/tapeflow train --model mlp --epochs 2 \
  --checkpoint build/release/mlp.ckpt --overwrite --plot build/release/training.svg
