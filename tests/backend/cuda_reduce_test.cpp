// The CUDA reductions' and scans' host logic, on the CPU (backend/cuda/reduce.cpp,
// kernels/reduce_common.cuh): the plans cover every element exactly once for many shapes and
// depend on the shape alone, and every (op, dtype) the op layer sends has its kernel in the
// embedded PTX. The kernels themselves run in scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cpu/convert.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/reduce_common.cuh"
#include "backend/cuda/module.h"
#include "backend/cuda/reduce_kernels.h"
#include "backend/cuda_ptx.h"
#include "core/dispatch.h"

namespace {

namespace cuda = ox::cuda::detail;
namespace k = ox::cuda::kernels;

std::vector<int64_t> sizes() {
  return {0,
          1,
          2,
          3,
          7,
          127,
          128,
          129,
          255,
          256,
          257,
          1000,
          4096,
          8191,
          8192,
          8193,
          65535,
          65536,
          100000,
          1 << 20,
          12345678,
          int64_t(1) << 33,
          (int64_t(1) << 40) + 3};
}

// Every reduced index of one output is folded by exactly one (chunk, thread) of the plan.
void expect_block_plan_covers(int64_t n_red, const k::ReducePlan& p) {
  std::vector<int> seen(size_t(n_red), 0);
  for (int64_t c = 0; c < p.nchunks; ++c) {
    const int64_t begin = c * p.chunk;
    const int64_t end = n_red - begin < p.chunk ? n_red : begin + p.chunk;
    for (int t = 0; t < k::kReduceBlock; ++t)
      for (int64_t i = begin + t; i < end; i += k::kReduceBlock) ++seen[size_t(i)];
  }
  for (int64_t i = 0; i < n_red; ++i)
    ASSERT_EQ(seen[size_t(i)], 1) << "index " << i << " of " << n_red;
}

TEST(CudaReducePlan, ChunksCoverTheReducedRangeExactlyOnce) {
  for (const int64_t n_out : sizes()) {
    if (n_out == 0) continue;
    for (const int64_t n_red : sizes()) {
      const k::ReducePlan p = k::plan_reduce(n_out, n_red);
      SCOPED_TRACE(::testing::Message() << "n_out " << n_out << " n_red " << n_red);
      if (!p.per_block) {
        EXPECT_EQ(p.nchunks, 1);
        EXPECT_TRUE(n_red < k::kReducePerThreadBelow || n_out >= k::kReducePerThreadOutputs);
        continue;
      }
      ASSERT_GE(p.nchunks, 1);
      ASSERT_GE(p.chunk, 1);
      // The chunks tile [0, n_red): none empty, none past the end.
      EXPECT_LT((p.nchunks - 1) * p.chunk, n_red);
      EXPECT_GE(p.nchunks * p.chunk, n_red);
      if (p.nchunks > 1) {
        EXPECT_GE(p.chunk, k::kReduceMinChunk);
        EXPECT_LE(n_out * p.nchunks, k::kReduceTargetBlocks + n_out);  // a small scratch
      }
      if (n_red <= 3 * k::kReduceMinChunk + 7) expect_block_plan_covers(n_red, p);
    }
  }
  // Shapes whose plan has several chunks, walked element by element.
  for (const int64_t n_red : {int64_t(16385), int64_t(3 * 8192 + 5), int64_t(100003)}) {
    const k::ReducePlan p = k::plan_reduce(1, n_red);
    EXPECT_GT(p.nchunks, 1) << n_red;
    expect_block_plan_covers(n_red, p);
  }
}

TEST(CudaReducePlan, SmallExtentsAndManyOutputsRunOneThreadPerOutput) {
  EXPECT_FALSE(k::plan_reduce(1, 0).per_block);  // the identity
  EXPECT_FALSE(k::plan_reduce(5, 100).per_block);
  EXPECT_FALSE(k::plan_reduce(int64_t(1) << 20, 1 << 20).per_block);
  EXPECT_TRUE(k::plan_reduce(1, 128).per_block);
  EXPECT_EQ(k::plan_reduce(1, 128).nchunks, 1);
  EXPECT_EQ(k::plan_reduce(10000, 1 << 20).nchunks, 1);  // enough blocks already
}

TEST(CudaScanPlan, ChunksCoverEachRowExactlyOnce) {
  for (const int64_t rows : sizes()) {
    if (rows == 0) continue;
    for (const int64_t n : sizes()) {
      if (n == 0) continue;
      const k::ScanPlan p = k::plan_scan(rows, n);
      SCOPED_TRACE(::testing::Message() << "rows " << rows << " n " << n);
      ASSERT_GE(p.nchunks, 1);
      ASSERT_GE(p.chunk, 1);
      EXPECT_LT((p.nchunks - 1) * p.chunk, n);
      EXPECT_GE(p.nchunks * p.chunk, n);
      if (p.nchunks > 1) {
        EXPECT_GE(p.chunk, k::kScanMinChunk);
        EXPECT_LE(rows * p.nchunks, 2 * k::kScanTargetThreads);
      }
      if (rows >= k::kScanSequentialRows || n <= k::kScanSequentialLength) {
        EXPECT_EQ(p.nchunks, 1);
      }
    }
  }
}

TEST(CudaReduceArgs, FitTheKernelParameterLimit) {
  EXPECT_LE(sizeof(k::ReduceArgs), 4096u);
  EXPECT_LE(sizeof(k::ScanArgs), 4096u);
}

// ---- The order-sensitive combines the kernels use, against the CPU backend ------------------

// argmax/argmin of x as the per-block plan computes it: per chunk, thread t folds elements
// t, t + 256, ... in order, a shared-memory tree combines the threads, the chunks combine in
// order.
template <bool IsMax, class C>
int64_t planned_arg(const std::vector<C>& x, int64_t chunk) {
  struct VI {
    C v;
    int64_t i;
  };
  const auto init = [] {  // the kernels' identities: -inf/+inf, or the integer's range ends
    using L = std::numeric_limits<C>;
    const C v = L::has_infinity ? (IsMax ? -L::infinity() : L::infinity())
                                : (IsMax ? L::lowest() : L::max());
    return VI{v, std::numeric_limits<int64_t>::max()};
  };
  const auto combine = [](VI a, VI b) { return k::arg_first<IsMax>(b.v, b.i, a.v, a.i) ? b : a; };
  const int64_t n = int64_t(x.size());
  VI total = init();
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    std::vector<VI> sh(k::kReduceBlock, init());
    for (int t = 0; t < k::kReduceBlock; ++t)
      for (int64_t i = begin + t; i < end; i += k::kReduceBlock)
        sh[size_t(t)] = combine(sh[size_t(t)], VI{x[size_t(i)], i});
    for (int s = k::kReduceBlock / 2; s > 0; s >>= 1)
      for (int t = 0; t < s; ++t) sh[size_t(t)] = combine(sh[size_t(t)], sh[size_t(t + s)]);
    total = begin == 0 ? sh[0] : combine(total, sh[0]);
  }
  return total.i;
}

