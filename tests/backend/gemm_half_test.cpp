// The packed GEMM on 16-bit floats (simd/gemm.cpp's widening packers, backend/cpu/matmul.cpp's
// 16-bit blocking): the packers at every SIMD target, bitwise against the f32 packers run on
// copies widened here with the scalar conversions of oxmera/core/half.h; and f16/bf16 products
// in every layout, against f64 loops written here, bitwise equal to the f32 GEMM on the widened
// operands (so bitwise what converting both operands first gives), and bitwise equal at one and
// two threads.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/simd/simd.h"
#include "ops/matmul_util.h"
#include "tensor/tensor_impl.h"
#include "test_util.h"

namespace {

using mmtest::at_1_and_2_threads;
using mmtest::expect_close;
using mmtest::Lay;
using mmtest::same_bits;
using mmtest::str;
using ox::DType;
using ox::Tensor;
using oxtest::AtSimdTarget;
using oxtest::ShapeV;

// ---- The packers --------------------------------------------------------------------------

// 16-bit patterns: every few elements an edge (zeros, subnormals, the largest finite values,
// infinities, quiet and signalling NaNs of both signs), random bits between them.
template <class H>
std::vector<H> edge_and_random_bits(int64_t n, uint64_t salt) {
  const uint16_t half_edges[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff,
                                 0x7c00, 0xfc00, 0x7e00, 0xfd01, 0x7c01, 0x3c00, 0x3555};
  const uint16_t bf16_edges[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f,
                                 0x7f80, 0xff80, 0x7fc0, 0xffa1, 0x7f81, 0x3f80, 0x3eab};
  const uint16_t* edges = std::is_same_v<H, ox::Half> ? half_edges : bf16_edges;
  std::vector<H> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)].bits =
        i % 3 == 0 ? edges[(i / 3) % 14] : uint16_t(oxtest::integer_at(i, salt, 0, 65535));
  return out;
}

float widened(ox::Half h) { return ox::detail::half_bits_to_float(h.bits); }
float widened(ox::BFloat16 b) { return ox::detail::bfloat16_bits_to_float(b.bits); }

// Whether the packed panels match: bitwise, except that a NaN need only be a NaN where the
// scalar widening gives one (F16C may quiet a signalling f16 NaN).
void expect_same_panels(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i])
                          ? std::isnan(got[i]) && std::signbit(got[i]) == std::signbit(want[i])
                          : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]);
    if (!same && ++bad <= 5)
      ADD_FAILURE() << what << ": packed element " << i << " is " << std::hex
                    << std::bit_cast<uint32_t>(got[i]) << ", expected "
                    << std::bit_cast<uint32_t>(want[i]);
  }
  EXPECT_EQ(bad, 0) << what;
}

// A source matrix rows x cols read with (rs, cs) element strides.
struct Strided {
  int64_t rs, cs;
  const char* name;
};
std::vector<Strided> layouts(int64_t rows, int64_t cols) {
  return {{cols, 1, "row-major"},
          {1, rows, "column-major"},
          {cols + 3, 1, "gapped rows"},
          {1, rows + 5, "gapped columns"},
          {2 * cols + 1, 2, "both strided"}};
}

template <class H>
void check_packers(const std::string& target) {
  const int64_t mr = ox::cpu::simd::gemm_tile(static_cast<const float*>(nullptr)).mr;
  const int64_t nr = ox::cpu::simd::gemm_tile(static_cast<const float*>(nullptr)).nr;
  const auto round_up = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  for (int64_t rows : {1, 5, 6, 7, 12, 13, 17, 29, 33})
    for (int64_t cols : {1, 3, 4, 8, 63, 64, 65, 130})
      for (const Strided& l : layouts(rows, cols)) {
        const int64_t extent = (rows - 1) * l.rs + (cols - 1) * l.cs + 1;
        const std::vector<H> src = edge_and_random_bits<H>(extent, uint64_t(rows * 1000 + cols));
        std::vector<float> wide(src.size());
        for (size_t i = 0; i < src.size(); ++i) wide[i] = widened(src[i]);
        const std::string what =
            target + " " + std::to_string(rows) + "x" + std::to_string(cols) + " " + l.name;
        // As A: rows x depth cols. As B: depth rows x cols columns.
        std::vector<float> got(size_t(round_up(rows, mr) * cols), -1.f), want(got.size(), -2.f);
        ox::cpu::simd::gemm_pack_a(src.data(), l.rs, l.cs, rows, cols, got.data());
        ox::cpu::simd::gemm_pack_a(wide.data(), l.rs, l.cs, rows, cols, want.data());
        expect_same_panels(got, want, "pack_a " + what);
        got.assign(size_t(rows * round_up(cols, nr)), -1.f);
        want.assign(got.size(), -2.f);
        ox::cpu::simd::gemm_pack_b(src.data(), l.rs, l.cs, rows, cols, got.data());
        ox::cpu::simd::gemm_pack_b(wide.data(), l.rs, l.cs, rows, cols, want.data());
        expect_same_panels(got, want, "pack_b " + what);
      }
}

