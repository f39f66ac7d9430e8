#pragma once
// gradcheck as a test expectation, shared by the rule tests. The node names in the graph of
// every function that passes are collected, so coverage_test.cpp can tell which registered
// differentiable ops no test has checked.

#include <oxmera/oxmera.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace ox_test {

using GradFn = std::function<ox::Tensor(const std::vector<ox::Tensor>&)>;

// EXPECTs gradcheck (and, when twice, gradgradcheck) of fn at inputs to pass.
void expect_gradcheck(const std::string& what, const GradFn& fn,
                      const std::vector<ox::Tensor>& inputs, bool twice = false,
                      ox::autograd::GradcheckOptions options = {});

// The node names (grad_fn()->name()) of the graphs that passed expect_gradcheck so far.
const std::set<std::string>& gradchecked_nodes();

// f64 values in [lo, hi], reproducible from the seed.
ox::Tensor values(const ox::Shape& shape, double lo, double hi, uint64_t seed);
// A copy of t's values as a leaf that requires grad: contiguous; with the last two dims stored
// transposed; or as every other element along the last dim of a wider tensor.
ox::Tensor leaf(const ox::Tensor& t);
ox::Tensor transposed_leaf(const ox::Tensor& t);
ox::Tensor sliced_leaf(const ox::Tensor& t);

}  // namespace ox_test