TEST(CudaReduceCombine, ArgExtremeIsTheFirstIndexOfTheExtremeOrOfTheFirstNan) {
  std::mt19937 rng(7);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float pool[] = {-1.0f, 0.0f, -0.0f, 2.0f, 2.0f, -inf, inf, 1.5f};
  for (const int64_t n : {int64_t(1), int64_t(5), int64_t(300), int64_t(20000)}) {
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = pool[rng() % 8];
      if (trial % 3 == 1) x[rng() % size_t(n)] = nan;
      if (trial % 3 == 2) x[rng() % size_t(n)] = nan, x[rng() % size_t(n)] = -nan;
      if (trial == 3) std::fill(x.begin(), x.end(), -inf);
      const ox::Tensor t = ox::tensor(x);
      const int64_t chunks[] = {n, 256, 1000, 8192};
      for (const int64_t chunk : chunks) {
        EXPECT_EQ(planned_arg<true>(x, chunk), t.argmax().item<int64_t>()) << n << " " << chunk;
        EXPECT_EQ(planned_arg<false>(x, chunk), t.argmin().item<int64_t>()) << n << " " << chunk;
      }
    }
  }
  std::vector<int8_t> b(3000);
  for (int8_t& v : b) v = int8_t(int(rng() % 5) - 2);
  const ox::Tensor tb = ox::tensor(b);
  EXPECT_EQ(planned_arg<true>(b, 1000), tb.argmax().item<int64_t>());
  EXPECT_EQ(planned_arg<false>(b, 1000), tb.argmin().item<int64_t>());
}

