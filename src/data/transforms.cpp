#include "oxmera/data/transforms.h"

#include <utility>

#include "oxmera/ops.h"

namespace ox::data {

Example Normalize::operator()(Example example, Generator& /*gen*/) const {
  const Tensor& x = example.data;
  OX_CHECK(is_floating(x.dtype()), DType, "Normalize", "needs floating data, got ", x.dtype());
  OX_CHECK(x.dim() >= 1, Shape, "Normalize", "needs [C, ...] data, got ", x.shape());
  const int64_t channels = x.size(0);
  OX_CHECK(mean.size() == std.size() && (int64_t(mean.size()) == channels || mean.size() == 1),
           Value, "Normalize", "mean (", mean.size(), ") and std (", std.size(),
           " entries) must both have 1 or ", channels, " entries for data ", x.shape());
  for (double s : std) OX_CHECK(s != 0, Value, "Normalize", "std of 0");
  Shape per_channel(size_t(x.dim()), 1);
  per_channel[0] = int64_t(mean.size());
  const Tensor m = tensor(mean, per_channel, {.dtype = x.dtype(), .device = x.device()});
  const Tensor s = tensor(std, per_channel, {.dtype = x.dtype(), .device = x.device()});
  example.data = div(sub(x, m), s);
  return example;
}

Example RandomCrop::operator()(Example example, Generator& gen) const {
  const Tensor& x = example.data;
  OX_CHECK(size.size() == 1 || size.size() == 2, Value, "RandomCrop",
           "size must be {side} or {height, width}, got ", size.size(), " entries");
  OX_CHECK(padding >= 0, Value, "RandomCrop", "negative padding ", padding);
  OX_CHECK(x.dim() >= 2, Shape, "RandomCrop", "needs [..., H, W] data, got ", x.shape());
  const int64_t h = size[0], w = size.size() == 2 ? size[1] : size[0];
  const Tensor padded = padding ? pad(x, {padding, padding, padding, padding}) : x;
  const int64_t ph = padded.size(-2), pw = padded.size(-1);
  OX_CHECK(h >= 1 && w >= 1 && h <= ph && w <= pw, Value, "RandomCrop", "crop ", h, "x", w,
           " does not fit padded data ", padded.shape());
  const auto offsets = randint(0, (ph - h + 1) * (pw - w + 1), {1}, {.dtype = kI64}, &gen);
  const int64_t k = offsets.item<int64_t>();
  const int64_t top = k / (pw - w + 1), left = k % (pw - w + 1);
  example.data = padded.narrow(-2, top, h).narrow(-1, left, w).contiguous();
  return example;
}

Example RandomHorizontalFlip::operator()(Example example, Generator& gen) const {
  OX_CHECK(p >= 0 && p <= 1, Value, "RandomHorizontalFlip", "p must be in [0, 1], got ", p);
  OX_CHECK(example.data.dim() >= 1, Shape, "RandomHorizontalFlip", "needs data with a dim, got ",
           example.data.shape());
  const double u = rand({1}, {.dtype = kF64}, &gen).item<double>();
  if (u < p) example.data = example.data.flip({-1}).contiguous();
  return example;
}

Transform compose(std::vector<Transform> transforms) {
  for (const auto& t : transforms) OX_CHECK(bool(t), Value, "compose", "empty transform");
  return [transforms = std::move(transforms)](Example example, Generator& gen) {
    for (const auto& t : transforms) example = t(std::move(example), gen);
    return example;
  };
}

}  // namespace ox::data
