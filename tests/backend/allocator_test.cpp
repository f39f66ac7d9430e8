// The CPU caching allocator, on fresh instances (never the process-wide one): which blocks it
// keeps, alignment, the cache limit and its accounting, emptying, and bad sizes.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_allocator.h"
#include "test_util.h"

namespace {

using ox::cpu::CachingAllocator;

using oxtest::kind_of;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMin = CachingAllocator::kMinCachedBytes;

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Allocator, ZeroBytesIsNull) {
  CachingAllocator a;
  EXPECT_EQ(a.allocate(0), nullptr);
  a.deallocate(nullptr, 0);  // harmless
  a.deallocate(nullptr, kMiB);
  EXPECT_EQ(a.cached_bytes(), 0u);
}

TEST(Allocator, BlocksAre64ByteAlignedAndUsable) {
  CachingAllocator a;
  for (size_t n : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{100},
                   size_t{4095}, size_t{4097}, kMin - 1, kMin, kMin + 1, size_t{100000}, kMiB}) {
    void* p = a.allocate(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(aligned64(p)) << n;
    std::memset(p, 0xab, n);  // every requested byte is writable
    a.deallocate(p, n);
  }
}

// Frees one block of `n` bytes into a fresh allocator's cache and checks that the next request
// for `n` bytes gets that same block back, leaving the cache empty.
void expect_block_reused(size_t n) {
  CachingAllocator a;
  a.set_cache_limit(64 * kMiB);
  void* p = a.allocate(n);
  a.deallocate(p, n);
  EXPECT_EQ(a.cached_bytes(), n);
  void* q = a.allocate(n);
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.cached_bytes(), 0u);
  a.deallocate(q, n);
}

TEST(Allocator, LargeBlockIsReusedForTheSameSize) { expect_block_reused(kMiB); }

TEST(Allocator, SmallestCachedSizeIsReused) { expect_block_reused(kMin); }

TEST(Allocator, CachedBlockIsNotHandedOutForAnotherSize) {
  CachingAllocator a;
  a.set_cache_limit(64 * kMiB);
  void* p = a.allocate(kMiB);
  a.deallocate(p, kMiB);
  void* q = a.allocate(2 * kMiB);  // a different size class: the cached block stays cached
  EXPECT_NE(q, p);
  EXPECT_EQ(a.cached_bytes(), kMiB);
  std::memset(q, 0, 2 * kMiB);
  a.deallocate(q, 2 * kMiB);
  EXPECT_EQ(a.cached_bytes(), 3 * kMiB);
}

TEST(Allocator, SeveralBlocksOfOneSizeAllComeBack) {
  CachingAllocator a;
  a.set_cache_limit(64 * kMiB);
  std::set<void*> freed;
  for (int i = 0; i < 3; ++i) freed.insert(a.allocate(kMiB));
  ASSERT_EQ(freed.size(), 3u);
  for (void* p : freed) a.deallocate(p, kMiB);
  EXPECT_EQ(a.cached_bytes(), 3 * kMiB);
  std::set<void*> again;
  for (int i = 0; i < 3; ++i) again.insert(a.allocate(kMiB));
  EXPECT_EQ(again, freed);
  EXPECT_EQ(a.cached_bytes(), 0u);
  for (void* p : again) a.deallocate(p, kMiB);
}

TEST(Allocator, SmallBlocksAreReusedWithinTheirSize) {
  CachingAllocator a;
  a.set_cache_limit(64 * kMiB);
  for (size_t n : {size_t{1}, size_t{64}, size_t{1000}, size_t{4096}, kMin / 2, kMin - 64}) {
    const size_t rounded = (n + 63) / 64 * 64;
    void* p = a.allocate(n);
    a.deallocate(p, n);
    EXPECT_EQ(a.cached_bytes(), rounded) << n;
    void* other = a.allocate(rounded + 64);  // another size: a fresh block
    EXPECT_NE(other, p) << n;
    void* q = a.allocate(rounded - (rounded > 64 ? 63 : 0));  // the same 64-byte size
    EXPECT_EQ(q, p) << n;
    EXPECT_EQ(a.cached_bytes(), 0u) << n;
    a.deallocate(q, n);
    a.deallocate(other, rounded + 64);
    a.empty_cache();
  }
}

TEST(Allocator, ZeroLimitDisablesCaching) {
  CachingAllocator a;
  a.set_cache_limit(0);
  EXPECT_EQ(a.cache_limit(), 0u);
  void* p = a.allocate(kMiB);
  a.deallocate(p, kMiB);
  void* small = a.allocate(100);
  a.deallocate(small, 100);
  EXPECT_EQ(a.cached_bytes(), 0u);
}

TEST(Allocator, CacheLimitIsRespected) {
  CachingAllocator a;
  a.set_cache_limit(3 * kMiB);
  EXPECT_EQ(a.cache_limit(), 3 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(a.allocate(kMiB));
  for (size_t i = 0; i < blocks.size(); ++i) {
    a.deallocate(blocks[i], kMiB);
    EXPECT_EQ(a.cached_bytes(), std::min<size_t>(i + 1, 3) * kMiB) << i;
  }
  // A block that alone exceeds the limit is never kept.
  void* big = a.allocate(4 * kMiB);
  a.deallocate(big, 4 * kMiB);
  EXPECT_EQ(a.cached_bytes(), 3 * kMiB);
  // Lowering the limit below what is cached gives memory back.
  a.set_cache_limit(kMiB);
  EXPECT_LE(a.cached_bytes(), kMiB);
  a.set_cache_limit(0);
  EXPECT_EQ(a.cached_bytes(), 0u);
}

TEST(Allocator, EmptyCacheFreesEverything) {
  CachingAllocator a;
  a.set_cache_limit(64 * kMiB);
  void* p = a.allocate(kMiB);
  void* q = a.allocate(3 * kMiB);
  a.deallocate(p, kMiB);
  a.deallocate(q, 3 * kMiB);
  EXPECT_EQ(a.cached_bytes(), 4 * kMiB);
  a.empty_cache();
  EXPECT_EQ(a.cached_bytes(), 0u);
  a.empty_cache();  // twice is fine
  EXPECT_EQ(a.cached_bytes(), 0u);
  void* r = a.allocate(kMiB);  // still works afterwards
  EXPECT_TRUE(aligned64(r));
  a.deallocate(r, kMiB);
  EXPECT_EQ(a.cached_bytes(), kMiB);
}

TEST(Allocator, ImpossibleSizesGiveTypedErrors) {
  CachingAllocator a;
  EXPECT_EQ(kind_of([&] { (void)a.allocate(SIZE_MAX); }), ox::ErrorKind::OutOfMemory);
  // Far beyond any address space: out of memory, reported, not a null pointer.
  EXPECT_EQ(kind_of([&] { (void)a.allocate(size_t{1} << 62); }), ox::ErrorKind::OutOfMemory);
  EXPECT_EQ(a.cached_bytes(), 0u);
}

TEST(Allocator, ConcurrentUseKeepsTheAccountingConsistent) {
  CachingAllocator a;
  a.set_cache_limit(8 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 500; ++i) {
        const size_t n = kMin * size_t(1 + (i + t) % 4);
        auto* p = static_cast<unsigned char*>(a.allocate(n));
        p[0] = p[n - 1] = static_cast<unsigned char>(t);
        a.deallocate(p, n);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(a.cached_bytes(), 8 * kMiB);
  EXPECT_GT(a.cached_bytes(), 0u);
  a.empty_cache();
  EXPECT_EQ(a.cached_bytes(), 0u);
}

}  // namespace
