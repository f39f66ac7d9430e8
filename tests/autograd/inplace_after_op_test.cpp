// In-place writes after an op, as PyTorch allows them: for each op of
// tests/autograd/fixtures/inplace_after_op.json (scripts/make-autograd-inplace-fixture.py), the
// graph y = op(x...) followed by an in-place write into y or into one input, then backward.
// Where PyTorch's backward runs, oxmera's must run too and give PyTorch's gradients: an op saves
// for backward only what the gradients of its inputs that require grad read, as PyTorch's
// derivatives.yaml does (LibTorch programs write `x.div(2).exp_()`). Where PyTorch refuses,
// oxmera may refuse or not, but a result must still be right.
//
// One exception, on purpose: cross_entropy keeps the logits for its fused backward instead of
// the log-probabilities PyTorch saves (one [N, C] tensor less per training step, the largest of
// a language model's), so an in-place write into the logits after the loss is refused.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_paths.h"
#include "test_util.h"

namespace {

using ox::Tensor;
namespace F = ox::nn::functional;
using Op = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor idx(std::vector<int64_t> v, ox::Shape shape) { return ox::tensor(v, shape); }

// The fixture's ops, as oxmera spells them (the first output of ops with several).
const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> table = {
      {"exp", [](auto& x) { return ox::exp(x[0]); }},
      {"exp2", [](auto& x) { return ox::exp2(x[0]); }},
      {"expm1", [](auto& x) { return ox::expm1(x[0]); }},
      {"log", [](auto& x) { return ox::log(x[0]); }},
      {"log2", [](auto& x) { return ox::log2(x[0]); }},
      {"log10", [](auto& x) { return ox::log10(x[0]); }},
      {"log1p", [](auto& x) { return ox::log1p(x[0]); }},
      {"sqrt", [](auto& x) { return ox::sqrt(x[0]); }},
      {"rsqrt", [](auto& x) { return ox::rsqrt(x[0]); }},
      {"reciprocal", [](auto& x) { return ox::reciprocal(x[0]); }},
      {"square", [](auto& x) { return ox::square(x[0]); }},
      {"abs", [](auto& x) { return ox::abs(x[0]); }},
      {"neg", [](auto& x) { return ox::neg(x[0]); }},
      {"sign", [](auto& x) { return ox::sign(x[0]); }},
      {"floor", [](auto& x) { return ox::floor(x[0]); }},
      {"sin", [](auto& x) { return ox::sin(x[0]); }},
      {"cos", [](auto& x) { return ox::cos(x[0]); }},
      {"tan", [](auto& x) { return ox::tan(x[0]); }},
      {"asin", [](auto& x) { return ox::asin(x[0]); }},
      {"acos", [](auto& x) { return ox::acos(x[0]); }},
      {"atan", [](auto& x) { return ox::atan(x[0]); }},
      {"sinh", [](auto& x) { return ox::sinh(x[0]); }},
      {"cosh", [](auto& x) { return ox::cosh(x[0]); }},
      {"tanh", [](auto& x) { return ox::tanh(x[0]); }},
      {"sigmoid", [](auto& x) { return ox::sigmoid(x[0]); }},
      {"erf", [](auto& x) { return ox::erf(x[0]); }},
      {"relu", [](auto& x) { return ox::relu(x[0] - 0.6); }},
      {"gelu", [](auto& x) { return ox::gelu(x[0]); }},
      {"silu", [](auto& x) { return ox::silu(x[0]); }},
      {"softplus", [](auto& x) { return ox::softplus(x[0]); }},
      {"elu", [](auto& x) { return ox::elu(x[0] - 0.6); }},
      {"leaky_relu", [](auto& x) { return ox::leaky_relu(x[0] - 0.6, 0.1); }},
      {"mish", [](auto& x) { return ox::mish(x[0]); }},
      {"logsigmoid", [](auto& x) { return ox::logsigmoid(x[0]); }},
      {"clamp", [](auto& x) { return ox::clamp(x[0], 0.4, 0.8); }},
      {"add_scalar", [](auto& x) { return x[0] + 2; }},
      {"sub_scalar", [](auto& x) { return x[0] - 2; }},
      {"mul_scalar", [](auto& x) { return x[0] * 2; }},
      {"div_scalar", [](auto& x) { return x[0] / 2; }},
      {"pow_scalar", [](auto& x) { return ox::pow(x[0], 3); }},
      {"add", [](auto& x) { return x[0] + x[1]; }},
      {"sub", [](auto& x) { return x[0] - x[1]; }},
      {"mul", [](auto& x) { return x[0] * x[1]; }},
      {"div", [](auto& x) { return x[0] / x[1]; }},
      {"pow", [](auto& x) { return ox::pow(x[0], x[1]); }},
      {"atan2", [](auto& x) { return ox::atan2(x[0], x[1]); }},
      {"maximum", [](auto& x) { return ox::maximum(x[0], x[1]); }},
      {"minimum", [](auto& x) { return ox::minimum(x[0], x[1]); }},
      {"hypot", [](auto& x) { return ox::hypot(x[0], x[1]); }},
      {"logaddexp", [](auto& x) { return ox::logaddexp(x[0], x[1]); }},
      {"sum", [](auto& x) { return ox::sum(x[0], {1}); }},
      {"mean", [](auto& x) { return ox::mean(x[0], {1}); }},
      {"prod", [](auto& x) { return ox::prod(x[0], 1); }},
      {"amax", [](auto& x) { return ox::amax(x[0], {1}); }},
      {"max_dim", [](auto& x) { return std::get<0>(ox::max(x[0], 1)); }},
      {"norm", [](auto& x) { return ox::linalg::vector_norm(x[0], 2, {1}); }},
      {"std", [](auto& x) { return ox::std(x[0], {1}); }},
      {"var", [](auto& x) { return ox::var(x[0], {1}); }},
      {"logsumexp", [](auto& x) { return ox::logsumexp(x[0], {1}); }},
      {"cumsum", [](auto& x) { return ox::cumsum(x[0], 1); }},
      {"cumprod", [](auto& x) { return ox::cumprod(x[0], 1); }},
      {"softmax", [](auto& x) { return ox::softmax(x[0], 1); }},
      {"log_softmax", [](auto& x) { return ox::log_softmax(x[0], 1); }},
      {"sort", [](auto& x) { return std::get<0>(ox::sort(x[0], 1)); }},
      {"topk", [](auto& x) { return std::get<0>(ox::topk(x[0], 2, 1)); }},
      {"matmul", [](auto& x) { return ox::matmul(x[0], x[1]); }},
      {"mm", [](auto& x) { return ox::mm(x[0], x[1]); }},
      {"bmm", [](auto& x) { return ox::bmm(x[0], x[1]); }},
      {"addmm", [](auto& x) { return ox::addmm(x[0], x[1], x[2]); }},
      {"mv", [](auto& x) { return ox::mv(x[0], x[1]); }},
      {"dot", [](auto& x) { return ox::dot(x[0], x[1]); }},
      {"linear", [](auto& x) { return F::linear(x[0], x[1], x[2]); }},
      {"cat",
       [](auto& x) {
         return ox::cat({x[0], x[1]}, 0);
       }},
      {"stack",
       [](auto& x) {
         return ox::stack({x[0], x[1]}, 0);
       }},
      {"gather",
       [](auto& x) {
         return ox::gather(x[0], 1, idx({2, 0, 1, 1}, {2, 2}));
       }},
      {"index_select",
       [](auto& x) {
         return ox::index_select(x[0], 1, idx({2, 0, 2}, {3}));
       }},
      {"where", [](auto& x) { return ox::where(x[0] > 0.6, x[0], x[1]); }},
      {"masked_fill", [](auto& x) { return ox::masked_fill(x[0], x[0] > 0.6, 0.5); }},
      {"embedding",
       [](auto& x) {
         return ox::embedding(x[0], idx({3, 0, 3}, {3}));
       }},
      {"layer_norm", [](auto& x) { return ox::layer_norm(x[0], {3}, x[1], x[2]); }},
      {"cross_entropy",
       [](auto& x) {
         return ox::cross_entropy(x[0], idx({2, 0}, {2}));
       }},
      {"mse_loss", [](auto& x) { return ox::nn::functional::mse_loss(x[0], x[1]); }},
      {"conv1d", [](auto& x) { return ox::conv1d(x[0], x[1], x[2]); }},
      {"conv2d", [](auto& x) { return ox::conv2d(x[0], x[1], x[2]); }},
      {"max_pool2d",
       [](auto& x) {
         return ox::max_pool2d(x[0], {2, 2});
       }},
      {"avg_pool2d",
       [](auto& x) {
         return ox::avg_pool2d(x[0], {2, 2});
       }},
      {"adaptive_avg_pool2d",
       [](auto& x) {
         return ox::adaptive_avg_pool2d(x[0], {2, 2});
       }},
  };
  return table;
}

