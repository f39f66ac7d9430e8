#include "data/idx_format.h"

#include <bit>
#include <cstring>

#include "oxmera/core/error.h"

namespace ox::data {
namespace {

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool idx_dtype(uint8_t type, DType* out) {
  switch (type) {
    case 0x08:
      *out = kU8;
      return true;
    case 0x09:
      *out = kI8;
      return true;
    case 0x0B:
      *out = kI16;
      return true;
    case 0x0C:
      *out = kI32;
      return true;
    case 0x0D:
      *out = kF32;
      return true;
    case 0x0E:
      *out = kF64;
      return true;
    default:
      return false;
  }
}

}  // namespace

IdxHeader parse_idx_header(const uint8_t* bytes, size_t size, std::string_view source) {
  OX_CHECK(size >= 4, Format, kReadIdx, source, ": file of ", size,
           " bytes is shorter than the 4-byte IDX magic");
  OX_CHECK(bytes[0] == 0 && bytes[1] == 0, Format, kReadIdx, source,
           ": bad IDX magic: the first two bytes are ", int(bytes[0]), " and ", int(bytes[1]),
           ", not 0 and 0");
  IdxHeader header;
  OX_CHECK(idx_dtype(bytes[2], &header.dtype), Format, kReadIdx, source,
           ": unsupported IDX type byte 0x", std::hex, int(bytes[2]), std::dec,
           " (expected 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32 or 0x0E f64)");
  const int dims = bytes[3];
  OX_CHECK(dims >= 1 && dims <= kMaxIdxDims, Format, kReadIdx, source, ": IDX dims count ", dims,
           " is outside [1, ", kMaxIdxDims, "]");
  header.data_start = 4 + 4 * size_t(dims);
  OX_CHECK(size >= header.data_start, Format, kReadIdx, source, ": header of ", dims,
           " dims needs ", header.data_start, " bytes, the file has ", size);
  const size_t element = dtype_size(header.dtype);
  size_t numel = 1;
  for (int d = 0; d < dims; ++d) {
    const uint32_t extent = read_be32(bytes + 4 + 4 * d);
    header.shape.push_back(int64_t(extent));
    // Checked: a lying header must not wrap around to a small size that the file matches.
    OX_CHECK(extent == 0 || numel <= SIZE_MAX / element / extent, Format, kReadIdx, source,
             ": IDX dims overflow the addressable size at dim ", d, " (", extent, ")");
    numel *= extent;
  }
  header.numel = numel;
  header.payload_bytes = numel * element;
  return header;
}

IdxHeader parse_idx(const uint8_t* bytes, size_t size, std::string_view source) {
  IdxHeader header = parse_idx_header(bytes, size, source);
  const size_t have = size - header.data_start;
  OX_CHECK(have >= header.payload_bytes, Format, kReadIdx, source,
           ": truncated: the header claims ", header.numel, " elements of ",
           dtype_name(header.dtype), " (", header.payload_bytes, " bytes), only ", have,
           " bytes follow it");
  OX_CHECK(have == header.payload_bytes, Format, kReadIdx, source, ": ",
           have - header.payload_bytes, " trailing bytes after the ", header.payload_bytes,
           "-byte payload");
  return header;
}

void decode_idx_payload(const IdxHeader& header, const uint8_t* bytes, void* out) {
  const uint8_t* src = bytes + header.data_start;
  auto* dst = static_cast<uint8_t*>(out);
  const size_t element = dtype_size(header.dtype);
  if (element == 1 || std::endian::native == std::endian::big) {
    if (header.payload_bytes) std::memcpy(dst, src, header.payload_bytes);
    return;
  }
  for (size_t i = 0; i < header.numel; ++i)
    for (size_t b = 0; b < element; ++b) dst[i * element + b] = src[i * element + element - 1 - b];
}

}  // namespace ox::data
