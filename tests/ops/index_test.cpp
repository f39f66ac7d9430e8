// Indexing along one dim: gather, index_select, take, embedding, scatter, scatter_add,
// scatter_reduce, index_add, one_hot, nonzero. Every expected value comes from a loop here over
// values read back from the inputs.

#include <cmath>
#include <limits>

#include "ops/index_test_util.h"

namespace {

using namespace idxtest;
using ox::Tensor;

// ---- Reference loops -------------------------------------------------------------------------

// torch.gather: out[i] = x[i with dim d replaced by index[i]].
std::vector<double> ref_gather(const std::vector<double>& x, const ShapeV& xs, int64_t d,
                               const std::vector<int64_t>& idx, const ShapeV& is) {
  std::vector<double> out(static_cast<size_t>(oxtest::product(is)));
  oxtest::for_each_index(is, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    j[d] = idx[flat(i, is)];
    out[flat(i, is)] = x[flat(j, xs)];
  });
  return out;
}

enum class Red { Assign, Sum, Prod, Amax, Amin };

double combine(Red r, double a, double b) {
  switch (r) {
    case Red::Assign:
      return b;
    case Red::Sum:
      return a + b;
    case Red::Prod:
      return a * b;
    case Red::Amax:
      return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    case Red::Amin:
      return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
  }
  return 0;
}

// torch.scatter: x[i with dim d replaced by index[i]] op= src[i], in row-major order of index.
std::vector<double> ref_scatter(std::vector<double> x, const ShapeV& xs, int64_t d,
                                const std::vector<int64_t>& idx, const ShapeV& is,
                                const std::vector<double>& src, const ShapeV& ss, Red r) {
  oxtest::for_each_index(is, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j = i;
    j[d] = idx[flat(i, is)];
    double& target = x[flat(j, xs)];
    target = combine(r, target, src[flat(i, ss)]);
  });
  return x;
}

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(v[i])) << what << " at " << i;
    } else {
      EXPECT_EQ(v[i], want[i]) << what << " at " << i;
    }
  }
}

Source small_ints(uint64_t salt) {
  return [salt](int64_t i) { return double(integer_at(i, salt, -9, 9)); };
}

// ---- gather ----------------------------------------------------------------------------------

TEST(Gather, EveryLayoutOfInputAndIndex) {
  const ShapeV xs = {5, 7};
  for (Lay xl : kLayouts)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes)
        for (int64_t d : {0, 1, -1}) {
          const int64_t dd = d < 0 ? d + 2 : d;
          const ShapeV is = dd == 0 ? ShapeV{8, 6} : ShapeV{4, 9};
          const Tensor x = make(xs, ox::kF32, xl, [](int64_t i) { return i * 0.5 - 3; });
          const Tensor idx = make_index(is, idt, il, 0, xs[dd] - 1);
          const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) +
                                   " index, dim " + std::to_string(d);
          const Tensor out = ox::gather(x, d, idx);
          EXPECT_EQ(oxtest::shape_of(out), is) << what;
          EXPECT_EQ(out.dtype(), ox::kF32);
          expect_values(out, ref_gather(values(x), xs, dd, ints(idx), is), what);
        }
}

TEST(Gather, EveryDType) {
  const ShapeV xs = {4, 6}, is = {4, 5};
  for (DType dt : ox::kAllDTypes) {
    const Tensor x = make(xs, dt, Lay::Transposed, [&](int64_t i) {
      return dt == ox::kBool ? double(i % 3 == 0) : double(integer_at(i, 3, -100, 100));
    });
    const Tensor idx = make_index(is, ox::kI64, Lay::Contig, 0, 5);
    const Tensor out = ox::gather(x, 1, idx);
    EXPECT_EQ(out.dtype(), dt);
    expect_values(out, ref_gather(values(x), xs, 1, ints(idx), is), std::string("dtype"));
  }
}

