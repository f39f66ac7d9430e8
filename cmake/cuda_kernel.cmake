# Compiles one kernel family (cmake -DFAMILY=fill -DSETTINGS=.../settings.cmake -P this file)
# into <gen>/<family>_image.cpp, the bytes the library embeds:
#   1. the stamp: SHA-256 (first 16 hex digits) of the nvcc version, flags, targets, host
#      compiler, and the contents of the family's .cu and of every header a kernel may include;
#   2. nvcc --fatbin, once with machine code for each target (compressed by nvcc; skipped when
#      there is no target), once with PTX for the lowest target (a plain fatbin, gzip-compressed
#      here and inflated by the library at load: PTX text shrinks ~8x); both compiled with
#      OXMERA_KERNEL_STAMP, which the kernels define as the device global `oxmera_kernel_stamp`
#      that the module loader checks. The stamp decides the output, so the fatbins are kept in
#      a cache under it (OXMERA_CUDA_KERNEL_CACHE, ~/.cache/oxmera/nvcc, when the build uses a
#      compiler cache): nvcc's fatbin mode skips the host-side compile that `nvcc -c` (which
#      ccache can cache) spends half its time on;
#   3. a check that the family included nothing from the source tree outside the stamped headers;
#   4. the image source: both fatbins as byte arrays, the family's name and stamp, and the
#      family's sources (the .cu and every header it included from the source tree, by the name
#      its #include uses) for the NVRTC fallback (src/backend/cuda/nvrtc.cpp).
# The stamp hashes no path, so the release and sanitizer builds and other clones share entries.
cmake_minimum_required(VERSION 3.25)
include(${SETTINGS})
set(src ${OXMERA_SOURCE_DIR})
set(gen ${OXMERA_CUDA_GEN})
set(cu src/backend/cuda/kernels/${FAMILY}.cu)

