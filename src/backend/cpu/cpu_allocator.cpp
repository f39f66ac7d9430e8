#include "backend/cpu/cpu_allocator.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "oxmera/core/error.h"

namespace ox::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

// Blocks of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages, which
// this kernel setting ("madvise") otherwise withholds: streaming a large tensor then walks a
// page table entry per 2 MiB instead of per 4 KiB.
void* fresh_block(size_t size) {
  if (size < kHugePage) return std::aligned_alloc(kAlignment, size);
  void* block = std::aligned_alloc(kHugePage, (size + kHugePage - 1) / kHugePage * kHugePage);
  if (block) madvise(block, size, MADV_HUGEPAGE);
  return block;
}

std::string gib_text(size_t nbytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g GiB", static_cast<double>(nbytes) / double(1 << 30));
  return text;
}

size_t limit_from_environment() {
  if (const char* mb = std::getenv("OXMERA_CPU_CACHE_MB")) {
    try {
      return static_cast<size_t>(std::stoull(mb)) << 20;
    } catch (...) {  // an unreadable setting keeps the default
    }
  }
  return size_t{2} << 30;
}
}  // namespace

CachingAllocator::CachingAllocator() : limit_(limit_from_environment()) {}

CachingAllocator::~CachingAllocator() { empty_cache(); }

size_t CachingAllocator::rounded(size_t nbytes) {
  const size_t granule = nbytes >= kMinCachedBytes ? kPage : kAlignment;
  return (nbytes + granule - 1) / granule * granule;
}

void* CachingAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  // Refused before any arithmetic: rounding up to a page or a huge page would wrap around, and
  // no machine maps more than PTRDIFF_MAX bytes anyway.
  OX_CHECK(nbytes <= static_cast<size_t>(PTRDIFF_MAX) - kHugePage, OutOfMemory, "cpu allocator",
           "cannot allocate ", nbytes, " bytes: more than this machine can address");
  const size_t size = rounded(nbytes);
  if (size < kMinCachedBytes) {
    std::lock_guard lock(mutex_);
    if (std::vector<void*>& blocks = small_blocks_[size / kAlignment - 1]; !blocks.empty()) {
      void* block = blocks.back();
      blocks.pop_back();
      cached_bytes_ -= size;
      return block;
    }
  } else {
    std::lock_guard lock(mutex_);
    if (auto it = free_blocks_.find(size); it != free_blocks_.end()) {
      void* block = it->second;
      free_blocks_.erase(it);
      cached_bytes_ -= size;
      return block;
    }
  }
  void* block = fresh_block(size);
  if (!block) {
    empty_cache();  // give cached memory back and try once more before giving up
    block = fresh_block(size);
  }
  OX_CHECK(block, OutOfMemory, "cpu allocator", "out of memory allocating ", nbytes, " bytes (",
           gib_text(nbytes), ")");
  return block;
}

void CachingAllocator::deallocate(void* ptr, size_t nbytes) noexcept {
  if (!ptr) return;
  const size_t size = rounded(nbytes);
  {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + size <= limit_) {
      try {
        if (size < kMinCachedBytes)
          small_blocks_[size / kAlignment - 1].push_back(ptr);
        else
          free_blocks_.emplace(size, ptr);
        cached_bytes_ += size;
        return;
      } catch (const std::bad_alloc&) {  // no room to remember it: give it back instead
      }
    }
  }
  std::free(ptr);
}

void CachingAllocator::empty_cache() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [size, block] : free_blocks_) std::free(block);
  free_blocks_.clear();
  for (std::vector<void*>& blocks : small_blocks_) {
    for (void* block : blocks) std::free(block);
    blocks.clear();
  }
  cached_bytes_ = 0;
}

void CachingAllocator::set_cache_limit(size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    limit_ = bytes;
  }
  if (cached_bytes() > bytes) empty_cache();
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

size_t CachingAllocator::cache_limit() const {
  std::lock_guard lock(mutex_);
  return limit_;
}

CachingAllocator& cpu_allocator() {
  static CachingAllocator* allocator = new CachingAllocator();  // outlives static tensors
  return *allocator;
}

}  // namespace ox::cpu
