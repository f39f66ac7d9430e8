// The functional losses: composites of the op surface, so autograd differentiates them (the
// class-index cross entropy is the fused op). Definitions and defaults follow
// torch.nn.functional; where they differ it is said in oxmera/nn/loss.h.

#include "oxmera/nn/loss.h"

#include <cmath>
#include <numbers>
#include <optional>

#include "amp/autocast_policy.h"
#include "backend/kernel_check.h"
#include "nn/reduction.h"
#include "ops/index_util.h"
#include "oxmera/autograd.h"
#include "oxmera/core/layout.h"

namespace ox::nn::functional {
namespace {

using detail::parse_reduction;
using detail::Reduction;

// The mean is the sum over the count (not ox::mean), so that no elements give NaN as PyTorch.
Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return ox::sum(loss);
    case Reduction::Mean:
    case Reduction::BatchMean:
      break;
  }
  return ox::div(ox::sum(loss), static_cast<double>(loss.numel()));
}

// f16 and bf16 losses compute in f32 and round the loss once, as PyTorch's loss kernels, whose
// per-element terms and reductions are in f32 (opmath): composed in 16 bits, every op would
// round (a difference, its square, a log, the sum), and terms like exp(x) - t x cancel. The
// gradient flows back through the widening and is rounded once into each input's dtype.
bool is_16_bit(const Tensor& t) { return t.defined() && (t.dtype() == kF16 || t.dtype() == kBF16); }

bool any_16_bit(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (is_16_bit(*t)) return true;
  return false;
}

Tensor widened(const Tensor& t) { return is_16_bit(t) ? t.to(kF32) : t; }

// The loss of the widened tensors, rounded to the dtype the floating `values` promote to (what
// the loss composed in their own dtypes would return).
template <class F>
Tensor computed_in_f32(std::initializer_list<const Tensor*> values, F&& loss) {
  std::optional<DType> out;
  for (const Tensor* t : values)
    if (t->defined() && is_floating(t->dtype()))
      out = out ? promote_types(*out, t->dtype()) : t->dtype();
  Tensor result = loss();
  return out ? result.to(*out) : result;
}

void require_defined(const Tensor& t, const char* op, const char* what) {
  OX_CHECK(t.defined(), Value, op, what, " is an undefined tensor");
}

void require_floating(const Tensor& t, const char* op, const char* what) {
  require_defined(t, op, what);
  OX_CHECK(is_floating(t.dtype()), DType, op, what, " must be floating, got ", t.dtype());
}

void require_class_indices(const Tensor& t, const char* op) {
  require_defined(t, op, "target");
  OX_CHECK(t.dtype() == kI64 || t.dtype() == kI32, DType, op,
           "target must hold class indices (i64 or i32), got ", t.dtype());
}

// A ±1 target: floating or integer, as PyTorch (which compares it with 1 and -1).
void require_sign_target(const Tensor& t, const char* op) {
  require_defined(t, op, "target");
  OX_CHECK(is_floating(t.dtype()) || t.dtype() == kI64 || t.dtype() == kI32, DType, op,
           "target must be floating, i64 or i32, got ", t.dtype());
}

void require_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  OX_CHECK(input.shape() == target.shape(), Shape, op, "input shape ", input.shape(),
           " and target shape ", target.shape(), " must be the same");
}

// A weight that broadcasts to the input without growing it.
void require_broadcasts_to(const Tensor& weight, const Tensor& input, const char* op,
                           const char* what) {
  require_floating(weight, op, what);
  OX_CHECK(broadcast_shapes(weight.shape(), input.shape(), op) == input.shape(), Shape, op, what,
           " of shape ", weight.shape(), " does not broadcast to the input shape ", input.shape());
}

// Both floating and broadcastable: the elementwise regression losses.
void check_pair(const Tensor& input, const Tensor& target, const char* op) {
  require_floating(input, op, "input");
  require_floating(target, op, "target");
  broadcast_shapes(input.shape(), target.shape(), op);
}

