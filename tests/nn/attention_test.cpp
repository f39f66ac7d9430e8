// scaled_dot_product_attention, MultiheadAttention and TransformerEncoderLayer against plain f64
// loops written here (softmax, projections and layer norm spelled out).

#include <gtest/gtest.h>
#include <oxmera/nn/attention.h>
#include <oxmera/nn/containers.h>
#include <oxmera/nn/functional.h>
#include <oxmera/nn/transformer.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "test_util.h"

namespace {

namespace F = ox::nn::functional;
using ox::Tensor;
using oxtest::kind_of;
using Vec = std::vector<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();

Vec values_of(const Tensor& t) { return t.to(ox::kF64).contiguous().to_vector<double>(); }

void expect_close(const Vec& actual, const Vec& expected, double atol, double rtol,
                  const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::fabs(expected[i]))
        << what << " at " << i;
  }
}

Tensor randn64(const ox::Shape& shape) { return ox::randn(shape, {.dtype = ox::kF64}); }

// softmax(scores + bias) over j, with a row of -inf giving NaN (as PyTorch).
Vec softmax_row(const Vec& scores) {
  double m = -kInf;
  for (double s : scores) m = std::max(m, s);
  Vec out(scores.size(), std::nan(""));
  if (m == -kInf) return out;
  double total = 0;
  for (size_t j = 0; j < scores.size(); ++j) total += out[j] = std::exp(scores[j] - m);
  for (double& o : out) o /= total;
  return out;
}

// ---- scaled_dot_product_attention ------------------------------------------------------------

// q [B0, 1, L, E], k [1, B1, S, E], v [1, B1, S, Ev] -> [B0, B1, L, Ev]; bias(b0, b1, i, j) is
// added to the scaled score (-inf: not attended).
Vec sdpa_reference(const Vec& q, const Vec& k, const Vec& v, int64_t B0, int64_t B1, int64_t L,
                   int64_t S, int64_t E, int64_t Ev, double scale,
                   const std::function<double(int64_t, int64_t, int64_t, int64_t)>& bias) {
  Vec out(size_t(B0 * B1 * L * Ev));
  for (int64_t b0 = 0; b0 < B0; ++b0)
    for (int64_t b1 = 0; b1 < B1; ++b1)
      for (int64_t i = 0; i < L; ++i) {
        Vec scores(static_cast<size_t>(S), 0.0);
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q[(b0 * L + i) * E + e] * k[(b1 * S + j) * E + e];
          scores[j] = dot * scale + bias(b0, b1, i, j);
        }
        const Vec w = softmax_row(scores);
        for (int64_t c = 0; c < Ev; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += w[j] * v[(b1 * S + j) * Ev + c];
          out[((b0 * B1 + b1) * L + i) * Ev + c] = acc;
        }
      }
  return out;
}

struct SdpaInputs {
  static constexpr int64_t B0 = 2, B1 = 3, L = 3, S = 5, E = 4, Ev = 2;
  Tensor q, k, v;
  SdpaInputs(ox::DType dtype = ox::kF64) {
    ox::manual_seed(11);
    q = randn64({B0, 1, L, E}).to(dtype);
    k = randn64({1, B1, S, E}).to(dtype);
    v = randn64({1, B1, S, Ev}).to(dtype);
  }
  Vec reference(double scale,
                const std::function<double(int64_t, int64_t, int64_t, int64_t)>& bias) {
    return sdpa_reference(values_of(q), values_of(k), values_of(v), B0, B1, L, S, E, Ev, scale,
                          bias);
  }
};

// Keys j with (i + j) % 3 == 1 are hidden; every row keeps some.
bool sample_allowed(int64_t i, int64_t j) { return (i + j) % 3 != 1; }

TEST(AttentionSdpa, NoMaskBroadcastsBatchDims) {
  SdpaInputs in;
  Tensor out = F::scaled_dot_product_attention(in.q, in.k, in.v);
  EXPECT_EQ(out.shape(), ox::Shape({2, 3, 3, 2}));
  EXPECT_EQ(out.dtype(), ox::kF64);
  expect_close(values_of(out), in.reference(0.5, [](auto...) { return 0.0; }), 1e-12, 1e-12,
               "no mask");
  // Non-contiguous operands (a transposed copy viewed back) give the same values.
  auto strided = [](const Tensor& t) { return t.transpose(-2, -1).contiguous().transpose(-2, -1); };
  expect_close(
      values_of(F::scaled_dot_product_attention(strided(in.q), strided(in.k), strided(in.v))),
      values_of(out), 1e-12, 1e-12, "strided");
}

