// The CUDA linear algebra launchers' host logic, on the CPU (src/backend/cuda/linalg.cpp,
// cusolver.h): how a batch of column-major matrices is walked (counts, offsets, leading
// dimensions), cuSOLVER's loading and the error when it is missing, and that every kernel the
// launchers name is in the embedded PTX. The factorizations themselves run only on a GPU.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/cusolver.h"
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/linalg.cuh"
#include "backend/cuda/libraries.h"
#include "backend/cuda_ptx.h"

namespace {

namespace cuda = ox::cuda::detail;
namespace kern = ox::cuda::kernels;
using ox::Shape;
using ox::StridedArray;
using ox::Strides;
using oxtest::caught;

StridedArray array(Shape shape, Strides strides) {
  return StridedArray{nullptr, std::move(shape), std::move(strides), ox::kF32, ox::Device::cpu()};
}

// The offset of batch index t by the definition: row-major over the batch dims.
int64_t naive_offset(const Shape& shape, const Strides& strides, size_t batch_dims, int64_t t) {
  int64_t offset = 0;
  for (size_t d = batch_dims; d-- > 0;) {
    offset += (t % shape[d]) * strides[d];
    t /= shape[d];
  }
  return offset;
}

TEST(CudaLinalg, ContiguousBatchOfColumnMajorMatrices) {
  // [2, 3] matrices of 4 x 5, each column-major with ld 4, packed one after another.
  const cuda::MatrixBatch m(array({2, 3, 4, 5}, {60, 20, 1, 4}));
  EXPECT_EQ(m.count(), 6);
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.cols, 5);
  EXPECT_EQ(m.ld, 4);
  for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(m.offset(t), 20 * t);
}

TEST(CudaLinalg, BatchStridesAnyOrderBroadcastAndPaddedLeadingDim) {
  // Batch dims permuted and one broadcast (stride 0), columns padded to ld 7.
  const Shape shape{3, 2, 4, 5, 3};
  const Strides strides{35, 0, 105, 1, 7};
  const cuda::MatrixBatch m(array(shape, strides));
  EXPECT_EQ(m.count(), 24);
  EXPECT_EQ(m.rows, 5);
  EXPECT_EQ(m.cols, 3);
  EXPECT_EQ(m.ld, 7);
  for (int64_t t = 0; t < m.count(); ++t)
    EXPECT_EQ(m.offset(t), naive_offset(shape, strides, 3, t)) << "matrix " << t;
}

TEST(CudaLinalg, LeadingDimIsAtLeastTheRowsAndOne) {
  // One column: its stride says nothing, ld is the row count.
  EXPECT_EQ(cuda::MatrixBatch(array({6, 1}, {1, 1})).ld, 6);
  // One row: any row stride, ld from the column stride.
  EXPECT_EQ(cuda::MatrixBatch(array({1, 4}, {9, 3})).ld, 3);
  // Empty matrices keep ld 1, as cuSOLVER requires.
  const cuda::MatrixBatch empty(array({2, 0, 0}, {0, 1, 1}));
  EXPECT_EQ(empty.ld, 1);
  EXPECT_EQ(empty.count(), 2);
  EXPECT_EQ(cuda::MatrixBatch(array({0, 3, 3}, {9, 1, 3})).count(), 0);
  // A single matrix: one item at offset 0.
  const cuda::MatrixBatch one(array({3, 3}, {1, 3}));
  EXPECT_EQ(one.count(), 1);
  EXPECT_EQ(one.offset(0), 0);
}

TEST(CudaLinalg, VectorBatchesOfPivotsTauAndValues) {
  const Shape shape{2, 3, 4};
  const Strides strides{12, 4, 1};
  const cuda::MatrixBatch v(array(shape, strides), 1);
  EXPECT_EQ(v.count(), 6);
  EXPECT_EQ(v.rows, 4);
  for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(v.offset(t), 4 * t);
  const cuda::MatrixBatch broadcast(array({5, 4}, {0, 1}), 1);
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(broadcast.offset(t), 0);
}

