// sort, argsort, topk, kthvalue, median against a reference written here (std::stable_sort of
// each line's values as doubles, NaN largest), on docs/TESTING.md's shapes and layouts along every
// dim, every dtype; hand-derived NaN, -0 and tie orders; 0-d and empty inputs; errors; thread
// independence. Also repeat_interleave with a tensor of repeats, against hand-derived results.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "ops/reduce_util.h"

namespace {

using namespace rtest;
using ox::ErrorKind;
using oxtest::caught;
using oxtest::contains;
using oxtest::kind_of;

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

// ---- Reference -------------------------------------------------------------------------------

bool less_nan_last(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}
bool greater_nan_first(double a, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a > b;
}
// Positions of `row` in stable sorted order.
std::vector<int64_t> ref_order(const std::vector<double>& row, bool descending) {
  std::vector<int64_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const double x = row[static_cast<size_t>(a)], y = row[static_cast<size_t>(b)];
    return descending ? greater_nan_first(x, y) : less_nan_last(x, y);
  });
  return idx;
}

// Flat row-major positions of every line of `shape` along dim, lines in row-major order of the
// other dims (so line r is output element r of a reduction over dim).
std::vector<std::vector<int64_t>> lines_of(const ShapeV& shape, int64_t dim) {
  if (shape.empty()) return {{0}};
  const auto d = static_cast<size_t>(dim);
  int64_t inner = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  ShapeV others = shape;
  others[d] = 1;
  std::vector<std::vector<int64_t>> lines;
  if (shape[d] == 0) {
    others[d] = 1;
    oxtest::for_each_index(others, [&](const std::vector<int64_t>&) { lines.emplace_back(); });
    return lines;
  }
  oxtest::for_each_index(others, [&](const std::vector<int64_t>& ix) {
    int64_t flat = 0;
    for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + ix[k];
    std::vector<int64_t> line;
    for (int64_t j = 0; j < shape[d]; ++j) line.push_back(flat + j * inner);
    lines.push_back(std::move(line));
  });
  return lines;
}

// Expected values and indices of sort/topk: the first m of each line's order.
struct Expected {
  std::vector<double> values, indices;
};
Expected ref_topm(const std::vector<double>& v, const ShapeV& shape, int64_t dim, int64_t m,
                  bool descending) {
  ShapeV out_shape = shape;
  if (!shape.empty()) out_shape[static_cast<size_t>(dim)] = m;
  Expected e;
  e.values.resize(static_cast<size_t>(oxtest::product(out_shape)));
  e.indices.resize(e.values.size());
  const auto in_lines = lines_of(shape, dim), out_lines = lines_of(out_shape, dim);
  for (size_t r = 0; r < out_lines.size() && r < in_lines.size(); ++r) {
    std::vector<double> row;
    for (int64_t i : in_lines[r]) row.push_back(v[static_cast<size_t>(i)]);
    const std::vector<int64_t> order = ref_order(row, descending);
    for (size_t j = 0; j < out_lines[r].size(); ++j) {
      const auto o = static_cast<size_t>(out_lines[r][j]);
      e.values[o] = row[static_cast<size_t>(order[j])];
      e.indices[o] = static_cast<double>(order[j]);
    }
  }
  return e;
}

// Exact: NaN equals NaN, and the sign of a zero must match (values are copied bit for bit).
void expect_exact(const std::vector<double>& actual, const std::vector<double>& expected,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double a = actual[i], e = expected[i];
    const bool same =
        std::isnan(e) ? std::isnan(a) : (a == e && std::signbit(a) == std::signbit(e));
    if (!same) {
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected " << e;
      ++failures;
    }
  }
}

// Values with many ties, both zeros, infinities and NaN (floats); small integers otherwise.
Source sort_source(DType dt, uint64_t salt) {
  return [=](int64_t i) -> double {
    if (dt == ox::kBool) return static_cast<double>(oxtest::integer_at(i, salt, 0, 1));
    if (dt == ox::kU8) return static_cast<double>(oxtest::integer_at(i, salt, 0, 255));
    if (!ox::is_floating(dt)) return static_cast<double>(oxtest::integer_at(i, salt, -100, 100));
    const int64_t r = oxtest::integer_at(i, salt, 0, 40);
    if (r == 0) return kNaN;
    if (r == 1) return -0.0;
    if (r == 2) return 0.0;
    if (r == 3) return kInf;
    if (r == 4) return -kInf;
    return static_cast<double>(oxtest::integer_at(i, salt ^ 7, -12, 12)) * 0.25;
  };
}

