#pragma once
// Shared by the indexing ops (index.cpp, advanced_index.cpp): index dtype checks, restrided
// kernel arguments, and the calls into the gather/scatter primitives that turn a bad index
// into an Index error naming the value, the dim and its size.

#include <vector>

#include "ops/op_util.h"

namespace ox::ops {

// Index tensors are i64 or i32; a DType error naming `what` otherwise.
void check_index_dtype(const Tensor& index, const char* op, const char* what = "index");

// `t` as a kernel argument of another shape and strides over the same element [0, ...].
StridedArray restrided(const Tensor& t, const Shape& shape, const Strides& strides);

// One index of a gather or scatter call.
struct IndexArg {
  Tensor index;        // keeps the array's memory alive
  StridedArray array;  // the index over the iteration shape
  int64_t dim;         // the indexed dim, for messages; -1: the flattened tensor (take)
  int64_t size;
  int64_t stride;
  bool wrap;
  CheckSite site = -1;  // the message a bad index gets; -1: "index {value} is out of bounds ..."
};

// dst = gather(src) through `args` (which share one dtype) on dst's device.
void gather_into(const char* op, const StridedArray& dst, const StridedArray& src,
                 const std::vector<IndexArg>& args);
// Scatters src into dst (`dest` restrided to src's shape) through `args`, which share one
// dtype; bumps dest's version. Sources and indices must not share memory with dest.
void scatter_into(const char* op, const Tensor& dest, const StridedArray& dst,
                  const StridedArray& src, const std::vector<IndexArg>& args, ScatterReduce reduce);
// `t`, or a copy of it when it shares memory with `dest`, which is about to be written.
inline Tensor unaliased(const Tensor& t, const Tensor& dest) {
  return t.is_same_storage(dest) ? t.clone() : t;
}
// Refuses a destination whose elements share memory (an expanded tensor).
void check_writable(const Tensor& dest, const char* op);

// gather(x, dim, index) whose out-of-range indices raise `site`'s error: at once on the CPU, at
// the next synchronizing call on a device (the host never waits to check). With autograd.
Tensor gather_checked(const Tensor& x, int64_t dim, const Tensor& index, CheckSite site);

// Raises `site`'s error where `ok` (bool, any shape) is false, {position} being the first such
// flat position: at once on the CPU, at the next synchronizing call on a device. A check of a
// value only the device holds, without reading it back.
void check_all_on_device(const Tensor& ok, CheckSite site);

// torch.gather and friends treat a 0-d tensor as 1-d of size 1.
inline Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

}  // namespace ox::ops