TEST(AttentionSdpa, BoolMaskTrueAttends) {
  SdpaInputs in;
  std::vector<bool> allowed;
  for (int64_t i = 0; i < in.L; ++i)
    for (int64_t j = 0; j < in.S; ++j) allowed.push_back(sample_allowed(i, j));
  Tensor mask = ox::tensor(allowed, {in.L, in.S});
  Tensor out = F::scaled_dot_product_attention(in.q, in.k, in.v, {.attn_mask = mask});
  expect_close(values_of(out),
               in.reference(0.5, [](int64_t, int64_t, int64_t i,
                                    int64_t j) { return sample_allowed(i, j) ? 0.0 : -kInf; }),
               1e-12, 1e-12, "bool mask");
}

TEST(AttentionSdpa, FloatMaskIsAddedAndBroadcasts) {
  SdpaInputs in;
  ox::manual_seed(3);
  Tensor mask = randn64({2, 1, 3, 5});  // per b0, shared over b1
  const Vec m = values_of(mask);
  Tensor out = F::scaled_dot_product_attention(in.q, in.k, in.v, {.attn_mask = mask, .scale = 0.3});
  expect_close(values_of(out),
               in.reference(0.3, [&](int64_t b0, int64_t, int64_t i,
                                     int64_t j) { return m[(b0 * 3 + i) * 5 + j]; }),
               1e-12, 1e-12, "float mask");
}

TEST(AttentionSdpa, CausalIsTopLeftAligned) {
  SdpaInputs in;  // L = 3 < S = 5: query i sees keys 0..i
  Tensor out = F::scaled_dot_product_attention(in.q, in.k, in.v, {.is_causal = true});
  expect_close(values_of(out),
               in.reference(0.5, [](int64_t, int64_t, int64_t i,
                                    int64_t j) { return j <= i ? 0.0 : -kInf; }),
               1e-12, 1e-12, "causal");
  // L > S: the rows past S see every key.
  ox::manual_seed(5);
  Tensor q = randn64({4, 2}), k = randn64({2, 2}), v = randn64({2, 1});
  Vec expected =
      sdpa_reference(values_of(q), values_of(k), values_of(v), 1, 1, 4, 2, 2, 1, 1 / std::sqrt(2.0),
                     [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; });
  expect_close(values_of(F::scaled_dot_product_attention(q, k, v, {.is_causal = true})), expected,
               1e-12, 1e-12, "causal L > S");
}

TEST(AttentionSdpa, F32MatchesF64Loop) {
  SdpaInputs in(ox::kF32);
  Tensor out = F::scaled_dot_product_attention(in.q, in.k, in.v, {.is_causal = true});
  EXPECT_EQ(out.dtype(), ox::kF32);
  expect_close(values_of(out),
               in.reference(0.5, [](int64_t, int64_t, int64_t i,
                                    int64_t j) { return j <= i ? 0.0 : -kInf; }),
               1.3e-6, 1e-5, "f32");
}

TEST(AttentionSdpa, FullyMaskedRowIsNaN) {
  ox::manual_seed(2);
  Tensor q = randn64({2, 3}), k = randn64({3, 3}), v = randn64({3, 2});
  Tensor mask = ox::tensor(std::vector<bool>{true, false, true, false, false, false}, {2, 3});
  const Vec out = values_of(F::scaled_dot_product_attention(q, k, v, {.attn_mask = mask}));
  EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[1]));
  EXPECT_TRUE(std::isnan(out[2]) && std::isnan(out[3]));
}

TEST(AttentionSdpa, DropoutZeroesAndRescalesWeights) {
  // With value = I the output is the weight matrix itself: each entry is 0 or w / (1 - p).
  ox::manual_seed(4);
  const int64_t L = 6, S = 8;
  Tensor q = randn64({L, 3}), k = randn64({S, 3}),
         v = ox::eye(S, std::nullopt, {.dtype = ox::kF64});
  const Vec w = sdpa_reference(values_of(q), values_of(k), values_of(v), 1, 1, L, S, 3, S,
                               1 / std::sqrt(3.0), [](auto...) { return 0.0; });
  ox::Generator g1(7), g2(7);
  const Vec a =
      values_of(F::scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5, .generator = &g1}));
  const Vec b =
      values_of(F::scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5, .generator = &g2}));
  EXPECT_EQ(a, b);  // one seed, one mask
  int zeros = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(a[i], 2 * w[i], 1e-12);
    }
  }
  EXPECT_GT(zeros, 8);
  EXPECT_LT(zeros, 40);
}

