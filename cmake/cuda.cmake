# The CUDA kernels and run-time loader (docs/CUDA.md). Included by the top-level CMakeLists after
# the oxmera target exists.
#
# Nothing here links CUDA: the driver (libcuda.so.1) and the optional libraries are loaded at run
# time with dlopen, and <cuda.h> gives their types only. Each kernel family
# src/backend/cuda/kernels/<family>.cu is compiled by nvcc (through the compiler cache, so the
# sanitizer build and later builds reuse it) into two fatbins: machine code for the targets of
# OXMERA_CUDA_ARCHS (compressed by nvcc; none on a machine without a GPU), and PTX for the lowest
# supported target, for any GPU of that generation or newer to JIT (gzip-compressed here). Both
# are embedded in the library with the family's stamp (cmake/cuda_kernel.cmake).
option(OXMERA_CUDA "Build the CUDA kernels and runtime (where nvcc is found)" ON)
set(OXMERA_CUDA_ARCHS "" CACHE STRING
    "Compute capabilities to embed machine code for: empty (this machine's GPUs; none without \
one: PTX only), \"all\" (every generation since 7.5, for packages) or a list, e.g. \"86;90\"")

set(OXMERA_CUDA_ENABLED OFF)
set(OXMERA_CUDA_REASON "")
if(NOT OXMERA_CUDA)
  set(OXMERA_CUDA_REASON "this library was built with OXMERA_CUDA=OFF")
else()
  find_program(OXMERA_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin)
  if(NOT OXMERA_NVCC)
    set(OXMERA_CUDA_REASON
        "this library was built without CUDA (nvcc was not found at configure time)")
  endif()
endif()

if(OXMERA_NVCC AND OXMERA_CUDA)
  get_filename_component(OXMERA_NVCC_REAL ${OXMERA_NVCC} REALPATH)
  get_filename_component(OXMERA_CUDA_ROOT ${OXMERA_NVCC_REAL} DIRECTORY)
  get_filename_component(OXMERA_CUDA_ROOT ${OXMERA_CUDA_ROOT} DIRECTORY)
  find_path(OXMERA_CUDA_INCLUDE_DIR cuda.h NO_DEFAULT_PATH
            PATHS ${OXMERA_CUDA_ROOT}/include ${OXMERA_CUDA_ROOT}/targets/x86_64-linux/include
                  ${OXMERA_CUDA_ROOT}/targets/sbsa-linux/include)
  execute_process(COMMAND ${OXMERA_NVCC} --version OUTPUT_VARIABLE nvcc_version_text
                  RESULT_VARIABLE nvcc_rc)
  execute_process(COMMAND ${OXMERA_NVCC} --list-gpu-arch OUTPUT_VARIABLE nvcc_arch_text)
  string(REGEX MATCH "release [0-9.]+, V([0-9.]+)" _ "${nvcc_version_text}")
  set(OXMERA_NVCC_VERSION "${CMAKE_MATCH_1}")
  if(NOT nvcc_rc EQUAL 0 OR NOT OXMERA_NVCC_VERSION)
    set(OXMERA_CUDA_REASON "this library was built without CUDA (${OXMERA_NVCC} --version failed)")
  elseif(NOT OXMERA_CUDA_INCLUDE_DIR)
    set(OXMERA_CUDA_REASON
        "this library was built without CUDA (nvcc ${OXMERA_NVCC_VERSION} found, but not cuda.h)")
  else()
    set(OXMERA_CUDA_ENABLED ON)
  endif()
endif()

if(NOT OXMERA_CUDA_ENABLED)
  message(STATUS "oxmera: CUDA off: ${OXMERA_CUDA_REASON}")
  # On the two files that need it: the library's other files keep the commands (and compiler
  # cache entries) of every build.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/backend/cuda/off/cuda_off.cpp
                              ${PROJECT_SOURCE_DIR}/src/distributed/nccl/nccl_off.cpp PROPERTIES
                              COMPILE_DEFINITIONS "OXMERA_CUDA_REASON=\"${OXMERA_CUDA_REASON}\"")
  return()
endif()

# Machine code takes nvcc a pass per target, so by default only for the GPUs this machine has
# (none: PTX only, which every GPU of compute capability 7.5 or newer JIT-compiles at first use).
# "all": 7.5 to 9.0, then the first target of each newer major this nvcc knows (a cubin runs on
# every later minor of its major: sm_100 code on 10.3, sm_120 on 12.1).
string(REGEX MATCHALL "compute_[0-9]+" nvcc_known "${nvcc_arch_text}")
list(TRANSFORM nvcc_known REPLACE "compute_" "")
set(OXMERA_CUDA_PTX_ARCH 75)  # the lowest supported target
set(all_archs 75 80 86 89 90)
set(newest_major 9)
foreach(arch ${nvcc_known})
  math(EXPR major "${arch} / 10")
  if(major GREATER newest_major)
    list(APPEND all_archs ${arch})
    set(newest_major ${major})
  endif()
