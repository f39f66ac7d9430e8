#pragma once
// Raw device memory. Each backend owns one Allocator per device.

#include <cstddef>

namespace ox {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // At least 64-byte aligned; nullptr for zero bytes; throws ox::Error when out of memory.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
  // Returns cached, unused blocks to the system.
  virtual void empty_cache() noexcept {}
};

}  // namespace ox