// cummax/cummin as the chunked scan computes it: chunk totals from nothing, exclusive carries
// in chunk order, each chunk rescanned from its carry.
template <bool IsMax>
void expect_chunked_scan_matches(const std::vector<float>& x, int64_t chunk) {
  using R = k::Running<float>;
  const int64_t n = int64_t(x.size());
  std::vector<R> carries;
  R carry{0.0f, -1};
  for (int64_t begin = 0; begin < n; begin += chunk) {
    R total{0.0f, -1};
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i)
      total = k::running_step<IsMax>(total, x[size_t(i)], i);
    carries.push_back(carry);
    carry = k::running_combine<IsMax>(carry, total);
  }
  const ox::Tensor t = ox::tensor(x);
  auto [values, indices] = IsMax ? t.cummax(0) : t.cummin(0);
  const std::vector<float> v = values.to_vector<float>();
  const std::vector<int64_t> ix = indices.to_vector<int64_t>();
  for (int64_t begin = 0, c = 0; begin < n; begin += chunk, ++c) {
    R s = carries[size_t(c)];
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) {
      s = k::running_step<IsMax>(s, x[size_t(i)], i);
      ASSERT_EQ(s.i, ix[size_t(i)]) << "position " << i << " chunk " << chunk;
      ASSERT_TRUE(std::memcmp(&s.v, &v[size_t(i)], sizeof(float)) == 0 ||
                  (s.v != s.v && v[size_t(i)] != v[size_t(i)]))
          << "position " << i << " chunk " << chunk;
    }
  }
}

TEST(CudaScanCombine, ChunkedCummaxAndCumminAreTheSequentialScan) {
  std::mt19937 rng(11);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float pool[] = {-1.0f, 0.0f, -0.0f, 2.0f, 3.0f, -3.0f};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> x(size_t(1 + rng() % 200));
    for (float& v : x) v = pool[rng() % 6];
    if (trial % 2 == 1) x[rng() % x.size()] = nan;
    if (trial % 4 == 3) x[rng() % x.size()] = nan;
    for (const int64_t chunk : {1, 2, 3, 7, 64, 1000}) {
      expect_chunked_scan_matches<true>(x, chunk);
      expect_chunked_scan_matches<false>(x, chunk);
    }
  }
}

bool has_kernel(const cuda::KernelName& k) {
  return oxtest::ptx_defines(oxtest::embedded_ptx(k.family), k.name);
}

const ox::DType kAll[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16, ox::kI64,
                          ox::kI32, ox::kI16, ox::kI8,  ox::kU8,   ox::kBool};
const ox::DType kFloating[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16};

TEST(CudaReduceKernels, EveryOpAndDtypeTheOpLayerSendsHasItsKernels) {
  using ox::ReduceOp;
  int checked = 0;
  for (const ReduceOp op :
       {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax,
        ReduceOp::ArgMin, ReduceOp::All, ReduceOp::Any, ReduceOp::CountNonzero})
    for (const ox::DType dt : kAll)
      for (const cuda::KernelName& k : cuda::reduce_kernel_names(op, dt, 2)) {
        EXPECT_TRUE(has_kernel(k)) << k.family << ": " << k.name;
        ++checked;
      }
  for (const ReduceOp op :
       {ReduceOp::Mean, ReduceOp::Var, ReduceOp::Std, ReduceOp::LogSumExp, ReduceOp::Norm})
    for (const ox::DType dt : kFloating)
      for (const double p : {0.0, 1.0, 2.0, 3.0, 0.5, double(INFINITY), double(-INFINITY)})
        for (const cuda::KernelName& k : cuda::reduce_kernel_names(op, dt, p)) {
          EXPECT_TRUE(has_kernel(k)) << k.family << ": " << k.name;
          ++checked;
        }
  EXPECT_GT(checked, 9 * 10 + 5 * 4);
  // Two passes: the mean, then the deviations; the max, then the sum of exponentials.
  EXPECT_EQ(cuda::reduce_kernel_names(ReduceOp::Var, ox::kF16, 2).size(), 2u);
  EXPECT_EQ(cuda::reduce_kernel_names(ReduceOp::LogSumExp, ox::kF32, 2).at(0).name,
            "ox_reduce_max_f32");
  EXPECT_EQ(cuda::reduce_kernel_names(ReduceOp::Norm, ox::kF64, INFINITY).at(0).name,
            "ox_reduce_norm_inf_f64");
  EXPECT_EQ(cuda::reduce_kernel_names(ReduceOp::Norm, ox::kF64, 3).at(0).name,
            "ox_reduce_norm_p_f64");
  // The check can fail: integer means are not built.
  EXPECT_FALSE(has_kernel(cuda::reduce_kernel_names(ReduceOp::Mean, ox::kI64, 2).at(0)));
}

