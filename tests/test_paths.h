#pragma once

// Paths of this build, compiled into one generated file (tests/CMakeLists.txt) rather than
// given as -D flags: an absolute path on a compile command makes every file compiled with it a
// compiler-cache miss in any other clone.
namespace oxtest {

extern const char* const kSourceDir;  // the source tree
extern const char* const kCliPath;    // the built `oxmera` command; "" when tools are not built

}  // namespace oxtest
