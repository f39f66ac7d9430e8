// Creation functions, tensor metadata, from_blob and the typed errors of the Tensor handle.
// Expected values are written out by hand or computed by plain loops here.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tensor/storage.h"
#include "test_util.h"

namespace {

using ox::ErrorKind;
using oxtest::kind_of;
using oxtest::shape_of;
using oxtest::strides_of;
using Idx = std::vector<int64_t>;

bool cuda_available() {
  for (const ox::BackendInfo& b : ox::backend_infos())
    if (b.name == "cuda" && b.available) return true;
  return false;
}

// ---- tensor() from host values ------------------------------------------------------------

TEST(Creation, TensorFromFlatInitializerList) {
  const ox::Tensor f = ox::tensor({1.5f, -2.f, 3.25f});
  EXPECT_EQ(f.dtype(), ox::kF32);
  EXPECT_EQ(shape_of(f), (Idx{3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.f, 3.25f}));
  EXPECT_TRUE(f.is_contiguous());
  EXPECT_EQ(f.storage_offset(), 0);

  EXPECT_EQ(ox::tensor({1.0, 2.0}, {.dtype = ox::kF64}).dtype(), ox::kF64);
  EXPECT_EQ(ox::tensor({1, 2}).dtype(), ox::kI64);  // int literals make i64, as torch.tensor
  EXPECT_EQ(ox::tensor(std::vector<int32_t>{1, 2}).dtype(), ox::kI32);  // a typed vector keeps i32
  EXPECT_EQ(ox::tensor({int64_t{1}}).dtype(), ox::kI64);
  EXPECT_EQ(ox::tensor({int16_t{1}}).dtype(), ox::kI16);
  EXPECT_EQ(ox::tensor({int8_t{1}}).dtype(), ox::kI8);
  EXPECT_EQ(ox::tensor({uint8_t{1}}).dtype(), ox::kU8);
  EXPECT_EQ(ox::tensor({true, false}).dtype(), ox::kBool);
  EXPECT_EQ(ox::tensor({ox::Half::from_bits(0x3c00)}).dtype(), ox::kF16);
  EXPECT_EQ(ox::tensor({ox::BFloat16::from_bits(0x3f80)}).dtype(), ox::kBF16);
  EXPECT_EQ(ox::tensor({ox::Half::from_bits(0x3c00)}).item<float>(), 1.0f);       // 0x3c00 is 1
  EXPECT_EQ(ox::tensor({ox::BFloat16::from_bits(0xc020)}).item<float>(), -2.5f);  // 0xc020
  EXPECT_EQ(ox::tensor({int8_t{-128}, int8_t{127}}).to_vector<int8_t>(),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(ox::tensor({uint8_t{255}}).item<int64_t>(), 255);
  EXPECT_EQ(ox::tensor({std::numeric_limits<int64_t>::min()}).item<int64_t>(),
            std::numeric_limits<int64_t>::min());

  const ox::Tensor none = ox::tensor(std::initializer_list<float>{});
  EXPECT_EQ(shape_of(none), (Idx{0}));
  EXPECT_EQ(none.numel(), 0);
}

TEST(Creation, TensorFromNestedInitializerLists) {
  const ox::Tensor m = ox::tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(shape_of(m), (Idx{2, 3}));
  EXPECT_EQ(m.dtype(), ox::kI64);
  EXPECT_EQ(m.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(strides_of(m), (Idx{3, 1}));

  const ox::Tensor c =
      ox::tensor({{{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}, {{7.f, 8.f}, {9.f, 10.f}, {11.f, 12.f}}});
  EXPECT_EQ(shape_of(c), (Idx{2, 3, 2}));
  EXPECT_EQ(strides_of(c), (Idx{6, 2, 1}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  // Element [1][2][0] is 11: 1*6 + 2*2 + 0 = 10th in row-major order.
  EXPECT_EQ(c.select(0, 1).select(0, 2).select(0, 0).item<float>(), 11.f);

  EXPECT_EQ(shape_of(ox::tensor({{1.0}}, {.dtype = ox::kF64})), (Idx{1, 1}));
  EXPECT_EQ(shape_of(ox::tensor({{1.0, 2.0}}, {.dtype = ox::kF64})), (Idx{1, 2}));
  EXPECT_EQ(shape_of(ox::tensor({{1.0}, {2.0}}, {.dtype = ox::kF64})), (Idx{2, 1}));
}

TEST(Creation, RaggedNestedListsAreShapeErrors) {
  EXPECT_EQ(kind_of([] { ox::tensor({{1, 2, 3}, {4, 5}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::tensor({{1}, {2, 3}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::tensor({{{1, 2}, {3, 4}}, {{5, 6}}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7}}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::tensor({{{1, 2}, {3}}}); }), ErrorKind::Shape);
}

TEST(Creation, TensorFromVectors) {
  const std::vector<double> v{0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  const ox::Tensor a = ox::tensor(v);
  EXPECT_EQ(a.dtype(), ox::kF64);
  EXPECT_EQ(shape_of(a), (Idx{6}));
  EXPECT_EQ(a.to_vector<double>(), v);

  const ox::Tensor b = ox::tensor(v, {2, 3});
  EXPECT_EQ(shape_of(b), (Idx{2, 3}));
  EXPECT_EQ(b.select(0, 1).to_vector<double>(), (std::vector<double>{3.5, 4.5, 5.5}));
  EXPECT_EQ(ox::tensor(v, {3, 1, 2}).select(0, 2).select(0, 0).to_vector<double>(),
            (std::vector<double>{4.5, 5.5}));
  EXPECT_EQ(ox::tensor(std::vector<float>{7.f}, ox::Shape{}).dim(), 0);
  EXPECT_EQ(ox::tensor(std::vector<float>{}, {0, 4}).numel(), 0);
  EXPECT_EQ(kind_of([&] { ox::tensor(v, {4, 2}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::tensor(v, {7}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::tensor(v, {-6}); }), ErrorKind::Shape);

  const std::vector<bool> flags{true, false, false, true, true};
  const ox::Tensor c = ox::tensor(flags);
  EXPECT_EQ(c.dtype(), ox::kBool);
  EXPECT_EQ(c.to_vector<bool>(), flags);
  EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 1, 1}));
  EXPECT_EQ(ox::tensor(std::vector<bool>{true, false, true, true}, {2, 2}).to_vector<bool>(),
            (std::vector<bool>{true, false, true, true}));
}

TEST(Creation, ExplicitDTypeConvertsTheValues) {
  const ox::Tensor i = ox::tensor({1.5f, -2.5f, 2.9f, -0.9f}, {.dtype = ox::kI32});
  EXPECT_EQ(i.dtype(), ox::kI32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 2, 0}));  // toward zero
  const ox::Tensor d = ox::tensor({1, 2, 3}, {.dtype = ox::kF64});
  EXPECT_EQ(d.dtype(), ox::kF64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{1, 2, 3}));
  const ox::Tensor b = ox::tensor({0.0, -0.0, 0.5, -3.0}, {.dtype = ox::kBool});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
  const ox::Tensor u = ox::tensor({int64_t{256}, int64_t{-1}, int64_t{257}}, {.dtype = ox::kU8});
  EXPECT_EQ(u.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255, 1}));  // modulo 256
  const ox::Tensor h = ox::tensor(std::vector<bool>{true, false}, {.dtype = ox::kF16});
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.f, 0.f}));
  const ox::Tensor n = ox::tensor({{1.f, 2.f}, {3.f, 4.f}}, {.dtype = ox::kI64});
  EXPECT_EQ(shape_of(n), (Idx{2, 2}));
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
}

// ---- Filled tensors -----------------------------------------------------------------------

TEST(Creation, EmptyZerosOnesFull) {
  const ox::Tensor e = ox::empty({2, 3});
  EXPECT_EQ(e.dtype(), ox::kF32);
  EXPECT_EQ(shape_of(e), (Idx{2, 3}));
  EXPECT_EQ(strides_of(e), (Idx{3, 1}));
  EXPECT_EQ(e.device(), ox::default_device());
  EXPECT_EQ(e.nbytes(), 24u);
  EXPECT_EQ(ox::empty({4}, ox::kI16).dtype(), ox::kI16);
  EXPECT_EQ(ox::empty({4}, ox::kI16).nbytes(), 8u);

  EXPECT_EQ(ox::zeros({2, 2}).to_vector<float>(), std::vector<float>(4, 0.f));
  EXPECT_EQ(ox::zeros({3}, ox::kI64).to_vector<int64_t>(), std::vector<int64_t>(3, 0));
  EXPECT_EQ(ox::zeros({3}, {.dtype = ox::kBool}).to_vector<bool>(), std::vector<bool>(3, false));
  EXPECT_EQ(ox::ones({2, 1, 2}).to_vector<float>(), std::vector<float>(4, 1.f));
  EXPECT_EQ(ox::ones({2}, ox::kU8).to_vector<uint8_t>(), std::vector<uint8_t>(2, 1));
  EXPECT_EQ(ox::ones({2}, ox::kBF16).to_vector<float>(), std::vector<float>(2, 1.f));
  EXPECT_EQ(ox::ones({2}, ox::kBool).to_vector<bool>(), std::vector<bool>(2, true));
  EXPECT_EQ(ox::ones({}).dim(), 0);
  EXPECT_EQ(ox::ones({}).item<float>(), 1.f);
  // Bits of a float zero: all zero, and -0.0 is not produced.
  for (float z : ox::zeros({5}).to_vector<float>()) EXPECT_FALSE(std::signbit(z));
}

TEST(Creation, FullTakesItsDTypeFromTheValue) {
  const ox::Tensor i = ox::full({2, 2}, 7);
  EXPECT_EQ(i.dtype(), ox::kI64);
  EXPECT_EQ(i.to_vector<int64_t>(), std::vector<int64_t>(4, 7));
  const ox::Tensor f = ox::full({3}, 2.5);
  EXPECT_EQ(f.dtype(), ox::kF32);
  EXPECT_EQ(f.to_vector<float>(), std::vector<float>(3, 2.5f));
  EXPECT_EQ(ox::full({3}, 2.5f).dtype(), ox::kF32);
  const ox::Tensor b = ox::full({2}, true);
  EXPECT_EQ(b.dtype(), ox::kBool);
  EXPECT_EQ(b.to_vector<bool>(), std::vector<bool>(2, true));
  EXPECT_EQ(ox::full({1}, int64_t{1} << 40).item<int64_t>(), int64_t{1} << 40);
  // An explicit dtype converts the value.
  EXPECT_EQ(ox::full({2}, 2.75, ox::kI32).to_vector<int32_t>(), std::vector<int32_t>(2, 2));
  EXPECT_EQ(ox::full({2}, -2.75, {.dtype = ox::kI8}).to_vector<int8_t>(),
            std::vector<int8_t>(2, -2));
  EXPECT_EQ(ox::full({2}, 3, ox::kF64).to_vector<double>(), std::vector<double>(2, 3.0));
  EXPECT_EQ(ox::full({2}, true, ox::kF32).to_vector<float>(), std::vector<float>(2, 1.f));
  EXPECT_EQ(ox::full({2}, 0.25, ox::kBool).to_vector<bool>(), std::vector<bool>(2, true));
  EXPECT_EQ(oxtest::kind_of([] { ox::full({1}, 1e10, ox::kI32); }), ox::ErrorKind::Value);
  const ox::Tensor nan = ox::full({1}, std::nan(""), ox::kF64);
  EXPECT_TRUE(std::isnan(nan.item<double>()));
  EXPECT_EQ(oxtest::kind_of([] { ox::full({1}, std::nan(""), ox::kI64); }), ox::ErrorKind::Value);
}

TEST(Creation, LikeFunctionsFollowTheModel) {
  const ox::Tensor model = ox::zeros({3, 2}, ox::kF64).t();  // non-contiguous (2, 3) f64
  const ox::Tensor e = ox::empty_like(model);
  EXPECT_EQ(e.dtype(), ox::kF64);
  EXPECT_EQ(shape_of(e), (Idx{2, 3}));
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(e.device(), ox::default_device());
  EXPECT_FALSE(e.is_same_storage(model));

  const ox::Tensor z = ox::zeros_like(model);
  EXPECT_EQ(z.dtype(), ox::kF64);
  EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0));
  const ox::Tensor o = ox::ones_like(model, {.dtype = ox::kI32});
  EXPECT_EQ(o.dtype(), ox::kI32);
  EXPECT_EQ(shape_of(o), (Idx{2, 3}));
  EXPECT_EQ(o.to_vector<int32_t>(), std::vector<int32_t>(6, 1));

