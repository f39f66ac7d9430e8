#pragma once
// CRC32C (Castagnoli): the checksum of TFRecord frames and of checkpoint tensors. SSE4.2's
// CRC32 instruction where the CPU has it, a byte table otherwise (the same values).

#include <cstddef>
#include <cstdint>

namespace ox::io {

// The CRC32C of `size` bytes, continuing from `crc` (the result of the bytes before them).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// TFRecord stores CRCs rotated and offset, since a CRC of data that itself holds CRCs is weak.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ox::io
