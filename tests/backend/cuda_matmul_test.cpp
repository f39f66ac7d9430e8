// CUDA matmul's host logic on the CPU (backend/cuda/cublas.h): the planning of cuBLAS calls,
// checked by running each plan through a column-major GEMM written from cuBLAS's documented
// semantics over host memory, for many layouts (transposed, padded, size-1 dims, broadcast and
// permuted batch dims, negative strides); the loading of cuBLAS on this machine; and that every
// kernel the random and matmul launchers name is in the embedded PTX.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/cublas.h"
#include "backend/cuda/image.h"
#include "backend/cuda_ptx.h"

namespace {

namespace cuda = ox::cuda::detail;
using ox::Shape;
using ox::Strides;

// An operand in host memory: its logical shape, strides and the offset of element [0, ..., 0].
struct HostArray {
  Shape shape;
  Strides strides;
  std::vector<double> memory;
  int64_t base = 0;
  double& at(const std::vector<int64_t>& index) {
    int64_t off = base;
    for (size_t d = 0; d < index.size(); ++d) off += index[d] * strides[d];
    return memory.at(size_t(off));
  }
};

std::vector<std::vector<int64_t>> all_indices(const Shape& shape) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> index(shape.size(), 0);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A random layout of `shape`: dims in a random memory order, some padded, some flipped
// (negative strides), and for an input some dims broadcast (stride 0).
HostArray random_layout(const Shape& shape, bool input, std::mt19937& rng) {
  const size_t nd = shape.size();
  std::vector<size_t> order(nd);
  for (size_t d = 0; d < nd; ++d) order[d] = d;
  if (rng() % 2) std::shuffle(order.begin(), order.end(), rng);
  HostArray h;
  h.shape = shape;
  h.strides = Strides(nd, 0);
  int64_t stride = 1 + int64_t(rng() % 4 == 0);  // sometimes no unit stride at all
  for (size_t i = nd; i-- > 0;) {                // order[nd - 1] innermost
    const size_t d = order[i];
    h.strides[d] = stride;
    stride *= shape[d] + (rng() % 4 == 0 ? int64_t(rng() % 3) : 0);
  }
  for (size_t d = 0; d < nd; ++d) {
    if (input && rng() % 6 == 0) h.strides[d] = 0;
    if (rng() % 6 == 0) h.strides[d] = -h.strides[d];
  }
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < nd; ++d) {
    const int64_t extent = (shape[d] - 1) * h.strides[d];
    (extent < 0 ? lo : hi) += extent;
  }
  h.base = -lo;
  h.memory.assign(size_t(hi - lo + 1), -7777.0);  // what no element holds
  return h;
}

// A contiguous copy (what the launcher's pack makes when the plan asks for one).
HostArray contiguous_copy(HostArray& src) {
  HostArray h;
  h.shape = src.shape;
  h.strides = ox::contiguous_strides(src.shape);
  int64_t n = 1;
  for (int64_t s : src.shape) n *= s;
  h.memory.assign(size_t(std::max<int64_t>(n, 1)), 0);
  for (const auto& index : all_indices(src.shape)) h.at(index) = src.at(index);
  return h;
}

// cublasGemmStridedBatchedEx with alpha 1 and beta 0, as its documentation defines it.
void column_major_gemm(const cuda::CublasPlan& p, const double* a, const double* b, double* c) {
  for (int64_t t = 0; t < p.batch; ++t)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          const double x =
              p.trans_a ? a[t * p.stride_a + l + i * p.lda] : a[t * p.stride_a + i + l * p.lda];
          const double y =
              p.trans_b ? b[t * p.stride_b + j + l * p.ldb] : b[t * p.stride_b + l + j * p.ldb];
          sum += x * y;
        }
        c[t * p.stride_c + i + j * p.ldc] = sum;
      }
}

struct Outcome {
  bool copied_a, copied_b, copied_c;
};

