#pragma once
// How the CUDA backend's copy (src/backend/cuda/elementwise.cpp) moves a strided array with
// dtype conversion between the CPU and CUDA devices: plain host logic, tested on the CPU
// (tests/backend/cuda_elementwise_test.cpp).
//
// Every route is: [src stage] -> transfer -> [dst stage]. The src stage turns src into a
// contiguous buffer of dst's dtype (on the host with the CPU backend's copy for an upload, with
// the copy kernel on src's device otherwise); the transfer moves contiguous bytes; the dst stage
// writes a contiguous buffer of dst's dtype into the strided dst (the copy kernel on dst's device,
// or the CPU backend's copy for a download). Without either stage the copy is one memcpy.
// On one device, a copy that needs any stage is one kernel (it converts and walks both layouts).

#include "backend/backend.h"

namespace ox::cuda::detail {

enum class CopyRoute : uint8_t {
  None,      // no elements
  OnDevice,  // src and dst on one CUDA device
  Upload,    // CPU -> CUDA
  Download,  // CUDA -> CPU
  Peer,      // CUDA device i -> CUDA device j (i != j)
};

struct CopyPlan {
  CopyRoute route = CopyRoute::None;
  bool src_stage = false;  // src is not contiguous, or its dtype is not dst's
  bool dst_stage = false;  // dst is not contiguous
  bool memcpy() const { return !src_stage && !dst_stage; }
};

inline CopyPlan plan_copy(const StridedArray& dst, const StridedArray& src) {
  CopyPlan plan;
  if (dst.numel() == 0) return plan;
  const bool dst_cuda = dst.device.type() == DeviceType::CUDA;
  const bool src_cuda = src.device.type() == DeviceType::CUDA;
  if (dst_cuda && src_cuda) {
    plan.route = dst.device.index() == src.device.index() ? CopyRoute::OnDevice : CopyRoute::Peer;
  } else if (dst_cuda) {
    plan.route = CopyRoute::Upload;
  } else {
    plan.route = CopyRoute::Download;
  }
  plan.src_stage = src.dtype != dst.dtype || !src.is_contiguous();
  plan.dst_stage = !dst.is_contiguous();
  return plan;
}

}  // namespace ox::cuda::detail
