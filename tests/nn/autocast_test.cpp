// ox::amp::Autocast: which ops cast to the 16-bit dtype, which to f32 and which follow their
// inputs; the scope rules (nesting, disabling, device types, threads); the weight-cast cache;
// and gradients through the casts, against values computed here on bf16-rounded numbers.

#include <gtest/gtest.h>
#include <oxmera/amp/autocast.h>
#include <oxmera/oxmera.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "amp/autocast_policy.h"
#include "test_util.h"

namespace {

using namespace ox;
using namespace oxtest;
using amp::Autocast;

// The suite's tensors are on the default device (the CPU, or a GPU under OXMERA_TEST_DEVICE):
// autocast is opened for its type.
DeviceType device_type() { return default_device().type(); }
DeviceType other_device_type() {
  return device_type() == DeviceType::CPU ? DeviceType::CUDA : DeviceType::CPU;
}

// Round to the nearest bf16 (ties to even), written here from the bit layout.
double round_bf16(double x) {
  uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(x));
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  return std::bit_cast<float>(bits);
}

Tensor sample(const Shape& shape, uint64_t salt, DType dt = kF32) {
  std::vector<double> v(static_cast<size_t>(product(shape.vec())));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uniform_at(int64_t(i), salt, -1, 1);
  return tensor(v, shape).to(dt);
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

TEST(Autocast, LowerPrecisionOpsRunInTheAutocastDtype) {
  const Tensor a = sample({4, 6}, 1), b = sample({6, 5}, 2), v = sample({6}, 3);
  const Tensor a3 = sample({2, 4, 6}, 4), b3 = sample({2, 6, 5}, 5), c3 = sample({2, 4, 5}, 6);
  const Tensor bias = sample({5}, 7), w = sample({5, 6}, 8), c = sample({4, 5}, 9);
  const Tensor img = sample({2, 3, 6, 6}, 10), k = sample({4, 3, 3, 3}, 11), kb = sample({4}, 12);
  const Tensor seq = sample({2, 3, 8}, 13), k1 = sample({4, 3, 3}, 14);
  const Tensor kt = sample({3, 4, 3, 3}, 15);
  const Tensor q = sample({2, 5, 8}, 16), kk = sample({2, 7, 8}, 17), vv = sample({2, 7, 8}, 18);
  for (DType low : {kBF16, kF16}) {
    const auto L = [low](const Tensor& t) { return t.to(low); };
    struct Case {
      const char* name;
      std::function<Tensor()> run;
      std::function<Tensor()> by_hand;  // the op on inputs cast explicitly, outside autocast
    };
    const std::vector<Case> cases = {
        {"matmul", [&] { return matmul(a, b); }, [&] { return matmul(L(a), L(b)); }},
        {"mm", [&] { return mm(a, b); }, [&] { return mm(L(a), L(b)); }},
        {"bmm", [&] { return bmm(a3, b3); }, [&] { return bmm(L(a3), L(b3)); }},
        {"mv", [&] { return mv(a, v); }, [&] { return mv(L(a), L(v)); }},
        {"addmm", [&] { return addmm(c, a, b); }, [&] { return addmm(L(c), L(a), L(b)); }},
        {"baddbmm", [&] { return baddbmm(c3, a3, b3); },
         [&] { return baddbmm(L(c3), L(a3), L(b3)); }},
        {"linear", [&] { return nn::functional::linear(a, w, bias); },
         [&] { return nn::functional::linear(L(a), L(w), L(bias)); }},
        {"conv2d",
         [&] {
           return conv2d(img, k, kb, {.padding = {1, 1}});
         },
         [&] {
           return conv2d(L(img), L(k), L(kb), {.padding = {1, 1}});
         }},
        {"conv1d", [&] { return conv1d(seq, k1, kb); },
         [&] { return conv1d(L(seq), L(k1), L(kb)); }},
        {"conv_transpose2d", [&] { return conv_transpose2d(img, kt, Tensor()); },
         [&] { return conv_transpose2d(L(img), L(kt), Tensor()); }},
        {"scaled_dot_product_attention",
         [&] {
           return nn::functional::scaled_dot_product_attention(q, kk, vv, {.is_causal = false});
         },
         [&] {
           return nn::functional::scaled_dot_product_attention(L(q), L(kk), L(vv),
                                                               {.is_causal = false});
         }},
    };
    for (const Case& c : cases) {
      Tensor got;
      {
        Autocast autocast(device_type(), low);
        got = c.run();
      }
      EXPECT_EQ(got.dtype(), low) << c.name;
      expect_same(got, c.by_hand(), std::string(c.name) + " in " + std::string(dtype_name(low)));
      // Outside the scope the op runs as called.
      EXPECT_EQ(c.run().dtype(), kF32) << c.name;
    }
  }
}

TEST(Autocast, LinearMatchesBf16RoundedLoop) {
  const Tensor x = sample({3, 5}, 21), w = sample({4, 5}, 22), b = sample({4}, 23);
  Tensor y;
  {
    Autocast autocast(device_type(), kBF16);
    y = nn::functional::linear(x, w, b);
  }
  ASSERT_EQ(y.dtype(), kBF16);
  const auto xv = values_of(x), wv = values_of(w), bv = values_of(b), yv = values_of(y);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double acc = round_bf16(bv[size_t(j)]);
      for (int64_t k = 0; k < 5; ++k)
        acc += round_bf16(xv[size_t(i * 5 + k)]) * round_bf16(wv[size_t(j * 5 + k)]);
      // One rounding of an f32 sum of exact bf16 products: within half a bf16 ulp of the exact
      // value, plus the f32 accumulation's error.
      EXPECT_NEAR(yv[size_t(i * 4 + j)], acc, std::abs(acc) * 0x1p-8 + 1e-6) << i << "," << j;
    }
}

