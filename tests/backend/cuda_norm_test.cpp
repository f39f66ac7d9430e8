// The CUDA row kernels' and optimizer step's host logic, on the CPU (backend/cuda/norm_plan.h,
// optim_plan.h, kernels/optim_math.cuh): launch shapes chosen from the row length alone, the
// optimizer's per-element arithmetic bit for bit against the CPU backend, and every kernel the
// launchers look up present in the embedded PTX. The kernels themselves run in
// scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/optim_math.cuh"
#include "backend/cuda/norm_plan.h"
#include "backend/cuda/optim_plan.h"
#include "backend/cuda_ptx.h"

namespace {

namespace cuda = ox::cuda::detail;
using ox::DType;
using ox::OptimStepKind;
using ox::OptimStepParams;
using ox::StridedArray;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudaNorm, RowThreadsArePowersOfTwoUpTo256FromTheRowLengthOnly) {
  unsigned last = 0;
  for (int64_t n :
       {int64_t(0), int64_t(1), int64_t(31), int64_t(32), int64_t(64), int64_t(65), int64_t(1000),
        int64_t(1024), int64_t(1025), int64_t(1) << 20, int64_t(1) << 40}) {
    const unsigned t = cuda::row_threads(n);
    EXPECT_GE(t, 32u) << n;
    EXPECT_LE(t, 256u) << n;          // kernels/norm.cu's shared arrays hold 256
    EXPECT_EQ(t & (t - 1), 0u) << n;  // the reduction tree halves blockDim.x
    EXPECT_GE(t, last) << n;
    last = t;
    // The grid's rows never change the block: the same tree for a row of n in any array.
    for (int64_t rows : {int64_t(1), int64_t(7), int64_t(100000)})
      EXPECT_EQ(cuda::row_grid(rows, n).threads, t);
  }
  EXPECT_EQ(cuda::row_threads(10), 32u);
  EXPECT_EQ(cuda::row_threads(4096), 256u);
}

TEST(CudaNorm, RowGridCoversRowsUpToTheCap) {
  EXPECT_EQ(cuda::row_grid(0, 8).blocks, 0u);  // launch() skips an empty grid
  EXPECT_EQ(cuda::row_grid(1, 8).blocks, 1u);
  EXPECT_EQ(cuda::row_grid(65535, 8).blocks, 65535u);
  EXPECT_EQ(cuda::row_grid(int64_t(1) << 33, 8).blocks, 65535u);  // the kernels loop over rows
  EXPECT_EQ(cuda::row_grid(5, 8).blocks_y, 1u);
  EXPECT_EQ(cuda::row_grid(5, 8).shared_bytes, 0u);
}

TEST(CudaNorm, RowCountAndPartialBlocksFollowTheCpuBackend) {
  const auto rows = [](ox::Shape shape, int64_t expected_n) {
    StridedArray a{nullptr, shape, {}, DType::F32, ox::Device::cpu()};
    int64_t n = -1;
    const int64_t r = cuda::row_count(a, &n);
    EXPECT_EQ(n, expected_n);
    return r;
  };
  EXPECT_EQ(rows({3, 4, 5}, 5), 12);
  EXPECT_EQ(rows({}, 1), 1);
  EXPECT_EQ(rows({7}, 7), 1);
  EXPECT_EQ(rows({3, 0}, 0), 0);
  EXPECT_EQ(rows({0, 4}, 4), 0);
  EXPECT_EQ(cuda::kNormRowBlock, 64);  // cpu/softmax_norm.cpp's kRowBlock: the same partials
  EXPECT_EQ(cuda::row_blocks(0), 0);
  EXPECT_EQ(cuda::row_blocks(1), 1);
  EXPECT_EQ(cuda::row_blocks(64), 1);
  EXPECT_EQ(cuda::row_blocks(65), 2);
}

TEST(CudaNorm, EveryKernelTheLaunchersLookUpIsInThePtx) {
  const std::string norm = oxtest::embedded_ptx("norm");
  for (const char* row : cuda::kNormKernelNames)
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      const std::string name =
          std::string("ox_norm_") + row + "_" + std::string(ox::dtype_name(dt));
      EXPECT_TRUE(contains(norm, ".entry " + name + "(")) << name;
    }
  const std::string optim = oxtest::embedded_ptx("optim");
  for (const char* name :
       {"ox_optim_adam_f32", "ox_optim_adam_f64", "ox_optim_sgd_f32", "ox_optim_sgd_f64"})
    EXPECT_TRUE(contains(optim, std::string(".entry ") + name + "(")) << name;
}

// ---- The optimizer's arithmetic against the CPU backend, bit for bit -------------------------

template <class T>
std::vector<T> random_values(std::mt19937& rng, size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = T(u(rng));
  return v;
}

template <class T>
StridedArray array_of(std::vector<T>& v) {
  const DType dt = std::is_same_v<T, float> ? DType::F32 : DType::F64;
  return {v.data(), {int64_t(v.size())}, {1}, dt, ox::Device::cpu()};
}

template <class T>
void expect_same_bits(const std::vector<T>& a, const std::vector<T>& b, const char* what,
                      int config) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(T)), 0)
        << what << " config " << config << " element " << i << ": cpu " << a[i] << ", cuda math "
        << b[i];
}

