// Shape arithmetic (checked numel/nbytes, strides, dim wrapping, broadcasting, -1 inference),
// Layout predicates and every view method, merge_dims, and the Dims small vector.
// Each view is checked element by element: for every multi-index of the result, the storage
// index offset + sum(index * stride) must be the one worked out by hand from the source.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using ox::Dims;
using ox::Layout;
using ox::Shape;
using Index = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using oxtest::caught;
using oxtest::contains;
using oxtest::for_each_index;

// The storage index of `idx` under `l`, straight from the definition of a strided layout.
int64_t at(const Layout& l, const Index& idx) {
  EXPECT_EQ(idx.size(), l.shape.size());
  EXPECT_EQ(l.strides.size(), l.shape.size());
  int64_t p = l.offset;
  for (size_t i = 0; i < idx.size(); ++i) p += idx[i] * l.strides[i];
  return p;
}

// Checks that `view` has `shape` and that each of its elements sits where `expected` says.
void expect_view(const Layout& view, const Shape& shape,
                 const std::function<int64_t(const Index&)>& expected) {
  ASSERT_EQ(view.shape, shape);
  ASSERT_EQ(view.strides.size(), shape.size());
  int64_t visited = 0, wrong = 0;
  std::string first;
  for_each_index(shape.vec(), [&](const Index& idx) {
    ++visited;
    const int64_t got = at(view, idx), want = expected(idx);
    if (got != want && wrong++ < 5) {
      first += "  at [";
      for (size_t i = 0; i < idx.size(); ++i) first += (i ? ", " : "") + std::to_string(idx[i]);
      first += "]: got " + std::to_string(got) + ", want " + std::to_string(want) + "\n";
    }
  });
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  EXPECT_EQ(visited, numel);
  EXPECT_EQ(wrong, 0) << first;
}

// The source: a contiguous 2x3x4 block starting at element 5, so A(i,j,k) = 5 + 12i + 4j + k.
Layout block() { return Layout::contiguous({2, 3, 4}, 5); }
int64_t A(int64_t i, int64_t j, int64_t k) { return 5 + 12 * i + 4 * j + k; }

// A non-contiguous source: the transpose of a contiguous 4x3 matrix at offset 2,
// so B(i,j) = 2 + i + 3j for i < 3, j < 4.
Layout transposed_matrix() { return Layout{{3, 4}, {1, 3}, 2}; }
int64_t B(int64_t i, int64_t j) { return 2 + i + 3 * j; }

// ---- checked_numel / checked_nbytes ----------------------------------------------------------

TEST(Layout, CheckedNumelMultiplies) {
  EXPECT_EQ(ox::checked_numel({}, "t"), 1);
  EXPECT_EQ(ox::checked_numel({7}, "t"), 7);
  EXPECT_EQ(ox::checked_numel({2, 3, 4}, "t"), 24);
  EXPECT_EQ(ox::checked_numel({1LL << 62, 1}, "t"), 1LL << 62);
  EXPECT_EQ(ox::checked_numel({kMax}, "t"), kMax);
  EXPECT_EQ(ox::checked_numel({3037000499, 3037000499}, "t"), 3037000499LL * 3037000499LL);
}

