// Softmax, normalization, cross-entropy and dropout: validation and reshaping around the
// backends' fused row kernels (or, for dropout, public ops).

#include <string>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

namespace {

// x with `dim` moved last and made contiguous: the rows the fused kernels take.
Tensor rows_along(const Tensor& x, int64_t dim) {
  return (dim == x.dim() - 1 || x.dim() == 0 ? x : x.transpose(dim, -1)).contiguous();
}

Tensor softmax_impl(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool log,
                    const char* name) {
  const TensorImpl& xi = ops::impl_of(x, name);
  const DType dt = dtype.value_or(xi.dtype());
  OX_CHECK(is_floating(dt), DType, name, "needs a floating dtype, got ", dt,
           " (pass a dtype to compute integer input in floating point)");
  const int64_t d = wrap_dim(dim, xi.layout().dim(), name);
  const Tensor rows = rows_along(x.to(dt), d);
  Tensor out = empty_like(rows);
  if (out.numel() > 0)
    backend_for(xi.device(), name).softmax(out.impl()->array(), rows.impl()->array(), log);
  return d == x.dim() - 1 || x.dim() == 0 ? out : out.transpose(d, -1);
}

Tensor softmax_backward_impl(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log,
                             const char* name) {
  const TensorImpl& gi = ops::impl_of(grad_out, name);
  const TensorImpl& oi = ops::impl_of(out, name);
  OX_CHECK(gi.layout().shape == oi.layout().shape, Shape, name, "gradient of shape ",
           gi.layout().shape, " does not match output of shape ", oi.layout().shape);
  OX_CHECK(gi.dtype() == oi.dtype(), DType, name, "gradient is ", gi.dtype(), ", output ",
           oi.dtype());
  ops::common_device(name, {&grad_out, &out});
  const int64_t d = wrap_dim(dim, oi.layout().dim(), name);
  const Tensor g = rows_along(grad_out, d), y = rows_along(out, d);
  Tensor grad_in = empty_like(g);
  if (grad_in.numel() > 0)
    backend_for(oi.device(), name)
        .softmax_backward(grad_in.impl()->array(), g.impl()->array(), y.impl()->array(), log);
  return d == out.dim() - 1 || out.dim() == 0 ? grad_in : grad_in.transpose(d, -1);
}

// A contiguous copy of an optional tensor (the kernels read weights and statistics densely).
Tensor dense(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

// An absent optional tensor as a kernel argument: a null pointer.
StridedArray optional_array(const Tensor& t, Device device) {
  if (!t.defined()) return {nullptr, {}, {}, kF32, device};
  return t.impl()->array();
}

struct RowShape {
  int64_t rows, n;
  Shape stats_shape;  // leading dims, then a 1 for each normalized dim
};

RowShape check_norm(const Tensor& x, const Shape& normalized, const Tensor& weight,
                    const Tensor& bias, const char* name) {
  const TensorImpl& xi = ops::impl_of(x, name);
  OX_CHECK(is_floating(xi.dtype()), DType, name, "needs a floating tensor, got ", xi.dtype());
  const Shape& s = xi.layout().shape;
  const size_t k = normalized.size();
  OX_CHECK(k >= 1 && k <= s.size() &&
               std::equal(normalized.begin(), normalized.end(), s.end() - static_cast<int64_t>(k)),
           Shape, name, "normalized_shape ", normalized, " must be the trailing dims of input ",
           "shape ", s);
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    OX_CHECK(p->shape() == normalized, Shape, name, "weight/bias of shape ", p->shape(),
             " must have normalized_shape ", normalized);
    OX_CHECK(p->dtype() == xi.dtype(), DType, name, "weight/bias are ", p->dtype(), ", input is ",
             xi.dtype());
    ops::common_device(name, {&x, p});
  }
  RowShape r{0, checked_numel(normalized, name), Shape(s.begin(), s.end() - int64_t(k))};
  r.rows = r.n == 0 ? 0 : xi.layout().numel() / r.n;
  for (size_t i = 0; i < k; ++i) r.stats_shape.push_back(1);
  return r;
}

DType stats_dtype(DType dt) { return dt == kF64 ? kF64 : kF32; }

NormResult norm_forward(const Tensor& x, const Shape& normalized, const Tensor& weight,
                        const Tensor& bias, double eps, bool rms, const char* name) {
  const RowShape r = check_norm(x, normalized, weight, bias, name);
  OX_CHECK(eps >= 0, Value, name, "eps must be non-negative, got ", eps);
  const Tensor rows = x.contiguous().view({r.rows, r.n}), w = dense(weight), b = dense(bias);
  const TensorOptions stats{.dtype = stats_dtype(x.dtype()), .device = x.device()};
  Tensor out = empty_like(rows), mean = rms ? Tensor() : empty({r.rows}, stats),
         rstd = empty({r.rows}, stats);
  if (out.numel() > 0)
    backend_for(x.device(), name)
        .layer_norm(out.impl()->array(), optional_array(mean, x.device()), rstd.impl()->array(),
                    rows.impl()->array(), optional_array(w, x.device()),
                    optional_array(b, x.device()), eps, rms);
  return {out.view(x.shape()), rms ? Tensor() : mean.view(r.stats_shape), rstd.view(r.stats_shape)};
}

NormGrads norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized,
                        const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                        bool want_weight, bool want_bias, bool rms, const char* name) {
  const RowShape r = check_norm(x, normalized, weight, Tensor(), name);
  OX_CHECK(ops::impl_of(grad_out, name).layout().shape == x.shape(), Shape, name, "gradient of ",
           "shape ", grad_out.shape(), " does not match input of shape ", x.shape());
  OX_CHECK(rstd.defined() && rstd.numel() == r.rows && (rms || mean.defined()), Value, name,
           "needs the mean and rstd saved by the forward pass");
  const Tensor g = grad_out.to(x.dtype()).contiguous().view({r.rows, r.n});
  const Tensor xr = x.contiguous().view({r.rows, r.n}), w = dense(weight);
  const Tensor mean_rows = rms ? Tensor() : mean.contiguous(), rstd_rows = rstd.contiguous();
  NormGrads grads{
      empty_like(xr),
      want_weight ? empty(normalized, {.dtype = x.dtype(), .device = x.device()}) : Tensor(),
      want_bias ? empty(normalized, {.dtype = x.dtype(), .device = x.device()}) : Tensor()};
  if (r.rows > 0 && r.n > 0) {
    backend_for(x.device(), name)
        .layer_norm_backward(grads.input.impl()->array(), optional_array(grads.weight, x.device()),
                             optional_array(grads.bias, x.device()), g.impl()->array(),
                             xr.impl()->array(), optional_array(mean_rows, x.device()),
                             rstd_rows.impl()->array(), optional_array(w, x.device()), rms);
  } else {
    if (grads.weight.defined()) grads.weight.zero_();
    if (grads.bias.defined()) grads.bias.zero_();
  }
  grads.input = grads.input.view(x.shape());
  return grads;
}

