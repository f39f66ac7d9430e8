// cumsum, cumprod, cummax and cummin against running references written here (long double
// sums and products; PyTorch's tie and NaN rules for cummax/cummin), on docs/TESTING.md's shapes
// and layouts along every dim; dtypes, dim errors and thread-count independence.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ops/reduce_util.h"

namespace {

using namespace rtest;
using ox::ErrorKind;
using oxtest::kind_of;

// The row-major flat index of every element of `shape`, grouped into the lines along `dim`
// (each line in order along dim).
std::vector<std::vector<int64_t>> lines_of(const ShapeV& shape, int64_t dim) {
  const int64_t n = oxtest::product(shape);
  if (shape.empty()) return {{0}};
  const auto d = static_cast<size_t>(dim);
  int64_t inner = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t len = shape[d];
  std::vector<std::vector<int64_t>> lines;
  for (int64_t base = 0; base < n; ++base) {
    if ((base / inner) % len != 0) continue;  // lines start at index 0 along dim
    std::vector<int64_t> line;
    for (int64_t i = 0; i < len; ++i) line.push_back(base + i * inner);
    lines.push_back(line);
  }
  return lines;
}

enum class Kind { Sum, Prod };

std::vector<double> ref_running(const std::vector<double>& v, const ShapeV& shape, int64_t dim,
                                Kind kind) {
  std::vector<double> out(v.size());
  for (const auto& line : lines_of(shape, dim)) {
    LD acc = kind == Kind::Sum ? 0 : 1;
    for (int64_t i : line) {
      acc = kind == Kind::Sum ? acc + v[static_cast<size_t>(i)] : acc * v[static_cast<size_t>(i)];
      out[static_cast<size_t>(i)] = static_cast<double>(acc);
    }
  }
  return out;
}

// PyTorch's cummax: a NaN is always taken, later equal values move the index.
std::pair<std::vector<double>, std::vector<double>> ref_cumext(const std::vector<double>& v,
                                                               const ShapeV& shape, int64_t dim,
                                                               bool is_max) {
  std::vector<double> values(v.size()), indices(v.size());
  for (const auto& line : lines_of(shape, dim)) {
    double best = 0;
    int64_t at = 0;
    for (size_t k = 0; k < line.size(); ++k) {
      const double x = v[static_cast<size_t>(line[k])];
      const bool take =
          k == 0 || std::isnan(x) || (!std::isnan(best) && (is_max ? x >= best : x <= best));
      if (take) {
        best = x;
        at = static_cast<int64_t>(k);
      }
      values[static_cast<size_t>(line[k])] = best;
      indices[static_cast<size_t>(line[k])] = static_cast<double>(at);
    }
  }
  return {values, indices};
}

std::vector<int64_t> dims_of(const ShapeV& shape) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) dims.push_back(d);
  if (shape.empty()) dims.push_back(0);  // a 0-d tensor scans along "dim 0"
  return dims;
}

TEST(Scan, CumsumAndCumprodShapesDimsLayouts) {
  for (const ShapeV& shape : kShapes)
    for (int64_t dim : dims_of(shape))
      for (Lay lay : kLayouts) {
        const std::string what = str(shape) + " dim " + std::to_string(dim) + " " + name(lay);
        const Tensor x = make_input(shape, ox::kF32, lay, uniform(-1, 1, 41));
        const std::vector<double> v = values_of(x);
        const Tensor s = x.cumsum(dim);
        ASSERT_EQ(oxtest::shape_of(s), shape) << what;
        EXPECT_EQ(s.dtype(), ox::kF32);
        // Running sums in f64, each output rounded once: f32's own tolerance, on the scale of
        // the partial sums of |x|.
        std::vector<double> abs_v(v.size());
        for (size_t i = 0; i < v.size(); ++i) abs_v[i] = std::fabs(v[i]);
        expect_values(values_of(s), ref_running(v, shape, dim, Kind::Sum), {1.3e-6, 1e-5, 1e-12},
                      "cumsum " + what, ref_running(abs_v, shape, dim, Kind::Sum));
        const Tensor p = make_input(shape, ox::kF32, lay, uniform(0.9, 1.1, 42));
        std::vector<double> prods = ref_running(values_of(p), shape, dim, Kind::Prod);
        for (double& e : prods)  // an expanded column multiplies one value 1029 times
          if (e >= 0x1.ffffffp127) e = kInf;
        expect_values(values_of(p.cumprod(dim)), prods, {1.3e-6, 1e-5, 0}, "cumprod " + what);
        if (!x.is_contiguous()) {
          EXPECT_EQ(bytes_of(s), bytes_of(x.contiguous().cumsum(dim))) << what;
          EXPECT_EQ(bytes_of(ox::cumsum(
                        x, dim - static_cast<int64_t>(std::max<size_t>(shape.size(), 1)))),
                    bytes_of(s))
              << what << " negative dim";
        }
      }
}