const DType kDtypes[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16, ox::kI64,
                         ox::kI32, ox::kI16, ox::kI8,  ox::kU8,   ox::kBool};

bool big(const ShapeV& s) { return oxtest::product(s) > 100000; }

// ---- sort and argsort --------------------------------------------------------------------------

TEST(Sort, HandDerived) {
  const Tensor x = ox::tensor({3.f, 1.f, 2.f});
  auto [v, i] = ox::sort(x);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(i.dtype(), ox::kI64);
  auto [vd, id] = x.sort(0, true);
  EXPECT_EQ(vd.to_vector<float>(), (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(ox::argsort(x).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(x.argsort(-1, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1}));
  // [[3, 1], [0, 2]] along dim 0: columns sorted independently.
  const Tensor m = ox::tensor({3, 1, 0, 2}).reshape({2, 2});
  auto [mv, mi] = ox::sort(m, 0);
  EXPECT_EQ(mv.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
}

TEST(Sort, TiesKeepTheirOrderAscendingAndDescending) {
  const Tensor x = ox::tensor({2, 1, 2, 1, 2});
  auto [v, i] = ox::sort(x);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2, 4}));
  auto [vd, id] = ox::sort(x, -1, /*descending=*/true);
  EXPECT_EQ(vd.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 1, 1}));
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4, 1, 3}));
  // stable = false still gives the stable order.
  EXPECT_EQ(ox::argsort(x, 0, true, false).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 4, 1, 3}));
}

TEST(Sort, NanIsLargestAndZerosAreEqual) {
  const double nan = kNaN, inf = kInf;
  for (DType dt : {ox::kF32, ox::kF64, ox::kF16, ox::kBF16}) {
    const Tensor x =
        ox::tensor(std::vector<double>{nan, 1, -inf, nan, inf, -0.0, 0.0}, {7}, {.dtype = dt});
    auto [v, i] = ox::sort(x);
    expect_exact(values_of(v), {-inf, -0.0, 0.0, 1, inf, nan, nan}, "ascending");
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 6, 1, 4, 0, 3}));
    auto [vd, id] = ox::sort(x, 0, true);
    expect_exact(values_of(vd), {nan, nan, inf, 1, -0.0, 0.0, -inf}, "descending");
    EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 4, 1, 5, 6, 2}));
    // 0.0 then -0.0 stay in that order too.
    const Tensor z = ox::tensor(std::vector<double>{0.0, -0.0, 0.0}, {3}, {.dtype = dt});
    EXPECT_EQ(ox::argsort(z).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(ox::argsort(z, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  }
}

TEST(Sort, IntegerExtremesAndBool) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  auto [v, i] = ox::sort(ox::tensor(std::vector<int64_t>{0, hi, -1, lo, 1}));
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{lo, -1, 0, 1, hi}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 0, 4, 1}));
  const Tensor i8 = ox::tensor(std::vector<double>{127, -128, 0, -1}, {4}, {.dtype = ox::kI8});
  EXPECT_EQ(ox::argsort(i8).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 2, 0}));
  const Tensor u8 = ox::tensor(std::vector<double>{255, 0, 128, 127}, {4}, {.dtype = ox::kU8});
  EXPECT_EQ(ox::argsort(u8).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 2, 0}));
  const Tensor b = ox::tensor(std::vector<bool>{true, false, true, false});
  auto [bv, bi] = ox::sort(b, 0, true);
  EXPECT_EQ(bv.dtype(), ox::kBool);
  EXPECT_EQ(bv.to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bi.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3}));
  // f64 values closer than f32 resolves, huge and subnormal.
  const double tiny = std::numeric_limits<double>::denorm_min();
  const Tensor d = ox::tensor(std::vector<double>{1 + 1e-15, 1, -1e300, tiny, 1e300, -tiny});
  EXPECT_EQ(ox::argsort(d).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 3, 1, 0, 4}));
}

