#pragma once
// Kernel scratch memory sized from element counts. A count can come from a broadcast (stride 0)
// input, which holds one element yet claims 2^62 of them, so the request may exceed any
// machine: it must then become an ox::Error of kind OutOfMemory naming the op and the bytes,
// never std::bad_alloc escaping a worker thread (std::terminate). The allocation is nothrow
// because AddressSanitizer's throwing operator new aborts on failure instead of throwing, even
// with allocator_may_return_null=1; its nothrow form returns null.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "oxmera/core/error.h"

namespace ox::cpu {

// `count` default-initialized elements of T (uninitialized for trivial types); empty for a
// count of 0. `op` names the kernel in the error.
template <class T>
std::unique_ptr<T[]> scratch_array(int64_t count, const char* op) {
  if (count <= 0) return nullptr;
  OX_CHECK(static_cast<uint64_t>(count) <= PTRDIFF_MAX / sizeof(T), OutOfMemory, op, "scratch of ",
           count, " elements of ", sizeof(T),
           " bytes is more memory than this machine can address");
  T* data = new (std::nothrow) T[static_cast<size_t>(count)];
  OX_CHECK(data != nullptr, OutOfMemory, op, "out of memory allocating ",
           static_cast<uint64_t>(count) * sizeof(T), " bytes of kernel scratch");
  return std::unique_ptr<T[]>(data);
}

}  // namespace ox::cpu