TEST(Gather, ShapesFromTesting) {
  // 0-d input and index act as 1-d of size 1.
  const Tensor s = ox::scalar_tensor(4.5);
  EXPECT_EQ(ox::gather(s, 0, ox::scalar_tensor(0, {.dtype = ox::kI64})).item<double>(), 4.5);
  EXPECT_TRUE(ox::gather(s, 0, ox::scalar_tensor(0, {.dtype = ox::kI64})).shape().empty());
  // Empty indices give empty results and check nothing.
  EXPECT_EQ(ox::gather(ox::zeros({0}), 0, ox::zeros({0}, ox::kI64)).numel(), 0);
  const Tensor e = ox::gather(ox::zeros({1, 0, 3}), 2, ox::zeros({1, 0, 3}, ox::kI64));
  EXPECT_EQ(oxtest::shape_of(e), (ShapeV{1, 0, 3}));
  for (int64_t n : {1, 23, 812}) {
    const Tensor x = make({n}, ox::kF64, Lay::Flipped, [](int64_t i) { return i * 1.25; });
    const Tensor idx = make_index({2 * n}, ox::kI32, Lay::Narrowed, 0, n - 1, uint64_t(n));
    expect_values(ox::gather(x, 0, idx), ref_gather(values(x), {n}, 0, ints(idx), {2 * n}),
                  "n=" + std::to_string(n));
  }
}

TEST(Gather, LargeIsThreadIndependent) {
  const ShapeV xs = {1029, 917}, is = {1029, 400};
  const Tensor x = make(xs, ox::kF32, Lay::Transposed, [](int64_t i) { return i * 0.25; });
  const Tensor idx = make_index(is, ox::kI64, Lay::Contig, 0, 916, 9);
  expect_values(ox::gather(x, 1, idx), ref_gather(values(x), xs, 1, ints(idx), is), "large");
  expect_thread_independent([&] { return ox::gather(x, 1, idx); }, "gather");
  // Two bad indices far apart (in different threads' shares): the first in row-major order is
  // the one named, at any thread count.
  std::vector<int64_t> iv = ints(idx);
  iv[5 * 400 + 7] = -3;
  iv[1000 * 400 + 9] = 917;
  const Tensor bad = ox::tensor(iv, ox::Shape(is));
  for (int threads : {1, 2}) {
    ox::set_num_threads(threads);
    expect_index_error([&] { ox::gather(x, 1, bad); }, {"index -3", "size 917"}, "first bad");
  }
}

TEST(Gather, BadIndicesAndOperands) {
  const Tensor x = ox::zeros({3, 5});
  expect_index_error(
      [&] {
        ox::gather(x, 1, ox::tensor({{0, 7}, {1, 2}}));
      },
      {"[gather]", "index 7", "dimension 1", "size 5"}, "positive");
  expect_index_error(
      [&] {
        ox::gather(x, 1, ox::tensor({{0, 1}, {-1, 2}}));
      },
      {"index -1", "dimension 1", "size 5"}, "negative");
  expect_index_error(
      [&] {
        ox::gather(x, 0, ox::tensor(std::vector<int32_t>{3}, {1, 1}));
      },
      {"index 3", "dimension 0", "size 3"}, "i32");
  EXPECT_EQ(oxtest::kind_of([&] { ox::gather(x, 1, ox::zeros({3, 2})); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::gather(x, 1, ox::zeros({3, 2}, ox::kI16));
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { ox::gather(x, 1, ox::zeros({3}, ox::kI64)); }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::gather(x, 1, ox::zeros({4, 2}, ox::kI64));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::gather(x, 2, ox::zeros({3, 2}, ox::kI64));
            }),
            ox::ErrorKind::Index);
}

// ---- index_select ----------------------------------------------------------------------------

TEST(IndexSelect, EveryLayoutOfInputAndIndex) {
  const ShapeV xs = {6, 5};
  for (Lay xl : kLayouts)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes)
        for (int64_t d : {0, 1}) {
          const Tensor x = make(xs, ox::kF64, xl, [](int64_t i) { return i * 1.5 + 1; });
          const Tensor idx = make_index({9}, idt, il, 0, xs[d] - 1, 4);
          const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) + " index";
          const Tensor out = ox::index_select(x, d, idx);
          ShapeV os = xs;
          os[d] = 9;
          ASSERT_EQ(oxtest::shape_of(out), os) << what;
          const std::vector<double> xv = values(x);
          const std::vector<int64_t> iv = ints(idx);
          std::vector<double> want;
          oxtest::for_each_index(os, [&](const std::vector<int64_t>& i) {
            std::vector<int64_t> j = i;
            j[d] = iv[i[d]];
            want.push_back(xv[flat(j, xs)]);
          });
          expect_values(out, want, what);
        }
}

