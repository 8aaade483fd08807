# Install rules (TAPEFLOW_INSTALL, on for a top-level build): the library, its public headers,
# the CMake package (find_package(tapeflow CONFIG) -> tapeflow::tapeflow), a pkg-config file and
# the command-line program. A static library's private dependencies are part of its link
# interface: tapeflowConfig.cmake finds them again with find_dependency, and tapeflow.pc lists
# them under Requires (Requires.private for a shared library).
include(CMakePackageConfigHelpers)

set(TAPEFLOW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapeflow)

install(TARGETS tapeflow EXPORT tapeflowTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tapeflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT tapeflowTargets NAMESPACE tapeflow:: DESTINATION ${TAPEFLOW_CMAKE_DIR})

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
        DESTINATION ${TAPEFLOW_CMAKE_DIR})

# oneDNN has no pkg-config file: it is named by its library, with the OpenMP runtime it uses.
if(BUILD_SHARED_LIBS)
  set(TAPEFLOW_PC_REQUIRES "")
  set(TAPEFLOW_PC_REQUIRES_PRIVATE "fmt openblas zlib absl_flat_hash_map absl_flat_hash_set sleef mpi-c")
  set(TAPEFLOW_PC_LIBS "")
  set(TAPEFLOW_PC_LIBS_PRIVATE "-pthread -ldnnl -lgomp")
else()
  set(TAPEFLOW_PC_REQUIRES "fmt openblas zlib absl_flat_hash_map absl_flat_hash_set sleef mpi-c")
  set(TAPEFLOW_PC_REQUIRES_PRIVATE "")
  set(TAPEFLOW_PC_LIBS "-ldnnl -lgomp")
  set(TAPEFLOW_PC_LIBS_PRIVATE "")
endif()
# Relocatable: the prefix is found from the .pc file's own place (`cmake --install --prefix`).
file(RELATIVE_PATH TAPEFLOW_PC_PREFIX_FROM_PCFILEDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/tapeflow.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tapeflow.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tapeflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET tapeflow_cli)
  install(TARGETS tapeflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The Debian package (cpack -G DEB, scripts/package.sh).
include(${CMAKE_CURRENT_LIST_DIR}/package.cmake)
