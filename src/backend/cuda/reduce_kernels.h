#pragma once
// Which kernels CudaBackend::reduce and ::scan launch (reduce.cpp): exposed so that a test can
// check every (op, dtype) the op layer sends has its kernel in the embedded images.

#include <string>
#include <vector>

#include "backend/backend.h"

namespace ox::cuda::detail {

struct KernelName {
  const char* family;  // the kernel image: "reduce_sum", "reduce_extreme", "reduce_stats", "scan"
  std::string name;    // "ox_reduce_sum_f32"
};

// In launch order: Var/Std and LogSumExp launch a first pass (the mean; the max) and then the
// reduction itself. `p` is Norm's.
std::vector<KernelName> reduce_kernel_names(ReduceOp op, DType src, double p);
std::vector<KernelName> scan_kernel_names(ScanOp op, DType src);

}  // namespace ox::cuda::detail