class GemmHalfTarget : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ox::manual_seed(91); }
  AtSimdTarget at_{GetParam()};
  const ox::DeviceGuard on_cpu_{ox::Device::cpu()};  // the CPU's GEMM, whatever the test device
};

TEST_P(GemmHalfTarget, PackersWidenBitwiseInEveryLayout) {
  check_packers<ox::Half>(GetParam() + " f16");
  check_packers<ox::BFloat16>(GetParam() + " bf16");
}

// ---- Products -----------------------------------------------------------------------------

// alpha * a @ b + beta * c over a batch of 3-D tensors [B, M, K] @ [B, K, N] (logical values,
// so any layout or broadcast of the operands), in f64.
std::vector<double> ref_baddbmm(const Tensor& c, const Tensor& a, const Tensor& b, double beta,
                                double alpha) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  const std::vector<double> vc = beta == 0 ? std::vector<double>() : c.to_vector<double>();
  std::vector<double> out(size_t(B * M * N));
  for (int64_t t = 0; t < B; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += va[size_t((t * M + i) * K + k)] * vb[size_t((t * K + k) * N + j)];
        const size_t o = size_t((t * M + i) * N + j);
        out[o] = alpha * s + (beta == 0 ? 0.0 : beta * vc[o]);
      }
  return out;
}

std::vector<double> ref_matmul(const Tensor& a, const Tensor& b) {
  return ref_baddbmm({}, a.unsqueeze(0), b.unsqueeze(0), 0, 1);
}

// The f32 GEMM on exactly widened copies, narrowed once: what converting first computes.
Tensor via_f32(const Tensor& a, const Tensor& b) {
  return ox::matmul(a.to(DType::F32), b.to(DType::F32)).to(a.dtype());
}

struct Dims {
  int64_t m, n, k;
};
// One element, one row (x @ W), one column, N below one tile (4 to 32 columns), every
// edge-tile size, and K past the 1024-deep block (two and three blocks).
const Dims kDims[] = {{1, 1, 1},   {1, 300, 70},  {300, 1, 70},   {13, 37, 5},  {29, 3, 64},
                      {64, 9, 33}, {200, 70, 64}, {25, 33, 1030}, {7, 50, 2100}};
const DType kHalfTypes[] = {DType::F16, DType::BF16};
const Lay kOperandLayouts[] = {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Flipped,
                               Lay::Expanded};

TEST_P(GemmHalfTarget, ProductsMatchF64AndTheF32GemmBitwise) {
  for (DType dt : kHalfTypes)
    for (const Dims& d : kDims)
      for (Lay la : kOperandLayouts)
        for (Lay lb : kOperandLayouts) {
          // Past one depth block, one operand contiguous is enough (the f64 loops are slow).
          if (d.k > 1024 && la != Lay::Contig && lb != Lay::Contig) continue;
          const Tensor a = mmtest::laid_out({d.m, d.k}, dt, la),
                       b = mmtest::laid_out({d.k, d.n}, dt, lb);
          const std::string what = GetParam() + " " + str({d.m, d.n, d.k}) + " " +
                                   std::string(ox::dtype_name(dt)) + " " + mmtest::lay_name(la) +
                                   " @ " + mmtest::lay_name(lb);
          const Tensor got = ox::matmul(a, b);
          expect_close(got, {d.m, d.n}, ref_matmul(a, b), d.k, what);
          EXPECT_TRUE(same_bits(got, via_f32(a, b))) << what;
        }
}

