# The Debian packages, split as Debian splits a library (one per install component of
# cmake/install.cmake), each build/package/<name>_<version>_<arch>.deb:
#   libtapeflow<soversion>  the shared library libtapeflow.so.<version> and its SONAME link
#                           (named for the SONAME, libtapeflow.so.<soversion>: a new SONAME is a
#                           new package, so programs linked against the old one keep working)
#   libtapeflow-dev         headers, the libtapeflow.so link, the CMake package, the pkg-config file
#   tapeflow                the `tapeflow` program, the seed programs `tapeflow examples` runs and
#                           their sources
#   python3-tapeflow        the Python module (`import tapeflow as tf`), when the build has it
#                           (TAPEFLOW_BUILD_PYTHON)
# Build them from the `package` preset (shared, portable, prefix /usr) with scripts/package.sh.
#
# Depends is computed by dpkg-shlibdeps from what the shared library and the programs link
# (libopenblas0, libsleef3, libfmt9, zlib1g, Abseil, libopenmpi3, libdnnl2, librsvg2/cairo for the
# program, libc6, libstdc++6), so it is right for whatever this build linked; libtapeflow-dev,
# tapeflow and python3-tapeflow also depend on the libtapeflow package of the same version, and
# python3-tapeflow on the interpreter whose extension ABI it was built for and NumPy (which
# dh_python3 would add; pybind11 reaches NumPy at run time). The public headers use only
# the standard library, so libtapeflow-dev needs no other -dev package: a consumer of the shared
# library needs nothing more than a C++20 compiler.
get_target_property(TAPEFLOW_SOVERSION tapeflow SOVERSION)
set(TAPEFLOW_RUNTIME_PACKAGE libtapeflow${TAPEFLOW_SOVERSION})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tapeflow)
set(CPACK_PACKAGE_VENDOR "tapeflow developers")
set(CPACK_PACKAGE_CONTACT "tapeflow developers <tapeflow@users.noreply.github.com>")
# Each package's description opens with its own summary line (CPACK_PACKAGE_DESCRIPTION_SUMMARY
# stays unset: CPack would put that one line before all three).
set(TAPEFLOW_PACKAGE_SUMMARY "automatic differentiation (GradientTape) for C++20")
set(TAPEFLOW_PACKAGE_ABOUT
    "tapeflow records the operations of a forward pass on a GradientTape and walks them backwards to \
compute gradients, jacobians and higher-order derivatives, with eager tensors, layers, optimizers and \
checkpoints, as TensorFlow does.")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime development cli)  # nothing else that an install rule may add
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
set(CPACK_COMPONENT_CLI_DEPENDS runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # "libtapeflow<soversion> (= <version>)"
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${TAPEFLOW_RUNTIME_PACKAGE})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "${TAPEFLOW_PACKAGE_SUMMARY} - shared library\n${TAPEFLOW_PACKAGE_ABOUT} This package holds the shared library.")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libtapeflow-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION
    "${TAPEFLOW_PACKAGE_SUMMARY} - development files\n${TAPEFLOW_PACKAGE_ABOUT} This package holds \
the headers, the CMake package (find_package(tapeflow)) and the pkg-config file.")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME tapeflow)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_DESCRIPTION
    "${TAPEFLOW_PACKAGE_SUMMARY} - command-line program\n${TAPEFLOW_PACKAGE_ABOUT} This package holds \
the tapeflow program (train and predict Fashion-MNIST classifiers, run the seed examples) and the \
examples' programs and sources.")
if(TARGET _tapeflow)  # python/CMakeLists.txt installs the `python` component
  list(APPEND CPACK_COMPONENTS_ALL python)
  set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-tapeflow)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  # The extension is built for one interpreter version (_tapeflow.cpython-3XY-...): that one only.
  math(EXPR TAPEFLOW_PYTHON_NEXT_MINOR "${Python3_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~), python3 (<< ${Python3_VERSION_MAJOR}.${TAPEFLOW_PYTHON_NEXT_MINOR}), python3-numpy")
  set(CPACK_DEBIAN_PYTHON_DESCRIPTION
      "${TAPEFLOW_PACKAGE_SUMMARY} - Python module\n${TAPEFLOW_PACKAGE_ABOUT} This package holds \
the Python module: import tapeflow as tf.")
endif()

set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The programs link libtapeflow.so.<soversion> of this build, which no installed package provides
# yet: dpkg-shlibdeps finds it here, and the component dependency above names its package.
get_target_property(TAPEFLOW_LIBRARY_DIR tapeflow LIBRARY_OUTPUT_DIRECTORY)
if(NOT TAPEFLOW_LIBRARY_DIR)
  set(TAPEFLOW_LIBRARY_DIR ${PROJECT_BINARY_DIR})
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${TAPEFLOW_LIBRARY_DIR})
# A shlibs file and the ldconfig trigger for the shared library (only libtapeflow<soversion> holds it).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
include(CPack)
