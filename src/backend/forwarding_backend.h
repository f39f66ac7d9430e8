#pragma once
// A Backend that forwards every primitive to another through a hook: `hook(name, call)` runs
// `call` (the inner backend's primitive) and returns what it returns. The registry wraps every
// backend in one whose hook turns allocation failures into OutOfMemory errors naming the op;
// tests wrap the CPU backend in one that plays a second device. A new primitive is forwarded
// here once.

#include <array>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace ox {

// Every primitive, by the name the hook receives (parity coverage checks these).
inline constexpr std::array<std::string_view, 38> kPrimitiveNames = {"synchronize",
                                                                     "copy",
                                                                     "fill",
                                                                     "arange",
                                                                     "linspace",
                                                                     "random",
                                                                     "bernoulli",
                                                                     "randperm",
                                                                     "reduce",
                                                                     "scan",
                                                                     "unary",
                                                                     "binary",
                                                                     "matmul",
                                                                     "where",
                                                                     "softmax",
                                                                     "softmax_backward",
                                                                     "layer_norm",
                                                                     "layer_norm_backward",
                                                                     "cross_entropy",
                                                                     "cross_entropy_backward",
                                                                     "im2col",
                                                                     "col2im",
                                                                     "depthwise_conv2d",
                                                                     "pool2d",
                                                                     "pool2d_backward",
                                                                     "gather",
                                                                     "scatter",
                                                                     "nonzero",
                                                                     "sort",
                                                                     "optim_step",
                                                                     "cholesky",
                                                                     "lu_factor",
                                                                     "triangular_solve",
                                                                     "lu_solve",
                                                                     "geqrf",
                                                                     "orgqr",
                                                                     "eigh",
                                                                     "svd"};

template <class Hook>
class ForwardingBackend : public Backend {
 public:
  ForwardingBackend(std::unique_ptr<Backend> inner, Hook hook)
      : inner_(std::move(inner)), hook_(std::move(hook)) {}

  DeviceType device_type() const override { return inner_->device_type(); }
  BackendInfo info() const override { return inner_->info(); }
  int device_count() const override { return inner_->device_count(); }
  Allocator& allocator(int device_index) override { return inner_->allocator(device_index); }
  Allocator* pinned_host_allocator() override { return inner_->pinned_host_allocator(); }
  void synchronize(int device_index) override {
    hook_("synchronize", [&] { inner_->synchronize(device_index); });
  }

