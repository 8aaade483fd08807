# The Debian package tapeflow_<version>_<arch>.deb: everything `cmake --install` puts in the
# prefix (library, headers, CMake package, pkg-config file, the `tapeflow` program). Build it from
# the `package` preset (shared, portable, prefix /usr) with scripts/package.sh.
#
# Depends is computed by dpkg-shlibdeps from what the shared library and the program link
# (libopenblas0, libsleef3, libfmt9, zlib1g, Abseil, libopenmpi3, libdnnl2, librsvg2/cairo for the program, libc6,
# libstdc++6), so it is right for whatever this build linked. The public headers use only the
# standard library, so a consumer of the shared library needs nothing more than a C++20 compiler.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tapeflow)
set(CPACK_PACKAGE_VENDOR "tapeflow developers")
set(CPACK_PACKAGE_CONTACT "tapeflow developers <tapeflow@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Eager tensors with TensorFlow-style automatic differentiation (GradientTape) in C++20")
set(CPACK_PACKAGE_DESCRIPTION
    "tapeflow records the operations of a forward pass on a GradientTape and walks them backwards to \
compute gradients, jacobians and higher-order derivatives, with layers, optimizers and checkpoints. \
This package holds the library, its headers, the CMake package (find_package(tapeflow)), the \
pkg-config file and the tapeflow command-line program.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tapeflow_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file and the ldconfig trigger for the shared library.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
include(CPack)
