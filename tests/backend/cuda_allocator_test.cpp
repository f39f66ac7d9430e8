// The CUDA caching allocator's logic (backend/device_caching_allocator.h) on a fake device over
// host memory whose events complete when the test says so: rounding and pools, splitting and
// merging, stream-ordered reuse, record_stream, statistics, empty_cache, the out-of-memory retry
// and message, direct mode, two threads. And the public streams/events/memory API
// (include/oxmera/cuda.h) where no CUDA device runs: Device errors with the reason; where one
// does, streams, events and the allocator on the driver (CudaMemoryOnDevice).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/memory.h"
#include "backend/device_caching_allocator.h"
#include "test_util.h"

namespace {

using Allocator = ox::DeviceCachingAllocator;
using ox::EventHandle;
using ox::StreamHandle;
using oxtest::caught;

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
StreamHandle const kS1 = reinterpret_cast<StreamHandle>(uintptr_t{0x10});
StreamHandle const kS2 = reinterpret_cast<StreamHandle>(uintptr_t{0x20});

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A device of `capacity` bytes in host memory. Events are done when the test finishes their
// stream (or the allocator waits for them).
class FakeDevice final : public ox::DeviceMemoryOps {
 public:
  struct Event {
    StreamHandle stream;
    bool done = false;
  };
  size_t capacity = size_t{1} << 30;
  size_t used = 0;
  std::map<void*, size_t> segments;
  std::vector<size_t> reserves;  // every reserve's size, failed ones included
  std::vector<void*> released;
  std::set<Event*> events;  // live
  int events_recorded = 0, waits = 0;
  bool failing = false;  // event calls throw, as a driver whose context died
  StreamHandle failing_stream = reinterpret_cast<StreamHandle>(uintptr_t{0xdead});  // likewise
  std::vector<StreamHandle> synchronized;

