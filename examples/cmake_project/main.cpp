// A program outside the oxmera tree, built against an installed oxmera (see CMakeLists.txt):
// one training step of a linear layer, to show the whole stack links (ops, autograd, nn, optim).
// Exits 1 if the step did not lower the loss.

#include <oxmera/oxmera.h>

#include <cstdio>

int main() {
  ox::manual_seed(0);
  const ox::Tensor x = ox::randn({16, 3});
  const ox::Tensor y = ox::matmul(x, ox::tensor({{1.0f}, {-2.0f}, {0.5f}}));  // a linear target

  ox::nn::Linear model(3, 1);
  ox::optim::SGD optimizer(model->parameters(), {.lr = 0.1});
  const auto loss_now = [&] { return ox::nn::functional::mse_loss(model(x), y); };

  const double before = loss_now().item<double>();
  optimizer.zero_grad();
  loss_now().backward();
  optimizer.step();
  const double after = loss_now().item<double>();

  std::printf("oxmera %s: loss %.4f -> %.4f after one SGD step\n", OXMERA_VERSION, before, after);
  return after < before ? 0 : 1;
}