TEST(AttentionSdpa, BadInputs) {
  ox::manual_seed(1);
  Tensor q = randn64({2, 4}), k = randn64({3, 4}), v = randn64({3, 2});
  using ox::ErrorKind;
  EXPECT_EQ(kind_of([&] {
              F::scaled_dot_product_attention(
                  q, k, v, {.attn_mask = ox::ones({2, 3}, ox::kBool), .is_causal = true});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              F::scaled_dot_product_attention(q, randn64({3, 5}), v);
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              F::scaled_dot_product_attention(q, k, randn64({4, 2}));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { F::scaled_dot_product_attention(randn64({4}), k, v); }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { F::scaled_dot_product_attention(q, k.to(ox::kF32), v); }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              F::scaled_dot_product_attention(q, k, v, {.attn_mask = ox::zeros({2, 3}, ox::kI64)});
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { F::scaled_dot_product_attention(q, k, v, {.dropout_p = 1.5}); }),
            ErrorKind::Value);
}

TEST(AttentionSdpa, Gradcheck) {
  ox::manual_seed(8);
  Tensor q = randn64({2, 3, 2}).requires_grad_(), k = randn64({2, 4, 2}).requires_grad_(),
         v = randn64({2, 4, 3}).requires_grad_();
  Tensor float_mask = randn64({3, 4});
  Tensor bool_mask = ox::tensor(
      std::vector<bool>{true, false, true, true, false, true, true, false, true, true, false, true},
      {3, 4});
  for (int variant = 0; variant < 3; ++variant) {
    F::AttentionOptions options;
    if (variant == 0) options.attn_mask = float_mask;
    if (variant == 1) options.attn_mask = bool_mask;
    if (variant == 2) options.is_causal = true;
    auto result = ox::autograd::gradcheck(
        [&](const std::vector<Tensor>& x) {
          return std::vector<Tensor>{F::scaled_dot_product_attention(x[0], x[1], x[2], options)};
        },
        {q, k, v});
    EXPECT_TRUE(result.ok) << "variant " << variant << ": " << result.report;
  }
}

// ---- MultiheadAttention ----------------------------------------------------------------------

struct MhaWeights {
  int64_t E, H;
  Vec w_in, b_in, w_out, b_out;  // biases zero when the module has none
};

MhaWeights weights_of(const ox::nn::MultiheadAttention& mha) {
  const int64_t E = mha->embed_dim;
  return {E,
          mha->num_heads,
          values_of(mha->in_proj_weight),
          mha->in_proj_bias.defined() ? values_of(mha->in_proj_bias) : Vec(size_t(3 * E), 0.0),
          values_of(mha->out_proj->weight),
          mha->out_proj->bias.defined() ? values_of(mha->out_proj->bias) : Vec(size_t(E), 0.0)};
}

struct MhaResult {
  Vec out;      // [N, L, E]
  Vec weights;  // [N, H, L, S]
};
using Bias = std::function<double(int64_t n, int64_t h, int64_t i, int64_t j)>;

// q [N, L, E], k and v [N, S, E], row-major.
MhaResult mha_reference(const MhaWeights& p, const Vec& q, const Vec& k, const Vec& v, int64_t N,
                        int64_t L, int64_t S, const Bias& bias) {
  const int64_t E = p.E, H = p.H, hd = E / H;
  auto project = [&](const Vec& x, int64_t rows, int64_t n, int64_t block) {
    Vec out(size_t(rows * E));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < E; ++o) {
        double acc = p.b_in[block * E + o];
        for (int64_t e = 0; e < E; ++e)
          acc += p.w_in[(block * E + o) * E + e] * x[(n * rows + r) * E + e];
        out[r * E + o] = acc;
      }
    return out;
  };
  MhaResult res{Vec(size_t(N * L * E)), Vec(size_t(N * H * L * S))};
  for (int64_t n = 0; n < N; ++n) {
    const Vec qp = project(q, L, n, 0), kp = project(k, S, n, 1), vp = project(v, S, n, 2);
    Vec attended(size_t(L * E));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        Vec scores(static_cast<size_t>(S), 0.0);
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += qp[i * E + h * hd + d] * kp[j * E + h * hd + d];
          scores[j] = dot / std::sqrt(double(hd)) + bias(n, h, i, j);
        }
        const Vec w = softmax_row(scores);
        for (int64_t j = 0; j < S; ++j) res.weights[((n * H + h) * L + i) * S + j] = w[j];
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += w[j] * vp[j * E + h * hd + d];
          attended[i * E + h * hd + d] = acc;
        }
      }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t o = 0; o < E; ++o) {
        double acc = p.b_out[o];
        for (int64_t c = 0; c < E; ++c) acc += p.w_out[o * E + c] * attended[i * E + c];
        res.out[(n * L + i) * E + o] = acc;
      }
  }
  return res;
}

Vec head_average(const Vec& w, int64_t N, int64_t H, int64_t L, int64_t S) {
  Vec out(size_t(N * L * S), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < L * S; ++r) out[n * L * S + r] += w[(n * H + h) * L * S + r] / H;
  return out;
}

