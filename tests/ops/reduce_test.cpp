// sum, mean, prod, amax/amin, max/min (values and indices), argmax/argmin, all, any and
// count_nonzero against long-double references written in reduce_util.h, on docs/TESTING.md's
// shapes and layouts; every non-contiguous layout must also give bitwise the result of its
// contiguous copy (the kernels promise a result that depends on the values alone). Then dims
// handling, keepdim, dtypes, NaN and ties, empty extents and thread-count independence.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/reduce_util.h"

namespace {

using namespace rtest;
using ox::ErrorKind;
using oxtest::kind_of;

// The dims tried on a shape: all, each dim, -1, the first and last together, and an unsorted
// pair on 3-d shapes.
std::vector<ShapeV> dim_sets(const ShapeV& shape) {
  const auto nd = static_cast<int64_t>(shape.size());
  std::vector<ShapeV> sets = {{}};
  for (int64_t d = 0; d < nd; ++d) sets.push_back({d});
  if (nd == 1 || nd == 3) sets.push_back({-1});
  if (nd == 3) sets.push_back({2, 0});
  return sets;
}

bool has_empty_extent(const ShapeV& shape, const ShapeV& dims) {
  const std::vector<bool> mask = mask_of(shape.size(), dims);
  for (size_t d = 0; d < shape.size(); ++d)
    if (mask[d] && shape[d] == 0) return true;
  return false;
}

enum class Check { Sum, Mean, Prod, Exact };

struct Case {
  const char* name;
  // Returns an undefined tensor when the op does not take this set of dims.
  std::function<Tensor(const Tensor&, const ShapeV&, bool)> op;
  std::function<double(const std::vector<double>&)> ref;
  Check check;
  bool needs_nonempty;
  DType (*out_dtype)(DType);
};

DType same(DType dt) { return dt; }
DType accumulated(DType dt) { return ox::is_floating(dt) ? dt : ox::kI64; }
DType to_i64(DType) { return ox::kI64; }
DType to_bool(DType dt) { return dt == ox::kU8 ? ox::kU8 : ox::kBool; }

std::optional<int64_t> single_dim(const ShapeV& dims, bool* ok) {
  *ok = dims.size() <= 1;
  return dims.empty() ? std::nullopt : std::optional<int64_t>(dims[0]);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"sum", [](const Tensor& x, const ShapeV& d, bool k) { return ox::sum(x, d, k); }, ref_sum,
       Check::Sum, false, accumulated},
      {"mean", [](const Tensor& x, const ShapeV& d, bool k) { return x.mean(d, k); },
       [](const std::vector<double>& v) { return ref_sum(v) / double(v.size()); }, Check::Mean,
       true, same},
      {"prod",
       [](const Tensor& x, const ShapeV& d, bool k) {
         bool ok;
         const auto dim = single_dim(d, &ok);
         if (!ok) return Tensor();
         return dim ? x.prod(*dim, k) : (k ? Tensor() : x.prod());
       },
       ref_prod, Check::Prod, false, accumulated},
      {"amax", [](const Tensor& x, const ShapeV& d, bool k) { return ox::amax(x, d, k); },
       [](const std::vector<double>& v) { return ref_extreme(v, true); }, Check::Exact, true, same},
      {"amin", [](const Tensor& x, const ShapeV& d, bool k) { return x.amin(d, k); },
       [](const std::vector<double>& v) { return ref_extreme(v, false); }, Check::Exact, true,
       same},
      {"argmax",
       [](const Tensor& x, const ShapeV& d, bool k) {
         bool ok;
         const auto dim = single_dim(d, &ok);
         return ok ? x.argmax(dim, k) : Tensor();
       },
       [](const std::vector<double>& v) { return double(ref_arg(v, true)); }, Check::Exact, true,
       to_i64},
      {"argmin",
       [](const Tensor& x, const ShapeV& d, bool k) {
         bool ok;
         const auto dim = single_dim(d, &ok);
         return ok ? ox::argmin(x, dim, k) : Tensor();
       },
       [](const std::vector<double>& v) { return double(ref_arg(v, false)); }, Check::Exact, true,
       to_i64},
      {"all", [](const Tensor& x, const ShapeV& d, bool k) { return x.all(d, k); },
       [](const std::vector<double>& v) {
         return double(std::all_of(v.begin(), v.end(), [](double a) { return a != 0; }));
       },
       Check::Exact, false, to_bool},
      {"any", [](const Tensor& x, const ShapeV& d, bool k) { return ox::any(x, d, k); },
       [](const std::vector<double>& v) {
         return double(std::any_of(v.begin(), v.end(), [](double a) { return a != 0; }));
       },
       Check::Exact, false, to_bool},
      {"count_nonzero",
       [](const Tensor& x, const ShapeV& d, bool k) {
         return k ? Tensor() : ox::count_nonzero(x, d);
       },
       [](const std::vector<double>& v) {
         return double(std::count_if(v.begin(), v.end(), [](double a) { return a != 0; }));
       },
       Check::Exact, false, to_i64},
  };
  return all;
}