  // full_like takes the model's dtype, not the value's.
  const ox::Tensor ints = ox::zeros({2}, ox::kI64);
  const ox::Tensor fl = ox::full_like(ints, 2.5);
  EXPECT_EQ(fl.dtype(), ox::kI64);
  EXPECT_EQ(fl.to_vector<int64_t>(), std::vector<int64_t>(2, 2));
  EXPECT_EQ(ox::full_like(ints, 2.5, {.dtype = ox::kF16}).to_vector<float>(),
            std::vector<float>(2, 2.5f));
  EXPECT_EQ(ox::full_like(ox::zeros({2}, ox::kBool), 3).to_vector<bool>(),
            std::vector<bool>(2, true));
  EXPECT_EQ(shape_of(ox::zeros_like(ox::scalar_tensor(1))), Idx{});
  EXPECT_EQ(shape_of(ox::ones_like(ox::zeros({1, 0, 3}))), (Idx{1, 0, 3}));
  EXPECT_EQ(kind_of([] { ox::zeros_like(ox::Tensor()); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::full_like(ox::Tensor(), 1); }), ErrorKind::Value);
}

// ---- arange / linspace / eye / scalar_tensor ---------------------------------------------

TEST(Creation, ArangeIntegers) {
  const ox::Tensor a = ox::arange(5);
  EXPECT_EQ(a.dtype(), ox::kI64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ox::arange(1, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(ox::arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ox::arange(10, 1, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4}));
  EXPECT_EQ(ox::arange(-3, 3, 2).to_vector<int64_t>(), (std::vector<int64_t>{-3, -1, 1}));
  EXPECT_EQ(ox::arange(5, 6).to_vector<int64_t>(), (std::vector<int64_t>{5}));
  EXPECT_EQ(ox::arange(0, 5, 100).to_vector<int64_t>(), (std::vector<int64_t>{0}));
  // Empty ranges.
  EXPECT_EQ(shape_of(ox::arange(0)), (Idx{0}));
  EXPECT_EQ(shape_of(ox::arange(5, 5)), (Idx{0}));
  EXPECT_EQ(shape_of(ox::arange(5, 5, -2)), (Idx{0}));
  // Another dtype.
  const ox::Tensor s = ox::arange(0, 6, 2, {.dtype = ox::kI16});
  EXPECT_EQ(s.dtype(), ox::kI16);
  EXPECT_EQ(s.to_vector<int16_t>(), (std::vector<int16_t>{0, 2, 4}));
  const ox::Tensor d = ox::arange(3, {.dtype = ox::kF64});
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 1, 2}));
  // count = ceil((end - start) / step) over a longer range, checked by a plain loop.
  for (const int64_t step : {1, 2, 3, 7, 64}) {
    std::vector<int64_t> expected;
    for (int64_t v = -50; v < 1000; v += step) expected.push_back(v);
    EXPECT_EQ(ox::arange(-50, 1000, step).to_vector<int64_t>(), expected) << step;
  }
}

