// Every layer of include/oxmera/nn/*.h in bf16 and f16 against f32 on the same rounded values:
// forward outputs (and BatchNorm's running statistics), gradients of inputs and parameters.
// The harness and the tolerances are in low_precision.h.

#include <oxmera/nn/attention.h>
#include <oxmera/nn/containers.h>
#include <oxmera/nn/rnn.h>
#include <oxmera/nn/transformer.h>

#include "low_precision.h"

namespace {

using namespace ox;
using lowp::Case;
using lowp::Run;
using lowp::Tol;

// Composites round between their ops (as PyTorch's do): a tolerance for each, with its reason.
constexpr Tol kAttention{
    .bf16 = 3e-2,
    .f16 = 3e-3,
    .why = "projections, scores, softmax and the weighted sum each round once"};
constexpr Tol kTransformer{.bf16 = 5e-2,
                           .f16 = 5e-3,
                           .why =
                               "attention, two layer norms and a feed-forward block, rounded "
                               "between them, and the errors pass through the norms"};
constexpr Tol kRecurrent{.bf16 = 5e-2,
                         .f16 = 5e-3,
                         .why =
                             "the state is rounded to 16 bits at every step and feeds the next "
                             "step's products (6 steps, errors add up along the sequence)"};
constexpr Tol kTwoOps{.bf16 = 2.5e-2,
                      .f16 = 2e-3,
                      .why = "two rounded ops in a row (a product, then a bias or an activation)"};
constexpr Tol kGateCell{.bf16 = 4e-2,
                        .f16 = 4e-3,
                        .why =
                            "off the CPU (the parity run on a device) the gates are composed "
                            "of public ops, each rounding, as PyTorch's composite"};

std::vector<Case> layer_cases() {
  std::vector<Case> cases;
  const auto add = [&](std::string name, std::function<std::vector<Tensor>(Run&)> body,
                       Tol tol = lowp::kOp) {
    cases.push_back({std::move(name), std::move(body), tol});
  };

  // ---- linear.h ----
  add("Linear", [](Run& r) {
    auto m = r.module(nn::Linear(16, 5));
    return std::vector{m(r.input({3, 2, 16}))};
  });
  add("LinearNoBias", [](Run& r) {
    auto m = r.module(nn::Linear(16, 5, {.bias = false}));
    return std::vector{m(r.input({4, 16}))};
  });
  add(
      "Bilinear",
      [](Run& r) {
        auto m = r.module(nn::Bilinear(4, 3, 5));
        return std::vector{m(r.input({6, 4}), r.input({6, 3}))};
      },
      kTwoOps);
  add("Identity", [](Run& r) {
    nn::Identity m;
    return std::vector{m(r.input({3, 4}))};
  });
  add("Flatten", [](Run& r) {
    nn::Flatten m;
    return std::vector{m(r.input({2, 3, 4}))};
  });
  add("Unflatten", [](Run& r) {
    nn::Unflatten m(1, Shape{2, 3});
    return std::vector{m(r.input({4, 6}))};
  });

  // ---- conv.h ----
  add("Conv1d", [](Run& r) {
    auto m = r.module(nn::Conv1d(3, 4, 3, {.padding = 1}));
    return std::vector{m(r.input({2, 3, 9}))};
  });
  add("Conv2d", [](Run& r) {
    auto m = r.module(nn::Conv2d(3, 4, 3, {.stride = 2, .padding = 1}));
    return std::vector{m(r.input({2, 3, 7, 6}))};
  });
  add("Conv2dGroups", [](Run& r) {
    auto m = r.module(nn::Conv2d(4, 6, {3, 2}, {.padding = 1, .dilation = {1, 2}, .groups = 2}));
    return std::vector{m(r.input({2, 4, 6, 6}))};
  });
  add("ConvTranspose2d", [](Run& r) {
    auto m =
        r.module(nn::ConvTranspose2d(4, 3, 3, {.stride = 2, .padding = 1, .output_padding = 1}));
    return std::vector{m(r.input({2, 4, 4, 5}))};
  });

  // ---- pooling.h ----
  add("MaxPool2d", [](Run& r) {
    nn::MaxPool2d m(2);
    return std::vector{m(r.input({2, 3, 6, 7}))};
  });
  add("AvgPool2d", [](Run& r) {
    nn::AvgPool2d m(3, {.stride = 2, .padding = 1});
    return std::vector{m(r.input({2, 3, 7, 6}))};
  });
  add("AdaptiveAvgPool2d", [](Run& r) {
    nn::AdaptiveAvgPool2d m(IntPair{3, 2});
    return std::vector{m(r.input({2, 3, 7, 5}))};
  });

  // ---- normalization.h ----
  add("LayerNorm", [](Run& r) {
    auto m = r.module(nn::LayerNorm(Shape{16}));
    return std::vector{m(r.input({3, 4, 16}, -2, 3))};
  });
  add("LayerNormNoAffine", [](Run& r) {
    auto m = r.module(nn::LayerNorm(Shape{4, 8}, {.elementwise_affine = false}));
    return std::vector{m(r.input({3, 4, 8}, -2, 3))};
  });
  add("RMSNorm", [](Run& r) {
    auto m = r.module(nn::RMSNorm(Shape{16}));
    return std::vector{m(r.input({5, 16}, -2, 3))};
  });
  add("GroupNorm", [](Run& r) {
    auto m = r.module(nn::GroupNorm(2, 6));
    return std::vector{m(r.input({3, 6, 5, 4}, -2, 3))};
  });
  for (const bool training : {true, false}) {
    const std::string mode = training ? "Train" : "Eval";
    add("BatchNorm1d" + mode, [training](Run& r) {
      auto m = r.module(nn::BatchNorm1d(5));
      m->running_mean.copy_(r.value({5}, -0.5, 0.5));
      m->running_var.copy_(r.value({5}, 0.5, 2));
      m->train(training);
      Tensor out = m(r.input({8, 5, 3}, -2, 3));
      return std::vector{out, m->running_mean, m->running_var, m->num_batches_tracked};
    });
    add("BatchNorm2d" + mode, [training](Run& r) {
      auto m = r.module(nn::BatchNorm2d(3));
      m->train(training);
      Tensor out = m(r.input({4, 3, 5, 4}, -2, 3));
      return std::vector{out, m->running_mean, m->running_var, m->num_batches_tracked};
    });
  }
  add("BatchNorm1dCumulative", [](Run& r) {
    auto m = r.module(nn::BatchNorm1d(4, {.momentum = std::nullopt}));
    m(r.value({6, 4}, -1, 2));
    Tensor out = m(r.input({6, 4}, -2, 3));
    return std::vector{out, m->running_mean, m->running_var};
  });

  // ---- dropout.h (the same seed gives the same mask in every dtype) ----
  add("Dropout", [](Run& r) {
    nn::Dropout m(0.3);
    return std::vector{m(r.input({6, 50}))};
  });
  add("Dropout2d", [](Run& r) {
    nn::Dropout2d m(0.5);
    return std::vector{m(r.input({4, 8, 3, 3}))};
  });
  add("DropoutEval", [](Run& r) {
    nn::Dropout m(0.3);
    m->eval();
    return std::vector{m(r.input({6, 5}))};
  });

  // ---- embedding.h ----
  add("Embedding", [](Run& r) {
    auto m = r.module(nn::Embedding(10, 6));
    return std::vector{m(r.classes({4, 5}, 10))};
  });
  add("EmbeddingPaddingIdx", [](Run& r) {
    auto m = r.module(nn::Embedding(10, 6, {.padding_idx = 0}));
    return std::vector{m(r.classes({4, 5}, 3))};
  });
  add("EmbeddingMaxNorm", [](Run& r) {
    auto m = r.module(nn::Embedding(10, 6, {.max_norm = 1.5}));
    Tensor out = m(r.classes({4, 5}, 10));
    return std::vector{out, m->weight.detach().clone()};
  });

  // ---- activation.h ----
  const auto activation = [&](std::string name, std::function<Tensor(const Tensor&)> fn,
                              double lo = -4, double hi = 4, Tol tol = lowp::kOp) {
    add(
        std::move(name),
        [fn, lo, hi](Run& r) {
          return std::vector{fn(r.input({7, 23}, lo, hi))};
        },
        tol);
  };
  activation("ReLU", [](const Tensor& x) { return nn::ReLU()(x); });
  activation("SiLU", [](const Tensor& x) { return nn::SiLU()(x); });
  activation("Mish", [](const Tensor& x) { return nn::Mish()(x); });
  activation(
      "Tanh", [](const Tensor& x) { return nn::Tanh()(x); }, -4, 4, lowp::kReadsOutput);
  activation(
      "Sigmoid", [](const Tensor& x) { return nn::Sigmoid()(x); }, -4, 4, lowp::kReadsOutput);
  activation("LeakyReLU", [](const Tensor& x) { return nn::LeakyReLU(0.2)(x); });
  activation("ELU", [](const Tensor& x) { return nn::ELU(1.5)(x); });
  activation("GELU", [](const Tensor& x) { return nn::GELU()(x); });
  activation("GELUTanh", [](const Tensor& x) { return nn::GELU("tanh")(x); });
  activation("Softplus",
             [](const Tensor& x) { return nn::Softplus({.beta = 2, .threshold = 5})(x); });
  activation(
      "Softmax", [](const Tensor& x) { return nn::Softmax(1)(x); }, -8, 8);
  activation(
      "LogSoftmax", [](const Tensor& x) { return nn::LogSoftmax(0)(x); }, -8, 8);

  // ---- containers.h ----
  add(
      "Sequential",
      [](Run& r) {
        auto m = r.module(nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4)));
        return std::vector{m(r.input({5, 8}))};
      },
      kTwoOps);
  add(
      "ModuleDictAndList",
      [](Run& r) {
        nn::ModuleList list(nn::Linear(6, 6), nn::Linear(6, 3));
        list = r.module(list);
        Tensor x = r.input({4, 6});
        for (const auto& layer : *list)
          x = std::dynamic_pointer_cast<nn::LinearImpl>(layer)->forward(x);
        return std::vector{x};
      },
      kTwoOps);

  // ---- attention.h ----
  add(
      "MultiheadAttention",
      [](Run& r) {
        auto m = r.module(nn::MultiheadAttention(8, 2));
        Tensor q = r.input({5, 3, 8}), k = r.input({4, 3, 8}), v = r.input({4, 3, 8});
        auto [out, weights] = m(q, k, v);
        return std::vector{out, weights};
      },
      kAttention);
  add(
      "MultiheadAttentionMasked",
      [](Run& r) {
        auto m = r.module(nn::MultiheadAttention(8, 2, {.batch_first = true}));
        Tensor x = r.input({3, 5, 8});
        Tensor padding = zeros({3, 5}, {.dtype = kBool});
        padding.narrow(1, 4, 1).fill_(true);
        auto [out, weights] =
            m(x, x, x,
              {.key_padding_mask = padding, .average_attn_weights = false, .is_causal = false});
        return std::vector{out, weights};
      },
      kAttention);
  add(
      "MultiheadAttentionCausal",
      [](Run& r) {
        auto m = r.module(nn::MultiheadAttention(8, 4));
        Tensor x = r.input({6, 2, 8});
        Tensor mask = triu(ones({6, 6}, {.dtype = kBool}), 1);  // true: may not attend
        auto [out, weights] = m(x, x, x, {.need_weights = false, .attn_mask = mask});
        return std::vector{out};
      },
      kAttention);

  // ---- transformer.h ----
  // GELU here: with ReLU a feed-forward unit whose input lies within a rounding of 0 takes the
  // other branch in bf16, and its whole row of linear1's gradient differs (not an accuracy
  // defect; the ReLU layer below is compared on inputs where none does).
  for (const bool norm_first : {false, true}) {
    add(
        norm_first ? "TransformerEncoderLayerPreNorm" : "TransformerEncoderLayer",
        [norm_first](Run& r) {
          auto m = r.module(nn::TransformerEncoderLayer(8, 2,
                                                        {.dim_feedforward = 16,
                                                         .dropout = 0.0,
                                                         .activation = "gelu",
                                                         .norm_first = norm_first}));
          return std::vector{m(r.input({5, 3, 8}))};
        },
        kTransformer);
  }
  add(
      "TransformerEncoderLayerCausal",
      [](Run& r) {
        auto m = r.module(nn::TransformerEncoderLayer(
            8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true}));
        return std::vector{m(r.input({2, 6, 8}), Tensor(), Tensor(), /*is_causal=*/true)};
      },
      kTransformer);

  // ---- rnn.h ----
  add(
      "RNNCell",
      [](Run& r) {
        auto m = r.module(nn::RNNCell(5, 7));
        return std::vector{m(r.input({3, 5}), r.input({3, 7}))};
      },
      kTwoOps);
  add(
      "LSTMCell",
      [](Run& r) {
        auto m = r.module(nn::LSTMCell(5, 7));
        auto [h, c] = m(r.input({3, 5}), std::make_tuple(r.input({3, 7}), r.input({3, 7})));
        return std::vector{h, c};
      },
      kGateCell);
  add(
      "GRUCell",
      [](Run& r) {
        auto m = r.module(nn::GRUCell(5, 7));
        return std::vector{m(r.input({3, 5}), r.input({3, 7}))};
      },
      kGateCell);
  add(
      "RNN",
      [](Run& r) {
        auto m = r.module(nn::RNN(5, 7, {.num_layers = 2, .nonlinearity = "relu"}));
        auto [out, h] = m(r.input({6, 3, 5}));
        return std::vector{out, h};
      },
      kRecurrent);
  add(
      "LSTM",
      [](Run& r) {
        auto m = r.module(nn::LSTM(5, 7, {.num_layers = 2}));
        auto [out, state] = m(r.input({6, 3, 5}));
        return std::vector{out, std::get<0>(state), std::get<1>(state)};
      },
      kRecurrent);
  add(
      "LSTMBidirectionalProj",
      [](Run& r) {
        auto m =
            r.module(nn::LSTM(5, 7, {.batch_first = true, .bidirectional = true, .proj_size = 4}));
        Tensor h0 = r.input({2, 3, 4}), c0 = r.input({2, 3, 7});
        auto [out, state] =
            m(r.input({3, 6, 5}), std::make_tuple(h0, c0), tensor(std::vector<int64_t>{6, 4, 2}));
        return std::vector{out, std::get<0>(state), std::get<1>(state)};
      },
      kRecurrent);
  add(
      "GRU",
      [](Run& r) {
        auto m = r.module(nn::GRU(5, 7, {.num_layers = 2, .bidirectional = true}));
        auto [out, h] = m(r.input({6, 3, 5}), r.input({4, 3, 7}));
        return std::vector{out, h};
      },
      kRecurrent);
  return cases;
}

class LowPrecisionLayer : public testing::TestWithParam<Case> {};

TEST_P(LowPrecisionLayer, BF16MatchesF32) { lowp::check_case(GetParam(), kBF16); }
TEST_P(LowPrecisionLayer, F16MatchesF32) { lowp::check_case(GetParam(), kF16); }

INSTANTIATE_TEST_SUITE_P(Layers, LowPrecisionLayer, testing::ValuesIn(layer_cases()),
                         lowp::case_name);

}  // namespace
