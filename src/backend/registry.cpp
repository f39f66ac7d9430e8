// The backend registry and the process-wide runtime settings.

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/report.h"
#include "oxmera/core/error.h"

namespace ox {

namespace {

// The hardware threads this process may run on: its CPU affinity mask (taskset, cpusets),
// else what the C++ library reports, at least 1.
int hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// More threads than hardware threads only adds contention, and OpenBLAS sizes per-thread
// buffers from the count: under an address-space limit it spun forever retrying them. So the
// count is capped, with a line on stderr saying so (once per distinct request). `source`
// names the request in that line ("set_num_threads(64)", "OMP_NUM_THREADS=64").
void apply_thread_count(int n, const std::string& source) {
  const int cap = hardware_threads();
  if (n > cap) {
    static std::mutex mutex;
    static std::set<int> warned;  // the requests already reported
    const std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(n).second)
      std::fprintf(stderr,
                   "oxmera: %s exceeds the %d hardware thread%s this process may use; using %d\n",
                   source.c_str(), cap, cap == 1 ? "" : "s", cap);
    n = cap;
  }
  omp_set_num_threads(n);
  cpu::set_blas_threads(n);
}

// The op that last asked for a backend on this thread (backend_for), copied so that a name
// built on the fly cannot dangle: an allocation failure inside a primitive names it.
thread_local std::array<char, 48> t_current_op{};

void remember_op(const char* op) {
  if (op == nullptr) op = "";
  const size_t n = std::min(std::strlen(op), t_current_op.size() - 1);
  std::memcpy(t_current_op.data(), op, n);
  t_current_op[n] = '\0';
}

// Runs one primitive, turning an allocation failure inside it into an ox::Error of kind
// OutOfMemory that names the op: kernels size scratch memory from element counts, and every
// library entry point promises ox::Error, never std::bad_alloc. An OutOfMemory error a kernel
// raised itself (with the byte count) gains the op's name in front of the kernel's.
template <class F>
decltype(auto) guarded(const char* primitive, F&& f) {
  // A copy: an op nested inside the primitive would rename the thread's current op.
  const std::array<char, 48> current = t_current_op;
  const char* op = current[0] != '\0' ? current.data() : primitive;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    OX_FAIL(OutOfMemory, op, "out of memory in the ", primitive,
            " kernel (a scratch allocation failed)");
  } catch (const Error& e) {
    const std::string prefix = std::string("[") + op + "]";
    if (e.kind() != ErrorKind::OutOfMemory || std::string_view(e.what()).starts_with(prefix)) throw;
    OX_FAIL(OutOfMemory, op, e.what());
  }
}

// Every registered backend is wrapped in this: each primitive forwards through guarded().
class GuardedBackend final : public Backend {
 public:
  explicit GuardedBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  DeviceType device_type() const override { return inner_->device_type(); }
  BackendInfo info() const override { return inner_->info(); }
  int device_count() const override { return inner_->device_count(); }
  Allocator& allocator(int device_index) override { return inner_->allocator(device_index); }