TEST(Sort, SixteenBitValuesCopiedBitForBit) {
  for (DType dt : {ox::kF16, ox::kBF16}) {
    // Two NaN payloads and both zeros: the values must come back as the very same bits.
    Tensor raw = ox::tensor(std::vector<double>{1.5, -0.0, 0.0, -2, 0.25}, {5},
                            {.dtype = dt, .device = ox::Device::cpu()});
    auto* bits = static_cast<uint16_t*>(raw.raw_data_ptr(dt));
    bits[0] = dt == ox::kF16 ? 0x7e01 : 0x7fc1;  // NaN with a payload
    bits[3] = dt == ox::kF16 ? 0xfe02 : 0xffc2;  // negative NaN with another payload
    auto [on_device, i] = ox::sort(raw.to(ox::default_device()));
    const Tensor v = on_device.cpu();
    const std::vector<int64_t> order = {1, 2, 4, 0, 3};  // -0, 0, 0.25, NaN, NaN
    EXPECT_EQ(i.to_vector<int64_t>(), order);
    const auto* out = static_cast<const uint16_t*>(v.raw_data_ptr(dt));
    for (size_t j = 0; j < order.size(); ++j) EXPECT_EQ(out[j], bits[order[j]]) << j;
  }
}

TEST(Sort, MatchesReferenceOnShapesLayoutsDimsDtypes) {
  for (DType dt : kDtypes)
    for (const ShapeV& shape : kShapes) {
      if (big(shape) && dt != ox::kF32 && dt != ox::kI32) continue;
      for (Lay lay : kLayouts) {
        if (big(shape) && lay != Lay::Contig && lay != Lay::Transposed) continue;
        const Tensor x = make_input(shape, dt, lay, sort_source(dt, 11));
        const std::vector<double> v = values_of(x);
        const int64_t nd = std::max<int64_t>(static_cast<int64_t>(shape.size()), 1);
        for (int64_t dim = 0; dim < nd; ++dim)
          for (bool desc : {false, true}) {
            const std::string what = std::string(ox::dtype_name(dt)) + " " + str(shape) + " " +
                                     name(lay) + " dim " + std::to_string(dim) +
                                     (desc ? " descending" : "");
            const int64_t n = shape.empty() ? 1 : shape[static_cast<size_t>(dim)];
            const Expected e = ref_topm(v, shape, dim, n, desc);
            auto [sv, si] = ox::sort(x, dim - nd, desc);  // negative dims too
            EXPECT_EQ(oxtest::shape_of(sv), shape) << what;
            EXPECT_EQ(sv.dtype(), dt) << what;
            expect_exact(values_of(sv), e.values, what + " values");
            expect_exact(values_of(si), e.indices, what + " indices");
            expect_exact(values_of(ox::argsort(x, dim, desc)), e.indices, what + " argsort");
          }
      }
    }
}

TEST(Sort, ZeroSizeAndZeroDim) {
  const Tensor e = ox::zeros({0});
  auto [v, i] = ox::sort(e);
  EXPECT_EQ(oxtest::shape_of(v), (ShapeV{0}));
  EXPECT_EQ(oxtest::shape_of(i), (ShapeV{0}));
  EXPECT_EQ(i.dtype(), ox::kI64);
  for (int64_t dim : {0, 1, 2}) {
    auto [v3, i3] = ox::sort(ox::zeros({1, 0, 3}), dim);
    EXPECT_EQ(oxtest::shape_of(v3), (ShapeV{1, 0, 3}));
    EXPECT_EQ(oxtest::shape_of(i3), (ShapeV{1, 0, 3}));
  }
  const Tensor s = ox::scalar_tensor(2.5);
  for (int64_t dim : {0, -1}) {
    auto [sv, si] = ox::sort(s, dim, true);
    EXPECT_EQ(sv.dim(), 0);
    EXPECT_EQ(sv.item<double>(), 2.5);
    EXPECT_EQ(si.dim(), 0);
    EXPECT_EQ(si.item<int64_t>(), 0);
    auto [tv, ti] = ox::topk(s, 1, dim);
    EXPECT_EQ(tv.dim(), 0);
    EXPECT_EQ(tv.item<double>(), 2.5);
    EXPECT_EQ(ti.item<int64_t>(), 0);
    auto [kv, ki] = ox::kthvalue(s, 1, dim, true);
    EXPECT_EQ(kv.dim(), 0);
    EXPECT_EQ(kv.item<double>(), 2.5);
    EXPECT_EQ(ki.item<int64_t>(), 0);
    auto [mv, mi] = ox::median(s, dim);
    EXPECT_EQ(mv.dim(), 0);
    EXPECT_EQ(mi.item<int64_t>(), 0);
  }
  EXPECT_EQ(ox::median(s).item<double>(), 2.5);
  EXPECT_EQ(ox::argsort(s).item<int64_t>(), 0);
  EXPECT_EQ(kind_of([&] { ox::sort(s, 1); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::topk(s, 0); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::topk(s, 2); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::kthvalue(s, 2); }), ErrorKind::Index);
}

