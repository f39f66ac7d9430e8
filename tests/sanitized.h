#pragma once
// Whether this test program runs under AddressSanitizer: asked at run time, because the test
// programs' own files are compiled alike in the release and sanitizer builds (the library and
// the command under test are what the sanitizers instrument; tests/CMakeLists.txt).

#include <dlfcn.h>

namespace oxtest {

inline bool sanitized() {
  static const bool asan = ::dlsym(RTLD_DEFAULT, "__asan_init") != nullptr;
  return asan;
}

}  // namespace oxtest