double default_rms_eps(DType dt) {  // torch.finfo(dtype).eps, as torch.nn.functional.rms_norm
  switch (dt) {
    case kF64:
      return 2.220446049250313e-16;
    case kF16:
      return 0.0009765625;
    case kBF16:
      return 0.0078125;
    default:
      return 1.1920928955078125e-07;
  }
}

struct FlatTargets {
  Tensor logits;  // [rows, classes], contiguous
  Tensor target;  // [rows] i64, contiguous
  Shape target_shape;
};

// Logits [N, C, d1...] / targets [N, d1...] (or unbatched [C] / []) as rows of classes.
FlatTargets flatten_classes(const Tensor& logits, const Tensor& target) {
  const TensorImpl& li = ops::impl_of(logits, "cross_entropy");
  const TensorImpl& ti = ops::impl_of(target, "cross_entropy");
  OX_CHECK(is_floating(li.dtype()), DType, "cross_entropy", "logits must be floating, got ",
           li.dtype());
  OX_CHECK(ti.dtype() == kI64, DType, "cross_entropy", "target must hold i64 class indices, got ",
           ti.dtype());
  ops::common_device("cross_entropy", {&logits, &target});
  const Shape& ls = li.layout().shape;
  OX_CHECK(ls.size() >= 1, Shape, "cross_entropy", "logits must have a class dimension");
  const int64_t class_dim = ls.size() == 1 ? 0 : 1;
  Shape expected_target(ls.begin(), ls.end());
  expected_target.erase(expected_target.begin() + class_dim);
  OX_CHECK(ti.layout().shape == expected_target, Shape, "cross_entropy", "target of shape ",
           ti.layout().shape, " does not match logits of shape ", ls, " (expected ",
           expected_target, ")");
  const int64_t classes = ls[class_dim];
  Tensor moved = logits;
  if (ls.size() > 2) {  // [N, C, d1, ...] -> [N, d1, ..., C]
    Dims order{0};
    for (int64_t i = 2; i < static_cast<int64_t>(ls.size()); ++i) order.push_back(i);
    order.push_back(1);
    moved = logits.permute(order);
  }
  return {moved.contiguous().reshape({-1, classes}), target.contiguous().reshape({-1}),
          expected_target};
}

}  // namespace

