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

// Runs `f` and returns the ox::Error it throws; fails the test when it throws nothing.
template <class F>
ox::Error caught(F&& f) {
  try {
    f();
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

// Whether the message of `e` contains `text`.
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

}  // namespace oxtest
