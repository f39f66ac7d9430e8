// The CUDA reductions' and scans' host logic, on the CPU (backend/cuda/reduce.cpp,
// kernels/reduce_common.cuh): the plans cover every element exactly once for many shapes and
// depend on the shape alone, and every (op, dtype) the op layer sends has its kernel in the
// embedded PTX. The kernels themselves run in scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/reduce_common.cuh"
#include "backend/cuda/reduce_kernels.h"

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

std::string ptx_of(const char* family) {
  const cuda::KernelImage& image = cuda::kernel_image(family);
  return std::string(cuda::ptx_text(cuda::parse_fatbin(image.ptx, image.ptx_size).at(0)));
}

bool has_kernel(const cuda::KernelName& k) {
  return ptx_of(k.family).find(std::string(".entry ") + k.name + "(") != std::string::npos;
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

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
