#!/usr/bin/env bash
# Proves that the Python module installs as a user would install it, and imports and computes a
# gradient afterwards, outside the build tree:
#   1. `cmake --install` of a built tree (default build/release) into a temporary prefix: the
#      package lands in the prefix's dist-packages (site-packages off Debian);
#   2. `pip install --no-build-isolation .` from a copy of this checkout (pip builds in the source
#      tree) into a temporary virtual environment (Debian's interpreter, its NumPy through
#      --system-site-packages; nothing is fetched: --no-index).
#   scripts/check_python_packaging.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PYTHONDONTWRITEBYTECODE=1
expected='tf.Tensor(6.0, shape=(), dtype=float32)'
program='import tapeflow as tf
x = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = x**2
print(tape.gradient(y, x))'

fail() { echo "check_python_packaging: $*" >&2; exit 1; }
expect_gradient() {  # python-interpreter [env...]
  local got
  got="$(cd "$work" && env "${@:2}" "$1" -c "$program")"
  [ "$got" = "$expected" ] || fail "$1 printed '$got', expected '$expected'"
}

echo "check_python_packaging: cmake --install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
package="$(find "$work/prefix" -path '*-packages/tapeflow/__init__.py' -printf '%h\n')"
[ -n "$package" ] || fail "the install has no tapeflow package under a *-packages directory"
[ -n "$(find "$package" -name '_tapeflow*.so')" ] || fail "the installed package lacks its extension module"
expect_gradient /usr/bin/python3 PYTHONPATH="$(dirname "$package")"

echo "check_python_packaging: pip install --no-build-isolation . into a virtual environment"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
mkdir "$work/src"
# tests/onnx/node_modules: ONNX Runtime for the tests (scripts/setup.sh), hundreds of MiB the build never reads.
tar --exclude=./build --exclude=./.git --exclude=./tests/onnx/node_modules -cf - . | tar -C "$work/src" -xf -
"$work/venv/bin/pip" install --no-build-isolation --no-index --quiet "$work/src" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; fail "pip install failed"; }
expect_gradient "$work/venv/bin/python"
echo "check_python_packaging: ok"
