#!/usr/bin/env bash
# Builds the Debian package build/package/tapeflow_<version>_<arch>.deb (issue 14): the `package`
# preset (shared library with only the public API exported, portable code with runtime dispatch,
# prefix /usr), then `cpack -G DEB`. Depends comes from dpkg-shlibdeps (cmake/package.cmake).
# Install it with `apt-get install ./build/package/tapeflow_*.deb`. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset package "${launcher[@]}" >/dev/null
cmake --build --preset package -j"$(nproc)"
rm -f build/package/tapeflow_*.deb
cpack --config build/package/CPackConfig.cmake -B build/package >build/package/cpack.log
ls build/package/tapeflow_*.deb