// ---- topk
// ----------------------------------------------------------------------------------------

TEST(Topk, HandDerived) {
  const Tensor x = ox::tensor({1.f, 5.f, 3.f, 5.f, kNaNf, 2.f});
  auto [v, i] = ox::topk(x, 3);
  expect_exact(values_of(v), {kNaN, 5, 5}, "largest");
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 3}));
  auto [vs, is] = x.topk(2, 0, /*largest=*/false);
  EXPECT_EQ(vs.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(is.to_vector<int64_t>(), (std::vector<int64_t>{0, 5}));
  // sorted = false gives the same (sorted) result.
  auto [vu, iu] = ox::topk(x, 3, 0, true, false);
  EXPECT_EQ(iu.to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 3}));
  // k = 0 and k = size.
  auto [v0, i0] = ox::topk(x, 0);
  EXPECT_EQ(oxtest::shape_of(v0), (ShapeV{0}));
  EXPECT_EQ(oxtest::shape_of(i0), (ShapeV{0}));
  auto [vn, in] = ox::topk(x, 6, 0, false);
  EXPECT_EQ(in.to_vector<int64_t>(), (std::vector<int64_t>{0, 5, 2, 1, 3, 4}));
  // k = 0 of an empty dim.
  auto [ve, ie] = ox::topk(ox::zeros({3, 0}), 0, 1);
  EXPECT_EQ(oxtest::shape_of(ve), (ShapeV{3, 0}));
}

TEST(Topk, IsThePrefixOfTheSortOnLayoutsDimsDtypes) {
  for (DType dt : kDtypes)
    for (const ShapeV& shape : {ShapeV{23}, ShapeV{812}, ShapeV{7, 40}, ShapeV{2, 3, 5}})
      for (Lay lay : kLayouts) {
        const Tensor x = make_input(shape, dt, lay, sort_source(dt, 21));
        const std::vector<double> v = values_of(x);
        for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
          const int64_t n = shape[static_cast<size_t>(dim)];
          for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), n / 2, n})
            for (bool largest : {true, false}) {
              if (k > n) continue;
              const std::string what = std::string(ox::dtype_name(dt)) + " " + str(shape) + " " +
                                       name(lay) + " dim " + std::to_string(dim) + " k " +
                                       std::to_string(k) + (largest ? " largest" : " smallest");
              const Expected e = ref_topm(v, shape, dim, k, largest);
              auto [tv, ti] = ox::topk(x, k, dim, largest);
              ShapeV out = shape;
              out[static_cast<size_t>(dim)] = k;
              EXPECT_EQ(oxtest::shape_of(tv), out) << what;
              expect_exact(values_of(tv), e.values, what + " values");
              expect_exact(values_of(ti), e.indices, what + " indices");
            }
        }
      }
}

