#include "oxmera/nn/init.h"

#include <cmath>
#include <numbers>

#include "oxmera/autograd.h"
#include "oxmera/ops.h"

namespace ox::nn::init {

namespace {

Tensor checked(const Tensor& tensor, const char* op) {
  OX_CHECK(tensor.defined(), Value, op, "the tensor is undefined");
  OX_CHECK(is_floating(tensor.dtype()), DType, op, "initializers fill floating tensors, got ",
           tensor.dtype());
  return tensor;
}

thread_local int skip_depth = 0;  // SkipInitGuards alive on this thread

TensorOptions options_of(const Tensor& t) { return {.dtype = t.dtype(), .device = t.device()}; }

// Writes values into tensor without recording (parameters are leaves that require grad).
Tensor assign(const Tensor& tensor, const Tensor& values) {
  NoGradGuard no_grad;
  Tensor(tensor).copy_(values);
  return tensor;
}

double fan_for(const Tensor& tensor, std::string_view mode, const char* op) {
  const Fans fans = calculate_fans(tensor);
  OX_CHECK(mode == "fan_in" || mode == "fan_out", Value, op,
           "mode must be fan_in or fan_out, got '", mode, "'");
  return static_cast<double>(mode == "fan_in" ? fans.fan_in : fans.fan_out);
}

// erfinv by Newton's method from Winitzki's approximation; y in (-1, 1), f64.
Tensor erfinv(const Tensor& y) {
  constexpr double a = 0.147;
  const Tensor ln = log1p(-y * y);
  const Tensor t = 2.0 / (std::numbers::pi * a) + ln * 0.5;
  Tensor x = sign(y) * sqrt(sqrt(t * t - ln * (1.0 / a)) - t);
  const double slope = 2.0 / std::sqrt(std::numbers::pi);
  for (int i = 0; i < 3; ++i) x = x - (erf(x) - y) / (exp(-x * x) * slope);
  return x;
}

}  // namespace

Fans calculate_fans(const Tensor& tensor) {
  OX_CHECK(tensor.defined() && tensor.dim() >= 2, Shape, "calculate_fans",
           "fan in and fan out need a tensor of 2 or more dims, got ",
           tensor.defined() ? tensor.shape() : Shape{});
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity == "identity" ||
      nonlinearity.starts_with("conv"))
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  OX_FAIL(Value, "calculate_gain", "unknown nonlinearity '", nonlinearity, "'");
}

Tensor uniform_(const Tensor& tensor, double a, double b, Generator* gen) {
  checked(tensor, "uniform_");
  OX_CHECK(a <= b, Value, "uniform_", "the range [", a, ", ", b, ") is empty");
  if (skip_depth > 0) return tensor;
  // In place on one temporary (rand * (b - a) + a, the same values without two more copies).
  Tensor values = rand(tensor.shape(), options_of(tensor), gen);
  values.mul_(b - a).add_(a);
  return assign(tensor, values);
}

Tensor normal_(const Tensor& tensor, double mean, double std, Generator* gen) {
  checked(tensor, "normal_");
  OX_CHECK(std >= 0, Value, "normal_", "std must be >= 0, got ", std);
  if (skip_depth > 0) return tensor;
  Tensor values = randn(tensor.shape(), options_of(tensor), gen);
  values.mul_(std).add_(mean);
  return assign(tensor, values);
}

Tensor constant_(const Tensor& tensor, double value) {
  checked(tensor, "constant_");
  if (skip_depth > 0) return tensor;
  NoGradGuard no_grad;
  Tensor(tensor).fill_(value);
  return tensor;
}
Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor eye_(const Tensor& tensor) {
  checked(tensor, "eye_");
  OX_CHECK(tensor.dim() == 2, Shape, "eye_", "needs a 2-d tensor, got ", tensor.shape());
  if (skip_depth > 0) return tensor;
  return assign(tensor, eye(tensor.size(0), tensor.size(1), options_of(tensor)));
}

Tensor xavier_uniform_(const Tensor& tensor, double gain, Generator* gen) {
  const Fans fans = calculate_fans(checked(tensor, "xavier_uniform_"));
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound, gen);
}

Tensor xavier_normal_(const Tensor& tensor, double gain, Generator* gen) {
  const Fans fans = calculate_fans(checked(tensor, "xavier_normal_"));
  return normal_(tensor, 0.0,
                 gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out)), gen);
}

Tensor kaiming_uniform_(const Tensor& tensor, double a, std::string_view mode,
                        std::string_view nonlinearity, Generator* gen) {
  const double fan = fan_for(checked(tensor, "kaiming_uniform_"), mode, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(fan);
  return uniform_(tensor, -bound, bound, gen);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, std::string_view mode,
                       std::string_view nonlinearity, Generator* gen) {
  const double fan = fan_for(checked(tensor, "kaiming_normal_"), mode, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan), gen);
}

Tensor trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b,
                     Generator* gen) {
  checked(tensor, "trunc_normal_");
  OX_CHECK(std > 0 && a < b, Value, "trunc_normal_", "needs std > 0 and a < b, got std ", std,
           ", [", a, ", ", b, "]");
  if (skip_depth > 0) return tensor;
  const auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  const double lo = 2 * cdf((a - mean) / std) - 1, hi = 2 * cdf((b - mean) / std) - 1;
  // Inverse-CDF sampling in f64: uniform in [cdf(a), cdf(b)), mapped through erfinv.
  const Tensor u =
      rand(tensor.shape(), {.dtype = kF64, .device = tensor.device()}, gen) * (hi - lo) + lo;
  const Tensor y = clamp(u, -1.0 + 1e-15, 1.0 - 1e-15);
  return assign(tensor, clamp(erfinv(y) * (std * std::sqrt(2.0)) + mean, a, b));
}

Tensor orthogonal_(const Tensor& tensor, double gain, Generator* gen) {
  checked(tensor, "orthogonal_");
  OX_CHECK(tensor.dim() >= 2, Shape, "orthogonal_", "needs 2 or more dims, got ", tensor.shape());
  if (skip_depth > 0 || tensor.numel() == 0) return tensor;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;  // m >= n
  Tensor normal = randn({rows, cols}, {.dtype = kF64, .device = Device::cpu()}, gen);
  if (wide) normal = normal.t();
  std::vector<double> a = normal.contiguous().to_vector<double>();  // [m, n], row-major
  // Modified Gram-Schmidt, twice for orthogonality to rounding: the Q of the QR factorization
  // whose R has a positive diagonal, which is what PyTorch's sign fix of R's diagonal gives.
  const auto column_dot = [&](int64_t i, int64_t j) {
    double s = 0;
    for (int64_t r = 0; r < m; ++r) s += a[r * n + i] * a[r * n + j];
    return s;
  };
  for (int64_t j = 0; j < n; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t i = 0; i < j; ++i) {
        const double d = column_dot(i, j);
        for (int64_t r = 0; r < m; ++r) a[r * n + j] -= d * a[r * n + i];
      }
    const double norm = std::sqrt(column_dot(j, j));
    for (int64_t r = 0; r < m; ++r) a[r * n + j] /= norm;
  }
  Tensor q = ox::tensor(a, {m, n}, {.device = Device::cpu()}) * gain;
  if (wide) q = q.t();
  return assign(tensor, q.reshape(tensor.shape()).to(tensor.device()));
}

SkipInitGuard::SkipInitGuard() { ++skip_depth; }
SkipInitGuard::~SkipInitGuard() { --skip_depth; }

}  // namespace ox::nn::init
