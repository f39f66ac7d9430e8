// The CUDA indexing and sorting launchers' host logic, on the CPU (backend/cuda/index.cpp,
// sort.cpp, radix.cpp and kernels/index_plan.cuh): the sort keys against the CPU sort's order
// for every dtype, the radix sort's plan and its per-tile ranking simulated against
// std::stable_sort, the gather/scatter layouts and scatter's key range simulated against the
// CPU backend, nonzero's tiles, and that every kernel the launchers name is in the embedded PTX.
// The kernels themselves run in scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/driver.h"
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/index_plan.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/module.h"
#include "backend/cuda_ptx.h"
#include "backend/kernel_check.h"
#include "oxmera/cuda.h"

namespace {

namespace k = ox::cuda::kernels;
using ox::DType;
using ox::Shape;
using ox::StridedArray;
using ox::Strides;

ox::Backend& cpu() { return ox::backend_for(ox::DeviceType::CPU, "test"); }

StridedArray array(void* data, Shape shape, Strides strides, DType dt) {
  return StridedArray{data, std::move(shape), std::move(strides), dt, ox::Device::cpu()};
}

// ---- Sort keys --------------------------------------------------------------------------------

// kernels/sort.cu's sort_key on the element at p.
uint64_t key_of(DType dt, const void* p) {
  uint64_t b = 0;
  std::memcpy(&b, p, ox::dtype_size(dt));
  switch (dt) {
    case ox::kF32:
      return k::f32_key(uint32_t(b));
    case ox::kF64:
      return k::f64_key(b);
    case ox::kF16:
      return k::f16_key(uint16_t(b));
    case ox::kBF16:
      return k::bf16_key(uint16_t(b));
    case ox::kI64:
      return k::int_key(int64_t(b));
    case ox::kI32:
      return k::int_key(int32_t(uint32_t(b)));
    case ox::kI16:
      return k::int_key(int16_t(uint16_t(b)));
    case ox::kI8:
      return k::int_key(int8_t(uint8_t(b)));
    case ox::kU8:
      return k::int_key(uint8_t(b));
    default:
      return k::int_key(b != 0);
  }
}

bool is_nan_of(DType dt, const void* p) {
  return ox::is_floating(dt) && key_of(dt, p) == k::max_sort_key(int(ox::dtype_size(dt)), false);
}

// Values of dtype dt (raw bytes): specials, a small pool (ties) and random bit patterns.
std::vector<uint8_t> sample_values(DType dt, int64_t n, std::mt19937_64& rng) {
  const size_t w = ox::dtype_size(dt);
  std::vector<uint64_t> pool;
  auto add_double = [&](double v) {
    uint64_t b = 0;
    if (dt == ox::kF64) {
      std::memcpy(&b, &v, 8);
    } else if (dt == ox::kF32) {
      const float f = float(v);
      std::memcpy(&b, &f, 4);
    } else if (dt == ox::kF16) {
      b = ox::detail::float_to_half_bits(float(v));
    } else if (dt == ox::kBF16) {
      b = ox::detail::float_to_bfloat16_bits(float(v));
    }
    pool.push_back(b);
  };
  if (ox::is_floating(dt)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (double v : {0.0,   -0.0,   1.0,    -1.0,    2.5,  -2.5,    inf,    -inf,    nan,   -nan,
                     1e-40, -1e-40, 5e-324, -5e-324, 1e-8, 65504.0, 3.0e38, -3.0e38, 1e300, -1e300})
      add_double(v);
    // A NaN with another payload, and one with the sign set.
    const uint64_t top = uint64_t(1) << (8 * w - 1);
    const uint64_t inf_bits = dt == ox::kF16    ? k::kInfF16
                              : dt == ox::kBF16 ? k::kInfBF16
                              : dt == ox::kF32  ? k::kInfF32
                                                : k::kInfF64;
    pool.push_back(inf_bits | 1);
    pool.push_back(top | inf_bits | 3);
  } else {
    for (int64_t v : {0, 1, -1, 2, -2, 127, -128, 100, 255})
      pool.push_back(uint64_t(v) & k::key_mask(int(w)));
    pool.push_back(uint64_t(1) << (8 * w - 1));  // the minimum
    pool.push_back(k::key_mask(int(w)) >> 1);    // the maximum
  }
  std::vector<uint8_t> out(size_t(n) * w);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t b = (rng() % 3 == 0) ? rng() : pool[rng() % pool.size()];
    if (dt == ox::kBool) b &= 1;
    std::memcpy(out.data() + size_t(i) * w, &b, w);
  }
  return out;
}

const DType kAll[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16, ox::kI64,
                      ox::kI32, ox::kI16, ox::kI8,  ox::kU8,   ox::kBool};