namespace {

// softmax / log_softmax recorded for autograd. The fused backward kernel serves first-order
// gradients; with create_graph the same formula in public ops, so it can be differentiated.
Tensor softmax_recorded(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool log,
                        const char* name) {
  Tensor y = autograd::without_grad([&] { return softmax_impl(x, dim, dtype, log, name); });
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  autograd::record(name, {x}, {y}, {y},
                   [d, log](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                     const Tensor &grad = g[0], &y = s[0];
                     if (!is_grad_enabled())
                       return std::vector<Tensor>{log ? log_softmax_backward(grad, y, d)
                                                      : softmax_backward(grad, y, d)};
                     return std::vector<Tensor>{log ? grad - exp(y) * sum(grad, d, true)
                                                    : y * (grad - sum(grad * y, d, true))};
                   });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return softmax(cast(x), dim, dtype);
  if (autograd::needs_grad({&x})) return softmax_recorded(x, dim, dtype, false, "softmax");
  return softmax_impl(x, dim, dtype, false, "softmax");
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return log_softmax(cast(x), dim, dtype);
  if (autograd::needs_grad({&x})) return softmax_recorded(x, dim, dtype, true, "log_softmax");
  return softmax_impl(x, dim, dtype, true, "log_softmax");
}
Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_backward_impl(grad_out, out, dim, false, "softmax_backward");
}
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_backward_impl(grad_out, out, dim, true, "log_softmax_backward");
}

