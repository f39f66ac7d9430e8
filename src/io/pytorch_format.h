#pragma once
// PyTorch checkpoints (`torch.save`) without tensors: telling the format, reading the zip or
// legacy container, unpickling (io/pickle.h) and flattening the object to named tensor views,
// each checked against its storage. Depends on core and zlib only, so the fuzz target
// (tests/fuzz/pytorch_fuzz.cpp) compiles it on its own; src/io/pytorch.cpp makes the tensors.
//
// Formats:
//  - zip (PyTorch >= 1.6): <prefix>/data.pkl, <prefix>/data/<key> per storage, and
//    <prefix>/byteorder when present ("little"; "big" is refused);
//  - legacy (`_use_new_zipfile_serialization=False`): pickles of the magic number, the protocol
//    version (1001) and sys_info (little_endian must be true), the object (persistent ids name
//    storages), the list of storage keys, then per key an int64 element count and the bytes;
//  - the tar format of torch < 0.4 and TorchScript archives are refused with a message.
//
// Flattening: a dict (or OrderedDict, list, tuple) is walked depth first; a tensor leaf is
// named by the keys on its path joined with '.' ("model.fc.weight"; integer keys and list
// positions in decimal: "optimizer.state.0.exp_avg"); other leaves (ints, floats, strings,
// None, torch.device) are skipped and listed in `skipped`. A bare tensor is named "tensor".
// Two leaves flattening to the same name, a key neither str nor int, and nesting deeper than
// kMaxPickleDepth are Format errors.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxmera/core/dtype.h"

namespace ox::io {

struct PytorchStorage {
  std::string key;
  DType dtype = kU8;
  std::string_view bytes;              // into the file's bytes, or into `owned`
  std::shared_ptr<std::string> owned;  // an inflated zip entry
  int64_t numel() const { return static_cast<int64_t>(bytes.size() / dtype_size(dtype)); }
};

struct PytorchTensorView {
  std::string name;
  DType dtype = kF32;
  std::vector<int64_t> shape, strides;  // in elements; every stride >= 0
  int64_t offset = 0;                   // in elements
  size_t storage = 0;                   // index into PytorchContents::storages
  uint32_t identity = 0;  // the same tensor object reached by two names has one identity
  int64_t numel = 0;
};

struct PytorchContents {
  std::string format;                      // "zip" or "legacy"
  std::vector<PytorchTensorView> tensors;  // in the order of the pickle
  std::vector<PytorchStorage> storages;    // those the tensors use
  std::vector<std::string> skipped;        // "epoch (int)", ...: non-tensor leaves
  uint64_t storage_bytes = 0;              // sum over `storages`
};

// Checked: every view lies inside its storage (sizes and strides >= 0, no overflow) and the
// sum of distinct views' bytes stays within kMaxViewBytesFactor times the storages' bytes
// plus kMaxViewBytesSlack, so a small file cannot claim unbounded memory through many views
// of one storage (or a stride-0 view). `source` names the file in errors.
inline constexpr uint64_t kMaxViewBytesFactor = 8;
inline constexpr uint64_t kMaxViewBytesSlack = uint64_t{64} << 20;

PytorchContents parse_pytorch(const uint8_t* bytes, size_t size, std::string_view source);

// Whether `bytes` start as a zip or a pickle (what load_pytorch reads); for choosing a reader.
bool looks_like_pytorch(const uint8_t* bytes, size_t size);

}  // namespace ox::io