// Input i of an op, as the fixture script makes it.
Tensor input(int64_t i, const ox::Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    v[size_t(j)] = 0.3 + 0.65 * double((7 * j + 3 * i) % 11) / 11 + 0.001 * double(j);
  return ox::tensor(v, shape);
}

nlohmann::json fixture() {
  std::ifstream in(std::filesystem::path(oxtest::kSourceDir) / "tests" / "autograd" / "fixtures" /
                   "inplace_after_op.json");
  return nlohmann::json::parse(in);
}

TEST(InplaceAfterOp, WhatPyTorchAllowsWorksWithItsGradients) {
  const nlohmann::json doc = fixture();
  ASSERT_EQ(doc["ops"].size(), ops().size()) << "an op of the fixture has no entry here";
  for (const auto& op : doc["ops"]) {
    const std::string name = op["name"];
    ASSERT_TRUE(ops().count(name)) << name;
    for (const auto& [which, want] : op["cases"].items()) {
      SCOPED_TRACE(name + ", write into " + which);
      std::vector<Tensor> leaves, xs;
      for (const auto& shape : op["shapes"]) {
        leaves.push_back(input(int64_t(leaves.size()), shape.get<ox::Shape>()).requires_grad_());
        xs.push_back(leaves.back().clone());
      }
      Tensor y = ops().at(name)(xs);
      if (which == "out") y.mul_(2);
      if (which.rfind("in", 0) == 0) xs[size_t(std::stoi(which.substr(2)))].mul_(2);
      const bool kept_on_purpose = name == "cross_entropy" && which == "in0";
      bool ran = true;
      try {
        y.sum().backward();
      } catch (const ox::Error& e) {
        ran = false;
        if (want["ok"] && !kept_on_purpose)
          ADD_FAILURE() << "PyTorch's backward runs; oxmera's threw: " << e.what();
      }
      if (!ran || !want["ok"]) continue;  // where PyTorch refuses, no gradients to compare
      for (size_t i = 0; i < leaves.size(); ++i) {
        const std::vector<double> got = leaves[i].grad().reshape({-1}).to_vector<double>();
        const std::vector<double> expected = want["grads"][i];
        ASSERT_EQ(got.size(), expected.size()) << "input " << i;
        for (size_t j = 0; j < got.size(); ++j)
          EXPECT_NEAR(got[j], expected[j], 1e-12 * (1 + std::abs(expected[j])))
              << "input " << i << " element " << j;
      }
    }
  }
}

}  // namespace