TEST(Creation, ArangeAtTheEndsOfInt64) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  constexpr int64_t hi = std::numeric_limits<int64_t>::max();
  // Three elements: lo, lo + hi = -1, and lo + 2 hi = hi - 1 (the product 2 * hi itself
  // does not fit in int64).
  EXPECT_EQ(ox::arange(lo, hi, hi).to_vector<int64_t>(), (std::vector<int64_t>{lo, -1, hi - 1}));
  EXPECT_EQ(ox::arange(hi, lo, lo + 1).to_vector<int64_t>(), (std::vector<int64_t>{hi, 0, lo + 1}));
  EXPECT_EQ(ox::arange(hi - 2, hi).to_vector<int64_t>(), (std::vector<int64_t>{hi - 2, hi - 1}));
  // Too many elements: refused before allocating.
  EXPECT_EQ(kind_of([] { ox::arange(lo, hi); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::arange(0, hi); }), ErrorKind::Shape);
}

TEST(Creation, ArangeFloats) {
  const ox::Tensor a = ox::arange(2.5);
  EXPECT_EQ(a.dtype(), ox::kF32);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(ox::arange(0, 2, 0.5).to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f}));
  EXPECT_EQ(ox::arange(0.5, 3).dtype(), ox::kF32);
  EXPECT_EQ(ox::arange(-1.5, 1.0, 0.5).to_vector<float>(),
            (std::vector<float>{-1.5f, -1, -0.5f, 0, 0.5f}));
  EXPECT_EQ(ox::arange(1.0, -1.0, -0.5).to_vector<float>(),
            (std::vector<float>{1, 0.5f, 0, -0.5f}));
  EXPECT_EQ(ox::arange(0.0, 1.0, 0.3).to_vector<float>().size(), 4u);  // ceil(3.33)
  EXPECT_EQ(ox::arange(0.0, 0.9, 0.3).numel(), 3);                     // 0.9/0.3 = 3 in doubles
  EXPECT_EQ(shape_of(ox::arange(1.0, 1.0, 0.1)), (Idx{0}));
  // Element i is start + i * step, computed in double and rounded once.
  const ox::Tensor t = ox::arange(0.0, 1.0, 0.1, {.dtype = ox::kF64});
  ASSERT_EQ(t.numel(), 10);
  const std::vector<double> got = t.to_vector<double>();
  for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(got[i], 0.1 * i) << i;
  const std::vector<float> f = ox::arange(0.0, 1.0, 0.1).to_vector<float>();
  ASSERT_EQ(f.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(f[i], 0.1 * i, 1e-7) << i;
}

