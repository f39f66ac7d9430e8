// var, std, logsumexp and norm against long-double references (reduce_util.h) on docs/TESTING.md's
// shapes and layouts, bitwise equal to their contiguous copies; then the hard values: rows with
// mean 1e6 and spread 1e-3, all -inf and +inf rows, NaN, values whose squares overflow f32,
// corrections at and beyond n, empty extents, refused dtypes and thread-count independence.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ops/reduce_util.h"

namespace {

using namespace rtest;
using ox::ErrorKind;
using oxtest::kind_of;

struct Stat {
  std::string name;
  std::function<Tensor(const Tensor&, const ShapeV&, bool)> op;
  std::function<double(const std::vector<double>&)> ref;
  bool empty_is_error;
};

std::vector<Stat> stats() {
  std::vector<Stat> s = {
      {"var", [](const Tensor& x, const ShapeV& d, bool k) { return x.var(d, 1, k); },
       [](const std::vector<double>& v) { return ref_var(v, 1); }, true},
      {"var(correction 0)",
       [](const Tensor& x, const ShapeV& d, bool k) { return ox::var(x, d, 0, k); },
       [](const std::vector<double>& v) { return ref_var(v, 0); }, true},
      {"std", [](const Tensor& x, const ShapeV& d, bool k) { return ox::std(x, d, 1, k); },
       [](const std::vector<double>& v) { return std::sqrt(ref_var(v, 1)); }, true},
      {"logsumexp", [](const Tensor& x, const ShapeV& d, bool k) { return x.logsumexp(d, k); },
       ref_logsumexp, false},
  };
  for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, kInf, -kInf})
    s.push_back({"norm(" + std::to_string(p) + ")",
                 [p](const Tensor& x, const ShapeV& d, bool k) { return x.norm(p, d, k); },
                 [p](const std::vector<double>& v) { return ref_norm(v, p); }, std::isinf(p)});
  return s;
}

std::vector<ShapeV> dim_sets(const ShapeV& shape) {
  std::vector<ShapeV> sets = {{}};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) sets.push_back({d});
  if (shape.size() == 3) sets.push_back({-1, 0});
  return sets;
}

// Values a 16-bit result cannot hold round to infinity.
double in_range(double e, DType dt) {
  const double limit = dt == ox::kF16 ? 65520.0 : dt == ox::kBF16 ? 0x1.ffp127 : kInf;
  return std::fabs(e) >= limit ? std::copysign(kInf, e) : e;
}

void check_stat(const Stat& s, const Tensor& x, const Rows& rows, const ShapeV& dims,
                const std::string& what) {
  const ShapeV shape = oxtest::shape_of(x);
  bool empty_extent = false;
  const std::vector<bool> mask = mask_of(shape.size(), dims);
  for (size_t d = 0; d < shape.size(); ++d) empty_extent = empty_extent || (mask[d] && !shape[d]);
  if (empty_extent && s.empty_is_error) {
    const ox::Error e = oxtest::caught([&] { s.op(x, dims, false); });
    EXPECT_EQ(e.kind(), ErrorKind::Empty) << what;
    EXPECT_TRUE(oxtest::contains(e, str(shape))) << e.what();
    return;
  }
  const Tensor out = s.op(x, dims, false);
  ASSERT_EQ(oxtest::shape_of(out), rows.out_shape) << what;
  EXPECT_EQ(out.dtype(), x.dtype()) << what;
  std::vector<double> expected;
  for (const auto& row : rows.rows)
    expected.push_back(row.empty() && s.name == "logsumexp" ? -kInf
                                                            : in_range(s.ref(row), x.dtype()));
  // f32 logsumexp sums exp in f32: a sum of positive terms, so relative to the result.
  expect_values(values_of(out), expected, value_tol(x.dtype()), what);
  if (!x.is_contiguous()) {
    EXPECT_EQ(bytes_of(out), bytes_of(s.op(x.contiguous(), dims, false))) << what << " bitwise";
  } else {
    const Tensor kept = s.op(x, dims, true);
    EXPECT_EQ(kept.numel(), out.numel()) << what;
    EXPECT_EQ(bytes_of(kept), bytes_of(out)) << what << " keepdim";
  }
}

