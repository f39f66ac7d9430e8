// Views: every view op on four kinds of input (contiguous, narrowed with an offset, stride 0,
// negative stride). Expected values come from a tiny logical model (`Ref`: a shape and its
// row-major values) transformed by plain index arithmetic, never from the layout code.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/storage.h"
#include "test_util.h"

namespace {

using ox::ErrorKind;
using oxtest::caught;
using oxtest::for_each_index;
using oxtest::kind_of;
using oxtest::shape_of;
using oxtest::strides_of;
using Idx = std::vector<int64_t>;

// A logical tensor: its shape and its values in row-major order.
struct Ref {
  Idx shape;
  std::vector<double> v;
  double at(const Idx& idx) const {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
    return v[static_cast<size_t>(flat)];
  }
};

template <class F>
Ref build(const Idx& shape, F&& fn) {
  Ref r{shape, {}};
  for_each_index(shape, [&](const Idx& i) { r.v.push_back(fn(i)); });
  return r;
}

// ---- The reference transformations --------------------------------------------------------

Ref reshaped(const Ref& r, const Idx& shape) { return {shape, r.v}; }

Ref permuted(const Ref& r, const Idx& dims) {
  Idx shape;
  for (int64_t d : dims) shape.push_back(r.shape[d]);
  return build(shape, [&](const Idx& i) {
    Idx src(r.shape.size());
    for (size_t k = 0; k < dims.size(); ++k) src[dims[k]] = i[k];
    return r.at(src);
  });
}

// Elements start, start + step, ... (`len` of them) along `dim`.
Ref strided(const Ref& r, size_t dim, int64_t start, int64_t step, int64_t len) {
  Idx shape = r.shape;
  shape[dim] = len;
  return build(shape, [&](const Idx& i) {
    Idx src = i;
    src[dim] = start + i[dim] * step;
    return r.at(src);
  });
}

Ref selected(const Ref& r, size_t dim, int64_t index) {
  Idx shape = r.shape;
  shape.erase(shape.begin() + dim);
  return build(shape, [&](const Idx& i) {
    Idx src = i;
    src.insert(src.begin() + dim, index);
    return r.at(src);
  });
}

Ref expanded(const Ref& r, const Idx& target) {
  const size_t lead = target.size() - r.shape.size();
  return build(target, [&](const Idx& i) {
    Idx src(r.shape.size());
    for (size_t d = 0; d < r.shape.size(); ++d) src[d] = r.shape[d] == 1 ? 0 : i[d + lead];
    return r.at(src);
  });
}

Ref flipped(const Ref& r, const Idx& dims) {
  return build(r.shape, [&](const Idx& i) {
    Idx src = i;
    for (int64_t d : dims) src[d] = r.shape[d] - 1 - i[d];
    return r.at(src);
  });
}

// The diagonal {d0: i + row0, d1: i + col0} as the last dim, the other dims first.
Ref diag(const Ref& r, int64_t len, size_t d0, int64_t row0, size_t d1, int64_t col0) {
  Idx shape;
  for (size_t d = 0; d < r.shape.size(); ++d)
    if (d != d0 && d != d1) shape.push_back(r.shape[d]);
  shape.push_back(len);
  return build(shape, [&](const Idx& i) {
    Idx src(r.shape.size());
    size_t k = 0;
    for (size_t d = 0; d < r.shape.size(); ++d)
      if (d != d0 && d != d1) src[d] = i[k++];
    src[d0] = i.back() + row0;
    src[d1] = i.back() + col0;
    return r.at(src);
  });
}

// Windows of `size` every `step` along `dim`: the window index replaces dim, the position
// inside the window is a new last dim.
Ref unfolded(const Ref& r, size_t dim, int64_t size, int64_t step, int64_t windows) {
  Idx shape = r.shape;
  shape[dim] = windows;
  shape.push_back(size);
  return build(shape, [&](const Idx& i) {
    Idx src(i.begin(), i.end() - 1);
    src[dim] = i[dim] * step + i.back();
    return r.at(src);
  });
}

void expect_ref(const ox::Tensor& t, const Ref& r) {
  ASSERT_EQ(shape_of(t), r.shape);
  EXPECT_EQ(t.to_vector<double>(), r.v);
}

// ---- The four kinds of input, all of logical shape (2, 3, 4), over arange storage ---------

struct Input {
  std::string name;
  ox::Tensor t;
  Ref ref;
  int64_t storage_elems;  // elements in t's storage, whose element k holds k
  int64_t offset;         // t's storage offset
  Idx strides;            // t's strides, derived by hand
};

ox::Tensor arange_of(int64_t n, ox::DType dt) { return ox::arange(0, n, 1, {.dtype = dt}); }

std::vector<Input> inputs(ox::DType dt = ox::kF32) {
  const Idx s{2, 3, 4};
  std::vector<Input> in;
  in.push_back({"contiguous",
                arange_of(24, dt).reshape({2, 3, 4}),
                build(s, [](const Idx& i) { return double(12 * i[0] + 4 * i[1] + i[2]); }),
                24,
                0,
                {12, 4, 1}});
  in.push_back(
      {"narrowed",
       arange_of(72, dt).reshape({3, 4, 6}).narrow(0, 1, 2).narrow(1, 1, 3).narrow(2, 2, 4),
       build(s, [](const Idx& i) { return double(24 * (i[0] + 1) + 6 * (i[1] + 1) + (i[2] + 2)); }),
       72,
       32,
       {24, 6, 1}});
  in.push_back({"expanded",
                arange_of(8, dt).reshape({2, 1, 4}).expand({2, 3, 4}),
                build(s, [](const Idx& i) { return double(4 * i[0] + i[2]); }),
                8,
                0,
                {4, 0, 1}});
  in.push_back(
      {"flipped",
       arange_of(24, dt).reshape({2, 3, 4}).flip({0, 2}),
       build(s, [](const Idx& i) { return double(12 * (1 - i[0]) + 4 * i[1] + (3 - i[2])); }),
       24,
       15,
       {-12, 4, -1}});
  return in;
}

TEST(View, InputsAreWhatTheTestsAssume) {
  for (const ox::DType dt : {ox::kF32, ox::kI64, ox::kI16, ox::kF64}) {
    for (const Input& in : inputs(dt)) {
      SCOPED_TRACE(in.name);
      expect_ref(in.t, in.ref);
      EXPECT_EQ(strides_of(in.t), in.strides);
      EXPECT_EQ(in.t.storage_offset(), in.offset);
      EXPECT_EQ(in.t.dtype(), dt);
      EXPECT_EQ(static_cast<int64_t>(in.t.storage()->nbytes()),
                in.storage_elems * static_cast<int64_t>(ox::dtype_size(dt)));
      EXPECT_EQ(in.t.is_contiguous(), in.name == "contiguous");
    }
  }
}

// ---- view / reshape -----------------------------------------------------------------------

TEST(View, ViewSplittingTheLastDimAlwaysShares) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor v = in.t.view({2, 3, 2, -1});
    expect_ref(v, reshaped(in.ref, {2, 3, 2, 2}));
    EXPECT_TRUE(v.is_same_storage(in.t));
    const ox::Tensor w = in.t.view({1, 2, 3, 1, 4, 1});
    expect_ref(w, reshaped(in.ref, {1, 2, 3, 1, 4, 1}));
    EXPECT_TRUE(w.is_same_storage(in.t));
  }
}

