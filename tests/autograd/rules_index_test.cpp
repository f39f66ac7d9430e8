// vjp rules of the indexing ops (gather, index_select, take, embedding, scatter and its
// reductions, index_add, index_put, advanced indexing, masked_select) against central differences
// (ox::autograd::gradcheck, f64) on contiguous and strided inputs, gradgradcheck for the reads,
// hand-derived gradients for repeated indices, padding_idx and reduction ties, and the in-place
// forms (recorded out of place and written back).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <functional>
#include <string>
#include <vector>

#include "autograd/grad_check.h"
#include "test_util.h"

namespace {

using ox::Ellipsis;
using ox::None;
using ox::Slice;
using ox::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;
using ox_test::leaf;
using ox_test::sliced_leaf;
using ox_test::transposed_leaf;
using ox_test::values;

// An i64 index tensor.
Tensor idx(const std::vector<int64_t>& v, const ox::Shape& shape) { return ox::tensor(v, shape); }
Tensor idx(const std::vector<int64_t>& v) { return ox::tensor(v); }

void check(const std::string& what, const Fn& fn, const Inputs& inputs, bool twice = false) {
  ox_test::expect_gradcheck(what, fn, inputs, twice);
}

// check() on a contiguous, a transposed and a sliced copy of `base` (the first input).
void check_layouts(const std::string& what, const Fn& fn, const Tensor& base, Inputs rest = {},
                   bool twice = false) {
  auto with = [&](const Tensor& first) {
    Inputs in{first};
    for (const Tensor& t : rest) in.push_back(t);
    return in;
  };
  check(what + " contiguous", fn, with(leaf(base)), twice);
  check(what + " transposed", fn, with(transposed_leaf(base)), twice);
  check(what + " sliced", fn, with(sliced_leaf(base)), twice);
}

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  const std::vector<double> g = got.to(ox::kF64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << what << " at " << i;
}

// ---- Reads -----------------------------------------------------------------------------------

TEST(AutogradRulesIndex, Gather) {
  const Tensor base = values({3, 4}, -2, 2, 1);
  const Tensor i1 = idx({0, 3, 3, 1, 2, 2, 0, 0, 1, 3, 3, 3}, {3, 4});  // repeats along dim 1
  check_layouts(
      "gather dim 1", [&](const Inputs& in) { return ox::gather(in[0], 1, i1); }, base, {}, true);
  const Tensor i0 = idx({2, 2, 0, 1, 1, 1, 2, 0}, {2, 4});
  check_layouts(
      "gather dim -2", [&](const Inputs& in) { return ox::gather(in[0], -2, i0); }, base, {}, true);
  const Tensor small = idx({1, 1, 0, 2}, {2, 2});  // smaller than x in the other dim
  check(
      "gather smaller index", [&](const Inputs& in) { return ox::gather(in[0], 0, small); },
      {leaf(base)}, true);
  const Tensor none = idx({}, {3, 0});
  check("gather empty index", [&](const Inputs& in) { return ox::gather(in[0], 1, none); },
        {leaf(base)});
}

TEST(AutogradRulesIndex, GatherDuplicatesAccumulate) {
  const Tensor x = ox::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {.dtype = ox::kF64})
                       .reshape({2, 3})
                       .requires_grad_();
  const Tensor out = ox::gather(x, 1, idx({0, 0, 2, 1, 1, 1}, {2, 3}));
  (out * ox::tensor({1.0, 10.0, 100.0, 1.0, 2.0, 4.0}, {.dtype = ox::kF64}).reshape({2, 3}))
      .sum()
      .backward();
  expect_values(x.grad(), {11, 0, 100, 0, 7, 0}, "gather grad");
}

