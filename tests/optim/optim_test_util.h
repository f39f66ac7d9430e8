#pragma once
// Helpers for the optimizer tests: gradients fed by hand, and plain f64 reference state.

#include <gtest/gtest.h>
#include <oxmera/optim.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"

namespace oxtest {

inline const std::vector<double> kStart = {0.5, -1.2, 2.0, 0.0, -0.3};

// The gradient fed at step k (from 1): independent of the parameter, varied in sign and size.
inline std::vector<double> grad_at(int k, size_t n) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i)
    g[i] = 0.5 * std::sin(1.3 * double(i) + double(k)) + 0.2 * std::cos(double(i * k));
  return g;
}

inline ox::Tensor leaf(const std::vector<double>& values, ox::DType dtype = ox::kF64) {
  ox::Tensor p = ox::tensor(values, {.dtype = dtype});
  p.requires_grad_();
  return p;
}

inline void set_grad(const ox::Tensor& p, const std::vector<double>& g) {
  const_cast<ox::Tensor&>(p).mutable_grad() = ox::tensor(g, {.dtype = p.dtype()});
}

// Per-element state of a reference implementation.
using RefState = std::map<std::string, std::vector<double>>;
inline std::vector<double>& ref_buffer(RefState& s, const std::string& name, size_t n,
                                       double init = 0) {
  auto it = s.find(name);
  if (it == s.end()) it = s.emplace(name, std::vector<double>(n, init)).first;
  return it->second;
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                         double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " element " << i;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace oxtest
