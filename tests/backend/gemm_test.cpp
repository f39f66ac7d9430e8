// The packed GEMM behind f32/f64 matmul (simd/gemm.cpp and the blocking in
// backend/cpu/matmul.cpp) at every SIMD target this CPU runs: products of every edge-tile shape,
// depths over one depth block, transposed and strided operands and outputs, alpha and beta,
// each against an f64 loop written here. Across targets with fused multiply-add (AVX-512, AVX2)
// the products must be bitwise equal: an element's sum does not depend on the tile shape.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "ops/matmul_util.h"
#include "tensor/tensor_impl.h"
#include "test_util.h"

namespace {

using mmtest::expect_close;
using mmtest::same_bits;
using mmtest::str;
using ox::DType;
using ox::Tensor;
using oxtest::AtSimdTarget;
using oxtest::ShapeV;

// alpha * a @ b + beta * c for 2-D tensors, in f64 from their logical values.
std::vector<double> ref_addmm(const Tensor& c, const Tensor& a, const Tensor& b, double beta,
                              double alpha) {
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>(),
                            vc = c.to_vector<double>();
  std::vector<double> out(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += va[size_t(i * K + k)] * vb[size_t(k * N + j)];
      out[size_t(i * N + j)] = alpha * s + (beta == 0 ? 0.0 : beta * vc[size_t(i * N + j)]);
    }
  return out;
}

// M x N x K: single elements, one row (x @ W), one column (W @ x), every edge-tile size against
// 6- and 12-row tiles, and depths past the 1024-deep block (two and three blocks).
struct Dims {
  int64_t m, n, k;
};
const Dims kDims[] = {{1, 1, 1},   {1, 300, 70},  {300, 1, 70},   {13, 37, 5},
                      {29, 65, 1}, {200, 70, 64}, {25, 33, 1030}, {7, 50, 2100}};

// The operand as a contiguous tensor, a column-major view or a view with gapped rows.
enum class Layout { Contiguous, Transposed, Gapped };
Tensor laid_out(int64_t rows, int64_t cols, DType dt, Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return ox::randn({rows, cols}).to(dt);
    case Layout::Transposed:
      return ox::randn({cols, rows}).to(dt).t();
    case Layout::Gapped:
      return ox::randn({rows, cols + 5}).to(dt).narrow(1, 2, cols);
  }
  return {};
}

class GemmTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ox::manual_seed(77); }
  AtSimdTarget at_{GetParam()};
  const ox::DeviceGuard on_cpu_{ox::Device::cpu()};  // the CPU's GEMM, whatever the test device
};

TEST_P(GemmTarget, ProductsMatchF64InEveryLayout) {
  for (DType dt : {DType::F32, DType::F64})
    for (const Dims& d : kDims)
      for (Layout la : {Layout::Contiguous, Layout::Transposed, Layout::Gapped})
        for (Layout lb : {Layout::Contiguous, Layout::Transposed, Layout::Gapped}) {
          const Tensor a = laid_out(d.m, d.k, dt, la), b = laid_out(d.k, d.n, dt, lb);
          const std::string what = str({d.m, d.n, d.k}) + " " + std::string(ox::dtype_name(dt)) +
                                   " layouts " + std::to_string(int(la)) + std::to_string(int(lb));
          expect_close(ox::matmul(a, b), {d.m, d.n}, ref_addmm(ox::zeros({d.m, d.n}), a, b, 0, 1),
                       d.k, what);
        }
}

TEST_P(GemmTarget, AlphaBetaAndOutputLayouts) {
  ox::Backend& cpu = ox::backend_for(ox::Device::cpu(), "test");
  for (DType dt : {DType::F32, DType::F64})
    for (const Dims& d : kDims) {
      const Tensor a = laid_out(d.m, d.k, dt, Layout::Contiguous);
      // B transposed too: a few rows against it (x @ W^T) take their own kernel.
      for (Layout lb : {Layout::Contiguous, Layout::Transposed}) {
        const Tensor b = laid_out(d.k, d.n, dt, lb);
        // The primitive writes over C in place: row-major, column-major (the kernel computes
        // C^T = B^T A^T) and with gapped rows.
        for (Layout lc : {Layout::Contiguous, Layout::Transposed, Layout::Gapped})
          for (const auto& [beta, alpha] : {std::pair{0.5, -2.0}, {0.0, 3.0}, {1.0, 1.0}}) {
            Tensor c = laid_out(d.m, d.n, dt, lc);
            const std::vector<double> want = ref_addmm(c, a, b, beta, alpha);
            cpu.matmul(c.impl()->array(), a.impl()->array(), b.impl()->array(), alpha, beta);
            expect_close(c, {d.m, d.n}, want, d.k + 1,
                         str({d.m, d.n, d.k}) + " " + std::string(ox::dtype_name(dt)) + " layout " +
                             std::to_string(int(lc)) + " B layout " + std::to_string(int(lb)) +
                             " beta " + std::to_string(beta));
          }
      }
    }
}

std::vector<std::string> targets_here() { return ox::simd_targets(); }

INSTANTIATE_TEST_SUITE_P(Targets, GemmTarget, ::testing::ValuesIn(targets_here()),
                         [](const auto& info) { return info.param; });

TEST(GemmTargets, FusedMultiplyAddTargetsAgreeBitwise) {
  OXTEST_SKIP_ON_TEST_DEVICE("compares the CPU's SIMD targets through host memory");
  std::vector<std::string> fma;
  for (const std::string& t : ox::simd_targets())
    if (t.rfind("AVX", 0) == 0) fma.push_back(t);
  if (fma.size() < 2) GTEST_SKIP() << "fewer than two FMA targets on this CPU";
  ox::manual_seed(5);
  for (DType dt : {DType::F32, DType::F64})
    for (const Dims& d : kDims) {
      const Tensor a = ox::randn({d.m, d.k}).to(dt), b = ox::randn({d.k, d.n}).to(dt);
      std::vector<Tensor> products;
      for (const std::string& t : fma) {
        AtSimdTarget at(t);
        products.push_back(ox::matmul(a, b));
      }
      for (size_t i = 1; i < products.size(); ++i)
        EXPECT_TRUE(same_bits(products[0], products[i]))
            << str({d.m, d.n, d.k}) << " " << ox::dtype_name(dt) << ": " << fma[0] << " vs "
            << fma[i];
    }
}

}  // namespace
