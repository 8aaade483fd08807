#!/usr/bin/env bash
# Proves that tapeflow can be used from another project, as a user would (issue 14):
#   1. `cmake --install` of a built tree into a temporary prefix, then tests/consumer/find_package
#      configured with find_package(tapeflow 0.1 CONFIG REQUIRED), built and run;
#   2. the same program compiled and linked with `pkg-config --cflags --libs tapeflow`;
#   3. tests/consumer/add_subdirectory: tapeflow as a subproject beside a target named `demo`
#      (only the library is built, no name collides).
# Each program must print the gradient 6.0, and no compile line of a consumer's own source may
# carry tapeflow's warning or -march flags.
#   scripts/check_packaging.sh [BUILD_DIR]   # default build/release, already built
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="${1:-build/release}"
work="$root/build/packaging"  # inside the tree, so that ccache finds the same relative paths
rm -rf "$work"
mkdir -p "$work"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
expected='tf.Tensor(6.0, shape=(), dtype=float32)'

fail() { echo "check_packaging: $*" >&2; exit 1; }
expect_gradient() {  # program
  local got
  got="$("$1")"
  [ "$got" = "$expected" ] || fail "$1 printed '$got', expected '$expected'"
}
no_leaked_flags() {  # verbose build log: the consumer's main.cpp compile line
  local line
  line="$(grep -E 'consumer/main\.cpp' "$1" | grep -E -- ' -c ' || true)"
  [ -n "$line" ] || fail "no compile line of the consumer's main.cpp in $1"
  if grep -q -E -- '-W(all|extra|pedantic)|-march' <<<"$line"; then
    fail "tapeflow's flags leaked into a consumer: $line"
  fi
}

echo "check_packaging: install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in include/tapeflow/tapeflow.h bin/tapeflow; do
  [ -e "$work/prefix/$f" ] || fail "the install lacks $f"
done
config="$(find "$work/prefix" -name tapeflowConfig.cmake)"
pc="$(find "$work/prefix" -name tapeflow.pc)"
[ -n "$config" ] && [ -n "$pc" ] || fail "the install lacks tapeflowConfig.cmake or tapeflow.pc"

echo "check_packaging: find_package(tapeflow) consumer"
cmake -S tests/consumer/find_package -B "$work/find_package" -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${launcher[@]}" >"$work/find_package.configure.log"
cmake --build "$work/find_package" --verbose >"$work/find_package.build.log"
no_leaked_flags "$work/find_package.build.log"
expect_gradient "$work/find_package/app"

echo "check_packaging: pkg-config consumer"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
c++ tests/consumer/main.cpp -o "$work/pkg_config_app" \
  $(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs tapeflow)
expect_gradient "$work/pkg_config_app"

echo "check_packaging: add_subdirectory consumer"
cmake -S tests/consumer/add_subdirectory -B "$work/add_subdirectory" -DTAPEFLOW_SOURCE_DIR="$root" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$work/add_subdirectory.configure.log"
cmake --build "$work/add_subdirectory" --verbose -j"$(nproc)" >"$work/add_subdirectory.build.log"
no_leaked_flags "$work/add_subdirectory.build.log"
[ ! -e "$work/add_subdirectory/tapeflow/tests" ] || fail "the subproject built its tests"
expect_gradient "$work/add_subdirectory/demo"
echo "check_packaging: 3 consumers built and ran (find_package, pkg-config, add_subdirectory)"