TEST(IndexSelect, ScalarsEmptyAndErrors) {
  const Tensor x = ox::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, {.dtype = ox::kF64});
  // A 0-d index selects one slice but keeps the dim.
  const Tensor r = ox::index_select(x, 1, ox::scalar_tensor(2, {.dtype = ox::kI64}));
  EXPECT_EQ(oxtest::shape_of(r), (ShapeV{2, 1}));
  EXPECT_EQ(values(r), (std::vector<double>{3, 6}));
  const Tensor s = ox::index_select(ox::scalar_tensor(7.0), 0, ox::tensor({0}));
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.item<double>(), 7.0);
  EXPECT_EQ(oxtest::shape_of(ox::index_select(x, 0, ox::zeros({0}, ox::kI64))), (ShapeV{0, 3}));
  expect_index_error(
      [&] {
        ox::index_select(x, 1, ox::tensor({0, 3}));
      },
      {"[index_select]", "index 3", "dimension 1", "size 3"}, "positive");
  expect_index_error([&] { ox::index_select(x, 0, ox::tensor({-1})); }, {"index -1", "size 2"},
                     "negative");
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::index_select(x, 0, ox::zeros({1, 1}, ox::kI64));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { ox::index_select(x, 0, ox::zeros({1}, ox::kF32)); }),
            ox::ErrorKind::DType);
}

// ---- take ------------------------------------------------------------------------------------

TEST(Take, WrapsNegativesOverEveryLayout) {
  const ShapeV xs = {4, 6};
  for (Lay xl : kLayouts)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes) {
        const Tensor x = make(xs, ox::kF32, xl, [](int64_t i) { return i - 10.0; });
        const Tensor idx = make_index({3, 5}, idt, il, -24, 23, 6);
        const std::vector<double> xv = values(x);
        std::vector<double> want;
        for (int64_t v : ints(idx)) want.push_back(xv[static_cast<size_t>(v < 0 ? v + 24 : v)]);
        const Tensor out = ox::take(x, idx);
        EXPECT_EQ(oxtest::shape_of(out), (ShapeV{3, 5}));
        expect_values(out, want, std::string(lay_name(xl)) + " x, " + lay_name(il) + " index");
      }
}

TEST(Take, Errors) {
  const Tensor x = ox::zeros({2, 3});
  expect_index_error([&] { ox::take(x, ox::tensor({6})); }, {"[take]", "index 6", "6 elements"},
                     "positive");
  expect_index_error([&] { ox::take(x, ox::tensor({-7})); }, {"index -7", "6 elements"},
                     "negative");
  expect_index_error([&] { ox::take(ox::zeros({0}), ox::tensor({0})); }, {"index 0", "0 elements"},
                     "empty input");
  EXPECT_EQ(ox::take(ox::zeros({0}), ox::zeros({0}, ox::kI64)).numel(), 0);
  EXPECT_EQ(oxtest::kind_of([&] { ox::take(x, ox::zeros({1}, ox::kF64)); }), ox::ErrorKind::DType);
}

// ---- embedding -------------------------------------------------------------------------------

TEST(Embedding, RowsOfEveryWeightLayout) {
  for (Lay wl : kLayouts)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes) {
        const Tensor w = make({10, 4}, ox::kF32, wl, [](int64_t i) { return i * 0.75; });
        const Tensor idx = make_index({3, 5}, idt, il, 0, 9, 8);
        const Tensor out = ox::embedding(w, idx, /*padding_idx=*/-1);
        ASSERT_EQ(oxtest::shape_of(out), (ShapeV{3, 5, 4}));
        const std::vector<double> wv = values(w);
        std::vector<double> want;
        for (int64_t v : ints(idx))
          for (int64_t c = 0; c < 4; ++c) want.push_back(wv[static_cast<size_t>(v * 4 + c)]);
        expect_values(out, want, std::string(lay_name(wl)) + " weight, " + lay_name(il));
      }
}