// sort.cpp's sequence on the host: keys (xor flip) with flat payloads, a stable sort by key,
// a stable sort by row, then the first m positions (or k), or the row's first NaN.
std::vector<int64_t> simulated_sort(DType dt, const std::vector<uint8_t>& src, int64_t rows,
                                    int64_t n, int64_t m, const ox::SortParams& p) {
  const size_t w = ox::dtype_size(dt);
  const uint64_t max_key = k::max_sort_key(int(w), dt == ox::kBool);
  const uint64_t flip = p.descending ? max_key : 0;
  std::vector<std::pair<uint64_t, int64_t>> items;
  for (int64_t i = 0; i < rows * n; ++i) {
    const uint64_t key = key_of(dt, src.data() + size_t(i) * w) ^ flip;
    EXPECT_LE(key, max_key);
    items.push_back({key, i});
  }
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(items.begin(), items.end(), by_key);
  for (auto& it : items) it.first = uint64_t(it.second / n);
  std::stable_sort(items.begin(), items.end(), by_key);
  std::vector<int64_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first_nan = n;
    if (p.select && p.nan_wins)
      for (int64_t j = n - 1; j >= 0; --j)
        if (is_nan_of(dt, src.data() + size_t(r * n + j) * w)) first_nan = j;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t at = p.select ? p.k : j;
      int64_t idx = items[size_t(r * n + at)].second - r * n;
      if (first_nan < n) idx = first_nan;
      out.push_back(idx);
    }
  }
  return out;
}

TEST(CudaIndex, SortKeysOrderAsTheCpuSort) {
  std::mt19937_64 rng(7);
  for (DType dt : kAll) {
    const int64_t rows = 3, n = 300;
    const std::vector<uint8_t> src = sample_values(dt, rows * n, rng);
    for (bool descending : {false, true}) {
      for (int64_t m : {n, int64_t(17)}) {
        ox::SortParams p;
        p.descending = descending;
        std::vector<uint8_t> values(size_t(rows * m) * ox::dtype_size(dt));
        std::vector<int64_t> indices(size_t(rows * m));
        std::vector<uint8_t> input = src;
        cpu().sort(array(values.data(), {rows, m}, {m, 1}, dt),
                   array(indices.data(), {rows, m}, {m, 1}, ox::kI64),
                   array(input.data(), {rows, n}, {n, 1}, dt), p);
        EXPECT_EQ(simulated_sort(dt, src, rows, n, m, p), indices)
            << dt << " descending " << descending << " m " << m;
      }
    }
  }
}

TEST(CudaIndex, SortSelectAndNanWinsAsTheCpu) {
  std::mt19937_64 rng(11);
  for (DType dt : kAll) {
    const int64_t rows = 5, n = 40;
    std::vector<uint8_t> src = sample_values(dt, rows * n, rng);
    for (bool nan_wins : {false, true}) {
      for (int64_t kth : {int64_t(0), int64_t(13), n - 1}) {
        ox::SortParams p;
        p.select = true;
        p.k = kth;
        p.nan_wins = nan_wins;
        std::vector<int64_t> indices(static_cast<size_t>(rows));
        cpu().sort(array(nullptr, {rows, 1}, {1, 1}, dt),
                   array(indices.data(), {rows, 1}, {1, 1}, ox::kI64),
                   array(src.data(), {rows, n}, {n, 1}, dt), p);
        EXPECT_EQ(simulated_sort(dt, src, rows, n, 1, p), indices)
            << dt << " k " << kth << " nan_wins " << nan_wins;
      }
    }
  }
}

TEST(CudaIndex, KeysOfSpecialFloats) {
  // NaNs of any sign and payload share the largest key; -0 keys as +0; -inf below every number.
  EXPECT_EQ(k::f32_key(0x7fc00000u), 0xffffffffu);
  EXPECT_EQ(k::f32_key(0xffc00001u), 0xffffffffu);
  EXPECT_EQ(k::f32_key(0x80000000u), k::f32_key(0u));
  EXPECT_LT(k::f32_key(0xff800000u), k::f32_key(0xff7fffffu));  // -inf < -max
  EXPECT_LT(k::f32_key(0x7f800000u), k::f32_key(0x7fc00000u));  // inf < NaN
  EXPECT_LT(k::f16_key(0x8001), k::f16_key(0x0000));            // -denormal < 0
  EXPECT_EQ(k::f16_key(0xfe00), 0xffffu);
  EXPECT_EQ(k::int_key(int8_t(-128)), 0u);
  EXPECT_EQ(k::int_key(int8_t(127)), 0xffu);
  EXPECT_EQ(k::int_key(int64_t(-1)), 0x7fffffffffffffffu);
}

// ---- Radix sort --------------------------------------------------------------------------------

