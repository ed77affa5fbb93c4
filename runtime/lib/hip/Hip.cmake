# The HIP backend of the runtime (included from runtime/CMakeLists.txt).
# libamdhip64 is dlopen()ed at run time, so building the backend needs
# hip/hip_runtime_api.h only: nothing of ROCm is linked. FDC_RUNTIME_HIP=AUTO
# builds it when the header is found, ON requires it, OFF leaves it out (the
# runtime then refuses "rocm:..." libraries with a message saying so).
set(FDC_RUNTIME_HIP AUTO CACHE STRING
  "Build the runtime's HIP backend: AUTO (when hip_runtime_api.h is found), ON, OFF")
set_property(CACHE FDC_RUNTIME_HIP PROPERTY STRINGS AUTO ON OFF)

set(FDC_RUNTIME_HAS_HIP OFF)
if(NOT FDC_RUNTIME_HIP STREQUAL "OFF")
  find_path(FDC_HIP_INCLUDE_DIR hip/hip_runtime_api.h
    HINTS ENV ROCM_PATH ENV HIP_PATH
    PATH_SUFFIXES include
    PATHS /opt/rocm)
  if(FDC_HIP_INCLUDE_DIR)
    set(FDC_RUNTIME_HAS_HIP ON)
  elseif(FDC_RUNTIME_HIP STREQUAL "ON")
    message(FATAL_ERROR "FDC_RUNTIME_HIP=ON but hip/hip_runtime_api.h was not "
      "found; set ROCM_PATH or FDC_HIP_INCLUDE_DIR")
  endif()
endif()

target_sources(fdc_runtime PRIVATE lib/hip/HipTarget.cpp)
if(FDC_RUNTIME_HAS_HIP)
  message(STATUS
    "fdc runtime: HIP backend on (hip_runtime_api.h in ${FDC_HIP_INCLUDE_DIR})")
  set(FDC_RUNTIME_HIP_SOURCES lib/hip/HipBackend.cpp lib/hip/HipDevice.cpp
    lib/hip/HipRuntime.cpp)
  target_sources(fdc_runtime PRIVATE ${FDC_RUNTIME_HIP_SOURCES})
  # The header only, and only for these files; never -I/usr/include (Debian's
  # libamdhip64-dev), which would break libstdc++'s #include_next.
  if(NOT FDC_HIP_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    set_source_files_properties(${FDC_RUNTIME_HIP_SOURCES} PROPERTIES
      INCLUDE_DIRECTORIES "${FDC_HIP_INCLUDE_DIR}")
  endif()
else()
  message(STATUS "fdc runtime: HIP backend off (hip_runtime_api.h not found "
    "or FDC_RUNTIME_HIP=OFF)")
  target_sources(fdc_runtime PRIVATE lib/hip/HipUnavailable.cpp)
endif()