TEST(Autocast, Float32OpsRunInFloat32) {
  const Tensor x = sample({3, 8}, 31, kBF16), pos = sample({3, 8}, 32, kBF16).abs() + 0.5;
  const Tensor target = tensor({1, 0, 7}, {.dtype = kI64});
  const Tensor img = sample({2, 4, 3, 3}, 33, kBF16), gw = sample({4}, 34), gb = sample({4}, 35);
  const Tensor lw = sample({8}, 36), lb = sample({8}, 37);
  const Tensor y = sample({3, 8}, 38, kBF16);
  const auto F = [](const Tensor& t) { return t.to(kF32); };
  namespace F_ = nn::functional;
  struct Case {
    const char* name;
    std::function<Tensor()> run;
    std::function<Tensor()> by_hand;
  };
  const std::vector<Case> cases = {
      {"softmax", [&] { return softmax(x, 1); }, [&] { return softmax(F(x), 1); }},
      {"log_softmax", [&] { return log_softmax(x, 1); }, [&] { return log_softmax(F(x), 1); }},
      {"layer_norm", [&] { return layer_norm(x, {8}, lw, lb); },
       [&] { return layer_norm(F(x), {8}, lw, lb); }},
      {"rms_norm", [&] { return rms_norm(x, {8}, lw); }, [&] { return rms_norm(F(x), {8}, lw); }},
      {"group_norm", [&] { return F_::group_norm(img, 2, gw, gb); },
       [&] { return F_::group_norm(F(img), 2, gw, gb); }},
      {"batch_norm", [&] { return F_::batch_norm(img, Tensor(), Tensor(), gw, gb, true); },
       [&] { return F_::batch_norm(F(img), Tensor(), Tensor(), gw, gb, true); }},
      {"cross_entropy", [&] { return F_::cross_entropy(x, target); },
       [&] { return F_::cross_entropy(F(x), target); }},
      {"nll_loss", [&] { return F_::nll_loss(x, target); },
       [&] { return F_::nll_loss(F(x), target); }},
      {"mse_loss", [&] { return F_::mse_loss(x, y); }, [&] { return F_::mse_loss(F(x), F(y)); }},
      {"l1_loss", [&] { return F_::l1_loss(x, y); }, [&] { return F_::l1_loss(F(x), F(y)); }},
      {"sum", [&] { return sum(x); }, [&] { return sum(F(x)); }},
      {"sum(dim)", [&] { return sum(x, 1); }, [&] { return sum(F(x), 1); }},
      {"prod", [&] { return prod(pos); }, [&] { return prod(F(pos)); }},
      {"cumsum", [&] { return cumsum(x, 1); }, [&] { return cumsum(F(x), 1); }},
      {"logsumexp", [&] { return logsumexp(x, 1); }, [&] { return logsumexp(F(x), 1); }},
      {"norm", [&] { return norm(x); }, [&] { return norm(F(x)); }},
      {"exp", [&] { return exp(x); }, [&] { return exp(F(x)); }},
      {"log", [&] { return log(pos); }, [&] { return log(F(pos)); }},
      {"log1p", [&] { return log1p(pos); }, [&] { return log1p(F(pos)); }},
      {"rsqrt", [&] { return rsqrt(pos); }, [&] { return rsqrt(F(pos)); }},
      {"reciprocal", [&] { return reciprocal(pos); }, [&] { return reciprocal(F(pos)); }},
      {"softplus", [&] { return softplus(x); }, [&] { return softplus(F(x)); }},
  };
  for (const Case& c : cases) {
    Tensor got;
    {
      Autocast autocast(device_type(), kBF16);
      got = c.run();
    }
    EXPECT_EQ(got.dtype(), kF32) << c.name;
    expect_same(got, c.by_hand(), c.name);
  }
}