TEST(CudaLinalg, ExtentsBeyondInt32AreADeviceError) {
  EXPECT_EQ(cuda::solver_int(INT_MAX, "svd"), INT_MAX);
  const ox::Error e = caught([] { cuda::solver_int(int64_t(INT_MAX) + 1, "svd"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(oxtest::contains(e, "svd")) << e.what();
}

TEST(CudaLinalg, MissingCusolverIsADeviceErrorNamingOpLibraryAndReason) {
  cuda::Library missing;
  missing.name = "cusolver";
  missing.reason = "libcusolver.so.12: cannot open shared object file";
  const cuda::Cusolver api = cuda::resolve_cusolver(missing);
  EXPECT_EQ(api.reason, missing.reason);
  EXPECT_EQ(api.cusolverDnCreate, nullptr);
  const ox::Error e = caught([&] { cuda::require_cusolver(api, "eigh"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(oxtest::contains(e, "eigh")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "cuSOLVER")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "cannot open shared object file")) << e.what();
}

TEST(CudaLinalg, ALibraryWithoutAnEntryPointIsMissingToo) {
  // libc lacks every cuSOLVER symbol.
  cuda::Library wrong;
  wrong.name = "cusolver";
  wrong.soname = "libc.so.6";
  wrong.handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(wrong.handle, nullptr);
  const cuda::Cusolver api = cuda::resolve_cusolver(wrong);
  EXPECT_TRUE(api.reason.find("lacks cusolverDnCreate") != std::string::npos) << api.reason;
  EXPECT_THROW(cuda::require_cusolver(api, "cholesky"), ox::Error);
}

// Where the toolkit's libcusolver loads (no driver is needed to load it), every entry point
// the launchers use resolves; doctor lists it among the optional libraries either way.
TEST(CudaLinalg, TheToolkitsCusolverResolvesWhereItLoads) {
  const cuda::Library* found = nullptr;
  for (const cuda::Library& lib : cuda::optional_libraries())
    if (lib.name == "cusolver") found = &lib;
  ASSERT_NE(found, nullptr) << "doctor does not list cusolver";
  if (found->handle == nullptr) GTEST_SKIP() << "libcusolver not loadable here: " << found->reason;
  EXPECT_EQ(cuda::cusolver_library().reason, "");
  EXPECT_EQ(cuda::cusolver_library().soname, found->soname);
  EXPECT_NE(cuda::cusolver_library().cusolverDnDgesvd, nullptr);
}

TEST(CudaLinalg, EveryLaunchedKernelIsInTheEmbeddedPtx) {
  const std::string ptx = oxtest::embedded_ptx("linalg");
  ASSERT_FALSE(cuda::linalg_kernel_names().empty());
  for (const char* name : cuda::linalg_kernel_names())
    EXPECT_TRUE(oxtest::ptx_defines(ptx, name)) << name;
}

// The kernels' triangle rules: what the non-finite check reads, what the Cholesky scatter zeros.
TEST(CudaLinalg, TriangleRulesOfGatherAndScatter) {
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_TRUE(kern::linalg_reads(0, i, j));
      EXPECT_EQ(kern::linalg_reads(1, i, j), i <= j);
      EXPECT_EQ(kern::linalg_reads(-1, i, j), i >= j);
      EXPECT_FALSE(kern::linalg_zeroes(0, i, j));
      // An upper factor reads the upper triangle and zeros the rest, a lower one likewise.
      EXPECT_NE(kern::linalg_zeroes(1, i, j), kern::linalg_reads(1, i, j));
      EXPECT_NE(kern::linalg_zeroes(-1, i, j), kern::linalg_reads(-1, i, j));
    }
}

// The triangular_solve kernel's substitution, run on the CPU, against the CPU backend (LAPACK's
// trtrs) for every triangle, transpose and diagonal choice, with a padded leading dim; garbage
// (NaN) in what must not be read.
template <class T>
void expect_trsm_matches_cpu(double tolerance) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  constexpr int64_t n = 9, k = 3, lda = 11, ldb = 10;
  ox::Backend& cpu = ox::backend_for(ox::Device::cpu(), "test");
  const ox::DType dtype = std::is_same_v<T, float> ? ox::kF32 : ox::kF64;
  for (int flags = 0; flags < 8; ++flags) {
    const bool upper = flags & 1, transpose = flags & 2, unit = flags & 4;
    std::vector<T> a(size_t(lda * n), std::numeric_limits<T>::quiet_NaN());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        if (upper ? i > j : i < j) continue;  // the other triangle stays NaN
        a[size_t(i + j * lda)] =
            i == j ? (unit ? std::numeric_limits<T>::quiet_NaN() : T(2 + u(rng))) : T(0.5 * u(rng));
      }
    std::vector<T> b(size_t(ldb * k));
    for (T& v : b) v = T(u(rng));
    std::vector<T> expected = b, got = b;
    const StridedArray sa{a.data(), {n, n}, {1, lda}, dtype, ox::Device::cpu()};
    const StridedArray sb{expected.data(), {n, k}, {1, ldb}, dtype, ox::Device::cpu()};
    cpu.triangular_solve(sa, sb, upper, transpose, unit);
    for (int64_t c = 0; c < k; ++c)
      kern::trsm_column(a.data(), lda, got.data() + c * ldb, n, upper, transpose, unit);
    for (int64_t c = 0; c < k; ++c)
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(double(got[size_t(i + c * ldb)]), double(expected[size_t(i + c * ldb)]),
                    tolerance)
            << "upper " << upper << " transpose " << transpose << " unit " << unit << " at (" << i
            << ", " << c << ")";
  }
}

TEST(CudaLinalg, TriangularSolveSubstitutionMatchesTheCpuF32) {
  expect_trsm_matches_cpu<float>(1e-4);
}

TEST(CudaLinalg, TriangularSolveSubstitutionMatchesTheCpuF64) {
  expect_trsm_matches_cpu<double>(1e-12);
}

TEST(CudaLinalg, ASingularTriangleGivesInfOrNaNNotAnError) {
  // [[1, 0], [1, 0]] lower: x0 = 1, x1 = (1 - 1) / 0 = NaN; b1 = 2 gives Inf.
  const double a[4] = {1, 1, 0, 0};
  double x[2] = {1, 1};
  kern::trsm_column(a, 2, x, 2, false, false, false);
  EXPECT_EQ(x[0], 1);
  EXPECT_TRUE(std::isnan(x[1]));
  double y[2] = {1, 2};
  kern::trsm_column(a, 2, y, 2, false, false, false);
  EXPECT_TRUE(std::isinf(y[1]));
}

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