  void copy(const StridedArray& dst, const StridedArray& src, bool non_blocking) override {
    hook_("copy", [&] { inner_->copy(dst, src, non_blocking); });
  }
  void fill(const StridedArray& dst, const Scalar& value) override {
    hook_("fill", [&] { inner_->fill(dst, value); });
  }
  void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) override {
    hook_("arange", [&] { inner_->arange(dst, start, step); });
  }
  void linspace(const StridedArray& dst, double start, double end) override {
    hook_("linspace", [&] { inner_->linspace(dst, start, end); });
  }
  void random(const StridedArray& dst, const RandomSpec& spec) override {
    hook_("random", [&] { inner_->random(dst, spec); });
  }
  void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                 uint64_t first_block, CheckSite site) override {
    hook_("bernoulli", [&] { inner_->bernoulli(dst, p, seed, first_block, site); });
  }
  void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) override {
    hook_("randperm", [&] { inner_->randperm(dst, seed, first_block); });
  }
  void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
              const ReduceParams& params) override {
    hook_("reduce", [&] { inner_->reduce(op, dst, src, params); });
  }
  void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
            const StridedArray* indices) override {
    hook_("scan", [&] { inner_->scan(op, dst, src, indices); });
  }
  void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
             const UnaryParams& params) override {
    hook_("unary", [&] { inner_->unary(op, dst, src, params); });
  }
  void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              double alpha) override {
    hook_("binary", [&] { inner_->binary(op, dst, a, b, alpha); });
  }
  void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              const Scalar& alpha, const Scalar& beta) override {
    hook_("matmul", [&] { inner_->matmul(dst, a, b, alpha, beta); });
  }
  void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
             const StridedArray& b) override {
    hook_("where", [&] { inner_->where(dst, cond, a, b); });
  }
  void softmax(const StridedArray& dst, const StridedArray& src, bool log) override {
    hook_("softmax", [&] { inner_->softmax(dst, src, log); });
  }
  void softmax_backward(const StridedArray& grad_in, const StridedArray& grad_out,
                        const StridedArray& y, bool log) override {
    hook_("softmax_backward", [&] { inner_->softmax_backward(grad_in, grad_out, y, log); });
  }
  void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                  const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                  double eps, bool rms) override {
    hook_("layer_norm", [&] { inner_->layer_norm(dst, mean, rstd, src, weight, bias, eps, rms); });
  }
  void layer_norm_backward(const StridedArray& grad_in, const StridedArray& grad_weight,
                           const StridedArray& grad_bias, const StridedArray& grad_out,
                           const StridedArray& src, const StridedArray& mean,
                           const StridedArray& rstd, const StridedArray& weight,
                           bool rms) override {
    hook_("layer_norm_backward", [&] {
      inner_->layer_norm_backward(grad_in, grad_weight, grad_bias, grad_out, src, mean, rstd,
                                  weight, rms);
    });
  }
  void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                     const StridedArray& logits, const StridedArray& target,
                     const StridedArray& weight, int64_t ignore_index, double smoothing,
                     CheckSite site) override {
    hook_("cross_entropy", [&] {
      inner_->cross_entropy(loss, row_weight, logits, target, weight, ignore_index, smoothing,
                            site);
    });
  }
  void cross_entropy_backward(const StridedArray& grad_logits, const StridedArray& grad_loss,
                              const StridedArray& logits, const StridedArray& target,
                              const StridedArray& weight, int64_t ignore_index,
                              double smoothing) override {
    hook_("cross_entropy_backward", [&] {
      inner_->cross_entropy_backward(grad_logits, grad_loss, logits, target, weight, ignore_index,
                                     smoothing);
    });
  }
  void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    hook_("im2col", [&] { inner_->im2col(dst, src, w); });
  }
  void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    hook_("col2im", [&] { inner_->col2im(dst, src, w); });
  }
  void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                        const StridedArray& b, const StridedArray& bias,
                        const Window2d& w) override {
    hook_("depthwise_conv2d", [&] { inner_->depthwise_conv2d(op, dst, a, b, bias, w); });
  }
  void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
              const StridedArray& src, const PoolParams& p) override {
    hook_("pool2d", [&] { inner_->pool2d(op, dst, indices, src, p); });
  }
  void pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                       const StridedArray& indices, const PoolParams& p, CheckSite site) override {
    hook_("pool2d_backward",
          [&] { inner_->pool2d_backward(op, grad_src, grad_dst, indices, p, site); });
  }
  void gather(const StridedArray& dst, const StridedArray& src,
              const std::vector<IndexOperand>& indices) override {
    hook_("gather", [&] { inner_->gather(dst, src, indices); });
  }
  void scatter(const StridedArray& dst, const StridedArray& src,
               const std::vector<IndexOperand>& indices, ScatterReduce reduce) override {
    hook_("scatter", [&] { inner_->scatter(dst, src, indices, reduce); });
  }
  void nonzero(const StridedArray& dst, const StridedArray& src) override {
    hook_("nonzero", [&] { inner_->nonzero(dst, src); });
  }
  void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
            const SortParams& params) override {
    hook_("sort", [&] { inner_->sort(values, indices, src, params); });
  }
  void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                  const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                  const OptimStepParams& params) override {
    hook_("optim_step", [&] { inner_->optim_step(kind, param, grad, buf1, buf2, buf3, params); });
  }
  void cholesky(const StridedArray& a, const StridedArray& info, bool upper) override {
    hook_("cholesky", [&] { inner_->cholesky(a, info, upper); });
  }
  void lu_factor(const StridedArray& a, const StridedArray& pivots,
                 const StridedArray& info) override {
    hook_("lu_factor", [&] { inner_->lu_factor(a, pivots, info); });
  }
  void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                        bool unit_diagonal) override {
    hook_("triangular_solve",
          [&] { inner_->triangular_solve(a, b, upper, transpose, unit_diagonal); });
  }
  void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                bool transpose) override {
    hook_("lu_solve", [&] { inner_->lu_solve(lu, pivots, b, transpose); });
  }
  void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) override {
    hook_("geqrf", [&] { inner_->geqrf(a, tau, info); });
  }
  void orgqr(const StridedArray& q, const StridedArray& tau) override {
    hook_("orgqr", [&] { inner_->orgqr(q, tau); });
  }
  void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
            bool upper) override {
    hook_("eigh", [&] { inner_->eigh(a, w, info, vectors, upper); });
  }
  void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
           const StridedArray& vh, const StridedArray& info, bool full_matrices) override {
    hook_("svd", [&] { inner_->svd(a, u, s, vh, info, full_matrices); });
  }

 protected:
  std::unique_ptr<Backend> inner_;
  Hook hook_;
};

}  // namespace ox
