// x.index({...}), x.index_put_({...}, v), index_put and masked_select against loops written
// out here for each indexing form (basic views, index tensors adjacent or separated, bool
// masks, None, Ellipsis, integers mixed in).

#include <cmath>

#include "ops/index_test_util.h"

namespace {

using namespace idxtest;
using ox::Ellipsis;
using ox::None;
using ox::Slice;
using ox::Tensor;

// Python's wrap of a (valid) negative index.
int64_t w(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

Tensor iota(const ShapeV& shape, Lay lay = Lay::Contig, DType dt = ox::kF32) {
  return make(shape, dt, lay, [](int64_t i) { return double(i); });
}

// Expected values of an output of `shape` whose element at multi-index i is f(i).
std::vector<double> expect_of(const ShapeV& shape,
                              const std::function<double(const std::vector<int64_t>&)>& f) {
  std::vector<double> out;
  oxtest::for_each_index(shape, [&](const std::vector<int64_t>& i) { out.push_back(f(i)); });
  return out;
}

void expect_eq(const Tensor& got, const ShapeV& shape, const std::vector<double>& want,
               const std::string& what) {
  ASSERT_EQ(oxtest::shape_of(got), shape) << what;
  EXPECT_EQ(values(got), want) << what;
}

// ---- Basic indexing: views -------------------------------------------------------------------

TEST(BasicIndex, IntegersSlicesNoneEllipsisGiveViews) {
  const ShapeV s = {3, 4, 5};
  for (Lay l : kLayouts) {
    const Tensor x = iota(s, l);
    const std::vector<double> xv = values(x);
    auto at = [&](int64_t a, int64_t b, int64_t c) { return xv[flat({a, b, c}, s)]; };
    const std::string what = lay_name(l);

    Tensor v = x.index({1});
    EXPECT_TRUE(v.is_same_storage(x)) << what;
    expect_eq(v, {4, 5}, expect_of({4, 5}, [&](auto& i) { return at(1, i[0], i[1]); }), what);

    v = x.index({Slice(), Slice(1, None, 2), -1});
    EXPECT_TRUE(v.is_same_storage(x));
    expect_eq(v, {3, 2}, expect_of({3, 2}, [&](auto& i) { return at(i[0], 1 + 2 * i[1], 4); }),
              what + " step");

    v = x.index({None, Ellipsis, 2});
    EXPECT_TRUE(v.is_same_storage(x));
    expect_eq(v, {1, 3, 4}, expect_of({1, 3, 4}, [&](auto& i) { return at(i[1], i[2], 2); }),
              what + " None/Ellipsis");

    v = x.index({Slice(-3, -1), Ellipsis, Slice(None, -2), None});
    EXPECT_TRUE(v.is_same_storage(x));
    expect_eq(v, {2, 4, 3, 1},
              expect_of({2, 4, 3, 1}, [&](auto& i) { return at(i[0], i[1], i[2]); }),
              what + " negative ends");

    v = x.index({Slice(-100, 100), Slice(3, 1), Slice(1, 5, 3)});
    EXPECT_EQ(oxtest::shape_of(v), (ShapeV{3, 0, 2})) << what << " clamped";

    v = x.index({Ellipsis});
    EXPECT_TRUE(v.is_same_storage(x));
    EXPECT_EQ(values(v), xv);

    // A 0-d integer tensor is an integer.
    v = x.index({ox::scalar_tensor(-1, {.dtype = ox::kI32}), 0});
    EXPECT_TRUE(v.is_same_storage(x));
    expect_eq(v, {5}, expect_of({5}, [&](auto& i) { return at(2, 0, i[0]); }), what + " 0-d");
  }
}

TEST(BasicIndex, WritesThroughTheViewAndIndexPut) {
  Tensor x = iota({3, 4});
  Tensor v = x.index({Slice(1), Slice(None, None, 2)});
  v.fill_(-1);
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 3, -1, 5, -1, 7, -1, 9, -1, 11}));
  x.index_put_({0, Slice(1, 3)}, 7.5);
  EXPECT_EQ(values(x), (std::vector<double>{0, 7.5, 7.5, 3, -1, 5, -1, 7, -1, 9, -1, 11}));
  x.index_put_({Ellipsis, 3}, ox::tensor({10.0, 20.0, 30.0},
                                         {.dtype = ox::kF64}));  // f64 converts, as x[..., 3] = v
  EXPECT_EQ(values(x), (std::vector<double>{0, 7.5, 7.5, 10, -1, 5, -1, 20, -1, 9, -1, 30}));
  EXPECT_EQ(oxtest::kind_of([&] { x.index_put_({0}, ox::ones({3})); }), ox::ErrorKind::Shape);
  // Row 0 of an expanded tensor is a plain row (PyTorch writes it); a column is not.
  Tensor e = ox::zeros({1, 3}).expand({2, 3});
  e.index_put_({0}, 1.0);
  EXPECT_EQ(values(e), (std::vector<double>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(oxtest::kind_of([&] { e.index_put_({Slice(), 0}, 1.0); }), ox::ErrorKind::Value);
}

TEST(BasicIndex, Errors) {
  const Tensor x = iota({3, 4});
  expect_index_error([&] { x.index({3}); }, {"[index]", "index 3", "dimension 0", "size 3"}, "+");
  expect_index_error([&] { x.index({Slice(), -5}); }, {"index -5", "dimension 1", "size 4"}, "-");
  EXPECT_EQ(oxtest::kind_of([&] { x.index({0, 0, 0}); }), ox::ErrorKind::Index);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({Ellipsis, 0, Ellipsis}); }), ox::ErrorKind::Index);
  EXPECT_EQ(oxtest::kind_of([&] { ox::scalar_tensor(1.0).index({0}); }), ox::ErrorKind::Index);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({Slice(None, None, 0)}); }), ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({Slice(None, None, -1)}); }), ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({ox::ones({2})}); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({ox::ones({2}, ox::kI16)}); }), ox::ErrorKind::DType);
}

