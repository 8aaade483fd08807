# Install rules (TAPEFLOW_INSTALL, on for a top-level build): the library, its public headers,
# the CMake package (find_package(tapeflow CONFIG) -> tapeflow::tapeflow), a pkg-config file, and
# the command-line program with the seed programs that `tapeflow examples` runs. A static
# library's private dependencies are part of its link interface: tapeflowConfig.cmake finds them
# again with find_dependency, and tapeflow.pc lists them under Requires. A shared library carries
# its dependencies itself (DT_NEEDED), so neither names any: a consumer needs only what tapeflow
# installs (the public headers use only the standard library).
#
# Each rule belongs to one install component, which cmake/package.cmake makes one Debian package:
#   runtime      the shared library and its SONAME link (libtapeflow<soversion>)
#   development  headers, the unversioned .so link or the static library, CMake package, .pc (libtapeflow-dev)
#   cli          the `tapeflow` program, the seed programs and their sources (tapeflow)
# (python/CMakeLists.txt adds `python`, the Python module: python3-tapeflow.)
include(CMakePackageConfigHelpers)

set(TAPEFLOW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapeflow)

install(TARGETS tapeflow EXPORT tapeflowTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tapeflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
        FILES_MATCHING PATTERN "*.h")
install(EXPORT tapeflowTargets NAMESPACE tapeflow:: DESTINATION ${TAPEFLOW_CMAKE_DIR} COMPONENT development)

# A static library's link interface carries its private dependencies (find_dependency finds
# them again); a shared one carries only Threads.
if(BUILD_SHARED_LIBS)
  set(TAPEFLOW_CONFIG_FINDS_PRIVATE_DEPENDENCIES OFF)
else()
  set(TAPEFLOW_CONFIG_FINDS_PRIVATE_DEPENDENCIES ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tapeflowConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/tapeflowConfig.cmake INSTALL_DESTINATION ${TAPEFLOW_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tapeflowConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tapeflowConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/tapeflowConfigVersion.cmake
        DESTINATION ${TAPEFLOW_CMAKE_DIR} COMPONENT development)

# pkg-config resolves Requires.private for --cflags too, so a shared library's .pc names no
# dependency at all: its consumers need none of the -dev packages tapeflow was built with.
# oneDNN has no pkg-config file: a static library names it by its library, with the OpenMP runtime
# it uses.
if(BUILD_SHARED_LIBS)
  set(TAPEFLOW_PC_REQUIRES "")
  set(TAPEFLOW_PC_LIBS "")
else()
  set(TAPEFLOW_PC_REQUIRES "fmt openblas zlib absl_flat_hash_map absl_flat_hash_set sleef mpi-c")
  set(TAPEFLOW_PC_LIBS "-ldnnl -lgomp")
  # tf::export_onnx: libonnx's protobuf classes (no pkg-config file) and protobuf itself.
  if(TAPEFLOW_ONNX)
    string(APPEND TAPEFLOW_PC_REQUIRES " protobuf")
    string(APPEND TAPEFLOW_PC_LIBS " -lonnx_proto")
  endif()
endif()
# Relocatable: the prefix is found from the .pc file's own place (`cmake --install --prefix`).
file(RELATIVE_PATH TAPEFLOW_PC_PREFIX_FROM_PCFILEDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/tapeflow.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tapeflow.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tapeflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)

if(TARGET tapeflow_cli)
  install(TARGETS tapeflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
  # `tapeflow examples` runs the seed programs. Installed, they are programs only the tool runs
  # (libexec); the tool finds them from its own place, so the install stays relocatable. Their
  # sources, the small programs the documentation shows, go with them into the documentation.
  set(TAPEFLOW_EXAMPLES_INSTALL_DIR ${CMAKE_INSTALL_LIBEXECDIR}/tapeflow/examples)
  file(RELATIVE_PATH TAPEFLOW_EXAMPLES_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR}
       ${CMAKE_INSTALL_FULL_LIBEXECDIR}/tapeflow/examples)
  target_compile_definitions(tapeflow_cli_lib PRIVATE TAPEFLOW_INSTALLED_EXAMPLES_DIR="${TAPEFLOW_EXAMPLES_FROM_BINDIR}")
  if(TAPEFLOW_BUILD_EXAMPLES)
    get_property(TAPEFLOW_SEED_TARGETS DIRECTORY ${PROJECT_SOURCE_DIR}/examples/seeds PROPERTY BUILDSYSTEM_TARGETS)
    install(TARGETS ${TAPEFLOW_SEED_TARGETS} RUNTIME DESTINATION ${TAPEFLOW_EXAMPLES_INSTALL_DIR} COMPONENT cli)
    install(DIRECTORY examples/seeds/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT cli
            FILES_MATCHING PATTERN "*.cpp" PATTERN "*.h" PATTERN "README.md" PATTERN "expected" EXCLUDE)
  endif()
endif()

# The Debian package (cpack -G DEB, scripts/package.sh).
include(${CMAKE_CURRENT_LIST_DIR}/package.cmake)