TEST(CudaIndex, RadixPlanCoversEveryItemWithFewTiles) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(2), int64_t(255), int64_t(4096), int64_t(4097),
                    int64_t(1) << 28, (int64_t(1) << 33) + 5}) {
    const k::RadixPlan p = k::radix_plan(n, ~uint64_t(0));
    EXPECT_EQ(p.tile_items % k::kRadixThreads, 0);
    EXPECT_GE(p.tile_items, 16 * k::kRadixThreads);
    EXPECT_LE(p.tiles, k::kRadixMaxTiles);
    EXPECT_GE(p.tiles * p.tile_items, n);
    if (n > 0) {
      EXPECT_LT((p.tiles - 1) * p.tile_items, n);
    }
    EXPECT_EQ(p.passes, n > 1 ? 8 : 0);
  }
  EXPECT_EQ(k::radix_plan(100, 0).passes, 0);
  EXPECT_EQ(k::radix_plan(100, 1).passes, 1);
  EXPECT_EQ(k::radix_plan(100, 255).passes, 1);
  EXPECT_EQ(k::radix_plan(100, 256).passes, 2);
  EXPECT_EQ(k::radix_plan(100, 0xffffffffu).passes, 4);
  EXPECT_EQ(k::radix_plan(100, 0x100000000u).passes, 5);
  EXPECT_EQ(k::radix_digit(0x1234567890abcdefu, 0), 0xef);
  EXPECT_EQ(k::radix_digit(0x1234567890abcdefu, 7), 0x12);
}

// The kernels' sequence (sort.cu: hist, scan, scatter with per-warp ranks) on the host.
void simulated_radix(std::vector<uint64_t>& keys, std::vector<int64_t>& vals, uint64_t max_key) {
  const int64_t n = int64_t(keys.size());
  const k::RadixPlan plan = k::radix_plan(n, max_key);
  std::vector<uint64_t> keys_out(keys.size());
  std::vector<int64_t> vals_out(vals.size());
  for (int pass = 0; pass < plan.passes; ++pass) {
    std::vector<int64_t> hist(size_t(k::kRadixThreads * plan.tiles), 0);
    for (int64_t t = 0; t < plan.tiles; ++t)
      for (int64_t i = t * plan.tile_items; i < std::min(n, (t + 1) * plan.tile_items); ++i)
        ++hist[size_t(k::radix_digit(keys[size_t(i)], pass) * plan.tiles + t)];
    int64_t sum = 0;
    for (int64_t& h : hist) {
      const int64_t c = h;
      h = sum;
      sum += c;
    }
    for (int64_t t = 0; t < plan.tiles; ++t) {
      std::vector<int64_t> base(k::kRadixThreads);
      for (int d = 0; d < k::kRadixThreads; ++d) base[size_t(d)] = hist[size_t(d * plan.tiles + t)];
      const int64_t end = std::min(n, (t + 1) * plan.tile_items);
      for (int64_t c = t * plan.tile_items; c < end; c += k::kRadixThreads) {
        int warp_count[8][256] = {};
        int rank[256];
        for (int th = 0; th < k::kRadixThreads && c + th < end; ++th) {
          const int d = k::radix_digit(keys[size_t(c + th)], pass);
          rank[th] = 0;
          for (int lane = (th / 32) * 32; lane < th; ++lane)
            rank[th] += k::radix_digit(keys[size_t(c + lane)], pass) == d;
          ++warp_count[th / 32][d];
        }
        for (int th = 0; th < k::kRadixThreads && c + th < end; ++th) {
          const int d = k::radix_digit(keys[size_t(c + th)], pass);
          int64_t at = base[size_t(d)] + rank[th];
          for (int w = 0; w < th / 32; ++w) at += warp_count[w][d];
          keys_out[size_t(at)] = keys[size_t(c + th)];
          vals_out[size_t(at)] = vals[size_t(c + th)];
        }
        for (int d = 0; d < k::kRadixThreads; ++d)
          for (int w = 0; w < 8; ++w) base[size_t(d)] += warp_count[w][d];
      }
    }
    keys.swap(keys_out);
    vals.swap(vals_out);
  }
}

TEST(CudaIndex, RadixSortSimulationIsStable) {
  std::mt19937_64 rng(3);
  for (int64_t n : {0, 1, 2, 255, 256, 257, 5000, 70001}) {
    for (uint64_t max_key : {uint64_t(0), uint64_t(1), uint64_t(255), uint64_t(256),
                             uint64_t(1) << 40, ~uint64_t(0)}) {
      std::vector<uint64_t> keys(static_cast<size_t>(n));
      std::vector<int64_t> vals(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        keys[size_t(i)] = max_key == ~uint64_t(0) ? rng() : rng() % (max_key + 1);
        if (rng() % 4 == 0) keys[size_t(i)] = max_key;  // many ties
        vals[size_t(i)] = i;
      }
      std::vector<std::pair<uint64_t, int64_t>> want;
      for (int64_t i = 0; i < n; ++i) want.push_back({keys[size_t(i)], i});
      std::stable_sort(want.begin(), want.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      simulated_radix(keys, vals, max_key);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(keys[size_t(i)], want[size_t(i)].first) << n << " " << max_key << " at " << i;
        ASSERT_EQ(vals[size_t(i)], want[size_t(i)].second) << n << " " << max_key << " at " << i;
      }
    }
  }
}

// ---- Gather and scatter --------------------------------------------------------------------

int64_t naive_offset(const Shape& shape, const Strides& strides, int64_t i) {
  int64_t offset = 0;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    offset += (i % shape[size_t(d)]) * strides[size_t(d)];
    i /= shape[size_t(d)];
  }
  return offset;
}

