# The CUDA backend of the runtime (included from runtime/CMakeLists.txt).
# The driver API is dlopen()ed at run time, so building the backend needs
# cuda.h only: no CUDA library is linked. FDC_RUNTIME_CUDA=AUTO builds it when
# cuda.h is found, ON requires it, OFF leaves it out (the runtime then refuses
# "cuda:..." libraries with a message saying so).
set(FDC_RUNTIME_CUDA AUTO CACHE STRING
  "Build the runtime's CUDA backend: AUTO (when cuda.h is found), ON, OFF")
set_property(CACHE FDC_RUNTIME_CUDA PROPERTY STRINGS AUTO ON OFF)

set(FDC_RUNTIME_HAS_CUDA OFF)
if(NOT FDC_RUNTIME_CUDA STREQUAL "OFF")
  find_path(FDC_CUDA_INCLUDE_DIR cuda.h
    HINTS ENV CUDA_HOME ENV CUDA_PATH ${CUDAToolkit_ROOT}
    PATH_SUFFIXES include
    PATHS /usr/local/cuda)
  if(FDC_CUDA_INCLUDE_DIR)
    set(FDC_RUNTIME_HAS_CUDA ON)
  elseif(FDC_RUNTIME_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FDC_RUNTIME_CUDA=ON but cuda.h was not found; set "
      "CUDA_HOME or FDC_CUDA_INCLUDE_DIR")
  endif()
endif()

target_sources(fdc_runtime PRIVATE lib/cuda/CudaTarget.cpp)
if(FDC_RUNTIME_HAS_CUDA)
  message(STATUS
    "fdc runtime: CUDA backend on (cuda.h in ${FDC_CUDA_INCLUDE_DIR})")
  set(FDC_RUNTIME_CUDA_SOURCES lib/cuda/CudaBackend.cpp lib/cuda/CudaDevice.cpp
    lib/cuda/CudaDriver.cpp lib/cuda/Nccl.cpp lib/cuda/NcclCollectiveGroup.cpp)
  target_sources(fdc_runtime PRIVATE ${FDC_RUNTIME_CUDA_SOURCES})
  # The header only, and only for these files.
  set_source_files_properties(${FDC_RUNTIME_CUDA_SOURCES} PROPERTIES
    INCLUDE_DIRECTORIES "${FDC_CUDA_INCLUDE_DIR}")
else()
  message(STATUS "fdc runtime: CUDA backend off (cuda.h not found or "
    "FDC_RUNTIME_CUDA=OFF)")
  target_sources(fdc_runtime PRIVATE lib/cuda/CudaUnavailable.cpp)
endif()
