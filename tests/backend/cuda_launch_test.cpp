// The CUDA launch layer's host logic, on the CPU (backend/cuda/launch.h): the layouts kernels
// walk (merged dims, every operand's offsets), fill's value bits, and the backend's absence
// where no driver runs. Kernel execution itself is proven by scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/launch.h"

namespace {

using ox::Shape;
using ox::Strides;
using ox::cuda::detail::make_offsets;

// The offset of row-major index i of (shape, strides), by the definition.
int64_t naive_offset(const Shape& shape, const Strides& strides, int64_t i) {
  int64_t offset = 0;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    offset += (i % shape[size_t(d)]) * strides[size_t(d)];
    i /= shape[size_t(d)];
  }
  return offset;
}

template <int N>
void expect_offsets_match(const Shape& shape, const std::array<Strides, N>& strides) {
  std::array<const Strides*, N> ptrs;
  for (int k = 0; k < N; ++k) ptrs[size_t(k)] = &strides[size_t(k)];
  const auto o = make_offsets<N>(shape, ptrs, "test");
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  for (int64_t i = 0; i < numel; ++i) {
    int64_t got[N];
    o.get(i, got);
    for (int k = 0; k < N; ++k)
      ASSERT_EQ(got[k], naive_offset(shape, strides[size_t(k)], i))
          << "operand " << k << " index " << i << " of shape " << ::testing::PrintToString(shape);
  }
}

TEST(CudaLaunch, ContiguousDimsMergeIntoOne) {
  const Shape shape{2, 3, 4};
  const Strides s{12, 4, 1};
  const std::array<const Strides*, 2> both{&s, &s};
  const auto o = make_offsets<2>(shape, both, "test");
  EXPECT_EQ(o.ndim, 1);
  EXPECT_EQ(o.sizes[0], 24);
  EXPECT_EQ(o.strides[0][0], 1);
  EXPECT_EQ(o.strides[1][0], 1);
}

TEST(CudaLaunch, BroadcastAndTransposedOperandsKeepTheirDims) {
  const Shape shape{3, 4};
  const Strides c{4, 1}, broadcast{0, 1}, transposed{1, 3};
  const std::array<const Strides*, 3> all{&c, &broadcast, &transposed};
  const auto o = make_offsets<3>(shape, all, "test");
  EXPECT_EQ(o.ndim, 2);
  expect_offsets_match<3>(shape, {c, broadcast, transposed});
}

TEST(CudaLaunch, SizeOneDimsAndScalarsHaveNoDims) {
  const Shape ones{1, 1, 1};
  const Strides s{7, -3, 0};
  const std::array<const Strides*, 1> one{&s};
  EXPECT_EQ((make_offsets<1>(ones, one, "test").ndim), 0);
  const Shape scalar{};
  const Strides none{};
  const std::array<const Strides*, 1> zero_d{&none};
  const auto o = make_offsets<1>(scalar, zero_d, "test");
  EXPECT_EQ(o.ndim, 0);
  int64_t got[1];
  o.get(0, got);
  EXPECT_EQ(got[0], 0);
}

TEST(CudaLaunch, RandomLayoutsWithNegativeAndZeroStridesMatchTheDefinition) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int ndim = int(rng() % 6);
    Shape shape(size_t(ndim), 0);
    for (auto& s : shape) s = int64_t(rng() % 4) + 1;
    std::array<Strides, 3> strides;
    for (auto& st : strides) {
      st.resize(size_t(ndim));
      // Contiguous-like runs (so dims merge) mixed with arbitrary, zero and negative strides.
      int64_t run = 1;
      for (int d = ndim - 1; d >= 0; --d) {
        const int pick = int(rng() % 4);
        st[size_t(d)] = pick == 0 ? run : pick == 1 ? 0 : pick == 2 ? -run : int64_t(rng() % 50);
        run *= shape[size_t(d)];
      }
    }
    expect_offsets_match<3>(shape, strides);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(CudaLaunch, TooManyDimsAfterMergingIsADeviceError) {
  Shape shape(size_t(30), 2);
  Strides transposed = Strides::filled(30, 0);
  int64_t s = 1;
  for (size_t d = 0; d < 30; ++d, s *= 2) transposed[d] = s;  // reversed: nothing merges
  const std::array<const Strides*, 1> one{&transposed};
  const ox::Error e = oxtest::caught([&] { make_offsets<1>(shape, one, "add"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(oxtest::contains(e, "[add]")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "at most 25 dims")) << e.what();
  // The same count of dims that merge is fine.
  Strides contiguous = Strides::filled(30, 0);
  s = 1;
  for (int d = 29; d >= 0; --d, s *= 2) contiguous[size_t(d)] = s;
  const std::array<const Strides*, 1> merged{&contiguous};
  EXPECT_EQ((make_offsets<1>(shape, merged, "add").ndim), 1);
}

TEST(CudaLaunch, FillBitsAreTheCpuConversionOfTheScalar) {
  // Against the CPU backend's fill of a one-element tensor of each dtype.
  const ox::Scalar values[] = {
      ox::Scalar(2.75), ox::Scalar(-1.5), ox::Scalar(int64_t(-3)), ox::Scalar(int64_t(1) << 40),
      ox::Scalar(true), ox::Scalar(-0.0), ox::Scalar(100.9)};
  for (ox::DType dt : ox::kAllDTypes) {
    for (const ox::Scalar& v : values) {
      ox::Tensor t;
      try {
        t = ox::full({1}, v, {.dtype = dt, .device = ox::Device::cpu()});
      } catch (const ox::Error&) {
        continue;  // the op layer refuses a value the dtype cannot hold: fill never sees it
      }
      uint64_t expected = 0;
      std::memcpy(&expected, t.raw_data_ptr(dt), ox::dtype_size(dt));
      EXPECT_EQ(ox::cuda::detail::scalar_bits(v, dt), expected)
          << ox::dtype_name(dt) << " " << v.to_double();
    }
  }
}

}  // namespace
#endif  // OXMERA_TEST_WITH_CUDA

namespace {

TEST(CudaBackendRegistry, NoCudaBackendWithoutAUsableDriver) {
  if (oxtest::on_test_device()) GTEST_SKIP() << "a CUDA backend (or the stand-in) is the device";
  if (ox::cuda::is_available()) GTEST_SKIP() << "a GPU is present (CudaOnDevice covers it)";
  EXPECT_EQ(ox::find_backend(ox::DeviceType::CUDA), nullptr);
  const ox::Error e = oxtest::caught([] { ox::zeros({2}, {.device = ox::Device::cuda(0)}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(oxtest::contains(e, ox::cuda::unavailable_reason())) << e.what();
}

}  // namespace