TEST(AutogradRulesIndex, IndexSelect) {
  const Tensor base = values({3, 4}, -2, 2, 2);
  const Tensor rep = idx({2, 0, 2, 2, 1});
  check_layouts(
      "index_select dim 0", [&](const Inputs& in) { return ox::index_select(in[0], 0, rep); }, base,
      {}, true);
  const Tensor cols = ox::tensor({3, 3, 0}, {.dtype = ox::kI32});
  check_layouts(
      "index_select dim -1", [&](const Inputs& in) { return ox::index_select(in[0], -1, cols); },
      base, {}, true);
  const Tensor one = idx({1}).reshape({});
  check(
      "index_select 0-d index", [&](const Inputs& in) { return ox::index_select(in[0], 1, one); },
      {leaf(base)}, true);
  check("index_select empty index",
        [&](const Inputs& in) { return ox::index_select(in[0], 0, idx({}, {0})); }, {leaf(base)});
  // index_select's gradient is an index_add: repeated rows add up.
  const Tensor x = leaf(ox::ones({3, 2}, {.dtype = ox::kF64}));
  ox::index_select(x, 0, rep).sum().backward();
  expect_values(x.grad(), {1, 1, 1, 1, 3, 3}, "index_select grad");
}

TEST(AutogradRulesIndex, Take) {
  const Tensor base = values({3, 4}, -2, 2, 3);
  const Tensor i = idx({0, -1, 5, 5, -12, 11}, {2, 3});  // negative and repeated
  check_layouts(
      "take", [&](const Inputs& in) { return ox::take(in[0], i); }, base, {}, true);
  check("take 0-d index", [&](const Inputs& in) { return ox::take(in[0], idx({-2}).reshape({})); },
        {leaf(base)});
  check("take empty index",
        [&](const Inputs& in) {
          return ox::take(in[0], idx({}, {2, 0}));
        },
        {leaf(base)});
  const Tensor x = leaf(ox::zeros({2, 2}, {.dtype = ox::kF64}));
  ox::take(x, idx({3, -1, 0})).sum().backward();
  expect_values(x.grad(), {1, 0, 0, 2}, "take grad");
}

TEST(AutogradRulesIndex, Embedding) {
  const Tensor base = values({5, 3}, -1, 1, 4);
  const Tensor ids = idx({1, 4, 1, 0, 2, 1}, {2, 3});
  check_layouts(
      "embedding", [&](const Inputs& in) { return ox::embedding(in[0], ids); }, base, {}, true);
  // padding_idx (a row not looked up here) changes nothing else; the padding row itself gets no
  // gradient by design (checked by hand below), which central differences cannot agree with.
  check_layouts(
      "embedding padding_idx", [&](const Inputs& in) { return ox::embedding(in[0], ids, 3); },
      base);
  check("embedding empty",
        [&](const Inputs& in) {
          return ox::embedding(in[0], idx({}, {0, 2}));
        },
        {leaf(base)});
}

TEST(AutogradRulesIndex, EmbeddingPaddingGetsNoGradient) {
  for (const int64_t pad : {1, -3}) {  // -3 is row 1 of 4
    const Tensor w = leaf(values({4, 2}, -1, 1, 5));
    const Tensor out = ox::embedding(w, idx({1, 2, 2, 0}, {2, 2}), pad);
    const Tensor cot = ox::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}, {.dtype = ox::kF64})
                           .reshape({2, 2, 2});
    (out * cot).sum().backward();
    expect_values(w.grad(), {7, 8, 0, 0, 8, 10, 0, 0}, "embedding padding " + std::to_string(pad));
  }
  // Without padding_idx, row 1 gets its gradient.
  const Tensor w = leaf(values({4, 2}, -1, 1, 5));
  ox::embedding(w, idx({1, 1})).sum().backward();
  expect_values(w.grad(), {0, 0, 2, 2, 0, 0, 0, 0}, "embedding no padding");
}

TEST(AutogradRulesIndex, AdvancedReads) {
  const Tensor base = values({3, 4, 5}, -2, 2, 6);
  const Tensor rows = idx({2, 0, 2});   // repeated
  const Tensor cols = idx({-1, 1, 1});  // negative, repeated
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> reads = {
      {"tensor", [&](const Tensor& x) { return x.index({rows}); }},
      {"two tensors",
       [&](const Tensor& x) {
         return x.index({rows, cols});
       }},
      {"slice, tensors",
       [&](const Tensor& x) {
         return x.index({Slice(), rows, cols});
       }},
      {"separated tensors",
       [&](const Tensor& x) {
         return x.index({rows, Slice(1, 3), cols});
       }},
      {"int, None, ellipsis",
       [&](const Tensor& x) {
         return x.index({1, None, Ellipsis, cols});
       }},
      {"2-d index",
       [&](const Tensor& x) {
         return x.index({Ellipsis, idx({0, 4, 4, 0}, {2, 2})});
       }},
      {"mask", [&](const Tensor& x) { return x.index({ox::gt(base, 0)}); }},
      {"row mask",
       [&](const Tensor& x) {
         return x.index({Slice(), ox::tensor({true, false, true, true})});
       }},
      {"empty", [&](const Tensor& x) { return x.index({idx({}, {0})}); }},
  };
  for (const auto& [name, read] : reads)
    check_layouts(
        "index " + name, [&](const Inputs& in) { return read(in[0]); }, base, {}, name != "empty");
}

