#pragma once
// A read-only zip reader for PyTorch's zip checkpoints, over bytes held in memory: the central
// directory (zip64 too), entries stored or deflated (through zlib), CRC-32 checked. Depends on
// core and zlib only (the fuzz target compiles it on its own).
//
// Refused, each a Format error "[load_pytorch] <source>: zip ...": no end-of-central-directory
// record (not a zip, or truncated), a central directory or local header outside the file,
// multi-disk archives, encrypted entries, methods other than stored and deflate, duplicate
// names, entries whose data overlap or run past the central directory, a stored entry whose
// sizes differ, a deflated entry declaring more than kMaxInflateRatio times its compressed size
// (deflate cannot expand further: a zip bomb) or inflating to other than its declared size, and
// a CRC-32 mismatch.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ox::io {

// The op every error of the PyTorch checkpoint reader names (zip, pickle and storages alike).
inline constexpr std::string_view kLoadPytorch = "load_pytorch";

inline constexpr uint64_t kMaxInflateRatio = 1032;  // deflate's own maximum expansion

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;  // of the (compressed) bytes in the file
};

// The entries of the archive in `bytes`, in central-directory order.
std::vector<ZipEntry> read_zip_directory(const uint8_t* bytes, size_t size,
                                         std::string_view source);

// An entry's uncompressed bytes: a view into `bytes` for a stored entry, else inflated into
// `*owned` (which the view then points into).
std::string_view read_zip_entry(const uint8_t* bytes, size_t size, const ZipEntry& entry,
                                std::string_view source, std::shared_ptr<std::string>* owned);

}  // namespace ox::io