TEST(View, ViewMergingNonMergeableDimsIsAShapeError) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    if (in.name == "contiguous") {
      expect_ref(in.t.view({-1}), reshaped(in.ref, {24}));
      expect_ref(in.t.view({6, 4}), reshaped(in.ref, {6, 4}));
      continue;
    }
    EXPECT_EQ(kind_of([&] { in.t.view({-1}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.view({6, 4}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.view({2, 12}); }), ErrorKind::Shape);
  }
}

TEST(View, ReshapeViewsWhenItCanAndCopiesOtherwise) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const bool contiguous = in.name == "contiguous";
    for (const Idx& shape : {Idx{4, 6}, Idx{6, 4}, Idx{24}, Idx{3, 8}, Idx{2, 12}}) {
      const ox::Tensor r = in.t.reshape(shape);
      expect_ref(r, reshaped(in.ref, shape));
      EXPECT_EQ(r.is_same_storage(in.t), contiguous);
      EXPECT_TRUE(r.is_contiguous());
    }
    const ox::Tensor inferred = in.t.reshape({4, -1});
    expect_ref(inferred, reshaped(in.ref, {4, 6}));
    const ox::Tensor split = in.t.reshape({-1, 3, 2, 2});
    expect_ref(split, reshaped(in.ref, {2, 3, 2, 2}));
    EXPECT_TRUE(split.is_same_storage(in.t));
  }
}

TEST(View, ReshapeOfATransposedTensor) {
  const ox::Tensor a = ox::arange(6).reshape({2, 3}).t();  // [[0, 3], [1, 4], [2, 5]]
  const ox::Tensor flat = a.reshape({6});
  EXPECT_EQ(flat.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(flat.is_same_storage(a));
  EXPECT_EQ(kind_of([&] { a.view({6}); }), ErrorKind::Shape);
  // Only size-1 dims inserted: still a view.
  const ox::Tensor same = a.reshape({3, 1, 2});
  EXPECT_TRUE(same.is_same_storage(a));
  EXPECT_EQ(same.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));

  // A transposed tensor whose first dim splits: viewable, so reshape shares storage.
  const ox::Tensor b = ox::arange(24).reshape({4, 6}).t();  // b[r][c] = 6c + r, shape (6, 4)
  const ox::Tensor v = b.reshape({2, 3, 4});                // v[a][p][c] = b[3a + p][c]
  EXPECT_TRUE(v.is_same_storage(b));
  EXPECT_EQ(strides_of(v), (Idx{3, 1, 6}));
  std::vector<int64_t> expected;
  for_each_index({2, 3, 4}, [&](const Idx& i) { expected.push_back(6 * i[2] + 3 * i[0] + i[1]); });
  EXPECT_EQ(v.to_vector<int64_t>(), expected);
}

