#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ox::cpu {
std::unique_ptr<Backend> make_backend();
// OpenBLAS's thread count (for BLAS/LAPACK calls made outside oxmera's kernels, which run
// BLAS serially on their own tiles); ox::set_num_threads sets it (matmul.cpp).
void set_blas_threads(int n);
// What BLAS library this build uses and the kernels it picked for this processor.
std::string blas_config();
// The fused optimizer step (optim_step.cpp); Backend::optim_step says what it computes.
void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                const OptimStepParams& params);
}  // namespace ox::cpu