Tol tol_for(Check c, DType dt, size_t n) {
  Tol t = sum_tol(dt);
  if (c == Check::Exact) return {0, 0, 0};
  if (c == Check::Prod && ox::is_floating(dt)) {
    // A product of K factors rounds K - 1 times, in any order.
    const double u = dt == ox::kF64 ? 0x1p-53 : 0x1p-24;
    t.rtol += 2.0 * static_cast<double>(n) * u;
    t.sum_rel = 0;
  }
  return t;
}

// Checks one op on one input against the reference, and bitwise against the contiguous copy
// (and its keepdim form, on contiguous inputs).
void check_case(const Case& c, const Tensor& x, const ShapeV& dims, const std::string& what) {
  const ShapeV shape = oxtest::shape_of(x);
  if (c.needs_nonempty && has_empty_extent(shape, dims)) {
    try {
      if (c.op(x, dims, false).defined()) ADD_FAILURE() << what << ": expected an Empty error";
    } catch (const ox::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Empty) << what;
      EXPECT_TRUE(oxtest::contains(e, std::string("[") + c.name + "]")) << e.what();
      EXPECT_TRUE(oxtest::contains(e, str(shape))) << e.what();
    }
    return;
  }
  const Tensor out = c.op(x, dims, false);
  if (!out.defined()) return;
  const Rows rows = rows_of(shape, values_of(x), dims);
  ASSERT_EQ(oxtest::shape_of(out), rows.out_shape) << what;
  EXPECT_EQ(out.dtype(), c.out_dtype(x.dtype())) << what;
  std::vector<double> expected, abs_sums;
  for (const auto& row : rows.rows) {
    expected.push_back(c.ref(row));
    abs_sums.push_back(ref_abs_sum(row) / (c.check == Check::Mean ? double(row.size()) : 1.0));
  }
  const size_t n = rows.rows.empty() ? 0 : rows.rows[0].size();
  expect_values(values_of(out), expected, tol_for(c.check, x.dtype(), n), what, abs_sums);
  if (!x.is_contiguous()) {
    EXPECT_EQ(bytes_of(out), bytes_of(c.op(x.contiguous(), dims, false))) << what << " bitwise";
    return;
  }
  const Tensor kept = c.op(x, dims, true);
  if (!kept.defined()) return;
  ShapeV keep = shape;
  const std::vector<bool> mask = mask_of(shape.size(), dims);
  for (size_t d = 0; d < shape.size(); ++d)
    if (mask[d]) keep[d] = 1;
  EXPECT_EQ(oxtest::shape_of(kept), keep) << what << " keepdim";
  EXPECT_EQ(bytes_of(kept), bytes_of(out)) << what << " keepdim";
}

Source source_for(const Case& c, DType dt) {
  const std::string op = c.name;
  if (op == "prod") return uniform(0.99, 1.01, 7);
  if (op == "all" || op == "any" || op == "count_nonzero") return integers(-1, 1, 4);
  if (!ox::is_floating(dt)) return integers(dt == ox::kU8 || dt == ox::kBool ? 0 : -4, 4);
  return uniform(-1, 1, 3);
}

const Case& case_named(const std::string& op) {
  for (const Case& c : cases())
    if (op == c.name) return c;
  throw std::runtime_error("no case " + op);
}

