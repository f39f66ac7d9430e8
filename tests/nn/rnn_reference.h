#pragma once
// Plain f64 loops for RNN, LSTM and GRU (the tests' independent reference), and helpers that set
// a recurrent module's parameters to known values and read them back as vectors.

#include <gtest/gtest.h>
#include <oxmera/nn/rnn.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace rnnref {

using Vec = std::vector<double>;
enum class Kind { Tanh, Relu, Lstm, Gru };

inline int64_t gate_count(Kind k) { return k == Kind::Lstm ? 4 : k == Kind::Gru ? 3 : 1; }
inline double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// One layer and direction's parameters; biases empty when absent, w_hr empty without proj.
struct Weights {
  Vec w_ih, w_hh, b_ih, b_hh, w_hr;
};

// One step for one sequence: x [in]; h [H_out] and c [H] updated in place.
inline void step(Kind kind, const Weights& w, const double* x, int64_t in, int64_t hidden, Vec& h,
                 Vec& c) {
  const int64_t g = gate_count(kind) * hidden, hh = int64_t(h.size());
  Vec px(static_cast<size_t>(g)), ph(static_cast<size_t>(g));
  for (int64_t r = 0; r < g; ++r) {
    double a = w.b_ih.empty() ? 0 : w.b_ih[size_t(r)];
    double b = w.b_hh.empty() ? 0 : w.b_hh[size_t(r)];
    for (int64_t j = 0; j < in; ++j) a += w.w_ih[size_t(r * in + j)] * x[j];
    for (int64_t j = 0; j < hh; ++j) b += w.w_hh[size_t(r * hh + j)] * h[size_t(j)];
    px[size_t(r)] = a;
    ph[size_t(r)] = b;
  }
  const auto at = [](const Vec& v, int64_t i) { return v[size_t(i)]; };
  switch (kind) {
    case Kind::Tanh:
    case Kind::Relu:
      for (int64_t j = 0; j < hidden; ++j) {
        const double s = at(px, j) + at(ph, j);
        h[size_t(j)] = kind == Kind::Tanh ? std::tanh(s) : std::max(0.0, s);
      }
      break;
    case Kind::Lstm: {
      Vec m(static_cast<size_t>(hidden));
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t H = hidden;
        const double i = sig(at(px, j) + at(ph, j)), f = sig(at(px, H + j) + at(ph, H + j));
        const double gg = std::tanh(at(px, 2 * H + j) + at(ph, 2 * H + j));
        const double o = sig(at(px, 3 * H + j) + at(ph, 3 * H + j));
        c[size_t(j)] = f * c[size_t(j)] + i * gg;
        m[size_t(j)] = o * std::tanh(c[size_t(j)]);
      }
      if (w.w_hr.empty()) {
        h = m;
      } else {
        for (int64_t p = 0; p < hh; ++p) {
          double s = 0;
          for (int64_t j = 0; j < hidden; ++j) s += w.w_hr[size_t(p * hidden + j)] * m[size_t(j)];
          h[size_t(p)] = s;
        }
      }
      break;
    }
    case Kind::Gru: {
      Vec out(static_cast<size_t>(hidden));
      const int64_t H = hidden;
      for (int64_t j = 0; j < H; ++j) {
        const double r = sig(at(px, j) + at(ph, j)), z = sig(at(px, H + j) + at(ph, H + j));
        const double n = std::tanh(at(px, 2 * H + j) + r * at(ph, 2 * H + j));
        out[size_t(j)] = (1 - z) * n + z * h[size_t(j)];
      }
      h = out;
      break;
    }
  }
}

struct Spec {
  Kind kind = Kind::Lstm;
  int64_t in = 3, hidden = 4, proj = 0, layers = 1, dirs = 1;
  int64_t h_out() const { return proj > 0 ? proj : hidden; }
};
struct Result {
  Vec out, h_n, c_n;  // [L, N, D*H_out], [layers*D, N, H_out], [layers*D, N, H]
};

// x [L, N, in]; h0 [layers*D, N, H_out] and c0 [layers*D, N, H] (empty: zeros); lens [N].
inline Result run(const Spec& s, const std::vector<Weights>& w, const Vec& x, int64_t steps,
                  int64_t batch, const Vec& h0, const Vec& c0, std::vector<int64_t> lens) {
  if (lens.empty()) lens.assign(size_t(batch), steps);
  const int64_t ho = s.h_out(), H = s.hidden, D = s.dirs;
  Vec layer_in = x;
  int64_t in = s.in;
  Result r;
  r.h_n.assign(size_t(s.layers * D * batch * ho), 0);
  r.c_n.assign(size_t(s.layers * D * batch * H), 0);
  for (int64_t k = 0; k < s.layers; ++k) {
    Vec out(size_t(steps * batch * D * ho), 0.0);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t slot = k * D + d;
      for (int64_t n = 0; n < batch; ++n) {
        Vec h(size_t(ho), 0.0), c(size_t(H), 0.0);
        for (int64_t j = 0; j < ho && !h0.empty(); ++j)
          h[size_t(j)] = h0[size_t((slot * batch + n) * ho + j)];
        for (int64_t j = 0; j < H && !c0.empty(); ++j)
          c[size_t(j)] = c0[size_t((slot * batch + n) * H + j)];
        for (int64_t q = 0; q < steps; ++q) {
          const int64_t t = d == 0 ? q : steps - 1 - q;
          if (t >= lens[size_t(n)]) continue;
          step(s.kind, w[size_t(slot)], &layer_in[size_t((t * batch + n) * in)], in, H, h, c);
          for (int64_t j = 0; j < ho; ++j)
            out[size_t((t * batch + n) * D * ho + d * ho + j)] = h[size_t(j)];
        }
        for (int64_t j = 0; j < ho; ++j) r.h_n[size_t((slot * batch + n) * ho + j)] = h[size_t(j)];
        for (int64_t j = 0; j < H; ++j) r.c_n[size_t((slot * batch + n) * H + j)] = c[size_t(j)];
      }
    }
    layer_in = out;
    in = D * ho;
  }
  r.out = layer_in;
  return r;
}

// Known values in [-0.6, 0.6), a fixed function of (index, salt).
inline Vec known(int64_t count, uint64_t salt) {
  Vec v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[size_t(i)] = oxtest::uniform_at(i, salt, -0.6, 0.6);
  return v;
}

// Writes known values into `param` and returns them as stored (rounded to its dtype).
inline Vec set_known(ox::Tensor& param, uint64_t salt) {
  if (!param.defined()) return {};
  const Vec v = known(param.numel(), salt);
  ox::NoGradGuard g;
  param.copy_(ox::tensor(v, param.shape()));
  return param.to_vector<double>();  // as rounded to the parameter's dtype
}

// Sets every parameter of a layer to known values, layer-major, direction-minor.
inline std::vector<Weights> set_known(ox::nn::RNNBaseImpl& m, uint64_t salt = 11) {
  std::vector<Weights> out;
  for (int64_t k = 0; k < m.config.num_layers; ++k)
    for (int64_t d = 0; d < m.num_directions(); ++d) {
      auto w = m.weights(k, d);
      Weights r;
      r.w_ih = set_known(w.w_ih, salt++);
      r.w_hh = set_known(w.w_hh, salt++);
      r.b_ih = set_known(w.b_ih, salt++);
      r.b_hh = set_known(w.b_hh, salt++);
      r.w_hr = set_known(w.w_hr, salt++);
      out.push_back(r);
    }
  return out;
}

inline void expect_close(const Vec& got, const Vec& want, double atol, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
}

}  // namespace rnnref
