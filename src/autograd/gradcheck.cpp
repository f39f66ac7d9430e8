// gradcheck and gradgradcheck: autograd's Jacobian against central differences, in f64.

#include <cmath>
#include <sstream>

#include "autograd/record.h"
#include "oxmera/ops.h"

namespace ox::autograd {

namespace {

// A 0-d view of logical element k of t (t's own storage, no history).
Tensor element_view(const Tensor& t, int64_t k) {
  const Layout& l = t.layout();
  int64_t offset = l.offset;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = l.shape[size_t(d)];
    offset += (k % size) * l.strides[size_t(d)];
    k /= size;
  }
  return t.detach().as_strided({}, {}, offset);
}

// The floating outputs of fn, flattened to f64 values.
std::vector<std::vector<double>> output_values(const std::vector<Tensor>& outs) {
  std::vector<std::vector<double>> v;
  for (const Tensor& o : outs) v.push_back(o.to_vector<double>());
  return v;
}

std::vector<Tensor> floating_outputs(const DifferentiableFn& fn, const std::vector<Tensor>& in) {
  std::vector<Tensor> outs;
  for (const Tensor& o : fn(in))
    if (o.defined() && is_floating(o.dtype())) outs.push_back(o);
  return outs;
}

}  // namespace

GradcheckResult gradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options) {
  std::vector<size_t> checked;  // inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    OX_CHECK(x.dtype() == kF64, DType, "gradcheck", "input ", i, " is ", x.dtype(),
             "; central differences need f64 inputs");
    OX_CHECK(!has_internal_overlap(x.layout()), Value, "gradcheck", "input ", i, " of shape ",
             x.shape(),
             " has elements sharing memory (stride 0); pass a contiguous tensor and "
             "expand it inside fn");
    checked.push_back(i);
  }
  OX_CHECK(!checked.empty(), Value, "gradcheck", "no input requires grad");
  std::vector<Tensor> wrt;
  for (size_t i : checked) wrt.push_back(inputs[i]);

  // Analytical: one backward per output element, each giving a row of the Jacobian.
  const std::vector<Tensor> outs = floating_outputs(fn, inputs);
  // analytical[o][j][c][k]: d outs[o][j] / d wrt[c][k]
  std::vector<std::vector<std::vector<std::vector<double>>>> analytical(outs.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    const int64_t n = outs[o].numel();
    analytical[o].resize(size_t(n));
    for (int64_t j = 0; j < n; ++j) {
      std::vector<std::vector<double>>& row = analytical[o][size_t(j)];
      if (!outs[o].requires_grad()) {
        for (const Tensor& x : wrt) row.emplace_back(size_t(x.numel()), 0.0);
        continue;
      }
      Tensor seed =
          ox::zeros(outs[o].shape(), {.dtype = outs[o].dtype(), .device = outs[o].device()});
      element_view(seed, j).fill_(1);
      const std::vector<Tensor> g = grad({outs[o]}, wrt, {seed}, /*retain_graph=*/true,
                                         /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t c = 0; c < wrt.size(); ++c)
        row.push_back(g[c].defined() ? g[c].to_vector<double>()
                                     : std::vector<double>(size_t(wrt[c].numel()), 0.0));
    }
  }

  // Numerical: perturb each element of each input in place, both ways.
  GradcheckResult result;
  double worst = 0;
  int64_t failures = 0;
  std::ostringstream report;
  for (size_t c = 0; c < wrt.size(); ++c) {
    for (int64_t k = 0; k < wrt[c].numel(); ++k) {
      Tensor element = element_view(wrt[c], k);
      const double v = element.item<double>();
      std::vector<std::vector<double>> plus, minus;
      // fn runs with grad mode as the caller has it: gradgradcheck's fn differentiates inside.
      element.fill_(v + options.eps);
      plus = output_values(floating_outputs(fn, inputs));
      element.fill_(v - options.eps);
      minus = output_values(floating_outputs(fn, inputs));
      element.fill_(v);
      OX_CHECK(plus.size() == outs.size(), Value, "gradcheck",
               "fn returned a different number of floating outputs on perturbed inputs");
      for (size_t o = 0; o < outs.size(); ++o)
        for (size_t j = 0; j < plus[o].size(); ++j) {
          const double numerical = (plus[o][j] - minus[o][j]) / (2 * options.eps);
          const double a = analytical[o][j][c][size_t(k)];
          const double tol = options.atol + options.rtol * std::fabs(numerical);
          const double diff = std::fabs(a - numerical);
          if (!(diff <= tol)) {  // NaN fails too
            ++failures;
            const double ratio = std::isnan(diff) ? INFINITY : diff / tol;
            if (failures == 1 || ratio > worst) {
              worst = ratio;
              report.str("");
              report << "gradcheck: d output[" << o << "][" << j << "] / d input[" << checked[c]
                     << "][" << k << "]: analytical " << a << ", numerical " << numerical
                     << " (difference " << diff << " > tolerance " << tol << ")";
            }
          }
        }
    }
  }
  if (failures > 0) {
    result.ok = false;
    report << "; " << failures << " Jacobian entries out of tolerance";
    result.report = report.str();
  }
  return result;
}

GradcheckResult gradgradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                              GradcheckOptions options) {
  const std::vector<Tensor> outs = floating_outputs(fn, inputs);
  std::vector<size_t> diff;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff.push_back(i);
  Generator gen(20261201);
  std::vector<Tensor> all = inputs;
  for (const Tensor& o : outs)
    all.push_back(
        ox::randn(o.shape(), {.dtype = kF64, .device = o.device()}, &gen).requires_grad_());
  const size_t n_inputs = inputs.size();
  const DifferentiableFn first_order = [&fn, n_inputs, diff](const std::vector<Tensor>& args) {
    const std::vector<Tensor> in(args.begin(), args.begin() + int64_t(n_inputs));
    const std::vector<Tensor> cotangents(args.begin() + int64_t(n_inputs), args.end());
    std::vector<Tensor> outs = floating_outputs(fn, in), used, seeds;
    for (size_t o = 0; o < outs.size(); ++o)
      if (outs[o].requires_grad()) used.push_back(outs[o]), seeds.push_back(cotangents[o]);
    std::vector<Tensor> wrt;
    for (size_t i : diff) wrt.push_back(in[i]);
    if (used.empty()) return std::vector<Tensor>{};
    std::vector<Tensor> g = grad(used, wrt, seeds, /*retain_graph=*/true, /*create_graph=*/true,
                                 /*allow_unused=*/true);
    for (size_t c = 0; c < g.size(); ++c)
      if (!g[c].defined())
        g[c] = ox::zeros(wrt[c].shape(), {.dtype = kF64, .device = wrt[c].device()});
    return g;
  };
  return gradcheck(first_order, all, options);
}

}  // namespace ox::autograd
