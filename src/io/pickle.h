#pragma once
// A restricted unpickler for PyTorch checkpoints: it knows the opcodes a `torch.save` state
// dict uses (protocols 2 to 5) and an allow-list of globals, and executes nothing. Values are
// built in an arena (indices, not pointers), so memoized containers that contain themselves
// are harmless and memory is bounded by the pickle's size: each opcode adds at most one value,
// and every element of a container was pushed by an opcode.
//
// Allowed globals: collections.OrderedDict; torch._utils._rebuild_tensor_v2, _rebuild_tensor,
// _rebuild_parameter, _rebuild_parameter_with_state; torch.device; the storage classes
// torch.{Float,Double,Half,BFloat16,Long,Int,Short,Char,Byte,Bool}Storage and
// torch.UntypedStorage (bytes). Complex and quantized storage classes are a DType error naming
// the dtype; any other global, an unknown opcode, a stack underflow, a missing memo entry,
// nesting deeper than kMaxPickleDepth, a length past the end and anything else malformed is a
// Format error "[load_pytorch] <source>: <what> offset N: ..." naming the opcode or global.
// Depends on core only (the fuzz target compiles it on its own).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oxmera/core/dtype.h"

namespace ox::io::pickle {

inline constexpr size_t kMaxPickleDepth = 100;  // open MARKs, and nesting when flattening
inline constexpr size_t kMaxTensorDims = 64;

enum class Kind : uint8_t {
  None,
  Bool,
  Int,
  BigInt,  // an integer wider than 64 bits: its little-endian two's complement bytes in `text`
  Float,
  String,  // str (text) or Python 2 str
  Bytes,
  Tuple,
  List,
  Dict,     // dict or OrderedDict: items holds key, value, key, value, ...
  Global,   // an allowed callable or class
  Storage,  // a persistent id ('storage', class, key, location, numel): text = key
  Tensor,   // a rebuilt tensor: items[0] = its Storage value
  Object,   // something allowed but not used (torch.device): text = its type
};

enum class Callable : uint8_t {
  OrderedDict,
  RebuildTensorV2,
  RebuildTensor,
  RebuildParameter,
  RebuildParameterWithState,
  Device,
  StorageClass,  // `dtype` says which
};

struct Value {
  Kind kind = Kind::None;
  bool flag = false;    // Bool
  int64_t integer = 0;  // Int; Storage: declared element count; Tensor: storage offset
  double number = 0;    // Float
  std::string text{};   // String, Bytes, BigInt, Global (module.name), Storage key, Object
  std::vector<uint32_t> items{};  // Tuple, List; Dict (k, v, k, v...); Tensor (its storage)
  Callable callable = Callable::OrderedDict;  // Global
  DType dtype = kU8;                          // Global StorageClass, Storage, Tensor
  std::vector<int64_t> shape{}, strides{};    // Tensor
};

struct Result {
  std::vector<Value> values;
  uint32_t root = 0;
  size_t end = 0;  // offset just past STOP
};

// Unpickles one pickle starting at `data[start]` (it may be followed by more bytes).
// `source` names the file in errors and `what` the pickle ("data.pkl", "main pickle"); offsets
// in messages are from `data`.
Result unpickle(const uint8_t* data, size_t size, size_t start, std::string_view source,
                std::string_view what);

// "int", "dict", "torch.device", ...: for messages.
std::string describe(const Result& r, uint32_t index);

}  // namespace ox::io::pickle