TEST(AutogradRulesIndex, AdvancedReadRepeatsAccumulate) {
  const Tensor x = leaf(ox::zeros({3, 2}, {.dtype = ox::kF64}));
  x.index({idx({2, -1, 0}), idx({1, 1, 0})}).sum().backward();
  expect_values(x.grad(), {1, 0, 0, 0, 0, 2}, "x[[2, -1, 0], [1, 1, 0]] grad");
}

TEST(AutogradRulesIndex, MaskedSelect) {
  const Tensor base = values({3, 4}, -2, 2, 7);
  const Tensor mask = ox::gt(base, 0);
  check_layouts(
      "masked_select", [&](const Inputs& in) { return ox::masked_select(in[0], mask); }, base, {},
      true);
  const Tensor row_mask = ox::tensor({true, false, false, true});  // broadcast over rows
  check_layouts(
      "masked_select broadcast mask",
      [&](const Inputs& in) { return ox::masked_select(in[0], row_mask); }, base);
  const Tensor x = leaf(values({1, 4}, -1, 1, 8));  // x broadcast over the mask's rows
  ox::masked_select(x,
                    ox::tensor({true, true, false, true, true, false, false, true}).reshape({2, 4}))
      .sum()
      .backward();
  expect_values(x.grad(), {2, 1, 0, 2}, "masked_select broadcast x");
}

// ---- Writes ----------------------------------------------------------------------------------

TEST(AutogradRulesIndex, Scatter) {
  const Tensor base = values({3, 4}, -2, 2, 9);
  // Unique along dim 0 in each column; src larger than the index (its rest gets no gradient).
  const Tensor i0 = idx({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4});
  const Tensor src = values({3, 5}, -1, 1, 10);
  check_layouts(
      "scatter src", [&](const Inputs& in) { return ox::scatter(in[0], 0, i0, in[1]); }, base,
      {sliced_leaf(src)}, true);
  const Tensor i1 = idx({3, 0, 1, 2, 0, 3}, {3, 2});
  check_layouts("scatter dim -1",
                [&](const Inputs& in) { return ox::scatter(in[0], -1, i1, in[1]); }, base,
                {leaf(values({3, 2}, -1, 1, 11))});
  check_layouts(
      "scatter value", [&](const Inputs& in) { return ox::scatter(in[0], 0, i0, 2.5); }, base);
  check("scatter empty index",
        [&](const Inputs& in) {
          return ox::scatter(in[0], 0, idx({}, {0, 4}), in[1]);
        },
        {leaf(base), leaf(src)});
  // x's gradient is zero where src was written; src's is the gradient it was written to.
  const Tensor x = leaf(ox::zeros({3}, {.dtype = ox::kF64}));
  const Tensor s = leaf(ox::zeros({2}, {.dtype = ox::kF64}));
  (ox::scatter(x, 0, idx({2, 0}), s) * ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF64}))
      .sum()
      .backward();
  expect_values(x.grad(), {0, 2, 0}, "scatter x grad");
  expect_values(s.grad(), {3, 1}, "scatter src grad");
}

TEST(AutogradRulesIndex, ScatterAdd) {
  const Tensor base = values({3, 4}, -2, 2, 12);
  const Tensor i = idx({0, 0, 2, 1, 0, 1, 2, 1, 0, 0, 0, 2}, {3, 4});  // repeats add
  check_layouts(
      "scatter_add", [&](const Inputs& in) { return ox::scatter_add(in[0], 0, i, in[1]); }, base,
      {transposed_leaf(values({3, 4}, -1, 1, 13))}, true);
  check("scatter_add larger src",
        [&](const Inputs& in) {
          return ox::scatter_add(in[0], 1, idx({3, 3}, {1, 2}), in[1]);
        },
        {leaf(base), leaf(values({2, 3}, -1, 1, 14))});
}