TEST(View, ReshapeErrors) {
  const ox::Tensor t = ox::arange(12);
  EXPECT_EQ(kind_of([&] { t.reshape({5, -1}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.reshape({-1, -1}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.reshape({5, 3}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.reshape({-2, -6}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.view({13}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::zeros({0, 4}).reshape({-1, 0}); }), ErrorKind::Shape);
}

// ---- permute / transpose / t --------------------------------------------------------------

TEST(View, Permute) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor p = in.t.permute({2, 0, 1});
    expect_ref(p, permuted(in.ref, {2, 0, 1}));
    EXPECT_EQ(strides_of(p), (Idx{in.strides[2], in.strides[0], in.strides[1]}));
    EXPECT_EQ(p.storage_offset(), in.offset);
    EXPECT_TRUE(p.is_same_storage(in.t));
    expect_ref(in.t.permute({-1, -3, -2}), permuted(in.ref, {2, 0, 1}));
    expect_ref(in.t.permute({1, 2, 0}), permuted(in.ref, {1, 2, 0}));
    expect_ref(in.t.permute({0, 1, 2}), in.ref);
  }
}

TEST(View, Transpose) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor t = in.t.transpose(0, 2);
    expect_ref(t, permuted(in.ref, {2, 1, 0}));
    EXPECT_EQ(strides_of(t), (Idx{in.strides[2], in.strides[1], in.strides[0]}));
    EXPECT_TRUE(t.is_same_storage(in.t));
    expect_ref(in.t.transpose(-1, 1), permuted(in.ref, {0, 2, 1}));
    expect_ref(in.t.transpose(1, 1), in.ref);
  }
}

TEST(View, TOfTwoDimsAndFewer) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor m = in.t.select(1, 2);  // (2, 4)
    const Ref mr = selected(in.ref, 1, 2);
    expect_ref(m.t(), permuted(mr, {1, 0}));
    EXPECT_TRUE(m.t().is_same_storage(in.t));
    const ox::Tensor v = m.select(0, 1);  // 1-d: t() leaves it as it is
    expect_ref(v.t(), selected(mr, 0, 1));
    EXPECT_EQ(kind_of([&] { in.t.t(); }), ErrorKind::Shape);
  }
  const ox::Tensor s = ox::scalar_tensor(4.5);
  EXPECT_EQ(s.t().dim(), 0);
  EXPECT_EQ(s.t().item<double>(), 4.5);
}

// ---- narrow / slice / select --------------------------------------------------------------

TEST(View, Narrow) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor n = in.t.narrow(2, 1, 2);
    expect_ref(n, strided(in.ref, 2, 1, 1, 2));
    EXPECT_EQ(n.storage_offset(), in.offset + in.strides[2]);
    EXPECT_TRUE(n.is_same_storage(in.t));
    expect_ref(in.t.narrow(1, -2, 2), strided(in.ref, 1, 1, 1, 2));  // start -2 is 1
    expect_ref(in.t.narrow(-3, 1, 1), strided(in.ref, 0, 1, 1, 1));
    expect_ref(in.t.narrow(0, 0, 2), in.ref);
    EXPECT_EQ(shape_of(in.t.narrow(2, 4, 0)), (Idx{2, 3, 0}));  // empty at the very end
    EXPECT_EQ(shape_of(in.t.narrow(0, 1, 0)), (Idx{0, 3, 4}));
    EXPECT_EQ(kind_of([&] { in.t.narrow(2, 3, 2); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.narrow(2, 5, 0); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.narrow(2, -5, 1); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.narrow(2, 0, -1); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.narrow(3, 0, 1); }), ErrorKind::Index);
  }
  EXPECT_EQ(kind_of([] { ox::scalar_tensor(1).narrow(0, 0, 1); }), ErrorKind::Shape);
}

TEST(View, Slice) {
  constexpr int64_t kEnd = INT64_MAX;
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor s = in.t.slice(2, 0, kEnd, 2);  // dim 2 has 4: elements 0, 2
    expect_ref(s, strided(in.ref, 2, 0, 2, 2));
    EXPECT_EQ(s.stride(2), 2 * in.strides[2]);
    EXPECT_TRUE(s.is_same_storage(in.t));
    expect_ref(in.t.slice(2, 1, 4, 2), strided(in.ref, 2, 1, 2, 2));       // 1, 3
    expect_ref(in.t.slice(2, -3), strided(in.ref, 2, 1, 1, 3));            // 1, 2, 3
    expect_ref(in.t.slice(2, 1, -1), strided(in.ref, 2, 1, 1, 2));         // 1, 2
    expect_ref(in.t.slice(2, -100, 100), in.ref);                          // clamped
    expect_ref(in.t.slice(2, 0, 4, 3), strided(in.ref, 2, 0, 3, 2));       // 0, 3
    expect_ref(in.t.slice(2, 3, 10, 5), strided(in.ref, 2, 3, 5, 1));      // 3
    expect_ref(in.t.slice(1, 1, 2), strided(in.ref, 1, 1, 1, 1));          // 1
    expect_ref(in.t.slice(-3, 1), strided(in.ref, 0, 1, 1, 1));            // 1
    expect_ref(in.t.slice(1, 0, kEnd, 100), strided(in.ref, 1, 0, 1, 1));  // 0
    EXPECT_EQ(shape_of(in.t.slice(1, 2, 1)), (Idx{2, 0, 4}));              // end before start
    EXPECT_EQ(shape_of(in.t.slice(1, 5, 9)), (Idx{2, 0, 4}));              // past the end
    EXPECT_EQ(shape_of(in.t.slice(1, -1, -3)), (Idx{2, 0, 4}));
    EXPECT_EQ(kind_of([&] { in.t.slice(1, 0, 3, 0); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.slice(1, 0, 3, -1); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.slice(3); }), ErrorKind::Index);
  }
}

