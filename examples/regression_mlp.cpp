// Fits a small MLP to y = sin(x) + noise: the smallest complete training loop (full-batch, no
// DataLoader), and a check that it learned the function rather than the noise.
//
//   regression_mlp [STEPS]
//
// Exits 1 if the mean squared error against the noise-free sin(x) on held-out points is above
// the threshold below.

#include <oxmera/oxmera.h>

#include <cstdio>
#include <string>

namespace nn = ox::nn;
namespace F = ox::nn::functional;

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::stoll(argv[1]) : 500;
  // The noise has variance 0.01, so a model that fits sin(x) well sits far below that on
  // clean targets; one that memorized the noise would not.
  const double threshold = 5e-3;
  ox::manual_seed(0);

  // 256 training points in [-pi, pi], as a column [256, 1]: Linear wants [batch, features].
  const ox::Tensor x = ox::linspace(-3.14159, 3.14159, 256).unsqueeze(1);
  const ox::Tensor y = ox::sin(x) + 0.1 * ox::randn({256, 1});

  // Tanh rather than ReLU: a smooth target is fitted with fewer units by a smooth basis.
  nn::Sequential model(nn::Linear(1, 64), nn::Tanh(), nn::Linear(64, 64), nn::Tanh(),
                       nn::Linear(64, 1));
  ox::optim::Adam optimizer(model->parameters(), {.lr = 1e-2});

  for (int64_t step = 1; step <= steps; ++step) {
    optimizer.zero_grad();  // gradients accumulate across backward() calls, as in PyTorch
    const ox::Tensor loss = F::mse_loss(model(x), y);
    loss.backward();
    optimizer.step();
    if (step == 1 || step % (steps / 10 > 0 ? steps / 10 : 1) == 0)
      std::printf("step %5lld  train mse %.5f\n", (long long)step, loss.item<double>());
  }

  // Evaluate between the training points, against the true function.
  ox::NoGradGuard no_grad;
  model->eval();
  const ox::Tensor x_test = ox::linspace(-3.0, 3.0, 101).unsqueeze(1);
  const double test_mse = F::mse_loss(model(x_test), ox::sin(x_test)).item<double>();
  std::printf("test mse vs sin(x): %.5f (threshold %.5f)\n", test_mse, threshold);
  if (!(test_mse <= threshold)) {  // also fails on NaN
    std::printf("FAILED: the fit is worse than the threshold\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
