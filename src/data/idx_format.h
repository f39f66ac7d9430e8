#pragma once
// The IDX container (MNIST, Fashion-MNIST) without tensors: validating a file's header against
// the bytes that follow it, and decoding its big-endian payload. Depends on core only, so the
// fuzz target (tests/fuzz/idx_fuzz.cpp) compiles it on its own.
//
// Layout (http://yann.lecun.com/exdb/mnist/): two zero bytes, a type byte (0x08 u8, 0x09 i8,
// 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64), a dims count byte, one big-endian u32 per dim, then
// the elements, big-endian, row-major, with nothing after them.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "oxmera/core/dtype.h"

namespace ox::data {

// The op every error of the IDX reader names.
inline constexpr const char* kReadIdx = "read_idx";

// More dims than any IDX dataset has; a larger count is taken for a corrupt header.
inline constexpr int kMaxIdxDims = 8;

struct IdxHeader {
  DType dtype = kU8;
  std::vector<int64_t> shape;
  size_t data_start = 0;  // bytes of header: 4 + 4 * dims
  size_t numel = 0;
  size_t payload_bytes = 0;  // numel * element size
};

// The header of an IDX file whose first `size` bytes are at `bytes`, without looking at the
// payload. Throws ErrorKind::Format naming `source` for a bad magic, type, dims count or dim,
// a header cut short, or a size that overflows.
IdxHeader parse_idx_header(const uint8_t* bytes, size_t size, std::string_view source);

// parse_idx_header, and checks that exactly payload_bytes follow the header (Format for a
// truncated file or one with trailing bytes). Memory use is bounded by `size`.
IdxHeader parse_idx(const uint8_t* bytes, size_t size, std::string_view source);

// Copies the payload of a file parse_idx accepted into `out` (header.payload_bytes bytes), in
// host byte order.
void decode_idx_payload(const IdxHeader& header, const uint8_t* bytes, void* out);

}  // namespace ox::data
