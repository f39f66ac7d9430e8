// A tour of oxmera's tensor core: creation, dtypes, views that share memory, seeded random
// numbers, and typed errors. Then a Monte Carlo estimate of pi from a million Philox draws.

#include <oxmera/oxmera.h>

#include <iostream>

int main() {
  ox::manual_seed(0);
  ox::Tensor x = ox::arange(12).reshape({3, 4});
  std::cout << "x = " << x << "\n";
  std::cout << "x.t() shares x's memory: " << x.t().is_same_storage(x) << ", strides "
            << x.t().strides() << "\n";
  std::cout << "x.flip({1}) = " << x.flip({1}) << "\n";
  std::cout << "diagonal of x = " << x.diagonal() << "\n";

  ox::Tensor h = ox::linspace(0, 1, 5, {.dtype = ox::kF16});
  std::cout << "linspace in f16 = " << h << ", as f64: " << h.to(ox::kF64) << "\n";

  // pi ~ 4 * P(u^2 + v^2 <= 1) for u, v uniform in [0, 1).
  const int64_t n = 1 << 20;
  const auto u = ox::rand({n}, {.dtype = ox::kF64}).to_vector<double>();
  const auto v = ox::rand({n}, {.dtype = ox::kF64}).to_vector<double>();
  int64_t inside = 0;
  for (int64_t i = 0; i < n; ++i) inside += u[i] * u[i] + v[i] * v[i] <= 1.0;
  std::cout << "pi ~ " << 4.0 * double(inside) / double(n) << " from " << n << " samples\n";

  try {
    ox::zeros({2, 2, 1, int64_t{1} << 61});
  } catch (const ox::Error& e) {
    std::cout << "refused (" << ox::error_kind_name(e.kind()) << "): " << e.what() << "\n";
  }
  return 0;
}