TEST(CudaIndex, MergeOffsetsMatchesTheDefinition) {
  const Shape shape{2, 1, 3, 4, 5};
  const Strides a{60, 60, 20, 5, 1}, b{0, 7, 0, -2, 1}, zero{0, 0, 0, 0, 0};
  const int64_t* strides[3] = {a.data(), b.data(), zero.data()};
  k::Offsets<3> o;
  ASSERT_TRUE(k::merge_offsets<3>(5, shape.data(), strides, o));
  for (int64_t i = 0; i < 120; ++i) {
    int64_t got[3];
    o.get(i, got);
    EXPECT_EQ(got[0], naive_offset(shape, a, i));
    EXPECT_EQ(got[1], naive_offset(shape, b, i));
    EXPECT_EQ(got[2], 0);
  }
  k::Offsets<1> one;  // a 0-d iteration: one element at offset 0
  const int64_t* none[1] = {nullptr};
  ASSERT_TRUE(k::merge_offsets<1>(0, nullptr, none, one));
  EXPECT_EQ(one.ndim, 0);
  Shape many;  // 30 dims that cannot merge
  Strides s;
  for (int d = 0; d < 30; ++d) {
    many.push_back(2);
    s.push_back(int64_t(1) << (2 * (29 - d)));
  }
  const int64_t* sp[1] = {s.data()};
  EXPECT_FALSE(k::merge_offsets<1>(30, many.data(), sp, one));
}

// A case of two index operands (advanced indexing, one with wrap and negatives, broadcast
// along a dim): dst [4, 3, 5] indexed in dims 0 and 2, the iteration [6, 3] (B = 6 index
// pairs, then dim 1).
struct TwoIndexCase {
  std::vector<int64_t> i0{0, -1, 3, 0, 2, -4}, i1{4, 0, 4, 4, 1, 0};
  Shape shape{6, 3};
  ox::IndexOperand op0, op1;
  TwoIndexCase() {
    op0 = {array(i0.data(), shape, {1, 0}, ox::kI64), 4, 15, true, -1};
    op1 = {array(i1.data(), shape, {1, 0}, ox::kI64), 5, 1, false, -1};
  }
};

// index.cpp's scatter on the host: layout (dst, indices), keys offset - low, a stable sort,
// then each run applied in order with `apply`.
template <class T, class Apply>
void simulated_scatter(T* dst, const T* src, const Shape& shape, const Strides& dst_strides,
                       const Strides& src_strides, const std::vector<ox::IndexOperand>& idx,
                       Apply apply) {
  const int K = int(idx.size());
  std::vector<const int64_t*> strides{dst_strides.data()};
  for (const auto& op : idx) strides.push_back(op.index.strides.data());
  const std::vector<int64_t> zeros(shape.size(), 0);
  while (strides.size() < 9) strides.push_back(zeros.data());
  k::Offsets<9> layout;
  ASSERT_TRUE(k::merge_offsets<9>(int(shape.size()), shape.data(), strides.data(), layout));
  k::IndexArgs<8> args;
  args.count = K;
  int64_t sizes[8], istr[8];
  for (int j = 0; j < K; ++j) {
    args.data[j] = idx[size_t(j)].index.data;
    args.size[j] = sizes[j] = idx[size_t(j)].size;
    args.stride[j] = istr[j] = idx[size_t(j)].stride;
    args.low[j] = idx[size_t(j)].wrap ? -sizes[j] : 0;
  }
  int64_t low = 0, high = 0;
  k::destination_range(int(shape.size()), shape.data(), dst_strides.data(), K, sizes, istr, low,
                       high);
  int64_t count = 1;
  for (int64_t s : shape) count *= s;
  std::vector<std::pair<uint64_t, int64_t>> items;
  for (int64_t i = 0; i < count; ++i) {
    int64_t off[9];
    layout.get(i, off);
    int64_t moved = 0;
    bool ok = true;
    for (int j = 0; j < K; ++j) {
      const int64_t v = static_cast<const int64_t*>(args.data[j])[off[1 + j]];
      ok = k::index_step(v, args.low[j], args.size[j], args.stride[j], moved) && ok;
    }
    ASSERT_TRUE(ok);
    const int64_t key = off[0] + moved - low;
    ASSERT_GE(key, 0);
    ASSERT_LE(key, high - low);
    items.push_back({uint64_t(key), i});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, i] : items)
    apply(dst[int64_t(key) + low], src[naive_offset(shape, src_strides, i)]);
}

TEST(CudaIndex, ScatterOrderAndKeysAsTheCpu) {
  TwoIndexCase c;
  // dst [4, 3, 5] contiguous, restrided to the iteration: stride 0 along B, 5 along dim 1.
  const Strides dst_strides{0, 5};
  const Strides src_strides{3, 1};
  std::vector<float> src(18);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (i % 2 ? 1.0f : 3.0e7f) * float(i + 1);
  for (ox::ScatterReduce reduce : {ox::ScatterReduce::Assign, ox::ScatterReduce::Sum}) {
    std::vector<float> want(60), got(60);
    for (size_t i = 0; i < 60; ++i) want[i] = got[i] = float(i) * 0.37f;
    cpu().scatter(array(want.data(), c.shape, dst_strides, ox::kF32),
                  array(src.data(), c.shape, src_strides, ox::kF32), {c.op0, c.op1}, reduce);
    simulated_scatter(got.data(), src.data(), c.shape, dst_strides, src_strides, {c.op0, c.op1},
                      [&](float& d, float s) { d = reduce == ox::ScatterReduce::Sum ? d + s : s; });
    EXPECT_EQ(got, want) << int(reduce);
  }
}

