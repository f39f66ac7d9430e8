// The example in README.md, kept compiling and running (tests/CMakeLists.txt runs it).
#include <oxmera/oxmera.h>
#include <iostream>

int main() {
  ox::manual_seed(0);
  ox::Tensor x = ox::randn({4, 3});                  // f32 on the CPU
  ox::Tensor idx = ox::randint(0, 10, {4});          // i64
  ox::Tensor w = ox::arange(12).reshape({3, 4});     // a view: no copy
  std::cout << w.t() << "\n";                        // transposed view, strides [1, 4]
  std::cout << w.flip({1}).narrow(0, 1, 2) << "\n";  // negative strides and an offset
  ox::Tensor h = x.to(ox::kBF16);                    // round to nearest even
  std::cout << h << " " << idx << "\n";
  try {
    ox::zeros({2, 3}).view({4, 2});
  } catch (const ox::Error& e) {    // ox::ErrorKind::Shape
    std::cout << e.what() << "\n";  // [view] shape [4, 2] is invalid ...
  }
}
