// A user-defined autograd function with its own backward, as torch.autograd.Function: useful
// when the chain rule through the built-in ops would be slow, unstable or use much memory.
//
// Swish(x, beta) = x * sigmoid(beta * x). Its forward saves only x (and beta, a plain number),
// and its backward computes the derivative in closed form:
//   d/dx = s + beta * x * s * (1 - s),  s = sigmoid(beta * x).
// The example checks it three ways: against the same formula written with built-in ops,
// against their autograd gradient, and against finite differences (ox::autograd::gradcheck).
//
// Exits 1 if a check fails.

#include <oxmera/oxmera.h>

#include <cstdio>
#include <vector>

using ox::autograd::AutogradContext;

struct Swish : ox::autograd::Function<Swish> {
  // forward runs with recording off: whatever it computes is not part of the graph. Its
  // arguments after ctx are those given to Swish::apply; non-tensors (beta) pass through.
  static ox::Tensor forward(AutogradContext* ctx, const ox::Tensor& x, double beta) {
    ctx->save_for_backward({x});     // tensors: checked against later in-place changes
    ctx->saved_data["beta"] = beta;  // anything else, by name
    return x * ox::sigmoid(beta * x);
  }

  // One incoming gradient per output; one gradient per forward argument (an undefined Tensor
  // for a non-tensor argument such as beta).
  static std::vector<ox::Tensor> backward(AutogradContext* ctx, std::vector<ox::Tensor> grads) {
    const ox::Tensor x = ctx->get_saved_variables()[0];
    const double beta = ctx->saved_data["beta"].to_double();
    const ox::Tensor s = ox::sigmoid(beta * x);
    const ox::Tensor dx = s + beta * x * s * (1 - s);
    return {grads[0] * dx, ox::Tensor()};
  }
};

// The same function from built-in ops; autograd differentiates it through the recorded graph.
ox::Tensor swish_reference(const ox::Tensor& x, double beta) { return x * ox::sigmoid(beta * x); }

double max_abs_diff(const ox::Tensor& a, const ox::Tensor& b) {
  return ox::max(ox::abs(a - b)).item<double>();
}

int main() {
  ox::manual_seed(0);
  bool ok = true;
  const auto check = [&](bool condition, const char* what, double value) {
    std::printf("%s: %s (%.3g)\n", condition ? "ok    " : "FAILED", what, value);
    ok = ok && condition;
  };
  const double beta = 1.5;

  // Two leaves with the same values: one goes through Swish, one through the built-in ops.
  ox::Tensor x = ox::randn({1000}).requires_grad_();
  ox::Tensor x_ref = x.detach().clone().requires_grad_();

  const ox::Tensor y = Swish::apply(x, beta);
  const ox::Tensor y_ref = swish_reference(x_ref, beta);
  std::printf("y has a grad_fn (the Swish node): %s\n", y.grad_fn() ? "yes" : "no");
  check(max_abs_diff(y, y_ref) < 1e-6, "forward matches the built-in ops, max |diff|",
        max_abs_diff(y, y_ref));

  // A non-trivial upstream gradient, so backward is exercised beyond ones.
  const ox::Tensor weights = ox::randn({1000});
  (y * weights).sum().backward();
  (y_ref * weights).sum().backward();
  check(max_abs_diff(x.grad(), x_ref.grad()) < 1e-5,
        "backward matches autograd through the built-in ops, max |diff|",
        max_abs_diff(x.grad(), x_ref.grad()));

  // Finite differences in f64: gradcheck compares the Jacobian backward gives with central
  // differences of forward, entry by entry.
  const ox::Tensor x64 = ox::randn({8}, {.dtype = ox::kF64}).requires_grad_();
  const ox::autograd::GradcheckResult result = ox::autograd::gradcheck(
      [beta](const std::vector<ox::Tensor>& inputs) {
        return std::vector<ox::Tensor>{Swish::apply(inputs[0], beta)};
      },
      {x64});
  check(bool(result), "gradcheck against central differences", 0.0);
  if (!result) std::printf("%s\n", result.report.c_str());

  // beta = 1 is SiLU, which oxmera has built in.
  const ox::Tensor z = ox::randn({100});
  check(max_abs_diff(Swish::apply(z, 1.0), ox::silu(z)) < 1e-6, "beta = 1 gives ox::silu",
        max_abs_diff(Swish::apply(z, 1.0), ox::silu(z)));
  return ok ? 0 : 1;
}
