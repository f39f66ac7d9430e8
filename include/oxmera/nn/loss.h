#pragma once
// Loss functions, as torch.nn.functional (ox::nn::functional::mse_loss, ...) and as modules
// (ox::nn::MSELoss, ...). Each takes one options aggregate whose fields follow PyTorch's
// argument order: `ox::nn::functional::smooth_l1_loss(x, y, {.reduction = "sum", .beta = 0.5})`,
// `ox::nn::CrossEntropyLoss loss({.label_smoothing = 0.1})`. The module takes the same
// aggregate, and its forward the same tensors.
//
// reduction: "none" (the per-element losses), "mean" or "sum" (kl_div also "batchmean"); any
// other string is a Value error. The mean of no elements is NaN and their sum 0, as PyTorch.
// Inputs must be floating (a DType error otherwise); class targets i64 or i32. Each loss is a
// composite of the op surface, so autograd differentiates it (cross_entropy with class targets
// is the fused op of ops.h).

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "oxmera/nn/module.h"
#include "oxmera/ops.h"
#include "oxmera/tensor.h"

namespace ox::nn {

// ---- Options (shared by the functions and the modules) ------------------------------------

struct MSELossOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string_view reduction = "mean";
};
struct L1LossOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string_view reduction = "mean";
};
// 0.5 d² / beta where d = |input - target| < beta, d - 0.5 beta elsewhere; beta >= 0 (0: L1).
struct SmoothL1LossOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string_view reduction = "mean";
  double beta = 1.0;
};
// 0.5 d² where d < delta, delta (d - 0.5 delta) elsewhere; delta > 0.
struct HuberLossOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string_view reduction = "mean";
  double delta = 1.0;
};
// weight [C], ignore_index, reduction, label_smoothing: ops.h's options of the fused op.
using CrossEntropyLossOptions = ox::CrossEntropyOptions;
struct NLLLossOptions {
  OX_NAMED_FIELDS_ONLY;
  Tensor weight = {};  // per-class weights [C], or undefined
  int64_t ignore_index = -100;
  std::string_view reduction = "mean";
};
struct BCELossOptions {
  OX_NAMED_FIELDS_ONLY;
  Tensor weight = {};  // broadcasts to the input
  std::string_view reduction = "mean";
};
struct BCEWithLogitsLossOptions {
  OX_NAMED_FIELDS_ONLY;
  Tensor weight = {};  // broadcasts to the input
  std::string_view reduction = "mean";
  Tensor pos_weight = {};  // weight of the positive term, broadcast over the last dim ([C])
};
// reduction also "batchmean": the sum divided by the batch size (input.size(0)).
struct KLDivLossOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string_view reduction = "mean";
  bool log_target = false;  // target holds log-probabilities
};
struct CosineEmbeddingLossOptions {
  OX_NAMED_FIELDS_ONLY;
  double margin = 0.0;
  std::string_view reduction = "mean";
};
struct MarginRankingLossOptions {
  OX_NAMED_FIELDS_ONLY;
  double margin = 0.0;
  std::string_view reduction = "mean";
};
struct TripletMarginLossOptions {
  OX_NAMED_FIELDS_ONLY;
  double margin = 1.0;
  double p = 2.0;     // the norm of the pairwise distance, > 0
  double eps = 1e-6;  // added to the difference before its norm, as pairwise_distance
  bool swap = false;  // use min(d(a, n), d(p, n)) as the negative distance
  std::string_view reduction = "mean";
};
struct PoissonNLLLossOptions {
  OX_NAMED_FIELDS_ONLY;
  bool log_input = true;  // input is log(rate): exp(input) - target * input
  bool full = false;      // add the Stirling term for target > 1
  double eps = 1e-8;      // input - target * log(input + eps) when !log_input
  std::string_view reduction = "mean";
};
struct GaussianNLLLossOptions {
  OX_NAMED_FIELDS_ONLY;
  bool full = false;  // add 0.5 log(2π)
  double eps = 1e-6;  // var is clamped to >= eps (the gradient passes the clamp, as PyTorch)
  std::string_view reduction = "mean";
};

namespace functional {

// Elementwise regression losses; input and target broadcast (as PyTorch, which warns).
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossOptions& options = {});
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& options = {});

