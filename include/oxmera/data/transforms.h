#pragma once
// Example transforms (the data tensor only; the target passes through), for MapDataset. Each
// is a callable `Example(Example, Generator&)`, so it converts to ox::data::Transform.

#include <cstdint>
#include <vector>

#include "oxmera/data/dataset.h"

namespace ox::data {

// (x - mean[c]) / std[c] for each channel c of a floating [C, ...] data tensor; mean and std
// have C entries (or one, for all channels). std must be nonzero (Value).
struct Normalize {
  std::vector<double> mean, std;
  Example operator()(Example example, Generator& gen) const;
};

// Pads the last two dims of [..., H, W] data with `padding` zeros on every side, then cuts a
// random size[0] x size[1] window (Value when it does not fit).
struct RandomCrop {
  std::vector<int64_t> size;  // {height, width}, or {side}
  int64_t padding = 0;
  Example operator()(Example example, Generator& gen) const;
};

// Mirrors the last dim with probability p (one draw from the generator per example).
struct RandomHorizontalFlip {
  double p = 0.5;
  Example operator()(Example example, Generator& gen) const;
};

// The transforms in order, sharing the generator.
Transform compose(std::vector<Transform> transforms);

}  // namespace ox::data
