#pragma once
// The models of bench/models.h as LibTorch modules, for the LibTorch-side sources only (no oxmera
// header may meet LibTorch's in one translation unit).

#include <torch/torch.h>

namespace oxbench {

// cnn_step's model: Conv2d(1,32,3)-ReLU-MaxPool2-Conv2d(32,64,3)-ReLU-MaxPool2-Flatten-
// Linear(1600,128)-ReLU-Linear(128,10).
torch::nn::Sequential libtorch_cnn_model();

}  // namespace oxbench
