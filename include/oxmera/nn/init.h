#pragma once
// ox::nn::init: in-place initializers with torch.nn.init's distributions, bounds and fan rules.
// Each runs without recording gradients and takes an optional Generator (the default one
// otherwise), and returns its tensor.

#include <string_view>

#include "oxmera/tensor.h"

namespace ox::nn::init {

// While one lives on this thread, the initializers below check their argument and leave it as
// it is (its memory uninitialized when fresh): modules built only to be overwritten, as by
// loading weights (transformers' no_init_weights, torch.nn.utils.skip_init), cost no random
// numbers and no temporaries.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
};

// fan_in = size(1) × receptive field, fan_out = size(0) × receptive field (dims >= 2).
struct Fans {
  int64_t fan_in, fan_out;
};
Fans calculate_fans(const Tensor& tensor);
// The recommended gain of a nonlinearity: linear/conv*/sigmoid 1, tanh 5/3, relu √2,
// leaky_relu √(2 / (1 + slope²)) (param: the slope, default 0.01), selu 3/4.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

Tensor uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor constant_(const Tensor& tensor, double value);
Tensor zeros_(const Tensor& tensor);
Tensor ones_(const Tensor& tensor);
Tensor eye_(const Tensor& tensor);  // 2-d only
// U(-b, b), b = gain × √(6 / (fan_in + fan_out)); N(0, gain × √(2 / (fan_in + fan_out))).
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
// std = gain / √fan (mode "fan_in" or "fan_out"), gain = calculate_gain(nonlinearity, a);
// uniform bound √3 × std.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                       std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);
// N(mean, std²) restricted to [a, b] (inverse-CDF sampling, as PyTorch).
Tensor trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0,
                     double b = 2.0, Generator* gen = nullptr);
// A (semi-)orthogonal matrix over the tensor flattened to [size(0), rest], scaled by gain: the
// Q of a QR factorization of a standard normal matrix, signs fixed by R's diagonal.
Tensor orthogonal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ox::nn::init