TEST_P(GemmHalfTarget, OutputLayoutsAlphaAndBeta) {
  // The primitive writes over C in place: row-major, column-major (computed as C^T = B^T A^T),
  // gapped rows, and negative strides in both dims (narrowed through a strided copy).
  ox::Backend& cpu = ox::backend_for(ox::Device::cpu(), "test");
  for (DType dt : kHalfTypes)
    for (const Dims& d : kDims) {
      const Tensor a = mmtest::input({d.m, d.k}, dt), b = mmtest::input({d.k, d.n}, dt);
      for (Lay lc : {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Flipped})
        for (const auto& [beta, alpha] : {std::pair{0.5, -2.0}, {0.0, 3.0}, {1.0, 1.0}}) {
          Tensor c = mmtest::laid_out({d.m, d.n}, dt, lc);
          const std::vector<double> want =
              ref_baddbmm(c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), beta, alpha);
          Tensor c32 = c.to(DType::F32);
          cpu.matmul(c32.impl()->array(), a.to(DType::F32).impl()->array(),
                     b.to(DType::F32).impl()->array(), alpha, beta);
          cpu.matmul(c.impl()->array(), a.impl()->array(), b.impl()->array(), alpha, beta);
          const std::string what = GetParam() + " " + str({d.m, d.n, d.k}) + " " +
                                   std::string(ox::dtype_name(dt)) + " C " + mmtest::lay_name(lc) +
                                   " beta " + std::to_string(beta);
          expect_close(c, {d.m, d.n}, want, d.k + 1, what);
          EXPECT_TRUE(same_bits(c, c32.to(dt))) << what;
        }
    }
}

std::vector<std::string> targets_here() { return ox::simd_targets(); }

INSTANTIATE_TEST_SUITE_P(Targets, GemmHalfTarget, ::testing::ValuesIn(targets_here()),
                         [](const auto& info) { return info.param; });

class GemmHalf : public ::testing::Test {
 protected:
  void SetUp() override { ox::manual_seed(17); }
  const ox::DeviceGuard on_cpu_{ox::Device::cpu()};  // the CPU's GEMM, whatever the test device
};

TEST_F(GemmHalf, BatchesBroadcastAndFolded) {
  struct Case {
    ShapeV a, b;
    Lay la, lb;
  };
  // A weight shared by the batch (folded into one [B*M, K] product), two batched operands,
  // broadcast batch dims (stride 0), a batch of one-row products, and K over one block.
  const Case cases[] = {
      {{3, 20, 40}, {40, 30}, Lay::Contig, Lay::Contig},
      {{3, 20, 40}, {40, 30}, Lay::Contig, Lay::Transposed},
      {{4, 17, 33}, {4, 33, 9}, Lay::Contig, Lay::Contig},
      {{4, 17, 33}, {4, 33, 9}, Lay::BatchExpanded, Lay::Transposed},
      {{4, 17, 33}, {4, 33, 9}, Lay::Transposed, Lay::BatchExpanded},
      {{5, 1, 64}, {5, 64, 70}, Lay::Narrowed, Lay::Flipped},
      {{2, 9, 1100}, {2, 1100, 21}, Lay::Contig, Lay::BatchExpanded},
  };
  for (DType dt : kHalfTypes)
    for (const Case& c : cases) {
      const Tensor a = mmtest::laid_out(c.a, dt, c.la), b = mmtest::laid_out(c.b, dt, c.lb);
      const int64_t B = a.size(0), K = a.size(2);
      const Tensor b3 = b.dim() == 2 ? b.unsqueeze(0).expand({B, b.size(0), b.size(1)}) : b;
      const std::string what = str(c.a) + " @ " + str(c.b) + " " + std::string(ox::dtype_name(dt)) +
                               " " + mmtest::lay_name(c.la) + " @ " + mmtest::lay_name(c.lb);
      const Tensor got = ox::matmul(a, b);
      expect_close(got, {B, a.size(1), b3.size(2)}, ref_baddbmm({}, a, b3, 0, 1), K, what);
      EXPECT_TRUE(same_bits(got, via_f32(a, b))) << what;
    }
  // Broadcasting batch dims of different ranks: [2, 1, M, K] @ [3, K, N].
  for (DType dt : kHalfTypes) {
    const Tensor a = mmtest::input({2, 1, 6, 10}, dt), b = mmtest::input({3, 10, 5}, dt);
    const Tensor got = ox::matmul(a, b);
    const Tensor a3 = a.expand({2, 3, 6, 10}).reshape({6, 6, 10});
    const Tensor b3 = b.unsqueeze(0).expand({2, 3, 10, 5}).reshape({6, 10, 5});
    expect_close(got, {2, 3, 6, 5}, ref_baddbmm({}, a3, b3, 0, 1), 10,
                 "broadcast batch " + std::string(ox::dtype_name(dt)));
    EXPECT_TRUE(same_bits(got, via_f32(a, b))) << ox::dtype_name(dt);
  }
}