TEST(Scan, CummaxAndCumminShapesDimsLayouts) {
  for (const ShapeV& shape : kShapes)
    for (int64_t dim : dims_of(shape))
      for (Lay lay : kLayouts)
        for (bool is_max : {true, false}) {
          const std::string what = std::string(is_max ? "cummax " : "cummin ") + str(shape) +
                                   " dim " + std::to_string(dim) + " " + name(lay);
          // Few distinct values, so ties are common.
          const Tensor x = make_input(shape, ox::kF32, lay, integers(-3, 3, 43));
          auto [values, indices] = is_max ? x.cummax(dim) : ox::cummin(x, dim);
          ASSERT_EQ(oxtest::shape_of(values), shape) << what;
          EXPECT_EQ(indices.dtype(), ox::kI64);
          const auto [rv, ri] = ref_cumext(values_of(x), shape, dim, is_max);
          EXPECT_EQ(values_of(values), rv) << what;
          EXPECT_EQ(values_of(indices), ri) << what;
        }
}

TEST(Scan, NanAndTiesFollowPyTorch) {
  const Tensor x = ox::tensor({1.f, 3.f, NAN, 5.f, NAN, 3.f});
  auto [v, i] = x.cummax(0);
  const std::vector<double> vv = values_of(v);
  EXPECT_EQ(vv[0], 1);
  EXPECT_EQ(vv[1], 3);
  for (size_t k = 2; k < 6; ++k) EXPECT_TRUE(std::isnan(vv[k])) << k;
  EXPECT_EQ(values_of(i), (std::vector<double>{0, 1, 2, 2, 4, 4}));
  auto [mv, mi] = ox::tensor({2, 1, 1, 3, 1}).cummin(0);
  EXPECT_EQ(values_of(mv), (std::vector<double>{2, 1, 1, 1, 1}));
  EXPECT_EQ(values_of(mi), (std::vector<double>{0, 1, 2, 2, 4}));  // ties take the later index
  EXPECT_TRUE(std::isnan(values_of(ox::tensor({1.f, NAN, 2.f}).cumsum(0))[2]));
}

TEST(Scan, DtypesAndDtypeArgument) {
  for (DType dt : ox::kAllDTypes) {
    const Tensor x = make_input({5, 7}, dt, Lay::Transposed,
                                integers(dt == ox::kU8 || dt == ox::kBool ? 0 : -3, 3, 44));
    const std::vector<double> v = values_of(x);
    const Tensor s = x.cumsum(1), p = x.cumprod(0);
    const DType acc = ox::is_floating(dt) ? dt : ox::kI64;
    EXPECT_EQ(s.dtype(), acc) << dt;
    EXPECT_EQ(p.dtype(), acc) << dt;
    EXPECT_EQ(values_of(s), ref_running(v, {5, 7}, 1, Kind::Sum)) << dt;  // small integers: exact
    EXPECT_EQ(values_of(p), ref_running(v, {5, 7}, 0, Kind::Prod)) << dt;
    auto [mv, mi] = x.cummax(1);
    EXPECT_EQ(mv.dtype(), dt);
    const auto [rv, ri] = ref_cumext(v, {5, 7}, 1, true);
    EXPECT_EQ(values_of(mv), rv) << dt;
    EXPECT_EQ(values_of(mi), ri) << dt;
  }
  const Tensor i8 = ox::full({300}, 100, ox::kI8);
  EXPECT_EQ(i8.cumsum(0).to_vector<int64_t>().back(), 30000);  // no i8 overflow
  const Tensor f = ox::tensor({1.5f, 2.5f});
  EXPECT_EQ(f.cumsum(0, ox::kI32).dtype(), ox::kI32);
  EXPECT_EQ(f.cumsum(0, ox::kI32).to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ox::tensor({1, 2}).cumsum(0, ox::kF64).dtype(), ox::kF64);
  // f16 running sums are kept in f64: 3000 ones reach 3000 (f16 holds integers up to 2048 and
  // then every second one; 3000 is exact).
  EXPECT_EQ(ox::ones({3000}, ox::kF16).cumsum(0).to_vector<float>().back(), 3000.0f);
}

TEST(Scan, EmptyScalarAndBadDims) {
  EXPECT_EQ(ox::zeros({0}).cumsum(0).numel(), 0);
  EXPECT_EQ(oxtest::shape_of(std::get<1>(ox::zeros({1, 0, 3}).cummax(2))), (ShapeV{1, 0, 3}));
  const Tensor s = ox::scalar_tensor(4.0);
  EXPECT_EQ(s.cumsum(0).item<float>(), 4.0f);
  EXPECT_EQ(s.cumprod(-1).item<float>(), 4.0f);
  EXPECT_EQ(std::get<1>(s.cummin(0)).item<int64_t>(), 0);
  const Tensor x = ox::zeros({2, 3});
  EXPECT_EQ(kind_of([&] { x.cumsum(2); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { x.cumprod(-3); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { x.cummax(5); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([] { ox::cumsum(Tensor(), 0); }), ErrorKind::Value);
}

TEST(Scan, BitwiseTheSameForOneAndTwoThreads) {
  for (Lay lay : {Lay::Contig, Lay::Transposed})
    for (int64_t dim : {0, 1}) {
      const Tensor x = make_input({1029, 917}, ox::kF32, lay, uniform(-1, 1, 45));
      const auto sum = [&] { return x.cumsum(dim); };
      EXPECT_EQ(bytes_of(with_threads(1, sum)), bytes_of(with_threads(2, sum))) << dim;
      const auto ext = [&] { return std::get<1>(x.cummax(dim)); };
      EXPECT_EQ(bytes_of(with_threads(1, ext)), bytes_of(with_threads(2, ext))) << dim;
    }
}

}  // namespace