TEST(Embedding, Errors) {
  const Tensor w = ox::zeros({5, 3});
  expect_index_error(
      [&] {
        ox::embedding(w, ox::tensor({1, 5}));
      },
      {"[embedding]", "index 5", "size 5"}, "positive");
  expect_index_error([&] { ox::embedding(w, ox::tensor({-1})); }, {"index -1", "size 5"},
                     "negative");
  EXPECT_EQ(oxtest::kind_of([&] { ox::embedding(w, ox::tensor({1}), 5); }), ox::ErrorKind::Index);
  EXPECT_EQ(oxtest::kind_of([&] { ox::embedding(ox::zeros({5}), ox::tensor({1})); }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { ox::embedding(w, ox::tensor({1.0f})); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::shape_of(ox::embedding(w, ox::zeros({0, 2}, ox::kI64))), (ShapeV{0, 2, 3}));
}

// ---- scatter, scatter_add, scatter_reduce ----------------------------------------------------

TEST(Scatter, EveryLayoutInPlaceAndOutOfPlace) {
  const ShapeV xs = {6, 5}, ss = {7, 5};
  for (Lay xl : kWritable)
    for (Lay il : kLayouts)
      for (Lay sl : kLayouts)
        for (int64_t d : {0, 1}) {
          const ShapeV is = d == 0 ? ShapeV{7, 4} : ShapeV{5, 5};
          Tensor x = make(xs, ox::kF32, xl, [](int64_t i) { return 100.0 + i; });
          const Tensor idx = make_index(is, ox::kI64, il, 0, xs[d] - 1, 11);
          const Tensor src = make(ss, ox::kF32, sl, [](int64_t i) { return -1.0 - i; });
          const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) + " index, " +
                                   lay_name(sl) + " src, dim " + std::to_string(d);
          const std::vector<double> want =
              ref_scatter(values(x), xs, d, ints(idx), is, values(src), ss, Red::Assign);
          const std::vector<double> before = values(x);
          expect_values(ox::scatter(x, d, idx, src), want, what + " (out of place)");
          EXPECT_EQ(values(x), before) << what << ": scatter changed its input";
          ox::scatter_(x, d, idx, src);
          expect_values(x, want, what + " (in place)");
        }
}

TEST(Scatter, ScalarValueExpandedInputAndDTypes) {
  const Tensor x = make({3, 4}, ox::kF32, Lay::Expanded, [](int64_t i) { return double(i); });
  const Tensor idx = ox::tensor({{0, 2}, {1, 1}});
  std::vector<double> want = values(x);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c) want[static_cast<size_t>(r * 4 + ints(idx)[r * 2 + c])] = 9.5;
  expect_values(ox::scatter(x, 1, idx, 9.5), want, "value into an expanded input");
  Tensor y = x;
  EXPECT_EQ(oxtest::kind_of([&] { ox::scatter_(y, 1, idx, 1.0); }), ox::ErrorKind::Value);
  for (DType dt : ox::kAllDTypes) {
    const Tensor z = ox::zeros({2, 3}, dt);
    const Tensor out = ox::scatter(z, 0, ox::tensor({{1, 0, 1}}), 1);
    EXPECT_EQ(values(out), (std::vector<double>{0, 1, 0, 1, 0, 1})) << dt;
  }
  EXPECT_EQ(oxtest::kind_of([&] { ox::scatter(ox::zeros({2}, ox::kI8), 0, ox::tensor({0}), 300); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of(
                [&] { ox::scatter(ox::zeros({2}), 0, ox::tensor({0}), ox::ones({1}, ox::kF64)); }),
            ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { ox::scatter(ox::zeros({2}), 0, ox::ones({1}), 1.0); }),
            ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::scatter(ox::zeros({2}), 0, ox::tensor({0, 1}), ox::ones({1}));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::scatter(ox::zeros({2, 2}), 0, ox::tensor({{0, 1, 0}}), 1.0);
            }),
            ox::ErrorKind::Shape);
}

TEST(Scatter, DuplicatesLastWinsInIndexOrder) {
  Tensor x = ox::zeros({3});
  ox::scatter_(x, 0, ox::tensor({1, 1, 1, 0}), ox::tensor({1.f, 2.f, 3.f, 4.f}));
  EXPECT_EQ(values(x), (std::vector<double>{4, 3, 0}));
}

TEST(ScatterAdd, DuplicatesAccumulateEveryLayoutAndIndexDType) {
  const ShapeV xs = {4, 6}, ss = {9, 6}, is = {9, 6};
  for (Lay xl : kWritable)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes)
        for (DType dt : {ox::kF32, ox::kI64, ox::kF16, ox::kI8}) {
          Tensor x = make(xs, dt, xl, small_ints(1));
          const Tensor idx = make_index(is, idt, il, 0, 3, 12);  // many duplicates
          const Tensor src = make(ss, dt, Lay::Transposed, small_ints(2));
          const std::vector<double> want =
              ref_scatter(values(x), xs, 0, ints(idx), is, values(src), ss, Red::Sum);
          ox::scatter_add_(x, 0, idx, src);
          expect_values(x, want, std::string(lay_name(xl)) + " " + lay_name(il));
        }
}