// dst = a @ b through the plans the launcher makes (copies first where asked), checked against
// the definition; the memory around dst's elements must be untouched.
Outcome check_plan(const Shape& batch, int64_t M, int64_t N, int64_t K, HostArray a, HostArray b,
                   HostArray dst, const std::string& what) {
  int value = 0;
  for (const auto& index : all_indices(a.shape)) a.at(index) = double(++value % 7 - 3);
  for (const auto& index : all_indices(b.shape)) b.at(index) = double(++value % 5 - 2);
  HostArray expected = dst;
  for (const auto& index : all_indices(dst.shape)) {
    double sum = 0;
    std::vector<int64_t> ia = index, ib = index;
    for (int64_t l = 0; l < K; ++l) {
      ia.back() = l;
      ib[ib.size() - 2] = l;
      sum += a.at(ia) * b.at(ib);
    }
    expected.at(index) = sum;
  }
  cuda::CublasPlan plan = cuda::plan_cublas(dst.shape, K, dst.strides, a.strides, b.strides);
  EXPECT_TRUE(plan.usable) << what;
  const Outcome outcome{plan.copy_a, plan.copy_b, plan.copy_c};
  HostArray A = plan.copy_a ? contiguous_copy(a) : a;
  HostArray B = plan.copy_b ? contiguous_copy(b) : b;
  HostArray C = plan.copy_c ? contiguous_copy(dst) : dst;
  if (plan.copy_a || plan.copy_b || plan.copy_c) {
    plan = cuda::plan_cublas(C.shape, K, C.strides, A.strides, B.strides);
    EXPECT_FALSE(plan.copy_a || plan.copy_b || plan.copy_c) << what << ": copies do not fit";
    if (plan.copy_a || plan.copy_b || plan.copy_c) return outcome;
  }
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  EXPECT_EQ(plan.batch, count) << what;
  EXPECT_EQ(plan.k, K) << what;
  EXPECT_EQ(plan.m * plan.n, M * N) << what;
  const double* ap = (plan.swap ? B : A).memory.data() + (plan.swap ? B : A).base;
  const double* bp = (plan.swap ? A : B).memory.data() + (plan.swap ? A : B).base;
  column_major_gemm(plan, ap, bp, C.memory.data() + C.base);
  if (outcome.copied_c)
    for (const auto& index : all_indices(dst.shape)) dst.at(index) = C.at(index);
  else
    dst = C;
  EXPECT_EQ(dst.memory, expected.memory) << what;
  return outcome;
}

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

// A contiguous array, or the transpose of a contiguous one (column-major matrices).
HostArray plain(const Shape& shape, bool column_major) {
  HostArray h;
  h.shape = shape;
  h.strides = ox::contiguous_strides(shape);
  const size_t nd = shape.size();
  if (column_major) {
    h.strides[nd - 1] = shape[nd - 2];
    h.strides[nd - 2] = 1;
  }
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  h.memory.assign(size_t(std::max<int64_t>(n, 1)), -7777.0);
  return h;
}