TEST(Autocast, OtherOpsFollowTheirInputs) {
  Autocast autocast(device_type(), kBF16);
  const Tensor h = sample({4}, 41, kBF16), f = sample({4}, 42), d = sample({4, 4}, 43, kF64);
  EXPECT_EQ(relu(h).dtype(), kBF16);
  EXPECT_EQ(gelu(h).dtype(), kBF16);
  EXPECT_EQ(add(h, f).dtype(), kF32);  // ordinary promotion
  EXPECT_EQ(mul(h, h).dtype(), kBF16);
  // f64 is left alone by the lower-precision list, as PyTorch.
  EXPECT_EQ(matmul(d, d).dtype(), kF64);
  // Integer products are not floating: untouched.
  const Tensor i = tensor({1, 2, 3, 4}, {.dtype = kI64}).view({2, 2});
  EXPECT_EQ(matmul(i, i).dtype(), kI64);
}

TEST(Autocast, ScopesNestDisableAndRestore) {
  const Tensor a = sample({2, 3}, 51), b = sample({3, 2}, 52);
  EXPECT_FALSE(amp::is_autocast_enabled(device_type()));
  {
    Autocast outer(device_type());  // the device type's default: bf16 on the CPU, f16 on CUDA
    EXPECT_TRUE(amp::is_autocast_enabled(device_type()));
    const DType by_default = device_type() == DeviceType::CPU ? kBF16 : kF16;
    EXPECT_EQ(amp::get_autocast_dtype(device_type()), by_default);
    EXPECT_EQ(matmul(a, b).dtype(), by_default);
    {
      Autocast off(device_type(), std::nullopt, /*enabled=*/false);
      EXPECT_FALSE(amp::is_autocast_enabled(device_type()));
      EXPECT_EQ(matmul(a, b).dtype(), kF32);
      {
        Autocast f16(device_type(), kF16);
        EXPECT_EQ(matmul(a, b).dtype(), kF16);
      }
      EXPECT_EQ(matmul(a, b).dtype(), kF32);
    }
    EXPECT_EQ(matmul(a, b).dtype(), by_default);
    // Autocast for another device type changes nothing for this one's tensors.
    {
      Autocast other(other_device_type(), std::nullopt, /*enabled=*/false);
      EXPECT_EQ(matmul(a, b).dtype(), by_default);
    }
  }
  EXPECT_FALSE(amp::is_autocast_enabled(device_type()));
  EXPECT_EQ(matmul(a, b).dtype(), kF32);
  {
    Autocast other_only(other_device_type());
    EXPECT_EQ(matmul(a, b).dtype(), kF32);  // autocast is off for this device type
  }
}

TEST(Autocast, StateIsPerThread) {
  const Tensor a = sample({2, 3}, 61), b = sample({3, 2}, 62);
  Autocast autocast(device_type(), kBF16);
  DType other = kBool;
  bool other_enabled = true;
  std::thread t([&] {
    other_enabled = amp::is_autocast_enabled(device_type());
    other = matmul(a, b).dtype();
  });
  t.join();
  EXPECT_FALSE(other_enabled);
  EXPECT_EQ(other, kF32);
  EXPECT_EQ(matmul(a, b).dtype(), kBF16);
}