void check_shapes_dims_layouts(const std::string& op) {
  const Case& c = case_named(op);
  for (const ShapeV& shape : kShapes)
    for (const ShapeV& dims : dim_sets(shape))
      for (Lay lay : kLayouts)
        check_case(c, make_input(shape, ox::kF32, lay, source_for(c, ox::kF32)), dims,
                   op + " of " + str(shape) + " over " + str(dims) + ", " + name(lay));
}

// Each op on every shape, dims set and layout, in f32.
TEST(Reduce, SumShapesDimsLayouts) { check_shapes_dims_layouts("sum"); }
TEST(Reduce, MeanShapesDimsLayouts) { check_shapes_dims_layouts("mean"); }
TEST(Reduce, ProdShapesDimsLayouts) { check_shapes_dims_layouts("prod"); }
TEST(Reduce, AmaxShapesDimsLayouts) { check_shapes_dims_layouts("amax"); }
TEST(Reduce, AminShapesDimsLayouts) { check_shapes_dims_layouts("amin"); }
TEST(Reduce, ArgmaxShapesDimsLayouts) { check_shapes_dims_layouts("argmax"); }
TEST(Reduce, ArgminShapesDimsLayouts) { check_shapes_dims_layouts("argmin"); }
TEST(Reduce, AllShapesDimsLayouts) { check_shapes_dims_layouts("all"); }
TEST(Reduce, AnyShapesDimsLayouts) { check_shapes_dims_layouts("any"); }
TEST(Reduce, CountNonzeroShapesDimsLayouts) { check_shapes_dims_layouts("count_nonzero"); }

TEST(Reduce, EveryDtypeEachOpTakes) {
  const ShapeV shape = {37, 29};  // a transposed input takes the strided paths
  for (const Case& c : cases())
    for (DType dt : ox::kAllDTypes) {
      if (std::string(c.name) == "mean" && !ox::is_floating(dt)) continue;  // refused below
      for (const ShapeV& dims : dim_sets(shape))
        for (Lay lay : {Lay::Contig, Lay::Transposed})
          check_case(c, make_input(shape, dt, lay, source_for(c, dt)), dims,
                     std::string(c.name) + " " + std::string(ox::dtype_name(dt)) + " over " +
                         str(dims) + ", " + name(lay));
    }
}

TEST(Reduce, SixteenBitProductsAndSumsAccumulateInF32) {
  // 2048 halves of 1 + 2^-10: f16 accumulation would stall at 2048 (spacing 2 there).
  for (DType dt : {ox::kF16, ox::kBF16}) {
    const Tensor ones = ox::full({4096}, 1.0, dt);
    EXPECT_EQ(ones.sum().item<double>(), 4096.0) << dt;
    EXPECT_EQ(ones.mean().item<double>(), 1.0) << dt;
    // 0.25^20 underflows f16 (and 4^20 overflows it); the f32 accumulator holds both.
    const Tensor quarters = ox::cat({ox::full({20}, 0.25, dt), ox::full({20}, 4.0, dt)});
    EXPECT_EQ(quarters.prod().item<double>(), 1.0) << dt;
  }
  EXPECT_EQ(ox::full({3000}, 1.0, ox::kF16).sum().item<double>(), 3000.0);  // f16 would give 2048
}

TEST(Reduce, IntegerSumsAndProductsGiveI64AndWrap) {
  const Tensor big = ox::full({5}, int64_t(1) << 62, ox::kI64);
  EXPECT_EQ(big.sum().item<int64_t>(), int64_t(1) << 62);  // 5 * 2^62 wraps mod 2^64
  const Tensor i8 = ox::full({1000}, 100, ox::kI8);
  EXPECT_EQ(i8.sum().dtype(), ox::kI64);
  EXPECT_EQ(i8.sum().item<int64_t>(), 100000);  // no i8 overflow
  const Tensor b = ox::tensor({true, false, true, true});
  EXPECT_EQ(b.sum().dtype(), ox::kI64);
  EXPECT_EQ(b.sum().item<int64_t>(), 3);
  EXPECT_EQ(b.prod().item<int64_t>(), 0);
  EXPECT_EQ(ox::full({63}, 2, ox::kI32).prod().item<int64_t>(), INT64_MIN);  // 2^63 wraps
  EXPECT_EQ(ox::full({64}, 2, ox::kI32).prod().item<int64_t>(), 0);
  EXPECT_EQ(ox::arange(1, 11).prod().item<int64_t>(), 3628800);
}