// log(x) clamped to >= -100 as PyTorch's BCE, with a finite (zero) gradient where x is 0.
Tensor clamped_log(const Tensor& x) {
  const Tensor positive = ox::gt(x, 0);
  const Tensor log_x = ox::clamp(ox::log(ox::where(positive, x, 1.0)), Scalar(-100.0));
  return ox::where(positive, log_x, -100.0);
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return mse_loss(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target},
                           [&] { return mse_loss(widened(input), widened(target), options); });
  const Reduction reduction = parse_reduction(options.reduction, "mse_loss");
  check_pair(input, target, "mse_loss");
  return reduce(ox::square(ox::sub(input, target)), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return l1_loss(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target},
                           [&] { return l1_loss(widened(input), widened(target), options); });
  const Reduction reduction = parse_reduction(options.reduction, "l1_loss");
  check_pair(input, target, "l1_loss");
  return reduce(ox::abs(ox::sub(input, target)), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return smooth_l1_loss(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target}, [&] {
      return smooth_l1_loss(widened(input), widened(target), options);
    });
  const char* op = "smooth_l1_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  check_pair(input, target, op);
  OX_CHECK(options.beta >= 0, Value, op, "beta must be >= 0, got ", options.beta);
  const Tensor d = ox::abs(ox::sub(input, target));
  if (options.beta == 0) return reduce(d, reduction);
  const Tensor quadratic = ox::mul(ox::square(d), 0.5 / options.beta);
  const Tensor linear = ox::sub(d, 0.5 * options.beta);
  return reduce(ox::where(ox::lt(d, options.beta), quadratic, linear), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return huber_loss(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target},
                           [&] { return huber_loss(widened(input), widened(target), options); });
  const char* op = "huber_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  check_pair(input, target, op);
  OX_CHECK(options.delta > 0, Value, op, "delta must be > 0, got ", options.delta);
  const Tensor d = ox::abs(ox::sub(input, target));
  const Tensor quadratic = ox::mul(ox::square(d), 0.5);
  const Tensor linear = ox::mul(ox::sub(d, 0.5 * options.delta), options.delta);
  return reduce(ox::where(ox::lt(d, options.delta), quadratic, linear), reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return functional::cross_entropy(cast(input), cast(target), options);
  const char* op = "cross_entropy";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input, op, "input");
  require_defined(target, op, "target");
  OX_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, Value, op,
           "label_smoothing must be in [0, 1], got ", options.label_smoothing);
  if (!is_floating(target.dtype())) {
    require_class_indices(target, op);
    return ox::cross_entropy(input, target.to(kI64), options);
  }

  // Class probabilities.
  if (any_16_bit({&input, &target, &options.weight})) {
    CrossEntropyLossOptions wide = options;
    wide.weight = widened(options.weight);
    return computed_in_f32({&input, &target, &options.weight}, [&] {
      return functional::cross_entropy(widened(input), widened(target), wide);
    });
  }
  OX_CHECK(input.dim() >= 1, Shape, op, "input must have a class dim, got shape ", input.shape());
  require_same_shape(input, target, op);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  Tensor probs = target;
  if (options.label_smoothing > 0)
    probs = ox::add(ox::mul(target, 1.0 - options.label_smoothing),
                    options.label_smoothing / static_cast<double>(classes));
  Tensor terms = ox::mul(ox::log_softmax(input, class_dim), probs);
  if (options.weight.defined()) {
    require_floating(options.weight, op, "weight");
    OX_CHECK(options.weight.dim() == 1 && options.weight.size(0) == classes, Shape, op,
             "weight must have shape [", classes, "], got ", options.weight.shape());
    Shape weight_shape(static_cast<size_t>(input.dim()), 1);
    weight_shape[static_cast<size_t>(class_dim)] = classes;
    terms = ox::mul(terms, options.weight.reshape(weight_shape));
  }
  return reduce(ox::neg(ox::sum(terms, {class_dim})), reduction);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return nll_loss(cast(input), target, options);
  if (any_16_bit({&input, &options.weight})) {
    NLLLossOptions wide = options;
    wide.weight = widened(options.weight);
    return computed_in_f32({&input, &options.weight},
                           [&] { return nll_loss(widened(input), target, wide); });
  }
  const char* op = "nll_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input, op, "input");
  require_class_indices(target, op);
  OX_CHECK(input.dim() >= 1, Shape, op, "input must have a class dim, got shape ", input.shape());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  Shape target_shape = input.shape();
  target_shape.erase(target_shape.begin() + class_dim);
  OX_CHECK(target.shape() == target_shape, Shape, op, "input of shape ", input.shape(),
           " needs a target of shape ", target_shape, ", got ", target.shape());
  if (options.weight.defined()) {
    require_floating(options.weight, op, "weight");
    OX_CHECK(options.weight.dim() == 1 && options.weight.size(0) == classes, Shape, op,
             "weight must have shape [", classes, "], got ", options.weight.shape());
  }

  const Tensor index = target.to(kI64);
  const Tensor kept = ox::ne(index, options.ignore_index);
  const Tensor safe_index = ox::where(kept, index, 0);  // ignored rows read class 0
  // The gather checks the targets, on a device without reading them back.
  static const CheckSite bad_target =
      check_site(op, "target {value} is out of range for {bound} classes");
  const Tensor picked =
      ops::gather_checked(input, class_dim, safe_index.unsqueeze(class_dim), bad_target)
          .squeeze(class_dim);
  Tensor weights = kept.to(input.dtype());
  if (options.weight.defined())
    weights = ox::mul(
        weights,
        ox::index_select(options.weight, 0, safe_index.reshape({-1})).reshape(target_shape));
  // where, not a product: an ignored row's input may be -inf, and -inf * 0 is NaN.
  const Tensor loss = ox::where(kept, ox::neg(ox::mul(picked, weights)), 0.0);
  if (reduction == Reduction::Mean) return ox::div(ox::sum(loss), ox::sum(weights));
  return reduce(loss, reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BCELossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return binary_cross_entropy(cast(input), cast(target), options);
  if (any_16_bit({&input, &target, &options.weight})) {
    BCELossOptions wide = options;
    wide.weight = widened(options.weight);
    return computed_in_f32({&input, &target, &options.weight}, [&] {
      return binary_cross_entropy(widened(input), widened(target), wide);
    });
  }
  const char* op = "binary_cross_entropy";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input, op, "input");
  require_floating(target, op, "target");
  require_same_shape(input, target, op);
  if (options.weight.defined()) require_broadcasts_to(options.weight, input, op, "weight");
  {
    NoGradGuard no_grad;
    static const CheckSite outside = check_site(
        op, "every input element must be in [0, 1]; element {position} is not", ErrorKind::Value);
    ops::check_all_on_device(ox::logical_and(ox::ge(input, 0), ox::le(input, 1)), outside);
  }
  const Tensor log_p = clamped_log(input);
  const Tensor log_q = clamped_log(ox::sub(1.0, input));
  Tensor loss = ox::neg(ox::add(ox::mul(target, log_p), ox::mul(ox::sub(1.0, target), log_q)));
  if (options.weight.defined()) loss = ox::mul(loss, options.weight);
  return reduce(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return binary_cross_entropy_with_logits(cast(input), cast(target), options);
  if (any_16_bit({&input, &target, &options.weight, &options.pos_weight})) {
    BCEWithLogitsLossOptions wide = options;
    wide.weight = widened(options.weight);
    wide.pos_weight = widened(options.pos_weight);
    return computed_in_f32({&input, &target, &options.weight, &options.pos_weight}, [&] {
      return binary_cross_entropy_with_logits(widened(input), widened(target), wide);
    });
  }
  const char* op = "binary_cross_entropy_with_logits";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input, op, "input");
  require_floating(target, op, "target");
  require_same_shape(input, target, op);
  if (options.weight.defined()) require_broadcasts_to(options.weight, input, op, "weight");
  if (options.pos_weight.defined())
    require_broadcasts_to(options.pos_weight, input, op, "pos_weight");
  // -log σ(x) = max(-x, 0) + log1p(exp(-|x|)): logsigmoid is that stable form.
  const Tensor log_sigmoid = ox::logsigmoid(input);
  Tensor positive_weight = options.pos_weight.defined()
                               ? ox::add(ox::mul(ox::sub(options.pos_weight, 1.0), target), 1.0)
                               : Tensor();
  Tensor loss = ox::mul(ox::sub(1.0, target), input);
  loss = positive_weight.defined() ? ox::sub(loss, ox::mul(positive_weight, log_sigmoid))
                                   : ox::sub(loss, log_sigmoid);
  if (options.weight.defined()) loss = ox::mul(loss, options.weight);
  return reduce(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return kl_div(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target},
                           [&] { return kl_div(widened(input), widened(target), options); });
  const char* op = "kl_div";
  const Reduction reduction = parse_reduction(options.reduction, op, /*allow_batchmean=*/true);
  check_pair(input, target, op);
  Tensor loss;
  if (options.log_target) {
    loss = ox::mul(ox::exp(target), ox::sub(target, input));
  } else {
    // xlogy(t, t): 0 where t is 0 (with a zero gradient there), t log t elsewhere.
    const Tensor zero = ox::eq(target, 0);
    const Tensor xlogx =
        ox::where(zero, 0.0, ox::mul(target, ox::log(ox::where(zero, 1.0, target))));
    loss = ox::sub(xlogx, ox::mul(target, input));
  }
  if (reduction != Reduction::BatchMean) return reduce(loss, reduction);
  const Tensor total = ox::sum(loss);
  return input.dim() == 0 ? total : ox::div(total, static_cast<double>(input.size(0)));
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input1})
    return cosine_embedding_loss(cast(input1), cast(input2), target, options);
  if (any_16_bit({&input1, &input2}))
    return computed_in_f32({&input1, &input2}, [&] {
      return cosine_embedding_loss(widened(input1), widened(input2), target, options);
    });
  const char* op = "cosine_embedding_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input1, op, "input1");
  require_floating(input2, op, "input2");
  require_sign_target(target, op);
  OX_CHECK(target.dim() <= 1, Shape, op, "target must be 0-d or 1-d, got shape ", target.shape());
  OX_CHECK(input1.shape() == input2.shape(), Shape, op, "input1 shape ", input1.shape(),
           " and input2 shape ", input2.shape(), " must be the same");
  OX_CHECK(
      input1.dim() == target.dim() + 1 && (target.dim() == 0 || input1.size(0) == target.size(0)),
      Shape, op, "inputs of shape ", input1.shape(), " do not match target shape ", target.shape(),
      " (expected [N, D] with [N], or [D] with [])");
  constexpr double kEpsilon = 1e-12;  // PyTorch's, keeps a zero vector from dividing by zero
  const int64_t dim = target.dim();
  const Tensor dot = ox::sum(ox::mul(input1, input2), {dim});
  const Tensor norm1 = ox::add(ox::sum(ox::square(input1), {dim}), kEpsilon);
  const Tensor norm2 = ox::add(ox::sum(ox::square(input2), {dim}), kEpsilon);
  const Tensor cos = ox::div(dot, ox::sqrt(ox::mul(norm1, norm2)));
  const Tensor positive = ox::where(ox::eq(target, 1), ox::sub(1.0, cos), 0.0);
  const Tensor negative =
      ox::where(ox::eq(target, -1), ox::clamp(ox::sub(cos, options.margin), Scalar(0.0)), 0.0);
  return reduce(ox::add(positive, negative), reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input1})
    return margin_ranking_loss(cast(input1), cast(input2), cast(target), options);
  if (any_16_bit({&input1, &input2, &target}))
    return computed_in_f32({&input1, &input2, &target}, [&] {
      return margin_ranking_loss(widened(input1), widened(input2), widened(target), options);
    });
  const char* op = "margin_ranking_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(input1, op, "input1");
  require_floating(input2, op, "input2");
  require_sign_target(target, op);
  OX_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), Shape, op,
           "input1, input2 and target must have one number of dims, got ", input1.shape(), ", ",
           input2.shape(), " and ", target.shape());
  broadcast_shapes(broadcast_shapes(input1.shape(), input2.shape(), op), target.shape(), op);
  const Tensor margin_violation =
      ox::add(ox::mul(ox::neg(target), ox::sub(input1, input2)), options.margin);
  return reduce(ox::clamp(margin_violation, Scalar(0.0)), reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, anchor})
    return triplet_margin_loss(cast(anchor), cast(positive), cast(negative), options);
  if (any_16_bit({&anchor, &positive, &negative}))
    return computed_in_f32({&anchor, &positive, &negative}, [&] {
      return triplet_margin_loss(widened(anchor), widened(positive), widened(negative), options);
    });
  const char* op = "triplet_margin_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  require_floating(anchor, op, "anchor");
  require_floating(positive, op, "positive");
  require_floating(negative, op, "negative");
  OX_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim() && anchor.dim() >= 1,
           Shape, op, "anchor, positive and negative must have one number of dims (>= 1), got ",
           anchor.shape(), ", ", positive.shape(), " and ", negative.shape());
  broadcast_shapes(broadcast_shapes(anchor.shape(), positive.shape(), op), negative.shape(), op);
  OX_CHECK(options.p > 0, Value, op, "p must be > 0, got ", options.p);
  // pairwise_distance: the norm of x - y + eps over the last dim.
  const auto distance = [&](const Tensor& x, const Tensor& y) {
    return ox::add(ox::sub(x, y), options.eps).norm(options.p, {-1});
  };
  const Tensor d_positive = distance(anchor, positive);
  Tensor d_negative = distance(anchor, negative);
  if (options.swap) d_negative = ox::minimum(d_negative, distance(positive, negative));
  const Tensor violation = ox::add(ox::sub(d_positive, d_negative), options.margin);
  return reduce(ox::clamp(violation, Scalar(0.0)), reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target,
                        const PoissonNLLLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return poisson_nll_loss(cast(input), cast(target), options);
  if (any_16_bit({&input, &target}))
    return computed_in_f32({&input, &target}, [&] {
      return poisson_nll_loss(widened(input), widened(target), options);
    });
  const char* op = "poisson_nll_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  check_pair(input, target, op);
  Tensor loss = options.log_input
                    ? ox::sub(ox::exp(input), ox::mul(target, input))
                    : ox::sub(input, ox::mul(target, ox::log(ox::add(input, options.eps))));
  if (options.full) {
    // Stirling's approximation of log(target!), only where target > 1 (as masked_fill(t <= 1)).
    const Tensor small = ox::le(target, 1);
    const Tensor t = ox::where(small, 1.0, target);
    const Tensor stirling = ox::add(ox::sub(ox::mul(t, ox::log(t)), t),
                                    ox::mul(ox::log(ox::mul(t, 2.0 * std::numbers::pi)), 0.5));
    loss = ox::add(loss, ox::where(small, 0.0, stirling));
  }
  return reduce(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return gaussian_nll_loss(cast(input), cast(target), cast(var), options);
  if (any_16_bit({&input, &target, &var}))
    return computed_in_f32({&input, &target, &var}, [&] {
      return gaussian_nll_loss(widened(input), widened(target), widened(var), options);
    });
  const char* op = "gaussian_nll_loss";
  const Reduction reduction = parse_reduction(options.reduction, op);
  check_pair(input, target, op);
  require_floating(var, op, "var");
  Tensor variance = var;
  if (var.shape() != input.shape()) {
    const Shape& in = input.shape();
    const Shape leading =
        in.size() > 0 ? Shape(in.begin(), in.end() - 1) : Shape();  // input without its last dim
    const bool homoscedastic = var.shape() == leading;
    const bool last_dim_one = var.dim() == input.dim() && var.dim() >= 1 && var.size(-1) == 1 &&
                              Shape(var.shape().begin(), var.shape().end() - 1) == leading;
    OX_CHECK(homoscedastic || last_dim_one, Shape, op, "var of shape ", var.shape(),
             " does not fit input of shape ", in,
             " (expected the input's shape, or it without its last dim, or with a last dim of 1)");
    if (homoscedastic) variance = var.unsqueeze(-1);
  }
  {
    NoGradGuard no_grad;
    static const CheckSite negative =
        check_site(op, "var has negative entries (element {position})", ErrorKind::Value);
    ops::check_all_on_device(ox::logical_not(ox::lt(var, 0)), negative);
  }
  // The clamp changes the value only, as PyTorch's in-place clamp under no_grad: the gradient
  // reaches var as if unclamped.
  Tensor clamp_shift;
  {
    NoGradGuard no_grad;
    clamp_shift = ox::sub(ox::clamp(variance, Scalar(options.eps)), variance);
  }
  variance = ox::add(variance, clamp_shift);
  Tensor loss = ox::mul(
      ox::add(ox::log(variance), ox::div(ox::square(ox::sub(input, target)), variance)), 0.5);
  if (options.full) loss = ox::add(loss, 0.5 * std::log(2.0 * std::numbers::pi));
  return reduce(loss, reduction);
}

}  // namespace ox::nn::functional