TEST(ScatterAdd, FloatSumsFollowIndexOrderAtAnyThreadCount) {
  // Large enough for two threads; the f32 result must equal adding in row-major index order.
  const ShapeV xs = {64, 700}, is = {300, 700};
  const Tensor x =
      make(xs, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 1, -1, 1); });
  const Tensor src =
      make(is, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 2, -1, 1); });
  const Tensor idx = make_index(is, ox::kI64, Lay::Contig, 0, 63, 13);
  const std::vector<double> xv = values(x);
  std::vector<float> want(xv.begin(), xv.end());
  const std::vector<double> sv = values(src);
  const std::vector<int64_t> iv = ints(idx);
  for (int64_t r = 0; r < is[0]; ++r)
    for (int64_t c = 0; c < is[1]; ++c) {
      float& t = want[static_cast<size_t>(iv[r * is[1] + c] * xs[1] + c)];
      t = t + static_cast<float>(sv[static_cast<size_t>(r * is[1] + c)]);
    }
  const Tensor out = ox::scatter_add(x, 0, idx, src);
  const std::vector<float> got = out.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  expect_thread_independent([&] { return ox::scatter_add(x, 0, idx, src); }, "scatter_add dim 0");
  const Tensor idx1 = make_index({64, 2000}, ox::kI32, Lay::Contig, 0, 699, 14);
  const Tensor src1 =
      make({64, 2000}, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 3, -1, 1); });
  expect_thread_independent([&] { return ox::scatter_add(x, 1, idx1, src1); }, "scatter_add dim 1");
}

TEST(ScatterReduce, EveryReduction) {
  const ShapeV xs = {4, 5}, is = {6, 5};
  struct Case {
    const char* name;
    Red red;
  };
  for (DType dt : {ox::kF64, ox::kI64, ox::kF32})
    for (Case c : {Case{"sum", Red::Sum}, Case{"prod", Red::Prod}, Case{"amax", Red::Amax},
                   Case{"amin", Red::Amin}, Case{"mean", Red::Sum}})
      for (bool include_self : {true, false}) {
        const Tensor x = make(xs, dt, Lay::Transposed, small_ints(5));
        const Tensor idx = make_index(is, ox::kI64, Lay::Flipped, 0, 3, 15);
        const Tensor src = make(is, dt, Lay::Contig, small_ints(6));
        const std::vector<double> xv = values(x), sv = values(src);
        const std::vector<int64_t> iv = ints(idx);
        std::vector<double> want = xv, count(xv.size(), include_self ? 1 : 0);
        std::vector<bool> hit(xv.size(), false);
        for (size_t i = 0; i < iv.size(); ++i) {
          const size_t t = static_cast<size_t>(iv[i] * xs[1] + int64_t(i) % xs[1]);
          if (!include_self && !hit[t]) {
            want[t] = sv[i];
          } else {
            want[t] = combine(c.red, want[t], sv[i]);
          }
          hit[t] = true;
          count[t] += 1;
        }
        if (std::string(c.name) == "mean")
          for (size_t t = 0; t < want.size(); ++t) {
            const double n = std::max(count[t], 1.0);
            want[t] = dt == ox::kI64 ? std::floor(want[t] / n) : want[t] / n;
          }
        const std::string what = std::string(c.name) + (include_self ? " with self " : " ") +
                                 std::string(ox::dtype_name(dt));
        const Tensor out = ox::scatter_reduce(x, 0, idx, src, c.name, include_self);
        const std::vector<double> got = values(out);
        for (size_t t = 0; t < want.size(); ++t)
          EXPECT_NEAR(got[t], want[t], 1e-6 * std::max(1.0, std::fabs(want[t])))
              << what << " " << t;
      }
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::scatter_reduce(ox::zeros({2}), 0, ox::tensor({0}), ox::ones({1}), "max");
            }),
            ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::scatter_reduce(ox::zeros({2}, ox::kBool), 0, ox::tensor({0}),
                                 ox::ones({1}, ox::kBool), "mean");
            }),
            ox::ErrorKind::DType);
}

