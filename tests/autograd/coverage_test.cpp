// Every op in ox::autograd::differentiable_ops() must appear in a graph that passed gradcheck
// in the rule tests, and every node those graphs hold must be registered. The check runs after
// all tests, when OXMERA_GRAD_COVERAGE=1 (the ctest `autograd_rule_coverage` runs every rule
// test in one process with it set); filtered runs skip it.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "autograd/grad_check.h"

namespace {

std::string joined(const std::set<std::string>& names) {
  std::ostringstream s;
  for (const std::string& n : names) s << "\n  " << n;
  return s.str();
}

class CoverageCheck : public testing::Environment {
 public:
  void TearDown() override {
    const char* flag = std::getenv("OXMERA_GRAD_COVERAGE");
    if (!flag || std::string(flag) != "1") return;
    const std::set<std::string>& checked = ox_test::gradchecked_nodes();
    std::set<std::string> registered, unchecked, unregistered;
    for (const std::string& op : ox::autograd::differentiable_ops()) {
      registered.insert(op);
      if (!checked.count(op)) unchecked.insert(op);
    }
    for (const std::string& node : checked)
      if (!registered.count(node)) unregistered.insert(node);
    EXPECT_TRUE(unchecked.empty())
        << unchecked.size()
        << " differentiable ops have no passing gradcheck:" << joined(unchecked);
    EXPECT_TRUE(unregistered.empty())
        << "gradchecked graphs hold nodes missing from ox::autograd::differentiable_ops():"
        << joined(unregistered);
  }
};

const testing::Environment* const kCoverage = testing::AddGlobalTestEnvironment(new CoverageCheck);

// The registry itself: sorted, without duplicates, and naming nodes as grad_fn() does.
TEST(AutogradCoverage, RegistryIsSortedAndNamesNodes) {
  const std::vector<std::string>& ops = ox::autograd::differentiable_ops();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1], ops[i]);
  const ox::Tensor x = ox::ones({2}, ox::kF64).requires_grad_();
  const std::string exp_node = ox::exp(x).grad_fn()->name();
  EXPECT_EQ(exp_node, "ExpBackward");
  EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), exp_node));
}

}  // namespace