TEST(Reduce, DtypeArgumentConvertsTheInputFirst) {
  const Tensor x = ox::tensor({1.7f, 2.9f, -0.5f});
  const Tensor as_int = x.sum({}, false, ox::kI32);  // 1 + 2 + 0, as x.to(i32).sum()
  EXPECT_EQ(as_int.dtype(), ox::kI32);
  EXPECT_EQ(as_int.item<int64_t>(), 3);
  const Tensor i = ox::tensor({1, 2, 3});
  const Tensor f = ox::sum(i, {}, false, ox::kF64);
  EXPECT_EQ(f.dtype(), ox::kF64);
  EXPECT_EQ(f.item<double>(), 6.0);
  EXPECT_EQ(ox::mean(i, {}, false, ox::kF32).item<float>(), 2.0f);
  EXPECT_EQ(ox::prod(i, ox::kF32).dtype(), ox::kF32);
  EXPECT_EQ(ox::prod(i, 0, false, ox::kI16).dtype(), ox::kI16);
}

TEST(Reduce, MeanRefusesIntegerAndBoolInputs) {
  for (DType dt : {ox::kI64, ox::kI32, ox::kU8, ox::kBool}) {
    const ox::Error e = oxtest::caught([&] { ox::zeros({3}, dt).mean(); });
    EXPECT_EQ(e.kind(), ErrorKind::DType) << dt;
    EXPECT_TRUE(oxtest::contains(e, "[mean]")) << e.what();
  }
}

TEST(Reduce, MaxAndMinWithDimGiveValuesAndFirstIndices) {
  for (Lay lay : kLayouts)
    for (int64_t dim : {0, 1, -1}) {
      const Tensor x = make_input({1029, 917}, ox::kF32, lay, integers(-20, 20, 5));
      const Rows rows = rows_of({1029, 917}, values_of(x), {dim});
      for (bool is_max : {true, false}) {
        auto [values, indices] = is_max ? x.max(dim) : ox::min(x, dim);
        ASSERT_EQ(oxtest::shape_of(values), rows.out_shape);
        EXPECT_EQ(indices.dtype(), ox::kI64);
        const std::vector<double> v = values_of(values), i = values_of(indices);
        for (size_t o = 0; o < rows.rows.size(); ++o) {
          ASSERT_EQ(i[o], double(ref_arg(rows.rows[o], is_max))) << name(lay) << " " << o;
          ASSERT_EQ(v[o], ref_extreme(rows.rows[o], is_max)) << name(lay) << " " << o;
        }
        auto [kv, ki] = is_max ? ox::max(x, dim, true) : x.min(dim, true);
        ShapeV keep = {1029, 917};
        keep[static_cast<size_t>(dim < 0 ? dim + 2 : dim)] = 1;
        EXPECT_EQ(oxtest::shape_of(kv), keep);
        EXPECT_EQ(oxtest::shape_of(ki), keep);
        EXPECT_EQ(bytes_of(kv), bytes_of(values));
      }
    }
}

TEST(Reduce, NanPropagatesAndArgmaxGivesTheFirstNan) {
  // Rows of 3000 (three chunks): NaNs at 1500 and 2900, a larger value after the first NaN.
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 97) - 40.0f;
  v[1500] = NAN;
  v[2900] = NAN;
  v[2000] = 1e30f;
  const Tensor row = ox::tensor(v);
  EXPECT_TRUE(std::isnan(row.max().item<float>()));
  EXPECT_TRUE(std::isnan(row.min().item<float>()));
  EXPECT_TRUE(std::isnan(row.amax().item<float>()));
  EXPECT_TRUE(std::isnan(row.sum().item<float>()));
  EXPECT_TRUE(std::isnan(row.mean().item<float>()));
  EXPECT_EQ(row.argmax().item<int64_t>(), 1500);
  EXPECT_EQ(row.argmin().item<int64_t>(), 1500);
  // The same along a non-innermost dim (the outer loop), one NaN column among plain ones.
  const Tensor cols = row.reshape({3000, 1}).expand({3000, 5}).contiguous();
  auto [values, indices] = cols.max(0);
  for (double i : values_of(indices)) EXPECT_EQ(i, 1500.0);
  for (double x : values_of(values)) EXPECT_TRUE(std::isnan(x));
  EXPECT_EQ(values_of(cols.argmin(0)), std::vector<double>(5, 1500.0));
  // NaN in f16 and f64 too; a NaN at index 0.
  for (DType dt : {ox::kF16, ox::kBF16, ox::kF64}) {
    const Tensor t = ox::tensor(std::vector<double>{NAN, 5, NAN, 7}, {.dtype = dt});
    EXPECT_EQ(t.argmax().item<int64_t>(), 0) << dt;
    EXPECT_TRUE(std::isnan(t.amin().item<double>())) << dt;
  }
}