TEST(Topk, KOutOfRangeIsAnIndexError) {
  const Tensor x = ox::zeros({2, 3});
  const ox::Error e = caught([&] { ox::topk(x, 4); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(e, "k = 4")) << e.what();
  EXPECT_TRUE(contains(e, "[0, 3]")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::topk(x, -1); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::topk(x, 3, 0); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::topk(x, 1, 2); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([] { ox::topk(Tensor(), 1); }), ErrorKind::Value);
}

// ---- kthvalue and median
// -------------------------------------------------------------------------

TEST(Kthvalue, HandDerived) {
  const Tensor x = ox::tensor({3.f, 1.f, 2.f, 1.f});
  auto [v, i] = ox::kthvalue(x, 1);
  EXPECT_EQ(v.item<float>(), 1.f);
  EXPECT_EQ(i.item<int64_t>(), 1);  // the first of the tied ones
  EXPECT_EQ(std::get<1>(ox::kthvalue(x, 2)).item<int64_t>(), 3);
  EXPECT_EQ(std::get<0>(x.kthvalue(4)).item<float>(), 3.f);
  // NaN counts as largest: [1, NaN, 3, NaN] orders as 1, 3, NaN(1), NaN(3).
  const Tensor n = ox::tensor({1.f, kNaNf, 3.f, kNaNf});
  EXPECT_EQ(std::get<0>(ox::kthvalue(n, 2)).item<float>(), 3.f);
  EXPECT_EQ(std::get<1>(ox::kthvalue(n, 3)).item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(ox::kthvalue(n, 4)).item<int64_t>(), 3);
  // Along dim 0 of [[4, 1], [2, 9], [3, 5]] with keepdim.
  const Tensor m = ox::tensor({4, 1, 2, 9, 3, 5}).reshape({3, 2});
  auto [mv, mi] = ox::kthvalue(m, 2, 0, true);
  EXPECT_EQ(oxtest::shape_of(mv), (ShapeV{1, 2}));
  EXPECT_EQ(mv.to_vector<int64_t>(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  auto [mv2, mi2] = ox::kthvalue(m, 2, 0);
  EXPECT_EQ(oxtest::shape_of(mv2), (ShapeV{2}));
}

TEST(Median, HandDerived) {
  // Lower median of an even count, as PyTorch: [4, 1, 3, 2] -> 2 (index 3).
  const Tensor x = ox::tensor({4.f, 1.f, 3.f, 2.f});
  EXPECT_EQ(ox::median(x).item<float>(), 2.f);
  auto [v, i] = ox::median(x, 0);
  EXPECT_EQ(v.item<float>(), 2.f);
  EXPECT_EQ(i.item<int64_t>(), 3);
  EXPECT_EQ(x.median().dim(), 0);
  // A NaN wins: the first NaN's index.
  const Tensor n = ox::tensor({1.f, kNaNf, 3.f, kNaNf, 0.f}).reshape({1, 5});
  auto [nv, ni] = n.median(1, true);
  EXPECT_TRUE(std::isnan(nv.item<float>()));
  EXPECT_EQ(ni.item<int64_t>(), 1);
  EXPECT_EQ(oxtest::shape_of(nv), (ShapeV{1, 1}));
  EXPECT_TRUE(std::isnan(ox::median(n).item<float>()));
  // Global median of a transposed matrix: values 0..5 -> 2.
  const Tensor t = ox::tensor({5, 0, 4, 1, 3, 2}).reshape({2, 3}).t();
  EXPECT_EQ(ox::median(t).item<int64_t>(), 2);
  EXPECT_EQ(ox::median(t).dtype(), ox::kI64);
}

TEST(Median, KthvalueAndMedianMatchReferenceOnLayoutsDimsDtypes) {
  for (DType dt : kDtypes)
    for (const ShapeV& shape : {ShapeV{1}, ShapeV{23}, ShapeV{6, 9}, ShapeV{2, 3, 4}})
      for (Lay lay : kLayouts) {
        const Tensor x = make_input(shape, dt, lay, sort_source(dt, 31));
        const std::vector<double> v = values_of(x);
        for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
          const std::string what = std::string(ox::dtype_name(dt)) + " " + str(shape) + " " +
                                   name(lay) + " dim " + std::to_string(dim);
          const int64_t n = shape[static_cast<size_t>(dim)];
          const auto lines = lines_of(shape, dim);
          for (int64_t k = 1; k <= n; k += std::max<int64_t>(1, n / 4)) {
            std::vector<double> ev, ei;
            for (const auto& line : lines) {
              std::vector<double> row;
              for (int64_t p : line) row.push_back(v[static_cast<size_t>(p)]);
              const int64_t at = ref_order(row, false)[static_cast<size_t>(k - 1)];
              ev.push_back(row[static_cast<size_t>(at)]);
              ei.push_back(static_cast<double>(at));
            }
            auto [kv, ki] = ox::kthvalue(x, k, dim);
            expect_exact(values_of(kv), ev, what + " kthvalue " + std::to_string(k));
            expect_exact(values_of(ki), ei, what + " kthvalue indices " + std::to_string(k));
          }
          std::vector<double> mv, mi;
          for (const auto& line : lines) {
            std::vector<double> row;
            for (int64_t p : line) row.push_back(v[static_cast<size_t>(p)]);
            int64_t at = ref_order(row, false)[static_cast<size_t>((n - 1) / 2)];
            for (size_t j = 0; j < row.size(); ++j)  // a NaN wins: the first one
              if (std::isnan(row[j])) {
                at = static_cast<int64_t>(j);
                break;
              }
            mv.push_back(row[static_cast<size_t>(at)]);
            mi.push_back(static_cast<double>(at));
          }
          auto [medv, medi] = ox::median(x, dim);
          expect_exact(values_of(medv), mv, what + " median");
          expect_exact(values_of(medi), mi, what + " median indices");
        }
        // Global: the lower median of all values (NaN if any).
        std::vector<double> all = v;
        double expected = all[static_cast<size_t>(ref_order(all, false)[(all.size() - 1) / 2])];
        for (double a : all)
          if (std::isnan(a)) expected = kNaN;
        expect_exact(values_of(ox::median(x)), {expected},
                     std::string(ox::dtype_name(dt)) + " " + str(shape) + " " + name(lay) +
                         " global median");
      }
}

TEST(Median, EmptyExtentsAndBadK) {
  EXPECT_EQ(kind_of([] { ox::median(ox::zeros({0})); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([] { ox::median(ox::zeros({2, 0}), 1); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([] { ox::kthvalue(ox::zeros({0}), 1); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([] { ox::kthvalue(ox::zeros({3, 0}), 1, 1); }), ErrorKind::Empty);
  // An empty result with a non-empty extent is fine.
  auto [v, i] = ox::median(ox::zeros({0, 3}), 1);
  EXPECT_EQ(oxtest::shape_of(v), (ShapeV{0}));
  auto [kv, ki] = ox::kthvalue(ox::zeros({0, 3}), 2, 1, true);
  EXPECT_EQ(oxtest::shape_of(kv), (ShapeV{0, 1}));
  const Tensor x = ox::zeros({2, 3});
  const ox::Error e = caught([&] { ox::kthvalue(x, 4); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(e, "k = 4")) << e.what();
  EXPECT_TRUE(contains(e, "[1, 3]")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::kthvalue(x, 0); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::kthvalue(x, 1, 2); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::median(x, -3); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([] { ox::median(Tensor()); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::sort(Tensor()); }), ErrorKind::Value);
}

// ---- Thread independence
// -------------------------------------------------------------------------

TEST(Sort, BitwiseTheSameForOneAndTwoThreads) {
  for (Lay lay : {Lay::Contig, Lay::Transposed}) {
    const Tensor x = make_input({257, 1000}, ox::kF32, lay, sort_source(ox::kF32, 41));
    const Tensor w = make_input({257, 1000}, ox::kI64, lay, sort_source(ox::kI64, 42));
    for (int64_t dim : {0, 1}) {
      const auto check = [&](auto&& f, const char* what) {
        const auto one = with_threads(1, f), two = with_threads(2, f);
        EXPECT_EQ(bytes_of(std::get<0>(one)), bytes_of(std::get<0>(two))) << what << dim;
        EXPECT_EQ(bytes_of(std::get<1>(one)), bytes_of(std::get<1>(two))) << what << dim;
      };
      check([&] { return ox::sort(x, dim); }, "sort ");
      check([&] { return ox::sort(w, dim, true); }, "sort i64 ");
      check([&] { return ox::topk(x, 10, dim); }, "topk ");
      check([&] { return ox::kthvalue(x, 100, dim); }, "kthvalue ");
      check([&] { return ox::median(x, dim); }, "median ");
    }
  }
}

// ---- repeat_interleave with a tensor of repeats -------------------------------------------------

TEST(RepeatInterleave, RepeatsTensorAlone) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(ox::repeat_interleave(ox::tensor({2, 1})).to_vector<int64_t>(), (V{0, 0, 1}));
  EXPECT_EQ(ox::repeat_interleave(ox::tensor({0, 2})).to_vector<int64_t>(), (V{1, 1}));
  EXPECT_EQ(ox::repeat_interleave(ox::tensor({2, 0, 1})).to_vector<int64_t>(), (V{0, 0, 2}));
  EXPECT_EQ(ox::repeat_interleave(ox::tensor({0, 0})).numel(), 0);
  const Tensor r32 = ox::tensor(std::vector<int32_t>{1, 3});
  const Tensor out = ox::repeat_interleave(r32);
  EXPECT_EQ(out.dtype(), ox::kI64);
  EXPECT_EQ(out.to_vector<int64_t>(), (V{0, 1, 1, 1}));
  EXPECT_EQ(ox::repeat_interleave(ox::zeros({0}, ox::kI64)).numel(), 0);
  EXPECT_EQ(kind_of([] { ox::repeat_interleave(ox::scalar_tensor(int64_t(2))); }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::repeat_interleave(ox::tensor({1, -1})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::repeat_interleave(ox::tensor({1.f, 2.f})); }), ErrorKind::DType);
}

TEST(RepeatInterleave, TensorOfRepeatsAlongADim) {
  using V = std::vector<int64_t>;
  const Tensor x = ox::tensor({1, 2, 3, 4}).reshape({2, 2});
  const Tensor r0 = ox::repeat_interleave(x, ox::tensor({1, 2}), 0);
  EXPECT_EQ(oxtest::shape_of(r0), (ShapeV{3, 2}));
  EXPECT_EQ(r0.to_vector<int64_t>(), (V{1, 2, 3, 4, 3, 4}));
  const Tensor r1 = ox::repeat_interleave(x, ox::tensor({1, 2}), -1);
  EXPECT_EQ(oxtest::shape_of(r1), (ShapeV{2, 3}));
  EXPECT_EQ(r1.to_vector<int64_t>(), (V{1, 2, 2, 3, 4, 4}));
  // Transposed input: [[1, 3], [2, 4]] along dim 1 with repeats [0, 2].
  const Tensor rt = ox::repeat_interleave(x.t(), ox::tensor({0, 2}), 1);
  EXPECT_EQ(rt.to_vector<int64_t>(), (V{3, 3, 4, 4}));
  // No dim: the flattened input.
  const Tensor rf = ox::repeat_interleave(x, ox::tensor({1, 0, 2, 1}));
  EXPECT_EQ(oxtest::shape_of(rf), (ShapeV{4}));
  EXPECT_EQ(rf.to_vector<int64_t>(), (V{1, 3, 3, 4}));
  // One repeat (1-d of one element, or 0-d) applies to every element.
  EXPECT_EQ(ox::repeat_interleave(x, ox::tensor({2}), 0).to_vector<int64_t>(),
            (V{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(ox::repeat_interleave(x, ox::scalar_tensor(int64_t(2))).to_vector<int64_t>(),
            (V{1, 1, 2, 2, 3, 3, 4, 4}));
  // Float input, u8 repeats.
  const Tensor f = ox::tensor({0.5f, -1.f});
  const Tensor ru = ox::tensor(std::vector<double>{3, 1}, {2}, {.dtype = ox::kU8});
  EXPECT_EQ(ox::repeat_interleave(f, ru).to_vector<float>(),
            (std::vector<float>{0.5f, 0.5f, 0.5f, -1.f}));
  // Zero-size dim with empty repeats.
  const Tensor z = ox::repeat_interleave(ox::zeros({2, 0}), ox::zeros({0}, ox::kI64), 1);
  EXPECT_EQ(oxtest::shape_of(z), (ShapeV{2, 0}));
}

TEST(RepeatInterleave, TensorOfRepeatsErrors) {
  const Tensor x = ox::zeros({2, 3});
  const ox::Error e = caught([&] { ox::repeat_interleave(x, ox::tensor({1, 2}), 1); });
  EXPECT_EQ(e.kind(), ErrorKind::Shape);
  EXPECT_TRUE(contains(e, "size 3")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::repeat_interleave(x, ox::tensor({1, -2}), 0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::repeat_interleave(x, ox::tensor({-1}), 0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              ox::repeat_interleave(x, ox::tensor({1.f, 2.f}), 0);
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::repeat_interleave(x, ox::tensor(std::vector<bool>{true, false}), 0);
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::repeat_interleave(x, ox::ones({2, 1}, ox::kI64), 0);
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::repeat_interleave(x, ox::tensor({1, 1}), 2); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::repeat_interleave(x, Tensor(), 0); }), ErrorKind::Value);
}

}  // namespace