// Logits [N, C, d...] or [C]. An integer target [N, d...] / [] holds class indices (the fused
// ops.h op); a floating target of the input's shape holds class probabilities: the loss is
// -Σ_c weight_c target_c log_softmax(input)_c (target smoothed to (1 - ls) target + ls / C
// first), and "mean" divides by the number of rows (N · d...), not by the weights.
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyLossOptions& options = {});
// Log-probabilities [N, C, d...] or [C] against class indices [N, d...] / []: -weight[t] x[t];
// a target outside [0, C) other than ignore_index is an Index error. "mean" divides by the
// summed weights of the targets not ignored (NaN when all are).
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossOptions& options = {});
// Probabilities in [0, 1] (a Value error otherwise, NaN included) against targets of the same
// shape: -weight (t log x + (1 - t) log(1 - x)), each log clamped to >= -100. A clamped log has
// gradient 0, so the gradient stays finite where x is 0 or 1 (PyTorch's differs there: it
// divides x - t by max(x (1 - x), 1e-12)).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BCELossOptions& options = {});
// Logits against targets of the same shape: weight ((1 - t) x - (1 + (pos_weight - 1) t)
// logsigmoid(x)), stable for any x.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsLossOptions& options = {});
// input holds log-probabilities: target (log target - input), 0 where target is 0;
// exp(target) (target - input) with log_target. input and target broadcast.
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivLossOptions& options = {});
// input1, input2 [N, D] (target [N]) or [D] (target []): 1 - cos where target is 1,
// max(0, cos - margin) where it is -1, 0 for other targets. cos uses |x|² + 1e-12, as PyTorch.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossOptions& options = {});
// max(0, -target (input1 - input2) + margin); the three have one number of dims and broadcast.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossOptions& options = {});
// max(0, margin + d(a, p) - d(a, n)) with d(x, y) = ‖x - y + eps‖_p over the last dim; anchor,
// positive and negative have one number of dims (1 or 2) and broadcast.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossOptions& options = {});
// input and target broadcast.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target,
                        const PoissonNLLLossOptions& options = {});
// 0.5 (log var + (input - target)² / var); var has input's shape, or input's without its last
// dim, or input's with a last dim of 1. A negative var is a Value error.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossOptions& options = {});

}  // namespace functional

// ---- Modules ------------------------------------------------------------------------------
// Each keeps its options (the reduction string copied) and prints them:
// "SmoothL1Loss(reduction=mean, beta=1)". Weights are buffers ("weight", "pos_weight"), so
// Module::to converts them and state_dict holds the defined ones.

class MSELossImpl : public Module {
 public:
  using Options = MSELossOptions;
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  std::string reduction_;
};
OX_MODULE(MSELoss);

class L1LossImpl : public Module {
 public:
  using Options = L1LossOptions;
  explicit L1LossImpl(const L1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  std::string reduction_;
};
OX_MODULE(L1Loss);

class SmoothL1LossImpl : public Module {
 public:
  using Options = SmoothL1LossOptions;
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  std::string reduction_;
  double beta_;
};
OX_MODULE(SmoothL1Loss);

class HuberLossImpl : public Module {
 public:
  using Options = HuberLossOptions;
  explicit HuberLossImpl(const HuberLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  std::string reduction_;
  double delta_;
};
OX_MODULE(HuberLoss);

class CrossEntropyLossImpl : public Module {
 public:
  using Options = CrossEntropyLossOptions;
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;
  Tensor weight;  // the buffer "weight" (undefined when not given)

 private:
  int64_t ignore_index_;
  std::string reduction_;
  double label_smoothing_;
};
OX_MODULE(CrossEntropyLoss);

class NLLLossImpl : public Module {
 public:
  using Options = NLLLossOptions;
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;
  Tensor weight;

 private:
  int64_t ignore_index_;
  std::string reduction_;
};
OX_MODULE(NLLLoss);

class BCELossImpl : public Module {
 public:
  using Options = BCELossOptions;
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;
  Tensor weight;

 private:
  std::string reduction_;
};
OX_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public Module {
 public:
  using Options = BCEWithLogitsLossOptions;
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;
  Tensor weight, pos_weight;

 private:
  std::string reduction_;
};
OX_MODULE(BCEWithLogitsLoss);

class KLDivLossImpl : public Module {
 public:
  using Options = KLDivLossOptions;
  explicit KLDivLossImpl(const KLDivLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  std::string reduction_;
  bool log_target_;
};
OX_MODULE(KLDivLoss);

class CosineEmbeddingLossImpl : public Module {
 public:
  using Options = CosineEmbeddingLossOptions;
  explicit CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options = {});
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  double margin_;
  std::string reduction_;
};
OX_MODULE(CosineEmbeddingLoss);

class MarginRankingLossImpl : public Module {
 public:
  using Options = MarginRankingLossOptions;
  explicit MarginRankingLossImpl(const MarginRankingLossOptions& options = {});
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  double margin_;
  std::string reduction_;
};
OX_MODULE(MarginRankingLoss);

class TripletMarginLossImpl : public Module {
 public:
  using Options = TripletMarginLossOptions;
  explicit TripletMarginLossImpl(const TripletMarginLossOptions& options = {});
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) const;
  void pretty_print(std::ostream& os) const override;

 private:
  TripletMarginLossOptions options_;  // reduction points into reduction_
  std::string reduction_;
};
OX_MODULE(TripletMarginLoss);

class PoissonNLLLossImpl : public Module {
 public:
  using Options = PoissonNLLLossOptions;
  explicit PoissonNLLLossImpl(const PoissonNLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  void pretty_print(std::ostream& os) const override;

 private:
  PoissonNLLLossOptions options_;  // reduction points into reduction_
  std::string reduction_;
};
OX_MODULE(PoissonNLLLoss);

class GaussianNLLLossImpl : public Module {
 public:
  using Options = GaussianNLLLossOptions;
  explicit GaussianNLLLossImpl(const GaussianNLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) const;
  void pretty_print(std::ostream& os) const override;

 private:
  GaussianNLLLossOptions options_;  // reduction points into reduction_
  std::string reduction_;
};
OX_MODULE(GaussianNLLLoss);

}  // namespace ox::nn