// ---- Integer index tensors -------------------------------------------------------------------

TEST(AdvancedIndex, OneIndexTensorWrapsNegatives) {
  const ShapeV s = {5, 6};
  for (Lay xl : kLayouts)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes) {
        const Tensor x = iota(s, xl, ox::kF64);
        const std::vector<double> xv = values(x);
        const Tensor i0 = make_index({2, 3}, idt, il, -5, 4, 21);
        const Tensor i1 = make_index({4}, idt, il, -6, 5, 22);
        const std::vector<int64_t> a = ints(i0), b = ints(i1);
        const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) + " index";
        Tensor out = x.index({i0});
        EXPECT_FALSE(out.is_same_storage(x));
        expect_eq(out, {2, 3, 6},
                  expect_of({2, 3, 6},
                            [&](auto& i) {
                              return xv[flat({w(a[i[0] * 3 + i[1]], 5), i[2]}, s)];
                            }),
                  what);
        expect_eq(x.index({Slice(), i1}), {5, 4},
                  expect_of({5, 4},
                            [&](auto& i) {
                              return xv[flat({i[0], w(b[i[1]], 6)}, s)];
                            }),
                  what + " after a slice");
      }
}

TEST(AdvancedIndex, SeveralTensorsAdjacentSeparatedAndMixed) {
  const ShapeV s = {4, 5, 6};
  for (Lay xl : kLayouts) {
    const Tensor x = iota(s, xl);
    const std::vector<double> xv = values(x);
    auto at = [&](int64_t p, int64_t q, int64_t r) {
      return xv[flat({w(p, 4), w(q, 5), w(r, 6)}, s)];
    };
    const Tensor i0 = make_index({3, 1}, ox::kI32, Lay::Transposed, -4, 3, 23);
    const Tensor i1 = make_index({1, 2}, ox::kI64, Lay::Flipped, -5, 4, 24);
    const Tensor i2 = make_index({2}, ox::kI64, Lay::Narrowed, -6, 5, 25);
    const Tensor i3 = make_index({2}, ox::kI64, Lay::Expanded, -4, 3, 32);  // fits dims 0 and 1
    const std::vector<int64_t> a = ints(i0), b = ints(i1), c = ints(i2), c3 = ints(i3);
    const std::string what = lay_name(xl);

    // Adjacent at the front: B = [3, 2] replaces dims 0 and 1.
    expect_eq(x.index({i0, i1}), {3, 2, 6},
              expect_of({3, 2, 6}, [&](auto& i) { return at(a[i[0]], b[i[1]], i[2]); }),
              what + " i0, i1");
    // Adjacent after a slice: B = [1, 2] stays in place.
    expect_eq(x.index({Slice(), i1, i2}), {4, 1, 2},
              expect_of({4, 1, 2}, [&](auto& i) { return at(i[0], b[i[2]], c[i[2]]); }),
              what + " :, i1, i2");
    // Separated by a slice: B = [3, 2] goes first.
    expect_eq(x.index({i0, Slice(), i2}), {3, 2, 5},
              expect_of({3, 2, 5}, [&](auto& i) { return at(a[i[0]], i[2], c[i[1]]); }),
              what + " i0, :, i2");
    // Separated by None: also first.
    expect_eq(x.index({i3, None, i3}), {2, 1, 6},
              expect_of({2, 1, 6}, [&](auto& i) { return at(c3[i[0]], c3[i[0]], i[2]); }),
              what + " i3, None, i3");
    // An integer is a select (a basic index), so it separates nothing.
    expect_eq(x.index({0, Slice(), i2}), {5, 2},
              expect_of({5, 2}, [&](auto& i) { return at(0, i[0], c[i[1]]); }), what + " 0, :, i2");
    expect_eq(x.index({i0, 1}), {3, 1, 6},
              expect_of({3, 1, 6}, [&](auto& i) { return at(a[i[0]], 1, i[2]); }), what + " i0, 1");
    expect_eq(x.index({None, i3}), {1, 2, 5, 6},
              expect_of({1, 2, 5, 6}, [&](auto& i) { return at(c3[i[1]], i[2], i[3]); }),
              what + " None, i3");
    expect_eq(x.index({Ellipsis, i2}), {4, 5, 2},
              expect_of({4, 5, 2}, [&](auto& i) { return at(i[0], i[1], c[i[2]]); }),
              what + " ..., i2");
  }
  const Tensor x = iota(s);
  EXPECT_EQ(oxtest::kind_of([&] {
              x.index({ox::tensor({0, 1}), ox::tensor({0, 1, 2})});
            }),
            ox::ErrorKind::Shape);
  expect_index_error(
      [&] {
        x.index({Slice(), ox::tensor({0, 5})});
      },
      {"[index]", "index 5", "dimension 1", "size 5"}, "positive");
  expect_index_error([&] { x.index({ox::tensor({-5})}); }, {"index -5", "dimension 0", "size 4"},
                     "negative");
}

