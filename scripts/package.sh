#!/usr/bin/env bash
# Builds the Debian packages, split as Debian splits a library (cmake/package.cmake):
#   build/package/libtapeflow<soversion>_<version>_<arch>.deb   the shared library
#   build/package/libtapeflow-dev_<version>_<arch>.deb          headers, CMake package, pkg-config file
#   build/package/tapeflow_<version>_<arch>.deb                 the `tapeflow` program and its examples
#   build/package/python3-tapeflow_<version>_<arch>.deb         the Python module, when the build has it
# from the `package` preset (shared library with only the public API exported, portable code with
# runtime dispatch, prefix /usr), then `cpack -G DEB`. Depends comes from dpkg-shlibdeps.
# Install them with `apt-get install ./build/package/*.deb`. Prints their paths in the order above.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset package "${launcher[@]}" >/dev/null
cmake --build --preset package -j"$(nproc)"
rm -f build/package/*.deb
# CPack warns that the Python extension has no SONAME (right for a module): keep that in its log.
cpack --config build/package/CPackConfig.cmake -B build/package >build/package/cpack.log 2>&1 ||
  { cat build/package/cpack.log; exit 1; }
shopt -s failglob
debs=(build/package/libtapeflow[0-9]*.deb build/package/libtapeflow-dev_*.deb build/package/tapeflow_*.deb)
shopt -u failglob
shopt -s nullglob
debs+=(build/package/python3-tapeflow_*.deb)
printf '%s\n' "${debs[@]}"
