#include "backend/device_caching_allocator.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>

#include "oxmera/core/error.h"

namespace ox {

std::string memory_size_text(size_t nbytes) {
  char text[48];
  const auto n = static_cast<double>(nbytes);
  if (nbytes >= (size_t{1} << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", n / double(size_t{1} << 30));
  else if (nbytes >= (size_t{1} << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", n / double(size_t{1} << 20));
  else if (nbytes >= (size_t{1} << 10))
    std::snprintf(text, sizeof text, "%.1f KiB", n / double(size_t{1} << 10));
  else
    std::snprintf(text, sizeof text, "%zu bytes", nbytes);
  return text;
}

bool DeviceCachingAllocator::ByStreamSize::operator()(const Block* a, const Block* b) const {
  const std::less<void*> before;
  if (a->stream != b->stream) return before(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return before(a->ptr, b->ptr);
}

DeviceCachingAllocator::DeviceCachingAllocator(DeviceMemoryOps& ops, std::string name, Mode mode,
                                               std::function<StreamHandle()> current_stream)
    : ops_(ops), name_(std::move(name)), mode_(mode), current_stream_(std::move(current_stream)) {}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  empty_cache();
  // Live blocks' memory (and the segments holding them) stays with the device.
  for (auto& [ptr, block] : live_) delete block;
  for (Block* block : lost_) delete block;
  for (Pool* pool : {&small_pool_, &large_pool_})
    for (Block* block : *pool) delete block;
}

DeviceCachingAllocator::Mode DeviceCachingAllocator::mode_named(const char* setting) {
  if (setting == nullptr || *setting == '\0' || std::string(setting) == "caching")
    return Mode::Caching;
  OX_CHECK(std::string(setting) == "direct", Value, "cuda", "OXMERA_CUDA_ALLOC=", setting,
           " is neither \"caching\" (the default) nor \"direct\"");
  return Mode::Direct;
}

size_t DeviceCachingAllocator::rounded(size_t nbytes) {
  return nbytes < kRound ? kRound : (nbytes + kRound - 1) / kRound * kRound;
}

size_t DeviceCachingAllocator::segment_size(size_t size) {
  if (size <= kSmallRequest) return kSmallSegment;
  if (size < kMidRequest) return kMidSegment;
  return (size + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
}

void* DeviceCachingAllocator::allocate(size_t nbytes) {
  return allocate(nbytes, current_stream_ ? current_stream_() : nullptr);
}

void* DeviceCachingAllocator::allocate(size_t nbytes, StreamHandle stream) {
  if (nbytes == 0) return nullptr;
  // Refused before rounding could wrap around: no device has that much memory.
  OX_CHECK(nbytes <= SIZE_MAX / 2, OutOfMemory, "allocate", "out of memory on ", name_,
           ": cannot allocate ", nbytes, " bytes");
  const size_t size = rounded(nbytes);
  std::lock_guard lock(mutex_);
  if (mode_ == Mode::Direct) {
    void* ptr = direct_allocate(size, stream);
    if (!ptr) out_of_memory(nbytes, size);
    return ptr;
  }
  process_events(false);
  const bool small = size <= kSmallRequest;
  Block* block = find_free(small ? small_pool_ : large_pool_, stream, size);
  if (!block) block = new_segment(small, stream, size);
  if (!block) {  // give the free segments back (waiting for pending frees), then once more
    ++stats_.cache_flushes;
    release_cached(true);
    block = new_segment(small, stream, size);
  }
  if (!block) out_of_memory(nbytes, size);
  split(block, size);
  note_allocated(block);
  return block->ptr;
}

void DeviceCachingAllocator::note_allocated(Block* block) {
  block->allocated = true;
  live_.emplace(block->ptr, block);
  stats_.allocated += block->size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.allocations;
}

void* DeviceCachingAllocator::direct_allocate(size_t size, StreamHandle stream) {
  void* ptr = ops_.reserve(size);
  if (!ptr) return nullptr;
  auto* block = new Block(static_cast<char*>(ptr), size, stream, size <= kSmallRequest);
  stats_.reserved += size;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments;
  note_allocated(block);
  return ptr;
}

void DeviceCachingAllocator::out_of_memory(size_t nbytes, size_t size) {
  ++stats_.ooms;
  std::string free_text;
  try {
    free_text = memory_size_text(ops_.free_bytes());
  } catch (const Error&) {
    free_text = "an unknown amount";
  }
  OX_FAIL(OutOfMemory, "allocate", "out of memory on ", name_, ": tried to allocate ",
          memory_size_text(nbytes), " (", nbytes, " bytes",
          size != nbytes ? ", " + std::to_string(size) + " rounded" : std::string(), "); ",
          memory_size_text(stats_.reserved), " reserved by oxmera (",
          memory_size_text(stats_.allocated), " allocated), ", free_text, " free on the device",
          mode_ == Mode::Caching ? " (after emptying the cache and retrying)" : "");
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::find_free(Pool& pool, StreamHandle stream,
                                                                 size_t size) {
  Block key(nullptr, size, stream, false);
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::new_segment(bool small, StreamHandle stream,
                                                                   size_t size) {
  const size_t bytes = small ? kSmallSegment : segment_size(size);
  void* ptr = ops_.reserve(bytes);
  if (!ptr) return nullptr;
  stats_.reserved += bytes;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments;
  return new Block(static_cast<char*>(ptr), bytes, stream, small);
}

// The block keeps `size` bytes; the rest becomes a free block after it when it is worth keeping:
// any 512 bytes in the small pool, more than the small pool's largest request in the large one
// (smaller remainders stay inside the block).
void DeviceCachingAllocator::split(Block* block, size_t size) {
  const size_t rest = block->size - size;
  if (block->small ? rest < kRound : rest <= kSmallRequest) return;
  auto* tail = new Block(block->ptr + size, rest, block->stream, block->small);
  tail->prev = block;
  tail->next = block->next;
  if (tail->next) tail->next->prev = tail;
  block->next = tail;
  block->size = size;
  (block->small ? small_pool_ : large_pool_).insert(tail);
}

void DeviceCachingAllocator::free_block(Block* block) {
  Pool& pool = block->small ? small_pool_ : large_pool_;
  if (Block* prev = block->prev; prev && prev->is_free()) {
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (prev->next) prev->next->prev = prev;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; next && next->is_free()) {
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (block->next) block->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

void DeviceCachingAllocator::deallocate(void* ptr, size_t /*nbytes*/) noexcept {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  const auto it = live_.find(ptr);
  if (it == live_.end()) return;  // not ours: nothing to do (OX_ASSERT cannot throw here)
  Block* block = it->second;
  live_.erase(it);
  block->allocated = false;
  stats_.allocated -= block->size;
  --stats_.allocations;
  try {
    if (mode_ == Mode::Direct) {
      ops_.synchronize_stream(block->stream);
      for (StreamHandle s : block->stream_uses) ops_.synchronize_stream(s);
      ops_.release(block->ptr);
      stats_.reserved -= block->size;
      --stats_.segments;
      delete block;
      return;
    }
    for (StreamHandle s : block->stream_uses) {
      pending_.emplace_back(ops_.record_event(s), block);
      ++block->pending_events;
    }
    block->stream_uses.clear();
    if (block->pending_events == 0) free_block(block);
  } catch (...) {
    // A failing device (its error is raised by the next synchronizing call): the block is
    // never reused, and its segment never released, rather than reused too early.
    ++block->pending_events;
    try {
      lost_.push_back(block);
    } catch (...) {  // not even room to remember it: its bookkeeping leaks with it
    }
  }
}

void DeviceCachingAllocator::process_events(bool wait) {
  std::vector<std::pair<EventHandle, Block*>> still;
  size_t i = 0;
  try {
    for (; i < pending_.size(); ++i) {
      auto [event, block] = pending_[i];
      if (!wait && !ops_.event_done(event)) {
        still.emplace_back(event, block);
        continue;
      }
      if (wait) ops_.wait_event(event);
      ops_.destroy_event(event);
      if (--block->pending_events == 0) free_block(block);
    }
  } catch (...) {  // a failing device: the events not yet handled stay pending
    still.insert(still.end(), pending_.begin() + static_cast<std::ptrdiff_t>(i), pending_.end());
    pending_ = std::move(still);
    throw;
  }
  pending_ = std::move(still);
}

void DeviceCachingAllocator::release_cached(bool wait) {
  process_events(wait);
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->prev || block->next) {
        ++it;
        continue;
      }
      ops_.release(block->ptr);
      stats_.reserved -= block->size;
      --stats_.segments;
      it = pool->erase(it);
      delete block;
    }
  }
}

void DeviceCachingAllocator::empty_cache() noexcept {
  std::lock_guard lock(mutex_);
  try {
    release_cached(true);
  } catch (...) {  // a failing device: what is left stays cached
  }
}

bool DeviceCachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  Block* block = it->second;
  if (stream != block->stream && std::find(block->stream_uses.begin(), block->stream_uses.end(),
                                           stream) == block->stream_uses.end())
    block->stream_uses.push_back(stream);
  return true;
}

bool DeviceCachingAllocator::owns(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return live_.count(const_cast<void*>(ptr)) != 0;
}

bool DeviceCachingAllocator::holds(const void* ptr) const {
  const auto* p = static_cast<const char*>(ptr);
  std::lock_guard lock(mutex_);
  for (const auto& [start, block] : live_)
    if (p >= block->ptr && p < block->ptr + block->size) return true;
  return false;
}

StreamHandle DeviceCachingAllocator::block_stream(void* ptr) const {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(ptr);
  OX_CHECK(it != live_.end(), Value, "block_stream", "no live allocation of ", name_,
           " starts at this address");
  return it->second->stream;
}

DeviceMemoryStats DeviceCachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

}  // namespace ox