TEST(Autocast, RefusesNonHalfDtypes) {
  for (DType dt : {kF32, kF64, kI32}) {
    const Error e = caught([&] { Autocast a(device_type(), dt); });
    EXPECT_EQ(e.kind(), ErrorKind::DType);
    EXPECT_TRUE(contains(e, "Autocast")) << e.what();
  }
  EXPECT_FALSE(amp::is_autocast_enabled(device_type()));  // a refused guard changed nothing
}

// The nodes of the graph that produced t.
std::set<const autograd::Node*> graph_nodes(const Tensor& t) {
  std::set<const autograd::Node*> seen;
  std::vector<const autograd::Node*> todo = {t.grad_fn().get()};
  while (!todo.empty()) {
    const autograd::Node* n = todo.back();
    todo.pop_back();
    if (!n || !seen.insert(n).second) continue;
    for (const autograd::Edge& e : n->next_edges()) todo.push_back(e.node.get());
  }
  return seen;
}

// How many nodes two graphs share.
size_t shared_nodes(const Tensor& a, const Tensor& b) {
  const auto na = graph_nodes(a), nb = graph_nodes(b);
  size_t n = 0;
  for (const autograd::Node* node : na) n += nb.count(node);
  return n;
}

TEST(Autocast, WeightsAreCastOncePerScope) {
  const Tensor x = sample({3, 5}, 71);
  Tensor w = sample({4, 5}, 72).requires_grad_();
  const Tensor frozen = sample({4, 5}, 73);  // no grad: not cached
  {
    Autocast autocast(device_type(), kBF16);
    EXPECT_EQ(amp::cast_cache_size(), 0u);
    const Tensor y1 = nn::functional::linear(x, w);
    const Tensor y2 = nn::functional::linear(x * 2, w);
    EXPECT_EQ(amp::cast_cache_size(), 1u);
    // Both products read the same cast of w: its node is in both graphs, besides w's own.
    const size_t cached_shared = shared_nodes(y1, y2);
    {
      Autocast uncached(device_type(), kBF16, true, /*cache_enabled=*/false);
      const Tensor z1 = nn::functional::linear(x, w), z2 = nn::functional::linear(x * 2, w);
      EXPECT_GT(cached_shared, shared_nodes(z1, z2));
    }
    (void)nn::functional::linear(x, frozen);
    EXPECT_EQ(amp::cast_cache_size(), 1u);
    {
      Autocast inner(device_type(), kBF16);  // a nested scope keeps the outer cache
      (void)nn::functional::linear(x, w);
      EXPECT_EQ(amp::cast_cache_size(), 1u);
    }
    EXPECT_EQ(amp::cast_cache_size(), 1u);
    // A weight changed in place is cast afresh, not read stale from the cache.
    const Tensor before = nn::functional::linear(x, w);
    {
      NoGradGuard no_grad;
      w.add_(1.0);
    }
    const Tensor after = nn::functional::linear(x, w);
    EXPECT_NE(bytes_of(before), bytes_of(after));
    EXPECT_EQ(bytes_of(after), bytes_of(nn::functional::linear(x.to(kBF16), w.detach().to(kBF16))));
  }
  EXPECT_EQ(amp::cast_cache_size(), 0u);  // emptied with the outermost scope
  {
    Autocast no_cache(device_type(), kBF16, true, /*cache_enabled=*/false);
    (void)nn::functional::linear(x, w);
    EXPECT_EQ(amp::cast_cache_size(), 0u);
  }
}