TEST(Creation, ArangeErrors) {
  EXPECT_EQ(kind_of([] { ox::arange(0, 5, 0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0.0, 5.0, 0.0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0, 5, -1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(5, 0, 1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0.0, -1.0, 0.5); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(-1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0.0, INFINITY); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0.0, 1.0, std::nan("")); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::arange(0.0, 1e30, 1e-30); }), ErrorKind::Shape);
}

TEST(Creation, Linspace) {
  const ox::Tensor a = ox::linspace(0, 1, 5);
  EXPECT_EQ(a.dtype(), ox::kF32);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(ox::linspace(2, -2, 3).to_vector<float>(), (std::vector<float>{2, 0, -2}));
  EXPECT_EQ(shape_of(ox::linspace(0, 1, 0)), (Idx{0}));
  EXPECT_EQ(ox::linspace(3.5, 9, 1).to_vector<float>(), (std::vector<float>{3.5f}));
  EXPECT_EQ(ox::linspace(0, 1, 2).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(kind_of([] { ox::linspace(0, 1, -1); }), ErrorKind::Value);

  // Both endpoints exact, even when the step is not representable; element i of the first
  // half is start + i * step, of the second half end - (n - 1 - i) * step.
  for (const int64_t n : {2, 3, 7, 10, 101}) {
    const double start = 0.1, end = 0.7;
    const std::vector<double> got =
        ox::linspace(start, end, n, {.dtype = ox::kF64}).to_vector<double>();
    ASSERT_EQ(static_cast<int64_t>(got.size()), n);
    EXPECT_EQ(got.front(), start);
    EXPECT_EQ(got.back(), end);
    const double step = (end - start) / double(n - 1);
    for (int64_t i = 0; i < n; ++i) {
      const double expected = i < n / 2 ? start + step * double(i) : end - step * double(n - 1 - i);
      EXPECT_EQ(got[i], expected) << n << " " << i;
      EXPECT_NEAR(got[i], start + (end - start) * double(i) / double(n - 1), 1e-15);
    }
    // Symmetric: the k-th point from the start and the k-th from the end are mirror images.
    const std::vector<double> sym = ox::linspace(-1, 1, n, {.dtype = ox::kF64}).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(sym[i], -sym[n - 1 - i]) << n << " " << i;
  }
  const std::vector<float> f = ox::linspace(0.1, 0.7, 7).to_vector<float>();
  EXPECT_EQ(f.front(), 0.1f);
  EXPECT_EQ(f.back(), 0.7f);

  // Integer dtypes truncate the double values: 0, 2.5, 5, 7.5, 10.
  EXPECT_EQ(ox::linspace(0, 10, 5, {.dtype = ox::kI64}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 5, 7, 10}));
}

