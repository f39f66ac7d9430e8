// Links against oxmera from outside the project and checks one real computation.
#include <oxmera/oxmera.h>

#include <iostream>

int main() {
  ox::Tensor x = ox::arange(6).reshape({2, 3}).t().contiguous();
  const std::vector<int64_t> got = x.to_vector<int64_t>();
  const std::vector<int64_t> want = {0, 3, 1, 4, 2, 5};
  if (got != want) {
    std::cerr << "unexpected values: " << x << "\n";
    return 1;
  }
  std::cout << "oxmera " << OXMERA_VERSION << " consumer ok: " << x << "\n";
  return 0;
}
