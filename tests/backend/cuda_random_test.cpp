// The CUDA random kernels' per-element values (backend/cuda/kernels/random.cuh) on the CPU: for
// many seeds, counters, dtypes and ranges they give the CPU backend's bits (uniform, integer,
// bernoulli; normals too, on the host, where log/sin/cos are the CPU's). The kernels compute
// each element with these very functions; that they run them on the right Philox block and
// lane is checked on a GPU (CudaRandomOnDevice below).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels/random.cuh"
#include "core/philox.h"
#include "test_util.h"

namespace {

namespace rng = ox::cuda::kernels::rng;
using ox::DType;

template <class F>
void for_each_storage(F&& f) {
  f.template operator()<float>(ox::kF32);
  f.template operator()<double>(ox::kF64);
  f.template operator()<rng::F16>(ox::kF16);
  f.template operator()<rng::BF16>(ox::kBF16);
  f.template operator()<int64_t>(ox::kI64);
  f.template operator()<int32_t>(ox::kI32);
  f.template operator()<int16_t>(ox::kI16);
  f.template operator()<int8_t>(ox::kI8);
  f.template operator()<uint8_t>(ox::kU8);
  f.template operator()<bool>(ox::kBool);
}

ox::StridedArray host_array(std::vector<unsigned char>& bytes, int64_t n, DType dtype) {
  bytes.assign(size_t(n) * ox::dtype_size(dtype), 0xAB);
  return {bytes.data(), {n}, {1}, dtype, ox::Device::cpu()};
}

// The CUDA kernel's element values, computed element by element as the kernel does.
template <class T>
std::vector<unsigned char> device_formula(const ox::RandomSpec& spec, int64_t n) {
  rng::Draw<T> d{};
  d.seed = spec.seed;
  d.first_block = spec.first_block;
  d.a = spec.a;
  d.scale = spec.kind == ox::philox::Kind::Normal ? spec.b : spec.b - spec.a;
  d.b = spec.b;
  d.top = rng::largest_below<T>(spec.b);
  d.low = spec.low;
  d.range = spec.range;
  const auto per = int64_t(ox::philox::elements_per_block(spec.kind));
  std::vector<unsigned char> out(size_t(n) * sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    const ox::philox::Block blk = ox::philox::block(d.seed, d.first_block + uint64_t(i / per));
    const int lane = int(i % per);
    T v{};
    switch (spec.kind) {
      case ox::philox::Kind::Uniform32:
        v = rng::uniform32_value<T>(blk, lane, d);
        break;
      case ox::philox::Kind::Uniform64:
        v = rng::uniform64_value<T>(blk, lane, d);
        break;
      case ox::philox::Kind::Normal:
        v = rng::normal_value<T>(blk, lane, d);
        break;
      case ox::philox::Kind::Integer:
        v = rng::integer_value<T>(blk, lane, d);
        break;
      case ox::philox::Kind::Bernoulli:
        break;
    }
    std::memcpy(out.data() + size_t(i) * sizeof(T), &v, sizeof(T));
  }
  return out;
}

struct Range {
  double a, b;
};

TEST(CudaRandomValues, UniformAndNormalMatchTheCpuBitForBit) {
  const uint64_t seeds[] = {0, 1, 42, 0xDEADBEEFCAFEBABEull, ~0ull};
  const uint64_t firsts[] = {0, 3, 0xFFFFFFFFull, 0x123456789ABCDEFull};
  const Range ranges[] = {{0, 1},      {1, 2},        {-3.5, 7.25}, {-1, 0},  {0, 1e-30},
                          {-1e6, 1e6}, {100, 100.01}, {5, 5},       {2, -2},  {0, 300},
                          {-200, 60},  {-1e20, 1e20}, {0.1, 0.2},   {-0., 0.}};
  int cases = 0, clamped = 0;
  for (const auto kind :
       {ox::philox::Kind::Uniform32, ox::philox::Kind::Uniform64, ox::philox::Kind::Normal})
    for (uint64_t seed : seeds)
      for (uint64_t first : firsts)
        for (const Range& r : ranges)
          for_each_storage([&]<class T>(DType dtype) {
            ox::RandomSpec spec{kind, seed, first, r.a, r.b};
            const int64_t n = 37;  // partial blocks at the end
            std::vector<unsigned char> cpu;
            ox::cpu::random(host_array(cpu, n, dtype), spec);
            const std::vector<unsigned char> ours = device_formula<T>(spec, n);
            ASSERT_EQ(cpu, ours) << "kind " << int(kind) << " seed " << seed << " first " << first
                                 << " [" << r.a << ", " << r.b << ") " << dtype;
            ++cases;
          });
  // Draws that rounding carries up to b take the largest value below b: many draws in the
  // dtypes and ranges where that happens often.
  for (const auto kind : {ox::philox::Kind::Uniform32, ox::philox::Kind::Uniform64})
    for (const Range& r : {Range{0, 1}, Range{1, 2}, Range{-1, 0}, Range{0, 1e-30}})
      for_each_storage([&]<class T>(DType dtype) {
        ox::RandomSpec spec{kind, 7, 11, r.a, r.b};
        const int64_t n = 20000;
        std::vector<unsigned char> cpu;
        ox::cpu::random(host_array(cpu, n, dtype), spec);
        const std::vector<unsigned char> ours = device_formula<T>(spec, n);
        ASSERT_EQ(cpu, ours) << "kind " << int(kind) << " [" << r.a << ", " << r.b << ") " << dtype;
        const T top = rng::largest_below<T>(r.b);
        for (int64_t i = 0; i < n; ++i)
          clamped += std::memcmp(ours.data() + size_t(i) * sizeof(T), &top, sizeof(T)) == 0;
      });
  EXPECT_GT(cases, 2000);
  EXPECT_GT(clamped, 0) << "no draw reached the largest value below b";
}

TEST(CudaRandomValues, IntegerMatchesTheCpuBitForBit) {
  struct IntRange {
    int64_t low;
    uint64_t range;
  };
  const IntRange ranges[] = {{0, 1},
                             {0, 2},
                             {-5, 10},
                             {0, 256},
                             {-128, 256},
                             {0, 1000003},
                             {INT64_MIN, ~0ull},
                             {-3, uint64_t(1) << 40},
                             {1000, 7},
                             {0, uint64_t(1) << 63}};
  for (uint64_t seed : {0ull, 9ull, 0xFEEDFACEull, ~0ull})
    for (uint64_t first : {0ull, 1ull, 0xFFFFFFFFull, ~0ull - 100})
      for (const IntRange& r : ranges)
        for_each_storage([&]<class T>(DType dtype) {
          ox::RandomSpec spec{ox::philox::Kind::Integer, seed, first};
          spec.low = r.low;
          spec.range = r.range;
          const int64_t n = 41;
          std::vector<unsigned char> cpu;
          ox::cpu::random(host_array(cpu, n, dtype), spec);
          ASSERT_EQ(cpu, device_formula<T>(spec, n))
              << "seed " << seed << " first " << first << " low " << r.low << " range " << r.range
              << " " << dtype;
        });
}

TEST(CudaRandomValues, BernoulliMatchesTheCpuBitForBit) {
  const double ps[] = {0, 1, 0.5, 1e-9, 0.999999, 0.25, 0.3};
  for (uint64_t seed : {0ull, 5ull, 0xABCDEF0123ull})
    for (uint64_t first : {0ull, 77ull, 0xFFFFFFFFull})
      for (const DType pdt : {ox::kF32, ox::kF64, ox::kF16, ox::kBF16})
        for_each_storage([&]<class T>(DType dtype) {
          const int64_t n = 43;
          // p of dst's shape: cycling through ps, stored as pdt.
          std::vector<double> pd(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) pd[size_t(i)] = ps[size_t(i) % std::size(ps)];
          std::vector<unsigned char> pbytes(size_t(n) * ox::dtype_size(pdt));
          std::vector<double> p_as_stored(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) {
            double stored = pd[size_t(i)];
            unsigned char* at = pbytes.data() + size_t(i) * ox::dtype_size(pdt);
            if (pdt == ox::kF32) {
              const float v = float(stored);
              std::memcpy(at, &v, 4);
              stored = v;
            } else if (pdt == ox::kF64) {
              std::memcpy(at, &stored, 8);
            } else if (pdt == ox::kF16) {
              const rng::F16 v{ox::detail::float_to_half_bits(float(stored))};
              std::memcpy(at, &v, 2);
              stored = rng::to_double(v);
            } else {
              const rng::BF16 v{ox::detail::float_to_bfloat16_bits(float(stored))};
              std::memcpy(at, &v, 2);
              stored = rng::to_double(v);
            }
            p_as_stored[size_t(i)] = stored;
          }
          for (const bool one_p : {false, true}) {
            const int64_t np = one_p ? 1 : n;
            const ox::StridedArray p{pbytes.data(), {np}, {1}, pdt, ox::Device::cpu()};
            std::vector<unsigned char> cpu;
            ox::cpu::bernoulli(host_array(cpu, n, dtype), p, seed, first, -1);
            std::vector<unsigned char> ours(size_t(n) * sizeof(T));
            for (int64_t i = 0; i < n; ++i) {
              const ox::philox::Block blk = ox::philox::block(seed, first + uint64_t(i / 4));
              const T v =
                  rng::bernoulli_value<T>(blk, int(i % 4), p_as_stored[size_t(one_p ? 0 : i)]);
              std::memcpy(ours.data() + size_t(i) * sizeof(T), &v, sizeof(T));
            }
            ASSERT_EQ(cpu, ours) << "seed " << seed << " first " << first << " p " << pdt << " dst "
                                 << dtype << " one_p " << one_p;
          }
        });
}

TEST(CudaRandomValues, ProbabilityCheckAcceptsWhatTheCpuAccepts) {
  for (double p : {0.0, -0.0, 1.0, 0.5, 1e-300}) EXPECT_TRUE(rng::probability_ok(p)) << p;
  for (double p : {-1e-300, 1.0000001, std::nan(""), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()})
    EXPECT_FALSE(rng::probability_ok(p)) << p;
}

TEST(CudaRandomValues, LargestBelowStepsDownLikeNextafter) {
  for (double to : {1.0, 2.0, 0.0, -0.0, -1.0, 1e-30, 1e300, -1e300, 0.1,
                    std::numeric_limits<double>::infinity()}) {
    const float f = float(to);
    const float want_f = double(f) < to ? f : std::nextafter(f, -INFINITY);
    const float got_f = rng::largest_below<float>(to);
    EXPECT_EQ(std::memcmp(&want_f, &got_f, 4), 0) << to;
    const double want_d = std::nextafter(to, -INFINITY);
    const double got_d = rng::largest_below<double>(to);
    EXPECT_EQ(std::memcmp(&want_d, &got_d, 8), 0) << to;
  }
}

TEST(CudaRandomValues, RandpermMatchesTheCpuFisherYates) {
  // The shuffle kernel's loop with its swap partners, on the host: cpu::randperm's permutation.
  for (uint64_t seed : {0ull, 3ull, 0x5EEDull})
    for (uint64_t first : {0ull, 12345ull})
      for (int64_t n : {1, 2, 7, 300}) {
        std::vector<int64_t> cpu(size_t(n), -1);
        ox::cpu::randperm({cpu.data(), {n}, {1}, ox::kI64, ox::Device::cpu()}, seed, first);
        std::vector<int64_t> ours(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ours[size_t(i)] = rng::from_int64<int64_t>(i);
        for (int64_t i = n - 1; i > 0; --i)
          std::swap(ours[size_t(i)], ours[size_t(rng::shuffle_partner(seed, first, i))]);
        EXPECT_EQ(cpu, ours) << "seed " << seed << " n " << n;
      }
}

}  // namespace
