#pragma once
// The embedded PTX of a kernel family, read back from the library: the host tests check that
// every kernel a launcher can ask for is defined there (a missing name would be an Internal error
// at run time on a GPU, which CI cannot see).

#include <set>
#include <string>

#include "backend/cuda/image.h"

namespace oxtest {

inline std::string embedded_ptx(const char* family) {
  const std::span<const unsigned char> fatbin =
      ox::cuda::detail::ptx_fatbin(ox::cuda::detail::kernel_image(family));
  return std::string(ox::cuda::detail::ptx_text(
      ox::cuda::detail::parse_fatbin(fatbin.data(), fatbin.size()).at(0)));
}

// The names of the kernels (".entry <name>(") the family defines.
inline std::set<std::string> ptx_kernels(const char* family) {
  const std::string ptx = embedded_ptx(family);
  std::set<std::string> names;
  const std::string marker = ".entry ";
  for (size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at)) {
    at += marker.size();
    names.insert(ptx.substr(at, ptx.find_first_of(" (\n", at) - at));
  }
  return names;
}

inline bool ptx_defines(const std::string& ptx, const std::string& kernel) {
  return ptx.find(".entry " + kernel + "(") != std::string::npos;
}

}  // namespace oxtest