// [N, L, E] values of a batched input in the module's layout.
Vec batch_major(const Tensor& x, bool batch_first) {
  return values_of(batch_first ? x : x.transpose(0, 1));
}

// An f64 module whose biases are not zero, so the test sees them.
ox::nn::MultiheadAttention make_mha(int64_t E, int64_t H, bool batch_first, bool bias = true) {
  ox::manual_seed(21);
  ox::nn::MultiheadAttention mha(
      E, H, ox::nn::MultiheadAttentionOptions{.bias = bias, .batch_first = batch_first});
  mha->to(ox::kF64);
  if (bias) {
    ox::NoGradGuard no_grad;
    mha->in_proj_bias.copy_(randn64({3 * E}));
    mha->out_proj->bias.copy_(randn64({E}));
  }
  return mha;
}

const Bias kNoBias = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };

TEST(AttentionMha, SelfAttentionSequenceFirstAveragedWeights) {
  auto mha = make_mha(4, 2, /*batch_first=*/false);
  const int64_t L = 3, N = 2;
  Tensor x = randn64({L, N, 4});
  auto [out, weights] = mha(x, x, x);
  EXPECT_EQ(out.shape(), ox::Shape({L, N, 4}));
  EXPECT_EQ(weights.shape(), ox::Shape({N, L, L}));
  const Vec xs = batch_major(x, false);
  MhaResult ref = mha_reference(weights_of(mha), xs, xs, xs, N, L, L, kNoBias);
  expect_close(batch_major(out, false), ref.out, 1e-12, 1e-10, "output");
  expect_close(values_of(weights), head_average(ref.weights, N, 2, L, L), 1e-12, 1e-10, "weights");
}

TEST(AttentionMha, F32MatchesF64Loop) {
  ox::manual_seed(22);
  ox::nn::MultiheadAttention mha(8, 2);  // f32, PyTorch's init
  const int64_t L = 5, N = 3;
  Tensor x = ox::randn({L, N, 8});
  auto [out, weights] = mha(x, x, x, {.is_causal = true});
  EXPECT_EQ(out.dtype(), ox::kF32);
  const Vec xs = batch_major(x, false);
  MhaResult ref =
      mha_reference(weights_of(mha), xs, xs, xs, N, L, L,
                    [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; });
  expect_close(batch_major(out, false), ref.out, 1e-5, 1e-5, "output");
  expect_close(values_of(weights), head_average(ref.weights, N, 2, L, L), 1e-5, 1e-5, "weights");
}

TEST(AttentionMha, BatchFirstCrossAttentionPerHeadWeights) {
  auto mha = make_mha(6, 3, /*batch_first=*/true);
  const int64_t N = 2, L = 3, S = 4;
  Tensor q = randn64({N, L, 6}), k = randn64({N, S, 6}), v = randn64({N, S, 6});
  auto [out, weights] = mha(q, k, v, {.average_attn_weights = false});
  EXPECT_EQ(out.shape(), ox::Shape({N, L, 6}));
  EXPECT_EQ(weights.shape(), ox::Shape({N, 3, L, S}));
  MhaResult ref =
      mha_reference(weights_of(mha), values_of(q), values_of(k), values_of(v), N, L, S, kNoBias);
  expect_close(values_of(out), ref.out, 1e-12, 1e-10, "output");
  expect_close(values_of(weights), ref.weights, 1e-12, 1e-10, "weights");
}

TEST(AttentionMha, KeyPaddingMaskAndSharedKeyValue) {
  auto mha = make_mha(4, 2, /*batch_first=*/false);
  const int64_t N = 2, L = 2, S = 3;
  Tensor q = randn64({L, N, 4}), kv = randn64({S, N, 4});
  // True = padding: batch 0 ignores key 2, batch 1 keys 0 and 1.
  Tensor padding = ox::tensor(std::vector<bool>{false, false, true, true, true, false}, {N, S});
  auto [out, weights] = mha(q, kv, kv, {.key_padding_mask = padding});
  const Vec kvs = batch_major(kv, false);
  MhaResult ref = mha_reference(weights_of(mha), batch_major(q, false), kvs, kvs, N, L, S,
                                [](int64_t n, int64_t, int64_t, int64_t j) {
                                  const bool ignored = n == 0 ? j == 2 : j < 2;
                                  return ignored ? -kInf : 0.0;
                                });
  expect_close(batch_major(out, false), ref.out, 1e-12, 1e-10, "output");
  expect_close(values_of(weights), head_average(ref.weights, N, 2, L, S), 1e-12, 1e-10, "weights");
}

