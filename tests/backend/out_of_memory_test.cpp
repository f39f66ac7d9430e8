// Allocation failures are ox::Error of kind OutOfMemory (or a Shape error when the size does
// not even fit 64 bits), never std::bad_alloc or a crash: tensors too large for any machine,
// reductions and sorts over broadcast views whose kernels would need scratch per element, the
// allocator itself, and exceptions thrown inside worker threads. Also the thread-count cap.
//
// The sizes are at least 2^48 bytes (256 TiB): more than a 47-bit user address space maps
// even with overcommit always on, so they fail on every machine, under AddressSanitizer too.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_allocator.h"
#include "backend/cpu/parallel.h"
#include "test_util.h"

namespace {

using oxtest::caught;
using oxtest::contains;

constexpr int64_t k2to46 = int64_t{1} << 46;
constexpr int64_t k2to62 = int64_t{1} << 62;

ox::Tensor huge_view(int64_t n, ox::DType dtype = ox::kF32) {
  return ox::ones({1}, {.dtype = dtype}).expand({n});
}

void expect_out_of_memory(const std::function<void()>& f, const std::string& op) {
  const ox::Error e = caught(f);
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory) << e.what();
  EXPECT_TRUE(contains(e, "[" + op + "]")) << e.what();
  EXPECT_TRUE(contains(e, "bytes")) << e.what();
}

TEST(OutOfMemory, ReductionsOverAHugeBroadcastView) {
  // The CPU's kernels need scratch per element here; the CUDA kernels need none and would run
  // for days over 2^62 elements (docs/LIMITATIONS.md).
  OXTEST_SKIP_ON_TEST_DEVICE("the CPU's scratch per element");
  const ox::Tensor x = huge_view(k2to62);
  expect_out_of_memory([&] { x.sum(); }, "sum");
  expect_out_of_memory([&] { x.mean(); }, "mean");
  expect_out_of_memory([&] { x.max(); }, "max");
  expect_out_of_memory([&] { x.prod(); }, "prod");
  expect_out_of_memory([&] { ox::amax(x); }, "amax");
  expect_out_of_memory([&] { ox::argmax(x); }, "argmax");
  expect_out_of_memory([&] { ox::var(x); }, "var");
  expect_out_of_memory([&] { ox::logsumexp(x); }, "logsumexp");
  expect_out_of_memory([&] { ox::norm(x); }, "norm");
  expect_out_of_memory([&] { huge_view(k2to62, ox::kF64).sum(); }, "sum");
  expect_out_of_memory([&] { huge_view(k2to62, ox::kI32).sum(); }, "sum");
  // Over one dim of a 2-d view, and keeping dims.
  const ox::Tensor m = ox::ones({1, 1}).expand({2, k2to62 / 2});
  expect_out_of_memory([&] { m.sum({1}); }, "sum");
  expect_out_of_memory([&] { m.mean({1}, true); }, "mean");
}

TEST(OutOfMemory, SortingAHugeBroadcastRow) {
  const ox::Tensor x = huge_view(k2to46);
  expect_out_of_memory([&] { ox::topk(x, 1); }, "topk");
  expect_out_of_memory([&] { ox::median(x); }, "median");
}

TEST(OutOfMemory, CopiesAndProductsOfHugeViews) {
  expect_out_of_memory([&] { huge_view(k2to46).clone(); }, "clone");
  expect_out_of_memory([&] { huge_view(k2to46).contiguous(); }, "clone");  // contiguous clones
  // A product whose output alone is 2^48 bytes.
  expect_out_of_memory(
      [&] {
        ox::matmul(ox::ones({1, 1}).expand({k2to46, 1}), ox::ones({1, 1}));
      },
      "matmul");
  // 16-bit operands are widened as the GEMM packs them (no f32 copy to refuse), but a 16-bit
  // output of 2^47 bytes is refused alike.
  const ox::Tensor a = ox::ones({1, 1}, {.dtype = ox::kF16}).expand({k2to46, 1});
  expect_out_of_memory([&] { ox::matmul(a, ox::ones({1, 1}, {.dtype = ox::kF16})); }, "matmul");
  // Sizes past 64 bits are Shape errors, before any allocation.
  for (const auto& f : std::vector<std::function<void()>>{
           [] { huge_view(k2to62).contiguous(); },
           [] { huge_view(k2to62).clone(); },
           [] {
             ox::zeros({int64_t{1} << 40, int64_t{1} << 30});
           },
       }) {
    const ox::Error e = caught(f);
    EXPECT_TRUE(e.kind() == ox::ErrorKind::Shape || e.kind() == ox::ErrorKind::OutOfMemory)
        << e.what();
  }
}

