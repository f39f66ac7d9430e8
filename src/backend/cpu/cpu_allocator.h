#pragma once
// The CPU allocator: 64-byte aligned blocks; freed blocks are kept in a size-keyed cache so
// that a loop allocating the same shapes reuses warm pages instead of faulting in fresh ones
// from the kernel on every call, and small tensors skip glibc's aligned allocation (which
// splits and re-merges its arena chunks on every call: most of a small op's time).

#include <array>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "backend/allocator.h"

namespace ox::cpu {

class CachingAllocator final : public Allocator {
 public:
  // Blocks of at least this size are page-rounded and cached by size; smaller ones are
  // rounded to 64 bytes and cached in one list per size.
  static constexpr size_t kMinCachedBytes = size_t{1} << 16;

  CachingAllocator();
  ~CachingAllocator() override;
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) noexcept override;
  void empty_cache() noexcept override;

  // The most bytes kept cached (OXMERA_CPU_CACHE_MB at start-up; 0 turns caching off).
  void set_cache_limit(size_t bytes);
  size_t cached_bytes() const;
  size_t cache_limit() const;

 private:
  static size_t rounded(size_t nbytes);
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;  // rounded size -> block
  static constexpr size_t kSmallSizes = kMinCachedBytes / 64;
  std::array<std::vector<void*>, kSmallSizes> small_blocks_;  // [size / 64 - 1] -> blocks
  size_t cached_bytes_ = 0;
  size_t limit_;
};

CachingAllocator& cpu_allocator();

}  // namespace ox::cpu
