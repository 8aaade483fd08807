#!/usr/bin/env bash
# Proves that tapeflow can be used from another project, as a user would (issue 14):
#   1. `cmake --install` of a built tree into a temporary prefix, then tests/consumer/find_package
#      configured with find_package(tapeflow 0.1 CONFIG REQUIRED), built and run;
#   2. the same program compiled and linked with `pkg-config --cflags --libs tapeflow`;
#   3. tests/consumer/add_subdirectory: tapeflow as a subproject beside a target named `demo`
#      (only the library is built, no name collides);
#   4. the Debian package (scripts/package.sh: shared library, portable code): the examples' golden
#      tests pass against the shared library, the .so has its SONAME and exports only the public
#      API, the .deb holds what it should (dpkg-deb -c) with Depends on the runtime packages, and
#      the find_package and pkg-config consumers build and run against the unpacked package.
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

echo "check_packaging: the Debian package"
deb="$(scripts/package.sh | tail -1)"
ctest --test-dir build/package --output-on-failure -j"$(nproc)" -R '^(examples|seeds)\.' >"$work/package.ctest.log" ||
  fail "the examples' golden tests failed against the shared library: $work/package.ctest.log"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/deb.contents"
version="$(dpkg-deb -f "$deb" Version)"
soname="libtapeflow.so.${version%.*}"
for f in "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/$soname" /usr/include/tapeflow/tapeflow.h \
  /usr/include/tapeflow/ops/math.h /usr/bin/tapeflow; do
  grep -qxF "$f" "$work/deb.contents" || fail "$deb lacks $f"
done
for f in tapeflowConfig.cmake tapeflowConfigVersion.cmake tapeflowTargets.cmake tapeflow.pc libtapeflow.so; do
  grep -q "/$f\$" "$work/deb.contents" || fail "$deb lacks $f"
done
if grep -E -q '/(tests|fuzz|examples|bench)/|\.a$' "$work/deb.contents"; then fail "$deb holds more than it should"; fi
depends="$(dpkg-deb -f "$deb" Depends)"
for p in libc6 libstdc++6 libopenblas libsleef libfmt zlib1g libdnnl; do
  grep -q "$p" <<<"$depends" || fail "$deb's Depends lacks $p: $depends"
done
# apt resolves the Depends on this system (a simulation: nothing is installed).
apt-get -s install "$PWD/$deb" >"$work/apt-simulate.log" 2>&1 || fail "apt-get cannot install $deb: $work/apt-simulate.log"
rm -rf "$work/deb" && dpkg-deb -x "$deb" "$work/deb"
lib="$(find "$work/deb" -name "$soname")"
[ "$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" = "$soname" ] || fail "$lib: SONAME is not $soname"
# Exported: the public API only. The kernels (tapeflow::cpu), the tape's internals
# (tapeflow::autodiff::*State, ...), and the code of the libraries it links statically stay hidden.
# Every public header declares its API between the pragmas that export it (CMakeLists.txt).
unexported="$(grep -L -r --include='*.h' 'visibility push(default)' include/tapeflow | grep -v '/tapeflow\.h$' || true)"
[ -z "$unexported" ] || fail "public headers without '#pragma GCC visibility push(default)': $unexported"
nm -DC --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; print substr($0, 3) }' >"$work/exported.txt"
if grep -E '^(tapeflow::cpu|absl::|fmt::|Sleef)' "$work/exported.txt"; then fail "$lib exports internals"; fi
echo "check_packaging: $(wc -l <"$work/exported.txt") symbols exported by $soname"

cmake -S tests/consumer/find_package -B "$work/deb_find_package" -DCMAKE_PREFIX_PATH="$work/deb/usr" \
  "${launcher[@]}" >"$work/deb_find_package.configure.log"
cmake --build "$work/deb_find_package" >"$work/deb_find_package.build.log"
expect_gradient "$work/deb_find_package/app"
pc="$(find "$work/deb" -name tapeflow.pc)"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
c++ tests/consumer/main.cpp -o "$work/deb_pkg_config_app" \
  $(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs tapeflow)
LD_LIBRARY_PATH="$(dirname "$lib")" expect_gradient "$work/deb_pkg_config_app"
echo "check_packaging: 3 consumers of the install and 2 of the unpacked $(basename "$deb") built and ran"