TEST(Reduce, NanResultsAreBitwiseTheSameInEveryLayout) {
  // NaNs with different payloads and signs scattered over a matrix: whichever loop a layout
  // takes, the NaN a max, min or sum gives is the same bits.
  const ShapeV shape = {1029, 917};
  std::vector<float> v(static_cast<size_t>(oxtest::product(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(uniform_at(static_cast<int64_t>(i), 51, -1, 1));
    if (i % 4999 == 7) {
      const uint32_t bits = 0x7fc00000u | static_cast<uint32_t>(i % 1000) | (i % 3 ? 0u : 1u << 31);
      std::memcpy(&v[i], &bits, 4);
    }
  }
  const Tensor x = ox::tensor(v, ox::Shape(shape));
  const Tensor xt = ox::tensor(v, ox::Shape(shape)).t().contiguous().t();  // column-major copy
  for (int64_t dim : {0, 1}) {
    EXPECT_EQ(bytes_of(x.amax(dim)), bytes_of(xt.amax(dim))) << dim;
    EXPECT_EQ(bytes_of(x.amin(dim)), bytes_of(xt.amin(dim))) << dim;
    EXPECT_EQ(bytes_of(x.sum(dim)), bytes_of(xt.sum(dim))) << dim;
    EXPECT_EQ(bytes_of(x.argmax(dim)), bytes_of(xt.argmax(dim))) << dim;
  }
  EXPECT_EQ(bytes_of(x.amax()), bytes_of(xt.amax()));
}

TEST(Reduce, SubnormalsInfinitiesAndHugeValues) {
  const float tiny = std::ldexp(1.0f, -149);  // the smallest subnormal: sums of them are exact
  EXPECT_EQ(ox::full({1000}, tiny).sum().item<float>(), 1000 * tiny);
  EXPECT_EQ(ox::full({1000}, tiny).amin().item<float>(), tiny);
  // Elements 0 and 1 meet first in the lane tree, so the 1e20s cancel before the 1 is added.
  EXPECT_EQ(ox::tensor({1e20f, -1e20f, 1.f}).sum().item<float>(), 1.0f);
  EXPECT_EQ(ox::tensor({1e20f, INFINITY, -1e20f}).amax().item<float>(), INFINITY);
  EXPECT_EQ(ox::tensor({1e20f, -INFINITY}).argmin().item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(ox::tensor({INFINITY, -INFINITY}).sum().item<float>()));
  EXPECT_EQ(ox::tensor({INFINITY, 1.f}).mean().item<float>(), INFINITY);
  EXPECT_EQ(ox::tensor({-0.f, -0.f}).amax().item<float>(), 0.0f);
}

TEST(Reduce, TiesGiveTheFirstIndex) {
  EXPECT_EQ(ox::tensor({1.f, 3.f, 3.f, 2.f}).argmax().item<int64_t>(), 1);
  EXPECT_EQ(ox::tensor({4, 1, 3, 1}).argmin().item<int64_t>(), 1);
  EXPECT_EQ(ox::tensor({0.f, -0.f}).argmax().item<int64_t>(), 0);  // -0 == +0: a tie
  EXPECT_EQ(ox::tensor({-0.f, 0.f}).argmin().item<int64_t>(), 0);
  const Tensor flat = ox::full({5000}, 2.5);
  EXPECT_EQ(flat.argmax().item<int64_t>(), 0);
  EXPECT_EQ(flat.argmin().item<int64_t>(), 0);
  const Tensor cols = ox::full({3000, 7}, 1, ox::kI32);
  EXPECT_EQ(values_of(cols.argmax(0)), std::vector<double>(7, 0.0));
  EXPECT_EQ(values_of(std::get<1>(cols.min(0))), std::vector<double>(7, 0.0));
  EXPECT_EQ(ox::tensor({true, false, true}).argmax().item<int64_t>(), 0);
  EXPECT_EQ(ox::tensor({-kInf, -kInf}).argmax().item<int64_t>(), 0);
}

TEST(Reduce, EmptyExtents) {
  const Tensor e = ox::zeros({0});
  EXPECT_EQ(e.sum().item<float>(), 0.0f);
  EXPECT_EQ(e.prod().item<float>(), 1.0f);
  EXPECT_EQ(ox::zeros({0}, ox::kI32).sum().item<int64_t>(), 0);
  EXPECT_EQ(ox::zeros({0}, ox::kI32).prod().item<int64_t>(), 1);
  EXPECT_TRUE(e.all().item<bool>());
  EXPECT_FALSE(e.any().item<bool>());
  EXPECT_EQ(e.count_nonzero().item<int64_t>(), 0);
  for (const char* op : {"max", "min", "amax", "amin", "argmax", "argmin", "mean"}) {
    const ox::Error err = oxtest::caught([&] {
      const std::string o = op;
      if (o == "max") e.max();
      if (o == "min") e.min();
      if (o == "amax") e.amax();
      if (o == "amin") e.amin();
      if (o == "argmax") e.argmax();
      if (o == "argmin") e.argmin();
      if (o == "mean") e.mean();
    });
    EXPECT_EQ(err.kind(), ErrorKind::Empty) << op;
    EXPECT_TRUE(oxtest::contains(err, std::string("[") + op + "]")) << err.what();
    EXPECT_TRUE(oxtest::contains(err, "[0]")) << err.what();
  }
  // (0, 3): reducing the non-empty dim is fine and gives an empty result.
  const Tensor m = ox::zeros({0, 3});
  EXPECT_EQ(oxtest::shape_of(std::get<0>(m.max(1))), (ShapeV{0}));
  EXPECT_EQ(oxtest::shape_of(m.amax(1, true)), (ShapeV{0, 1}));
  EXPECT_EQ(oxtest::shape_of(m.argmax(1)), (ShapeV{0}));
  EXPECT_EQ(kind_of([&] { m.max(0); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([&] { m.argmin(0); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([&] { m.amax(); }), ErrorKind::Empty);
  // Sums over the empty dim are zeros of the kept shape.
  const Tensor s = ox::ones({1, 0, 3}).sum(1);
  EXPECT_EQ(oxtest::shape_of(s), (ShapeV{1, 3}));
  EXPECT_EQ(values_of(s), std::vector<double>(3, 0.0));
  EXPECT_EQ(values_of(ox::ones({1, 0, 3}).prod(1, true)), std::vector<double>(3, 1.0));
  EXPECT_EQ(oxtest::shape_of(ox::ones({1, 0, 3}).sum(0)), (ShapeV{0, 3}));
}

TEST(Reduce, DimsNegativeDuplicateOutOfRangeAndScalars) {
  const Tensor x = make_input({2, 3, 4}, ox::kF32, Lay::Contig, uniform(-1, 1));
  EXPECT_EQ(bytes_of(x.sum({-1, 0})), bytes_of(x.sum({2, 0})));
  EXPECT_EQ(bytes_of(x.sum({0, 2})), bytes_of(x.sum({2, 0})));
  EXPECT_EQ(oxtest::shape_of(x.sum({0, 2}, true)), (ShapeV{1, 3, 1}));
  EXPECT_EQ(oxtest::shape_of(x.sum({}, true)), (ShapeV{1, 1, 1}));
  EXPECT_EQ(oxtest::shape_of(x.argmax(std::nullopt, true)), (ShapeV{1, 1, 1}));
  EXPECT_EQ(oxtest::shape_of(x.argmax(1, true)), (ShapeV{2, 1, 4}));
  EXPECT_EQ(oxtest::shape_of(x.sum(1)), (ShapeV{2, 4}));
  const ox::Error dup = oxtest::caught([&] { x.sum({0, -3}); });
  EXPECT_EQ(dup.kind(), ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(dup, "[sum]")) << dup.what();
  EXPECT_EQ(kind_of([&] { x.amax({1, 1}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { x.sum(3); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { x.mean({-4}); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { x.max(5); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { x.argmax(-4); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ox::sum(Tensor()); }), ErrorKind::Value);
  // A 0-d tensor takes dim 0 or -1 as itself.
  const Tensor s = ox::scalar_tensor(2.5);
  EXPECT_EQ(s.sum(0).item<float>(), 2.5f);
  EXPECT_EQ(oxtest::shape_of(s.sum(-1, true)), ShapeV{});
  EXPECT_EQ(s.argmax(0).item<int64_t>(), 0);
  EXPECT_EQ(std::get<0>(s.max(0)).item<float>(), 2.5f);
  EXPECT_EQ(kind_of([&] { s.sum({0, -1}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { s.sum(1); }), ErrorKind::Index);
}

TEST(Reduce, AllAnyCountAcrossDtypesAndNan) {
  const Tensor f = ox::tensor({0.f, NAN, -0.f, 2.f});
  EXPECT_EQ(f.count_nonzero().item<int64_t>(), 2);  // NaN is nonzero, -0 is zero
  EXPECT_FALSE(f.all().item<bool>());
  EXPECT_TRUE(f.any().item<bool>());
  EXPECT_TRUE(ox::tensor({NAN}).all().item<bool>());
  const Tensor u = ox::tensor(std::vector<uint8_t>{3, 0, 5});
  EXPECT_EQ(u.all().dtype(), ox::kU8);  // as PyTorch, for u8 only
  EXPECT_EQ(u.any().item<int64_t>(), 1);
  EXPECT_EQ(ox::tensor({1, 2}).all().dtype(), ox::kBool);
  const Tensor m = ox::tensor({{1, 0, 3}, {4, 5, 6}});
  EXPECT_EQ(values_of(m.all(1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values_of(m.any(0)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values_of(m.count_nonzero(0)), (std::vector<double>{2, 1, 2}));
  EXPECT_EQ(oxtest::shape_of(m.all(1, true)), (ShapeV{2, 1}));
}

// Inputs large enough that two threads split them: a full reduction of 2^22 elements and
// the two single-dim reductions of (1029, 917) in contiguous and transposed layouts.
TEST(Reduce, BitwiseTheSameForOneAndTwoThreads) {
  const Tensor flat = make_input({int64_t(1) << 22}, ox::kF32, Lay::Contig, uniform(-1, 2, 9));
  std::vector<std::pair<std::string, std::function<Tensor()>>> runs;
  for (const Case& c : cases()) {
    runs.emplace_back(std::string(c.name) + " flat", [&c, &flat] { return c.op(flat, {}, false); });
    for (Lay lay : {Lay::Contig, Lay::Transposed})
      for (int64_t dim : {0, 1}) {
        const Tensor x = make_input({1029, 917}, ox::kF32, lay, source_for(c, ox::kF32));
        runs.emplace_back(std::string(c.name) + " " + name(lay) + " dim " + std::to_string(dim),
                          [&c, x, dim] { return c.op(x, {dim}, false); });
      }
  }
  for (const auto& [what, run] : runs) {
    const Tensor one = with_threads(1, run), two = with_threads(2, run);
    EXPECT_EQ(bytes_of(one), bytes_of(two)) << what;
  }
  // The full sum is also accurate: compared with the long-double sum.
  const std::vector<double> v = values_of(flat);
  EXPECT_TRUE(close(flat.sum().item<float>(), ref_sum(v), sum_tol(ox::kF32), ref_abs_sum(v)));
}

TEST(Reduce, MethodsMatchFreeFunctions) {
  const Tensor x = make_input({6, 5}, ox::kF64, Lay::Contig, uniform(-3, 3, 11));
  EXPECT_EQ(bytes_of(x.sum(1)), bytes_of(ox::sum(x, 1)));
  EXPECT_EQ(bytes_of(x.mean(0, true)), bytes_of(ox::mean(x, 0, true)));
  EXPECT_EQ(bytes_of(x.max()), bytes_of(ox::max(x)));
  EXPECT_EQ(bytes_of(x.min()), bytes_of(ox::amin(x)));
  EXPECT_EQ(bytes_of(x.argmin(1)), bytes_of(ox::argmin(x, 1)));
  EXPECT_EQ(bytes_of(x.prod(0)), bytes_of(ox::prod(x, 0)));
}

}  // namespace
