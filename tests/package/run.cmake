# The ways a project uses oxmera, each built and run against the library this build already made
# (nothing here compiles oxmera again):
#   VIA=install:      installs into a scratch prefix, then builds tests/package/consumer through
#                     find_package(oxmera), the same main.cpp through pkg-config (a plain compiler
#                     line), and examples/cmake_project, the consumer users copy;
#   VIA=subdirectory: configures the consumer with add_subdirectory(oxmera) and builds it with
#                     the compiler cache, from a folder as deep as this build's, so every object
#                     of the library is a cache hit of this build's (OXMERA_CCACHE); without a
#                     cache it configures and compiles the consumer's own object only.
# Arguments: OXMERA_SOURCE_DIR, OXMERA_BUILD_DIR, WORK_DIR, GENERATOR, VIA, CXX, OXMERA_CCACHE.
file(REMOVE_RECURSE ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

set(consumer ${OXMERA_SOURCE_DIR}/tests/package/consumer)

if(VIA STREQUAL "install")
  set(prefix ${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --install ${OXMERA_BUILD_DIR} --prefix ${prefix})
  foreach(file lib/cmake/oxmera/oxmeraConfig.cmake lib/cmake/oxmera/oxmeraConfigVersion.cmake
               lib/pkgconfig/oxmera.pc include/oxmera/oxmera.h include/oxmera/version.h)
    if(NOT EXISTS ${prefix}/${file})
      message(FATAL_ERROR "install is missing ${file}")
    endif()
  endforeach()

  run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK_DIR}/package -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DOXMERA_VIA=package)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/package)
  run(${WORK_DIR}/package/consumer)

  # pkg-config, as a Makefile would use it: `c++ main.cpp $(pkg-config --cflags --libs oxmera)`.
  find_program(PKG_CONFIG pkg-config REQUIRED)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs oxmera RESULT_VARIABLE rc
                  OUTPUT_VARIABLE flags ERROR_VARIABLE error OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs oxmera failed: ${error}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CXX} ${consumer}/main.cpp ${flags} -o ${WORK_DIR}/pkg-config-consumer)
  run(${WORK_DIR}/pkg-config-consumer)

  set(build ${WORK_DIR}/example)
  run(${CMAKE_COMMAND} -S ${OXMERA_SOURCE_DIR}/examples/cmake_project -B ${build}
      -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
  run(${CMAKE_COMMAND} --build ${build})
  run(${build}/app)
elseif(VIA STREQUAL "subdirectory")
  set(build ${WORK_DIR})
  set(launcher "")
  if(OXMERA_CCACHE)
    # The settings the top-level build gives ccache (CMakeLists.txt), so the keys match.
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${OXMERA_CCACHE})
    set(ENV{CCACHE_BASEDIR} ${OXMERA_SOURCE_DIR})
    set(ENV{CCACHE_NOHASHDIR} 1)
  endif()
  run(${CMAKE_COMMAND} -S ${consumer} -B ${build} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DOXMERA_VIA=subdirectory -DOXMERA_SOURCE_DIR=${OXMERA_SOURCE_DIR} ${launcher})
  if(OXMERA_CCACHE)
    run(${CMAKE_COMMAND} --build ${build})
    run(${build}/consumer)
  else()
    run(${CMAKE_COMMAND} --build ${build} --target CMakeFiles/consumer.dir/main.cpp.o)
  endif()
else()
  message(FATAL_ERROR "VIA must be install or subdirectory, not '${VIA}'")
endif()