// `core`: only var, std, logsumexp and the 2, 3 and inf norms (the large shape's time).
void check_all(const Tensor& x, const ShapeV& dims, const std::string& what, bool core = false) {
  const Rows rows = rows_of(oxtest::shape_of(x), values_of(x), dims);
  for (const Stat& s : stats())
    if (!core || s.name == "var" || s.name == "std" || s.name == "logsumexp" ||
        s.name == "norm(2.000000)" || s.name == "norm(3.000000)" || s.name == "norm(inf)")
      check_stat(s, x, rows, dims, s.name + " of " + what);
}

void check_shape(const ShapeV& shape, bool core = false) {
  for (const ShapeV& dims : dim_sets(shape))
    for (Lay lay : kLayouts)
      check_all(make_input(shape, ox::kF32, lay, uniform(-2, 3, 13)), dims,
                str(shape) + " over " + str(dims) + ", " + name(lay), core);
}

TEST(ReduceStats, SmallShapesDimsLayouts) {
  for (const ShapeV& shape : kShapes)
    if (oxtest::product(shape) < 1000) check_shape(shape);
}
TEST(ReduceStats, LargeShapeDimsLayouts) { check_shape({1029, 917}, /*core=*/true); }

TEST(ReduceStats, EveryFloatingDtype) {
  for (DType dt : {ox::kF64, ox::kF16, ox::kBF16})
    for (const ShapeV& dims : std::vector<ShapeV>{{}, {0}, {1}})
      for (Lay lay : {Lay::Contig, Lay::Transposed})
        check_all(make_input({41, 37}, dt, lay, uniform(-2, 3, 17)), dims,
                  std::string(ox::dtype_name(dt)) + " over " + str(dims) + ", " + name(lay));
}

TEST(ReduceStats, VarianceOfRowsWithMean1e6AndSpread1em3) {
  // f64 rows: E[x^2] - E[x]^2 would lose everything (1e12 vs 1e-7); two passes keep ~1e-9.
  const Source src = [](int64_t i) { return 1e6 + 1e-3 * uniform_at(i, 21, -1, 1); };
  for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Flipped})
    for (int64_t dim : {0, 1}) {
      const Tensor x = make_input({300, 2000}, ox::kF64, lay, src);
      const Rows rows = rows_of({300, 2000}, values_of(x), {dim});
      std::vector<double> var_ref, std_ref;
      for (const auto& row : rows.rows) {
        var_ref.push_back(ref_var(row, 1));
        std_ref.push_back(std::sqrt(var_ref.back()));
      }
      const std::string what = std::string(name(lay)) + " dim " + std::to_string(dim);
      expect_values(values_of(x.var(dim)), var_ref, {0, 1e-8, 0}, "var " + what);
      expect_values(values_of(x.std(dim)), std_ref, {0, 1e-8, 0}, "std " + what);
    }
  // f32: the stored values are 1e6 plus multiples of 2^-4; the f64 accumulators get their
  // variance to f32 precision.
  const Tensor f = make_input({64, 5000}, ox::kF32, Lay::Contig,
                              [](int64_t i) { return 1e6 + uniform_at(i, 22, -1, 1); });
  const Rows rows = rows_of({64, 5000}, values_of(f), {1});
  std::vector<double> ref;
  for (const auto& row : rows.rows) ref.push_back(ref_var(row, 1));
  expect_values(values_of(f.var(1)), ref, {0, 1e-6, 0}, "f32 var");
}