TEST(AttentionMha, BoolAttnMaskWithFloatPaddingMask) {
  auto mha = make_mha(4, 2, /*batch_first=*/true);
  const int64_t N = 2, L = 3, S = 3;
  Tensor x = randn64({N, L, 4});
  // MHA's convention: true = not allowed.
  Tensor attn_mask = ox::tensor(
      std::vector<bool>{false, true, false, false, false, true, true, false, false}, {L, S});
  Tensor padding = randn64({N, S});
  const Vec pad = values_of(padding);
  auto [out, weights] =
      mha(x, x, x,
          {.key_padding_mask = padding, .attn_mask = attn_mask, .average_attn_weights = false});
  const Vec xs = values_of(x);
  const std::vector<int> blocked = {0, 1, 0, 0, 0, 1, 1, 0, 0};
  MhaResult ref = mha_reference(weights_of(mha), xs, xs, xs, N, L, S,
                                [&](int64_t n, int64_t, int64_t i, int64_t j) {
                                  return (blocked[i * S + j] ? -kInf : 0.0) + pad[n * S + j];
                                });
  expect_close(values_of(out), ref.out, 1e-12, 1e-10, "output");
  expect_close(values_of(weights), ref.weights, 1e-12, 1e-10, "weights");
}

TEST(AttentionMha, PerHeadFloatAttnMask) {
  auto mha = make_mha(4, 2, /*batch_first=*/false);
  const int64_t N = 2, H = 2, L = 2, S = 3;
  Tensor q = randn64({L, N, 4}), k = randn64({S, N, 4}), v = randn64({S, N, 4});
  Tensor attn_mask = randn64({N * H, L, S});
  const Vec m = values_of(attn_mask);
  auto [out, weights] = mha(q, k, v, {.need_weights = false, .attn_mask = attn_mask});
  EXPECT_FALSE(weights.defined());
  MhaResult ref = mha_reference(
      weights_of(mha), batch_major(q, false), batch_major(k, false), batch_major(v, false), N, L, S,
      [&](int64_t n, int64_t h, int64_t i, int64_t j) { return m[((n * H + h) * L + i) * S + j]; });
  expect_close(batch_major(out, false), ref.out, 1e-12, 1e-10, "output");
}

TEST(AttentionMha, CausalAloneAndWithPadding) {
  auto mha = make_mha(4, 2, /*batch_first=*/true);
  const int64_t N = 2, L = 4;
  Tensor x = randn64({N, L, 4});
  const Vec xs = values_of(x);
  const auto causal = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; };
  MhaResult ref = mha_reference(weights_of(mha), xs, xs, xs, N, L, L, causal);
  for (bool need_weights : {false, true}) {
    auto [out, weights] = mha(x, x, x, {.need_weights = need_weights, .is_causal = true});
    expect_close(values_of(out), ref.out, 1e-12, 1e-10, "causal output");
    EXPECT_EQ(weights.defined(), need_weights);
  }
  Tensor padding =
      ox::tensor(std::vector<bool>{false, false, false, true, false, true, false, false}, {N, L});
  auto [out, weights] = mha(x, x, x, {.key_padding_mask = padding, .is_causal = true});
  MhaResult padded = mha_reference(weights_of(mha), xs, xs, xs, N, L, L,
                                   [&](int64_t n, int64_t h, int64_t i, int64_t j) {
                                     const bool pad = (n == 0 && j == 3) || (n == 1 && j == 1);
                                     return causal(n, h, i, j) + (pad ? -kInf : 0.0);
                                   });
  expect_close(values_of(out), padded.out, 1e-12, 1e-10, "causal + padding output");
  expect_close(values_of(weights), head_average(padded.weights, N, 2, L, L), 1e-12, 1e-10,
               "causal + padding weights");
}

TEST(AttentionMha, UnbatchedInput) {
  auto mha = make_mha(4, 4, /*batch_first=*/false);
  const int64_t L = 3, S = 2;
  Tensor q = randn64({L, 4}), kv = randn64({S, 4});
  Tensor padding = ox::tensor(std::vector<bool>{false, true}, {S});
  auto [out, weights] =
      mha(q, kv, kv, {.key_padding_mask = padding, .average_attn_weights = false});
  EXPECT_EQ(out.shape(), ox::Shape({L, 4}));
  EXPECT_EQ(weights.shape(), ox::Shape({4, L, S}));
  MhaResult ref =
      mha_reference(weights_of(mha), values_of(q), values_of(kv), values_of(kv), 1, L, S,
                    [](int64_t, int64_t, int64_t, int64_t j) { return j == 1 ? -kInf : 0.0; });
  expect_close(values_of(out), ref.out, 1e-12, 1e-10, "output");
  expect_close(values_of(weights), ref.weights, 1e-12, 1e-10, "weights");
}

TEST(AttentionMha, WithoutBias) {
  auto mha = make_mha(4, 2, /*batch_first=*/true, /*bias=*/false);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "out_proj.weight"}));
  Tensor x = randn64({1, 3, 4});
  auto [out, weights] = mha(x, x, x);
  const Vec xs = values_of(x);
  expect_close(values_of(out), mha_reference(weights_of(mha), xs, xs, xs, 1, 3, 3, kNoBias).out,
               1e-12, 1e-10, "output");
}