TEST(View, Select) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    expect_ref(in.t.select(0, 1), selected(in.ref, 0, 1));
    expect_ref(in.t.select(0, -1), selected(in.ref, 0, 1));
    expect_ref(in.t.select(1, 2), selected(in.ref, 1, 2));
    expect_ref(in.t.select(-1, -4), selected(in.ref, 2, 0));
    expect_ref(in.t.select(2, 3), selected(in.ref, 2, 3));
    const ox::Tensor e = in.t.select(0, 1).select(0, 2).select(0, 3);  // down to 0-d
    EXPECT_EQ(e.dim(), 0);
    EXPECT_EQ(e.item<double>(), in.ref.at({1, 2, 3}));
    EXPECT_TRUE(e.is_same_storage(in.t));
    EXPECT_EQ(kind_of([&] { in.t.select(1, 3); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.select(1, -4); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.select(-4, 0); }), ErrorKind::Index);
  }
  EXPECT_EQ(kind_of([] { ox::scalar_tensor(1).select(0, 0); }), ErrorKind::Index);
}

// ---- expand / broadcast_to / squeeze / unsqueeze ------------------------------------------

TEST(View, ExpandHasStrideZero) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor e = in.t.unsqueeze(1).expand({2, 5, 3, 4});
    expect_ref(e, expanded(reshaped(in.ref, {2, 1, 3, 4}), {2, 5, 3, 4}));
    EXPECT_EQ(e.stride(1), 0);
    EXPECT_TRUE(e.is_same_storage(in.t));
    const ox::Tensor lead = in.t.expand({3, 2, 3, 4});
    expect_ref(lead, expanded(in.ref, {3, 2, 3, 4}));
    EXPECT_EQ(strides_of(lead), (Idx{0, in.strides[0], in.strides[1], in.strides[2]}));
    expect_ref(in.t.expand({-1, -1, -1}), in.ref);
    expect_ref(in.t.expand({2, -1, 3, -1}), expanded(in.ref, {2, 2, 3, 4}));
    expect_ref(in.t.broadcast_to({5, 2, 3, 4}), expanded(in.ref, {5, 2, 3, 4}));
    expect_ref(in.t.expand_as(ox::zeros({2, 2, 3, 4})), expanded(in.ref, {2, 2, 3, 4}));
    // A size-1 dim from select-ing the stride-0 dim, expanded again.
    const ox::Tensor row = in.t.narrow(1, 1, 1);  // (2, 1, 4)
    expect_ref(row.expand({2, 7, 4}), expanded(strided(in.ref, 1, 1, 1, 1), {2, 7, 4}));
    EXPECT_EQ(shape_of(row.expand({0, 2, 0, 4})), (Idx{0, 2, 0, 4}));
    EXPECT_EQ(kind_of([&] { in.t.expand({2, 6, 4}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.expand({3, 4}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.expand({-1, 2, 3, 4}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { row.expand({2, -2, 4}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.broadcast_to({2, 3, 5}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.broadcast_to({3, 4}); }), ErrorKind::Shape);
  }
  // A 0-d tensor broadcasts to anything.
  const ox::Tensor s = ox::scalar_tensor(int64_t{7}).expand({2, 3});
  EXPECT_EQ(strides_of(s), (Idx{0, 0}));
  EXPECT_EQ(s.to_vector<int64_t>(), std::vector<int64_t>(6, 7));
  // Element count overflow in expand is refused.
  EXPECT_EQ(kind_of([] {
              ox::scalar_tensor(1).expand({int64_t{1} << 40, int64_t{1} << 40});
            }),
            ErrorKind::Shape);
}

TEST(View, SqueezeAndUnsqueeze) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor u = in.t.unsqueeze(0).unsqueeze(3);  // (1, 2, 3, 1, 4)
    expect_ref(u, reshaped(in.ref, {1, 2, 3, 1, 4}));
    EXPECT_TRUE(u.is_same_storage(in.t));
    expect_ref(in.t.unsqueeze(-1), reshaped(in.ref, {2, 3, 4, 1}));
    expect_ref(in.t.unsqueeze(3), reshaped(in.ref, {2, 3, 4, 1}));
    expect_ref(in.t.unsqueeze(-4), reshaped(in.ref, {1, 2, 3, 4}));
    expect_ref(u.squeeze(), in.ref);
    expect_ref(u.squeeze(0), reshaped(in.ref, {2, 3, 1, 4}));
    expect_ref(u.squeeze(-2), reshaped(in.ref, {1, 2, 3, 4}));
    expect_ref(u.squeeze(1), reshaped(in.ref, {1, 2, 3, 1, 4}));  // size 2: unchanged
    EXPECT_TRUE(u.squeeze().is_same_storage(in.t));
    EXPECT_EQ(strides_of(u.squeeze()), in.strides);
    EXPECT_EQ(kind_of([&] { in.t.unsqueeze(4); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.unsqueeze(-5); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.squeeze(3); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.squeeze(-4); }), ErrorKind::Index);
  }
  // Contiguous unsqueeze keeps contiguous strides.
  EXPECT_EQ(strides_of(ox::zeros({2, 3}).unsqueeze(1)), (Idx{3, 3, 1}));
  EXPECT_EQ(strides_of(ox::zeros({2, 3}).unsqueeze(2)), (Idx{3, 1, 1}));
  // 0-d: squeeze is a no-op, unsqueeze gives (1,).
  const ox::Tensor s = ox::scalar_tensor(2.0);
  EXPECT_EQ(s.squeeze().dim(), 0);
  EXPECT_EQ(s.squeeze(0).dim(), 0);
  EXPECT_EQ(s.squeeze(-1).dim(), 0);
  EXPECT_EQ(kind_of([&] { s.squeeze(1); }), ErrorKind::Index);
  EXPECT_EQ(shape_of(s.unsqueeze(0)), (Idx{1}));
  EXPECT_EQ(shape_of(s.unsqueeze(-1)), (Idx{1}));
  EXPECT_EQ(kind_of([&] { s.unsqueeze(1); }), ErrorKind::Index);
  EXPECT_EQ(shape_of(ox::zeros({1, 1}).squeeze()), Idx{});
}

// ---- flatten / unflatten ------------------------------------------------------------------

TEST(View, Flatten) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    expect_ref(in.t.flatten(), reshaped(in.ref, {24}));
    expect_ref(in.t.flatten(1), reshaped(in.ref, {2, 12}));
    expect_ref(in.t.flatten(0, 1), reshaped(in.ref, {6, 4}));
    expect_ref(in.t.flatten(-2, -1), reshaped(in.ref, {2, 12}));
    expect_ref(in.t.flatten(1, 1), in.ref);
    // Flattening dims 2..2 or splitting never needs a copy.
    EXPECT_TRUE(in.t.flatten(2, 2).is_same_storage(in.t));
    EXPECT_EQ(in.t.flatten().is_same_storage(in.t), in.name == "contiguous");
    EXPECT_EQ(kind_of([&] { in.t.flatten(2, 1); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.flatten(0, 3); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.flatten(-4); }), ErrorKind::Index);
  }
  const ox::Tensor s = ox::scalar_tensor(int64_t{9}).flatten();
  EXPECT_EQ(shape_of(s), (Idx{1}));
  EXPECT_EQ(s.item<int64_t>(), 9);
}