TEST(Layout, CheckedNumelRejectsNegativeDims) {
  for (const Shape& s : {Shape{-1}, Shape{2, -3}, Shape{-1, 0}, Shape{0, -2}}) {
    const ox::Error e = caught([&] { ox::checked_numel(s, "myop"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape) << s;
    EXPECT_TRUE(contains(e, "[myop]")) << e.what();
  }
}

TEST(Layout, CheckedNumelRejectsOverflow) {
  for (const Shape& s : {Shape{2, 2, 1, 1LL << 61}, Shape{1LL << 62, 2}, Shape{kMax, 2},
                         Shape{3037000500, 3037000500}, Shape{1LL << 32, 1LL << 32},
                         Shape{1LL << 21, 1LL << 21, 1LL << 21}}) {
    const ox::Error e = caught([&] { ox::checked_numel(s, "myop"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape) << s;
    EXPECT_TRUE(contains(e, "[myop]")) << e.what();
  }
}

TEST(Layout, CheckedNumelZeroAnywhereIsZeroEvenWithHugeDims) {
  EXPECT_EQ(ox::checked_numel({0}, "t"), 0);
  EXPECT_EQ(ox::checked_numel({kMax, 0}, "t"), 0);
  EXPECT_EQ(ox::checked_numel({0, kMax, kMax}, "t"), 0);
  EXPECT_EQ(ox::checked_numel({1LL << 40, 1LL << 40, 0}, "t"), 0);
  EXPECT_EQ(ox::checked_numel({kMax, kMax, 0, kMax}, "t"), 0);
}

TEST(Layout, CheckedNbytes) {
  EXPECT_EQ(ox::checked_nbytes(10, 4, "t"), 40);
  EXPECT_EQ(ox::checked_nbytes(0, 8, "t"), 0);
  EXPECT_EQ(ox::checked_nbytes(kMax / 8, 8, "t"), kMax / 8 * 8);
  for (const auto& p :
       {std::pair<int64_t, int64_t>{kMax / 8 + 1, 8}, {1LL << 62, 2}, {kMax, 2}, {1LL << 61, 4}}) {
    const ox::Error e = caught([&] { ox::checked_nbytes(p.first, p.second, "alloc"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape) << p.first << " x " << p.second;
    EXPECT_TRUE(contains(e, "[alloc]")) << e.what();
  }
}

// ---- contiguous_strides / wrap_dim -----------------------------------------------------------

TEST(Layout, ContiguousStrides) {
  EXPECT_EQ(ox::contiguous_strides({}), (Dims{}));
  EXPECT_EQ(ox::contiguous_strides({5}), (Dims{1}));
  EXPECT_EQ(ox::contiguous_strides({2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(ox::contiguous_strides({3, 1, 2}), (Dims{2, 2, 1}));
  EXPECT_EQ(ox::contiguous_strides({1, 1}), (Dims{1, 1}));
  EXPECT_EQ(ox::contiguous_strides({2, 0, 3}), (Dims{3, 3, 1}));  // as torch.empty(2, 0, 3)
  EXPECT_EQ(ox::contiguous_strides({0, 4}), (Dims{4, 1}));
  EXPECT_EQ(ox::contiguous_strides({2, 2, 2, 2, 2, 2, 2, 2}), (Dims{128, 64, 32, 16, 8, 4, 2, 1}));
}

TEST(Layout, WrapDim) {
  EXPECT_EQ(ox::wrap_dim(0, 3, "t"), 0);
  EXPECT_EQ(ox::wrap_dim(2, 3, "t"), 2);
  EXPECT_EQ(ox::wrap_dim(-1, 3, "t"), 2);
  EXPECT_EQ(ox::wrap_dim(-3, 3, "t"), 0);
  EXPECT_EQ(ox::wrap_dim(0, 0, "t"), 0);  // a 0-d tensor takes 0 and -1
  EXPECT_EQ(ox::wrap_dim(-1, 0, "t"), 0);
}

TEST(Layout, WrapDimOutOfRangeIsIndexError) {
  for (const auto& p : {std::pair<int64_t, int64_t>{3, 3},
                        {-4, 3},
                        {1, 0},
                        {-2, 0},
                        {100, 1},
                        {std::numeric_limits<int64_t>::min(), 2}}) {
    const ox::Error e = caught([&] { ox::wrap_dim(p.first, p.second, "sum"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << p.first << " of " << p.second;
    EXPECT_TRUE(contains(e, "[sum]")) << e.what();
  }
}

// ---- broadcast_shapes / infer_shape ----------------------------------------------------------

TEST(Broadcast, TestingPairs) {
  const struct {
    Shape a, b, out;
  } cases[] = {
      {{1}, {}, {1}},
      {{2, 1}, {2}, {2, 2}},
      {{3, 1, 2}, {1, 3, 2}, {3, 3, 2}},
      {{5, 1, 4}, {3, 1}, {5, 3, 4}},
      {{}, {}, {}},
      {{0}, {1}, {0}},
      {{1, 0}, {3, 1}, {3, 0}},
      {{4}, {2, 3, 4}, {2, 3, 4}},
      {{7, 1, 1, 1, 1, 1, 1}, {2, 1}, {7, 1, 1, 1, 1, 2, 1}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ox::broadcast_shapes(c.a, c.b), c.out) << c.a << " with " << c.b;
    EXPECT_EQ(ox::broadcast_shapes(c.b, c.a), c.out) << c.b << " with " << c.a;
  }
}

TEST(Broadcast, MismatchIsShapeErrorNamingBothShapes) {
  const struct {
    Shape a, b;
    const char *a_text, *b_text;
  } cases[] = {
      {{2, 3}, {3, 2}, "[2, 3]", "[3, 2]"},
      {{5, 1, 4}, {3, 2}, "[5, 1, 4]", "[3, 2]"},
      {{0}, {3}, "[0]", "[3]"},
      {{2}, {3}, "[2]", "[3]"},
  };
  for (const auto& c : cases) {
    const ox::Error e = caught([&] { ox::broadcast_shapes(c.a, c.b, "add"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape);
    EXPECT_TRUE(contains(e, "[add]")) << e.what();
    EXPECT_TRUE(contains(e, c.a_text)) << e.what();
    EXPECT_TRUE(contains(e, c.b_text)) << e.what();
  }
}

TEST(Layout, InferShape) {
  EXPECT_EQ(ox::infer_shape({2, -1}, 6, "t"), (Shape{2, 3}));
  EXPECT_EQ(ox::infer_shape({-1}, 6, "t"), (Shape{6}));
  EXPECT_EQ(ox::infer_shape({-1, 4, 1}, 8, "t"), (Shape{2, 4, 1}));
  EXPECT_EQ(ox::infer_shape({-1}, 0, "t"), (Shape{0}));
}

TEST(Layout, InferShapeWithoutMinusOneMustMatch) {
  EXPECT_EQ(ox::infer_shape({2, 3}, 6, "t"), (Shape{2, 3}));
  EXPECT_EQ(ox::infer_shape({}, 1, "t"), (Shape{}));
  EXPECT_EQ(ox::infer_shape({0, 5}, 0, "t"), (Shape{0, 5}));
}

TEST(Layout, InferShapeErrors) {
  const struct {
    Shape proposed;
    int64_t numel;
  } cases[] = {
      {{-1, -1}, 6},                      // two -1s
      {{4, -1}, 6},                       // 6 is not a multiple of 4
      {{2, 3}, 7},                        // mismatch
      {{}, 2},                            // 0-d holds one element
      {{-2, 3}, 6},                       // negative other than -1
      {{0, -1}, 0},                       // -1 could be anything
      {{0, -1}, 5},  {{kMax, 2, -1}, 6},  // the known part overflows
  };
  for (const auto& c : cases) {
    const ox::Error e = caught([&] { ox::infer_shape(c.proposed, c.numel, "view"); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape) << c.proposed << " for " << c.numel;
    EXPECT_TRUE(contains(e, "[view]")) << e.what();
  }
}

// ---- Layout predicates -----------------------------------------------------------------------

TEST(Layout, ContiguousFactory) {
  const Layout l = Layout::contiguous({2, 3, 4}, 7);
  EXPECT_EQ(l.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(l.strides, (Dims{12, 4, 1}));
  EXPECT_EQ(l.offset, 7);
  EXPECT_EQ(l.dim(), 3);
  EXPECT_EQ(l.numel(), 24);
  EXPECT_EQ(Layout::contiguous({}).numel(), 1);
  EXPECT_EQ(Layout::contiguous({}).dim(), 0);
  EXPECT_EQ(Layout::contiguous({3, 0}).numel(), 0);
}

TEST(Layout, IsContiguous) {
  EXPECT_TRUE(block().is_contiguous());
  EXPECT_TRUE(Layout::contiguous({}).is_contiguous());
  EXPECT_TRUE((Layout{{2, 1, 3}, {3, 99, 1}, 0}.is_contiguous()));  // size-1 stride is free
  EXPECT_TRUE((Layout{{1, 1}, {-5, 7}, 4}.is_contiguous()));
  // Empty layouts are contiguous whatever their strides and wherever the 0 sits (as torch).
  EXPECT_TRUE((Layout{{2, 0, 3}, {7, 11, 2}, 0}.is_contiguous()));
  EXPECT_TRUE((Layout{{0, 2}, {1, 0}, 0}.is_contiguous()));
  EXPECT_TRUE((Layout{{3, 0}, {1, 3}, 0}.is_contiguous()));
  EXPECT_FALSE(transposed_matrix().is_contiguous());
  EXPECT_FALSE((Layout{{2, 3}, {3, 2}, 0}.is_contiguous()));  // gaps
  EXPECT_FALSE((Layout{{2, 3}, {0, 1}, 0}.is_contiguous()));  // expanded
  EXPECT_FALSE((Layout{{3}, {-1}, 2}.is_contiguous()));       // flipped
  EXPECT_FALSE((Layout{{2, 2}, {1, 1}, 0}.is_contiguous()));  // overlapping
}

TEST(Layout, IsNonOverlappingAndDense) {
  EXPECT_TRUE(block().is_non_overlapping_and_dense());
  EXPECT_TRUE(transposed_matrix().is_non_overlapping_and_dense());
  EXPECT_TRUE((Layout{{2, 3, 4}, {1, 8, 2}, 0}.is_non_overlapping_and_dense()));  // permuted
  EXPECT_TRUE((Layout{{3, 1, 2}, {1, 100, 3}, 0}.is_non_overlapping_and_dense()));
  EXPECT_TRUE(Layout::contiguous({}).is_non_overlapping_and_dense());
  // Empty layouts reach no element twice, whichever dim has the smallest stride.
  EXPECT_TRUE((Layout{{2, 0}, {5, 10}, 0}.is_non_overlapping_and_dense()));
  EXPECT_TRUE((Layout{{2, 0}, {5, 1}, 0}.is_non_overlapping_and_dense()));
  EXPECT_TRUE((Layout{{0, 3}, {0, 0}, 0}.is_non_overlapping_and_dense()));
  EXPECT_FALSE((Layout{{2, 3}, {0, 1}, 0}.is_non_overlapping_and_dense()));  // stride 0
  EXPECT_FALSE((Layout{{2, 2}, {1, 1}, 0}.is_non_overlapping_and_dense()));  // overlap
  EXPECT_FALSE((Layout{{3, 3}, {2, 1}, 0}.is_non_overlapping_and_dense()));  // overlap
  EXPECT_FALSE((Layout{{2, 3}, {6, 2}, 0}.is_non_overlapping_and_dense()));  // gaps
  EXPECT_FALSE((Layout{{2, 3}, {4, 1}, 0}.is_non_overlapping_and_dense()));  // row gaps
}

TEST(Layout, MinAndMaxIndexMatchEnumeration) {
  const Layout layouts[] = {
      block(),
      transposed_matrix(),
      Layout{{3}, {-1}, 2},
      Layout{{2, 3}, {-3, 1}, 3},
      Layout{{2, 3, 2}, {-7, 0, 2}, 20},
      Layout{{4, 2}, {5, -11}, 30},
      Layout::contiguous({}, 9),
  };
  for (const Layout& l : layouts) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for_each_index(l.shape.vec(), [&](const Index& idx) {
      lo = std::min(lo, at(l, idx));
      hi = std::max(hi, at(l, idx));
    });
    EXPECT_EQ(l.min_index(), lo) << l.shape << " " << l.strides;
    EXPECT_EQ(l.max_index(), hi) << l.shape << " " << l.strides;
  }
  EXPECT_EQ(block().min_index(), 5);
  EXPECT_EQ(block().max_index(), 28);
  EXPECT_EQ((Layout{{2, 3}, {-3, 1}, 3}.min_index()), 0);
}

// ---- permute / transpose ---------------------------------------------------------------------

TEST(Layout, Permute) {
  expect_view(block().permute({2, 0, 1}), {4, 2, 3},
              [](const Index& x) { return A(x[1], x[2], x[0]); });
  expect_view(block().permute({-1, 0, -2}), {4, 2, 3},
              [](const Index& x) { return A(x[1], x[2], x[0]); });
  expect_view(block().permute({0, 1, 2}), {2, 3, 4},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(transposed_matrix().permute({1, 0}), {4, 3},
              [](const Index& x) { return B(x[1], x[0]); });
  expect_view(Layout::contiguous({}, 3).permute({}), {}, [](const Index&) { return 3; });
}

TEST(Layout, PermuteErrors) {
  EXPECT_EQ(caught([] { block().permute({0, 1}); }).kind(), ox::ErrorKind::Shape);
  EXPECT_EQ(caught([] { block().permute({0, 1, 2, 3}); }).kind(), ox::ErrorKind::Shape);
  EXPECT_EQ(caught([] { block().permute({0, 0, 1}); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().permute({2, -1, 0}); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().permute({0, 1, 3}); }).kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(contains(caught([] { block().permute({0, 0, 1}); }), "[permute]"));
}

TEST(Layout, Transpose) {
  expect_view(block().transpose(0, 2), {4, 3, 2},
              [](const Index& x) { return A(x[2], x[1], x[0]); });
  expect_view(block().transpose(-1, -3), {4, 3, 2},
              [](const Index& x) { return A(x[2], x[1], x[0]); });
  expect_view(block().transpose(1, 2), {2, 4, 3},
              [](const Index& x) { return A(x[0], x[2], x[1]); });
  expect_view(block().transpose(1, 1), {2, 3, 4},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(transposed_matrix().transpose(0, 1), {4, 3},
              [](const Index& x) { return B(x[1], x[0]); });
  expect_view(Layout::contiguous({}, 3).transpose(0, -1), {}, [](const Index&) { return 3; });
}

TEST(Layout, TransposeErrors) {
  EXPECT_EQ(caught([] { block().transpose(0, 3); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { block().transpose(-4, 0); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).transpose(0, 1); }).kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(contains(caught([] { block().transpose(0, 3); }), "[transpose]"));
}

// ---- narrow / slice / select -----------------------------------------------------------------

TEST(Layout, Narrow) {
  expect_view(block().narrow(1, 1, 2), {2, 2, 4},
              [](const Index& x) { return A(x[0], x[1] + 1, x[2]); });
  expect_view(block().narrow(-1, -3, 2), {2, 3, 2},  // start -3 of 4 is 1
              [](const Index& x) { return A(x[0], x[1], x[2] + 1); });
  expect_view(block().narrow(0, 1, 1), {1, 3, 4}, [](const Index& x) { return A(1, x[1], x[2]); });
  expect_view(block().narrow(2, 0, 4), {2, 3, 4},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(transposed_matrix().narrow(1, 2, 2), {3, 2},
              [](const Index& x) { return B(x[0], x[1] + 2); });
  EXPECT_EQ(block().narrow(2, 4, 0).shape, (Shape{2, 3, 0}));
  EXPECT_EQ(block().narrow(2, -4, 4).offset, 5);
}

TEST(Layout, NarrowErrors) {
  const std::array<std::array<int64_t, 3>, 7> bad = {{
      {2, 5, 0},   // start past the end
      {2, -5, 1},  // start before the beginning
      {2, 1, 4},   // start + length past the end
      {2, 0, 5},
      {2, 0, -1},  // negative length
      {3, 0, 1},   // dim out of range (Index from wrap_dim)
      {-4, 0, 1},
  }};
  for (const auto& b : bad) {
    const ox::Error e = caught([&] { block().narrow(b[0], b[1], b[2]); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << b[0] << " " << b[1] << " " << b[2];
    EXPECT_TRUE(contains(e, "[narrow]")) << e.what();
  }
  EXPECT_EQ(caught([] { Layout::contiguous({}).narrow(0, 0, 1); }).kind(), ox::ErrorKind::Shape);
}

TEST(Layout, Slice) {
  expect_view(block().slice(2, 1, 4, 2), {2, 3, 2},  // k = 1, 3
              [](const Index& x) { return A(x[0], x[1], 1 + 2 * x[2]); });
  expect_view(block().slice(-1, -3, -1, 1), {2, 3, 2},  // k = 1, 2
              [](const Index& x) { return A(x[0], x[1], 1 + x[2]); });
  expect_view(block().slice(2, -100, 100, 3), {2, 3, 2},  // clamped to 0..4: k = 0, 3
              [](const Index& x) { return A(x[0], x[1], 3 * x[2]); });
  expect_view(block().slice(1, 0, 3, 2), {2, 2, 4},  // j = 0, 2
              [](const Index& x) { return A(x[0], 2 * x[1], x[2]); });
  expect_view(block().slice(0, 1, kMax, 1), {1, 3, 4},
              [](const Index& x) { return A(1, x[1], x[2]); });
  expect_view(block().slice(1, 2, 3, 5), {2, 1, 4},  // step beyond the extent
              [](const Index& x) { return A(x[0], 2, x[2]); });
  expect_view(block().slice(2, 0, 3, 2), {2, 3, 2},  // k = 0, 2 (end exclusive)
              [](const Index& x) { return A(x[0], x[1], 2 * x[2]); });
  expect_view(transposed_matrix().slice(1, 1, 4, 2), {3, 2},  // j = 1, 3
              [](const Index& x) { return B(x[0], 1 + 2 * x[1]); });
  // Empty results: end before start, start past the end, both clamped to the same side.
  EXPECT_EQ(block().slice(2, 3, 1, 1).shape, (Shape{2, 3, 0}));
  EXPECT_EQ(block().slice(2, 5, 10, 1).shape, (Shape{2, 3, 0}));
  EXPECT_EQ(block().slice(2, -10, -8, 1).shape, (Shape{2, 3, 0}));
  EXPECT_EQ(block().slice(2, 2, 2, 1).shape, (Shape{2, 3, 0}));
}

TEST(Layout, SliceErrors) {
  EXPECT_EQ(caught([] { block().slice(2, 0, 4, 0); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().slice(2, 0, 4, -1); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().slice(3, 0, 4, 1); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).slice(0, 0, 1, 1); }).kind(), ox::ErrorKind::Shape);
  // A step whose stride product overflows int64.
  EXPECT_EQ(caught([] {
              Layout{{4}, {1LL << 40}, 0}.slice(0, 0, 4, 1LL << 30);
            }).kind(),
            ox::ErrorKind::Value);
  EXPECT_TRUE(contains(caught([] { block().slice(2, 0, 4, 0); }), "[slice]"));
}

TEST(Layout, Select) {
  expect_view(block().select(1, 2), {2, 4}, [](const Index& x) { return A(x[0], 2, x[1]); });
  expect_view(block().select(-1, -1), {2, 3}, [](const Index& x) { return A(x[0], x[1], 3); });
  expect_view(block().select(0, 1), {3, 4}, [](const Index& x) { return A(1, x[0], x[1]); });
  expect_view(transposed_matrix().select(1, 3), {3}, [](const Index& x) { return B(x[0], 3); });
  expect_view(Layout::contiguous({4}, 1).select(0, 2), {}, [](const Index&) { return 3; });
}

TEST(Layout, SelectErrors) {
  for (const auto& p : {std::pair<int64_t, int64_t>{1, 3}, {1, -4}, {0, 2}, {3, 0}, {-4, 0}}) {
    const ox::Error e = caught([&] { block().select(p.first, p.second); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << p.first << " " << p.second;
    EXPECT_TRUE(contains(e, "[select]")) << e.what();
  }
  EXPECT_EQ(caught([] { Layout::contiguous({}).select(0, 0); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({0}).select(0, 0); }).kind(), ox::ErrorKind::Index);
}

// ---- expand ------------------------------------------------------------------------------------

TEST(Layout, Expand) {
  const Layout col = Layout::contiguous({3, 1}, 2);  // col(i, 0) = 2 + i
  expect_view(col.expand({2, 3, 4}), {2, 3, 4}, [](const Index& x) { return 2 + x[1]; });
  expect_view(col.expand({-1, 4}), {3, 4}, [](const Index& x) { return 2 + x[0]; });
  expect_view(col.expand({2, -1, 5}), {2, 3, 5}, [](const Index& x) { return 2 + x[1]; });
  expect_view(col.expand({3, 1}), {3, 1}, [](const Index& x) { return 2 + x[0]; });
  expect_view(col.expand({0, 3, 2}), {0, 3, 2}, [](const Index&) { return -1; });
  expect_view(Layout::contiguous({}, 6).expand({2, 3}), {2, 3}, [](const Index&) { return 6; });
  expect_view(transposed_matrix().expand({2, 3, 4}), {2, 3, 4},
              [](const Index& x) { return B(x[1], x[2]); });
  EXPECT_EQ(col.expand({3, 0}).shape, (Shape{3, 0}));
  EXPECT_EQ(col.expand({2, 3, 4}).strides[0], 0);
  EXPECT_EQ(col.expand({2, 3, 4}).strides[2], 0);
}

TEST(Layout, ExpandErrors) {
  const Layout col = Layout::contiguous({3, 1}, 2);
  for (const Shape& target : {Shape{4, 4},                           // 3 cannot become 4
                              Shape{4},                              // fewer dims
                              Shape{-1, 3, 4},                       // -1 in a new leading dim
                              Shape{-2, 3, 4},                       // negative leading dim
                              Shape{3, -2},                          // negative size
                              Shape{1LL << 62, 1LL << 62, 3, 4}}) {  // numel overflow
    const ox::Error e = caught([&] { col.expand(target); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Shape) << target;
    EXPECT_TRUE(contains(e, "[expand]")) << e.what();
  }
}

// ---- squeeze / unsqueeze -----------------------------------------------------------------------

TEST(Layout, Squeeze) {
  const Layout l{{1, 3, 1, 2}, {50, 2, 70, 1}, 4};  // l(0, j, 0, k) = 4 + 2j + k
  expect_view(l.squeeze(), {3, 2}, [](const Index& x) { return 4 + 2 * x[0] + x[1]; });
  expect_view(l.squeeze(0), {3, 1, 2}, [](const Index& x) { return 4 + 2 * x[0] + x[2]; });
  expect_view(l.squeeze(-2), {1, 3, 2}, [](const Index& x) { return 4 + 2 * x[1] + x[2]; });
  expect_view(l.squeeze(1), {1, 3, 1, 2}, [](const Index& x) { return 4 + 2 * x[1] + x[3]; });
  expect_view(Layout::contiguous({1, 1}, 8).squeeze(), {}, [](const Index&) { return 8; });
  expect_view(Layout::contiguous({}, 8).squeeze(), {}, [](const Index&) { return 8; });
  expect_view(Layout::contiguous({}, 8).squeeze(-1), {}, [](const Index&) { return 8; });
  EXPECT_EQ(block().squeeze().shape, (Shape{2, 3, 4}));
}

TEST(Layout, SqueezeErrors) {
  EXPECT_EQ(caught([] { block().squeeze(3); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).squeeze(1); }).kind(), ox::ErrorKind::Index);
}

TEST(Layout, Unsqueeze) {
  expect_view(block().unsqueeze(0), {1, 2, 3, 4},
              [](const Index& x) { return A(x[1], x[2], x[3]); });
  expect_view(block().unsqueeze(1), {2, 1, 3, 4},
              [](const Index& x) { return A(x[0], x[2], x[3]); });
  expect_view(block().unsqueeze(3), {2, 3, 4, 1},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(block().unsqueeze(-1), {2, 3, 4, 1},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(block().unsqueeze(-4), {1, 2, 3, 4},
              [](const Index& x) { return A(x[1], x[2], x[3]); });
  expect_view(Layout::contiguous({}, 3).unsqueeze(0), {1}, [](const Index&) { return 3; });
  // The new dim's stride is PyTorch's (size * stride of the dim it lands before, or 1 at
  // the end), so a contiguous layout stays contiguous.
  EXPECT_EQ(block().unsqueeze(1).strides, (Dims{12, 12, 4, 1}));
  EXPECT_EQ(block().unsqueeze(3).strides, (Dims{12, 4, 1, 1}));
  EXPECT_TRUE(block().unsqueeze(2).is_contiguous());
}

TEST(Layout, UnsqueezeErrors) {
  EXPECT_EQ(caught([] { block().unsqueeze(4); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { block().unsqueeze(-5); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).unsqueeze(2); }).kind(), ox::ErrorKind::Index);
}

// ---- flip
// ----------------------------------------------------------------------------------------

TEST(Layout, Flip) {
  expect_view(block().flip({0, 2}), {2, 3, 4},
              [](const Index& x) { return A(1 - x[0], x[1], 3 - x[2]); });
  expect_view(block().flip({-1}), {2, 3, 4},
              [](const Index& x) { return A(x[0], x[1], 3 - x[2]); });
  expect_view(block().flip({}), {2, 3, 4}, [](const Index& x) { return A(x[0], x[1], x[2]); });
  expect_view(block().flip({1, 0, 2}), {2, 3, 4},
              [](const Index& x) { return A(1 - x[0], 2 - x[1], 3 - x[2]); });
  expect_view(transposed_matrix().flip({1}), {3, 4},
              [](const Index& x) { return B(x[0], 3 - x[1]); });
  expect_view(block().flip({2}).flip({2}), {2, 3, 4},
              [](const Index& x) { return A(x[0], x[1], x[2]); });
  // A flipped source, narrowed: composition still lands on the right elements.
  expect_view(block().flip({2}).narrow(2, 1, 2), {2, 3, 2},
              [](const Index& x) { return A(x[0], x[1], 2 - x[2]); });
  expect_view(Layout::contiguous({}, 4).flip({0}), {}, [](const Index&) { return 4; });
  EXPECT_EQ(Layout::contiguous({0, 3}).flip({0, 1}).shape, (Shape{0, 3}));
}

TEST(Layout, FlipErrors) {
  EXPECT_EQ(caught([] { block().flip({0, 0}); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().flip({-1, 2}); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().flip({3}); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).flip({1}); }).kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(contains(caught([] { block().flip({0, 0}); }), "[flip]"));
}

// ---- diagonal --------------------------------------------------------------------------------

TEST(Layout, DiagonalOfAMatrix) {
  const Layout m = Layout::contiguous({3, 4}, 1);  // m(i, j) = 1 + 4i + j
  auto M = [](int64_t i, int64_t j) { return 1 + 4 * i + j; };
  expect_view(m.diagonal(0, 0, 1), {3}, [&](const Index& x) { return M(x[0], x[0]); });
  expect_view(m.diagonal(1, 0, 1), {3}, [&](const Index& x) { return M(x[0], x[0] + 1); });
  expect_view(m.diagonal(2, 0, 1), {2}, [&](const Index& x) { return M(x[0], x[0] + 2); });
  expect_view(m.diagonal(3, 0, 1), {1}, [&](const Index&) { return M(0, 3); });
  expect_view(m.diagonal(-1, 0, 1), {2}, [&](const Index& x) { return M(x[0] + 1, x[0]); });
  expect_view(m.diagonal(-2, 0, 1), {1}, [&](const Index&) { return M(2, 0); });
  expect_view(m.diagonal(0, 1, 0), {3}, [&](const Index& x) { return M(x[0], x[0]); });
  expect_view(m.diagonal(1, 1, 0), {2}, [&](const Index& x) { return M(x[0] + 1, x[0]); });
  expect_view(m.diagonal(-1, -1, -2), {3}, [&](const Index& x) { return M(x[0], x[0] + 1); });
  EXPECT_EQ(m.diagonal(4, 0, 1).shape, (Shape{0}));
  EXPECT_EQ(m.diagonal(-3, 0, 1).shape, (Shape{0}));
  EXPECT_EQ(m.diagonal(1000, 0, 1).shape, (Shape{0}));
  EXPECT_EQ(m.diagonal(-1000, 0, 1).shape, (Shape{0}));
  expect_view(transposed_matrix().diagonal(1, 0, 1), {3},
              [](const Index& x) { return B(x[0], x[0] + 1); });
}

TEST(Layout, DiagonalOfABlockKeepsOtherDimsFirst) {
  expect_view(block().diagonal(0, 0, 2), {3, 2},
              [](const Index& x) { return A(x[1], x[0], x[1]); });
  expect_view(block().diagonal(1, 0, 2), {3, 2},
              [](const Index& x) { return A(x[1], x[0], x[1] + 1); });
  expect_view(block().diagonal(1, 2, 0), {3, 1},
              [](const Index& x) { return A(x[1] + 1, x[0], x[1]); });
  expect_view(block().diagonal(-1, 1, 2), {2, 2},
              [](const Index& x) { return A(x[0], x[1] + 1, x[1]); });
}

TEST(Layout, DiagonalErrors) {
  EXPECT_EQ(caught([] { Layout::contiguous({4}).diagonal(0, 0, -1); }).kind(),
            ox::ErrorKind::Shape);
  EXPECT_EQ(caught([] { block().diagonal(0, 1, 1); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().diagonal(0, 1, -2); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { block().diagonal(0, 0, 3); }).kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(contains(caught([] { block().diagonal(0, 1, 1); }), "[diagonal]"));
}

// ---- unfold ------------------------------------------------------------------------------------

TEST(Layout, Unfold) {
  const Layout v = Layout::contiguous({7}, 3);  // v(i) = 3 + i
  expect_view(v.unfold(0, 3, 2), {3, 3}, [](const Index& x) { return 3 + 2 * x[0] + x[1]; });
  expect_view(v.unfold(0, 7, 1), {1, 7}, [](const Index& x) { return 3 + x[1]; });
  expect_view(v.unfold(-1, 2, 3), {2, 2}, [](const Index& x) { return 3 + 3 * x[0] + x[1]; });
  expect_view(v.unfold(0, 1, 1), {7, 1}, [](const Index& x) { return 3 + x[0]; });
  EXPECT_EQ(v.unfold(0, 0, 1).shape, (Shape{8, 0}));
  expect_view(block().unfold(1, 2, 1), {2, 2, 4, 2},
              [](const Index& x) { return A(x[0], x[1] + x[3], x[2]); });
  expect_view(block().unfold(-1, 2, 2), {2, 3, 2, 2},
              [](const Index& x) { return A(x[0], x[1], 2 * x[2] + x[3]); });
  expect_view(transposed_matrix().unfold(1, 3, 1), {3, 2, 3},
              [](const Index& x) { return B(x[0], x[1] + x[2]); });
  // A 0-d tensor unfolds into one window of size 0 or 1.
  expect_view(Layout::contiguous({}, 5).unfold(0, 1, 1), {1}, [](const Index&) { return 5; });
  EXPECT_EQ(Layout::contiguous({}, 5).unfold(-1, 0, 3).shape, (Shape{0}));
}

TEST(Layout, UnfoldErrors) {
  const Layout v = Layout::contiguous({7}, 3);
  EXPECT_EQ(caught([&] { v.unfold(0, 8, 1); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] { v.unfold(0, -1, 1); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] { v.unfold(0, 2, 0); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] { v.unfold(0, 2, -1); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] { v.unfold(1, 2, 1); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([] { Layout::contiguous({}).unfold(0, 2, 1); }).kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(caught([&] { v.unfold(0, 8, 1); }), "[unfold]"));
}

TEST(Layout, UnfoldOfZeroDimChecksTheDim) {  // as torch: only 0 and -1 name a 0-d dim
  for (int64_t d : {1, -2, 5}) {
    const ox::Error e = caught([&] { Layout::contiguous({}).unfold(d, 1, 1); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << d;
    EXPECT_TRUE(contains(e, "[unfold]")) << e.what();
  }
}

// ---- view ----------------------------------------------------------------------------------

// Row-major position `n` of `src`: the storage index of its n-th element in reading order.
int64_t nth(const Layout& src, int64_t n) {
  Index idx(src.shape.size());
  for (size_t d = src.shape.size(); d-- > 0;) {
    idx[d] = n % src.shape[d];
    n /= src.shape[d];
  }
  return at(src, idx);
}

// A view must read the source's elements in row-major order.
void expect_reshaped(const Layout& src, const Shape& new_shape) {
  SCOPED_TRACE(::testing::Message()
               << "view of " << src.shape << " strides " << src.strides << " as " << new_shape);
  const std::optional<Layout> v = src.view(new_shape);
  ASSERT_TRUE(v.has_value());
  expect_view(*v, new_shape, [&](const Index& x) {
    int64_t flat = 0;
    for (size_t d = 0; d < x.size(); ++d) flat = flat * new_shape[d] + x[d];
    return nth(src, flat);
  });
}

TEST(Layout, ViewOfContiguous) {
  for (const Shape& s : {Shape{24}, Shape{6, 4}, Shape{2, 12}, Shape{4, 3, 2},
                         Shape{1, 2, 1, 3, 4, 1}, Shape{2, 3, 4}, Shape{2, 2, 2, 3}})
    expect_reshaped(block(), s);
  EXPECT_EQ(block().view({6, 4})->strides, (Dims{4, 1}));
  EXPECT_EQ(block().view({6, 4})->offset, 5);
}

TEST(Layout, ViewOfStridedLayouts) {
  const Layout t = block().transpose(1, 2);  // {2, 4, 3} strides {12, 1, 4}
  expect_reshaped(t, {2, 4, 3});
  expect_reshaped(t, {2, 4, 3, 1});
  expect_reshaped(t, {1, 2, 2, 2, 3});  // splitting a dim is always possible
  expect_reshaped(t, {2, 4, 1, 3});
  const Layout narrowed = block().narrow(2, 1, 2);  // {2, 3, 2} strides {12, 4, 1}
  expect_reshaped(narrowed, {6, 2});
  expect_reshaped(narrowed, {3, 2, 2});
  const Layout stepped = block().slice(0, 0, 2, 1).slice(2, 0, 4, 2);  // {2,3,2} {12,4,2}
  expect_reshaped(stepped, {6, 2});
  expect_reshaped(stepped, {2, 3, 2, 1});
  const Layout expanded = Layout::contiguous({3, 1}, 2).expand({3, 4});  // strides {1, 0}
  expect_reshaped(expanded, {3, 2, 2});
  expect_reshaped(expanded, {1, 3, 4});
  const Layout odd_ones{{2, 1, 3}, {3, 100, 1}, 0};  // size-1 dims do not break chunks
  expect_reshaped(odd_ones, {6});
  expect_reshaped(odd_ones, {3, 2});
  const Layout flipped = block().flip({2});  // negative innermost stride
  expect_reshaped(flipped, {2, 3, 2, 2});
  expect_reshaped(flipped, {6, 4});
  expect_reshaped(transposed_matrix(), {3, 2, 2});
  expect_reshaped(Layout::contiguous({}, 4), {1, 1});
  expect_reshaped(Layout::contiguous({}, 4), {});
  expect_reshaped(Layout::contiguous({1, 1}, 4), {});
  EXPECT_EQ(Layout::contiguous({0, 3}).view({3, 0})->shape, (Shape{3, 0}));
}

TEST(Layout, ImpossibleViewsAreNullopt) {
  const Layout t = block().transpose(1, 2);  // {2, 4, 3} strides {12, 1, 4}
  EXPECT_FALSE(t.view({2, 12}).has_value());
  EXPECT_FALSE(t.view({8, 3}).has_value());
  EXPECT_FALSE(t.view({24}).has_value());
  const Layout narrowed = block().narrow(2, 1, 2);
  EXPECT_FALSE(narrowed.view({12}).has_value());
  EXPECT_FALSE(narrowed.view({2, 6}).has_value());
  const Layout expanded = Layout::contiguous({3, 1}, 2).expand({3, 4});
  EXPECT_FALSE(expanded.view({12}).has_value());
  EXPECT_FALSE(expanded.view({4, 3}).has_value());
  EXPECT_FALSE(transposed_matrix().view({12}).has_value());
  EXPECT_FALSE(transposed_matrix().view({4, 3}).has_value());
  EXPECT_FALSE(block().flip({0}).view({24}).has_value());
}

// ---- merge_dims ------------------------------------------------------------------------------

// Walking the merged dims must visit the same storage indices, in the same order, as walking
// the original shape with each operand's strides.
template <size_t N>
void expect_same_walk(const Shape& shape, const std::array<const ox::Strides*, N>& strides,
                      const ox::MergedDims<N>& merged) {
  for (size_t k = 0; k < N; ++k) {
    std::vector<int64_t> original, walked;
    for_each_index(shape.vec(), [&](const Index& x) {
      int64_t p = 0;
      for (size_t d = 0; d < x.size(); ++d) p += x[d] * (*strides[k])[d];
      original.push_back(p);
    });
    for_each_index(merged.shape.vec(), [&](const Index& x) {
      int64_t p = 0;
      for (size_t d = 0; d < x.size(); ++d) p += x[d] * merged.strides[k][d];
      walked.push_back(p);
    });
    EXPECT_EQ(walked, original) << "operand " << k;
  }
}

TEST(Layout, MergeDimsCollapsesAContiguousOperand) {
  const Shape s{2, 3, 4};
  const ox::Strides st{12, 4, 1};
  const auto m = ox::merge_dims<1>(s, {&st});
  EXPECT_EQ(m.shape, (Shape{24}));
  EXPECT_EQ(m.strides[0], (Dims{1}));
  expect_same_walk<1>(s, {&st}, m);
}

TEST(Layout, MergeDimsOnlyWhereEveryOperandAllows) {
  const Shape s{2, 3, 4};
  const ox::Strides a{12, 4, 1}, transposed{12, 1, 3}, broadcast{0, 4, 1};
  {
    const auto m = ox::merge_dims<2>(s, {&a, &transposed});  // nothing merges
    EXPECT_EQ(m.shape, (Shape{2, 3, 4}));
    EXPECT_EQ(m.strides[1], (Dims{12, 1, 3}));
    expect_same_walk<2>(s, {&a, &transposed}, m);
  }
  {
    const auto m = ox::merge_dims<2>(s, {&a, &broadcast});  // the last two merge
    EXPECT_EQ(m.shape, (Shape{2, 12}));
    EXPECT_EQ(m.strides[0], (Dims{12, 1}));
    EXPECT_EQ(m.strides[1], (Dims{0, 1}));
    expect_same_walk<2>(s, {&a, &broadcast}, m);
  }
  {
    const ox::Strides all_zero{0, 0, 0};  // a broadcast scalar merges with anything dense
    const auto m = ox::merge_dims<2>(s, {&a, &all_zero});
    EXPECT_EQ(m.shape, (Shape{24}));
    EXPECT_EQ(m.strides[1], (Dims{0}));
    expect_same_walk<2>(s, {&a, &all_zero}, m);
  }
  {
    const ox::Strides gap{16, 4, 1};  // rows padded to 16: the inner two merge, not the first
    const auto m = ox::merge_dims<3>(s, {&a, &gap, &a});
    EXPECT_EQ(m.shape, (Shape{2, 12}));
    EXPECT_EQ(m.strides[1], (Dims{16, 1}));
    expect_same_walk<3>(s, {&a, &gap, &a}, m);
  }
}

TEST(Layout, MergeDimsDropsSizeOneDims) {
  const Shape s{1, 3, 1, 4, 1};
  const ox::Strides a{99, 4, 7, 1, 5}, b{-3, 1, 0, 3, 11};
  const auto m = ox::merge_dims<2>(s, {&a, &b});
  EXPECT_EQ(m.shape, (Shape{3, 4}));
  EXPECT_EQ(m.strides[0], (Dims{4, 1}));
  EXPECT_EQ(m.strides[1], (Dims{1, 3}));
  expect_same_walk<2>(s, {&a, &b}, m);
  const ox::Strides c{0, 4, 0, 1, 0};  // size-1 dims between mergeable dims do not block it
  const auto merged = ox::merge_dims<1>(s, {&c});
  EXPECT_EQ(merged.shape, (Shape{12}));
  EXPECT_EQ(merged.strides[0], (Dims{1}));
}

TEST(Layout, MergeDimsAlwaysKeepsOneDim) {
  const ox::Strides none{};
  const auto scalar = ox::merge_dims<1>(Shape{}, {&none});
  EXPECT_EQ(scalar.shape, (Shape{1}));
  EXPECT_EQ(scalar.strides[0], (Dims{0}));
  const ox::Strides ones{5, 9};
  const auto single = ox::merge_dims<2>(Shape{1, 1}, {&ones, &ones});
  EXPECT_EQ(single.shape, (Shape{1}));
  EXPECT_EQ(single.strides[0].size(), 1u);
  EXPECT_EQ(single.strides[1].size(), 1u);
}

TEST(Layout, MergeDimsNegativeStrides) {
  const Shape s{2, 3};
  const ox::Strides flipped{-3, -1}, inner_flipped{3, -1};
  const auto m = ox::merge_dims<1>(s, {&flipped});  // fully reversed rows still merge
  EXPECT_EQ(m.shape, (Shape{6}));
  EXPECT_EQ(m.strides[0], (Dims{-1}));
  expect_same_walk<1>(s, {&flipped}, m);
  const auto n = ox::merge_dims<1>(s, {&inner_flipped});
  EXPECT_EQ(n.shape, (Shape{2, 3}));
  expect_same_walk<1>(s, {&inner_flipped}, n);
}

// ---- Dims ------------------------------------------------------------------------------------

// True when the entries live inside the Dims object itself rather than on the heap.
bool is_inline(const Dims& d) {
  const auto p = reinterpret_cast<uintptr_t>(d.data());
  const auto self = reinterpret_cast<uintptr_t>(&d);
  return p >= self && p < self + sizeof(Dims);
}

Dims iota(size_t n, int64_t start = 0) {
  Dims d;
  for (size_t i = 0; i < n; ++i) d.push_back(start + static_cast<int64_t>(i));
  return d;
}

TEST(Dims, ConstructionAndAccess) {
  const Dims empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.begin(), empty.end());
  const Dims d{4, -5, 6};
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], 4);
  EXPECT_EQ(d[1], -5);
  EXPECT_EQ(d.front(), 4);
  EXPECT_EQ(d.back(), 6);
  EXPECT_EQ(d.vec(), (std::vector<int64_t>{4, -5, 6}));
  EXPECT_EQ(Dims(size_t{3}, 7).vec(), (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(Dims::filled(2, 0).vec(), (std::vector<int64_t>{0, 0}));
  // A bare integer of any type is a one-dim shape, as LibTorch's IntArrayRef.
  EXPECT_EQ(Dims(size_t{2}).vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(Dims(-1).vec(), (std::vector<int64_t>{-1}));
  const Shape from_int = 5;
  EXPECT_EQ(from_int.vec(), (std::vector<int64_t>{5}));
  EXPECT_EQ(Dims(std::vector<int64_t>{1, 2}).vec(), (std::vector<int64_t>{1, 2}));
  const std::vector<int> ints{9, 8, 7, 6, 5, 4, 3, 2};
  EXPECT_EQ(Dims(ints.begin(), ints.end()).vec(), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2}));
}

TEST(Dims, Equality) {
  EXPECT_EQ((Dims{1, 2}), (Dims{1, 2}));
  EXPECT_NE((Dims{1, 2}), (Dims{1, 2, 3}));
  EXPECT_NE((Dims{1, 2}), (Dims{2, 1}));
  EXPECT_NE((Dims{}), (Dims{0}));
  EXPECT_EQ(iota(9), iota(9));
  EXPECT_NE(iota(9), iota(9, 1));
}

TEST(Dims, StaysInlineUpToSixAndMovesToTheHeapBeyond) {
  Dims d;
  for (int64_t i = 0; i < 6; ++i) {
    d.push_back(i * 10);
    EXPECT_TRUE(is_inline(d)) << "size " << d.size();
  }
  d.push_back(60);
  EXPECT_FALSE(is_inline(d));
  for (int64_t i = 7; i < 40; ++i) d.push_back(i * 10);
  ASSERT_EQ(d.size(), 40u);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(d[i], static_cast<int64_t>(i) * 10);
  EXPECT_TRUE(is_inline(Dims{1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(is_inline(Dims{1, 2, 3, 4, 5, 6, 7}));
}

TEST(Dims, CopiesAreIndependent) {
  for (size_t n : {size_t{3}, size_t{10}}) {
    const Dims original = iota(n, 100);
    Dims copy = original;
    EXPECT_EQ(copy, original);
    EXPECT_NE(copy.data(), original.data());
    copy[0] = -1;
    copy.push_back(5);
    EXPECT_EQ(original, iota(n, 100));
    Dims assigned{1};
    assigned = original;
    EXPECT_EQ(assigned, original);
    assigned[n - 1] = 0;
    EXPECT_EQ(original, iota(n, 100));
  }
}

TEST(Dims, CopyAssignBetweenInlineAndHeap) {
  Dims big = iota(12);
  const Dims two = iota(2, 5);
  big = two;  // heap-backed target, small source
  EXPECT_EQ(big.vec(), (std::vector<int64_t>{5, 6}));
  Dims small{1, 2};
  const Dims twelve = iota(12, 3);
  small = twelve;
  EXPECT_EQ(small, iota(12, 3));
  Dims& self = small;
  small = self;  // self-assignment
  EXPECT_EQ(small, iota(12, 3));
}

TEST(Dims, MoveStealsTheHeapBufferAndEmptiesTheSource) {
  Dims src = iota(10, 1);
  const int64_t* buffer = src.data();
  Dims dst = std::move(src);
  EXPECT_EQ(dst, iota(10, 1));
  EXPECT_EQ(dst.data(), buffer);
  EXPECT_TRUE(src.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is API
  src.push_back(42);         // and stays usable
  for (int64_t i = 0; i < 9; ++i) src.push_back(i);
  EXPECT_EQ(src.size(), 10u);
  EXPECT_EQ(src[0], 42);
  EXPECT_EQ(src[9], 8);
}

TEST(Dims, MoveOfInlineCopiesTheValues) {
  Dims src{7, 8, 9};
  Dims dst = std::move(src);
  EXPECT_EQ(dst, (Dims{7, 8, 9}));
  EXPECT_TRUE(is_inline(dst));
  EXPECT_TRUE(src.empty());  // NOLINT(bugprone-use-after-move)
}

TEST(Dims, MoveAssignBetweenInlineAndHeap) {
  Dims heap_target = iota(10);
  heap_target = Dims{1, 2};
  EXPECT_EQ(heap_target, (Dims{1, 2}));
  EXPECT_TRUE(is_inline(heap_target));
  heap_target.push_back(3);
  EXPECT_EQ(heap_target, (Dims{1, 2, 3}));
  Dims inline_target{4};
  inline_target = iota(8, 2);
  EXPECT_EQ(inline_target, iota(8, 2));
  EXPECT_FALSE(is_inline(inline_target));
  Dims& self = inline_target;
  inline_target = std::move(self);  // self-move leaves it intact
  EXPECT_EQ(inline_target, iota(8, 2));
}

TEST(Dims, InsertAndErase) {
  Dims d{1, 2, 3};
  auto it = d.insert(d.begin(), 0);
  EXPECT_EQ(*it, 0);
  EXPECT_EQ(d, (Dims{0, 1, 2, 3}));
  it = d.insert(d.begin() + 2, 9);
  EXPECT_EQ(*it, 9);
  EXPECT_EQ(d, (Dims{0, 1, 9, 2, 3}));
  d.insert(d.end(), 4);
  EXPECT_EQ(d, (Dims{0, 1, 9, 2, 3, 4}));
  EXPECT_TRUE(is_inline(d));
  it = d.insert(d.begin() + 1, -7);  // the seventh entry moves everything to the heap
  EXPECT_EQ(*it, -7);
  EXPECT_FALSE(is_inline(d));
  EXPECT_EQ(d, (Dims{0, -7, 1, 9, 2, 3, 4}));
  it = d.erase(d.begin() + 3);
  EXPECT_EQ(*it, 2);
  EXPECT_EQ(d, (Dims{0, -7, 1, 2, 3, 4}));
  it = d.erase(d.begin());
  EXPECT_EQ(*it, -7);
  EXPECT_EQ(d, (Dims{-7, 1, 2, 3, 4}));
  it = d.erase(d.end() - 1);
  EXPECT_EQ(it, d.end());
  EXPECT_EQ(d, (Dims{-7, 1, 2, 3}));
  Dims one{5};
  one.erase(one.begin());
  EXPECT_TRUE(one.empty());
  one.insert(one.begin(), 6);
  EXPECT_EQ(one, (Dims{6}));
}

// Hides a constant from the optimiser: GCC 12 otherwise warns (-Warray-bounds) about the
// never-taken reallocation in reserve() when a Dims is shrunk by a constant.
size_t opaque(size_t n) {
  volatile size_t v = n;
  return v;
}

TEST(Dims, ResizeReserveClearPopBack) {
  Dims d{1, 2};
  d.resize(4, 9);
  EXPECT_EQ(d, (Dims{1, 2, 9, 9}));
  d.resize(opaque(1));
  EXPECT_EQ(d, (Dims{1}));
  d.resize(8, -1);  // grows past the inline room, keeping what was there
  EXPECT_EQ(d, (Dims{1, -1, -1, -1, -1, -1, -1, -1}));
  d.resize(opaque(3));
  d.resize(5);  // regrown entries take the fill value, not stale ones
  EXPECT_EQ(d, (Dims{1, -1, -1, 0, 0}));
  Dims r{3, 4, 5};
  r.reserve(100);
  EXPECT_EQ(r, (Dims{3, 4, 5}));
  EXPECT_FALSE(is_inline(r));
  r.reserve(2);  // never shrinks
  EXPECT_EQ(r, (Dims{3, 4, 5}));
  r.pop_back();
  EXPECT_EQ(r, (Dims{3, 4}));
  r.clear();
  EXPECT_TRUE(r.empty());
  r.push_back(8);
  EXPECT_EQ(r, (Dims{8}));
}

TEST(Dims, Printing) {
  EXPECT_EQ(ox::to_string(Dims{2, 3}), "[2, 3]");
  EXPECT_EQ(ox::to_string(Dims{}), "[]");
  EXPECT_EQ(ox::to_string(Dims{-1}), "[-1]");
  std::ostringstream out;
  out << iota(7);
  EXPECT_EQ(out.str(), "[0, 1, 2, 3, 4, 5, 6]");
}

}  // namespace