TEST(AttentionMha, ParameterNamesShapesAndInit) {
  ox::manual_seed(0);
  const int64_t E = 64;
  ox::nn::MultiheadAttention mha(E, 8);
  auto params = mha->named_parameters();
  EXPECT_EQ(params.keys(), (std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                     "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(params["in_proj_weight"].shape(), ox::Shape({3 * E, E}));
  EXPECT_EQ(params["in_proj_bias"].shape(), ox::Shape({3 * E}));
  EXPECT_EQ(params["out_proj.weight"].shape(), ox::Shape({E, E}));
  EXPECT_EQ(params["out_proj.bias"].shape(), ox::Shape({E}));
  EXPECT_EQ(params["in_proj_weight"].dtype(), ox::kF32);
  EXPECT_EQ(mha->head_dim, 8);

  // xavier_uniform_: U(-b, b), b = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 256).
  const double bound = std::sqrt(6.0 / (E + 3 * E));
  const Vec w = values_of(params["in_proj_weight"]);
  double max_abs = 0, mean = 0, square = 0;
  for (double x : w) {
    max_abs = std::max(max_abs, std::fabs(x));
    mean += x / double(w.size());
    square += x * x / double(w.size());
  }
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.98 * bound);
  EXPECT_NEAR(mean, 0.0, 0.01);  // std of the mean ~ 0.088 / sqrt(12288) ~ 8e-4
  EXPECT_NEAR(square, bound * bound / 3, 0.05 * bound * bound / 3);
  for (double b : values_of(params["in_proj_bias"])) EXPECT_EQ(b, 0.0);
  for (double b : values_of(params["out_proj.bias"])) EXPECT_EQ(b, 0.0);
  // out_proj.weight keeps Linear's U(-1/sqrt(E), 1/sqrt(E)), narrower than the xavier bound.
  double out_max = 0;
  for (double x : values_of(params["out_proj.weight"])) out_max = std::max(out_max, std::fabs(x));
  EXPECT_LE(out_max, 1.0 / std::sqrt(double(E)));
  EXPECT_GT(out_max, 0.95 / std::sqrt(double(E)));
}

TEST(AttentionMha, DropoutOnlyInTraining) {
  auto mha = ox::nn::MultiheadAttention(4, 2, ox::nn::MultiheadAttentionOptions{.dropout = 0.5});
  ox::manual_seed(9);
  Tensor x = ox::randn({6, 2, 4});
  auto row_sums = [&] {
    auto [out, weights] = mha(x, x, x);
    return values_of(weights.sum(-1));
  };
  mha->eval();
  for (double s : row_sums()) EXPECT_NEAR(s, 1.0, 1e-5);
  mha->train();
  int off = 0;
  for (double s : row_sums()) off += std::fabs(s - 1.0) > 1e-3;
  EXPECT_GT(off, 0);
}

TEST(AttentionMha, Gradcheck) {
  for (bool batch_first : {false, true}) {
    auto mha = make_mha(4, 2, batch_first);
    // N = 2, L = 2, S = 3 in the module's layout.
    Tensor q = randn64({2, 2, 4}).requires_grad_();
    Tensor kv = randn64(batch_first ? ox::Shape{2, 3, 4} : ox::Shape{3, 2, 4}).requires_grad_();
    Tensor padding = ox::tensor(std::vector<bool>{false, true, false, false, false, true}, {2, 3});
    auto result = ox::autograd::gradcheck(
        [&](const std::vector<Tensor>& x) {
          auto [out, weights] = mha(x[0], x[1], x[1], {.key_padding_mask = padding});
          return std::vector<Tensor>{out, weights};
        },
        {q, kv, mha->in_proj_weight, mha->in_proj_bias, mha->out_proj->weight,
         mha->out_proj->bias});
    EXPECT_TRUE(result.ok) << "batch_first " << batch_first << ": " << result.report;
  }
  // Self-attention, causal.
  auto mha = make_mha(4, 2, true);
  Tensor x = randn64({1, 3, 4}).requires_grad_();
  auto result = ox::autograd::gradcheck(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{
            std::get<0>(mha(in[0], in[0], in[0], {.need_weights = false, .is_causal = true}))};
      },
      {x, mha->in_proj_weight});
  EXPECT_TRUE(result.ok) << result.report;
}