  void copy(const StridedArray& dst, const StridedArray& src) override {
    guarded("copy", [&] { inner_->copy(dst, src); });
  }
  void fill(const StridedArray& dst, const Scalar& value) override {
    guarded("fill", [&] { inner_->fill(dst, value); });
  }
  void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) override {
    guarded("arange", [&] { inner_->arange(dst, start, step); });
  }
  void linspace(const StridedArray& dst, double start, double end) override {
    guarded("linspace", [&] { inner_->linspace(dst, start, end); });
  }
  void random(const StridedArray& dst, const RandomSpec& spec) override {
    guarded("random", [&] { inner_->random(dst, spec); });
  }
  void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                 uint64_t first_block) override {
    guarded("bernoulli", [&] { inner_->bernoulli(dst, p, seed, first_block); });
  }
  void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) override {
    guarded("randperm", [&] { inner_->randperm(dst, seed, first_block); });
  }
  void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
              const ReduceParams& params) override {
    guarded("reduce", [&] { inner_->reduce(op, dst, src, params); });
  }
  void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
            const StridedArray* indices) override {
    guarded("scan", [&] { inner_->scan(op, dst, src, indices); });
  }
  void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
             const UnaryParams& params) override {
    guarded("unary", [&] { inner_->unary(op, dst, src, params); });
  }
  void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              double alpha) override {
    guarded("binary", [&] { inner_->binary(op, dst, a, b, alpha); });
  }
  void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              const Scalar& alpha, const Scalar& beta) override {
    guarded("matmul", [&] { inner_->matmul(dst, a, b, alpha, beta); });
  }
  void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
             const StridedArray& b) override {
    guarded("where", [&] { inner_->where(dst, cond, a, b); });
  }
  void softmax(const StridedArray& dst, const StridedArray& src, bool log) override {
    guarded("softmax", [&] { inner_->softmax(dst, src, log); });
  }
  void softmax_backward(const StridedArray& grad_in, const StridedArray& grad_out,
                        const StridedArray& y, bool log) override {
    guarded("softmax_backward", [&] { inner_->softmax_backward(grad_in, grad_out, y, log); });
  }
  void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                  const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                  double eps, bool rms) override {
    guarded("layer_norm",
            [&] { inner_->layer_norm(dst, mean, rstd, src, weight, bias, eps, rms); });
  }
  void layer_norm_backward(const StridedArray& grad_in, const StridedArray& grad_weight,
                           const StridedArray& grad_bias, const StridedArray& grad_out,
                           const StridedArray& src, const StridedArray& mean,
                           const StridedArray& rstd, const StridedArray& weight,
                           bool rms) override {
    guarded("layer_norm_backward", [&] {
      inner_->layer_norm_backward(grad_in, grad_weight, grad_bias, grad_out, src, mean, rstd,
                                  weight, rms);
    });
  }
  int64_t cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                        const StridedArray& logits, const StridedArray& target,
                        const StridedArray& weight, int64_t ignore_index,
                        double smoothing) override {
    return guarded("cross_entropy", [&] {
      return inner_->cross_entropy(loss, row_weight, logits, target, weight, ignore_index,
                                   smoothing);
    });
  }
  void cross_entropy_backward(const StridedArray& grad_logits, const StridedArray& grad_loss,
                              const StridedArray& logits, const StridedArray& target,
                              const StridedArray& weight, int64_t ignore_index,
                              double smoothing) override {
    guarded("cross_entropy_backward", [&] {
      inner_->cross_entropy_backward(grad_logits, grad_loss, logits, target, weight, ignore_index,
                                     smoothing);
    });
  }
  void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    guarded("im2col", [&] { inner_->im2col(dst, src, w); });
  }
  void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) override {
    guarded("col2im", [&] { inner_->col2im(dst, src, w); });
  }
  void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                        const StridedArray& b, const StridedArray& bias,
                        const Window2d& w) override {
    guarded("depthwise_conv2d", [&] { inner_->depthwise_conv2d(op, dst, a, b, bias, w); });
  }
  void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
              const StridedArray& src, const PoolParams& p) override {
    guarded("pool2d", [&] { inner_->pool2d(op, dst, indices, src, p); });
  }
  int64_t pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                          const StridedArray& indices, const PoolParams& p) override {
    return guarded("pool2d_backward",
                   [&] { return inner_->pool2d_backward(op, grad_src, grad_dst, indices, p); });
  }
  IndexCheck gather(const StridedArray& dst, const StridedArray& src,
                    const std::vector<IndexOperand>& indices) override {
    return guarded("gather", [&] { return inner_->gather(dst, src, indices); });
  }
  IndexCheck scatter(const StridedArray& dst, const StridedArray& src,
                     const std::vector<IndexOperand>& indices, ScatterReduce reduce) override {
    return guarded("scatter", [&] { return inner_->scatter(dst, src, indices, reduce); });
  }
  void nonzero(const StridedArray& dst, const StridedArray& src) override {
    guarded("nonzero", [&] { inner_->nonzero(dst, src); });
  }
  void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
            const SortParams& params) override {
    guarded("sort", [&] { inner_->sort(values, indices, src, params); });
  }
  void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                  const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                  const OptimStepParams& params) override {
    guarded("optim_step", [&] { inner_->optim_step(kind, param, grad, buf1, buf2, buf3, params); });
  }
  void cholesky(const StridedArray& a, const StridedArray& info, bool upper) override {
    guarded("cholesky", [&] { inner_->cholesky(a, info, upper); });
  }
  void lu_factor(const StridedArray& a, const StridedArray& pivots,
                 const StridedArray& info) override {
    guarded("lu_factor", [&] { inner_->lu_factor(a, pivots, info); });
  }
  void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                        bool unit_diagonal) override {
    guarded("triangular_solve",
            [&] { inner_->triangular_solve(a, b, upper, transpose, unit_diagonal); });
  }
  void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                bool transpose) override {
    guarded("lu_solve", [&] { inner_->lu_solve(lu, pivots, b, transpose); });
  }
  void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) override {
    guarded("geqrf", [&] { inner_->geqrf(a, tau, info); });
  }
  void orgqr(const StridedArray& q, const StridedArray& tau) override {
    guarded("orgqr", [&] { inner_->orgqr(q, tau); });
  }
  void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
            bool upper) override {
    guarded("eigh", [&] { inner_->eigh(a, w, info, vectors, upper); });
  }
  void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
           const StridedArray& vh, const StridedArray& info, bool full_matrices) override {
    guarded("svd", [&] { inner_->svd(a, u, s, vh, info, full_matrices); });
  }

 private:
  std::unique_ptr<Backend> inner_;
};