TEST(View, Unflatten) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor u = in.t.unflatten(2, {2, 2});
    expect_ref(u, reshaped(in.ref, {2, 3, 2, 2}));
    EXPECT_TRUE(u.is_same_storage(in.t));
    expect_ref(in.t.unflatten(-1, {-1, 2}), reshaped(in.ref, {2, 3, 2, 2}));
    expect_ref(in.t.unflatten(1, {3, 1}), reshaped(in.ref, {2, 3, 1, 4}));
    expect_ref(in.t.unflatten(0, {1, 2, 1}), reshaped(in.ref, {1, 2, 1, 3, 4}));
    expect_ref(in.t.unflatten(1, {3}), in.ref);
    EXPECT_EQ(kind_of([&] { in.t.unflatten(2, {3, 2}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.unflatten(2, {}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.unflatten(2, {-1, -1}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.unflatten(3, {1}); }), ErrorKind::Index);
  }
}

// ---- flip ---------------------------------------------------------------------------------

TEST(View, FlipHasNegativeStrides) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor f = in.t.flip({2});
    expect_ref(f, flipped(in.ref, {2}));
    EXPECT_EQ(f.stride(2), -in.strides[2]);
    EXPECT_EQ(f.storage_offset(), in.offset + 3 * in.strides[2]);
    EXPECT_TRUE(f.is_same_storage(in.t));
    expect_ref(in.t.flip({0}), flipped(in.ref, {0}));
    expect_ref(in.t.flip({1, -1}), flipped(in.ref, {1, 2}));
    expect_ref(in.t.flip({0, 1, 2}), flipped(in.ref, {0, 1, 2}));
    expect_ref(in.t.flip({}), in.ref);
    const ox::Tensor twice = in.t.flip({0, 2}).flip({2, 0});
    expect_ref(twice, in.ref);
    EXPECT_EQ(strides_of(twice), in.strides);
    EXPECT_EQ(twice.storage_offset(), in.offset);
    EXPECT_EQ(kind_of([&] { in.t.flip({1, 1}); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.flip({0, -3}); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.flip({3}); }), ErrorKind::Index);
  }
  const ox::Tensor s = ox::scalar_tensor(int64_t{5}).flip({0});
  EXPECT_EQ(s.item<int64_t>(), 5);
  EXPECT_EQ(shape_of(ox::zeros({0, 3}).flip({0, 1})), (Idx{0, 3}));
}

// ---- diagonal -----------------------------------------------------------------------------

TEST(View, Diagonal) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    // Default: dims 0 (2) and 1 (3): length 2, shape (4, 2), out[k][i] = in[i][i][k].
    const ox::Tensor d = in.t.diagonal();
    expect_ref(d, diag(in.ref, 2, 0, 0, 1, 0));
    EXPECT_EQ(d.stride(1), in.strides[0] + in.strides[1]);
    EXPECT_TRUE(d.is_same_storage(in.t));
    // Dims 1 (3) and 2 (4).
    expect_ref(in.t.diagonal(0, 1, 2), diag(in.ref, 3, 1, 0, 2, 0));
    expect_ref(in.t.diagonal(1, 1, 2), diag(in.ref, 3, 1, 0, 2, 1));    // [i][i+1]
    expect_ref(in.t.diagonal(-1, 1, 2), diag(in.ref, 2, 1, 1, 2, 0));   // [i+1][i]
    expect_ref(in.t.diagonal(-2, 1, 2), diag(in.ref, 1, 1, 2, 2, 0));   // [2][0]
    expect_ref(in.t.diagonal(3, -2, -1), diag(in.ref, 1, 1, 0, 2, 3));  // [0][3]
    EXPECT_EQ(shape_of(in.t.diagonal(4, 1, 2)), (Idx{2, 0}));
    EXPECT_EQ(shape_of(in.t.diagonal(-3, 1, 2)), (Idx{2, 0}));
    EXPECT_EQ(shape_of(in.t.diagonal(-100, 1, 2)), (Idx{2, 0}));
    // d0 after d1: the offset still moves along d1 (dim 0 here).
    expect_ref(in.t.diagonal(0, 2, 0), diag(in.ref, 2, 2, 0, 0, 0));  // [i][j][i] -> (3, 2)
    expect_ref(in.t.diagonal(1, 2, 0), diag(in.ref, 1, 2, 0, 0, 1));  // [i+1][j][i]
    expect_ref(in.t.diagonal(2, 0, 2), diag(in.ref, 2, 0, 0, 2, 2));  // [i][j][i+2]
    EXPECT_EQ(kind_of([&] { in.t.diagonal(0, 1, 1); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.diagonal(0, 1, -2); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.diagonal(0, 0, 3); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.select(0, 0).select(0, 0).diagonal(); }), ErrorKind::Shape);
  }
}

