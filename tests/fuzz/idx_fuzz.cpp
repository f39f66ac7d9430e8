// libFuzzer target for the IDX parser (src/data/idx_format.cpp), built and run by
// scripts/fuzz.sh with ASan and UBSan. An ox::Error of kind Format is the expected answer to a
// bad file; a crash, a sanitizer report, a leak or any other exception is a finding. A file
// that parses must come back byte for byte: its header rebuilt from the parse, and its payload
// decoded and encoded big-endian again.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "data/idx_format.h"
#include "oxmera/core/error.h"

namespace {

uint8_t type_byte(ox::DType dtype) {
  switch (dtype) {
    case ox::kU8:
      return 0x08;
    case ox::kI8:
      return 0x09;
    case ox::kI16:
      return 0x0B;
    case ox::kI32:
      return 0x0C;
    case ox::kF32:
      return 0x0D;
    case ox::kF64:
      return 0x0E;
    default:
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ox::data::IdxHeader header;
  try {
    header = ox::data::parse_idx(data, size, "<fuzz>");
  } catch (const ox::Error& e) {
    if (e.kind() != ox::ErrorKind::Format) {
      std::fprintf(stderr, "unexpected error kind %s: %s\n", ox::error_kind_name(e.kind()),
                   e.what());
      std::abort();
    }
    return 0;
  }

  std::vector<uint8_t> file{0, 0, type_byte(header.dtype), uint8_t(header.shape.size())};
  for (int64_t d : header.shape)
    for (int shift = 24; shift >= 0; shift -= 8) file.push_back(uint8_t(uint64_t(d) >> shift));
  if (file.size() != header.data_start || file.size() + header.payload_bytes != size ||
      std::memcmp(file.data(), data, file.size()) != 0) {
    std::fprintf(stderr, "rebuilt header differs from the input\n");
    std::abort();
  }
  std::vector<uint8_t> host(header.payload_bytes);
  ox::data::decode_idx_payload(header, data, host.data());
  const size_t element = ox::dtype_size(header.dtype);
  for (size_t i = 0; i < header.numel; ++i)
    for (size_t b = 0; b < element; ++b) {
      const uint8_t big = data[header.data_start + i * element + b];
      // Host order is little-endian on every machine the fuzzer runs on.
      if (host[i * element + element - 1 - b] != big) {
        std::fprintf(stderr, "payload element %zu decoded wrong\n", i);
        std::abort();
      }
    }
  return 0;
}