TEST(AdvancedIndex, EmptyIndicesAndDims) {
  const Tensor x = iota({5, 3});
  EXPECT_EQ(oxtest::shape_of(x.index({ox::zeros({0}, ox::kI64)})), (ShapeV{0, 3}));
  EXPECT_EQ(oxtest::shape_of(ox::zeros({0, 3}).index({ox::zeros({0}, ox::kI64)})), (ShapeV{0, 3}));
  expect_index_error(
      [&] {
        ox::zeros({0, 3}).index({ox::tensor({0})});
      },
      {"index 0", "size 0"}, "size 0");
  EXPECT_EQ(oxtest::shape_of(ox::zeros({1, 0, 3}).index({Slice(), Slice(), ox::tensor({2, 0})})),
            (ShapeV{1, 0, 2}));
}

// ---- Bool masks ------------------------------------------------------------------------------

TEST(AdvancedIndex, BoolMasks) {
  for (Lay xl : kLayouts)
    for (Lay ml : kLayouts) {
      const ShapeV s = {3, 4, 5};
      const Tensor x = iota(s, xl);
      const std::vector<double> xv = values(x);
      const Tensor m2 = make({4, 5}, ox::kBool, ml, [](int64_t i) { return double(i % 3 == 1); });
      const Tensor m1 = make({3}, ox::kBool, ml, [](int64_t i) { return double(i != 1); });
      const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(ml) + " mask";
      const std::vector<bool> b2 = m2.to_vector<bool>(), b1 = m1.to_vector<bool>();
      std::vector<double> want;  // x[:, m2]: rows of the true (j, k) of each i
      int64_t n2 = 0;
      for (int64_t j = 0; j < 20; ++j) n2 += b2[j];
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t jk = 0; jk < 20; ++jk)
          if (b2[jk]) want.push_back(xv[i * 20 + jk]);
      expect_eq(x.index({Slice(), m2}), {3, n2}, want, what + " :, m2");
      want.clear();
      int64_t n1 = 0;
      for (int64_t i = 0; i < 3; ++i)
        if (b1[i]) {
          ++n1;
          for (int64_t jk = 0; jk < 20; ++jk) want.push_back(xv[i * 20 + jk]);
        }
      expect_eq(x.index({m1}), {n1, 4, 5}, want, what + " m1");
      // The mask's dims, then an index tensor: both index the same broadcast shape.
      const Tensor idx = ox::tensor({4, -1, 2}).narrow(0, 0, n1);
      want.clear();
      int64_t r = 0;
      for (int64_t i = 0; i < 3; ++i)
        if (b1[i]) {
          const int64_t k = w(ints(idx)[r++], 5);
          for (int64_t j = 0; j < 4; ++j) want.push_back(xv[flat({i, j, k}, s)]);
        }
      expect_eq(x.index({m1, Slice(), idx}), {n1, 4}, want, what + " m1, :, idx");
    }
  const Tensor x = iota({3, 4});
  EXPECT_EQ(oxtest::kind_of([&] { x.index({ox::ones({4}, ox::kBool)}); }), ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { x.index({ox::ones({3, 5}, ox::kBool)}); }), ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] {
              x.index({ox::ones({3, 4, 1}, ox::kBool)});
            }),
            ox::ErrorKind::Index);
}