namespace {

// layer_norm / rms_norm recorded for autograd (inputs x, weight, bias; either may be undefined).
// First-order gradients come from the fused backward kernel; with create_graph, from the same
// formulas in public ops (statistics recomputed from x), so they can be differentiated again:
//   x_hat = (x - mean) * rstd,  gh = g * weight,
//   dx = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat))   (rms: no mean terms, x_hat = x * rstd)
//   dweight = sum(g * x_hat),  dbias = sum(g).
NormResult norm_recorded(const Tensor& x, const Shape& normalized, const Tensor& weight,
                         const Tensor& bias, double eps, bool rms, const char* name) {
  NormResult r = autograd::without_grad(
      [&] { return norm_forward(x, normalized, weight, bias, eps, rms, name); });
  const int64_t k = static_cast<int64_t>(normalized.size());
  autograd::record(name, {x, weight, bias}, {r.out}, {x, weight, r.mean, r.rstd},
                   [normalized, k, eps, rms, has_w = weight.defined(), has_b = bias.defined()](
                       const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                     const Tensor &x = s[0], &w = s[1];
                     if (!is_grad_enabled()) {
                       const NormGrads d =
                           rms ? rms_norm_backward(g[0], x, normalized, s[3], w, has_w)
                               : layer_norm_backward(g[0], x, normalized, s[2], s[3], w, has_w,
                                                     has_b);
                       return std::vector<Tensor>{d.input, d.weight, d.bias};
                     }
                     Dims dims;
                     for (int64_t i = -k; i < 0; ++i) dims.push_back(i);
                     const Tensor centered = rms ? x : x - mean(x, dims, true);
                     const Tensor rstd = rsqrt(mean(centered * centered, dims, true) + eps);
                     const Tensor x_hat = centered * rstd;
                     const Tensor gh = has_w ? g[0] * w : g[0];
                     Tensor inner = gh - x_hat * mean(gh * x_hat, dims, true);
                     if (!rms) inner = inner - mean(gh, dims, true);
                     return std::vector<Tensor>{rstd * inner, has_w ? g[0] * x_hat : Tensor(),
                                                has_b ? g[0] : Tensor()};
                   });
  return r;
}

}  // namespace

NormResult layer_norm_forward(const Tensor& x, const Shape& normalized, const Tensor& weight,
                              const Tensor& bias, double eps) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x})
    return layer_norm_forward(cast(x), normalized, cast(weight), cast(bias), eps);
  if (autograd::needs_grad({&x, &weight, &bias}))
    return norm_recorded(x, normalized, weight, bias, eps, false, "layer_norm");
  return norm_forward(x, normalized, weight, bias, eps, false, "layer_norm");
}
Tensor layer_norm(const Tensor& x, const Shape& normalized, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return layer_norm_forward(x, normalized, weight, bias, eps).out;
}
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                              bool want_weight, bool want_bias) {
  return norm_backward(grad_out, x, normalized, mean, rstd, weight, want_weight, want_bias, false,
                       "layer_norm_backward");
}

NormResult rms_norm_forward(const Tensor& x, const Shape& normalized, const Tensor& weight,
                            std::optional<double> eps) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x})
    return rms_norm_forward(cast(x), normalized, cast(weight), eps);
  ops::impl_of(x, "rms_norm");
  if (autograd::needs_grad({&x, &weight}))
    return norm_recorded(x, normalized, weight, Tensor(), eps.value_or(default_rms_eps(x.dtype())),
                         true, "rms_norm");
  return norm_forward(x, normalized, weight, Tensor(), eps.value_or(default_rms_eps(x.dtype())),
                      true, "rms_norm");
}
Tensor rms_norm(const Tensor& x, const Shape& normalized, const Tensor& weight,
                std::optional<double> eps) {
  return rms_norm_forward(x, normalized, weight, eps).out;
}
NormGrads rms_norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized,
                            const Tensor& rstd, const Tensor& weight, bool want_weight) {
  return norm_backward(grad_out, x, normalized, Tensor(), rstd, weight, want_weight, false, true,
                       "rms_norm_backward");
}