TEST(AutogradRulesIndex, ScatterReduce) {
  const Tensor base = values({3, 4}, 0.5, 2, 15);  // away from zero: prod divides
  const Tensor i = idx({0, 0, 2, 1, 0, 1, 2, 1, 2, 0, 0, 2}, {3, 4});
  const Tensor src = values({3, 5}, 0.5, 2.5, 16);
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"})
    for (const bool self : {true, false})
      check_layouts(
          std::string("scatter_reduce ") + reduce + (self ? "" : " exclude self"),
          [&](const Inputs& in) { return ox::scatter_reduce(in[0], 0, i, in[1], reduce, self); },
          base, {sliced_leaf(src)});
}

TEST(AutogradRulesIndex, ScatterReduceTiesSplitEvenly) {
  for (const char* reduce : {"amax", "amin"}) {
    const double t = std::string(reduce) == "amax" ? 3 : -3;
    const Tensor x = leaf(ox::tensor({t, 0.0}, {.dtype = ox::kF64}));
    const Tensor s = leaf(ox::tensor({t, 0.5 * t, t}, {.dtype = ox::kF64}));
    ox::scatter_reduce(x, 0, idx({0, 0, 0}), s, reduce).sum().backward();
    expect_values(x.grad(), {1.0 / 3, 1}, std::string(reduce) + " x grad");
    expect_values(s.grad(), {1.0 / 3, 0, 1.0 / 3}, std::string(reduce) + " src grad");
  }
}

TEST(AutogradRulesIndex, ScatterReduceProdWithZeros) {
  // out[0] = 2 * 0 * 3 = 0, out[1] = 5 * 4: each gradient is the product of the others.
  const Tensor x = leaf(ox::tensor({2.0, 5.0}, {.dtype = ox::kF64}));
  const Tensor s = leaf(ox::tensor({0.0, 3.0, 4.0}, {.dtype = ox::kF64}));
  ox::scatter_reduce(x, 0, idx({0, 0, 1}), s, "prod").sum().backward();
  expect_values(x.grad(), {0, 4}, "prod x grad");
  expect_values(s.grad(), {6, 0, 5}, "prod src grad");
  // Two zeros meeting: every gradient there is zero; a zero x with one zero src too.
  const Tensor x2 = leaf(ox::tensor({0.0, 2.0}, {.dtype = ox::kF64}));
  const Tensor s2 = leaf(ox::tensor({0.0, 3.0, 0.0, 7.0}, {.dtype = ox::kF64}));
  ox::scatter_reduce(x2, 0, idx({0, 0, 1, 1}), s2, "prod").sum().backward();
  expect_values(x2.grad(), {0, 0}, "prod two zeros x grad");
  expect_values(s2.grad(), {0, 0, 14, 0}, "prod two zeros src grad");
  check("prod one zero",
        [&](const Inputs& in) {
          return ox::scatter_reduce(in[0], 0, idx({0, 0, 1}), in[1], "prod");
        },
        {leaf(ox::tensor({2.0, 5.0}, {.dtype = ox::kF64})),
         leaf(ox::tensor({0.0, 3.0, 4.0}, {.dtype = ox::kF64}))});
}

TEST(AutogradRulesIndex, IndexAdd) {
  const Tensor base = values({3, 4}, -2, 2, 17);
  const Tensor i = idx({2, 0, 2});
  check_layouts(
      "index_add dim 1", [&](const Inputs& in) { return ox::index_add(in[0], 1, i, in[1], 2.5); },
      base, {transposed_leaf(values({3, 3}, -1, 1, 18))}, true);
  check_layouts("index_add dim 0",
                [&](const Inputs& in) { return ox::index_add(in[0], 0, i, in[1]); }, base,
                {leaf(values({3, 4}, -1, 1, 19))});
  const Tensor x = leaf(ox::zeros({2}, {.dtype = ox::kF64}));
  const Tensor s = leaf(ox::zeros({3}, {.dtype = ox::kF64}));
  (ox::index_add(x, 0, idx({1, 1, 0}), s, -2) * ox::tensor({3.0, 5.0}, {.dtype = ox::kF64}))
      .sum()
      .backward();
  expect_values(x.grad(), {3, 5}, "index_add x grad");
  expect_values(s.grad(), {-10, -10, -6}, "index_add source grad");
}

