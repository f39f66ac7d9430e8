#pragma once
// The CPU allocator: 64-byte aligned blocks; freed large blocks are kept in a size-keyed
// cache so that a loop allocating the same shapes reuses warm pages instead of faulting in
// fresh ones from the kernel on every call.

#include <cstddef>
#include <map>
#include <mutex>

#include "backend/allocator.h"

namespace ox::cpu {

class CachingAllocator final : public Allocator {
 public:
  // Blocks of at least this size are cached; smaller ones go straight to malloc, which
  // already recycles them from its own arenas.
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
  size_t cached_bytes_ = 0;
  size_t limit_;
};

CachingAllocator& cpu_allocator();

}  // namespace ox::cpu