TEST(ScatterReduce, AmaxPropagatesNaN) {
  const Tensor x = ox::tensor({1.f, 2.f, NAN});
  const Tensor src = ox::tensor({NAN, 5.f, 7.f, 0.f});
  const Tensor out = ox::scatter_reduce(x, 0, ox::tensor({0, 0, 2, 1}), src, "amax");
  const std::vector<double> v = values(out);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 2.0);
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(ScatterFamily, BadIndexLeavesDestinationUnchanged) {
  // Valid indices first, the bad one last: nothing may be written before the check fails.
  const Tensor pos = ox::tensor({{0, 1, 2}, {3, 3, 4}});
  const Tensor neg = ox::tensor({{0, 1, 2}, {3, -1, 0}});
  const Tensor src = ox::ones({2, 3});
  for (const auto& [idx, value] :
       {std::pair{pos, std::string("index 4")}, std::pair{neg, std::string("index -1")}}) {
    Tensor x = make({4, 3}, ox::kF32, Lay::Flipped, [](int64_t i) { return i * 1.0; });
    const std::vector<double> before = values(x);
    const std::vector<std::string> parts = {value, "dimension 0", "size 4"};
    expect_index_error([&] { ox::scatter_(x, 0, idx, src); }, parts, "scatter_");
    expect_index_error([&] { ox::scatter_(x, 0, idx, 5.0); }, parts, "scatter_ value");
    expect_index_error([&] { ox::scatter_add_(x, 0, idx, src); }, parts, "scatter_add_");
    for (const char* r : {"sum", "prod", "amax", "amin", "mean"})
      for (bool self : {true, false})
        expect_index_error([&] { ox::scatter_reduce_(x, 0, idx, src, r, self); }, parts, r);
    expect_index_error(
        [&] {
          ox::index_add_(x, 0, idx.select(0, 1), ox::ones({3, 3}));
        },
        parts, "index_add_");
    // On a GPU the kernel that finds the bad index runs beside the writes: x is unspecified.
    if (!oxtest::on_test_device()) {
      EXPECT_EQ(values(x), before);
    }
  }
}

// ---- index_add -------------------------------------------------------------------------------

TEST(IndexAdd, DuplicatesAccumulateWithAlpha) {
  const ShapeV xs = {5, 4};
  for (Lay xl : kWritable)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes)
        for (int64_t d : {0, 1}) {
          const int64_t n = 7;
          ShapeV ss = xs;
          ss[d] = n;
          Tensor x = make(xs, ox::kF64, xl, small_ints(7));
          const Tensor idx = make_index({n}, idt, il, 0, xs[d] - 1, 16);
          const Tensor src = make(ss, ox::kF64, Lay::Transposed, small_ints(8));
          std::vector<double> want = values(x);
          const std::vector<double> sv = values(src);
          const std::vector<int64_t> iv = ints(idx);
          oxtest::for_each_index(ss, [&](const std::vector<int64_t>& i) {
            std::vector<int64_t> j = i;
            j[d] = iv[i[d]];
            want[flat(j, xs)] += 2.0 * sv[flat(i, ss)];
          });
          const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) + " index";
          expect_values(ox::index_add(x, d, idx, src, 2), want, what);
          ox::index_add_(x, d, idx, src, 2);
          expect_values(x, want, what + " in place");
        }
}

TEST(IndexAdd, IntegersThreadsAndErrors) {
  Tensor x = ox::zeros({3}, ox::kI32);
  ox::index_add_(x, 0, ox::tensor({2, 2, 0}), ox::tensor(std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(ints(x), (std::vector<int64_t>{7, 0, 11}));
  const Tensor big = ox::zeros({50, 3000});
  const Tensor idx = make_index({400}, ox::kI64, Lay::Contig, 0, 49, 17);
  const Tensor src =
      make({400, 3000}, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 4, -1, 1); });
  expect_thread_independent([&] { return ox::index_add(big, 0, idx, src); }, "index_add");
  EXPECT_EQ(
      oxtest::kind_of([&] { ox::index_add(x, 0, ox::tensor({0}), ox::ones({1}, ox::kI32), 1.5); }),
      ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { ox::index_add(x, 0, ox::tensor({0}), ox::ones({1})); }),
            ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::index_add(x, 0, ox::tensor({0, 1}), ox::ones({1}, ox::kI32));
            }),
            ox::ErrorKind::Shape);
  expect_index_error([&] { ox::index_add(x, 0, ox::tensor({3}), ox::ones({1}, ox::kI32)); },
                     {"[index_add]", "index 3", "dimension 0", "size 3"}, "positive");
  EXPECT_EQ(ints(x), (std::vector<int64_t>{7, 0, 11}));
}