TEST(Autocast, GradientsReachFloat32ParametersInTheirDtype) {
  // loss = sum(linear(x, w, b)) in f32 (sum is on the f32 list); dL/dy = 1, so
  // dL/dw[j][k] = bf16(sum_i bf16(x[i][k])) (the product's gradient is a bf16 matmul, rounded
  // once), cast back to f32, and dL/db[j] = rows.
  const int64_t n = 6, in = 5, out = 3;
  const Tensor x = sample({n, in}, 81);
  Tensor w = sample({out, in}, 82).requires_grad_(), b = sample({out}, 83).requires_grad_();
  {
    Autocast autocast(device_type(), kBF16);
    const Tensor y = nn::functional::linear(x, w, b);
    ASSERT_EQ(y.dtype(), kBF16);
    const Tensor loss = sum(y);
    ASSERT_EQ(loss.dtype(), kF32);
    loss.backward();
  }
  ASSERT_EQ(w.grad().dtype(), kF32);
  ASSERT_EQ(b.grad().dtype(), kF32);
  const auto xv = values_of(x), gw = values_of(w.grad()), gb = values_of(b.grad());
  for (int64_t j = 0; j < out; ++j) {
    EXPECT_EQ(gb[size_t(j)], double(n)) << j;
    for (int64_t k = 0; k < in; ++k) {
      double col = 0;
      for (int64_t i = 0; i < n; ++i) col += round_bf16(xv[size_t(i * in + k)]);
      EXPECT_NEAR(gw[size_t(j * in + k)], round_bf16(col), std::abs(col) * 1e-6) << j << "," << k;
    }
  }
}

TEST(Autocast, ModulesTakeMixedInputsAndTrain) {
  // A small CNN with f32 parameters under autocast: conv and linear in bf16, batch norm and the
  // loss in f32; every gradient comes back f32 and finite, and a few steps lower the loss.
  manual_seed(5);
  nn::Sequential net(nn::Conv2d(1, 4, 3, {.padding = 1}), nn::BatchNorm2d(4), nn::ReLU(),
                     nn::Flatten(), nn::Linear(4 * 6 * 6, 3));
  const Tensor x = sample({8, 1, 6, 6}, 91);
  const Tensor y = tensor({0, 1, 2, 0, 1, 2, 0, 1}, {.dtype = kI64});
  optim::SGD opt(net->parameters(), {.lr = 0.1});
  double first = 0, last = 0;
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    Tensor loss;
    {
      Autocast autocast(device_type(), kBF16);
      const Tensor logits = net->forward(x);
      EXPECT_EQ(logits.dtype(), kBF16);
      loss = nn::functional::cross_entropy(logits, y);
      EXPECT_EQ(loss.dtype(), kF32);
    }
    loss.backward();
    for (const Tensor& p : net->parameters()) {
      ASSERT_EQ(p.grad().dtype(), kF32);
      EXPECT_TRUE(allclose(p.grad(), p.grad()));  // finite: NaN is not close to itself
    }
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
  // The same input outside autocast is still held to the parameters' dtype.
  EXPECT_EQ(kind_of([&] { (void)net->forward(x.to(kBF16)); }), ErrorKind::DType);
}

}  // namespace

namespace {

// Every parameter has a finite gradient in its own dtype.
void expect_finite_grads(const nn::Module& m, DType dtype, const std::string& what) {
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << what << " " << name;
    EXPECT_EQ(p.grad().dtype(), dtype) << what << " " << name;
    EXPECT_TRUE(isfinite(p.grad()).all().item<bool>()) << what << " " << name;
  }
}

TEST(Autocast, TransformerAndRecurrentLayersRunUnderIt) {
  manual_seed(9);
  nn::TransformerEncoderLayer layer(
      16, 4, {.dim_feedforward = 32, .dropout = 0.0, .batch_first = true, .norm_first = true});
  const Tensor x = sample({2, 5, 16}, 101);
  Tensor y;
  {
    Autocast autocast(device_type(), kBF16);
    y = layer->forward(x);
  }
  EXPECT_EQ(y.dtype(), kF32);  // the residual sum promotes the bf16 branch into the f32 stream
  sum(y * y).backward();
  expect_finite_grads(*layer, kF32, "TransformerEncoderLayer");
  // Within bf16's precision of the f32 layer on the same input (one bf16 GEMM per projection).
  const Tensor want = layer->forward(x);
  EXPECT_TRUE(allclose(y, want, 5e-2, 5e-2));

  nn::LSTM lstm(8, 12, {.num_layers = 2});
  const Tensor seq = sample({6, 3, 8}, 102);
  Tensor out;
  {
    Autocast autocast(device_type(), kBF16);
    out = std::get<0>(lstm->forward(seq));
  }
  sum(out * out).backward();
  expect_finite_grads(*lstm, kF32, "LSTM");
  EXPECT_TRUE(allclose(out.to(kF32), std::get<0>(lstm->forward(seq)), 5e-2, 5e-2));
}

}  // namespace