TEST(AutogradRulesIndex, IndexPut) {
  const Tensor base = values({3, 4}, -2, 2, 20);
  const Tensor r = idx({2, 0, 1}), c = idx({-1, 1, 1});  // unique pairs
  check_layouts(
      "index_put",
      [&](const Inputs& in) {
        return ox::index_put(in[0], {r, c}, in[1]);
      },
      base, {leaf(values({3}, -1, 1, 21))}, true);
  check_layouts("index_put broadcast values",
                [&](const Inputs& in) { return ox::index_put(in[0], {r}, in[1]); }, base,
                {leaf(values({1, 4}, -1, 1, 22))});
  const Tensor rr = idx({2, 0, 2});  // repeated: accumulate adds
  check_layouts(
      "index_put accumulate",
      [&](const Inputs& in) {
        return ox::index_put(in[0], {Tensor(), rr}, in[1], true);
      },
      base, {leaf(values({3, 3}, -1, 1, 23))}, true);
  check("index_put mask",
        [&](const Inputs& in) { return ox::index_put(in[0], {ox::gt(base, 0)}, in[1]); },
        {leaf(base), leaf(values({1}, -1, 1, 24))});
  const Tensor x = leaf(ox::zeros({3}, {.dtype = ox::kF64}));
  const Tensor v = leaf(ox::zeros({1}, {.dtype = ox::kF64}));
  (ox::index_put(x, {idx({0, 2})}, v) * ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF64}))
      .sum()
      .backward();
  expect_values(x.grad(), {0, 2, 0}, "index_put x grad");
  expect_values(v.grad(), {4}, "index_put broadcast values grad");
}

TEST(AutogradRulesIndex, ZeroDimOperands) {
  const Tensor x = ox::tensor({1.5}, {.dtype = ox::kF64}).reshape({});
  const Tensor s = ox::tensor({-0.5}, {.dtype = ox::kF64}).reshape({});
  const Tensor i = idx({0}).reshape({});
  check(
      "gather 0-d", [&](const Inputs& in) { return ox::gather(in[0], 0, i); }, {leaf(x)}, true);
  check(
      "index_select 0-d", [&](const Inputs& in) { return ox::index_select(in[0], 0, i); },
      {leaf(x)}, true);
  check("take 0-d", [&](const Inputs& in) { return ox::take(in[0], i); }, {leaf(x)});
  check("scatter 0-d", [&](const Inputs& in) { return ox::scatter(in[0], 0, i, in[1]); },
        {leaf(x), leaf(s)});
  for (const char* reduce : {"sum", "mean", "amax", "prod"})
    check(std::string("scatter_reduce 0-d ") + reduce,
          [&](const Inputs& in) { return ox::scatter_reduce(in[0], 0, i, in[1], reduce); },
          {leaf(x), leaf(s)});
  // A 1-d src larger than the 0-d index: only its first element is read.
  check("scatter_add 0-d index, longer src",
        [&](const Inputs& in) { return ox::scatter_add(in[0], 0, i, in[1]); },
        {leaf(values({3}, -1, 1, 27)), leaf(values({2}, -1, 1, 28))});
  check("index_add 0-d", [&](const Inputs& in) { return ox::index_add(in[0], 0, i, in[1], 3); },
        {leaf(x), leaf(s)});
}

// ---- In place --------------------------------------------------------------------------------