  ~FakeDevice() override {
    for (auto& [ptr, size] : segments) std::free(ptr);
    for (Event* e : events) delete e;
  }
  void* reserve(size_t nbytes) override {
    reserves.push_back(nbytes);
    if (used + nbytes > capacity) return nullptr;
    void* ptr = std::aligned_alloc(512, nbytes);
    segments[ptr] = nbytes;
    used += nbytes;
    return ptr;
  }
  void release(void* ptr) override {
    used -= segments.at(ptr);
    segments.erase(ptr);
    released.push_back(ptr);
    std::free(ptr);
  }
  EventHandle record_event(StreamHandle stream) override {
    if (failing) throw ox::Error(ox::ErrorKind::Backend, "cuEventRecord failed");
    ++events_recorded;
    return *events.insert(new Event{stream}).first;
  }
  bool event_done(EventHandle e) override {
    if (failing || static_cast<Event*>(e)->stream == failing_stream)
      throw ox::Error(ox::ErrorKind::Backend, "cuEventQuery failed");
    return static_cast<Event*>(e)->done;
  }
  void wait_event(EventHandle e) override {
    ++waits;
    static_cast<Event*>(e)->done = true;
  }
  void destroy_event(EventHandle e) override {
    events.erase(static_cast<Event*>(e));
    delete static_cast<Event*>(e);
  }
  void synchronize_stream(StreamHandle stream) override {
    synchronized.push_back(stream);
    finish(stream);
  }
  size_t free_bytes() override { return capacity - used; }
  // The device has run everything queued on `stream` so far.
  void finish(StreamHandle stream) {
    for (Event* e : events)
      if (e->stream == stream) e->done = true;
  }
};

struct Fixture {
  explicit Fixture(Allocator::Mode mode = Allocator::Mode::Caching)
      : alloc(device, "cuda:0", mode, [this] { return current; }) {}
  FakeDevice device;
  StreamHandle current = kS1;
  Allocator alloc;
};

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

TEST(CudaAlloc, RoundingAndSegmentSizes) {
  EXPECT_EQ(Allocator::rounded(1), 512u);
  EXPECT_EQ(Allocator::rounded(512), 512u);
  EXPECT_EQ(Allocator::rounded(513), 1024u);
  EXPECT_EQ(Allocator::rounded(kMiB + 1), kMiB + 512);
  EXPECT_EQ(Allocator::segment_size(512), 2 * kMiB);
  EXPECT_EQ(Allocator::segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(Allocator::segment_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(Allocator::segment_size(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(Allocator::segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(Allocator::segment_size(10 * kMiB + 512), 12 * kMiB);
}

TEST(CudaAlloc, ModeSetting) {
  EXPECT_EQ(Allocator::mode_named(nullptr), Allocator::Mode::Caching);
  EXPECT_EQ(Allocator::mode_named(""), Allocator::Mode::Caching);
  EXPECT_EQ(Allocator::mode_named("caching"), Allocator::Mode::Caching);
  EXPECT_EQ(Allocator::mode_named("direct"), Allocator::Mode::Direct);
  const ox::Error e = caught([] { Allocator::mode_named("Direct"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e.what(), "OXMERA_CUDA_ALLOC=Direct")) << e.what();
}

TEST(CudaAlloc, ZeroBytesAndUnknownPointers) {
  Fixture f;
  EXPECT_EQ(f.alloc.allocate(0), nullptr);
  f.alloc.deallocate(nullptr, 0);
  int not_ours = 0;
  f.alloc.deallocate(&not_ours, 4);  // ignored
  EXPECT_FALSE(f.alloc.record_stream(&not_ours, kS2));
  EXPECT_TRUE(f.device.reserves.empty());
  EXPECT_EQ(f.alloc.stats().allocated, 0u);
}

// holds() answers for any address inside a live block (a view into it), owns() for its start
// only; a freed block is neither. The upload path asks holds() whether a copy source is pinned.
TEST(CudaAlloc, HoldsAnyAddressInsideALiveBlock) {
  Fixture f;
  char* a = static_cast<char*>(f.alloc.allocate(1000, kS1));
  EXPECT_TRUE(f.alloc.owns(a));
  EXPECT_FALSE(f.alloc.owns(a + 8));
  EXPECT_TRUE(f.alloc.holds(a));
  EXPECT_TRUE(f.alloc.holds(a + 999));
  EXPECT_TRUE(f.alloc.holds(a + 1023));  // the block is rounded up to 1024 bytes
  EXPECT_FALSE(f.alloc.holds(a + 1024));
  int not_ours = 0;
  EXPECT_FALSE(f.alloc.holds(&not_ours));
  f.alloc.deallocate(a, 0);
  EXPECT_FALSE(f.alloc.holds(a + 8));
}

TEST(CudaAlloc, SmallRequestsShareTwoMiBSegments) {
  Fixture f;
  void* a = f.alloc.allocate(1000, kS1);
  ASSERT_EQ(f.device.reserves, std::vector<size_t>{2 * kMiB});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 512, 0u);
  void* b = f.alloc.allocate(1000, kS1);
  EXPECT_EQ(b, at(a, 1024));  // split from the same segment
  void* c = f.alloc.allocate(kMiB, kS1);
  EXPECT_EQ(c, at(a, 2048));
  EXPECT_EQ(f.device.reserves.size(), 1u);
  void* d = f.alloc.allocate(kMiB, kS1);  // 2 MiB - 2048 - 1 MiB left: too little
  EXPECT_EQ(f.device.reserves, (std::vector<size_t>{2 * kMiB, 2 * kMiB}));
  std::memset(a, 1, 1000);  // the memory is usable
  std::memset(d, 2, kMiB);
  const ox::DeviceMemoryStats s = f.alloc.stats();
  EXPECT_EQ(s.allocated, 2048 + 2 * kMiB);
  EXPECT_EQ(s.reserved, 4 * kMiB);
  EXPECT_EQ(s.allocations, 4u);
  EXPECT_EQ(s.segments, 2u);
  for (void* p : {a, b, c, d}) f.alloc.deallocate(p, 0);
}

TEST(CudaAlloc, LargeRequestsSegmentsAndSplitting) {
  Fixture f;
  void* a = f.alloc.allocate(3 * kMiB, kS1);  // under 10 MiB: a 20 MiB segment
  void* b = f.alloc.allocate(5 * kMiB, kS1);
  EXPECT_EQ(b, at(a, 3 * kMiB));
  EXPECT_EQ(f.device.reserves, std::vector<size_t>{20 * kMiB});
  void* c = f.alloc.allocate(13 * kMiB, kS1);  // 12 MiB left: its own 14 MiB segment
  EXPECT_EQ(f.device.reserves, (std::vector<size_t>{20 * kMiB, 14 * kMiB}));
  // A remainder of at most 1 MiB is not split off: the block keeps it.
  void* d = f.alloc.allocate(19 * kMiB + 1, kS2);
  EXPECT_EQ(f.device.reserves.back(), 20 * kMiB);
  // c keeps its segment's last 1 MiB, d the last 1 MiB - 512.
  EXPECT_EQ(f.alloc.stats().allocated, 3 * kMiB + 5 * kMiB + 14 * kMiB + 20 * kMiB);
  // Small requests never come from a large segment's free 12 MiB.
  void* e = f.alloc.allocate(100, kS1);
  EXPECT_EQ(f.device.reserves.back(), 2 * kMiB);
  for (void* p : {a, b, c, d, e}) f.alloc.deallocate(p, 0);
}

TEST(CudaAlloc, FreedNeighboursMerge) {
  Fixture f;
  void* a = f.alloc.allocate(1000, kS1);
  void* b = f.alloc.allocate(1000, kS1);
  void* c = f.alloc.allocate(1000, kS1);
  f.alloc.deallocate(a, 0);
  f.alloc.deallocate(b, 0);
  // a and b are one free 2048-byte block now; c still separates it from the tail.
  void* ab = f.alloc.allocate(2048, kS1);
  EXPECT_EQ(ab, a);
  f.alloc.deallocate(ab, 0);
  f.alloc.empty_cache();  // c is live: its segment stays
  EXPECT_TRUE(f.device.released.empty());
  EXPECT_EQ(f.alloc.stats().reserved, 2 * kMiB);
  f.alloc.deallocate(c, 0);  // merges both ways: the whole segment is free
  f.alloc.empty_cache();
  EXPECT_EQ(f.device.released, std::vector<void*>{a});
  EXPECT_EQ(f.alloc.stats().reserved, 0u);
  EXPECT_EQ(f.alloc.stats().segments, 0u);
}

TEST(CudaAlloc, ReusedAtOnceOnItsStreamNeverOnAnother) {
  Fixture f;
  void* p = f.alloc.allocate(1000, kS1);
  f.alloc.deallocate(p, 0);
  EXPECT_EQ(f.alloc.allocate(1000, kS1), p);  // same stream: queued after the earlier use
  EXPECT_EQ(f.device.events_recorded, 0);
  f.alloc.deallocate(p, 0);
  void* q = f.alloc.allocate(1000, kS2);
  EXPECT_NE(q, p);
  EXPECT_EQ(f.device.reserves.size(), 2u);  // S2 got a segment of its own
  EXPECT_EQ(f.alloc.block_stream(q), kS2);
  f.alloc.deallocate(q, 0);
  void* r = f.alloc.allocate(1000, nullptr);  // the default stream: neither S1's nor S2's
  EXPECT_NE(r, p);
  EXPECT_NE(r, q);
  EXPECT_EQ(f.device.reserves.size(), 3u);
  f.alloc.deallocate(r, 0);
}

TEST(CudaAlloc, AllocateUsesTheCurrentStream) {
  Fixture f;
  f.current = kS2;
  void* p = f.alloc.allocate(100);
  EXPECT_EQ(f.alloc.block_stream(p), kS2);
  f.alloc.deallocate(p, 0);
  f.current = kS1;
  void* q = f.alloc.allocate(100);
  EXPECT_EQ(f.alloc.block_stream(q), kS1);
  EXPECT_NE(q, p);
  f.alloc.deallocate(q, 0);
}

TEST(CudaAlloc, RecordStreamDelaysReuseUntilItsEventCompletes) {
  Fixture f;
  void* p = f.alloc.allocate(1000, kS1);
  EXPECT_TRUE(f.alloc.record_stream(p, kS1));  // its own stream: nothing to wait for
  EXPECT_TRUE(f.alloc.record_stream(p, kS2));
  EXPECT_TRUE(f.alloc.record_stream(p, kS2));  // once per stream
  f.alloc.deallocate(p, 0);
  EXPECT_EQ(f.device.events_recorded, 1);
  ASSERT_EQ(f.device.events.size(), 1u);
  EXPECT_EQ((*f.device.events.begin())->stream, kS2);
  EXPECT_EQ(f.alloc.stats().allocated, 0u);  // the caller no longer holds it
  void* q = f.alloc.allocate(1000, kS1);     // S2 may still use p
  EXPECT_NE(q, p);
  f.device.finish(kS1);  // the wrong stream finishing changes nothing
  void* r = f.alloc.allocate(1000, kS1);
  EXPECT_NE(r, p);
  f.device.finish(kS2);
  void* s = f.alloc.allocate(1000, kS1);
  EXPECT_EQ(s, p);
  EXPECT_TRUE(f.device.events.empty());  // destroyed once done
  for (void* x : {q, r, s}) f.alloc.deallocate(x, 0);
}

TEST(CudaAlloc, AFailingDeviceNeverGetsABlockReusedTooEarly) {
  StreamHandle const s3 = reinterpret_cast<StreamHandle>(uintptr_t{0x30});
  Fixture f;
  void* p = f.alloc.allocate(1000, kS1);
  void* p2 = f.alloc.allocate(1000, kS1);
  f.alloc.record_stream(p, kS2);
  f.alloc.record_stream(p2, s3);
  f.alloc.deallocate(p, 0);  // an event pending on S2, then one on S3
  f.alloc.deallocate(p2, 0);
  f.device.finish(kS2);
  f.device.failing_stream = s3;  // S2's event is handled, S3's query fails
  EXPECT_EQ(caught([&] { f.alloc.allocate(1000, kS1); }).kind(), ox::ErrorKind::Backend);
  EXPECT_EQ(f.device.events.size(), 1u);
  f.device.failing_stream = nullptr;
  EXPECT_EQ(f.alloc.allocate(1000, kS1), p);  // S2's event is not queried again
  f.device.finish(s3);
  void* q = f.alloc.allocate(1000, kS1);
  EXPECT_EQ(q, p2);
  EXPECT_TRUE(f.device.events.empty());
  f.alloc.deallocate(p, 0);
  // A free whose event cannot be recorded: the block is never handed out again.
  f.alloc.record_stream(q, kS2);
  f.device.failing = true;
  f.alloc.deallocate(q, 0);  // no throw
  f.device.failing = false;
  EXPECT_EQ(f.alloc.stats().allocated, 0u);
  void* r = f.alloc.allocate(1000, kS1);
  EXPECT_NE(r, q);
  f.alloc.deallocate(r, 0);
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.stats().reserved, 2 * kMiB);  // the lost block's segment stays
}

TEST(CudaAlloc, StatisticsAndPeakReset) {
  Fixture f;
  void* a = f.alloc.allocate(1000, kS1);
  void* b = f.alloc.allocate(3 * kMiB, kS1);
  f.alloc.deallocate(b, 0);
  ox::DeviceMemoryStats s = f.alloc.stats();
  EXPECT_EQ(s.allocated, 1024u);
  EXPECT_EQ(s.reserved, 22 * kMiB);
  EXPECT_EQ(s.peak_allocated, 1024 + 3 * kMiB);
  EXPECT_EQ(s.peak_reserved, 22 * kMiB);
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.segments, 2u);
  f.alloc.reset_peak_stats();
  s = f.alloc.stats();
  EXPECT_EQ(s.peak_allocated, 1024u);
  EXPECT_EQ(s.peak_reserved, 22 * kMiB);
  f.alloc.empty_cache();
  s = f.alloc.stats();
  EXPECT_EQ(s.reserved, 2 * kMiB);
  EXPECT_EQ(s.peak_reserved, 22 * kMiB);
  f.alloc.reset_peak_stats();
  EXPECT_EQ(f.alloc.stats().peak_reserved, 2 * kMiB);
  f.alloc.deallocate(a, 0);
  EXPECT_EQ(f.alloc.stats().allocated, 0u);
  EXPECT_EQ(f.alloc.stats().peak_allocated, 1024u);
}

TEST(CudaAlloc, EmptyCacheReleasesOnlyFreeSegmentsAndWaitsForPendingFrees) {
  Fixture f;
  void* live = f.alloc.allocate(1000, kS1);
  void* idle = f.alloc.allocate(1000, kS2);
  void* pending = f.alloc.allocate(5 * kMiB, kS1);
  f.alloc.record_stream(pending, kS2);
  f.alloc.deallocate(idle, 0);
  f.alloc.deallocate(pending, 0);  // waits for an event on S2
  f.alloc.empty_cache();
  EXPECT_EQ(f.device.waits, 1);
  EXPECT_EQ(std::set<void*>(f.device.released.begin(), f.device.released.end()),
            (std::set<void*>{idle, pending}));
  EXPECT_EQ(f.alloc.stats().reserved, 2 * kMiB);
  EXPECT_EQ(f.device.segments.count(live), 1u);
  f.alloc.deallocate(live, 0);
}

TEST(CudaAlloc, OutOfMemoryEmptiesTheCacheAndRetriesOnce) {
  Fixture f;
  f.device.capacity = 21 * kMiB;
  f.alloc.deallocate(f.alloc.allocate(1000, kS1), 0);  // a cached 2 MiB segment
  void* big = f.alloc.allocate(3 * kMiB, kS1);         // 22 MiB would not fit
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(f.device.reserves, (std::vector<size_t>{2 * kMiB, 20 * kMiB, 20 * kMiB}));
  EXPECT_EQ(f.device.released.size(), 1u);
  const ox::DeviceMemoryStats s = f.alloc.stats();
  EXPECT_EQ(s.cache_flushes, 1u);
  EXPECT_EQ(s.ooms, 0u);
  EXPECT_EQ(s.reserved, 20 * kMiB);
  f.alloc.deallocate(big, 0);
}

TEST(CudaAlloc, OutOfMemoryErrorNamesRequestReservedAndFree) {
  Fixture f;
  f.device.capacity = 5 * kMiB;
  void* live = f.alloc.allocate(1000, kS1);
  const ox::Error e = caught([&] { f.alloc.allocate(100 * kMiB, kS1); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory);
  const std::string m = e.what();
  EXPECT_TRUE(contains(m, "out of memory on cuda:0")) << m;
  EXPECT_TRUE(contains(m, "100.0 MiB (104857600 bytes)")) << m;
  EXPECT_TRUE(contains(m, "2.0 MiB reserved")) << m;
  EXPECT_TRUE(contains(m, "1.0 KiB allocated")) << m;
  EXPECT_TRUE(contains(m, "3.0 MiB free")) << m;
  EXPECT_TRUE(contains(m, "after emptying the cache")) << m;
  EXPECT_EQ(f.device.reserves.size(), 3u);  // the segment, the try, the retry
  EXPECT_EQ(f.alloc.stats().ooms, 1u);
  EXPECT_EQ(f.alloc.stats().cache_flushes, 1u);
  // A request that cannot be a size at all is refused before asking the device.
  EXPECT_EQ(caught([&] { f.alloc.allocate(SIZE_MAX, kS1); }).kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_EQ(f.device.reserves.size(), 3u);
  f.alloc.deallocate(live, 0);
}

TEST(CudaAlloc, DirectModeReservesAndReleasesEveryBlock) {
  Fixture f(Allocator::Mode::Direct);
  void* a = f.alloc.allocate(1000, kS1);
  void* b = f.alloc.allocate(3 * kMiB, kS2);
  EXPECT_EQ(f.device.reserves, (std::vector<size_t>{1024, 3 * kMiB}));
  EXPECT_EQ(f.alloc.stats().reserved, 1024 + 3 * kMiB);
  f.alloc.record_stream(a, kS2);
  f.alloc.deallocate(a, 0);  // ordered by synchronizing its stream and S2, then released
  EXPECT_EQ(f.device.synchronized, (std::vector<StreamHandle>{kS1, kS2}));
  EXPECT_EQ(f.device.released, std::vector<void*>{a});
  void* c = f.alloc.allocate(1000, kS1);
  EXPECT_EQ(f.device.reserves.size(), 3u);  // never from a cache
  f.alloc.deallocate(b, 0);
  f.alloc.deallocate(c, 0);
  EXPECT_EQ(f.alloc.stats().reserved, 0u);
  EXPECT_EQ(f.device.used, 0u);
  EXPECT_EQ(f.device.events_recorded, 0);
  f.device.capacity = kMiB;
  const ox::Error e = caught([&] { f.alloc.allocate(2 * kMiB, kS1); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_FALSE(contains(e.what(), "emptying")) << e.what();
  EXPECT_EQ(f.alloc.stats().cache_flushes, 0u);
}

TEST(CudaAlloc, TwoThreadsAllocatingAndFreeing) {
  Fixture f;
  auto work = [&](StreamHandle stream, unsigned char mark) {
    std::vector<std::pair<void*, size_t>> held;
    uint32_t x = mark;
    for (int i = 0; i < 3000; ++i) {
      x = x * 1664525u + 1013904223u;
      const size_t n = size_t{1} + (x >> 8) % (x % 7 == 0 ? 3 * kMiB : 16 * kKiB);
      auto* p = static_cast<unsigned char*>(f.alloc.allocate(n, stream));
      std::memset(p, mark, n);
      held.emplace_back(p, n);
      if (held.size() > 8) {
        auto [q, m] = held.front();
        held.erase(held.begin());
        const auto* bytes = static_cast<unsigned char*>(q);
        for (size_t k = 0; k < m; k += 97) ASSERT_EQ(bytes[k], mark);  // nobody else wrote
        f.alloc.deallocate(q, m);
      }
    }
    for (auto [q, m] : held) f.alloc.deallocate(q, m);
  };
  std::thread t1(work, kS1, 0xA1), t2(work, kS2, 0xB2);
  t1.join();
  t2.join();
  EXPECT_EQ(f.alloc.stats().allocated, 0u);
  EXPECT_EQ(f.alloc.stats().allocations, 0u);
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.stats().reserved, 0u);
  EXPECT_EQ(f.device.used, 0u);
}

// ---- The public API where CUDA is not available (this machine: no driver) ------------------

void expect_unavailable(const ox::Error& e) {
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(contains(e.what(), ox::cuda::unavailable_reason())) << e.what();
}

TEST(CudaStream, StreamsEventsAndMemoryRefusedWithTheReason) {
  if (ox::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  ASSERT_FALSE(ox::cuda::unavailable_reason().empty());
  expect_unavailable(caught([] { ox::cuda::Stream::default_stream(0); }));
  expect_unavailable(caught([] { ox::cuda::Stream::create(0); }));
  expect_unavailable(caught([] { ox::cuda::current_stream(0); }));
  expect_unavailable(caught([] { ox::cuda::memory_stats(0); }));
  expect_unavailable(caught([] { ox::cuda::reset_peak_memory_stats(0); }));
  const ox::Tensor t = ox::arange(4.0).cpu();  // a CPU tensor under OXMERA_TEST_DEVICE too
  expect_unavailable(caught([&] { ox::cuda::pin_memory(t); }));
  expect_unavailable(caught([&] { t.pin_memory(); }));
  EXPECT_FALSE(ox::cuda::is_pinned(t));
  EXPECT_FALSE(t.is_pinned());
  // non_blocking is a request, not a demand: a CPU copy ignores it.
  const ox::Tensor copy = t.to(ox::Device::cpu(), ox::kF32, {.non_blocking = true});
  EXPECT_EQ(copy.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_TRUE(t.to(ox::Device::cpu(), {.non_blocking = true}).is_same_storage(t));
  // Emptying a cache that never held anything is no error: ox::empty_cache() calls it.
  ox::cuda::empty_cache();
  ox::empty_cache();
}

TEST(CudaStream, AnEventNeverRecordedCountsAsDone) {
  ox::cuda::Event e(/*enable_timing=*/true);
  EXPECT_FALSE(e.is_recorded());
  EXPECT_TRUE(e.query());
  e.synchronize();  // returns at once
  ox::cuda::Event moved(std::move(e));
  EXPECT_TRUE(moved.query());
  const ox::Error err = caught([&] { (void)moved.elapsed_time(moved); });
  if (ox::cuda::is_built())
    EXPECT_EQ(err.kind(), ox::ErrorKind::Value);  // not recorded
  else
    EXPECT_EQ(err.kind(), ox::ErrorKind::Device);
}

// ---- On a GPU (skipped elsewhere, with the reason) ------------------------------------------

class CudaMemoryOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ox::cuda::is_available())
      GTEST_SKIP() << "no usable CUDA device: " << ox::cuda::unavailable_reason();
  }
};

TEST_F(CudaMemoryOnDevice, CurrentStreamAndGuardPerThread) {
  using ox::cuda::Stream;
  const Stream def = Stream::default_stream(0);
  EXPECT_TRUE(def.is_default());
  EXPECT_EQ(ox::cuda::current_stream(0), def);
  const Stream s = Stream::create(0);
  EXPECT_FALSE(s.is_default());
  EXPECT_NE(Stream::create(0), s);  // the next of the pool
  {
    ox::cuda::StreamGuard guard(s);
    EXPECT_EQ(ox::cuda::current_stream(0), s);
    std::thread([&] { EXPECT_EQ(ox::cuda::current_stream(0), def); }).join();
  }
  EXPECT_EQ(ox::cuda::current_stream(0), def);
  s.synchronize();
  EXPECT_TRUE(s.query());
  EXPECT_EQ(caught([] { Stream::create(ox::cuda::device_count()); }).kind(), ox::ErrorKind::Device);
}

TEST_F(CudaMemoryOnDevice, EventsRecordQueryAndTime) {
  const ox::cuda::Stream s = ox::cuda::Stream::create(0);
  ox::cuda::Event start(true), end(true);
  start.record(s);
  end.record(s);
  end.synchronize();
  EXPECT_TRUE(start.query());
  EXPECT_TRUE(end.query());
  EXPECT_GE(start.elapsed_time(end), 0.0f);
  ox::cuda::Event untimed;
  untimed.record(s);
  EXPECT_EQ(caught([&] { (void)untimed.elapsed_time(end); }).kind(), ox::ErrorKind::Value);
  ox::cuda::Stream::default_stream(0).wait(end);  // queues a wait; returns at once
  ox::cuda::Stream::default_stream(0).synchronize();
}

TEST_F(CudaMemoryOnDevice, AllocatorReuseStatsAndStreams) {
  ox::DeviceCachingAllocator& a = ox::cuda::detail::device_allocator(0);
  if (a.mode() == ox::DeviceCachingAllocator::Mode::Direct)
    GTEST_SKIP() << "OXMERA_CUDA_ALLOC=direct: nothing is cached";
  const ox::cuda::MemoryStats before = ox::cuda::memory_stats(0);
  void* p = a.allocate(1000);  // on the default stream
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ox::cuda::memory_stats(0).allocated, before.allocated + 1024);
  EXPECT_GE(ox::cuda::memory_stats(0).reserved, before.reserved);
  a.deallocate(p, 1000);
  EXPECT_EQ(a.allocate(1000), p);  // reused at once on its stream
  const ox::cuda::Stream s = ox::cuda::Stream::create(0);
  void* q = nullptr;
  {
    ox::cuda::StreamGuard guard(s);
    q = a.allocate(1000);  // another stream: never p's block
  }
  EXPECT_NE(q, p);
  EXPECT_TRUE(a.record_stream(p, s.handle()));
  a.deallocate(p, 1000);
  s.synchronize();  // the event recorded on s at the free is done now
  EXPECT_EQ(a.allocate(1000), p);
  a.deallocate(p, 1000);
  a.deallocate(q, 1000);
  EXPECT_EQ(ox::cuda::memory_stats(0).allocated, before.allocated);
  ox::cuda::reset_peak_memory_stats(0);
  EXPECT_EQ(ox::cuda::memory_stats(0).peak_allocated, before.allocated);
  ox::empty_cache();
  EXPECT_LE(ox::cuda::memory_stats(0).reserved, before.reserved);
}

TEST_F(CudaMemoryOnDevice, PinnedMemory) {
  const ox::DeviceGuard on_cpu(ox::Device::cpu());  // host tensors, whatever the test device
  const ox::Tensor t = ox::arange(6.0).reshape({2, 3}).transpose(0, 1);
  EXPECT_FALSE(ox::cuda::is_pinned(t));
  const ox::Tensor p = ox::cuda::pin_memory(t);
  EXPECT_TRUE(ox::cuda::is_pinned(p));
  EXPECT_TRUE(p.device().is_cpu());
  EXPECT_EQ(p.shape(), (ox::Shape{3, 2}));
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(ox::cuda::pin_memory(p).is_same_storage(p));
  EXPECT_TRUE(ox::cuda::is_pinned(p.narrow(0, 1, 2)));  // a view of pinned storage
  const ox::cuda::Stream s = ox::cuda::Stream::create(0);
  ox::cuda::record_stream(p, s);  // as an asynchronous copy on s would
}

TEST_F(CudaMemoryOnDevice, NonBlockingCopiesThroughPinnedMemory) {
  const ox::DeviceGuard on_cpu(ox::Device::cpu());  // host tensors, whatever the test device
  std::vector<float> values(4096);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) - 7.5f;
  const ox::Tensor host = ox::tensor(values).pin_memory();
  ASSERT_TRUE(host.is_pinned());
  const ox::Tensor on_device = host.to(ox::Device::cuda(0), {.non_blocking = true});
  const ox::Tensor back = (on_device * 2).to(ox::Device::cpu(), {.non_blocking = true});
  EXPECT_TRUE(back.is_pinned());  // a non-blocking copy to the host lands in pinned memory
  ox::synchronize();
  const std::vector<float> got = back.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], 2 * values[i]) << i;
  // A pageable source is copied (blocking) all the same.
  EXPECT_EQ(
      ox::tensor(values).to(ox::Device::cuda(0), {.non_blocking = true}).cpu().to_vector<float>(),
      values);
}

TEST_F(CudaMemoryOnDevice, OutOfMemoryNamesTheRequest) {
  const uint64_t total = ox::cuda::get_device_properties(0).total_memory;
  const ox::Error e = caught([&] { ox::cuda::detail::device_allocator(0).allocate(2 * total); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(e.what(), std::to_string(2 * total) + " bytes")) << e.what();
  EXPECT_TRUE(contains(e.what(), "free on the device")) << e.what();
  EXPECT_GE(ox::cuda::memory_stats(0).ooms, 1u);
}

}  // namespace
