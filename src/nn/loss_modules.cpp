// The loss modules: each holds its options (the reduction string owned) and calls the function.

#include <ostream>

#include "oxmera/nn/loss.h"

#include "nn/reduction.h"

namespace ox::nn {
namespace {

namespace F = ox::nn::functional;

// Checks the reduction when the module is built, not at its first call.
std::string checked_reduction(std::string_view reduction, const char* module,
                              bool allow_batchmean = false) {
  detail::parse_reduction(reduction, module, allow_batchmean);
  return std::string(reduction);
}

const char* bool_str(bool b) { return b ? "true" : "false"; }

void print_weight(std::ostream& os, const char* name, const Tensor& weight) {
  if (weight.defined()) os << ", " << name << "=" << weight.shape();
}

}  // namespace

MSELossImpl::MSELossImpl(const MSELossOptions& options)
    : Module("MSELoss"), reduction_(checked_reduction(options.reduction, "MSELoss")) {}
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::mse_loss(input, target, {.reduction = reduction_});
}
void MSELossImpl::pretty_print(std::ostream& os) const {
  os << "MSELoss(reduction=" << reduction_ << ")";
}

L1LossImpl::L1LossImpl(const L1LossOptions& options)
    : Module("L1Loss"), reduction_(checked_reduction(options.reduction, "L1Loss")) {}
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::l1_loss(input, target, {.reduction = reduction_});
}
void L1LossImpl::pretty_print(std::ostream& os) const {
  os << "L1Loss(reduction=" << reduction_ << ")";
}

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options)
    : Module("SmoothL1Loss"),
      reduction_(checked_reduction(options.reduction, "SmoothL1Loss")),
      beta_(options.beta) {
  OX_CHECK(beta_ >= 0, Value, "SmoothL1Loss", "beta must be >= 0, got ", beta_);
}
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::smooth_l1_loss(input, target, {.reduction = reduction_, .beta = beta_});
}
void SmoothL1LossImpl::pretty_print(std::ostream& os) const {
  os << "SmoothL1Loss(reduction=" << reduction_ << ", beta=" << beta_ << ")";
}

HuberLossImpl::HuberLossImpl(const HuberLossOptions& options)
    : Module("HuberLoss"),
      reduction_(checked_reduction(options.reduction, "HuberLoss")),
      delta_(options.delta) {
  OX_CHECK(delta_ > 0, Value, "HuberLoss", "delta must be > 0, got ", delta_);
}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::huber_loss(input, target, {.reduction = reduction_, .delta = delta_});
}
void HuberLossImpl::pretty_print(std::ostream& os) const {
  os << "HuberLoss(reduction=" << reduction_ << ", delta=" << delta_ << ")";
}

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options)
    : Module("CrossEntropyLoss"),
      ignore_index_(options.ignore_index),
      reduction_(checked_reduction(options.reduction, "CrossEntropyLoss")),
      label_smoothing_(options.label_smoothing) {
  weight = register_buffer("weight", options.weight);
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::cross_entropy(input, target,
                          {.weight = weight,
                           .ignore_index = ignore_index_,
                           .reduction = reduction_,
                           .label_smoothing = label_smoothing_});
}
void CrossEntropyLossImpl::pretty_print(std::ostream& os) const {
  os << "CrossEntropyLoss(reduction=" << reduction_ << ", ignore_index=" << ignore_index_
     << ", label_smoothing=" << label_smoothing_;
  print_weight(os, "weight", weight);
  os << ")";
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options)
    : Module("NLLLoss"),
      ignore_index_(options.ignore_index),
      reduction_(checked_reduction(options.reduction, "NLLLoss")) {
  weight = register_buffer("weight", options.weight);
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::nll_loss(input, target,
                     {.weight = weight, .ignore_index = ignore_index_, .reduction = reduction_});
}
void NLLLossImpl::pretty_print(std::ostream& os) const {
  os << "NLLLoss(reduction=" << reduction_ << ", ignore_index=" << ignore_index_;
  print_weight(os, "weight", weight);
  os << ")";
}

