# Installs the built library into a scratch prefix, then configures, builds and runs the
# consumer project twice: through find_package(oxmera) and through add_subdirectory; then
# examples/cmake_project (find_package and one target_link_libraries line) the same way.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install ${OXMERA_BUILD_DIR} --prefix ${prefix})
foreach(file lib/cmake/oxmera/oxmeraConfig.cmake lib/cmake/oxmera/oxmeraConfigVersion.cmake
             lib/pkgconfig/oxmera.pc include/oxmera/oxmera.h include/oxmera/version.h)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install is missing ${file}")
  endif()
endforeach()

foreach(via package subdirectory)
  set(build ${WORK_DIR}/${via})
  run(${CMAKE_COMMAND} -S ${OXMERA_SOURCE_DIR}/tests/package/consumer -B ${build} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DOXMERA_VIA=${via}
      -DOXMERA_SOURCE_DIR=${OXMERA_SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${build})
  run(${build}/consumer)
endforeach()

set(build ${WORK_DIR}/example)
run(${CMAKE_COMMAND} -S ${OXMERA_SOURCE_DIR}/examples/cmake_project -B ${build} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${build})
run(${build}/app)
