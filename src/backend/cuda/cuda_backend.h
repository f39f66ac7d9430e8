#pragma once
// The CUDA Backend: every primitive of backend/backend.h on NVIDIA GPUs (docs/CUDA.md). Its
// methods are defined by family, each beside the kernels it launches: the host launchers in
// src/backend/cuda/<family>.cpp, the kernels in src/backend/cuda/kernels/<family>.cu. The registry
// installs it on the first use of a CUDA device where the runtime is usable (make_backend).

#include "backend/backend.h"

namespace ox::cuda::detail {

class CudaBackend final : public Backend {
 public:
  DeviceType device_type() const override;
  BackendInfo info() const override;
  int device_count() const override;
  Allocator& allocator(int device_index) override;
  Allocator* pinned_host_allocator() override;
  void synchronize(int device_index) override;
  // Non-blocking copies of contiguous bytes between pinned memory and the device, else the
  // blocking copy below.
  void copy(const StridedArray& dst, const StridedArray& src, bool non_blocking) override;

  // elementwise.cpp
  // The blocking copy: returns when dst can be read and src reused.
  void copy(const StridedArray& dst, const StridedArray& src);
  void fill(const StridedArray& dst, const Scalar& value) override;
  void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) override;
  void linspace(const StridedArray& dst, double start, double end) override;
  void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
             const UnaryParams& params) override;
  void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              double alpha) override;
  void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
             const StridedArray& b) override;

  // random.cpp
  void random(const StridedArray& dst, const RandomSpec& spec) override;
  void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                 uint64_t first_block, CheckSite site) override;
  void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) override;

  // reduce.cpp
  void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
              const ReduceParams& params) override;
  void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
            const StridedArray* indices) override;

  // matmul.cpp
  void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              const Scalar& alpha, const Scalar& beta) override;

  // norm.cpp
  void softmax(const StridedArray& dst, const StridedArray& src, bool log) override;
  void softmax_backward(const StridedArray& grad_in, const StridedArray& grad_out,
                        const StridedArray& y, bool log) override;
  void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                  const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                  double eps, bool rms) override;
  void layer_norm_backward(const StridedArray& grad_in, const StridedArray& grad_weight,
                           const StridedArray& grad_bias, const StridedArray& grad_out,
                           const StridedArray& src, const StridedArray& mean,
                           const StridedArray& rstd, const StridedArray& weight, bool rms) override;
  void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                     const StridedArray& logits, const StridedArray& target,
                     const StridedArray& weight, int64_t ignore_index, double smoothing,
                     CheckSite site) override;
  void cross_entropy_backward(const StridedArray& grad_logits, const StridedArray& grad_loss,
                              const StridedArray& logits, const StridedArray& target,
                              const StridedArray& weight, int64_t ignore_index,
                              double smoothing) override;

  // conv.cpp
  void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) override;
  void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) override;
  void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                        const StridedArray& b, const StridedArray& bias,
                        const Window2d& w) override;
  void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
              const StridedArray& src, const PoolParams& p) override;
  void pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                       const StridedArray& indices, const PoolParams& p, CheckSite site) override;

  // index.cpp
  void gather(const StridedArray& dst, const StridedArray& src,
              const std::vector<IndexOperand>& indices) override;
  void scatter(const StridedArray& dst, const StridedArray& src,
               const std::vector<IndexOperand>& indices, ScatterReduce reduce) override;
  void nonzero(const StridedArray& dst, const StridedArray& src) override;

  // sort.cpp
  void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
            const SortParams& params) override;

  // optim.cpp
  void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                  const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                  const OptimStepParams& params) override;

  // linalg.cpp
  void cholesky(const StridedArray& a, const StridedArray& info, bool upper) override;
  void lu_factor(const StridedArray& a, const StridedArray& pivots,
                 const StridedArray& info) override;
  void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                        bool unit_diagonal) override;
  void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                bool transpose) override;
  void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) override;
  void orgqr(const StridedArray& q, const StridedArray& tau) override;
  void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
            bool upper) override;
  void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
           const StridedArray& vh, const StridedArray& info, bool full_matrices) override;
};

}  // namespace ox::cuda::detail