// ---- as_strided ---------------------------------------------------------------------------

TEST(View, AsStridedReadsStorageDirectly) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    // Storage element k holds k, so the expected value is the storage index itself.
    auto expect_storage = [&](const ox::Tensor& v, const Idx& shape, const Idx& strides,
                              int64_t offset) {
      std::vector<double> expected;
      for_each_index(shape, [&](const Idx& i) {
        int64_t k = offset;
        for (size_t d = 0; d < shape.size(); ++d) k += i[d] * strides[d];
        expected.push_back(double(k));
      });
      EXPECT_EQ(shape_of(v), shape);
      EXPECT_EQ(v.to_vector<double>(), expected);
      EXPECT_TRUE(v.is_same_storage(in.t));
    };
    // Without an offset, as_strided starts at the tensor's own storage offset.
    expect_storage(in.t.as_strided({2, 2}, {3, 1}), {2, 2}, {3, 1}, in.offset);
    EXPECT_EQ(in.t.as_strided({2, 2}, {3, 1}).storage_offset(), in.offset);
    expect_storage(in.t.as_strided({2, 3}, {1, 2}, 1), {2, 3}, {1, 2}, 1);
    expect_storage(in.t.as_strided({3, 2}, {0, 1}, 2), {3, 2}, {0, 1}, 2);  // overlapping
    const int64_t last = in.storage_elems - 1;
    expect_storage(in.t.as_strided({in.storage_elems}, {1}, 0), {in.storage_elems}, {1}, 0);
    expect_storage(in.t.as_strided({3}, {-1}, 2), {3}, {-1}, 2);  // reaches element 0
    expect_storage(in.t.as_strided({2, 2}, {-2, -1}, last), {2, 2}, {-2, -1}, last);
    expect_storage(in.t.as_strided({}, {}, last), {}, {}, last);
    EXPECT_EQ(shape_of(in.t.as_strided({0, 5}, {100, 100}, in.storage_elems)), (Idx{0, 5}));

    // Reaching outside the storage is an Index error, in every direction.
    EXPECT_EQ(kind_of([&] { in.t.as_strided({in.storage_elems + 1}, {1}, 0); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({2}, {1}, last); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({}, {}, in.storage_elems); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] {
                in.t.as_strided({2, 2}, {1, in.storage_elems}, 0);
              }),
              ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({3}, {-1}, 1); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({2, 2}, {1, -2}, 1); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({1}, {1}, -1); }), ErrorKind::Index);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({0}, {1}, -1); }), ErrorKind::Index);
    // Malformed or overflowing arguments.
    EXPECT_EQ(kind_of([&] { in.t.as_strided({2, 2}, {1}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({-1}, {1}); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({3}, {INT64_MAX}, 0); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] { in.t.as_strided({3}, {INT64_MIN / 2 - 1}, 0); }), ErrorKind::Shape);
    EXPECT_EQ(kind_of([&] {
                in.t.as_strided({2, 2}, {INT64_MAX / 2, INT64_MAX / 2}, 4);
              }),
              ErrorKind::Shape);
  }
}

// ---- unfold -------------------------------------------------------------------------------

TEST(View, Unfold) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor u = in.t.unfold(2, 2, 1);  // 3 windows of 2 along dim 2
    expect_ref(u, unfolded(in.ref, 2, 2, 1, 3));
    EXPECT_EQ(strides_of(u), (Idx{in.strides[0], in.strides[1], in.strides[2], in.strides[2]}));
    EXPECT_TRUE(u.is_same_storage(in.t));
    expect_ref(in.t.unfold(2, 2, 2), unfolded(in.ref, 2, 2, 2, 2));
    expect_ref(in.t.unfold(-1, 3, 2), unfolded(in.ref, 2, 3, 2, 1));  // the last one is cut
    expect_ref(in.t.unfold(2, 4, 1), unfolded(in.ref, 2, 4, 1, 1));
    expect_ref(in.t.unfold(0, 2, 1), unfolded(in.ref, 0, 2, 1, 1));
    expect_ref(in.t.unfold(1, 1, 1), unfolded(in.ref, 1, 1, 1, 3));
    expect_ref(in.t.unfold(1, 2, 5), unfolded(in.ref, 1, 2, 5, 1));
    EXPECT_EQ(kind_of([&] { in.t.unfold(2, 5, 1); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.unfold(2, -1, 1); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.unfold(2, 2, 0); }), ErrorKind::Value);
    EXPECT_EQ(kind_of([&] { in.t.unfold(3, 1, 1); }), ErrorKind::Index);
  }
}

