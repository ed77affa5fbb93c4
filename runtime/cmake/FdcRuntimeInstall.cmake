# Install rules of the runtime, shared by the top-level build and the
# stand-alone one (cmake -S runtime); included from runtime/CMakeLists.txt
# once the targets exist.
#
#   bin/fdc-run
#   lib/libfdc_runtime.so
#   include/fdc_runtime.h, include/fdc_model_abi.h      the C API (stable)
#   include/fdc/runtime/...                             the C++ API
#   lib/cmake/fdc_runtime/fdc_runtimeConfig.cmake,
#     fdc_runtimeConfigVersion.cmake, fdc_runtimeTargets*.cmake
#       find_package(fdc_runtime) -> imported target fdc_runtime::fdc_runtime
#
# Everything is in the install component "fdc_runtime", so
# `cmake --install BUILD --component fdc_runtime` installs the runtime alone
# (a deployment without the compiler). Tests, fuzzers and the static
# fdc_runtime_cli library are not installed.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The package version: FDC_RUNTIME_API_VERSION (fdc_runtime.h) as the major
# number; find_package(fdc_runtime 1) accepts 1.x only.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/include/fdc_runtime.h _fdc_api_line
  REGEX "^#define FDC_RUNTIME_API_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _fdc_api_version "${_fdc_api_line}")
set(FDC_RUNTIME_VERSION ${_fdc_api_version}.0.0)

# Executables find our libraries relative to themselves ($ORIGIN/../lib), so
# an installed tree works from any prefix and never loads a build tree's
# library. Exported to the parent scope for the compiler's tools.
file(RELATIVE_PATH _fdc_bin_to_lib "/${CMAKE_INSTALL_BINDIR}"
  "/${CMAKE_INSTALL_LIBDIR}")
set(FDC_INSTALL_RPATH "$ORIGIN/${_fdc_bin_to_lib}")
if(NOT CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)
  set(FDC_INSTALL_RPATH "${FDC_INSTALL_RPATH}" PARENT_SCOPE)
endif()

# The library's soname stays libfdc_runtime.so (no SOVERSION): model
# libraries carry their own ABI version (fdc_model_abi.h), and scripts copy
# the one file libfdc_runtime.so next to fdc-run (test/gpu/prepare.sh).
add_library(fdc_runtime::fdc_runtime ALIAS fdc_runtime)
set_target_properties(fdc_runtime PROPERTIES EXPORT_NAME fdc_runtime)
# The C++ headers need C++17 in the user's code too.
target_compile_features(fdc_runtime PUBLIC cxx_std_17)
set_target_properties(fdc-run fdc-inspect fdc-tune fdc-pack PROPERTIES
  INSTALL_RPATH "${FDC_INSTALL_RPATH}")

install(TARGETS fdc_runtime EXPORT fdc_runtimeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT fdc_runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT fdc_runtime
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT fdc_runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS fdc-run fdc-inspect fdc-tune fdc-pack
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT fdc_runtime)

# Headers. RunCommand.h and ToolCommands.h are left out: fdcRunMain,
# fdcInspectMain, fdcTuneMain and fdcPackMain live in the static fdc_runtime_cli library,
# which is not installed.
install(FILES
  ${CMAKE_CURRENT_SOURCE_DIR}/include/fdc_runtime.h
  ${CMAKE_CURRENT_SOURCE_DIR}/include/fdc_model_abi.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT fdc_runtime)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/fdc
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT fdc_runtime
  FILES_MATCHING PATTERN "*.h"
  PATTERN "RunCommand.h" EXCLUDE
  PATTERN "ToolCommands.h" EXCLUDE)

# The CMake package.
set(FDC_RUNTIME_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fdc_runtime)
install(EXPORT fdc_runtimeTargets
  NAMESPACE fdc_runtime::
  DESTINATION ${FDC_RUNTIME_CMAKE_DIR} COMPONENT fdc_runtime)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/fdc_runtimeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/fdc_runtimeConfig.cmake
  INSTALL_DESTINATION ${FDC_RUNTIME_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/fdc_runtimeConfigVersion.cmake
  VERSION ${FDC_RUNTIME_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/fdc_runtimeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/fdc_runtimeConfigVersion.cmake
  DESTINATION ${FDC_RUNTIME_CMAKE_DIR} COMPONENT fdc_runtime)