TEST_F(GemmHalf, AddmmAndBaddbmmReadTheInput) {
  for (DType dt : kHalfTypes)
    for (int64_t k : {7, 300, 1030}) {  // one depth block, and two (an f32 C between them)
      const std::string what = std::string(ox::dtype_name(dt)) + " K " + std::to_string(k);
      const Tensor input = mmtest::input({13, 21}, dt), a = mmtest::input({13, k}, dt),
                   b = mmtest::input({k, 21}, dt);
      const Tensor got = ox::addmm(input, a, b, 0.5, -1.5);
      expect_close(got, {13, 21},
                   ref_baddbmm(input.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), 0.5, -1.5),
                   k + 1, "addmm " + what);
      const Tensor want_bits =
          ox::addmm(input.to(DType::F32), a.to(DType::F32), b.to(DType::F32), 0.5, -1.5).to(dt);
      EXPECT_TRUE(same_bits(got, want_bits)) << "addmm " + what;
      // A broadcast input row, a batch and a transposed operand.
      const Tensor row = mmtest::input({1, 9}, dt), ba = mmtest::input({3, 5, k}, dt),
                   bb = mmtest::input({3, 9, k}, dt).transpose(1, 2);
      const Tensor bgot = ox::baddbmm(row, ba, bb, 2, 1);
      expect_close(bgot, {3, 5, 9}, ref_baddbmm(row.expand({3, 5, 9}), ba, bb, 2, 1), k + 1,
                   "baddbmm " + what);
      const Tensor bwant =
          ox::baddbmm(row.to(DType::F32), ba.to(DType::F32), bb.to(DType::F32), 2, 1).to(dt);
      EXPECT_TRUE(same_bits(bgot, bwant)) << "baddbmm " + what;
    }
}

TEST_F(GemmHalf, EmptyDepthScalesTheInput) {
  for (DType dt : kHalfTypes) {
    const Tensor a = mmtest::input({4, 0}, dt), b = mmtest::input({0, 3}, dt);
    const Tensor zero = ox::matmul(a, b);
    EXPECT_EQ(zero.to_vector<double>(), std::vector<double>(12, 0.0)) << ox::dtype_name(dt);
    const Tensor input = ox::full({4, 3}, 1.5, {.dtype = dt});
    EXPECT_EQ(ox::addmm(input, a, b, 2, 7).to_vector<double>(), std::vector<double>(12, 3.0))
        << ox::dtype_name(dt);
  }
}

TEST_F(GemmHalf, BitsDoNotDependOnTheThreadCount) {
  // Large enough that two threads split the rows, the columns or the batch.
  const Dims dims[] = {{256, 256, 256}, {200, 300, 1030}, {1, 2000, 500}, {700, 5, 300}};
  for (DType dt : kHalfTypes) {
    for (const Dims& d : dims) {
      const Tensor a = mmtest::input({d.m, d.k}, dt),
                   b = mmtest::laid_out({d.k, d.n}, dt, Lay::Transposed);
      const auto [one, two] = at_1_and_2_threads([&] { return ox::matmul(a, b); });
      EXPECT_TRUE(same_bits(one, two)) << str({d.m, d.n, d.k}) << " " << ox::dtype_name(dt);
      const Tensor input = mmtest::input({d.m, d.n}, dt);
      const auto [one_b, two_b] =
          at_1_and_2_threads([&] { return ox::addmm(input, a, b, 0.25, 2); });
      EXPECT_TRUE(same_bits(one_b, two_b))
          << "addmm " << str({d.m, d.n, d.k}) << " " << ox::dtype_name(dt);
    }
    const Tensor a = mmtest::input({6, 40, 64}, dt), b = mmtest::input({6, 64, 48}, dt);
    const auto [one, two] = at_1_and_2_threads([&] { return ox::matmul(a, b); });
    EXPECT_TRUE(same_bits(one, two)) << "batch " << ox::dtype_name(dt);
  }
}

TEST_F(GemmHalf, ConvolutionsOnItIgnoreTheThreadCount) {
  // Convolutions are im2col (in the input's dtype) around this GEMM, forward and backward.
  const ox::Conv2dOptions o{.padding = 1, .groups = 2};
  for (DType dt : kHalfTypes) {
    const Tensor x = mmtest::input({3, 8, 20, 21}, dt), w = mmtest::input({16, 4, 3, 3}, dt);
    const Tensor go = mmtest::input({3, 16, 20, 21}, dt);
    const auto [f1, f2] = at_1_and_2_threads([&] { return ox::conv2d(x, w, {}, o); });
    EXPECT_TRUE(same_bits(f1, f2)) << "forward " << ox::dtype_name(dt);
    const auto [i1, i2] =
        at_1_and_2_threads([&] { return ox::conv2d_input_grad(x.shape(), w, go, o); });
    EXPECT_TRUE(same_bits(i1, i2)) << "input grad " << ox::dtype_name(dt);
    const auto [w1, w2] =
        at_1_and_2_threads([&] { return ox::conv2d_weight_grad(x, w.shape(), go, o); });
    EXPECT_TRUE(same_bits(w1, w2)) << "weight grad " << ox::dtype_name(dt);
  }
}

}  // namespace