TEST(CudaIndex, ScatterAlongADimWithNegativeStridesAsTheCpu) {
  // torch.scatter_add along dim 0 of dst [5, 4] viewed with a reversed dim 1; index [3, 4].
  std::vector<int64_t> index{4, 0, 1, 4, 4, 4, 1, 0, 2, 4, 1, 4};
  std::vector<int64_t> src(12), base(20);
  for (int i = 0; i < 12; ++i) src[size_t(i)] = int64_t(1) << (3 * i);
  for (int i = 0; i < 20; ++i) base[size_t(i)] = 1000 + i;
  const Shape shape{3, 4};
  const ox::IndexOperand op{array(index.data(), shape, {4, 1}, ox::kI64), 5, 4, false, -1};
  std::vector<int64_t> want = base, got = base;
  const Strides dst_strides{0, -1}, src_strides{4, 1};
  cpu().scatter(array(want.data() + 3, shape, dst_strides, ox::kI64),
                array(src.data(), shape, src_strides, ox::kI64), {op}, ox::ScatterReduce::Assign);
  simulated_scatter(got.data() + 3, src.data(), shape, dst_strides, src_strides, {op},
                    [](int64_t& d, int64_t s) { d = s; });
  EXPECT_EQ(got, want);
}

TEST(CudaIndex, GatherLayoutAsTheCpu) {
  TwoIndexCase c;
  std::vector<int64_t> src(60), want(18, -7), got(18, -7);
  for (int i = 0; i < 60; ++i) src[size_t(i)] = 3 * i + 1;
  const Strides dst_strides{3, 1}, src_strides{0, 5};
  cpu().gather(array(want.data(), c.shape, dst_strides, ox::kI64),
               array(src.data(), c.shape, src_strides, ox::kI64), {c.op0, c.op1});
  // index.cu's gather on the host.
  const Strides zeros{0, 0};
  const int64_t* strides[10] = {dst_strides.data(), src_strides.data(), c.op0.index.strides.data(),
                                c.op1.index.strides.data()};
  for (int j = 4; j < 10; ++j) strides[j] = zeros.data();
  k::Offsets<10> layout;
  ASSERT_TRUE(k::merge_offsets<10>(2, c.shape.data(), strides, layout));
  const ox::IndexOperand* ops[2] = {&c.op0, &c.op1};
  for (int64_t i = 0; i < 18; ++i) {
    int64_t off[10];
    layout.get(i, off);
    int64_t moved = 0;
    for (int j = 0; j < 2; ++j) {
      const int64_t v = static_cast<const int64_t*>(ops[j]->index.data)[off[2 + j]];
      ASSERT_TRUE(
          k::index_step(v, ops[j]->wrap ? -ops[j]->size : 0, ops[j]->size, ops[j]->stride, moved));
    }
    got[size_t(off[0])] = src[size_t(off[1] + moved)];
  }
  EXPECT_EQ(got, want);
  int64_t moved = 0;
  EXPECT_FALSE(k::index_step(-5, -4, 4, 1, moved));
  EXPECT_FALSE(k::index_step(4, -4, 4, 1, moved));
  EXPECT_FALSE(k::index_step(-1, 0, 4, 1, moved));
  EXPECT_EQ(moved, 0);
  EXPECT_TRUE(k::index_step(-1, -4, 4, 10, moved));
  EXPECT_EQ(moved, 30);
}

TEST(CudaIndex, DestinationRangeBoundsEveryOffset) {
  const Shape shape{3, 4};
  const Strides strides{-7, 2};
  const int64_t sizes[2] = {5, 0}, istr[2] = {-3, 100};
  int64_t low = 0, high = 0;
  k::destination_range(2, shape.data(), strides.data(), 2, sizes, istr, low, high);
  EXPECT_EQ(low, -14 - 12);
  EXPECT_EQ(high, 6);
}

// ---- Nonzero ---------------------------------------------------------------------------------