file(GLOB headers RELATIVE ${src} ${src}/src/backend/cuda/kernels/*.cuh ${src}/src/core/*.h
     ${src}/src/core/ops/*.h ${src}/include/oxmera/core/*.h)
list(SORT headers)
set(text "nvcc ${OXMERA_NVCC_VERSION}\nflags ${OXMERA_NVCC_FLAGS}\n")
string(APPEND text "targets ${OXMERA_CUDA_ARCH_LIST} ptx ${OXMERA_CUDA_PTX_ARCH}\n")
string(APPEND text "host ${OXMERA_HOST_COMPILER}\n")
foreach(file ${cu} ${headers})
  file(SHA256 ${src}/${file} hash)
  string(APPEND text "${file} ${hash}\n")
endforeach()
string(SHA256 stamp "${text}")
string(SUBSTRING ${stamp} 0 16 stamp)

set(gencode "")
foreach(arch ${OXMERA_CUDA_ARCH_LIST})
  list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
endforeach()
set(common ${OXMERA_NVCC_FLAGS} "-DOXMERA_KERNEL_STAMP=\"${stamp}\"" -x cu --fatbin ${cu})

function(compile kind)
  execute_process(COMMAND ${OXMERA_NVCC} ${common} ${ARGN} -o ${gen}/${FAMILY}.${kind}.fatbin
                  WORKING_DIRECTORY ${src} RESULT_VARIABLE rc)
  file(SIZE ${gen}/${FAMILY}.${kind}.fatbin size)
  if(NOT rc EQUAL 0 OR size EQUAL 0)
    message(FATAL_ERROR "nvcc failed on ${cu} (${kind})")
  endif()
endfunction()
set(outputs ${FAMILY}.ptx.fatbin ${FAMILY}.sass.fatbin ${FAMILY}.d)
set(cached ${OXMERA_CUDA_KERNEL_CACHE}/${FAMILY}-${stamp})
if(OXMERA_CUDA_KERNEL_CACHE AND EXISTS ${cached}/${FAMILY}.d)
  foreach(output ${outputs})
    file(COPY_FILE ${cached}/${output} ${gen}/${output})
  endforeach()
else()
  compile(ptx -gencode arch=compute_${OXMERA_CUDA_PTX_ARCH},code=compute_${OXMERA_CUDA_PTX_ARCH}
          --compress-mode=none -MD -MF ${gen}/${FAMILY}.d)
  if(gencode)
    compile(sass ${gencode} --compress-mode=size)
  else()  # empty, not absent: the build lists it as an output, and a missing one reruns the step
    file(WRITE ${gen}/${FAMILY}.sass.fatbin "")
  endif()
  if(OXMERA_CUDA_KERNEL_CACHE)  # written beside the entry, then renamed: never seen half written
    string(RANDOM LENGTH 8 suffix)
    file(MAKE_DIRECTORY ${cached}.${suffix})
    foreach(output ${outputs})
      file(COPY_FILE ${gen}/${output} ${cached}.${suffix}/${output})
    endforeach()
    file(RENAME ${cached}.${suffix} ${cached} RESULT renamed)
    if(NOT renamed EQUAL 0)  # another build stored it first
      file(REMOVE_RECURSE ${cached}.${suffix})
    endif()
  endif()
endif()
# gzip with the header's time stamp zeroed, so that the same PTX gives the same bytes (and the
# image source the same compiler cache entry).
file(ARCHIVE_CREATE OUTPUT ${gen}/${FAMILY}.ptx.fatbin.gz PATHS ${gen}/${FAMILY}.ptx.fatbin
     FORMAT raw COMPRESSION GZip COMPRESSION_LEVEL 9)

# Everything the family included from the source tree must be in the stamp; those files are
# embedded too.
set(embedded ${cu})
file(READ ${gen}/${FAMILY}.d deps)
string(REGEX REPLACE "\\\\\n" " " deps "${deps}")
string(REGEX REPLACE "^[^:]*:" "" deps "${deps}")
separate_arguments(deps UNIX_COMMAND "${deps}")
foreach(dep ${deps})
  get_filename_component(dep ${dep} ABSOLUTE BASE_DIR ${src})
  file(RELATIVE_PATH rel ${src} ${dep})
  if(NOT rel MATCHES "^\\.\\./" AND NOT rel STREQUAL cu AND NOT rel IN_LIST headers)
    message(FATAL_ERROR "${cu} includes ${rel}, which the kernel stamp does not cover: kernels "
                        "may include src/backend/cuda/kernels/*.cuh, src/core/*.h, "
                        "src/core/ops/*.h and include/oxmera/core/*.h (or extend "
                        "cmake/cuda_kernel.cmake)")
  endif()
  if(rel IN_LIST headers)
    list(APPEND embedded ${rel})
  endif()
endforeach()
list(REMOVE_DUPLICATES embedded)

function(byte_array name file out)
  file(SIZE ${file} size)
  if(size EQUAL 0)
    set(${out} "constexpr const unsigned char* ${name} = nullptr;\nconstexpr size_t ${name}_size = 0;\n"
        PARENT_SCOPE)
    return()
  endif()
  file(READ ${file} hex HEX)
  if(name STREQUAL "ptx_gz")  # bytes 4-7 of a gzip header: the modification time
    string(SUBSTRING "${hex}" 0 8 head)
    string(SUBSTRING "${hex}" 16 -1 tail)
    set(hex "${head}00000000${tail}")
  endif()
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
                       "\\1\n" hex "${hex}")
  set(${out} "alignas(8) const unsigned char ${name}[] = {\n${hex}};\nconstexpr size_t ${name}_size = sizeof ${name};\n"
      PARENT_SCOPE)
endfunction()
byte_array(machine_code ${gen}/${FAMILY}.sass.fatbin machine)
byte_array(ptx_gz ${gen}/${FAMILY}.ptx.fatbin.gz ptx)
# The sources as NUL-terminated byte arrays, each named as an #include names it (relative to
# -Isrc or -Iinclude; the .cu by its path in the tree).
set(source_arrays "")
set(source_table "")
set(index 0)
foreach(file ${embedded})
  file(READ ${src}/${file} hex HEX)
  string(APPEND hex "00")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND source_arrays "const unsigned char source_${index}[] = {\n${hex}};\n")
  string(REGEX REPLACE "^(src|include)/" "" name ${file})
  if(file STREQUAL cu)
    set(name ${cu})
  endif()
  string(APPEND source_table "    {\"${name}\", source_${index}},\n")
  math(EXPR index "${index} + 1")
endforeach()
file(WRITE ${gen}/${FAMILY}_image.cpp.tmp
     "// Generated by cmake/cuda_kernel.cmake from ${cu}: do not edit.\n"
     "#include \"backend/cuda/image.h\"\n\nnamespace {\n\n${machine}\n${ptx}\n${source_arrays}\n"
     "const ox::cuda::detail::KernelSource sources[] = {\n${source_table}};\n\n"
     "}  // namespace\n\n"
     "namespace ox::cuda::detail {\n\n"
     "extern const KernelImage kernel_image_${FAMILY};\n"
     "const KernelImage kernel_image_${FAMILY}{\"${FAMILY}\", \"${stamp}\", machine_code,\n"
     "                                      machine_code_size, ptx_gz, ptx_gz_size,\n"
     "                                      sources, sizeof sources / sizeof sources[0]};\n\n"
     "}  // namespace ox::cuda::detail\n")
file(RENAME ${gen}/${FAMILY}_image.cpp.tmp ${gen}/${FAMILY}_image.cpp)