struct Registry {
  std::mutex mutex;
  std::array<std::unique_ptr<Backend>, kNumDeviceTypes> backends;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // never destroyed: tensors in static storage may outlive it
    reg->backends[static_cast<int>(DeviceType::CPU)] =
        std::make_unique<GuardedBackend>(cpu::make_backend());
    // OMP_NUM_THREADS may ask for more threads than the hardware has: capped as a request is.
    if (const int n = omp_get_max_threads(); n > hardware_threads())
      apply_thread_count(n, "OMP_NUM_THREADS=" + std::to_string(n));
    return reg;
  }();
  return *r;
}

}  // namespace

Backend* find_backend(DeviceType type) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.backends[static_cast<int>(type)].get();
}

void register_backend(std::unique_ptr<Backend> backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto type = static_cast<int>(backend->device_type());
  r.backends[type] = std::make_unique<GuardedBackend>(std::move(backend));
}

Backend& backend_for(DeviceType type, const char* op) {
  remember_op(op);
  Backend* b = find_backend(type);
  OX_CHECK(b, Device, op, "no ", device_type_name(type),
           " backend in this build (`oxmera doctor` says which backends exist and why)");
  return *b;
}

Backend& backend_for(Device device, const char* op) {
  Backend& b = backend_for(device.type(), op);
  OX_CHECK(device.index() >= 0 && device.index() < b.device_count(), Device, op, "device ", device,
           " does not exist (", b.device_count(), " ", device_type_name(device.type()),
           " device(s) present)");
  return b;
}

std::vector<BackendInfo> backend_infos() {
  std::vector<BackendInfo> infos;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const auto type = static_cast<DeviceType>(t);
    if (Backend* b = find_backend(type)) {
      infos.push_back(b->info());
    } else if (type == DeviceType::CUDA) {
      infos.push_back(cuda::detail::runtime_report());  // the runtime, until the backend exists
    } else {
      BackendInfo missing;
      missing.name = std::string(device_type_name(type));
      missing.reason = "not built into this library";
      infos.push_back(missing);
    }
  }
  return infos;
}

void set_num_threads(int n) {
  OX_CHECK(n >= 1, Value, "set_num_threads", "thread count must be at least 1, got ", n);
  apply_thread_count(n, "set_num_threads(" + std::to_string(n) + ")");
}

int get_num_threads() {
  registry();  // applies the cap to a count that came from OMP_NUM_THREADS
  return omp_get_max_threads();
}

void empty_cache() {
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (Backend* b = find_backend(static_cast<DeviceType>(t)))
      for (int d = 0; d < b->device_count(); ++d) b->allocator(d).empty_cache();
}

}  // namespace ox