TEST(CudaIndex, NonzeroTilesAndFloatTest) {
  for (int64_t n : {int64_t(1), int64_t(4096), int64_t(4097), int64_t(1) << 34}) {
    const int64_t tile = k::nonzero_tile(n);
    EXPECT_EQ(tile % k::kScanThreads, 0);
    EXPECT_LE((n + tile - 1) / tile, k::kRadixMaxTiles);
  }
  // index.cu tests floats' bits but the sign: as the CPU's x != 0 for every f16 value.
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[size_t(i)] = uint16_t(i);
  std::vector<bool> cpu_nonzero(65536);
  int64_t count = 0;
  for (int i = 0; i < 65536; ++i) {
    cpu_nonzero[size_t(i)] =
        ox::detail::half_bits_to_float(uint16_t(i)) != 0.0f ||
        ox::detail::half_bits_to_float(uint16_t(i)) != ox::detail::half_bits_to_float(uint16_t(i));
    count += cpu_nonzero[size_t(i)];
  }
  std::vector<int64_t> coords(static_cast<size_t>(count));
  cpu().nonzero(array(coords.data(), {count, 1}, {1, 1}, ox::kI64),
                array(all.data(), {65536}, {1}, ox::kF16));
  std::vector<int64_t> simulated;
  for (int i = 0; i < 65536; ++i)
    if ((uint16_t(i) & 0x7fff) != 0) simulated.push_back(i);
  EXPECT_EQ(simulated, coords);
}

// ---- Kernel names ------------------------------------------------------------------------------

TEST(CudaIndex, EveryLaunchedKernelIsInThePtx) {
  const std::vector<std::string> dtypes{"f32", "f64", "f16", "bf16", "i64",
                                        "i32", "i16", "i8",  "u8",   "bool"};
  const std::vector<std::string> widths{"w1", "w2", "w4", "w8"};
  std::vector<std::string> index{"ox_index_check_i64", "ox_index_check_i32", "ox_index_report_i64",
                                 "ox_index_report_i32"};
  for (const char* kk : {"1", "8"})
    for (const char* idt : {"i64", "i32"}) {
      for (const std::string& w : widths)
        index.push_back(std::string("ox_index_gather") + kk + "_" + w + "_" + idt);
      index.push_back(std::string("ox_index_scatter_keys") + kk + "_" + idt);
    }
  for (const char* op : {"sum", "prod", "amax", "amin"})
    for (const std::string& dt : dtypes)
      index.push_back(std::string("ox_index_scatter_") + op + "_" + dt);
  for (const std::string& w : widths) index.push_back("ox_index_scatter_assign_" + w);
  for (const char* kind : {"w1", "w2", "w4", "w8", "f2", "f4", "f8"}) {
    index.push_back(std::string("ox_index_nonzero_count_") + kind);
    index.push_back(std::string("ox_index_nonzero_write_") + kind);
  }
  std::vector<std::string> sort{"ox_sort_fill_u64",   "ox_sort_scan_block",    "ox_sort_scan_add",
                                "ox_sort_radix_hist", "ox_sort_radix_scatter", "ox_sort_row_keys"};
  for (const std::string& dt : dtypes) sort.push_back("ox_sort_keys_" + dt);
  for (const char* dt : {"f32", "f64", "f16", "bf16"})
    sort.push_back(std::string("ox_sort_first_nan_") + dt);
  for (const std::string& w : widths) sort.push_back("ox_sort_write_" + w);

  const std::set<std::string> in_index = oxtest::ptx_kernels("index"),
                              in_sort = oxtest::ptx_kernels("sort");
  for (const std::string& name : index) EXPECT_TRUE(in_index.count(name)) << name;
  for (const std::string& name : sort) EXPECT_TRUE(in_sort.count(name)) << name;
  EXPECT_EQ(in_index.size(), index.size());
  EXPECT_EQ(in_sort.size(), sort.size());
}

// ---- On a GPU: the CUDA primitives against the CPU's, bit for bit ----------------------------

class CudaIndexOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ox::cuda::is_available())
      GTEST_SKIP() << "no usable CUDA device: " << ox::cuda::unavailable_reason();
  }
  void TearDown() override {
    for (CUdeviceptr p : owned_) ox::cuda::detail::driver().cuMemFree(p);
  }
  ox::Backend& gpu() { return ox::backend_for(ox::Device(ox::DeviceType::CUDA, 0), "test"); }

  // A device copy of `bytes`; `at` bytes in, as the array's element [0, ...].
  void* upload(const std::vector<uint8_t>& bytes, size_t at = 0) {
    namespace cd = ox::cuda::detail;
    const cd::Driver& d = cd::driver();
    cd::set_device(0);
    CUdeviceptr p = 0;
    cd::check(d.cuMemAlloc(&p, std::max<size_t>(bytes.size(), 8)), "cuMemAlloc");
    owned_.push_back(p);
    if (!bytes.empty())
      cd::check(d.cuMemcpyHtoDAsync(p, bytes.data(), bytes.size(), nullptr), "cuMemcpyHtoDAsync");
    cd::check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    return reinterpret_cast<char*>(p) + at;
  }
  std::vector<uint8_t> download(const void* p, size_t at, size_t nbytes) {
    namespace cd = ox::cuda::detail;
    gpu().synchronize(0);
    std::vector<uint8_t> out(nbytes);
    cd::check(
        cd::driver().cuMemcpyDtoH(
            out.data(), reinterpret_cast<CUdeviceptr>(static_cast<const char*>(p) - at), nbytes),
        "cuMemcpyDtoH");
    return out;
  }
  template <class T>
  static std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  static StridedArray on_device(void* data, const StridedArray& a) {
    StridedArray d = a;
    d.data = data;
    d.device = ox::Device(ox::DeviceType::CUDA, 0);
    return d;
  }

 private:
  std::vector<CUdeviceptr> owned_;
};

