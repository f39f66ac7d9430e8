#pragma once
// The safetensors container without tensors: parsing and validating a file's header from
// bytes, and building the header a writer puts in front of its data. Depends on core only, so
// the fuzz target (tests/fuzz/safetensors_fuzz.cpp) compiles it on its own.
//
// Layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length
// N, N bytes of a UTF-8 JSON object mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} (offsets relative to the data buffer after the header) plus an
// optional "__metadata__" object of strings, then the data buffer: every tensor contiguous,
// little-endian, row-major, with no holes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oxmera/core/dtype.h"

namespace ox::io {

inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;  // as the Python library
// The most tensors one file may list (a Format error beyond): far more than any model file
// holds, and it bounds the memory a hostile 100 MB header of tiny entries can claim.
inline constexpr size_t kMaxSafetensorsEntries = 1'000'000;

struct SafetensorsEntry {
  std::string name;
  DType dtype = kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data buffer, end exclusive
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in order of data offsets
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data buffer: 8 + N
};

// The safetensors name of a dtype ("F32", "BF16", "BOOL").
std::string_view safetensors_dtype_name(DType dtype);

// Parses and validates the header of a whole file held in `bytes` (`size` bytes; the data
// buffer is checked against what follows the header). `source` (a path) is named in errors.
// Throws ox::Error: Format for a malformed file, DType for a safetensors dtype oxmera lacks.
// Memory use is bounded by `size`: nothing is allocated from a claimed size. More than
// `max_entries` tensors is a Format error (a parameter so that tests can check the refusal
// cheaply; every reader passes the default).
SafetensorsHeader parse_safetensors(const uint8_t* bytes, size_t size, std::string_view source,
                                    size_t max_entries = kMaxSafetensorsEntries);

// The JSON header for `entries` (in the order given, which must be the data order with
// offsets from 0 and no holes) and `metadata`, compact as serde_json writes it, padded with
// spaces to a multiple of 8 bytes. "__metadata__" comes first, as the Python library writes.
// Names and metadata must be valid UTF-8 (a Value error otherwise).
std::string build_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                     const std::map<std::string, std::string>& metadata);

// Checksums. oxmera's checkpoints store the CRC32C of each tensor's bytes (its data_offsets
// range) in one metadata entry, kChecksumKey, whose value is a JSON object mapping each tensor
// name to 8 lowercase hex digits: {"model.fc.weight":"1a2b3c4d",...}. Other readers see one
// more string of metadata; the file stays a plain safetensors file.
inline constexpr std::string_view kChecksumKey = "oxmera.crc32c";

// The metadata value for `sums` (name, CRC32C) in the order given. Names must be valid UTF-8.
std::string build_checksums(const std::vector<std::pair<std::string, uint32_t>>& sums);

// The checksums a metadata value lists; a Format error naming `source` when the value is not
// such an object (not JSON, or a value other than 8 lowercase hex digits).
std::unordered_map<std::string, uint32_t> parse_checksums(std::string_view text,
                                                          std::string_view source);

// Whether `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace ox::io