template <class T>
void check_step(OptimStepKind kind, const OptimStepParams& p, int config) {
  std::mt19937 rng(1234 + config);
  const size_t n = 257;
  std::vector<T> param = random_values<T>(rng, n, -3, 3);
  std::vector<T> grad = random_values<T>(rng, n, -1, 1);
  std::vector<T> b1 = random_values<T>(rng, n, -0.5, 0.5);
  std::vector<T> b2 = random_values<T>(rng, n, 0, 0.25);
  std::vector<T> b3 = random_values<T>(rng, n, 0, 0.25);
  // Edge values: zeros, an infinity, a NaN in the running max (nan_max's rule).
  grad[0] = 0;
  param[1] = 0;
  grad[2] = std::numeric_limits<T>::infinity();
  b3[3] = std::numeric_limits<T>::quiet_NaN();
  b2[4] = 0;
  b2[5] = T(1e30);

  std::vector<T> cpu_param = param, cpu_b1 = b1, cpu_b2 = b2, cpu_b3 = b3;
  const bool adam = kind == OptimStepKind::Adam;
  std::vector<T> none;
  StridedArray null_array = array_of(none);
  null_array.data = nullptr;
  ox::cpu::optim_step(kind, array_of(cpu_param), array_of(grad), array_of(cpu_b1),
                      adam ? array_of(cpu_b2) : null_array,
                      adam && p.amsgrad ? array_of(cpu_b3) : null_array, p);

  const ox::cuda::kernels::OptimScalars<T> s = cuda::optim_scalars<T>(kind, p);
  for (int64_t i = 0; i < int64_t(n); ++i) {
    if (adam)
      ox::cuda::kernels::adam_element<T>(param.data(), grad.data(), b1.data(), b2.data(),
                                         p.amsgrad ? b3.data() : nullptr, i, s);
    else
      ox::cuda::kernels::sgd_element<T>(param.data(), grad.data(),
                                        p.momentum != 0 ? b1.data() : nullptr, i, s);
  }
  expect_same_bits(cpu_param, param, "param", config);
  if (adam || p.momentum != 0) expect_same_bits(cpu_b1, b1, "buf1", config);
  if (adam) expect_same_bits(cpu_b2, b2, "buf2", config);
  if (adam && p.amsgrad) expect_same_bits(cpu_b3, b3, "buf3", config);
}

std::vector<OptimStepParams> adam_configs() {
  std::vector<OptimStepParams> out;
  OptimStepParams p;
  p.update_scale = -1e-3 / 0.1;
  p.lerp_weight = 0.1;
  p.beta2 = 0.999;
  p.one_minus_beta2 = 1 - 0.999;
  p.bias_correction2_sqrt = std::sqrt(1 - 0.999);
  p.eps = 1e-8;
  out.push_back(p);
  OptimStepParams q = p;
  q.weight_decay = 0.01;  // coupled (Adam)
  q.maximize = true;
  out.push_back(q);
  q = p;
  q.decoupled = true;  // AdamW
  q.weight_decay = 0.01;
  q.param_scale = 1 - 1e-3 * 0.01;
  q.amsgrad = true;
  out.push_back(q);
  q = p;
  q.lerp_weight = 0.7;  // the other side of the two-sided lerp
  q.amsgrad = true;
  q.bias_correction2_sqrt = 0.3;
  out.push_back(q);
  return out;
}

std::vector<OptimStepParams> sgd_configs() {
  std::vector<OptimStepParams> out;
  OptimStepParams p;
  p.update_scale = -0.1;
  out.push_back(p);  // plain
  OptimStepParams q = p;
  q.weight_decay = 1e-4;
  q.momentum = 0.9;
  q.one_minus_dampening = 1;
  q.init_buffer = true;
  out.push_back(q);
  q.init_buffer = false;
  q.one_minus_dampening = 0.75;
  out.push_back(q);
  q.nesterov = true;
  q.one_minus_dampening = 1;
  q.maximize = true;
  out.push_back(q);
  return out;
}

TEST(CudaOptim, AdamElementMatchesTheCpuBackendBitForBit) {
  int config = 0;
  for (const OptimStepParams& p : adam_configs()) {
    check_step<float>(OptimStepKind::Adam, p, config);
    check_step<double>(OptimStepKind::Adam, p, config);
    ++config;
  }
}

TEST(CudaOptim, SgdElementMatchesTheCpuBackendBitForBit) {
  int config = 0;
  for (const OptimStepParams& p : sgd_configs()) {
    check_step<float>(OptimStepKind::Sgd, p, config);
    check_step<double>(OptimStepKind::Sgd, p, config);
    ++config;
  }
}

TEST(CudaOptim, ScalarsAreCastToTheParameterDtypeAsTheCpuCasts) {
  OptimStepParams p;
  p.lerp_weight = 0.1;  // lerp_rest: 1 - 0.1 in f64, then cast
  p.weight_decay = 0.01;
  const auto s = cuda::optim_scalars<float>(OptimStepKind::Adam, p);
  EXPECT_EQ(s.lerp_rest, float(1.0 - 0.1));
  EXPECT_EQ(s.lerp_weight, float(0.1));
  EXPECT_EQ(s.coupled_decay, 1);
  EXPECT_EQ(s.lerp_low, 1);
  p.decoupled = true;
  EXPECT_EQ(cuda::optim_scalars<float>(OptimStepKind::Adam, p).coupled_decay, 0);
  // Sgd decays whenever weight_decay is nonzero; `decoupled` is Adam's alone.
  EXPECT_EQ(cuda::optim_scalars<double>(OptimStepKind::Sgd, p).coupled_decay, 1);
  EXPECT_EQ(cuda::optim_scalars<double>(OptimStepKind::Sgd, p).use_momentum, 0);
}

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