// Bit for bit, except that arithmetic giving NaN may give another NaN (the GPU's is canonical).
bool same_values(DType dt, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  const size_t w = ox::dtype_size(dt);
  for (size_t i = 0; i < a.size(); i += w)
    if (std::memcmp(a.data() + i, b.data() + i, w) != 0 &&
        !(is_nan_of(dt, a.data() + i) && is_nan_of(dt, b.data() + i)))
      return false;
  return true;
}

TEST_F(CudaIndexOnDevice, SortAsTheCpu) {
  std::mt19937_64 rng(5);
  for (DType dt : kAll) {
    const size_t w = ox::dtype_size(dt);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(300), int64_t(5000)}) {
      const int64_t rows = 3;
      const std::vector<uint8_t> src = sample_values(dt, rows * n, rng);
      struct Case {
        int64_t m;
        ox::SortParams p;
      };
      std::vector<Case> cases;
      for (bool desc : {false, true}) {
        ox::SortParams p;
        p.descending = desc;
        cases.push_back({n, p});
        cases.push_back({std::max<int64_t>(1, n / 3), p});
        p.select = true;
        p.k = n / 2;
        cases.push_back({1, p});
        p.nan_wins = true;
        cases.push_back({1, p});
      }
      for (const Case& c : cases) {
        for (bool transposed : {false, true}) {  // src [rows, n] stored as [n, rows]
          const Strides ss = transposed ? Strides{1, rows} : Strides{n, 1};
          std::vector<uint8_t> laid(src.size());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j)
              std::memcpy(laid.data() + size_t(r * ss[0] + j * ss[1]) * w,
                          src.data() + size_t(r * n + j) * w, w);
          const int64_t m = c.m;
          std::vector<uint8_t> want_v(size_t(rows * m) * w), want_i(size_t(rows * m) * 8);
          cpu().sort(array(want_v.data(), {rows, m}, {m, 1}, dt),
                     array(want_i.data(), {rows, m}, {m, 1}, ox::kI64),
                     array(laid.data(), {rows, n}, ss, dt), c.p);
          void* ds = upload(laid);
          void* dv = upload(std::vector<uint8_t>(want_v.size(), 0xab));
          void* di = upload(std::vector<uint8_t>(want_i.size(), 0xab));
          gpu().sort(on_device(dv, array(nullptr, {rows, m}, {m, 1}, dt)),
                     on_device(di, array(nullptr, {rows, m}, {m, 1}, ox::kI64)),
                     on_device(ds, array(nullptr, {rows, n}, ss, dt)), c.p);
          const std::string what =
              std::string(ox::dtype_name(dt)) + " n " + std::to_string(n) + " m " +
              std::to_string(m) + " desc " + std::to_string(c.p.descending) + " select " +
              std::to_string(c.p.select) + " nan_wins " + std::to_string(c.p.nan_wins) +
              " transposed " + std::to_string(transposed);
          EXPECT_EQ(download(di, 0, want_i.size()), want_i) << what;
          EXPECT_EQ(download(dv, 0, want_v.size()), want_v) << what;
        }
      }
    }
  }
}

