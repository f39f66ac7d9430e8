#pragma once
// A caching allocator for a device whose work is queued on streams (CUDA; docs/CUDA.md
// "Memory"), written against a handful of device operations so that all of its logic runs and
// is tested on the host (tests/backend/cuda_allocator_test.cpp drives it with a fake device).
//
// After PyTorch's CUDACachingAllocator: requests are rounded up to 512 bytes; those up to 1 MiB
// come from a small pool of 2 MiB segments, larger ones from a large pool (20 MiB segments for
// requests under 10 MiB, else the request rounded up to 2 MiB). A free block bigger than the
// request is split, and a freed block merges with its free neighbours of the same segment. Every
// block belongs to the stream it was allocated on: a freed block is reused at once by later
// allocations on that stream (the device runs them after the work already queued there), never
// by other streams. A block that other streams used too (record_stream) becomes free only after
// events recorded on those streams at deallocation have completed. When the device has no room,
// the cache is emptied (free segments released) and the reservation retried once; then an
// ox::Error (OutOfMemory) names the request, the bytes reserved and the device's free bytes.
// Direct mode (OXMERA_CUDA_ALLOC=direct, for compute-sanitizer) reserves and releases every
// block by itself, synchronizing the streams that used a block before releasing it.

#include <cstddef>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/allocator.h"

namespace ox {

using StreamHandle = void*;  // opaque (a CUstream); nullptr is the device's default stream
using EventHandle = void*;   // opaque (a CUevent)

// What the allocator asks of a device. Calls may throw ox::Error (a failed driver call).
class DeviceMemoryOps {
 public:
  virtual ~DeviceMemoryOps() = default;
  virtual void* reserve(size_t nbytes) = 0;  // nullptr when the device has no room
  virtual void release(void* ptr) = 0;
  virtual EventHandle record_event(StreamHandle stream) = 0;  // after the work queued so far
  virtual bool event_done(EventHandle event) = 0;
  virtual void wait_event(EventHandle event) = 0;  // the host waits for it
  virtual void destroy_event(EventHandle event) = 0;
  virtual void synchronize_stream(StreamHandle stream) = 0;
  virtual size_t free_bytes() = 0;  // free on the device, as the driver reports it
};

struct DeviceMemoryStats {
  size_t allocated = 0;       // bytes of live allocations (rounded to 512)
  size_t reserved = 0;        // bytes of device memory held: allocated + cached
  size_t peak_allocated = 0;  // since construction or the last reset_peak_stats()
  size_t peak_reserved = 0;
  size_t allocations = 0;    // live allocations
  size_t segments = 0;       // reservations held
  size_t cache_flushes = 0;  // times the cache was emptied to retry a reservation
  size_t ooms = 0;           // out-of-memory errors raised
};

class DeviceCachingAllocator final : public Allocator {
 public:
  enum class Mode { Caching, Direct };
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;  // up to this: the small pool
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kMidRequest = size_t{10} << 20;  // below this: 20 MiB segments
  static constexpr size_t kMidSegment = size_t{20} << 20;
  static constexpr size_t kSegmentRound = size_t{2} << 20;

  // `name` ("cuda:0") starts error messages; `current_stream` gives the stream allocate(n)
  // uses (the thread's current stream of the device).
  DeviceCachingAllocator(DeviceMemoryOps& ops, std::string name, Mode mode,
                         std::function<StreamHandle()> current_stream);
  // Waits for pending events and releases the free segments; live blocks' memory is left alone.
  ~DeviceCachingAllocator() override;
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  void* allocate(size_t nbytes) override;  // on current_stream()
  void* allocate(size_t nbytes, StreamHandle stream);
  // Ordered on the block's stream and on every stream record_stream named (see above).
  void deallocate(void* ptr, size_t nbytes) noexcept override;
  // Waits for pending events, then releases every segment with no live block.
  void empty_cache() noexcept override;
  // The block at `ptr` (as allocate returned it) is not reused before the work queued on
  // `stream` up to its deallocation completes. False (nothing done) for an address that is no
  // live block of this allocator.
  bool record_stream(void* ptr, StreamHandle stream);
  // Whether `ptr` is the start of a live block of this allocator.
  bool owns(const void* ptr) const;
  // Whether `ptr` lies inside a live allocation (a view into one, say). Linear in their count.
  bool holds(const void* ptr) const;
  // The stream the block at `ptr` was allocated on.
  StreamHandle block_stream(void* ptr) const;

  DeviceMemoryStats stats() const;
  void reset_peak_stats();
  Mode mode() const { return mode_; }

  // The mode OXMERA_CUDA_ALLOC names: unset, "" or "caching", or "direct"; anything else is an
  // ox::Error (Value) naming the setting.
  static Mode mode_named(const char* setting);
  static size_t rounded(size_t nbytes);             // the size a request occupies
  static size_t segment_size(size_t rounded_size);  // the reservation a miss makes

 private:
  struct Block {
    Block(char* p, size_t n, StreamHandle s, bool in_small)
        : ptr(p), size(n), stream(s), small(in_small) {}
    char* ptr;
    size_t size;
    StreamHandle stream;
    bool small;
    bool allocated = false;
    int pending_events = 0;  // events to complete before it is free
    Block* prev = nullptr;   // neighbours in its segment
    Block* next = nullptr;
    std::vector<StreamHandle> stream_uses;  // other streams that used it (record_stream)
    bool is_free() const { return !allocated && pending_events == 0; }
  };
  struct ByStreamSize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, ByStreamSize>;

  Block* find_free(Pool& pool, StreamHandle stream, size_t size);
  Block* new_segment(bool small, StreamHandle stream, size_t size);
  void split(Block* block, size_t size);
  void free_block(Block* block);  // merges with free neighbours, back into its pool
  void process_events(bool wait);
  void release_cached(bool wait);
  [[noreturn]] void out_of_memory(size_t nbytes, size_t size);
  void* direct_allocate(size_t size, StreamHandle stream);
  void note_allocated(Block* block);

  DeviceMemoryOps& ops_;
  const std::string name_;
  const Mode mode_;
  std::function<StreamHandle()> current_stream_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::unordered_map<void*, Block*> live_;               // allocated blocks by address
  std::vector<std::pair<EventHandle, Block*>> pending_;  // events a freed block waits for
  std::vector<Block*> lost_;  // freed while the device failed: never reused
  DeviceMemoryStats stats_;
};

// "1.50 GiB", "20.0 MiB", "512 bytes": for messages.
std::string memory_size_text(size_t nbytes);

}  // namespace ox