endforeach()
if(OXMERA_CUDA_ARCHS STREQUAL "all")
  set(archs ${all_archs})
  set(OXMERA_CUDA_ARCHS_HOW "all")
elseif(OXMERA_CUDA_ARCHS)
  set(archs ${OXMERA_CUDA_ARCHS})
  set(OXMERA_CUDA_ARCHS_HOW "chosen")
else()
  # The toolkit's own device query (what CMake's CUDA_ARCHITECTURES=native runs), else
  # nvidia-smi; either fails quietly where there is no GPU or driver.
  set(archs "")
  find_program(OXMERA_NVCC_DEVICE_QUERY __nvcc_device_query HINTS ${OXMERA_CUDA_ROOT}/bin
               NO_DEFAULT_PATH)
  find_program(OXMERA_NVIDIA_SMI nvidia-smi)
  if(OXMERA_NVCC_DEVICE_QUERY)
    execute_process(COMMAND ${OXMERA_NVCC_DEVICE_QUERY} OUTPUT_VARIABLE found RESULT_VARIABLE rc
                    ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+" archs "${found}")
    endif()
  endif()
  if(NOT archs AND OXMERA_NVIDIA_SMI)
    execute_process(COMMAND ${OXMERA_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE found RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" found "${found}")
      list(TRANSFORM found REPLACE "\\." "")
      set(archs ${found})
    endif()
  endif()
  # A GPU older than 7.5 cannot run the kernels; one newer than this nvcc knows runs the PTX.
  set(detected ${archs})
  set(archs "")
  foreach(arch ${detected})
    if(arch GREATER_EQUAL OXMERA_CUDA_PTX_ARCH AND arch IN_LIST nvcc_known)
      list(APPEND archs ${arch})
    endif()
  endforeach()
  set(OXMERA_CUDA_ARCHS_HOW "this machine's GPUs")
endif()
list(TRANSFORM archs REPLACE "^(sm_|compute_)" "")
list(REMOVE_DUPLICATES archs)
list(SORT archs COMPARE NATURAL)
foreach(arch ${archs})
  if(NOT arch IN_LIST nvcc_known OR arch LESS OXMERA_CUDA_PTX_ARCH)
    message(FATAL_ERROR "OXMERA_CUDA_ARCHS: ${OXMERA_NVCC} (CUDA ${OXMERA_NVCC_VERSION}) does not "
                        "know compute capability ${arch}, or it is older than 7.5; it knows "
                        "${nvcc_known} (or say \"all\", or leave it empty for this machine's GPUs)")
  endif()
endforeach()
set(OXMERA_CUDA_ARCH_LIST ${archs})
if(archs)
  message(STATUS "oxmera: CUDA ${OXMERA_NVCC_VERSION} (${OXMERA_NVCC}): machine code for "
                 "${OXMERA_CUDA_ARCH_LIST} (${OXMERA_CUDA_ARCHS_HOW}), PTX for ${OXMERA_CUDA_PTX_ARCH}")
else()
  message(STATUS "oxmera: CUDA ${OXMERA_NVCC_VERSION} (${OXMERA_NVCC}): PTX for "
                 "${OXMERA_CUDA_PTX_ARCH} only (no GPU here; OXMERA_CUDA_ARCHS=all for machine code)")
endif()

# The toolkit's stub libcuda.so (its cuInit fails with CUDA_ERROR_STUB_LIBRARY): the tests load
# it through OXMERA_CUDA_DRIVER, a real "driver present but unusable" case.
find_file(OXMERA_CUDA_STUB_DRIVER libcuda.so NO_DEFAULT_PATH
          PATHS ${OXMERA_CUDA_ROOT}/lib64/stubs ${OXMERA_CUDA_ROOT}/lib/stubs
                ${OXMERA_CUDA_ROOT}/targets/x86_64-linux/lib/stubs)
set(OXMERA_CUDA_STUB "")
if(OXMERA_CUDA_STUB_DRIVER)
  set(OXMERA_CUDA_STUB ${OXMERA_CUDA_STUB_DRIVER})
endif()
find_program(OXMERA_PTXAS ptxas HINTS ${OXMERA_CUDA_ROOT}/bin NO_DEFAULT_PATH)

# Settings the compile script reads (one file, so lists need no escaping on command lines).
# Compiled kernel families are kept under their stamps (cuda_kernel.cmake) when the build uses a
# compiler cache: in $XDG_CACHE_HOME/oxmera/nvcc or ~/.cache/oxmera/nvcc ("" keeps none).
set(kernel_cache "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(kernel_cache "$ENV{XDG_CACHE_HOME}/oxmera/nvcc")
  elseif(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
    set(kernel_cache "$ENV{HOME}/.cache/oxmera/nvcc")
  endif()
endif()
set(OXMERA_CUDA_KERNEL_CACHE "${kernel_cache}" CACHE PATH
    "Where compiled CUDA kernel families are kept by their stamps (empty: nowhere)")
# Outside generated/, whose headers are installed.
set(OXMERA_CUDA_GEN ${PROJECT_BINARY_DIR}/cuda-kernels)
# Every nvcc warning is an error, as -Werror is for the C++ (the families compile without one).
set(OXMERA_NVCC_FLAGS -std=c++20 --expt-relaxed-constexpr -O3 -Werror all-warnings -Isrc -Iinclude)
configure_file(${PROJECT_SOURCE_DIR}/cmake/cuda_settings.cmake.in ${OXMERA_CUDA_GEN}/settings.cmake
               @ONLY)

file(GLOB OXMERA_CUDA_KERNELS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/kernels/*.cu)
# The headers a kernel may include, all in every family's stamp (cuda_kernel.cmake checks it).
file(GLOB OXMERA_CUDA_KERNEL_HEADERS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/src/backend/cuda/kernels/*.cuh ${PROJECT_SOURCE_DIR}/src/core/*.h
     ${PROJECT_SOURCE_DIR}/src/core/ops/*.h ${PROJECT_SOURCE_DIR}/include/oxmera/core/*.h)
set(families "")
set(image_sources "")
foreach(kernel ${OXMERA_CUDA_KERNELS})
  get_filename_component(family ${kernel} NAME_WE)
  list(APPEND families ${family})
  list(APPEND image_sources ${OXMERA_CUDA_GEN}/${family}_image.cpp)
  add_custom_command(
    OUTPUT ${OXMERA_CUDA_GEN}/${family}_image.cpp
    BYPRODUCTS ${OXMERA_CUDA_GEN}/${family}.sass.fatbin ${OXMERA_CUDA_GEN}/${family}.ptx.fatbin
               ${OXMERA_CUDA_GEN}/${family}.ptx.fatbin.gz
    COMMAND ${CMAKE_COMMAND} -DFAMILY=${family} -DSETTINGS=${OXMERA_CUDA_GEN}/settings.cmake
            -P ${PROJECT_SOURCE_DIR}/cmake/cuda_kernel.cmake
    DEPENDS ${kernel} ${OXMERA_CUDA_KERNEL_HEADERS} ${PROJECT_SOURCE_DIR}/cmake/cuda_kernel.cmake
            ${OXMERA_CUDA_GEN}/settings.cmake
    COMMENT "nvcc: CUDA kernels ${family} (sm ${OXMERA_CUDA_ARCH_LIST}; PTX ${OXMERA_CUDA_PTX_ARCH})"
    VERBATIM)
endforeach()

# The table of families (the module loader looks a family up here by name).
set(table "// Generated by cmake/cuda.cmake: the kernel families embedded in this library.\n")
string(APPEND table "#include \"backend/cuda/image.h\"\n\nnamespace ox::cuda::detail {\n\n")
foreach(family ${families})
  string(APPEND table "extern const KernelImage kernel_image_${family};\n")
endforeach()
string(APPEND table "\nstd::span<const KernelImage* const> kernel_images() {\n"
                    "  static const KernelImage* const images[] = {\n")
foreach(family ${families})
  string(APPEND table "      &kernel_image_${family},\n")
endforeach()
list(JOIN OXMERA_CUDA_ARCH_LIST "," arch_csv)
string(APPEND table "  };\n  return images;\n}\n\n"
                    "const KernelBuild& kernel_build() {\n"
                    "  static const KernelBuild build{\"${OXMERA_NVCC_VERSION}\", \"${arch_csv}\", "
                    "${OXMERA_CUDA_PTX_ARCH}, \"${OXMERA_CUDA_ARCHS_HOW}\"};\n  return build;\n}\n\n"
                    "}  // namespace ox::cuda::detail\n")
file(CONFIGURE OUTPUT ${OXMERA_CUDA_GEN}/kernel_table.cpp CONTENT "${table}")

target_sources(oxmera PRIVATE ${image_sources} ${OXMERA_CUDA_GEN}/kernel_table.cpp)
# <cuda.h> (types only) for the runtime's files alone, as above.
file(GLOB runtime_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cpp)
set_source_files_properties(${runtime_sources} PROPERTIES COMPILE_OPTIONS
                            "-isystem;${OXMERA_CUDA_INCLUDE_DIR}")
# The NVRTC fallback looks for libcu++'s headers in this toolkit too (after the environment's).
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/backend/cuda/nvrtc.cpp PROPERTIES
                            COMPILE_DEFINITIONS "OXMERA_CUDA_BUILD_INCLUDE=\"${OXMERA_CUDA_INCLUDE_DIR}\"")
target_link_libraries(oxmera PRIVATE ${CMAKE_DL_LIBS})
