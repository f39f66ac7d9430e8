#pragma once
// Helpers shared by the tests (core, tensor, backend): catching typed errors and walking
// row-major indices. Nothing here calls the code under test to compute an expected value.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace oxtest {

// Runs `f` and returns the ox::Error it throws; fails the test when it throws nothing. An error
// a device kernel found is raised at the next synchronization, which this includes.
template <class F>
ox::Error caught(F&& f) {
  try {
    f();
    ox::synchronize();
  } catch (const ox::Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ox::Error";
  return ox::Error(ox::ErrorKind::Internal, "none");
}

// The kind of the ox::Error `f` throws (Internal, with a test failure, when none is thrown).
template <class F>
ox::ErrorKind kind_of(F&& f) {
  return caught(std::forward<F>(f)).kind();
}

// Whether the suite runs with tensors made on another device by default (OXMERA_TEST_DEVICE,
// tests/test_device.cpp). Tests of host memory or of the CPU-only state skip there.
inline bool on_test_device() { return !ox::default_device().is_cpu(); }
#define OXTEST_SKIP_ON_TEST_DEVICE(why) \
  if (oxtest::on_test_device()) GTEST_SKIP() << (why)

// Whether the message of `e` contains `text`.
// Runs the SIMD kernels at one target for a scope, then back at the best (whatever the scope
// set meanwhile).
struct AtSimdTarget {
  explicit AtSimdTarget(const std::string& name) { ox::set_simd_target(name); }
  ~AtSimdTarget() { ox::set_simd_target(""); }
  AtSimdTarget(const AtSimdTarget&) = delete;
  AtSimdTarget& operator=(const AtSimdTarget&) = delete;
};

inline bool contains(const ox::Error& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

// Calls fn(index) for every multi-index of `shape` in row-major order (once for a 0-d shape,
// never for a shape with a zero in it).
inline void for_each_index(const std::vector<int64_t>& shape,
                           const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t s : shape)
    if (s == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    fn(index);
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++index[d] < shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

inline int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// 0, 1, ..., n-1 as doubles.
inline std::vector<double> iota_values(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return v;
}

inline std::vector<int64_t> shape_of(const ox::Tensor& t) { return t.shape().vec(); }
inline std::vector<int64_t> strides_of(const ox::Tensor& t) { return t.strides().vec(); }

// ---- Inputs for op tests: fixed values, row-major ------------------------------------------

using ShapeV = std::vector<int64_t>;
// docs/TESTING.md's shapes; (1029, 917) crosses the parallel grain, so two threads split it.
inline const std::vector<ShapeV> kShapes = {{}, {1}, {0}, {1, 0, 3}, {23}, {812}, {1029, 917}};

inline std::string shape_str(const ShapeV& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform in [lo, hi), a fixed function of (i, salt).
inline double uniform_at(int64_t i, uint64_t salt, double lo, double hi) {
  const double u =
      static_cast<double>(mix(static_cast<uint64_t>(i) * 2654435761u ^ salt) >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}
// An integer in [lo, hi], a fixed function of (i, salt).
inline int64_t integer_at(int64_t i, uint64_t salt, int64_t lo, int64_t hi) {
  const auto span = static_cast<uint64_t>(hi - lo) + 1;
  const uint64_t r = mix(static_cast<uint64_t>(i) * 2654435761u ^ salt);
  return lo + static_cast<int64_t>(span ? r % span : r);
}

// Value of source element i; inputs take values in this order before they are laid out.
using Source = std::function<double(int64_t)>;

inline ox::Tensor contiguous_from(const ShapeV& shape, ox::DType dt, const Source& src) {
  const int64_t n = product(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = src(i);
  return ox::tensor(v, ox::Shape(shape), {.dtype = dt});
}

// Logical values in row-major order.
inline std::vector<double> values_of(const ox::Tensor& t) { return t.to_vector<double>(); }

// The raw bytes of the elements in row-major order, for bitwise comparisons.
inline std::vector<uint8_t> bytes_of(const ox::Tensor& t) {
  if (t.numel() == 0) return {};
  const ox::Tensor c = t.cpu().contiguous();  // from any device
  const auto* p = static_cast<const uint8_t*>(c.raw_data_ptr(c.dtype()));
  return std::vector<uint8_t>(p, p + c.nbytes());
}

}  // namespace oxtest
