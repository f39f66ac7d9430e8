#pragma once
// The device-side error word (backend/kernel_check.h): a kernel that finds a bad value (an index
// out of range, a probability outside [0, 1]) records the check site and the numbers in its
// device's word instead of returning anything to the host; the backend raises the report as an
// ox::Error at the next synchronizing call and clears the word. Plain layout shared with the
// host (backend/cuda/launch.cpp), which keeps the word in mapped page-locked memory.

#include <cstdint>

namespace ox::cuda::kernels {

struct CheckWord {
  int32_t failed;  // 0 until the first report
  int32_t site;    // the CheckSite
  int64_t value;
  int64_t position;
  int64_t bound;
};

#ifdef __CUDACC__
// Records the first report since the word was last cleared; later ones are dropped.
__device__ inline void report_check(CheckWord* word, int32_t site, int64_t value, int64_t position,
                                    int64_t bound) {
  if (atomicCAS(&word->failed, 0, 1) == 0) {
    word->site = site;
    word->value = value;
    word->position = position;
    word->bound = bound;
    __threadfence_system();
  }
}
#endif

}  // namespace ox::cuda::kernels