TEST(AutogradRulesIndex, InPlaceFormsRecord) {
  const Tensor base = values({3, 4}, 0.5, 2, 25);
  const Tensor src = values({2, 4}, 0.5, 2, 26);
  const Tensor i0 = idx({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4});
  const std::vector<std::pair<std::string, std::function<void(Tensor&, const Tensor&)>>> ops = {
      {"scatter_", [&](Tensor& y, const Tensor& s) { ox::scatter_(y, 0, i0, s); }},
      {"scatter_ value", [&](Tensor& y, const Tensor&) { ox::scatter_(y, 0, i0, 1.5); }},
      {"scatter_add_", [&](Tensor& y, const Tensor& s) { ox::scatter_add_(y, 0, i0, s); }},
      {"scatter_reduce_",
       [&](Tensor& y, const Tensor& s) { ox::scatter_reduce_(y, 0, i0, s, "amax", false); }},
      {"index_add_",
       [&](Tensor& y, const Tensor& s) {
         ox::index_add_(y, 0, idx({2, 2}), s, 0.5);
       }},
      {"index_put_",
       [&](Tensor& y, const Tensor& s) {
         ox::index_put_(y, {idx({0, 2}), idx({3, 3})}, s.index({0, Slice(0, 2)}), true);
       }},
      {"Tensor::index_put_",
       [&](Tensor& y, const Tensor& s) {
         y.index_put_({Slice(1, None), idx({2, 0})}, s.index({Slice(), Slice(0, 2)}));
       }},
      {"Tensor::index_put_ basic",
       [&](Tensor& y, const Tensor& s) {
         y.index_put_({Slice(0, 2), Slice(None, None, 2)}, s.index({Slice(), Slice(0, 2)}));
       }},
      {"Tensor::index_put_ mask",
       [&](Tensor& y, const Tensor&) {
         y.index_put_({Ellipsis, ox::tensor({false, true, true, false})}, -1.0);
       }},
  };
  for (const auto& [name, apply] : ops)
    check_layouts(name,
                  [&](const Inputs& in) {
                    Tensor y = in[0] * 1.0;  // not a leaf: it may be written in place
                    apply(y, in[1]);
                    return y * y;
                  },
                  base, {leaf(src)});
}

TEST(AutogradRulesIndex, InPlaceGradientsMatchOutOfPlace) {
  const Tensor x = leaf(ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF64}));
  const Tensor s = leaf(ox::tensor({10.0, 20.0}, {.dtype = ox::kF64}));
  Tensor y = x * 1.0;
  ox::scatter_(y, 0, idx({2, 0}), s);
  (y * ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF64})).sum().backward();
  expect_values(y.detach(), {20, 2, 10}, "scatter_ value");
  expect_values(x.grad(), {0, 2, 0}, "scatter_ x grad");
  expect_values(s.grad(), {3, 1}, "scatter_ src grad");
}

TEST(AutogradRulesIndex, InPlaceRefusesLeavesAndViews) {
  Tensor x = leaf(ox::zeros({3, 4}, {.dtype = ox::kF64}));
  const Tensor s = ox::ones({2, 4}, {.dtype = ox::kF64});
  const Tensor i0 = idx({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4});
  auto refused = [](const ox::Error& e, const std::string& op) {
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
    EXPECT_TRUE(oxtest::contains(e, op)) << e.what();
  };
  refused(oxtest::caught([&] { ox::scatter_(x, 0, i0, s); }), "scatter_");
  refused(oxtest::caught([&] { ox::scatter_add_(x, 0, i0, s); }), "scatter_add_");
  refused(oxtest::caught([&] { ox::index_add_(x, 0, idx({1}), s.index({Slice(0, 1)})); }),
          "index_add_");
  refused(oxtest::caught([&] { ox::index_put_(x, {idx({1})}, s.index({0})); }), "index_put");
  refused(oxtest::caught([&] { x.index_put_({idx({1})}, 2.0); }), "index_put_");
  Tensor leaf_view = x.index({Slice(0, 2)});
  refused(oxtest::caught([&] { leaf_view.index_put_({idx({1})}, 2.0); }), "index_put_");
  // A view of a tensor with history takes the write into its base's history: y[1] = 5 leaves
  // rows 0 and 2 of d sum(y) / dx at 2.
  Tensor y = x * 2.0;
  Tensor view = y.index({Slice(0, 2)});
  view.index_put_({idx({1})}, 5.0);
  y.sum().backward();
  expect_values(x.grad(), {2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2}, "index_put_ into a view");
  x.mutable_grad() = Tensor();
  // Under NoGradGuard the write goes through and records nothing.
  {
    ox::NoGradGuard no_grad;
    ox::scatter_(x, 0, i0, s);
  }
  EXPECT_FALSE(x.grad_fn());
  EXPECT_EQ(x.sum().item<double>(), 8.0);
}

}  // namespace
