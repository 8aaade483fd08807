#!/usr/bin/env bash
# Installs the Debian 12 packages tapeflow needs, if any is missing (idempotent; needs root).
set -euo pipefail

# pybind11-dev, python3-dev, python3-numpy, libdlpack-dev: the Python module (python/) for Debian's
# /usr/bin/python3; python3-pytest, python3-matplotlib (the plotting seed program) and python3-mypy
# (its type stubs) test it, python3-venv, python3-setuptools and python3-wheel its pip install.
# libonnx-dev, libprotobuf-dev: tf::export_onnx (src/onnx/); python3-onnx (onnx.checker), nodejs and npm
# test its files in ONNX Runtime (tests/onnx/, with the onnxruntime-node installed below).
# chromium: scripts/check_docs_site.py loads every page of the documentation site in it, headless.
# fortunes-min: the text `tapeflow train --model char-lstm|char-transformer` trains on by default.
# ocl-icd-opencl-dev: Debian's oneDNN is built with its OpenCL GPU runtime, so its CMake package
# (find_package(dnnl)) requires OpenCL's headers and loader, which libdnnl-dev only recommends.
packages=(build-essential cmake pkg-config libopenblas-dev libfmt-dev libgtest-dev libgmock-dev
          libbenchmark-dev libcli11-dev zlib1g-dev libsleef-dev libabsl-dev graphviz librsvg2-dev
          clang clang-format libclang-rt-14-dev llvm doxygen ccache libopenmpi-dev openmpi-bin libdnnl-dev
          ocl-icd-opencl-dev dataset-fashion-mnist pybind11-dev python3-dev python3-numpy libdlpack-dev
          python3-pytest python3-matplotlib python3-mypy python3-venv python3-setuptools python3-wheel
          libonnx-dev libprotobuf-dev python3-onnx nodejs chromium fortunes-min)
# A Node.js from elsewhere (NodeSource's nodejs) ships its own npm, which Debian's npm conflicts with.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  as_root=()
  [ "$(id -u)" -ne 0 ] && as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime for the ONNX tests (tests/onnx/run_model.js): the onnxruntime-node version that
# tests/onnx/package-lock.json pins, from the npm registry, into tests/onnx/node_modules. The npm
# package carries the CPU runtime's binaries; --ignore-scripts skips its install script, which only
# downloads GPU builds.
onnx_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/onnx"
pinned="$(sed -n 's/.*"onnxruntime-node": "\([^"]*\)".*/\1/p' "$onnx_tests/package.json")"
installed="$(cd "$onnx_tests" && node -p "require('./node_modules/onnxruntime-node/package.json').version" 2>/dev/null || true)"
if [ "$installed" != "$pinned" ]; then
  echo "setup: installing onnxruntime-node $pinned into $onnx_tests/node_modules"
  (cd "$onnx_tests" && npm ci --ignore-scripts --no-audit --no-fund)
fi