// ---- contiguous / clone / detach ----------------------------------------------------------

TEST(View, ContiguousCopiesOnlyWhenNeeded) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor c = in.t.contiguous();
    expect_ref(c, in.ref);
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(strides_of(c), (Idx{12, 4, 1}));
    if (in.name == "contiguous") {
      EXPECT_EQ(c.impl(), in.t.impl());  // the very same tensor
    } else {
      EXPECT_FALSE(c.is_same_storage(in.t));
      EXPECT_EQ(c.storage_offset(), 0);
    }
    // Non-contiguous views of every kind become contiguous copies with the same values.
    const ox::Tensor p = in.t.permute({2, 0, 1}).contiguous();
    expect_ref(p, permuted(in.ref, {2, 0, 1}));
    EXPECT_TRUE(p.is_contiguous());
  }
  // Size-1 dims with odd strides still count as contiguous (no copy).
  const ox::Tensor a = ox::arange(6).reshape({2, 3});
  const ox::Tensor odd = a.as_strided({1, 2, 3}, {99, 3, 1});
  EXPECT_TRUE(odd.is_contiguous());
  EXPECT_EQ(odd.contiguous().impl(), odd.impl());
  // A narrowed tensor with an offset but contiguous rows is contiguous too.
  const ox::Tensor rows = ox::arange(12).reshape({4, 3}).narrow(0, 1, 2);
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.contiguous().impl(), rows.impl());
}

TEST(View, CloneAlwaysCopies) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    ox::Tensor c = in.t.clone();
    expect_ref(c, in.ref);
    EXPECT_FALSE(c.is_same_storage(in.t));
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(c.dtype(), in.t.dtype());
    c.fill_(-1);  // the copy is independent
    expect_ref(in.t, in.ref);
    EXPECT_EQ(c.to_vector<double>(), std::vector<double>(24, -1.0));
  }
}

TEST(View, DetachSharesStorageAndLayout) {
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const ox::Tensor d = in.t.detach();
    expect_ref(d, in.ref);
    EXPECT_TRUE(d.is_same_storage(in.t));
    EXPECT_NE(d.impl(), in.t.impl());
    EXPECT_EQ(strides_of(d), in.strides);
    EXPECT_EQ(d.storage_offset(), in.offset);
  }
}

// ---- Views share storage: writes through them reach the base ------------------------------

