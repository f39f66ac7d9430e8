#pragma once
// The CUDA caching allocator of each device (backend/device_caching_allocator.h over the
// driver's cuMemAlloc, cuMemFree and events; docs/CUDA.md "Memory"). Declared in every build:
// without CUDA, device_allocator raises ox::Error (Device) with the reason and
// empty_device_caches does nothing.

#include "backend/device_caching_allocator.h"
#include "oxmera/tensor.h"

namespace ox::cuda::detail {

// The allocator of `device`, made on first use (caching, or direct when OXMERA_CUDA_ALLOC is
// "direct"); allocate(n) queues on the thread's current stream of the device. This is what the
// CUDA Backend's allocator(device) returns. Never destroyed (the driver may be gone at exit).
DeviceCachingAllocator& device_allocator(int device);

// Page-locked host memory (cuMemHostAlloc, portable: every context sees it as pinned), cached by
// the same allocator: its blocks all belong to a host pseudo-stream that no copy runs on, so a
// block a copy used (record_stream with stream_key) is reused only after that copy completes.
DeviceCachingAllocator& pinned_allocator();
DeviceCachingAllocator* pinned_allocator_if_made() noexcept;  // nullptr before the first use
// An uninitialized contiguous CPU tensor in pinned memory (what a non-blocking copy from a device
// writes into).
Tensor empty_pinned(const Shape& shape, DType dtype);
// The key pinned_allocator's record_stream takes for a stream of `device` (interned: one per
// stream, kept for the process, as the streams are).
StreamHandle stream_key(int device, void* stream);

// empty_cache() of every allocator made so far (the pinned one too): ox::empty_cache() calls it
// while no CUDA Backend is registered (afterwards the registry reaches the allocators through
// Backend::allocator).
void empty_device_caches() noexcept;

}  // namespace ox::cuda::detail