TEST(OutOfMemory, CreationNamesTheBytesAndTheShape) {
  const ox::Error e = caught([] { ox::zeros({k2to46}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory) << e.what();
  EXPECT_TRUE(contains(e, "281474976710656 bytes")) << e.what();  // 2^48
  EXPECT_TRUE(contains(e, "[70368744177664]")) << e.what();       // the shape
  EXPECT_EQ(caught([] {
              ox::empty({k2to46, 2}, {.dtype = ox::kF64});
            }).kind(),
            ox::ErrorKind::OutOfMemory);
  // Nothing is left behind: an ordinary tensor still works.
  EXPECT_EQ(ox::ones({3}).sum().item<float>(), 3.0f);
}

TEST(OutOfMemory, TheAllocatorRefusesImpossibleSizesAndNamesTheBytes) {
  ox::cpu::CachingAllocator a;
  const ox::Error overflow = caught([&] { (void)a.allocate(SIZE_MAX); });
  EXPECT_EQ(overflow.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(overflow, std::to_string(SIZE_MAX) + " bytes")) << overflow.what();
  const ox::Error huge = caught([&] { (void)a.allocate(size_t{1} << 62); });
  EXPECT_EQ(huge.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(huge, "4611686018427387904 bytes")) << huge.what();
  const ox::Error large = caught([&] { (void)a.allocate(size_t{1} << 48); });
  EXPECT_EQ(large.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(large, "281474976710656 bytes")) << large.what();
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  return CPU_COUNT(&set);
}

TEST(OutOfMemory, AnErrorInAWorkerThreadReachesTheCaller) {
  if (allowed_cpus() < 2) GTEST_SKIP() << "one CPU: no second worker to throw";
  // Every range fails: at 2 threads both workers throw inside the OpenMP region, and one error
  // comes out of parallel_for (instead of std::terminate).
  const int saved = ox::get_num_threads();
  ox::set_num_threads(2);
  const ox::Error e = caught([] {
    ox::cpu::parallel_for(0, 1000, 1, [](int64_t begin, int64_t end) {
      OX_FAIL(OutOfMemory, "worker", "failed in [", begin, ", ", end, ")");
    });
  });
  ox::set_num_threads(saved);
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory) << e.what();
  EXPECT_TRUE(contains(e, "[worker] failed in [")) << e.what();
}

// ---- Thread counts are capped at the hardware threads this process may use ------------------

TEST(Threads, RequestsAboveTheHardwareAreCappedWithAWarning) {
  const int saved = ox::get_num_threads(), cpus = allowed_cpus();
  ASSERT_GE(cpus, 1);
  testing::internal::CaptureStderr();
  ox::set_num_threads(cpus + 61);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(ox::get_num_threads(), cpus);
  EXPECT_NE(warning.find("set_num_threads(" + std::to_string(cpus + 61) + ")"), std::string::npos)
      << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  // The hardware count itself passes silently.
  testing::internal::CaptureStderr();
  ox::set_num_threads(cpus);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(ox::get_num_threads(), cpus);
  // Work still runs, and gives the same bits, at the capped count.
  ox::set_num_threads(1);
  const float one = ox::arange(100000, {.dtype = ox::kF32}).sin().sum().item<float>();
  ox::set_num_threads(cpus + 61);
  const float many = ox::arange(100000, {.dtype = ox::kF32}).sin().sum().item<float>();
  EXPECT_EQ(one, many);
  ox::set_num_threads(saved);
}

}  // namespace