namespace {

CrossEntropyResult cross_entropy_impl(const Tensor& logits, const Tensor& target,
                                      const CrossEntropyOptions& o);

// The gradient of cross_entropy with respect to the logits in public ops (for create_graph).
// Row i's loss is -sum_c a_ic log_softmax(z_i)_c with a_i = (1 - s) w[t_i] onehot(t_i) + (s / C) w
// (zero for an ignored row), so d loss_i / d z_i = softmax(z_i) * sum_c a_ic - a_i.
Tensor cross_entropy_grad_composite(const Tensor& grad_out, const Tensor& logits,
                                    const Tensor& target, const Tensor& weight,
                                    const Tensor& total_weight, int64_t ignore_index,
                                    const std::string& reduction, double smoothing) {
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1, classes = logits.size(class_dim);
  const DType dt = logits.dtype();
  Shape wshape(static_cast<size_t>(logits.dim()), 1);
  wshape[static_cast<size_t>(class_dim)] = classes;
  Tensor a = autograd::without_grad([&] {
    const Tensor valid = ne(target, ignore_index);
    const Tensor safe = where(valid, target, int64_t{0});
    Tensor hot = one_hot(safe, classes).to(dt);  // [..., C]: class dim last
    if (logits.dim() > 2) {
      Dims order{0, hot.dim() - 1};
      for (int64_t i = 1; i + 1 < hot.dim(); ++i) order.push_back(i);
      hot = hot.permute(order);
    }
    const Tensor w = weight.defined() ? weight.reshape(wshape)
                                      : ones(wshape, {.dtype = dt, .device = logits.device()});
    const Tensor row_valid = valid.to(dt).unsqueeze(class_dim);
    return row_valid * (hot * w * (1.0 - smoothing) + w * (smoothing / double(classes)));
  });
  Tensor scale = grad_out.to(dt);
  if (reduction == "none")
    scale = scale.unsqueeze(class_dim);
  else if (reduction == "mean")
    scale = scale / total_weight;
  const Tensor p = softmax(logits, class_dim);
  return scale * (p * sum(a, class_dim, true) - a);
}

}  // namespace

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                         const CrossEntropyOptions& o) {
  if (!autograd::needs_grad({&logits})) return cross_entropy_impl(logits, target, o);
  CrossEntropyResult r =
      autograd::without_grad([&] { return cross_entropy_impl(logits, target, o); });
  autograd::record(
      "cross_entropy", {logits, target}, {r.loss}, {logits, target, o.weight, r.total_weight},
      [ignore = o.ignore_index, reduction = std::string(o.reduction),
       smoothing = o.label_smoothing](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
        const Tensor &logits = s[0], &target = s[1], &weight = s[2], &total = s[3];
        if (!is_grad_enabled()) {
          CrossEntropyOptions opts{.weight = weight,
                                   .ignore_index = ignore,
                                   .reduction = reduction,
                                   .label_smoothing = smoothing};
          return std::vector<Tensor>{cross_entropy_backward(g[0], logits, target, total, opts),
                                     Tensor()};
        }
        return std::vector<Tensor>{cross_entropy_grad_composite(g[0], logits, target, weight, total,
                                                                ignore, reduction, smoothing),
                                   Tensor()};
      });
  return r;
}

namespace {

CrossEntropyResult cross_entropy_impl(const Tensor& logits, const Tensor& target,
                                      const CrossEntropyOptions& o) {
  OX_CHECK(o.reduction == "mean" || o.reduction == "sum" || o.reduction == "none", Value,
           "cross_entropy", "reduction must be mean, sum or none, got \"", std::string(o.reduction),
           "\"");
  OX_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1, Value, "cross_entropy",
           "label_smoothing must be in [0, 1], got ", o.label_smoothing);
  const FlatTargets f = flatten_classes(logits, target);
  const int64_t classes = f.logits.size(1);
  if (o.weight.defined()) {
    OX_CHECK(o.weight.shape() == Shape{classes}, Shape, "cross_entropy", "class weights of shape ",
             o.weight.shape(), " for ", classes, " classes");
    OX_CHECK(o.weight.dtype() == logits.dtype(), DType, "cross_entropy", "class weights are ",
             o.weight.dtype(), ", logits ", logits.dtype());
    ops::common_device("cross_entropy", {&logits, &o.weight});
  }
  const Tensor weight = dense(o.weight);
  const int64_t rows = f.target.numel();
  Tensor loss = empty({rows}, {.dtype = logits.dtype(), .device = logits.device()});
  Tensor row_weight = empty({rows}, {.dtype = logits.dtype(), .device = logits.device()});
  if (rows > 0) {
    OX_CHECK(classes > 0, Shape, "cross_entropy", "logits have no classes");
    static const CheckSite site =
        check_site("cross_entropy",
                   "target {value} at position {position} is out of bounds for {bound} classes");
    backend_for(logits.device(), "cross_entropy")
        .cross_entropy(loss.impl()->array(), row_weight.impl()->array(), f.logits.impl()->array(),
                       f.target.impl()->array(), optional_array(weight, logits.device()),
                       o.ignore_index, o.label_smoothing, site);
  }
  const Tensor total_weight = sum(row_weight);
  if (o.reduction == "none") return {loss.view(f.target_shape), total_weight};
  if (o.reduction == "sum") return {sum(loss), total_weight};
  return {sum(loss) / total_weight, total_weight};
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, logits})
    return cross_entropy(cast(logits), target, o);
  return cross_entropy_forward(logits, target, o).loss;
}