TEST(ReduceStats, CorrectionAtAndBeyondTheCount) {
  EXPECT_TRUE(std::isnan(ox::tensor({1.f}).var().item<float>()));        // 0 / 0
  EXPECT_EQ(ox::tensor({1.f, 3.f}).var({}, 2).item<float>(), INFINITY);  // 2 / 0
  EXPECT_EQ(ox::tensor({1.f, 3.f}).var({}, 3).item<float>(), INFINITY);  // divides by max(n-c, 0)
  EXPECT_EQ(ox::tensor({1.0, 3.0}, {.dtype = ox::kF64}).var({}, 0).item<double>(), 1.0);
  EXPECT_EQ(ox::tensor({1.0, 3.0}, {.dtype = ox::kF64}).var({}, 0.5).item<double>(), 2.0 / 1.5);
  EXPECT_EQ(ox::tensor({1.0, 3.0}, {.dtype = ox::kF64}).std().item<double>(), std::sqrt(2.0));
  EXPECT_EQ(ox::full({7}, 4.25).var().item<float>(), 0.0f);  // exactly: x - mean is 0
}

TEST(ReduceStats, LogsumexpIsStable) {
  const Tensor big = ox::tensor({{1000.f, 1000.f}, {-1000.f, -1000.f}});
  const std::vector<double> r = values_of(big.logsumexp(1));
  EXPECT_NEAR(r[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(r[1], -1000 + std::log(2.0), 1e-3);
  const Tensor special = ox::tensor({{-kInf, -kInf, -kInf},
                                     {-kInf, 1.0, kInf},
                                     {kInf, kInf, 0.0},
                                     {1.0, kNaN, kInf},
                                     {-kInf, 2.0, -kInf}},
                                    {.dtype = ox::kF64});
  const std::vector<double> v = values_of(special.logsumexp(1));
  EXPECT_EQ(v[0], -kInf);  // all -inf: -inf, not NaN
  EXPECT_EQ(v[1], kInf);
  EXPECT_EQ(v[2], kInf);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], 2.0);
  EXPECT_EQ(ox::logsumexp(ox::full({0, 3}, 1.0), 0).to_vector<float>(),
            std::vector<float>(3, -INFINITY));  // log of an empty sum
  // Long rows across chunks: 5000 copies of 3 give 3 + log(5000).
  EXPECT_NEAR(ox::full({5000}, 3.0).logsumexp().item<double>(), 3 + std::log(5000.0), 1e-5);
  // Integers compute in f32, as PyTorch.
  const Tensor i = ox::tensor({1, 2, 3}).logsumexp();
  EXPECT_EQ(i.dtype(), ox::kF32);
  EXPECT_NEAR(i.item<double>(), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
}

TEST(ReduceStats, NormsAccumulateWithoutOverflowAndPropagateNan) {
  const Tensor big = ox::tensor({3e20f, 4e20f});  // squares overflow f32, not the f64 sum
  EXPECT_NEAR(big.norm().item<double>() / 5e20, 1.0, 1e-6);
  EXPECT_NEAR(big.norm(3).item<double>() / std::cbrt(27e60 + 64e60), 1.0, 1e-6);
  const Tensor tiny = ox::tensor({3e-30f, 4e-30f});  // squares underflow f32
  EXPECT_NEAR(tiny.norm().item<double>() / 5e-30, 1.0, 1e-6);
  const Tensor m = ox::tensor({{3.0, -4.0}, {0.0, 0.0}}, {.dtype = ox::kF64});
  EXPECT_EQ(values_of(m.norm(2, 1)), (std::vector<double>{5, 0}));
  EXPECT_EQ(values_of(m.norm(1, 1)), (std::vector<double>{7, 0}));
  EXPECT_EQ(values_of(m.norm(kInf, 1)), (std::vector<double>{4, 0}));
  EXPECT_EQ(values_of(m.norm(-kInf, 1)), (std::vector<double>{3, 0}));
  EXPECT_EQ(values_of(m.norm(0, 1)), (std::vector<double>{2, 0}));
  EXPECT_EQ(m.norm("fro").item<double>(), 5.0);
  EXPECT_EQ(bytes_of(m.norm("fro", {0, 1})), bytes_of(ox::norm(m, 2)));
  for (double p : {1.0, 2.0, 3.0, 0.5, kInf, -kInf})
    EXPECT_TRUE(std::isnan(ox::tensor({1.f, NAN, 2.f}).norm(p).item<float>())) << p;
  EXPECT_EQ(ox::tensor({1.f, NAN, 0.f, 2.f}).norm(0).item<float>(), 3.0f);  // NaN != 0
  // Empty extents: finite p >= 0 gives 0, inf and -inf have no value.
  EXPECT_EQ(ox::zeros({0}).norm().item<float>(), 0.0f);
  EXPECT_EQ(ox::zeros({0}).norm(1).item<float>(), 0.0f);
  EXPECT_EQ(kind_of([] { ox::zeros({0}).norm(kInf); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([] { ox::zeros({0, 2}).norm(-kInf, 0); }), ErrorKind::Empty);
  EXPECT_EQ(oxtest::shape_of(ox::zeros({0, 2}).norm(kInf, 1)), (ShapeV{0}));
  // The nuclear norm sums the singular values: those of m are 5 and 0.
  EXPECT_NEAR(m.norm("nuc").item<double>(), 5.0, 1e-12);
  EXPECT_EQ(kind_of([&] { m.norm("l2"); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { m.norm(NAN); }), ErrorKind::Value);
}

TEST(ReduceStats, RefusedDtypesAndEmptyExtents) {
  for (DType dt : {ox::kI64, ox::kI32, ox::kI8, ox::kU8, ox::kBool}) {
    const Tensor x = ox::ones({3}, dt);
    for (const char* op : {"var", "std", "norm"}) {
      const ox::Error e = oxtest::caught([&] {
        if (op == std::string("var")) x.var();
        if (op == std::string("std")) x.std();
        if (op == std::string("norm")) x.norm();
      });
      EXPECT_EQ(e.kind(), ErrorKind::DType) << op << " " << dt;
      EXPECT_TRUE(oxtest::contains(e, std::string("[") + op + "]")) << e.what();
    }
  }
  EXPECT_EQ(kind_of([] { ox::zeros({0}).var(); }), ErrorKind::Empty);
  EXPECT_EQ(kind_of([] { ox::zeros({2, 0}).std(1); }), ErrorKind::Empty);
  EXPECT_EQ(oxtest::shape_of(ox::zeros({2, 0}).var(0)), (ShapeV{0}));
  EXPECT_EQ(oxtest::shape_of(ox::zeros({2, 3}).var({0, 1}, 1, true)), (ShapeV{1, 1}));
}

TEST(ReduceStats, BitwiseTheSameForOneAndTwoThreads) {
  const Tensor flat = make_input({int64_t(1) << 22}, ox::kF32, Lay::Contig, uniform(-3, 5, 31));
  for (const Stat& s : stats()) {
    const auto full = [&] { return s.op(flat, {}, false); };
    EXPECT_EQ(bytes_of(with_threads(1, full)), bytes_of(with_threads(2, full))) << s.name;
    for (Lay lay : {Lay::Contig, Lay::Transposed})
      for (int64_t dim : {0, 1}) {
        const Tensor x = make_input({1029, 917}, ox::kF32, lay, uniform(-3, 5, 32));
        const auto run = [&] { return s.op(x, {dim}, false); };
        EXPECT_EQ(bytes_of(with_threads(1, run)), bytes_of(with_threads(2, run)))
            << s.name << " " << name(lay) << " dim " << dim;
      }
  }
  const std::vector<double> v = values_of(flat);
  EXPECT_TRUE(close(flat.var().item<float>(), ref_var(v, 1), value_tol(ox::kF32)));
  EXPECT_TRUE(close(flat.logsumexp().item<float>(), ref_logsumexp(v), value_tol(ox::kF32)));
}

}  // namespace