TEST(CudaMatmulPlan, ContiguousAndTransposedOperandsNeedNoCopy) {
  for (const Shape& batch : {Shape{}, Shape{3}, Shape{2, 3}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool tc : {false, true}) {
          const int64_t M = 4, N = 3, K = 5;
          const std::string what = "batch " + std::to_string(batch.size()) + " ta " +
                                   std::to_string(ta) + " tb " + std::to_string(tb) + " tc " +
                                   std::to_string(tc);
          const Outcome o = check_plan(batch, M, N, K, plain(with_matrix(batch, M, K), ta),
                                       plain(with_matrix(batch, K, N), tb),
                                       plain(with_matrix(batch, M, N), tc), what);
          EXPECT_FALSE(o.copied_a || o.copied_b || o.copied_c) << what;
        }
}

TEST(CudaMatmulPlan, BroadcastWeightIsReadInPlaceWithBatchStrideZero) {
  const Shape batch{2, 3};
  HostArray b = plain({4, 5}, false);
  b.shape = with_matrix(batch, 4, 5);
  b.strides = {0, 0, 5, 1};
  const Outcome o = check_plan(batch, 6, 5, 4, plain(with_matrix(batch, 6, 4), false), b,
                               plain(with_matrix(batch, 6, 5), false), "weight");
  EXPECT_FALSE(o.copied_a || o.copied_b || o.copied_c);
  const cuda::CublasPlan p =
      cuda::plan_cublas(with_matrix(batch, 6, 5), 4, {90, 30, 5, 1}, {72, 24, 4, 1}, b.strides);
  EXPECT_TRUE(p.swap);
  EXPECT_EQ(p.stride_a, 0);  // cuBLAS's A is our b
  EXPECT_EQ(p.stride_b, 24);
  EXPECT_EQ(p.stride_c, 30);
  EXPECT_EQ(p.batch, 6);
}

TEST(CudaMatmulPlan, OperandsWithoutAUnitStrideOrWithMixedBatchStridesAreCopied) {
  // a: stride 2 along K; b: batch dims that do not step as one; dst: negative row stride.
  const Shape batch{2, 3};
  HostArray a = plain(with_matrix(batch, 3, 4), false);
  for (auto& s : a.strides) s *= 2;
  a.memory.resize(a.memory.size() * 2, -7777.0);
  HostArray b = plain(with_matrix(batch, 4, 2), false);
  b.strides = {8, 16, 2, 1};
  b.memory.assign(48, -7777.0);
  HostArray dst = plain(with_matrix(batch, 3, 2), false);
  dst.strides = {6, 12, -2, 1};
  dst.memory.assign(40, -7777.0);
  dst.base = 4;
  const Outcome o = check_plan(batch, 3, 2, 4, a, b, dst, "copies");
  EXPECT_TRUE(o.copied_a);
  EXPECT_TRUE(o.copied_b);
  EXPECT_TRUE(o.copied_c);
}

TEST(CudaMatmulPlan, RandomLayoutsGiveTheProduct) {
  std::mt19937 rng(1234);
  int in_place = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const Shape batch = std::vector<Shape>{{}, {3}, {2, 1, 3}, {1}, {2, 2}}[size_t(trial % 5)];
    const int64_t sizes[] = {1, 2, 3, 5};
    const int64_t M = sizes[rng() % 4], N = sizes[rng() % 4], K = sizes[rng() % 4];
    HostArray a = random_layout(with_matrix(batch, M, K), true, rng);
    HostArray b = random_layout(with_matrix(batch, K, N), true, rng);
    HostArray dst = random_layout(with_matrix(batch, M, N), false, rng);
    const Outcome o = check_plan(batch, M, N, K, a, b, dst, "trial " + std::to_string(trial));
    in_place += !o.copied_a && !o.copied_b && !o.copied_c;
    if (HasFailure()) break;
  }
  EXPECT_GT(in_place, 300);  // both branches are exercised
}

