#pragma once
// Reading PyTorch checkpoints (`torch.save` of a state dict) without executing anything: the
// zip format of PyTorch >= 1.6 (stored or deflated entries, zip64) and the legacy format
// (`_use_new_zipfile_serialization=False`). The pickle is read by a restricted unpickler that
// knows only what a state dict needs (collections.OrderedDict, torch._utils' tensor and
// parameter rebuild functions, torch storage classes, torch.device); any other global is
// refused, never imported or called. docs/IO.md has the details.
//
// Nested dicts, lists and tuples are flattened: a tensor's name is its path joined by '.'
// ({"model": {"fc.weight": w}, "epoch": 3} gives "model.fc.weight"; integer keys and list
// positions in decimal); leaves that are not tensors (ints, floats, strings, None, devices)
// are skipped. A bare tensor is named "tensor". Every tensor is a contiguous CPU tensor that
// owns its memory, whatever its storage offset or strides; the same tensor object reached by
// two names (tied weights) gives one ox::Tensor under both names.
//
// Errors: "[load_pytorch] <path>: ..." naming the record, opcode, global or tensor and the
// offset. Format for a malformed or hostile file (a global outside the allow-list, a view past
// its storage, a zip bomb, a truncated file, a big-endian file); DType for complex and
// quantized tensors; Io for OS failures. Memory use is bounded by a small multiple of the
// file's size (deflate expands at most 1032:1).

#include <cstdint>
#include <string>
#include <vector>

#include "oxmera/core/dtype.h"
#include "oxmera/core/shape.h"
#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox {

// Every tensor of the checkpoint at `path`, flattened, on the CPU, in the pickle's order.
TensorDict load_pytorch(const std::string& path);

struct PytorchTensorInfo {
  std::string name;
  DType dtype = kF32;
  Shape shape;
  Strides strides;             // in elements, as stored
  int64_t storage_offset = 0;  // in elements
  std::string storage;         // the storage's key in the file
};

// What a checkpoint holds, without copying tensor data (the storages are still read and
// checked, CRC-32 included).
struct PytorchFileInfo {
  std::string format;  // "zip" or "legacy"
  std::vector<PytorchTensorInfo> tensors;
  std::vector<std::string> skipped;  // non-tensor leaves: "epoch (int)"
  uint64_t storage_bytes = 0;        // of the storages the tensors use
};
PytorchFileInfo inspect_pytorch(const std::string& path);

// Whether the file at `path` begins as a zip or a pickle does (so is worth trying with
// load_pytorch); false for a safetensors file. An unreadable file is an Io error.
bool is_pytorch_file(const std::string& path);

}  // namespace ox