TEST(CudaScanKernels, EveryOpAndDtypeHasItsKernel) {
  for (const ox::ScanOp op : {ox::ScanOp::Sum, ox::ScanOp::Prod, ox::ScanOp::Max, ox::ScanOp::Min})
    for (const ox::DType dt : kAll)
      for (const cuda::KernelName& k : cuda::scan_kernel_names(op, dt))
        EXPECT_TRUE(has_kernel(k)) << k.family << ": " << k.name;
}

// ---- On a GPU: the kernels against the CPU backend --------------------------------------------

class CudaReduceOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ox::cuda::is_available())
      GTEST_SKIP() << "no usable CUDA device: " << ox::cuda::unavailable_reason();
    cuda::set_device(0);
  }
};

// n elements of dt on the host and on device 0: small integers (with quarters for floats), a
// NaN at every 97th element when `nan`.
struct Buffer {
  ox::DType dt;
  int64_t n;
  std::vector<unsigned char> host;
  CUdeviceptr dev = 0;
  Buffer(ox::DType dtype, int64_t count, uint32_t seed, bool nan = false)
      : dt(dtype), n(count), host(size_t(std::max<int64_t>(count, 1)) * ox::dtype_size(dtype)) {
    std::mt19937 rng(seed);
    ox::dispatch_dtype(dt, [&]<class T>() {
      for (int64_t i = 0; i < n; ++i) {
        double v = double(int(rng() % 9) - 4);
        if (ox::is_floating(dt)) v += 0.25 * double(rng() % 4);
        if (nan && ox::is_floating(dt) && i % 97 == 13) v = NAN;
        reinterpret_cast<T*>(host.data())[i] = ox::cpu::convert<T>(v);
      }
    });
    const cuda::Driver& d = cuda::driver();
    cuda::check(d.cuMemAlloc(&dev, host.size()), "cuMemAlloc");
    cuda::check(d.cuMemcpyHtoDAsync(dev, host.data(), host.size(), nullptr), "cuMemcpyHtoDAsync");
    cuda::check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  }
  ~Buffer() { cuda::driver().cuMemFree(dev); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ox::StridedArray cpu(const ox::Shape& shape, const ox::Strides& strides) {
    return {host.data(), shape, strides, dt, ox::Device(ox::DeviceType::CPU, 0)};
  }
  ox::StridedArray gpu(const ox::Shape& shape, const ox::Strides& strides) const {
    return {reinterpret_cast<void*>(dev), shape, strides, dt, ox::Device(ox::DeviceType::CUDA, 0)};
  }
  // The device's elements as f64 (after a synchronize).
  std::vector<double> device_values() const {
    std::vector<unsigned char> bytes(host.size());
    cuda::check(cuda::driver().cuMemcpyDtoH(bytes.data(), dev, bytes.size()), "cuMemcpyDtoH");
    return as_doubles(bytes);
  }
  std::vector<double> host_values() const { return as_doubles(host); }
  std::vector<double> as_doubles(const std::vector<unsigned char>& bytes) const {
    std::vector<double> out(static_cast<size_t>(n));
    ox::dispatch_dtype(dt, [&]<class T>() {
      for (int64_t i = 0; i < n; ++i)
        out[size_t(i)] = ox::cpu::convert<double>(reinterpret_cast<const T*>(bytes.data())[i]);
    });
    return out;
  }
};

ox::Strides contiguous(const ox::Shape& shape) {
  ox::Strides s = ox::Strides::filled(shape.size(), 0);
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = step;
    step *= shape[d];
  }
  return s;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (tol == 0 || std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
    }
  }
}

struct ReduceCase {
  ox::ReduceOp op;
  double p = 2;
};