TEST(CudaMatmulPlan, LeadingDimensionsAndBatchStrides) {
  EXPECT_EQ(cuda::row_major_ld({3, 4, 4, 1}), 4);
  EXPECT_EQ(cuda::row_major_ld({3, 4, 6, 1}), 6);   // padded rows
  EXPECT_EQ(cuda::row_major_ld({3, 4, 3, 1}), -1);  // rows overlap
  EXPECT_EQ(cuda::row_major_ld({3, 4, 1, 3}), -1);
  EXPECT_EQ(cuda::row_major_ld({1, 4, 0, 1}), 4);  // one row: its stride does not matter
  EXPECT_EQ(cuda::row_major_ld({3, 1, 7, 0}), 7);  // one column
  EXPECT_EQ(cuda::row_major_ld({3, 1, -1, 1}), -1);
  EXPECT_EQ(cuda::col_major_ld({3, 4, 1, 3}), 3);
  EXPECT_EQ(cuda::col_major_ld({3, 4, 1, 2}), -1);
  EXPECT_EQ(cuda::col_major_ld({3, 1, 1, 0}), 3);
  EXPECT_EQ(cuda::col_major_ld({3, 4, 1, int64_t(1) << 40}), -1);  // beyond cuBLAS's int
  EXPECT_EQ(cuda::batch_stride({2, 3, 4, 5}, {60, 20, 5, 1}), 20);
  EXPECT_EQ(cuda::batch_stride({2, 1, 4, 5}, {20, 999, 5, 1}), 20);
  EXPECT_EQ(cuda::batch_stride({2, 3, 4, 5}, {0, 0, 5, 1}), 0);
  EXPECT_EQ(cuda::batch_stride({2, 3, 4, 5}, {20, 40, 5, 1}), -1);
  EXPECT_EQ(cuda::batch_stride({2, 4, 5}, {-20, 5, 1}), -1);
  EXPECT_EQ(cuda::batch_stride({4, 5}, {5, 1}), 0);
}

TEST(CudaMatmulPlan, SizesBeyondIntAreLeftToTheTiledKernel) {
  const int64_t big = int64_t(1) << 31;
  EXPECT_FALSE(cuda::plan_cublas({big, 2}, 3, {2, 1}, {3, 1}, {2, 1}).usable);
  EXPECT_FALSE(cuda::plan_cublas({2, 3}, big, {3, 1}, {big, 1}, {3, 1}).usable);
  EXPECT_TRUE(cuda::plan_cublas({2, 3}, 4, {3, 1}, {4, 1}, {3, 1}).usable);
}

// ---- cuBLAS on this machine -------------------------------------------------------------------

TEST(CudaCublas, LoadsOrSaysWhyNot) {
  if (cuda::cublas_available()) {
    EXPECT_EQ(cuda::cublas_soname().rfind("libcublas.so.", 0), 0u) << cuda::cublas_soname();
    EXPECT_EQ(cuda::cublas_unavailable_reason(), "");
  } else {
    const std::string& reason = cuda::cublas_unavailable_reason();
    EXPECT_FALSE(reason.empty());
    EXPECT_TRUE(reason.find("libcublas.so.13") != std::string::npos ||
                reason.find("OXMERA_CUDA_NO_CUBLAS") != std::string::npos ||
                reason.find(" has no ") != std::string::npos)
        << reason;
    EXPECT_EQ(cuda::cublas_soname(), "");
  }
  std::cout << "cuBLAS: "
            << (cuda::cublas_available() ? cuda::cublas_soname()
                                         : "missing: " + cuda::cublas_unavailable_reason())
            << "\n";
}

// ---- Kernel names ---------------------------------------------------------------------------

TEST(CudaMatmulKernels, EveryNameTheLaunchersUseIsInThePtx) {
  const char* all[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"};
  const std::string random = oxtest::embedded_ptx("random");
  for (const char* row :
       {"uniform32", "uniform64", "normal", "integer", "bernoulli", "iota", "shuffle"})
    for (const char* dtype : all)
      EXPECT_TRUE(oxtest::ptx_defines(random, std::string("ox_random_") + row + "_" + dtype))
          << row << " " << dtype;
  for (const char* name :
       {"ox_random_check_p_init", "ox_random_check_p", "ox_random_check_p_report"})
    EXPECT_TRUE(oxtest::ptx_defines(random, name)) << name;
  const std::string matmul = oxtest::embedded_ptx("matmul");
  for (const char* dtype : all)
    EXPECT_EQ(oxtest::ptx_defines(matmul, std::string("ox_matmul_tiled_") + dtype),
              std::string(dtype) != "bool")
        << dtype;
  for (const char* name :
       {"ox_matmul_copy_w1", "ox_matmul_copy_w2", "ox_matmul_copy_w4", "ox_matmul_copy_w8"})
    EXPECT_TRUE(oxtest::ptx_defines(matmul, name)) << name;
}

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
