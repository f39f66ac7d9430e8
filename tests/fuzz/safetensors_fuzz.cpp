// libFuzzer target for the safetensors header parser (src/io/safetensors_format.cpp), built
// and run by scripts/fuzz.sh with ASan and UBSan. An ox::Error is an expected answer to a bad
// file; a crash, a sanitizer report, a leak or any other exception is a finding. A file that
// parses must survive a round trip: rebuilding its header and parsing that gives it back.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/safetensors_format.h"
#include "oxmera/core/error.h"

namespace {

bool same(const ox::io::SafetensorsHeader& a, const ox::io::SafetensorsHeader& b) {
  if (a.metadata != b.metadata || a.entries.size() != b.entries.size()) return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const auto &x = a.entries[i], &y = b.entries[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.begin != y.begin ||
        x.end != y.end)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ox::io::SafetensorsHeader parsed;
  try {
    parsed = ox::io::parse_safetensors(data, size, "<fuzz>");
  } catch (const ox::Error& e) {
    if (e.kind() != ox::ErrorKind::Format && e.kind() != ox::ErrorKind::DType) {
      std::fprintf(stderr, "unexpected error kind %s: %s\n", ox::error_kind_name(e.kind()),
                   e.what());
      std::abort();
    }
    return 0;
  }

  const std::string header = ox::io::build_safetensors_header(parsed.entries, parsed.metadata);
  std::string file;
  for (int i = 0; i < 8; ++i) file += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  file += header;
  file.append(reinterpret_cast<const char*>(data) + parsed.data_start, size - parsed.data_start);
  const auto reparsed = ox::io::parse_safetensors(reinterpret_cast<const uint8_t*>(file.data()),
                                                  file.size(), "<fuzz round trip>");
  if (!same(parsed, reparsed)) {
    std::fprintf(stderr, "round trip changed the header\n");
    std::abort();
  }
  return 0;
}
