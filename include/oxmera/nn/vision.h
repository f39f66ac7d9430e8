#pragma once
// Upsample, PixelShuffle and PixelUnshuffle: the modules of functional::interpolate,
// pixel_shuffle and pixel_unshuffle.

#include "oxmera/nn/functional.h"
#include "oxmera/nn/module.h"

namespace ox::nn {

class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(functional::InterpolateOptions options = {});
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  functional::InterpolateOptions options;
};
OX_MODULE_WITH_SIGNATURE(Upsample, (functional::InterpolateOptions options), (std::move(options)));

class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  int64_t upscale_factor;
};
OX_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  int64_t downscale_factor;
};
OX_MODULE(PixelUnshuffle);

}  // namespace ox::nn
