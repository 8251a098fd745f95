# `cmake --install`: the server and cua-s1-prepare, the engine's static libraries and public
# headers (include/cua_s1/, the src/ layout), the bundled tiny model (share/cua-s1/tiny, where
# the installed server finds it) and the CMake package read by find_package(cua_s1).
include(CMakePackageConfigHelpers)

set(CUA_S1_PACKAGE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cua_s1)
set(CUA_S1_TINY_MODEL_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/cua-s1/tiny)
set(CUA_S1_LIBRARIES cua_s1 cua_s1_core)
if(CUA_S1_WITH_CUDA)
  list(APPEND CUA_S1_LIBRARIES cua_s1_gpu)
  set(CUA_S1_PACKAGE_WITH_CUDA ON)
else()
  set(CUA_S1_PACKAGE_WITH_CUDA OFF)
endif()

install(TARGETS cua-s1-server cua-s1-prepare RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${CUA_S1_LIBRARIES} EXPORT cua_s1_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cua_s1)
# A stripped install (`cmake --install --strip`, and the .deb through CPACK_STRIP_FILES) strips
# programs only; the archives lose their debug information here too (libcua_s1.a: ~350 MB with
# it in a RelWithDebInfo build, ~33 MB without).
foreach(library ${CUA_S1_LIBRARIES})
  install(CODE "
    if(CMAKE_INSTALL_DO_STRIP)
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:${library}>\"
        COMMAND_ERROR_IS_FATAL ANY)
    endif()")
endforeach()
install(EXPORT cua_s1_targets NAMESPACE cua_s1:: FILE cua_s1-targets.cmake
  DESTINATION ${CUA_S1_PACKAGE_INSTALL_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cua_s1-config.cmake.in
  ${CMAKE_BINARY_DIR}/cua_s1-config.cmake
  INSTALL_DESTINATION ${CUA_S1_PACKAGE_INSTALL_DIR}
  PATH_VARS CUA_S1_TINY_MODEL_INSTALL_DIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cua_s1-config-version.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor version may break the API
install(FILES ${CMAKE_BINARY_DIR}/cua_s1-config.cmake ${CMAKE_BINARY_DIR}/cua_s1-config-version.cmake
  ${CMAKE_CURRENT_LIST_DIR}/cua_s1-dependencies.cmake
  DESTINATION ${CUA_S1_PACKAGE_INSTALL_DIR})

# The tiny model's files only (not its reference controls): the lock lists exactly these.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tests/fixtures/tiny/base
                  ${PROJECT_SOURCE_DIR}/tests/fixtures/tiny/multimodal
  DESTINATION ${CUA_S1_TINY_MODEL_INSTALL_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/tests/fixtures/tiny/weights.lock.json
  DESTINATION ${CUA_S1_TINY_MODEL_INSTALL_DIR})
