#pragma once
// Reading and writing the safetensors format (https://github.com/huggingface/safetensors),
// the file format of Hugging Face models: named tensors and string metadata.
//
// Writing: tensors are laid out with the larger element sizes first (insertion order among
// equal sizes), so every tensor is aligned to its element size and reads back without a copy;
// the header lists them in that order. Tensors on other devices are copied to the CPU and
// non-contiguous ones are written contiguous. Two entries whose memory overlaps are refused
// (a Value error naming both). Saving is atomic: the target holds the old file or the new one.
//
// Reading validates the whole header (ErrorKind::Format, messages beginning with
// "[safetensors] <path>:" and naming the tensor) and lists tensors in order of their data
// offsets. A dtype the format defines that oxmera lacks (U16, U32, U64, F8_*, C64, ...) is an
// ErrorKind::DType error naming it; OS failures are ErrorKind::Io.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxmera/core/dtype.h"
#include "oxmera/core/shape.h"
#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox {

// Writes `tensors` and `metadata` to `path`, atomically (a temporary file in the same folder,
// fsynced and renamed over `path`).
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Every tensor of the file, as CPU tensors owning their memory (the file is not kept open),
// in order of their data offsets. A file with checksums (see below) is verified first: a tensor
// whose bytes do not match is a Format error naming it and the file.
TensorDict load_safetensors(const std::string& path);

// ---- Checksums -------------------------------------------------------------------------------
// save_checkpoint stores the CRC32C of every tensor's bytes in the metadata entry
// kSafetensorsChecksumKey: a JSON object of tensor name -> 8 lowercase hex digits
// ({"model.fc.weight":"1a2b3c4d"}), so the file stays plain safetensors for other readers.
// save_safetensors does not add it: its output is byte for byte what the Python library writes.
inline constexpr std::string_view kSafetensorsChecksumKey = "oxmera.crc32c";

struct TensorChecksum {
  enum class Status { Ok, Mismatch, Missing };  // Missing: the file has no checksum for it
  std::string name;
  Status status = Status::Missing;
  uint32_t stored = 0;    // Ok, Mismatch: the checksum in the metadata
  uint32_t computed = 0;  // the CRC32C of the tensor's bytes as they are in the file
};

class SafetensorsFile;
// One result per tensor, in order of data offsets. A checksum entry that is malformed, or names
// a tensor the file does not hold, is a Format error; a file without checksums gives every
// tensor Missing.
std::vector<TensorChecksum> verify_checksums(const SafetensorsFile& file);
std::vector<TensorChecksum> verify_safetensors(const std::string& path);

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = kF32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data buffer (after the header), end exclusive
  uint64_t end = 0;
};

// A safetensors file opened for lazy access: the header is read and validated at once, and
// each get() maps one tensor. The file is memory-mapped copy-on-write: get() returns a tensor
// over the mapping itself when its data is aligned for its dtype (writes to it stay private),
// and a copy otherwise. The mapping lives as long as this object or any tensor from it; as
// with any mapping, truncating the file meanwhile makes reads fault.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  // Parses a whole file held in memory (the bytes are copied); `name` stands for the path in
  // errors.
  static SafetensorsFile from_bytes(std::string_view bytes, const std::string& name = "<memory>");

  const std::string& path() const;
  std::vector<std::string> keys() const;  // in order of data offsets
  bool contains(std::string_view name) const;
  size_t size() const;
  const std::map<std::string, std::string>& metadata() const;
  // A missing name is an Index error naming it and the file.
  const SafetensorsTensorInfo& info(std::string_view name) const;
  uint64_t data_start() const;  // file offset of the data buffer: 8 + header length
  // The bytes of the mapping (the whole file).
  const uint8_t* mapped_data() const;
  size_t mapped_size() const;

  // The tensor `name` (on the CPU), zero-copy when aligned. A BOOL tensor holding a byte other
  // than 0 or 1 is a Format error. Zero-copy tensors are views of one private (copy-on-write)
  // mapping: writing into one never reaches the file but is seen by a later get() of the same
  // name from this object; clone() a tensor to own it.
  Tensor get(std::string_view name) const;
  // Every tensor, in order of data offsets, as get() returns them.
  TensorDict get_all() const;

  struct Impl;

 private:
  explicit SafetensorsFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ox
