// Every functional form (oxmera/nn/functional.h, the cell functions of rnn.h) and every loss
// (oxmera/nn/loss.h, functions and modules) in bf16 and f16 against f32 on the same rounded
// values. The harness and the tolerances are in low_precision.h.

#include <oxmera/nn/functional.h>
#include <oxmera/nn/loss.h>
#include <oxmera/nn/rnn.h>

#include "low_precision.h"

namespace {

using namespace ox;
using lowp::Case;
using lowp::Run;
using lowp::Tol;
namespace F = ox::nn::functional;

constexpr Tol kTwoOps{.bf16 = 2.5e-2,
                      .f16 = 2e-3,
                      .why = "two rounded ops in a row (a product, then a bias or an activation)"};
constexpr Tol kAttention{
    .bf16 = 3e-2, .f16 = 3e-3, .why = "scores, softmax and the weighted sum each round once"};

using Body = std::function<std::vector<Tensor>(Run&)>;

std::vector<Case> functional_cases() {
  std::vector<Case> cases;
  const auto add = [&](std::string name, Body body, Tol tol = lowp::kOp) {
    cases.push_back({std::move(name), std::move(body), tol});
  };
  add("linear", [](Run& r) {
    return std::vector{F::linear(r.input({4, 12}), r.input({5, 12}), r.input({5}))};
  });
  add(
      "bilinear",
      [](Run& r) {
        return std::vector{
            F::bilinear(r.input({6, 4}), r.input({6, 3}), r.input({5, 4, 3}), r.input({5}))};
      },
      kTwoOps);
  add("conv1d", [](Run& r) {
    return std::vector{F::conv1d(r.input({2, 4, 9}), r.input({6, 2, 3}), r.input({6}),
                                 {.stride = 2, .groups = 2})};
  });
  add("conv2d", [](Run& r) {
    return std::vector{
        F::conv2d(r.input({2, 3, 6, 5}), r.input({4, 3, 3, 3}), r.input({4}), {.padding = 1})};
  });
  add("conv_transpose2d", [](Run& r) {
    return std::vector{F::conv_transpose2d(r.input({2, 4, 3, 4}), r.input({4, 3, 3, 2}),
                                           r.input({3}), {.stride = 2})};
  });
  add("max_pool2d", [](Run& r) {
    return std::vector{F::max_pool2d(r.input({2, 3, 7, 7}), 3, {.stride = 2, .padding = 1})};
  });
  add("avg_pool2d", [](Run& r) {
    return std::vector{F::avg_pool2d(r.input({2, 3, 7, 7}), 3,
                                     {.stride = 2, .padding = 1, .count_include_pad = false})};
  });
  add("adaptive_avg_pool2d", [](Run& r) {
    return std::vector{F::adaptive_avg_pool2d(r.input({2, 3, 9, 7}), {4, 3})};
  });
  add("layer_norm", [](Run& r) {
    return std::vector{
        F::layer_norm(r.input({6, 32}, -1, 5), Shape{32}, r.input({32}), r.input({32}))};
  });
  add("layer_norm_offset_rows", [](Run& r) {
    // Rows with a large mean and a small spread: the statistics must not be taken in 16 bits.
    return std::vector{F::layer_norm(r.input({4, 64}, 29.75, 30.25), Shape{64})};
  });
  add("rms_norm", [](Run& r) {
    return std::vector{F::rms_norm(r.input({6, 32}, -1, 5), Shape{32}, r.input({32}))};
  });
  add("group_norm", [](Run& r) {
    return std::vector{
        F::group_norm(r.input({3, 6, 4, 5}, -1, 5), 3, r.input({6}, 0.5, 1.5), r.input({6}))};
  });
  add("group_norm_offset_groups", [](Run& r) {
    return std::vector{F::group_norm(r.input({2, 4, 8, 8}, 19.75, 20.25), 2)};
  });
  add("batch_norm_train", [](Run& r) {
    Tensor mean = r.value({4}, -0.5, 0.5), var = r.value({4}, 0.5, 2);
    Tensor out = F::batch_norm(r.input({16, 4, 3}, -1, 5), mean, var, r.input({4}), r.input({4}),
                               /*training=*/true, 0.2);
    return std::vector{out, mean, var};
  });
  add("batch_norm_train_offset", [](Run& r) {
    return std::vector{F::batch_norm(r.input({64, 3}, 19.75, 20.25), Tensor(), Tensor(), Tensor(),
                                     Tensor(), true)};
  });
  add("batch_norm_eval", [](Run& r) {
    Tensor mean = r.value({4}, -0.5, 0.5), var = r.value({4}, 0.5, 2);
    return std::vector{
        F::batch_norm(r.input({5, 4, 3}), mean, var, r.input({4}), r.input({4}), false)};
  });
  add("dropout", [](Run& r) { return std::vector{F::dropout(r.input({5, 40}), 0.25)}; });
  add("dropout2d", [](Run& r) { return std::vector{F::dropout2d(r.input({3, 6, 2, 2}), 0.5)}; });
  add("embedding", [](Run& r) {
    return std::vector{F::embedding(r.classes({3, 4}, 7), r.input({7, 5}), {.padding_idx = 2})};
  });
  add(
      "scaled_dot_product_attention",
      [](Run& r) {
        return std::vector{F::scaled_dot_product_attention(
            r.input({2, 3, 5, 8}), r.input({2, 3, 6, 8}), r.input({2, 3, 6, 4}))};
      },
      kAttention);
  add(
      "scaled_dot_product_attention_causal_scale",
      [](Run& r) {
        return std::vector{
            F::scaled_dot_product_attention(r.input({2, 6, 16}, -3, 3), r.input({2, 6, 16}, -3, 3),
                                            r.input({2, 6, 4}), {.is_causal = true, .scale = 0.5})};
      },
      kAttention);
  add(
      "scaled_dot_product_attention_float_mask_dropout",
      [](Run& r) {
        Tensor mask = r.value({5, 6}, -2, 0);
        return std::vector{F::scaled_dot_product_attention(r.input({3, 5, 8}), r.input({3, 6, 8}),
                                                           r.input({3, 6, 8}),
                                                           {.attn_mask = mask, .dropout_p = 0.3})};
      },
      kAttention);

  // Activations (each one op).
  const auto activation = [&](std::string name, std::function<Tensor(const Tensor&)> fn,
                              double lo = -4, double hi = 4, Tol tol = lowp::kOp) {
    add(
        std::move(name),
        [fn, lo, hi](Run& r) {
          return std::vector{fn(r.input({5, 29}, lo, hi))};
        },
        tol);
  };
  activation("elu", [](const Tensor& x) { return F::elu(x, 0.7); });
  activation("gelu", [](const Tensor& x) { return F::gelu(x); });
  activation("gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); });
  activation("leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.1); });
  activation(
      "log_softmax", [](const Tensor& x) { return F::log_softmax(x, -1); }, -10, 10);
  activation("logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); });
  activation("mish", [](const Tensor& x) { return F::mish(x); });
  activation("relu", [](const Tensor& x) { return F::relu(x); });
  activation(
      "sigmoid", [](const Tensor& x) { return F::sigmoid(x); }, -4, 4, lowp::kReadsOutput);
  activation("silu", [](const Tensor& x) { return F::silu(x); });
  activation(
      "softmax", [](const Tensor& x) { return F::softmax(x, 0); }, -8, 8, lowp::kReadsOutput);
  activation("softplus", [](const Tensor& x) { return F::softplus(x, 0.5, 3); });
  activation(
      "tanh", [](const Tensor& x) { return F::tanh(x); }, -4, 4, lowp::kReadsOutput);

  // The cell functions of rnn.h.
  add(
      "rnn_cell",
      [](Run& r) {
        return std::vector{F::rnn_cell(r.input({3, 5}), r.input({3, 6}), r.input({6, 5}),
                                       r.input({6, 6}), r.input({6}), r.input({6}), "relu")};
      },
      kTwoOps);
  add(
      "lstm_cell",
      [](Run& r) {
        auto [h, c] =
            F::lstm_cell(r.input({3, 5}), r.input({3, 6}), r.input({3, 6}), r.input({24, 5}),
                         r.input({24, 6}), r.input({24}), r.input({24}));
        return std::vector{h, c};
      },
      kTwoOps);
  add(
      "lstm_cell_composite",
      [](Run& r) {
        nn::set_fused_rnn_enabled(false);  // the public-op composition other devices take
        auto [h, c] =
            F::lstm_cell(r.input({3, 5}), r.input({3, 6}), r.input({3, 6}), r.input({24, 5}),
                         r.input({24, 6}), r.input({24}), r.input({24}));
        nn::set_fused_rnn_enabled(true);
        return std::vector{h, c};
      },
      Tol{.bf16 = 4e-2, .f16 = 4e-3, .why = "each gate op rounds, as PyTorch's composite"});
  add(
      "gru_cell",
      [](Run& r) {
        return std::vector{F::gru_cell(r.input({3, 5}), r.input({3, 6}), r.input({18, 5}),
                                       r.input({18, 6}), r.input({18}), r.input({18}))};
      },
      kTwoOps);
  return cases;
}

// Losses: each reduction of every loss function, and every module form.
std::vector<Case> loss_cases() {
  std::vector<Case> cases;
  const auto add = [&](std::string name, Body body, Tol tol = lowp::kOp) {
    cases.push_back({std::move(name), std::move(body), tol});
  };
  for (const char* red : {"none", "mean", "sum"}) {
    const std::string sfx = std::string("_") + red;
    const std::string_view reduction = red;
    add("mse_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::mse_loss(r.input({6, 17}), r.input({6, 17}), {.reduction = reduction})};
    });
    add("l1_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::l1_loss(r.input({6, 17}), r.input({6, 17}), {.reduction = reduction})};
    });
    add("smooth_l1_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::smooth_l1_loss(r.input({6, 17}, -2, 2), r.input({6, 17}),
                                           {.reduction = reduction, .beta = 0.5})};
    });
    add("huber_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::huber_loss(r.input({6, 17}, -2, 2), r.input({6, 17}),
                                       {.reduction = reduction, .delta = 0.7})};
    });
    add("cross_entropy" + sfx, [reduction](Run& r) {
      return std::vector{F::cross_entropy(
          r.input({9, 7}, -4, 4), r.classes({9}, 7),
          {.weight = r.value({7}, 0.5, 2), .reduction = reduction, .label_smoothing = 0.1})};
    });
    add("cross_entropy_probabilities" + sfx, [reduction](Run& r) {
      Tensor target = F::softmax(r.value({4, 5, 3}, -2, 2).to(kF64), 1).to(r.low()).to(r.dtype());
      return std::vector{F::cross_entropy(r.input({4, 5, 3}, -4, 4), target,
                                          {.reduction = reduction, .label_smoothing = 0.2})};
    });
    add("nll_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::nll_loss(r.input({8, 5, 2}, -3, 0), r.classes({8, 2}, 5),
                                     {.weight = r.value({5}, 0.5, 2), .reduction = reduction})};
    });
    add("binary_cross_entropy" + sfx, [reduction](Run& r) {
      return std::vector{
          F::binary_cross_entropy(r.input({5, 11}, 0.05, 0.95), r.value({5, 11}, 0, 1),
                                  {.weight = r.value({11}, 0.5, 2), .reduction = reduction})};
    });
    add("binary_cross_entropy_with_logits" + sfx, [reduction](Run& r) {
      return std::vector{
          F::binary_cross_entropy_with_logits(r.input({5, 11}, -5, 5), r.value({5, 11}, 0, 1),
                                              {.weight = r.value({5, 1}, 0.5, 2),
                                               .reduction = reduction,
                                               .pos_weight = r.value({11}, 0.5, 3)})};
    });
    add("kl_div" + sfx, [reduction](Run& r) {
      return std::vector{
          F::kl_div(r.input({6, 9}, -4, -0.1), r.input({6, 9}, 0.01, 1), {.reduction = reduction})};
    });
    add("kl_div_log_target" + sfx, [reduction](Run& r) {
      return std::vector{F::kl_div(r.input({6, 9}, -4, -0.1), r.input({6, 9}, -4, -0.1),
                                   {.reduction = reduction, .log_target = true})};
    });
    add("cosine_embedding_loss" + sfx, [reduction](Run& r) {
      Tensor target = tensor(std::vector<int64_t>{1, -1, 1, -1, -1, 1}).to(r.dtype());
      return std::vector{F::cosine_embedding_loss(r.input({6, 10}), r.input({6, 10}), target,
                                                  {.margin = -0.2, .reduction = reduction})};
    });
    add("margin_ranking_loss" + sfx, [reduction](Run& r) {
      Tensor target = tensor(std::vector<int64_t>{1, -1, 1, -1, -1, 1, 1}).to(r.dtype());
      return std::vector{F::margin_ranking_loss(r.input({7}), r.input({7}), target,
                                                {.margin = 0.3, .reduction = reduction})};
    });
    add("triplet_margin_loss" + sfx, [reduction](Run& r) {
      return std::vector{
          F::triplet_margin_loss(r.input({6, 12}), r.input({6, 12}), r.input({6, 12}),
                                 {.margin = 0.5, .swap = true, .reduction = reduction})};
    });
    add("poisson_nll_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::poisson_nll_loss(r.input({5, 8}, -2, 2), r.value({5, 8}, 0, 4),
                                             {.full = true, .reduction = reduction})};
    });
    add("poisson_nll_loss_rate" + sfx, [reduction](Run& r) {
      return std::vector{F::poisson_nll_loss(r.input({5, 8}, 0.1, 3), r.value({5, 8}, 0, 4),
                                             {.log_input = false, .reduction = reduction})};
    });
    add("gaussian_nll_loss" + sfx, [reduction](Run& r) {
      return std::vector{F::gaussian_nll_loss(r.input({5, 8}), r.input({5, 8}),
                                              r.input({5, 1}, 0.2, 2),
                                              {.full = true, .reduction = reduction})};
    });
  }

  // The module forms: weights are buffers that Module::to converts.
  const auto module = [&](std::string name, auto make, auto call) {
    add(std::move(name), [make, call](Run& r) {
      auto m = make(r);
      m->to(r.low());
      m->to(r.dtype());
      return std::vector{call(m, r)};
    });
  };
  const auto pair_call = [](auto& m, Run& r) { return m(r.input({4, 9}), r.input({4, 9})); };
  module(
      "MSELoss", [](Run&) { return nn::MSELoss(); }, pair_call);
  module(
      "L1Loss", [](Run&) { return nn::L1Loss({.reduction = "sum"}); }, pair_call);
  module(
      "SmoothL1Loss", [](Run&) { return nn::SmoothL1Loss({.beta = 0.3}); }, pair_call);
  module(
      "HuberLoss", [](Run&) { return nn::HuberLoss({.delta = 0.4}); }, pair_call);
  module(
      "KLDivLoss", [](Run&) { return nn::KLDivLoss({.reduction = "batchmean"}); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}, -3, -0.1), r.input({4, 9}, 0.01, 1));
      });
  module(
      "CrossEntropyLoss",
      [](Run& r) { return nn::CrossEntropyLoss({.weight = r.value({6}, 0.5, 2)}); },
      [](auto& m, Run& r) {
        return m(r.input({8, 6}, -3, 3), r.classes({8}, 6));
      });
  module(
      "NLLLoss", [](Run& r) { return nn::NLLLoss({.weight = r.value({6}, 0.5, 2)}); },
      [](auto& m, Run& r) {
        return m(r.input({8, 6}, -3, 0), r.classes({8}, 6));
      });
  module(
      "BCELoss", [](Run& r) { return nn::BCELoss({.weight = r.value({9}, 0.5, 2)}); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}, 0.05, 0.95), r.value({4, 9}, 0, 1));
      });
  module(
      "BCEWithLogitsLoss",
      [](Run& r) { return nn::BCEWithLogitsLoss({.pos_weight = r.value({9}, 0.5, 3)}); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}, -4, 4), r.value({4, 9}, 0, 1));
      });
  module(
      "CosineEmbeddingLoss", [](Run&) { return nn::CosineEmbeddingLoss({.margin = 0.1}); },
      [](auto& m, Run& r) {
        Tensor target = tensor(std::vector<int64_t>{1, -1, -1, 1}).to(r.dtype());
        return m(r.input({4, 9}), r.input({4, 9}), target);
      });
  module(
      "MarginRankingLoss", [](Run&) { return nn::MarginRankingLoss({.margin = 0.2}); },
      [](auto& m, Run& r) {
        Tensor target = tensor(std::vector<int64_t>{1, -1, -1, 1, 1}).to(r.dtype());
        return m(r.input({5}), r.input({5}), target);
      });
  module(
      "TripletMarginLoss", [](Run&) { return nn::TripletMarginLoss({.p = 1.0}); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}), r.input({4, 9}), r.input({4, 9}));
      });
  module(
      "PoissonNLLLoss", [](Run&) { return nn::PoissonNLLLoss(); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}, -2, 2), r.value({4, 9}, 0, 4));
      });
  module(
      "GaussianNLLLoss", [](Run&) { return nn::GaussianNLLLoss(); },
      [](auto& m, Run& r) {
        return m(r.input({4, 9}), r.input({4, 9}), r.input({4, 9}, 0.2, 2));
      });
  return cases;
}

class LowPrecisionFunctional : public testing::TestWithParam<Case> {};
TEST_P(LowPrecisionFunctional, BF16MatchesF32) { lowp::check_case(GetParam(), kBF16); }
TEST_P(LowPrecisionFunctional, F16MatchesF32) { lowp::check_case(GetParam(), kF16); }
INSTANTIATE_TEST_SUITE_P(Functional, LowPrecisionFunctional, testing::ValuesIn(functional_cases()),
                         lowp::case_name);

class LowPrecisionLoss : public testing::TestWithParam<Case> {};
TEST_P(LowPrecisionLoss, BF16MatchesF32) { lowp::check_case(GetParam(), kBF16); }
TEST_P(LowPrecisionLoss, F16MatchesF32) { lowp::check_case(GetParam(), kF16); }
INSTANTIATE_TEST_SUITE_P(Losses, LowPrecisionLoss, testing::ValuesIn(loss_cases()),
                         lowp::case_name);

}  // namespace