TEST(Creation, Eye) {
  const ox::Tensor i3 = ox::eye(3);
  EXPECT_EQ(i3.dtype(), ox::kF32);
  EXPECT_EQ(shape_of(i3), (Idx{3, 3}));
  EXPECT_EQ(i3.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(ox::eye(2, 4).to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(ox::eye(3, 2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(ox::eye(2, std::nullopt, {.dtype = ox::kI64}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(ox::eye(1, 1, {.dtype = ox::kBool}).to_vector<bool>(), (std::vector<bool>{true}));
  EXPECT_EQ(shape_of(ox::eye(0)), (Idx{0, 0}));
  EXPECT_EQ(shape_of(ox::eye(0, 3)), (Idx{0, 3}));
  EXPECT_EQ(shape_of(ox::eye(3, 0)), (Idx{3, 0}));
  EXPECT_EQ(kind_of([] { ox::eye(-1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::eye(2, -1); }), ErrorKind::Value);
  // A larger one against a plain loop.
  const std::vector<double> big = ox::eye(37, 41, {.dtype = ox::kF64}).to_vector<double>();
  for (int r = 0; r < 37; ++r)
    for (int c = 0; c < 41; ++c) EXPECT_EQ(big[r * 41 + c], r == c ? 1.0 : 0.0);
}

TEST(Creation, ScalarTensor) {
  const ox::Tensor i = ox::scalar_tensor(3);
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(i.numel(), 1);
  EXPECT_EQ(i.dtype(), ox::kI64);
  EXPECT_EQ(i.item<int64_t>(), 3);
  EXPECT_EQ(ox::scalar_tensor(2.5).dtype(), ox::kF32);
  EXPECT_EQ(ox::scalar_tensor(2.5).item<float>(), 2.5f);
  EXPECT_EQ(ox::scalar_tensor(true).dtype(), ox::kBool);
  EXPECT_TRUE(ox::scalar_tensor(true).item<bool>());
  const ox::Tensor d = ox::scalar_tensor(0.1, {.dtype = ox::kF64});
  EXPECT_EQ(d.dtype(), ox::kF64);
  EXPECT_EQ(d.item<double>(), 0.1);
  EXPECT_EQ(ox::scalar_tensor(-7, {.dtype = ox::kI8}).item<int8_t>(), -7);
  EXPECT_EQ(ox::scalar_tensor(int64_t{3}).item<double>(), 3.0);
}

// ---- Sizes: zero, and too big -------------------------------------------------------------

TEST(Creation, ZeroSizeShapes) {
  const ox::Tensor a = ox::zeros({0});
  EXPECT_EQ(a.numel(), 0);
  EXPECT_EQ(a.dim(), 1);
  EXPECT_EQ(a.nbytes(), 0u);
  EXPECT_TRUE(a.to_vector<float>().empty());
  EXPECT_TRUE(a.is_contiguous());
  const ox::Tensor b = ox::ones({1, 0, 3}, ox::kI32);
  EXPECT_EQ(b.numel(), 0);
  EXPECT_EQ(shape_of(b), (Idx{1, 0, 3}));
  EXPECT_EQ(strides_of(b), (Idx{3, 3, 1}));  // a size-0 dim still has stride >= 1
  EXPECT_TRUE(b.is_contiguous());
  EXPECT_TRUE(b.to_vector<int32_t>().empty());
  EXPECT_EQ(ox::full({0, 0}, 5).numel(), 0);
  EXPECT_EQ(ox::empty({5, 0}).numel(), 0);
  EXPECT_EQ(kind_of([] { ox::zeros({0}).item<float>(); }), ErrorKind::Value);
}

TEST(Creation, OverflowingSizesAreRefusedBeforeAllocating) {
  // 2 * 2 * 1 * 2^61 = 2^63 elements does not fit in int64.
  EXPECT_EQ(kind_of([] { ox::zeros({2, 2, 1, 1LL << 61}); }), ErrorKind::Shape);
  // 2^62 f32 elements are 2^64 bytes.
  EXPECT_EQ(kind_of([] { ox::zeros({1LL << 62}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::empty({1LL << 62}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::empty({1LL << 61}, ox::kF64); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::ones({1LL << 32, 1LL << 32}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::full({3, 1LL << 62}, 1, ox::kU8); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::zeros({-1}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::empty({2, -3}); }), ErrorKind::Shape);
  // A zero anywhere makes the count zero, even after a partial product that overflows.
  EXPECT_EQ(ox::zeros({1LL << 62, 1LL << 62, 0}).numel(), 0);
}

// ---- Devices ------------------------------------------------------------------------------

TEST(Creation, CudaIsRefusedInACpuOnlyBuild) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA backend is available in this process";
  EXPECT_EQ(kind_of([] { ox::tensor({1.f, 2.f}).to(ox::Device::cuda(0)); }), ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::zeros({2}, {.device = ox::Device::cuda(0)}); }), ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::arange(3, {.device = ox::Device::cuda(0)}); }), ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::tensor({1.f}, {.device = ox::Device::cuda(1)}); }), ErrorKind::Device);
  float x = 0;
  EXPECT_EQ(
      kind_of([&] { ox::from_blob(&x, {1}, ox::kF32, {}, std::nullopt, ox::Device::cuda()); }),
      ErrorKind::Device);
}

TEST(Creation, CpuToCpuIsTheSameTensor) {
  const ox::Tensor t = ox::ones({2}, {.device = ox::Device::cpu()});
  EXPECT_EQ(t.to(ox::Device::cpu()).impl(), t.impl());
  EXPECT_EQ(t.cpu().impl(), t.impl());
  EXPECT_EQ(t.to(ox::kF32).impl(), t.impl());
  EXPECT_EQ(kind_of([] { ox::ones({2}, {.device = ox::Device(ox::DeviceType::CPU, 1)}); }),
            ErrorKind::Device);
}

// ---- The handle: metadata, undefined tensors, item, data_ptr ------------------------------

TEST(TensorMeta, Metadata) {
  const ox::Tensor t = ox::zeros({2, 3, 4}, ox::kF64);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.stride(-2), 4);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.element_size(), 8u);
  EXPECT_EQ(t.nbytes(), 192u);
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.sizes(), t.shape());
  EXPECT_EQ(t.layout().shape, t.shape());
  EXPECT_EQ(t.storage()->nbytes(), 192u);
  EXPECT_EQ(kind_of([&] { t.size(3); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { t.size(-4); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { t.stride(3); }), ErrorKind::Index);

  const ox::Tensor v = t.narrow(1, 1, 2);
  EXPECT_EQ(v.storage_offset(), 4);
  EXPECT_EQ(v.numel(), 16);
  EXPECT_EQ(v.nbytes(), 128u);  // the view's bytes, not the storage's
  EXPECT_FALSE(v.is_contiguous());

  EXPECT_EQ(ox::zeros({3}, ox::kBF16).element_size(), 2u);
  EXPECT_EQ(ox::zeros({3}, ox::kBool).element_size(), 1u);
}

TEST(TensorMeta, ZeroDimSizeIsAnIndexError) {
  const ox::Tensor s = ox::scalar_tensor(1.0);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_TRUE(s.shape().empty());
  EXPECT_TRUE(s.strides().empty());
  EXPECT_EQ(kind_of([&] { s.size(0); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { s.size(-1); }), ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { s.stride(0); }), ErrorKind::Index);
}

TEST(TensorMeta, SameStorage) {
  const ox::Tensor a = ox::zeros({4});
  const ox::Tensor b = ox::zeros({4});
  EXPECT_TRUE(a.is_same_storage(a));
  EXPECT_TRUE(a.is_same_storage(a.flip({0})));
  EXPECT_TRUE(a.narrow(0, 0, 2).is_same_storage(a.narrow(0, 2, 2)));
  EXPECT_FALSE(a.is_same_storage(b));
  EXPECT_FALSE(a.is_same_storage(ox::Tensor()));
  EXPECT_FALSE(ox::Tensor().is_same_storage(a));
  EXPECT_FALSE(ox::Tensor().is_same_storage(ox::Tensor()));
}

TEST(TensorMeta, UndefinedTensorMethodsAreValueErrors) {
  ox::Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_EQ(u.impl(), nullptr);
  EXPECT_EQ(u.str(), "tensor(undefined)");
  const std::vector<std::function<void()>> calls = {
      [&] { u.shape(); },
      [&] { u.strides(); },
      [&] { u.dim(); },
      [&] { u.size(0); },
      [&] { u.stride(0); },
      [&] { u.numel(); },
      [&] { u.dtype(); },
      [&] { u.device(); },
      [&] { u.element_size(); },
      [&] { u.nbytes(); },
      [&] { u.is_contiguous(); },
      [&] { u.layout(); },
      [&] { u.storage(); },
      [&] { u.storage_offset(); },
      [&] { u.item<float>(); },
      [&] { u.to_vector<float>(); },
      [&] { u.to_vector<bool>(); },
      [&] { u.data_ptr<float>(); },
      [&] { u.view({1}); },
      [&] { u.reshape({1}); },
      [&] { u.permute({0}); },
      [&] { u.transpose(0, 1); },
      [&] { u.t(); },
      [&] { u.narrow(0, 0, 1); },
      [&] { u.slice(0); },
      [&] { u.select(0, 0); },
      [&] { u.expand({1}); },
      [&] { u.broadcast_to({1}); },
      [&] { u.squeeze(); },
      [&] { u.squeeze(0); },
      [&] { u.unsqueeze(0); },
      [&] { u.flatten(); },
      [&] { u.unflatten(0, {1}); },
      [&] { u.flip({0}); },
      [&] { u.diagonal(); },
      [&] { u.as_strided({1}, {1}); },
      [&] { u.unfold(0, 1, 1); },
      [&] { u.detach(); },
      [&] { u.contiguous(); },
      [&] { u.clone(); },
      [&] { u.to(ox::kF64); },
      [&] { u.to(ox::Device::cpu()); },
      [&] { u.cpu(); },
      [&] { u.copy_(ox::zeros({1})); },
      [&] { u.fill_(1); },
      [&] { u.zero_(); },
      [&] { ox::zeros({1}).expand_as(u); },
      [&] { ox::zeros({1}).copy_(u); },
  };
  for (size_t i = 0; i < calls.size(); ++i)
    EXPECT_EQ(kind_of(calls[i]), ErrorKind::Value) << "call #" << i;
}

TEST(TensorMeta, ItemNeedsExactlyOneElement) {
  EXPECT_EQ(ox::tensor({2.5f}).item<float>(), 2.5f);
  EXPECT_EQ(ox::tensor({2.5f}).item<int32_t>(), 2);  // converts
  EXPECT_EQ(ox::tensor({2.5f}).item<double>(), 2.5);
  EXPECT_EQ(ox::tensor({0.f}).item<bool>(), false);
  EXPECT_EQ(ox::zeros({1, 1, 1}).item<float>(), 0.f);
  EXPECT_EQ(ox::arange(10).select(0, 7).item<int64_t>(), 7);  // through a view
  EXPECT_EQ(ox::arange(10).flip({0}).narrow(0, 2, 1).item<int64_t>(), 7);
  EXPECT_EQ(kind_of([] { ox::zeros({2}).item<float>(); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::zeros({2, 3}).item<float>(); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::zeros({1, 0}).item<float>(); }), ErrorKind::Value);
}

TEST(TensorMeta, DataPtrChecksDTypeAndContiguity) {
  ox::Tensor t =
      ox::arange(0, 12, 1, {.dtype = ox::kF32, .device = ox::Device::cpu()}).reshape({3, 4});
  float* p = t.data_ptr<float>();
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(p[i], float(i));
  p[5] = -1.f;  // writes show through the tensor
  EXPECT_EQ(t.select(0, 1).select(0, 1).item<float>(), -1.f);
  // A contiguous view with an offset starts at its first element.
  EXPECT_EQ(t.narrow(0, 1, 2).data_ptr<float>(), p + 4);
  EXPECT_EQ(t.select(0, 2).data_ptr<float>(), p + 8);
  EXPECT_EQ(t.raw_data_ptr(ox::kF32), static_cast<void*>(p));

  EXPECT_EQ(kind_of([&] { t.data_ptr<double>(); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { t.data_ptr<int32_t>(); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { t.t().data_ptr<float>(); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { t.narrow(1, 0, 2).data_ptr<float>(); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { t.flip({0}).data_ptr<float>(); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { t.select(0, 0).expand({2, 4}).data_ptr<float>(); }), ErrorKind::Value);
  // The dtype is checked before the layout.
  EXPECT_EQ(kind_of([&] { t.t().data_ptr<int64_t>(); }), ErrorKind::DType);
  const ox::Device cpu = ox::Device::cpu();
  EXPECT_NE(ox::zeros({2}, {.dtype = ox::kBool, .device = cpu}).data_ptr<bool>(), nullptr);
  EXPECT_NE(ox::zeros({2}, {.dtype = ox::kF16, .device = cpu}).data_ptr<ox::Half>(), nullptr);
}

// ---- from_blob ----------------------------------------------------------------------------

TEST(FromBlob, WrapsCallerMemory) {
  std::vector<float> data{0, 1, 2, 3, 4, 5};
  const ox::Tensor t = ox::from_blob(data.data(), {2, 3}, ox::kF32);
  EXPECT_EQ(shape_of(t), (Idx{2, 3}));
  EXPECT_EQ(t.to_vector<float>(), data);
  EXPECT_EQ(t.data_ptr<float>(), data.data());
  data[4] = 40;  // no copy: the tensor sees the change
  EXPECT_EQ(t.select(0, 1).select(0, 1).item<float>(), 40.f);
  t.select(0, 0).fill_(-1);  // and writes reach the memory
  EXPECT_EQ(data, (std::vector<float>{-1, -1, -1, 3, 40, 5}));
  // Views of it work like any other.
  EXPECT_EQ(t.t().contiguous().to_vector<float>(), (std::vector<float>{-1, 3, -1, 40, -1, 5}));
}

TEST(FromBlob, CustomStrides) {
  std::vector<int32_t> data{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  // Column-major 2 x 3: element [r][c] at 2c + r.
  const ox::Tensor t = ox::from_blob(data.data(), {2, 3}, ox::kI32, {}, ox::Strides{1, 2});
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 4, 1, 3, 5}));
  EXPECT_FALSE(t.is_contiguous());
  // Every third element, with a broadcast dim.
  const ox::Tensor s = ox::from_blob(data.data(), {2, 4}, ox::kI32, {}, ox::Strides{0, 3});
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 6, 9, 0, 3, 6, 9}));
  EXPECT_EQ(s.storage()->nbytes(), 10 * sizeof(int32_t));  // reaches element 9
  EXPECT_EQ(kind_of([&] { ox::from_blob(data.data(), {2}, ox::kI32, {}, ox::Strides{-1}); }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              ox::from_blob(data.data(), {2, 2}, ox::kI32, {}, ox::Strides{1});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::from_blob(data.data(), {3}, ox::kI32, {}, ox::Strides{INT64_MAX / 2 + 1});
            }),
            ErrorKind::Shape);
  // Strides whose reach overflows int64 (4 * 2^62 = 2^64 wraps to 0) are refused, not taken
  // for a one-element blob.
  EXPECT_EQ(kind_of([&] {
              ox::from_blob(data.data(), {5}, ox::kI32, {}, ox::Strides{int64_t{1} << 62});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::from_blob(data.data(), {3, 5}, ox::kI32, {},
                            ox::Strides{int64_t{1} << 62, int64_t{1} << 62});
            }),
            ErrorKind::Shape);
  // as_strided over a blob cannot reach past what the blob holds.
  EXPECT_EQ(kind_of([&] { t.as_strided({7}, {1}, 0); }), ErrorKind::Index);
  EXPECT_EQ(t.as_strided({6}, {1}, 0).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(FromBlob, DeleterRunsWhenTheLastUserGoes) {
  int calls = 0;
  void* seen = nullptr;
  std::vector<double> data{1, 2, 3, 4};
  {
    ox::Tensor view;
    {
      const ox::Tensor t = ox::from_blob(data.data(), {4}, ox::kF64, [&](void* p) {
        ++calls;
        seen = p;
      });
      view = t.narrow(0, 1, 2);
    }
    EXPECT_EQ(calls, 0);  // the view still uses the memory
    EXPECT_EQ(view.to_vector<double>(), (std::vector<double>{2, 3}));
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, data.data());
  // No deleter: nothing is called, nothing is freed.
  { const ox::Tensor t = ox::from_blob(data.data(), {4}, ox::kF64); }
  EXPECT_EQ(data, (std::vector<double>{1, 2, 3, 4}));
}

TEST(FromBlob, NullAndEmpty) {
  EXPECT_EQ(kind_of([] { ox::from_blob(nullptr, {2}, ox::kF32); }), ErrorKind::Value);
  const ox::Tensor e = ox::from_blob(nullptr, {0, 3}, ox::kF32);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
}

}  // namespace
