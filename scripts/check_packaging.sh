#!/usr/bin/env bash
# Proves that tapeflow can be used from another project, as a user would:
#   1. `cmake --install` of a built tree into a temporary prefix, then tests/consumer/find_package
#      configured with find_package(tapeflow 0.1 CONFIG REQUIRED), built and run; the installed
#      `tapeflow examples` runs a seed program;
#      the development component alone (headers, library, CMake package: what the README's first
#      program installs after the demo) serves the same consumer;
#   2. the same program compiled and linked with `pkg-config --cflags --libs tapeflow`;
#   3. tests/consumer/add_subdirectory: tapeflow as a subproject beside a target named `demo`
#      (only the library is built, no name collides, and tapeflow's sources print no warning);
#   4. the Debian packages (scripts/package.sh: shared library, portable code, split into
#      libtapeflow<soversion>, libtapeflow-dev and tapeflow): the examples' golden tests pass
#      against the shared library, the .so has its SONAME and exports only the public API, each
#      .deb holds what it should (dpkg-deb -c) with Depends on the runtime packages, and on the
#      three packages unpacked into an empty root, as on a machine without any -dev package: the
#      pkg-config consumer finds only the unpacked tapeflow.pc (so a Requires on anything else
#      fails), the find_package consumer searches packages only there, `tapeflow examples` runs
#      every seed program, and, when the build has the Python module, python3-tapeflow computes
#      the gradient.
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
seed_programs="$(find examples/seeds -maxdepth 1 -name '*.cpp' | wc -l)"
expect_examples_run() {  # name, installed tapeflow program: `tapeflow examples` runs every seed program
  local out="$work/$1.examples"
  mkdir -p "$out"  # the caller's directory, where the programs write their files
  (cd "$out" && "$2" examples) >"$out.log" 2>&1 || fail "$2 examples failed: $out.log"
  grep -qxF "$seed_programs of $seed_programs examples ran successfully" "$out.log" ||
    fail "$2 examples did not run the $seed_programs seed programs: $out.log"
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
for f in include/tapeflow/tapeflow.h bin/tapeflow libexec/tapeflow/examples/guide_01_scalar_gradient; do
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
expect_examples_run install "$work/prefix/bin/tapeflow"

echo "check_packaging: the development component alone (README's first program, after the demo)"
# The demo builds only the tapeflow program (and so the library): installing the development
# component must need nothing else, and must be all a find_package consumer needs.
cmake --install "$build" --component development --prefix "$work/development" >"$work/development.log"
cmake -S tests/consumer/find_package -B "$work/find_package_development" \
  -DCMAKE_PREFIX_PATH="$work/development" "${launcher[@]}" >"$work/find_package_development.configure.log"
cmake --build "$work/find_package_development" >"$work/find_package_development.build.log"
expect_gradient "$work/find_package_development/app"

echo "check_packaging: pkg-config consumer"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
c++ tests/consumer/main.cpp -o "$work/pkg_config_app" \
  $(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs tapeflow)
expect_gradient "$work/pkg_config_app"

echo "check_packaging: add_subdirectory consumer"
cmake -S tests/consumer/add_subdirectory -B "$work/add_subdirectory" -DTAPEFLOW_SOURCE_DIR="$root" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$work/add_subdirectory.configure.log"
cmake --build "$work/add_subdirectory" --verbose -j"$(nproc)" >"$work/add_subdirectory.build.log" 2>&1
no_leaked_flags "$work/add_subdirectory.build.log"
# A subproject is built for the x86-64 baseline with the consumer's compiler: tapeflow's sources
# must compile there without a warning (-Wpsabi for 64-byte vectors, say), which would otherwise
# land in every consumer's build.
if grep -E -- '(warning|error):' "$work/add_subdirectory.build.log"; then
  fail "building tapeflow as a subproject printed warnings: $work/add_subdirectory.build.log"
fi
[ ! -e "$work/add_subdirectory/tapeflow/tests" ] || fail "the subproject built its tests"
expect_gradient "$work/add_subdirectory/demo"

echo "check_packaging: the Debian packages"
mapfile -t debs < <(scripts/package.sh | grep '\.deb$')
runtime_deb="${debs[0]}" dev_deb="${debs[1]}" cli_deb="${debs[2]}" python_deb="${debs[3]:-}"
if grep -q '^TAPEFLOW_BUILD_PYTHON:BOOL=ON' build/package/CMakeCache.txt; then
  [ -n "$python_deb" ] || fail "the package build has the Python module, but no python3-tapeflow package"
fi
ctest --test-dir build/package --output-on-failure -j"$(nproc)" -R '^(examples|seeds)\.' >"$work/package.ctest.log" ||
  fail "the examples' golden tests failed against the shared library: $work/package.ctest.log"
version="$(dpkg-deb -f "$runtime_deb" Version)"
soname="libtapeflow.so.${version%.*}"
runtime_package="libtapeflow${version%.*}"  # named for the SONAME, as Debian names libraries
libdir="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
for deb in "${debs[@]}"; do
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "$deb's version is not $version"
  dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' >"$work/$(basename "$deb").contents"
done
contents() { cat "$work/$(basename "$1").contents"; }
expect_holds() {  # deb, exact paths or /name$ patterns
  local deb="$1" f
  shift
  for f in "$@"; do
    if [[ "$f" == */* ]]; then
      contents "$deb" | grep -qxF "$f" || fail "$deb lacks $f"
    else
      contents "$deb" | grep -q "/$f\$" || fail "$deb lacks $f"
    fi
  done
}
expect_depends() {  # deb, packages its Depends must name
  local deb="$1" depends p
  depends="$(dpkg-deb -f "$deb" Depends)"
  shift
  for p in "$@"; do grep -q -- "$p" <<<"$depends" || fail "$deb's Depends lacks $p: $depends"; done
}
[ "$(dpkg-deb -f "$runtime_deb" Package)" = "$runtime_package" ] || fail "$runtime_deb is not $runtime_package"
[ "$(dpkg-deb -f "$dev_deb" Package)" = libtapeflow-dev ] || fail "$dev_deb is not libtapeflow-dev"
[ "$(dpkg-deb -f "$cli_deb" Package)" = tapeflow ] || fail "$cli_deb is not tapeflow"
# The runtime package holds the library and its SONAME link, nothing else.
[ "$(contents "$runtime_deb" | sort | tr '\n' ' ')" = "$libdir/$soname $libdir/$soname.${version##*.} " ] ||
  fail "$runtime_deb holds other than $libdir/$soname(.${version##*.}): $(contents "$runtime_deb" | tr '\n' ' ')"
expect_holds "$dev_deb" /usr/include/tapeflow/tapeflow.h /usr/include/tapeflow/ops/math.h "$libdir/libtapeflow.so" \
  "$libdir/pkgconfig/tapeflow.pc" tapeflowConfig.cmake tapeflowConfigVersion.cmake tapeflowTargets.cmake
expect_holds "$cli_deb" /usr/bin/tapeflow /usr/libexec/tapeflow/examples/guide_01_scalar_gradient \
  /usr/share/doc/tapeflow/examples/guide_01_scalar_gradient.cpp
cat "$work"/*.deb.contents >"$work/debs.contents"
if grep -E '/(tests|fuzz|bench)/|\.a$' "$work/debs.contents" ||
  grep '/examples/' "$work/debs.contents" | grep -v -E '^/usr/(libexec|share/doc)/tapeflow/examples/'; then
  fail "the packages hold more than they should"
fi
if sort "$work/debs.contents" | uniq -d | grep .; then fail "these files are in two packages"; fi
expect_depends "$runtime_deb" libc6 libstdc++6 libopenblas libsleef libfmt zlib1g libdnnl
expect_depends "$dev_deb" "$runtime_package (= $version)"
expect_depends "$cli_deb" "$runtime_package (= $version)" librsvg2
if [ -n "$python_deb" ]; then
  [ "$(dpkg-deb -f "$python_deb" Package)" = python3-tapeflow ] || fail "$python_deb is not python3-tapeflow"
  expect_holds "$python_deb" /usr/lib/python3/dist-packages/tapeflow/__init__.py
  contents "$python_deb" | grep -q '^/usr/lib/python3/dist-packages/tapeflow/_tapeflow\..*\.so$' ||
    fail "$python_deb lacks the extension module"
  expect_depends "$python_deb" "$runtime_package (= $version)" "python3 (>= " python3-numpy
fi
if dpkg-deb -f "$dev_deb" Depends | grep -E -- '-dev\b'; then
  fail "$dev_deb depends on another -dev package: the public headers need none"
fi
# apt resolves the Depends on this system (a simulation: nothing is installed).
apt-get -s install "${debs[@]/#/$PWD/}" >"$work/apt-simulate.log" 2>&1 ||
  fail "apt-get cannot install the packages: $work/apt-simulate.log"

# The three packages unpacked into an empty root: what a machine with only them installed has.
root_dir="$work/deb"
rm -rf "$root_dir"
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$root_dir"; done
lib="$root_dir$libdir/$soname"
[ "$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" = "$soname" ] || fail "$lib: SONAME is not $soname"
# Exported: the public API only. The kernels (tapeflow::cpu), the tape's internals
# (tapeflow::autodiff::*State, ...), and the code of the libraries it links statically stay hidden.
# Every public header declares its API between the pragmas that export it (CMakeLists.txt).
unexported="$(grep -L -r --include='*.h' 'visibility push(default)' include/tapeflow | grep -v '/tapeflow\.h$' || true)"
[ -z "$unexported" ] || fail "public headers without '#pragma GCC visibility push(default)': $unexported"
nm -DC --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; print substr($0, 3) }' >"$work/exported.txt"
if grep -E '^(tapeflow::cpu|absl::|fmt::|Sleef)' "$work/exported.txt"; then fail "$lib exports internals"; fi
echo "check_packaging: $(wc -l <"$work/exported.txt") symbols exported by $soname"

# find_package searches for packages in the unpacked root only (CMAKE_FIND_ROOT_PATH_MODE_PACKAGE
# ONLY): a find_dependency on anything the packages do not install fails.
cmake -S tests/consumer/find_package -B "$work/deb_find_package" -DCMAKE_FIND_ROOT_PATH="$root_dir" \
  -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY -DCMAKE_PREFIX_PATH=/usr "${launcher[@]}" \
  >"$work/deb_find_package.configure.log" 2>&1 ||
  fail "find_package(tapeflow) needs more than the packages install: $work/deb_find_package.configure.log"
grep -q "tapeflow_DIR:PATH=$root_dir/" "$work/deb_find_package/CMakeCache.txt" ||
  fail "find_package(tapeflow) found a tapeflow other than the unpacked one"
cmake --build "$work/deb_find_package" >"$work/deb_find_package.build.log"
expect_gradient "$work/deb_find_package/app"
# pkg-config finds no .pc file but the unpacked tapeflow.pc (PKG_CONFIG_LIBDIR replaces the system's
# directories): a Requires or Requires.private on any other package, a -dev package's, fails.
pkg_flags="$(env -u PKG_CONFIG_PATH PKG_CONFIG_LIBDIR="$root_dir$libdir/pkgconfig" pkg-config --cflags --libs tapeflow 2>&1)" ||
  fail "pkg-config needs more than the packages install: $pkg_flags"
# shellcheck disable=SC2086  # pkg-config's output is a list of flags
c++ tests/consumer/main.cpp -o "$work/deb_pkg_config_app" $pkg_flags
LD_LIBRARY_PATH="$root_dir$libdir" expect_gradient "$work/deb_pkg_config_app"
LD_LIBRARY_PATH="$root_dir$libdir" expect_examples_run deb "$root_dir/usr/bin/tapeflow"
if [ -n "$python_deb" ]; then
  python_gradient="$(cd "$work" && LD_LIBRARY_PATH="$root_dir$libdir" PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH="$root_dir/usr/lib/python3/dist-packages" /usr/bin/python3 -c 'import tapeflow as tf
x = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = x**2
print(tape.gradient(y, x))')"
  [ "$python_gradient" = "$expected" ] || fail "python3-tapeflow printed '$python_gradient', expected '$expected'"
fi
echo "check_packaging: 3 consumers of the install and 2 of the unpacked $(basename -a "${debs[@]}" | tr '\n' ' ')built and ran;" \
  "both installed tapeflow programs ran the $seed_programs examples${python_deb:+, and python3-tapeflow computed the gradient}"