TEST(AttentionMha, BadInputs) {
  using ox::ErrorKind;
  using ox::nn::MultiheadAttention;
  EXPECT_EQ(kind_of([] { MultiheadAttention(5, 2); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([] { MultiheadAttention(4, 0); }), ErrorKind::Value);
  MultiheadAttention mha(4, 2);
  Tensor x = ox::randn({3, 2, 4});
  EXPECT_EQ(kind_of([&] { mha(ox::randn({1, 3, 2, 4}), x, x); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { mha(x, ox::randn({3, 4}), ox::randn({3, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { mha(ox::randn({3, 2, 5}), x, x); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { mha(x, x, ox::randn({2, 2, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { mha(x, ox::randn({3, 1, 4}), ox::randn({3, 1, 4})); }), ErrorKind::Shape);
  Tensor x64 = x.to(ox::kF64);
  EXPECT_EQ(kind_of([&] { mha(x64, x64, x64); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              mha(x, x, x, {.key_padding_mask = ox::zeros({3, 2}, ox::kBool)});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              mha(x, x, x, {.attn_mask = ox::zeros({3, 2}, ox::kBool)});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              mha(x, x, x, {.attn_mask = ox::zeros({2, 3, 3}, ox::kBool)});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              mha(x, x, x, {.attn_mask = ox::zeros({3, 3}, ox::kI64)});
            }),
            ErrorKind::DType);
}

// ---- TransformerEncoderLayer -----------------------------------------------------------------

// rows [R, E]: (x - mean) / sqrt(var + eps) * w + b per row.
Vec layer_norm_rows(const Vec& x, int64_t E, const Vec& w, const Vec& b, double eps) {
  Vec out(x.size());
  for (size_t r = 0; r < x.size() / size_t(E); ++r) {
    double mean = 0, var = 0;
    for (int64_t e = 0; e < E; ++e) mean += x[r * E + e] / double(E);
    for (int64_t e = 0; e < E; ++e)
      var += (x[r * E + e] - mean) * (x[r * E + e] - mean) / double(E);
    for (int64_t e = 0; e < E; ++e)
      out[r * E + e] = (x[r * E + e] - mean) / std::sqrt(var + eps) * w[e] + b[e];
  }
  return out;
}

// rows [R, in] @ w[out, in]ᵀ + b.
Vec linear_rows(const Vec& x, const Vec& w, const Vec& b, int64_t in, int64_t out) {
  const size_t R = x.size() / size_t(in);
  Vec y(R * size_t(out));
  for (size_t r = 0; r < R; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[o];
      for (int64_t i = 0; i < in; ++i) acc += w[o * in + i] * x[r * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

Vec plus(Vec a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// x [N, S, E]; dropout left out (eval or p = 0).
Vec encoder_reference(const ox::nn::TransformerEncoderLayer& layer, const Vec& x, int64_t N,
                      int64_t S, const Bias& bias) {
  const int64_t E = layer->d_model, FF = layer->options.dim_feedforward;
  const double eps = layer->options.layer_norm_eps;
  const bool gelu = layer->options.activation == "gelu";
  const MhaWeights attn = weights_of(layer->self_attn);
  auto norm = [&](const ox::nn::LayerNorm& ln, const Vec& v) {
    return layer_norm_rows(v, E, values_of(ln->weight), values_of(ln->bias), eps);
  };
  auto sa = [&](const Vec& v) { return mha_reference(attn, v, v, v, N, S, S, bias).out; };
  auto ff = [&](const Vec& v) {
    Vec h =
        linear_rows(v, values_of(layer->linear1->weight), values_of(layer->linear1->bias), E, FF);
    for (double& a : h) a = gelu ? 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))) : std::max(a, 0.0);
    return linear_rows(h, values_of(layer->linear2->weight), values_of(layer->linear2->bias), FF,
                       E);
  };
  if (layer->options.norm_first) {
    Vec y = plus(x, sa(norm(layer->norm1, x)));
    return plus(y, ff(norm(layer->norm2, y)));
  }
  Vec y = norm(layer->norm1, plus(x, sa(x)));
  return norm(layer->norm2, plus(y, ff(y)));
}

ox::nn::TransformerEncoderLayer make_layer(bool norm_first, bool batch_first,
                                           const std::string& activation, double dropout = 0.0) {
  ox::manual_seed(31);
  ox::nn::TransformerEncoderLayer layer(
      4, 2,
      ox::nn::TransformerEncoderLayerOptions{.dim_feedforward = 6,
                                             .dropout = dropout,
                                             .activation = activation,
                                             .batch_first = batch_first,
                                             .norm_first = norm_first});
  layer->to(ox::kF64);
  ox::NoGradGuard no_grad;
  for (const Tensor& p : layer->parameters())  // biases and norm weights away from 0 and 1
    if (p.dim() == 1) ox::Tensor(p).copy_(randn64(p.shape()));
  return layer;
}

TEST(AttentionEncoderLayer, ChildNames) {
  ox::nn::TransformerEncoderLayer layer(8, 2);
  std::vector<std::string> names;
  for (const auto& [name, child] : layer->named_children()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1",
                                             "norm2", "dropout1", "dropout2"}));
  auto params = layer->named_parameters();
  EXPECT_EQ(params["self_attn.in_proj_weight"].shape(), ox::Shape({24, 8}));
  EXPECT_EQ(params["linear1.weight"].shape(), ox::Shape({2048, 8}));
  EXPECT_EQ(params["linear2.weight"].shape(), ox::Shape({8, 2048}));
  EXPECT_EQ(params["norm2.bias"].shape(), ox::Shape({8}));
  EXPECT_EQ(params.size(), 12u);
}

TEST(AttentionEncoderLayer, PostNormReluWithPadding) {
  auto layer = make_layer(/*norm_first=*/false, /*batch_first=*/false, "relu");
  const int64_t S = 3, N = 2;
  Tensor src = randn64({S, N, 4});
  Tensor padding = ox::tensor(std::vector<bool>{false, false, true, false, true, false}, {N, S});
  Tensor out = layer(src, Tensor(), padding);
  EXPECT_EQ(out.shape(), ox::Shape({S, N, 4}));
  Vec expected = encoder_reference(layer, batch_major(src, false), N, S,
                                   [](int64_t n, int64_t, int64_t, int64_t j) {
                                     return (n == 0 ? j == 2 : j == 1) ? -kInf : 0.0;
                                   });
  expect_close(batch_major(out, false), expected, 1e-12, 1e-9, "post-norm");
}

TEST(AttentionEncoderLayer, PreNormGeluBatchFirstCausal) {
  auto layer = make_layer(/*norm_first=*/true, /*batch_first=*/true, "gelu");
  const int64_t N = 2, S = 4;
  Tensor src = randn64({N, S, 4});
  Tensor out = layer(src, Tensor(), Tensor(), /*is_causal=*/true);
  Vec expected = encoder_reference(
      layer, values_of(src), N, S,
      [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; });
  expect_close(values_of(out), expected, 1e-12, 1e-9, "pre-norm");
  // The same causal mask given as src_mask (MHA's convention: true = not allowed).
  Tensor mask = ox::gt(ox::arange(S).unsqueeze(0), ox::arange(S).unsqueeze(1));
  expect_close(values_of(layer(src, mask)), expected, 1e-12, 1e-9, "pre-norm src_mask");
}

TEST(AttentionEncoderLayer, TrainDiffersFromEvalWithDropout) {
  auto layer = make_layer(/*norm_first=*/false, /*batch_first=*/true, "relu", /*dropout=*/0.3);
  const int64_t N = 2, S = 5;
  Tensor src = randn64({N, S, 4});
  layer->eval();
  const Vec eval_out = values_of(layer(src));
  expect_close(eval_out, encoder_reference(layer, values_of(src), N, S, kNoBias), 1e-12, 1e-9,
               "eval");
  layer->train();
  const Vec train_out = values_of(layer(src));
  double max_diff = 0;
  for (size_t i = 0; i < eval_out.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(eval_out[i] - train_out[i]));
  EXPECT_GT(max_diff, 1e-3);
}

TEST(AttentionEncoderLayer, InSequential) {
  auto layer = make_layer(/*norm_first=*/true, /*batch_first=*/true, "relu");
  ox::nn::Sequential model(layer, ox::nn::Identity());
  Tensor src = randn64({1, 3, 4});
  EXPECT_EQ(values_of(model(src)), values_of(layer(src)));
  EXPECT_EQ(model->named_parameters().size(), 12u);
}

TEST(AttentionEncoderLayer, Gradcheck) {
  auto layer = make_layer(/*norm_first=*/false, /*batch_first=*/true, "gelu");
  Tensor src = randn64({1, 3, 4}).requires_grad_();
  auto result = ox::autograd::gradcheck(
      [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{layer(x[0])}; },
      {src, layer->linear1->weight, layer->self_attn->in_proj_bias});
  EXPECT_TRUE(result.ok) << result.report;
}

TEST(AttentionEncoderLayer, BadInputs) {
  using ox::ErrorKind;
  EXPECT_EQ(kind_of([] {
              ox::nn::TransformerEncoderLayer(
                  4, 2, ox::nn::TransformerEncoderLayerOptions{.activation = "tanh"});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::nn::TransformerEncoderLayer(6, 4); }), ErrorKind::Value);
  ox::nn::TransformerEncoderLayer layer(
      4, 2, ox::nn::TransformerEncoderLayerOptions{.dim_feedforward = 8});
  EXPECT_EQ(kind_of([&] { layer(ox::randn({3, 2, 4}, {.dtype = ox::kF64})); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { layer(ox::randn({3, 2, 5})); }), ErrorKind::Shape);
}

}  // namespace