BCELossImpl::BCELossImpl(const BCELossOptions& options)
    : Module("BCELoss"), reduction_(checked_reduction(options.reduction, "BCELoss")) {
  weight = register_buffer("weight", options.weight);
}
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::binary_cross_entropy(input, target, {.weight = weight, .reduction = reduction_});
}
void BCELossImpl::pretty_print(std::ostream& os) const {
  os << "BCELoss(reduction=" << reduction_;
  print_weight(os, "weight", weight);
  os << ")";
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options)
    : Module("BCEWithLogitsLoss"),
      reduction_(checked_reduction(options.reduction, "BCEWithLogitsLoss")) {
  weight = register_buffer("weight", options.weight);
  pos_weight = register_buffer("pos_weight", options.pos_weight);
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::binary_cross_entropy_with_logits(
      input, target, {.weight = weight, .reduction = reduction_, .pos_weight = pos_weight});
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream& os) const {
  os << "BCEWithLogitsLoss(reduction=" << reduction_;
  print_weight(os, "weight", weight);
  print_weight(os, "pos_weight", pos_weight);
  os << ")";
}

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options)
    : Module("KLDivLoss"),
      reduction_(checked_reduction(options.reduction, "KLDivLoss", /*allow_batchmean=*/true)),
      log_target_(options.log_target) {}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::kl_div(input, target, {.reduction = reduction_, .log_target = log_target_});
}
void KLDivLossImpl::pretty_print(std::ostream& os) const {
  os << "KLDivLoss(reduction=" << reduction_ << ", log_target=" << bool_str(log_target_) << ")";
}

CosineEmbeddingLossImpl::CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options)
    : Module("CosineEmbeddingLoss"),
      margin_(options.margin),
      reduction_(checked_reduction(options.reduction, "CosineEmbeddingLoss")) {}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2,
                                        const Tensor& target) const {
  return F::cosine_embedding_loss(input1, input2, target,
                                  {.margin = margin_, .reduction = reduction_});
}
void CosineEmbeddingLossImpl::pretty_print(std::ostream& os) const {
  os << "CosineEmbeddingLoss(margin=" << margin_ << ", reduction=" << reduction_ << ")";
}

MarginRankingLossImpl::MarginRankingLossImpl(const MarginRankingLossOptions& options)
    : Module("MarginRankingLoss"),
      margin_(options.margin),
      reduction_(checked_reduction(options.reduction, "MarginRankingLoss")) {}
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2,
                                      const Tensor& target) const {
  return F::margin_ranking_loss(input1, input2, target,
                                {.margin = margin_, .reduction = reduction_});
}
void MarginRankingLossImpl::pretty_print(std::ostream& os) const {
  os << "MarginRankingLoss(margin=" << margin_ << ", reduction=" << reduction_ << ")";
}

TripletMarginLossImpl::TripletMarginLossImpl(const TripletMarginLossOptions& options)
    : Module("TripletMarginLoss"),
      options_(options),
      reduction_(checked_reduction(options.reduction, "TripletMarginLoss")) {
  options_.reduction = reduction_;
  OX_CHECK(options_.p > 0, Value, "TripletMarginLoss", "p must be > 0, got ", options_.p);
}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                      const Tensor& negative) const {
  return F::triplet_margin_loss(anchor, positive, negative, options_);
}
void TripletMarginLossImpl::pretty_print(std::ostream& os) const {
  os << "TripletMarginLoss(margin=" << options_.margin << ", p=" << options_.p
     << ", eps=" << options_.eps << ", swap=" << bool_str(options_.swap)
     << ", reduction=" << reduction_ << ")";
}

PoissonNLLLossImpl::PoissonNLLLossImpl(const PoissonNLLLossOptions& options)
    : Module("PoissonNLLLoss"),
      options_(options),
      reduction_(checked_reduction(options.reduction, "PoissonNLLLoss")) {
  options_.reduction = reduction_;
}
Tensor PoissonNLLLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return F::poisson_nll_loss(input, target, options_);
}
void PoissonNLLLossImpl::pretty_print(std::ostream& os) const {
  os << "PoissonNLLLoss(log_input=" << bool_str(options_.log_input)
     << ", full=" << bool_str(options_.full) << ", eps=" << options_.eps
     << ", reduction=" << reduction_ << ")";
}

GaussianNLLLossImpl::GaussianNLLLossImpl(const GaussianNLLLossOptions& options)
    : Module("GaussianNLLLoss"),
      options_(options),
      reduction_(checked_reduction(options.reduction, "GaussianNLLLoss")) {
  options_.reduction = reduction_;
}
Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target,
                                    const Tensor& var) const {
  return F::gaussian_nll_loss(input, target, var, options_);
}
void GaussianNLLLossImpl::pretty_print(std::ostream& os) const {
  os << "GaussianNLLLoss(full=" << bool_str(options_.full) << ", eps=" << options_.eps
     << ", reduction=" << reduction_ << ")";
}

}  // namespace ox::nn