TEST(AdvancedIndex, BoolScalarsAddAnAxis) {
  const Tensor x = iota({2, 3});
  expect_eq(x.index({true}), {1, 2, 3}, values(x), "True");
  EXPECT_EQ(oxtest::shape_of(x.index({false})), (ShapeV{0, 2, 3}));
  expect_eq(x.index({Slice(), ox::scalar_tensor(true)}), {2, 1, 3}, values(x), "0-d True");
  EXPECT_EQ(oxtest::shape_of(x.index({ox::scalar_tensor(false), 1})), (ShapeV{0, 3}));
}

// ---- Assignment ------------------------------------------------------------------------------

TEST(IndexPut, AssignDuplicatesLastWinsAndMasks) {
  for (Lay xl : kWritable) {
    Tensor x = iota({5, 3}, xl);
    std::vector<double> want = values(x);
    const Tensor idx = ox::tensor({4, -1, 0, 4});
    x.index_put_(
        {idx}, ox::tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}, {7.f, 8.f, 9.f}, {10.f, 11.f, 12.f}}));
    const double rows[4][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
    const int64_t at[4] = {4, 4, 0, 4};
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 3; ++c) want[at[r] * 3 + c] = rows[r][c];
    EXPECT_EQ(values(x), want) << lay_name(xl);

    const Tensor mask = ox::gt(iota({5, 3}), 9.5);
    x.index_put_({mask}, -2.0);
    for (size_t i = 10; i < 15; ++i) want[i] = -2;
    EXPECT_EQ(values(x), want) << lay_name(xl) << " mask";

    x.index_put_({Slice(), ox::tensor({2, 0})},
                 ox::tensor({{50.f}, {60.f}, {70.f}, {80.f}, {90.f}}));
    for (int r = 0; r < 5; ++r) want[r * 3 + 2] = want[r * 3 + 0] = 50 + 10 * r;
    EXPECT_EQ(values(x), want) << lay_name(xl) << " broadcast values";
  }
}

TEST(IndexPut, AccumulateDuplicatesEveryLayout) {
  const ShapeV s = {4, 5};
  for (Lay xl : kWritable)
    for (Lay il : kLayouts)
      for (DType idt : kIndexDTypes) {
        Tensor x =
            make(s, ox::kF32, xl, [](int64_t i) { return double(integer_at(i, 26, -9, 9)); });
        const Tensor i0 = make_index({6, 1}, idt, il, -4, 3, 27);
        const Tensor i1 = make_index({6, 2}, idt, il, -5, 4, 28);  // duplicates
        const Tensor v = make({6, 2}, ox::kF32, Lay::Transposed,
                              [](int64_t i) { return double(integer_at(i, 29, -9, 9)); });
        std::vector<double> want = values(x);
        const std::vector<int64_t> a = ints(i0), b = ints(i1);
        const std::vector<double> vv = values(v);
        for (int64_t p = 0; p < 6; ++p)
          for (int64_t q = 0; q < 2; ++q)
            want[flat({w(a[p], 4), w(b[p * 2 + q], 5)}, s)] += vv[p * 2 + q];
        const std::string what = std::string(lay_name(xl)) + " x, " + lay_name(il) + " index";
        const std::vector<double> before = values(x);
        EXPECT_EQ(values(ox::index_put(x, {i0, i1}, v, true)), want) << what;
        EXPECT_EQ(values(x), before) << what << ": index_put changed its input";
        ox::index_put_(x, {i0, i1}, v, /*accumulate=*/true);
        EXPECT_EQ(values(x), want) << what;
      }
}

