#pragma once
// The elementwise part of one LSTM or GRU step, after the matrix products: a fused CPU kernel
// with its own backward (a custom autograd Function) for every floating dtype on the CPU (16-bit
// ones computed in f32, each output rounded once), and the same arithmetic composed of public
// ops everywhere else.

#include <utility>

#include "oxmera/tensor.h"

namespace ox::nn::detail {

// gates [N, 4H] = x W_ihᵀ + h W_hhᵀ + b_ih + b_hh (order i, f, g, o), c [N, H] → (h', c'):
// c' = σ(f)*c + σ(i)*tanh(g), h' = σ(o)*tanh(c').
std::pair<Tensor, Tensor> lstm_pointwise(const Tensor& gates, const Tensor& c);

// gx = x W_ihᵀ + b_ih, gh = h W_hhᵀ + b_hh, each [N, 3H] (order r, z, n), h [N, H] → h':
// r = σ(gx_r + gh_r), z = σ(gx_z + gh_z), n = tanh(gx_n + r*gh_n), h' = n + z*(h - n).
Tensor gru_pointwise(const Tensor& gx, const Tensor& gh, const Tensor& h);

}  // namespace ox::nn::detail