// op over src of shape out + red, laid out with the reduced dims outermost when `transposed`.
void check_reduce(ReduceCase c, ox::DType dt, const ox::Shape& out, const ox::Shape& red,
                  bool transposed, bool nan) {
  using ox::ReduceOp;
  ox::Shape shape = out;
  for (const int64_t s : red) shape.push_back(s);
  int64_t n_out = 1, n_red = 1;
  for (int64_t s : out) n_out *= s;
  for (int64_t s : red) n_red *= s;
  ox::Strides strides = contiguous(shape);
  if (transposed) {  // storage [red..., out...]
    const ox::Strides so = contiguous(out), sr = contiguous(red);
    for (size_t d = 0; d < out.size(); ++d) strides[d] = so[d];
    for (size_t d = 0; d < red.size(); ++d) strides[out.size() + d] = sr[d] * n_out;
  }
  const bool arg = c.op == ReduceOp::ArgMax || c.op == ReduceOp::ArgMin;
  const bool logical = c.op == ReduceOp::All || c.op == ReduceOp::Any;
  const bool to_i64 = arg || c.op == ReduceOp::CountNonzero ||
                      ((c.op == ReduceOp::Sum || c.op == ReduceOp::Prod) && !ox::is_floating(dt));
  const ox::DType out_dt = logical ? ox::kBool : to_i64 ? ox::kI64 : dt;
  // Exact: integers, counts, indices, max and min; floating results within a tolerance.
  const bool exact = !ox::is_floating(out_dt) || c.op == ReduceOp::Max || c.op == ReduceOp::Min;
  Buffer src(dt, n_out * n_red, 5, nan);
  Buffer dst_cpu(out_dt, n_out, 1), dst_gpu(out_dt, n_out, 1);
  Buffer val_cpu(dt, n_out, 2), val_gpu(dt, n_out, 2);
  const ox::Strides os = contiguous(out);
  const ox::StridedArray vc = val_cpu.cpu(out, os), vg = val_gpu.gpu(out, os);
  ox::ReduceParams pc{.p = c.p, .correction = 1, .values = arg ? &vc : nullptr};
  ox::ReduceParams pg{.p = c.p, .correction = 1, .values = arg ? &vg : nullptr};
  ox::backend_for(ox::DeviceType::CPU, "test")
      .reduce(c.op, dst_cpu.cpu(out, os), src.cpu(shape, strides), pc);
  ox::Backend& gpu = ox::backend_for(ox::Device(ox::DeviceType::CUDA, 0), "test");
  gpu.reduce(c.op, dst_gpu.gpu(out, os), src.gpu(shape, strides), pg);
  gpu.synchronize(0);
  const double tol = exact ? 0 : dt == ox::kF16 || dt == ox::kBF16 ? 2e-2 : 1e-4;
  const std::string what = "op " + std::to_string(int(c.op)) + " p " + std::to_string(c.p) + " " +
                           std::string(ox::dtype_name(dt)) + " out " + std::to_string(n_out) +
                           " red " + std::to_string(n_red) + (transposed ? " transposed" : "");
  expect_close(dst_gpu.device_values(), dst_cpu.host_values(), tol, what);
  if (arg) expect_close(val_gpu.device_values(), val_cpu.host_values(), 0, what + " values");
}

TEST_F(CudaReduceOnDevice, EveryOpMatchesTheCpuBackendOnEveryPlan) {
  using ox::ReduceOp;
  const std::vector<ReduceCase> floating = {{ReduceOp::Sum},
                                            {ReduceOp::Prod},
                                            {ReduceOp::Mean},
                                            {ReduceOp::Max},
                                            {ReduceOp::Min},
                                            {ReduceOp::ArgMax},
                                            {ReduceOp::ArgMin},
                                            {ReduceOp::All},
                                            {ReduceOp::Any},
                                            {ReduceOp::CountNonzero},
                                            {ReduceOp::Var},
                                            {ReduceOp::Std},
                                            {ReduceOp::LogSumExp},
                                            {ReduceOp::Norm, 0},
                                            {ReduceOp::Norm, 1},
                                            {ReduceOp::Norm, 2},
                                            {ReduceOp::Norm, INFINITY},
                                            {ReduceOp::Norm, -INFINITY},
                                            {ReduceOp::Norm, 3}};
  const std::vector<ReduceCase> integer = {
      {ReduceOp::Sum}, {ReduceOp::Prod},   {ReduceOp::Max},
      {ReduceOp::Min}, {ReduceOp::ArgMax}, {ReduceOp::ArgMin},
      {ReduceOp::All}, {ReduceOp::Any},    {ReduceOp::CountNonzero}};
  struct Shape2 {
    ox::Shape out, red;
  };
  // Per thread; per block, one chunk; per block, several chunks; several reduced dims.
  const std::vector<Shape2> shapes = {{{7}, {5}}, {{3}, {1000}}, {{}, {50000}}, {{4, 3}, {6, 33}}};
  for (const ox::DType dt : {ox::kF32, ox::kF64, ox::kF16, ox::kBF16})
    for (const ReduceCase& c : floating)
      for (const Shape2& s : shapes)
        for (const bool transposed : {false, true}) {
          // A long floating product overflows, and where inf meets 0 depends on the order.
          if (c.op == ReduceOp::Prod && s.red.size() == 1 && s.red[0] > 5) continue;
          check_reduce(c, dt, s.out, s.red, transposed, false);
          check_reduce(c, dt, s.out, s.red, transposed, true);
        }
  for (const ox::DType dt : {ox::kI64, ox::kI32, ox::kI16, ox::kI8, ox::kU8, ox::kBool})
    for (const ReduceCase& c : integer)
      for (const Shape2& s : shapes)
        for (const bool transposed : {false, true})
          check_reduce(c, dt, s.out, s.red, transposed, false);
  // Empty extents: the identities.
  for (const ReduceCase& c :
       {ReduceCase{ReduceOp::Sum}, ReduceCase{ReduceOp::Prod}, ReduceCase{ReduceOp::All},
        ReduceCase{ReduceOp::Any}, ReduceCase{ReduceOp::CountNonzero},
        ReduceCase{ReduceOp::LogSumExp}, ReduceCase{ReduceOp::Norm, 2}})
    check_reduce(c, ox::kF32, {3}, {0}, false, false);
}

