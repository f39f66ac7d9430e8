#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "backend/cpu/cpu_allocator.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"

namespace ox::cpu {

namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown processor";
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    if (const char* target = std::getenv("OXMERA_SIMD_TARGET")) simd::set_target(target);
  }

  DeviceType device_type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  Allocator& allocator(int) override { return cpu_allocator(); }
  // Every primitive has finished when it returns, and failed checks raised at once.
  void synchronize(int) override {}

  BackendInfo info() const override {
    BackendInfo info;
    info.name = "cpu";
    info.available = true;
    info.devices.push_back(cpu_model_name());
    info.features.emplace_back("hardware threads",
                               std::to_string(std::thread::hardware_concurrency()));
    info.features.emplace_back("intra-op threads", std::to_string(omp_get_max_threads()));
    info.features.emplace_back("openmp", std::to_string(_OPENMP));
    info.features.emplace_back("blas", blas_config());
    std::string targets;
    for (const std::string& t : simd::targets()) targets += (targets.empty() ? "" : " ") + t;
    info.features.emplace_back("simd targets (OXMERA_SIMD_TARGET)", targets);
    info.features.emplace_back("simd target in use", simd::target());
    info.features.emplace_back("allocator cache limit (OXMERA_CPU_CACHE_MB)",
                               std::to_string(cpu_allocator().cache_limit() >> 20) + " MiB");
    return info;
  }

  void copy(const StridedArray& dst, const StridedArray& src, bool) override {
    cpu::copy(dst, src);
  }
  void fill(const StridedArray& dst, const Scalar& value) override { cpu::fill(dst, value); }
  void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) override {
    cpu::arange(dst, start, step);
  }
  void linspace(const StridedArray& dst, double start, double end) override {
    cpu::linspace(dst, start, end);
  }
  void random(const StridedArray& dst, const RandomSpec& spec) override { cpu::random(dst, spec); }
  void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                 uint64_t first_block, CheckSite site) override {
    cpu::bernoulli(dst, p, seed, first_block, site);
  }
  void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) override {
    cpu::randperm(dst, seed, first_block);
  }
  void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
              const ReduceParams& params) override {
    cpu::reduce(op, dst, src, params);
  }
  void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
            const StridedArray* indices) override {
    cpu::scan(op, dst, src, indices);
  }
  void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
             const UnaryParams& params) override {
    cpu::unary(op, dst, src, params);
  }
  void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              double alpha) override {
    cpu::binary(op, dst, a, b, alpha);
  }
  void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
             const StridedArray& b) override {
    cpu::where(dst, cond, a, b);
  }
  void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              const Scalar& alpha, const Scalar& beta) override {
    cpu::matmul(dst, a, b, alpha, beta);
  }

  // Normalization and losses.
  void softmax(const StridedArray& dst, const StridedArray& src, bool log) override {
    cpu::softmax(dst, src, log);
  }
  void softmax_backward(const StridedArray& gi, const StridedArray& go, const StridedArray& y,
                        bool log) override {
    cpu::softmax_backward(gi, go, y, log);
  }
  void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                  const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                  double eps, bool rms) override {
    cpu::layer_norm(dst, mean, rstd, src, weight, bias, eps, rms);
  }
  void layer_norm_backward(const StridedArray& gi, const StridedArray& gw, const StridedArray& gb,
                           const StridedArray& go, const StridedArray& src,
                           const StridedArray& mean, const StridedArray& rstd,
                           const StridedArray& weight, bool rms) override {
    cpu::layer_norm_backward(gi, gw, gb, go, src, mean, rstd, weight, rms);
  }
  void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                     const StridedArray& logits, const StridedArray& target,
                     const StridedArray& weight, int64_t ignore_index, double smoothing,
                     CheckSite site) override {
    cpu::cross_entropy(loss, row_weight, logits, target, weight, ignore_index, smoothing, site);
  }
  void cross_entropy_backward(const StridedArray& grad, const StridedArray& grad_loss,
                              const StridedArray& logits, const StridedArray& target,
                              const StridedArray& weight, int64_t ignore_index,
                              double smoothing) override {
    cpu::cross_entropy_backward(grad, grad_loss, logits, target, weight, ignore_index, smoothing);
  }

  // NN kernels: convolution and pooling.
  void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    cpu::im2col(dst, src, w);
  }
  void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    cpu::col2im(dst, src, w);
  }
  void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                        const StridedArray& b, const StridedArray& bias,
                        const Window2d& w) override {
    cpu::depthwise_conv2d(op, dst, a, b, bias, w);
  }
  void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
              const StridedArray& src, const PoolParams& p) override {
    cpu::pool2d(op, dst, indices, src, p);
  }
  void pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                       const StridedArray& indices, const PoolParams& p, CheckSite site) override {
    cpu::pool2d_backward(op, grad_src, grad_dst, indices, p, site);
  }

  // Indexing.
  void gather(const StridedArray& dst, const StridedArray& src,
              const std::vector<IndexOperand>& indices) override {
    cpu::gather(dst, src, indices);
  }
  void scatter(const StridedArray& dst, const StridedArray& src,
               const std::vector<IndexOperand>& indices, ScatterReduce reduce) override {
    cpu::scatter(dst, src, indices, reduce);
  }
  void nonzero(const StridedArray& dst, const StridedArray& src) override {
    cpu::nonzero(dst, src);
  }

  // Sorting.
  void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
            const SortParams& params) override {
    cpu::sort(values, indices, src, params);
  }

  // Optimizer steps.
  void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                  const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                  const OptimStepParams& params) override {
    cpu::optim_step(kind, param, grad, buf1, buf2, buf3, params);
  }

  // Linear algebra.
  void cholesky(const StridedArray& a, const StridedArray& info, bool upper) override {
    cpu::cholesky(a, info, upper);
  }
  void lu_factor(const StridedArray& a, const StridedArray& pivots,
                 const StridedArray& info) override {
    cpu::lu_factor(a, pivots, info);
  }
  void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                        bool unit_diagonal) override {
    cpu::triangular_solve(a, b, upper, transpose, unit_diagonal);
  }
  void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                bool transpose) override {
    cpu::lu_solve(lu, pivots, b, transpose);
  }
  void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) override {
    cpu::geqrf(a, tau, info);
  }
  void orgqr(const StridedArray& q, const StridedArray& tau) override { cpu::orgqr(q, tau); }
  void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
            bool upper) override {
    cpu::eigh(a, w, info, vectors, upper);
  }
  void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
           const StridedArray& vh, const StridedArray& info, bool full_matrices) override {
    cpu::svd(a, u, s, vh, info, full_matrices);
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ox::cpu