Tensor cross_entropy_backward(const Tensor& grad_out, const Tensor& logits, const Tensor& target,
                              const Tensor& total_weight, const CrossEntropyOptions& o) {
  const FlatTargets f = flatten_classes(logits, target);
  const int64_t rows = f.target.numel();
  ops::impl_of(grad_out, "cross_entropy_backward");
  // Each row's share of d(loss): the upstream gradient, divided by the weight total for mean.
  Tensor per_row;
  if (o.reduction == "none") {
    OX_CHECK(grad_out.shape() == f.target_shape, Shape, "cross_entropy_backward",
             "gradient of shape ", grad_out.shape(), " for a loss of shape ", f.target_shape);
    per_row = grad_out.to(logits.dtype()).contiguous().view({rows});
  } else {
    OX_CHECK(grad_out.numel() == 1, Shape, "cross_entropy_backward",
             "a reduced loss takes a gradient of one element, got shape ", grad_out.shape());
    Tensor g = grad_out.to(logits.dtype()).reshape({});
    if (o.reduction == "mean") g = g / total_weight;
    per_row = g.expand({rows}).contiguous();
  }
  const Tensor weight = dense(o.weight);
  Tensor grad = empty_like(f.logits);
  if (grad.numel() > 0)
    backend_for(logits.device(), "cross_entropy_backward")
        .cross_entropy_backward(grad.impl()->array(), per_row.impl()->array(),
                                f.logits.impl()->array(), f.target.impl()->array(),
                                optional_array(weight, logits.device()), o.ignore_index,
                                o.label_smoothing);
  // Back to the logits' layout: [N, d1.., C] rows to [N, C, d1..].
  const Shape& ls = logits.shape();
  if (ls.size() > 2) {
    Shape moved_shape = ls;
    moved_shape.erase(moved_shape.begin() + 1);
    moved_shape.push_back(ls[1]);
    Dims order;
    order.push_back(0);
    order.push_back(static_cast<int64_t>(ls.size()) - 1);
    for (int64_t i = 1; i + 1 < static_cast<int64_t>(ls.size()); ++i) order.push_back(i);
    return grad.view(moved_shape).permute(order).contiguous();
  }
  return grad.view(ls);
}

DropoutResult dropout_forward(const Tensor& x, double p, bool train, Generator* gen) {
  const TensorImpl& xi = ops::impl_of(x, "dropout");
  OX_CHECK(p >= 0 && p <= 1, Value, "dropout", "probability must be in [0, 1], got ", p);
  OX_CHECK(is_floating(xi.dtype()), DType, "dropout", "needs a floating tensor, got ", xi.dtype());
  if (!train || p == 0) return {x, Tensor()};
  // The mask comes from the generator's Philox stream: reproducible under ox::manual_seed.
  const Tensor keep =
      bernoulli(x.shape(), 1.0 - p, {.dtype = xi.dtype(), .device = xi.device()}, gen);
  const Tensor mask = p == 1 ? keep : keep * (1.0 / (1.0 - p));
  return {x * mask, mask};
}

Tensor dropout(const Tensor& x, double p, bool train, Generator* gen) {
  return dropout_forward(x, p, train, gen).out;
}

}  // namespace ox