TEST_F(CudaIndexOnDevice, GatherAndScatterAsTheCpu) {
  TwoIndexCase c;
  std::vector<int64_t> i0 = c.i0, i1 = c.i1;
  void* d0 = upload(bytes_of(i0));
  void* d1 = upload(bytes_of(i1));
  ox::IndexOperand g0 = c.op0, g1 = c.op1;
  g0.index = on_device(d0, c.op0.index);
  g1.index = on_device(d1, c.op1.index);
  std::mt19937_64 rng(9);
  for (DType dt : kAll) {
    const size_t w = ox::dtype_size(dt);
    std::vector<uint8_t> base = sample_values(dt, 60, rng), src = sample_values(dt, 18, rng);
    // Gather: dst [6, 3] from base [4, 3, 5].
    {
      std::vector<uint8_t> want(18 * w, 0);
      cpu().gather(array(want.data(), c.shape, {3, 1}, dt), array(base.data(), c.shape, {0, 5}, dt),
                   {c.op0, c.op1});
      void* db = upload(base);
      void* dd = upload(std::vector<uint8_t>(want.size(), 0));
      gpu().gather(on_device(dd, array(nullptr, c.shape, {3, 1}, dt)),
                   on_device(db, array(nullptr, c.shape, {0, 5}, dt)), {g0, g1});
      EXPECT_EQ(download(dd, 0, want.size()), want) << "gather " << dt;
    }
    for (ox::ScatterReduce reduce :
         {ox::ScatterReduce::Assign, ox::ScatterReduce::Sum, ox::ScatterReduce::Prod,
          ox::ScatterReduce::Amax, ox::ScatterReduce::Amin}) {
      std::vector<uint8_t> want = base;
      cpu().scatter(array(want.data(), c.shape, {0, 5}, dt), array(src.data(), c.shape, {3, 1}, dt),
                    {c.op0, c.op1}, reduce);
      void* dd = upload(base);
      void* ds = upload(src);
      gpu().scatter(on_device(dd, array(nullptr, c.shape, {0, 5}, dt)),
                    on_device(ds, array(nullptr, c.shape, {3, 1}, dt)), {g0, g1}, reduce);
      EXPECT_TRUE(same_values(dt, download(dd, 0, want.size()), want))
          << "scatter " << dt << " " << int(reduce);
    }
  }
  // Many updates meeting at few elements, one i32 index, a reversed destination dim.
  const int64_t n = 20000;
  std::vector<int32_t> index(static_cast<size_t>(n));
  std::vector<float> src(static_cast<size_t>(n)), base(7, 0.5f);
  for (int64_t i = 0; i < n; ++i) {
    index[size_t(i)] = int32_t(rng() % 7) - (i % 2 ? 7 : 0);
    src[size_t(i)] = float(rng() % 1000) * (i % 3 ? 1e-3f : 1e5f);
  }
  const ox::IndexOperand op{array(index.data(), {n}, {1}, ox::kI32), 7, -1, true, -1};
  for (ox::ScatterReduce reduce : {ox::ScatterReduce::Assign, ox::ScatterReduce::Sum}) {
    std::vector<float> want = base;
    cpu().scatter(array(want.data() + 6, {n}, {0}, ox::kF32), array(src.data(), {n}, {1}, ox::kF32),
                  {op}, reduce);
    void* dd = upload(bytes_of(base), 24);
    ox::IndexOperand dop = op;
    dop.index = on_device(upload(bytes_of(index)), op.index);
    gpu().scatter(on_device(dd, array(nullptr, {n}, {0}, ox::kF32)),
                  on_device(upload(bytes_of(src)), array(nullptr, {n}, {1}, ox::kF32)), {dop},
                  reduce);
    EXPECT_EQ(download(dd, 24, 28), bytes_of(want)) << int(reduce);
  }
}

TEST_F(CudaIndexOnDevice, BadIndicesReportAsTheCpu) {
  const ox::CheckSite site =
      ox::check_site("test_gather", "index {value} at {position} is out of bounds for {bound}");
  std::vector<int64_t> index{0, 2, 9, -1, 11, 1};  // bad: 9 at 2 (then -1, 11)
  std::vector<float> src(4, 1.0f), dst(6, 0.0f);
  const ox::IndexOperand op{array(index.data(), {6}, {1}, ox::kI64), 4, 1, false, site};
  std::string cpu_what, gpu_what;
  try {
    cpu().gather(array(dst.data(), {6}, {1}, ox::kF32), array(src.data(), {6}, {0}, ox::kF32),
                 {op});
  } catch (const ox::Error& e) {
    cpu_what = e.what();
  }
  ox::IndexOperand dop = op;
  dop.index = on_device(upload(bytes_of(index)), op.index);
  try {
    gpu().gather(on_device(upload(bytes_of(dst)), array(nullptr, {6}, {1}, ox::kF32)),
                 on_device(upload(bytes_of(src)), array(nullptr, {6}, {0}, ox::kF32)), {dop});
    gpu().synchronize(0);
  } catch (const ox::Error& e) {
    gpu_what = e.what();
  }
  EXPECT_FALSE(cpu_what.empty());
  EXPECT_EQ(gpu_what, cpu_what);
  gpu().synchronize(0);  // the report was cleared
}

TEST_F(CudaIndexOnDevice, NonzeroAsTheCpu) {
  std::mt19937_64 rng(13);
  for (DType dt : kAll) {
    const size_t w = ox::dtype_size(dt);
    const Shape shape{3, 50, 41};
    std::vector<uint8_t> src = sample_values(dt, 3 * 50 * 41, rng);
    for (size_t i = 0; i < src.size() / w; i += 2) std::memset(src.data() + i * w, 0, w);
    const Strides strides{41, 3 * 41, 1};  // dims 0 and 1 swapped in memory
    int64_t count = 0;
    for (int64_t i = 0; i < 3 * 50 * 41; ++i) {
      uint64_t b = 0;
      std::memcpy(&b, src.data() + size_t(i) * w, w);
      if (ox::is_floating(dt)) b &= k::key_mask(int(w)) >> 1;
      count += b != 0;
    }
    std::vector<int64_t> want(static_cast<size_t>(count * 3));
    cpu().nonzero(array(want.data(), {count, 3}, {3, 1}, ox::kI64),
                  array(src.data(), shape, strides, dt));
    void* dd = upload(std::vector<uint8_t>(want.size() * 8, 0xcd));
    gpu().nonzero(on_device(dd, array(nullptr, {count, 3}, {3, 1}, ox::kI64)),
                  on_device(upload(src), array(nullptr, shape, strides, dt)));
    EXPECT_EQ(download(dd, 0, want.size() * 8), bytes_of(want)) << dt;
  }
}

}  // namespace

#endif  // OXMERA_TEST_WITH_CUDA