void check_scan(ox::ScanOp op, ox::DType dt, int64_t rows, int64_t n, bool transposed, bool nan) {
  const ox::Shape shape{rows, n};
  const ox::Strides strides = transposed ? ox::Strides{1, rows} : ox::Strides{n, 1};
  const bool extreme = op == ox::ScanOp::Max || op == ox::ScanOp::Min;
  const ox::DType out_dt = extreme || ox::is_floating(dt) ? dt : ox::kI64;
  Buffer src(dt, rows * n, 9, nan);
  Buffer dst_cpu(out_dt, rows * n, 1), dst_gpu(out_dt, rows * n, 1);
  Buffer idx_cpu(ox::kI64, rows * n, 1), idx_gpu(ox::kI64, rows * n, 1);
  const ox::Strides c = contiguous(shape);
  const ox::StridedArray ic = idx_cpu.cpu(shape, c), ig = idx_gpu.gpu(shape, c);
  ox::backend_for(ox::DeviceType::CPU, "test")
      .scan(op, dst_cpu.cpu(shape, c), src.cpu(shape, strides), extreme ? &ic : nullptr);
  ox::Backend& gpu = ox::backend_for(ox::Device(ox::DeviceType::CUDA, 0), "test");
  gpu.scan(op, dst_gpu.gpu(shape, c), src.gpu(shape, strides), extreme ? &ig : nullptr);
  gpu.synchronize(0);
  const double tol = extreme || !ox::is_floating(dt)     ? 0
                     : dt == ox::kF16 || dt == ox::kBF16 ? 2e-2
                                                         : 1e-6;
  const std::string what = "scan " + std::to_string(int(op)) + " " +
                           std::string(ox::dtype_name(dt)) + " " + std::to_string(rows) + "x" +
                           std::to_string(n);
  expect_close(dst_gpu.device_values(), dst_cpu.host_values(), tol, what);
  if (extreme) expect_close(idx_gpu.device_values(), idx_cpu.host_values(), 0, what + " indices");
}

TEST_F(CudaReduceOnDevice, ScansMatchTheCpuBackendOnEveryPlan) {
  for (const ox::ScanOp op : {ox::ScanOp::Sum, ox::ScanOp::Max, ox::ScanOp::Min})
    for (const ox::DType dt : {ox::kF32, ox::kF64, ox::kF16, ox::kI32, ox::kI8, ox::kBool})
      for (const bool transposed : {false, true}) {
        check_scan(op, dt, 5, 7, transposed, true);
        check_scan(op, dt, 1, 100000, transposed, op != ox::ScanOp::Sum);  // chunked
        check_scan(op, dt, 3, 5000, transposed, false);
      }
  // Products: short floating rows (a long one overflows, and where inf meets 0 depends on the
  // order); long integer rows, chunked, wrap alike in any order.
  check_scan(ox::ScanOp::Prod, ox::kF64, 4, 20, false, false);
  for (const ox::DType dt : {ox::kI64, ox::kU8}) {
    check_scan(ox::ScanOp::Prod, dt, 4, 20, false, false);
    check_scan(ox::ScanOp::Prod, dt, 2, 3000, true, false);
  }
}

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
