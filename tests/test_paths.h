#pragma once

// Paths of this build, compiled into one generated file (tests/CMakeLists.txt) rather than
// given as -D flags: an absolute path on a compile command makes every file compiled with it a
// compiler-cache miss in any other clone.
namespace oxtest {

// the source tree; OXMERA_TEST_SOURCE_DIR names another copy of it (scripts/gpu-check.sh runs
// the tests on a machine where the tree is elsewhere)
extern const char* const kSourceDir;
extern const char* const kCliPath;  // the built `oxmera` command; "" when tools are not built

}  // namespace oxtest