// ---- one_hot ---------------------------------------------------------------------------------

TEST(OneHot, ClassesLayoutsAndErrors) {
  for (Lay l : kLayouts)
    for (DType idt : kIndexDTypes) {
      const Tensor x = make_index({3, 4}, idt, l, 0, 5, 18);
      const Tensor out = ox::one_hot(x, 7);
      ASSERT_EQ(oxtest::shape_of(out), (ShapeV{3, 4, 7}));
      EXPECT_EQ(out.dtype(), ox::kI64);
      std::vector<int64_t> want;
      for (int64_t v : ints(x))
        for (int64_t c = 0; c < 7; ++c) want.push_back(c == v);
      EXPECT_EQ(ints(out), want) << lay_name(l);
    }
  const Tensor inferred = ox::one_hot(ox::tensor({0, 3, 1}));
  EXPECT_EQ(oxtest::shape_of(inferred), (ShapeV{3, 4}));
  EXPECT_EQ(ints(inferred), (std::vector<int64_t>{1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(oxtest::shape_of(ox::one_hot(ox::zeros({0}, ox::kI64), 3)), (ShapeV{0, 3}));
  EXPECT_EQ(ox::one_hot(ox::scalar_tensor(2, {.dtype = ox::kI64}), 3).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1}));
  expect_index_error(
      [&] {
        ox::one_hot(ox::tensor({1, 5}), 5);
      },
      {"[one_hot]", "index 5", "size 5"}, "too large");
  expect_index_error(
      [&] {
        ox::one_hot(ox::tensor({-1, 2}), 5);
      },
      {"index -1", "size 5"}, "negative");
  EXPECT_EQ(oxtest::kind_of([&] { ox::one_hot(ox::tensor({1.0f})); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { ox::one_hot(ox::zeros({0}, ox::kI64)); }), ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { ox::one_hot(ox::tensor({1}), -2); }), ox::ErrorKind::Value);
}

// ---- nonzero ---------------------------------------------------------------------------------

// Coordinates of the nonzero elements, row-major, and how many there are.
std::vector<int64_t> ref_nonzero(const std::vector<double>& v, const ShapeV& shape,
                                 int64_t* count = nullptr) {
  std::vector<int64_t> out;
  int64_t n = 0;
  oxtest::for_each_index(shape, [&](const std::vector<int64_t>& i) {
    const double x = v[flat(i, shape)];
    if (x != 0 || std::isnan(x)) {
      out.insert(out.end(), i.begin(), i.end());
      ++n;
    }
  });
  if (count) *count = n;
  return out;
}

TEST(Nonzero, LayoutsShapesAndDTypes) {
  const std::vector<ShapeV> shapes = {{}, {1}, {0}, {1, 0, 3}, {23}, {812}, {6, 7}, {3, 4, 5}};
  for (const ShapeV& shape : shapes)
    for (Lay l : kLayouts)
      for (DType dt : {ox::kF32, ox::kF16, ox::kI64, ox::kBool, ox::kU8}) {
        const Tensor x =
            make(shape, dt, l, [](int64_t i) { return double(integer_at(i, 19, 0, 2) - 1); });
        const Tensor out = ox::nonzero(x);
        int64_t n = 0;
        const std::vector<int64_t> want = ref_nonzero(values(x), shape, &n);
        const std::string what = shape_str(shape) + " " + lay_name(l);
        ASSERT_EQ(oxtest::shape_of(out), (ShapeV{n, int64_t(shape.size())})) << what;
        EXPECT_EQ(out.dtype(), ox::kI64);
        EXPECT_EQ(ints(out), want) << what;
      }
}

TEST(Nonzero, NaNCountsSignedZeroDoesNotAndLargeIsThreadIndependent) {
  const Tensor x = ox::tensor({0.f, -0.f, NAN, 1e-30f, 0.f});
  EXPECT_EQ(ints(ox::nonzero(x)), (std::vector<int64_t>{2, 3}));
  const Tensor big = make({1029, 917}, ox::kF32, Lay::Transposed,
                          [](int64_t i) { return double(integer_at(i, 20, 0, 9) == 0); });
  EXPECT_EQ(ints(ox::nonzero(big)), ref_nonzero(values(big), {1029, 917}));
  expect_thread_independent([&] { return ox::nonzero(big); }, "nonzero");
}

}  // namespace