TEST(IndexPut, AccumulateIsThreadIndependent) {
  const Tensor x = ox::zeros({1000, 64});
  const Tensor idx = make_index({20000}, ox::kI64, Lay::Contig, -1000, 999, 30);
  const Tensor v =
      make({20000, 64}, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 5, -1, 1); });
  expect_thread_independent([&] { return ox::index_put(x, {idx}, v, true); }, "rows");
  const Tensor flat_x = ox::zeros({3000});
  const Tensor fi = make_index({300000}, ox::kI32, Lay::Contig, 0, 2999, 31);
  const Tensor fv =
      make({300000}, ox::kF32, Lay::Contig, [](int64_t i) { return uniform_at(i, 6, -1, 1); });
  expect_thread_independent([&] { return ox::index_put(flat_x, {fi}, fv, true); }, "1-d");
  // The 1-d sums in index order, in f32.
  std::vector<float> want(3000, 0.f);
  const std::vector<int64_t> iv = ints(fi);
  const std::vector<float> vv = fv.to_vector<float>();
  for (size_t i = 0; i < iv.size(); ++i) want[static_cast<size_t>(iv[i])] += vv[i];
  EXPECT_EQ(ox::index_put(flat_x, {fi}, fv, true).to_vector<float>(), want);
}

TEST(IndexPut, ErrorsLeaveTheTensorUnchanged) {
  Tensor x = iota({4, 3});
  const std::vector<double> before = values(x);
  expect_index_error(
      [&] {
        x.index_put_({ox::tensor({0, 1, 4})}, 1.0);
      },
      {"[index_put_]", "index 4", "dimension 0", "size 4"}, "method");
  expect_index_error(
      [&] {
        ox::index_put_(x, {Tensor(), ox::tensor({0, -4})}, ox::ones({2}), true);
      },
      {"[index_put]", "index -4", "dimension 1", "size 3"}, "free");
  // On a GPU the kernel that finds the bad index runs beside the writes: x is unspecified.
  if (oxtest::on_test_device()) x = iota({4, 3});
  EXPECT_EQ(values(x), before);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::index_put_(x, {ox::tensor({0, 1})}, ox::ones({3}, ox::kF64));
            }),
            ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::index_put_(x, {ox::tensor({0, 1})}, ox::ones({2, 2}));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { ox::index_put_(x, {Tensor()}, ox::ones({1})); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] { x.index_put_({ox::ones({3}, ox::kBool)}, 1.0); }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::index_put_(x, {ox::zeros({1}), Tensor()}, ox::ones({1}));
            }),
            ox::ErrorKind::DType);
  Tensor e = ox::zeros({1, 3}).expand({4, 3});
  EXPECT_EQ(oxtest::kind_of([&] { e.index_put_({ox::tensor({0})}, 1.0); }), ox::ErrorKind::Value);
  EXPECT_EQ(values(x), before);
}

// ---- masked_select ---------------------------------------------------------------------------

TEST(MaskedSelect, LayoutsAndBroadcasting) {
  for (Lay xl : kLayouts)
    for (Lay ml : kLayouts) {
      const Tensor x = iota({4, 5}, xl);
      const Tensor m = make({4, 5}, ox::kBool, ml, [](int64_t i) { return double(i % 4 != 2); });
      const std::vector<double> xv = values(x);
      const std::vector<bool> mv = m.to_vector<bool>();
      std::vector<double> want;
      for (size_t i = 0; i < 20; ++i)
        if (mv[i]) want.push_back(xv[i]);
      expect_eq(ox::masked_select(x, m), {int64_t(want.size())}, want,
                std::string(lay_name(xl)) + " x, " + lay_name(ml) + " mask");
    }
  const Tensor x = iota({4, 5});
  const Tensor row = ox::tensor(std::vector<bool>{true, false, false, true, true});
  std::vector<double> want;
  for (int r = 0; r < 4; ++r)
    for (int c : {0, 3, 4}) want.push_back(r * 5 + c);
  expect_eq(ox::masked_select(x, row), {12}, want, "row mask");
  // x broadcast by the mask: [5] against [2, 5].
  const Tensor m2 = ox::stack({row, ox::logical_not(row)});
  expect_eq(ox::masked_select(iota({5}), m2), {5}, {0, 3, 4, 1, 2}, "x broadcast");
  expect_eq(ox::masked_select(ox::scalar_tensor(3.0), ox::scalar_tensor(true)), {1}, {3}, "0-d");
  EXPECT_EQ(ox::masked_select(ox::scalar_tensor(3.0), ox::scalar_tensor(false)).numel(), 0);
  EXPECT_EQ(oxtest::kind_of([&] { ox::masked_select(x, ox::ones({4, 5})); }), ox::ErrorKind::DType);
  EXPECT_EQ(oxtest::kind_of([&] { ox::masked_select(x, ox::ones({3}, ox::kBool)); }),
            ox::ErrorKind::Shape);
  expect_thread_independent(
      [&] {
        const Tensor big = iota({1029, 917});
        return ox::masked_select(big, ox::gt(ox::remainder(big, 7), 3));
      },
      "masked_select");
}

}  // namespace