TEST(View, WritesThroughViewsReachTheBase) {
  // base[i][j][k] = 12i + 4j + k, shape (2, 3, 4).
  auto base = [] { return ox::arange(0, 24, 1, {.dtype = ox::kF32}).reshape({2, 3, 4}); };
  auto expect_base = [](const ox::Tensor& b, auto&& value) {
    std::vector<double> expected;
    for_each_index({2, 3, 4}, [&](const Idx& i) { expected.push_back(value(i)); });
    EXPECT_EQ(b.to_vector<double>(), expected);
  };
  auto plain = [](const Idx& i) { return double(12 * i[0] + 4 * i[1] + i[2]); };
  {
    ox::Tensor b = base();
    b.narrow(2, 1, 2).fill_(-1);
    expect_base(b, [&](const Idx& i) { return i[2] == 1 || i[2] == 2 ? -1.0 : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.select(1, -1).copy_(ox::tensor({100.f, 101.f, 102.f, 103.f}));  // broadcast over dim 0
    expect_base(b, [&](const Idx& i) { return i[1] == 2 ? 100.0 + i[2] : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.flip({2}).select(0, 0).select(0, 0).copy_(ox::tensor({7.f, 6.f, 5.f, 4.f}));
    expect_base(b, [&](const Idx& i) {
      return i[0] == 0 && i[1] == 0 ? 4.0 + i[2] : plain(i);  // written reversed
    });
  }
  {
    ox::Tensor b = base();
    b.permute({2, 0, 1}).slice(0, 0, 4, 3).fill_(0.5);  // k = 0 and k = 3
    expect_base(b, [&](const Idx& i) { return i[2] == 0 || i[2] == 3 ? 0.5 : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.diagonal(1, 1, 2).fill_(9);  // [i][j][j+1]
    expect_base(b, [&](const Idx& i) { return i[2] == i[1] + 1 ? 9.0 : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.view({6, 4}).t().select(0, 3).fill_(-2);  // k = 3
    expect_base(b, [&](const Idx& i) { return i[2] == 3 ? -2.0 : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.as_strided({3}, {5}, 2).fill_(-3);  // storage elements 2, 7, 12
    expect_base(b, [&](const Idx& i) {
      const int64_t k = 12 * i[0] + 4 * i[1] + i[2];
      return k == 2 || k == 7 || k == 12 ? -3.0 : plain(i);
    });
  }
  {
    ox::Tensor b = base();
    b.unfold(2, 2, 2).select(-1, 1).fill_(8);  // k odd
    expect_base(b, [&](const Idx& i) { return i[2] % 2 == 1 ? 8.0 : plain(i); });
  }
  {
    ox::Tensor b = base();
    b.detach().select(0, 1).fill_(0);
    expect_base(b, [&](const Idx& i) { return i[0] == 1 ? 0.0 : plain(i); });
  }
  // Writing through a view of an expanded tensor along its stride-0 dim changes what every
  // broadcast copy shows.
  {
    ox::Tensor small = ox::arange(0, 8, 1, {.dtype = ox::kF32}).reshape({2, 1, 4});
    const ox::Tensor e = small.expand({2, 3, 4});
    e.select(1, 2).select(0, 1).fill_(-5);  // small[1][0][:]
    std::vector<double> expected;
    for_each_index({2, 3, 4},
                   [&](const Idx& i) { expected.push_back(i[0] == 1 ? -5.0 : 4.0 * i[0] + i[2]); });
    EXPECT_EQ(e.to_vector<double>(), expected);
  }
}

TEST(View, WritesBumpTheSharedVersionCounter) {
  ox::Tensor b = ox::zeros({4, 4});
  const ox::Tensor v = b.narrow(0, 1, 2);
  const uint64_t before = b.storage()->version();
  v.detach().fill_(1);
  EXPECT_EQ(b.storage()->version(), before + 1);
  ox::Tensor w = b.t();
  w.copy_(ox::ones({4, 4}));
  EXPECT_EQ(v.storage()->version(), before + 2);
}

// ---- Zero-size and 0-d inputs -------------------------------------------------------------

TEST(View, ZeroSizeTensors) {
  const ox::Tensor z = ox::zeros({1, 0, 3});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(shape_of(z.reshape({0, 5})), (Idx{0, 5}));
  EXPECT_EQ(shape_of(z.reshape({-1})), (Idx{0}));
  EXPECT_EQ(shape_of(z.view({3, -1, 7})), (Idx{3, 0, 7}));
  EXPECT_EQ(shape_of(z.permute({2, 0, 1})), (Idx{3, 1, 0}));
  EXPECT_EQ(shape_of(z.transpose(0, 2)), (Idx{3, 0, 1}));
  EXPECT_EQ(shape_of(z.narrow(2, 1, 2)), (Idx{1, 0, 2}));
  EXPECT_EQ(shape_of(z.slice(1, 0, 5)), (Idx{1, 0, 3}));
  EXPECT_EQ(shape_of(z.select(0, 0)), (Idx{0, 3}));
  EXPECT_EQ(shape_of(z.expand({4, 1, 0, 3})), (Idx{4, 1, 0, 3}));
  EXPECT_EQ(shape_of(z.expand({2, 0, 3})), (Idx{2, 0, 3}));
  EXPECT_EQ(shape_of(z.squeeze()), (Idx{0, 3}));
  EXPECT_EQ(shape_of(z.unsqueeze(3)), (Idx{1, 0, 3, 1}));
  EXPECT_EQ(shape_of(z.flatten()), (Idx{0}));
  EXPECT_EQ(shape_of(z.unflatten(2, {3, 1})), (Idx{1, 0, 3, 1}));
  EXPECT_EQ(shape_of(z.flip({1, 2})), (Idx{1, 0, 3}));
  EXPECT_EQ(shape_of(z.diagonal(0, 1, 2)), (Idx{1, 0}));
  EXPECT_EQ(shape_of(z.unfold(2, 2, 1)), (Idx{1, 0, 2, 2}));
  EXPECT_EQ(shape_of(z.contiguous()), (Idx{1, 0, 3}));
  EXPECT_EQ(shape_of(z.clone()), (Idx{1, 0, 3}));
  EXPECT_TRUE(z.to_vector<float>().empty());
  EXPECT_EQ(kind_of([&] { z.select(1, 0); }), ErrorKind::Index);
}

TEST(View, ZeroDimTensors) {
  const ox::Tensor s = ox::scalar_tensor(int64_t{42});
  EXPECT_EQ(shape_of(s.reshape({1, 1})), (Idx{1, 1}));
  EXPECT_EQ(shape_of(s.view({-1})), (Idx{1}));
  EXPECT_EQ(s.reshape({1}).reshape({}).dim(), 0);
  EXPECT_EQ(shape_of(s.expand({3})), (Idx{3}));
  EXPECT_EQ(s.permute({}).item<int64_t>(), 42);
  EXPECT_EQ(s.transpose(0, -1).item<int64_t>(), 42);
  EXPECT_EQ(shape_of(s.unfold(0, 1, 1)), (Idx{1}));
  EXPECT_EQ(s.unfold(0, 1, 1).item<int64_t>(), 42);
  EXPECT_EQ(s.contiguous().impl(), s.impl());
  EXPECT_EQ(s.clone().item<int64_t>(), 42);
  EXPECT_EQ(kind_of([&] { s.transpose(0, 1); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { s.permute({0}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { s.view({2}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { s.diagonal(); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { s.slice(0, 0, 1); }), ErrorKind::Shape);
}

TEST(View, PermuteErrors) {
  const ox::Tensor t = ox::zeros({2, 3, 4});
  EXPECT_EQ(kind_of([&] { t.permute({0, 1}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.permute({0, 1, 2, 3}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { t.permute({0, 1, 1}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { t.permute({0, 1, -2}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { t.permute({0, 1, 3}); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { t.transpose(0, 3); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { t.transpose(-4, 0); }), ErrorKind::Index);
  // Messages name the op in brackets.
  EXPECT_EQ(std::string(caught([&] { t.transpose(0, 3); }).what()).rfind("[transpose]", 0), 0u);
  EXPECT_EQ(std::string(caught([&] { t.view({5}); }).what()).rfind("[view]", 0), 0u);
}

}  // namespace
