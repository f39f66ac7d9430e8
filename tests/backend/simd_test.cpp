// The Highway kernels at every SIMD target this CPU runs (AVX-512, AVX2, SSE4 and the portable
// C++ path), each checked against f64 references computed here, plus the properties that
// must hold across targets: 16-lane sums bitwise equal everywhere, 16-bit conversions bitwise
// equal to the scalar conversions of oxmera/core/half.h.

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "backend/cpu/simd/simd.h"
#include "ops/op_util.h"
#include "test_util.h"

namespace {

using oxtest::uniform_at;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

class SimdTarget : public ::testing::TestWithParam<std::string> {
 protected:
  oxtest::AtSimdTarget at_{GetParam()};
  const ox::DeviceGuard on_cpu_{ox::Device::cpu()};  // the CPU's kernels, whatever the test device
};

// Inputs for the unary ops: edges, then a sweep, with lengths that leave every tail size.
std::vector<double> unary_inputs() {
  std::vector<double> v = {0.0,   -0.0,  1.0,    -1.0,   0.5,    -0.5, 1e-40, -1e-40, 1e-20,
                           20.0,  -20.0, 30.0,   -30.0,  88.0,   88.7, 89.0,  100.0,  1e20,
                           -1e20, -87.5, -103.0, -104.5, -200.0, kInf, -kInf, kNan};
  for (int i = 0; i < 997; ++i) v.push_back(uniform_at(i, 7, -12.0, 12.0));
  for (int i = 0; i < 101; ++i) v.push_back(std::exp(uniform_at(i, 8, -80.0, 80.0)));
  return v;
}

struct UnaryCase {
  const char* name;
  ox::Tensor (*op)(const ox::Tensor&);
  double (*ref)(double);
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

const UnaryCase kUnaryCases[] = {
    {"exp", [](const ox::Tensor& x) { return ox::exp(x); }, [](double x) { return std::exp(x); }},
    {"expm1", [](const ox::Tensor& x) { return ox::expm1(x); },
     [](double x) { return std::expm1(x); }},
    {"log", [](const ox::Tensor& x) { return ox::log(x); }, [](double x) { return std::log(x); }},
    {"log2", [](const ox::Tensor& x) { return ox::log2(x); },
     [](double x) { return std::log2(x); }},
    {"log10", [](const ox::Tensor& x) { return ox::log10(x); },
     [](double x) { return std::log10(x); }},
    {"log1p", [](const ox::Tensor& x) { return ox::log1p(x); },
     [](double x) { return std::log1p(x); }},
    {"tanh", [](const ox::Tensor& x) { return ox::tanh(x); },
     [](double x) { return std::tanh(x); }},
    {"sigmoid", [](const ox::Tensor& x) { return ox::sigmoid(x); }, sigmoid_ref},
    {"silu", [](const ox::Tensor& x) { return ox::silu(x); },
     [](double x) { return x * sigmoid_ref(x); }},
    {"logsigmoid", [](const ox::Tensor& x) { return ox::logsigmoid(x); },
     [](double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x))); }},
    {"gelu_tanh", [](const ox::Tensor& x) { return ox::gelu(x, "tanh"); },
     [](double x) {
       return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
     }},
    {"mish", [](const ox::Tensor& x) { return ox::mish(x); },
     [](double x) { return x * std::tanh(x > 20 ? x : std::log1p(std::exp(x))); }},
    {"erf", [](const ox::Tensor& x) { return ox::erf(x); }, [](double x) { return std::erf(x); }},
    {"gelu", [](const ox::Tensor& x) { return ox::gelu(x); },
     [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }},
};

// |got - want| <= atol + rtol |want|, with NaN matching NaN and infinities exactly.
void expect_close(double got, double want, double atol, double rtol, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    EXPECT_LE(std::fabs(got - want), atol + rtol * std::fabs(want))
        << what << ": got " << got << ", want " << want;
  }
}

TEST_P(SimdTarget, IsTheOneInUse) { EXPECT_EQ(ox::simd_target(), GetParam()); }

TEST_P(SimdTarget, UnaryOpsMatchF64AtEveryTailLength) {
  const std::vector<double> inputs = unary_inputs();
  for (const UnaryCase& c : kUnaryCases) {
    for (ox::DType dt : {ox::kF32, ox::kF64}) {
      const bool f32 = dt == ox::kF32;
      // Every prefix length up to 40 covers each tail of every vector width.
      for (int64_t n :
           {int64_t(0), int64_t(1), int64_t(7), int64_t(23), int64_t(40), int64_t(inputs.size())}) {
        const std::vector<double> in(inputs.begin(), inputs.begin() + n);
        const ox::Tensor x = ox::tensor(in, ox::TensorOptions{dt});
        // Also strided: the buffered path must give the same values.
        const ox::Tensor wide = ox::zeros({n, 2}, ox::TensorOptions{dt});
        wide.select(1, 0).copy_(x);
        const std::vector<double> got = c.op(x).to_vector<double>();
        const std::vector<double> got_strided = c.op(wide.select(1, 0)).to_vector<double>();
        for (int64_t i = 0; i < n; ++i) {
          // The reference of the value the kernel saw (rounded to f32 for f32).
          const double xi = f32 ? double(float(in[size_t(i)])) : in[size_t(i)];
          double want = c.ref(xi);
          if (f32) want = double(float(want));
          const std::string what = std::string(c.name) + "(" + std::to_string(xi) + ") " +
                                   std::string(ox::dtype_name(dt)) + " n=" + std::to_string(n);
          expect_close(got[size_t(i)], want, f32 ? 1.3e-6 : 1e-7, f32 ? 1e-5 : 1e-7, what);
          if (!(std::isnan(got[size_t(i)]) && std::isnan(got_strided[size_t(i)]))) {
            EXPECT_EQ(got[size_t(i)], got_strided[size_t(i)]) << what << " strided";
          }
        }
      }
    }
  }
}

// f32 erf is our own polynomial fit (math.cpp): within an ulp of the exact value over a sweep
// of every binade from 1e-30 to 8. GELU is within 2 ulps where x >= 0. Left of 0 its value
// x Φ(x) moves by up to x² ulps with the rounding of x / √2, and as much again with that of the
// exponent of its erfc, so there it is held to 2 + 2x² (libm's 1 + erf(x / √2), which cancels,
// is off by hundreds of ulps from x = -2). Left of -5.6 (where erf(x / √2) is -1 in f32) GELU
// is 0, as libm's x (1 + erf(x / √2)) / 2 gives.
TEST_P(SimdTarget, ErfIsWithinAnUlpOfF64) {
  std::vector<double> v;
  for (int i = 0; i < 20000; ++i) {
    const double x = std::exp(uniform_at(i, 9, std::log(1e-30), std::log(8.0)));
    v.push_back(x);
    v.push_back(-x);
  }
  const ox::Tensor x = ox::tensor(v, ox::TensorOptions{ox::kF32});
  const std::vector<double> erf = ox::erf(x).to_vector<double>();
  const std::vector<double> gelu = ox::gelu(x).to_vector<double>();
  const auto ulps = [](double got, double want) {
    const float w = std::fabs(float(want));
    const double ulp = double(std::nextafter(w, std::numeric_limits<float>::infinity()) - w);
    return std::fabs(got - want) / ulp;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    const double xi = double(float(v[i]));
    EXPECT_LE(ulps(erf[i], std::erf(xi)), 1.25) << "erf(" << xi << ")";
    // Past |x| = 4 erf is ±1 in f32 and its tail is flushed: gelu(x) is 0 below -4·√2.
    if (xi > -4 * std::sqrt(2.0)) {
      EXPECT_LE(ulps(gelu[i], 0.5 * xi * std::erfc(-xi / std::sqrt(2.0))),
                2 + 2 * std::min(xi, 0.0) * xi)
          << "gelu(" << xi << ")";
    } else {
      EXPECT_EQ(gelu[i], 0.0) << "gelu(" << xi << ")";
    }
  }
}

// gelu's gradient, g (Φ(x) + x φ(x)) and the tanh form's, by the gelu_backward rows' vector
// kernels (f32 both, f64 the tanh form), contiguous and strided, against f64. The two terms
// cancel near x = -0.75, so the error is held to the size of the terms, not of their sum, and
// it grows as x² with the rounding of x / √2 (see ErfIsWithinAnUlpOfF64).
TEST_P(SimdTarget, GeluGradientsAreCloseToF64) {
  const std::vector<double> xs = unary_inputs();
  std::vector<double> gs;
  for (size_t i = 0; i < xs.size(); ++i) gs.push_back(uniform_at(int64_t(i), 21, -2.0, 2.0));
  constexpr double k = 0.7978845608028654, c = 0.044715;
  for (const ox::DType dt : {ox::kF32, ox::kF64}) {
    for (const char* form : {"none", "tanh"}) {
      const ox::Tensor x = ox::tensor(xs, ox::TensorOptions{dt});
      const ox::Tensor g = ox::tensor(gs, ox::TensorOptions{dt});
      const std::vector<double> got = ox::ops::gelu_backward(g, x, form).to_vector<double>();
      // Every other element of tensors twice as wide: the strided path's buffers.
      const auto spread = [](const ox::Tensor& t) {
        return ox::stack({t, ox::zeros_like(t)}, 1).select(1, 0);
      };
      const std::vector<double> strided =
          ox::ops::gelu_backward(spread(g), spread(x), form).to_vector<double>();
      const double eps = dt == ox::kF32 ? 0x1p-24 : 0x1p-53;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double xi = dt == ox::kF32 ? double(float(xs[i])) : xs[i];
        const double gi = dt == ox::kF32 ? double(float(gs[i])) : gs[i];
        if (dt == ox::kF32 && std::isfinite(xi) && std::fabs(xi) > 1e19)
          continue;  // x² overflows f32: 0 · ∞ where f64 has a number
        double want, scale;
        if (std::string(form) == "none") {
          const double cdf = 0.5 * std::erfc(-xi / std::sqrt(2.0));
          const double pdf = std::exp(-0.5 * xi * xi) / std::sqrt(2 * M_PI);
          want = gi * (cdf + xi * pdf);
          scale = std::fabs(gi) * (cdf + std::fabs(xi * pdf));
        } else {
          const double t = std::tanh(k * (xi + c * xi * xi * xi));
          const double du = k * (1 + 3 * c * xi * xi);
          const double curve = 0.5 * xi * (1 - t * t) * du;
          want = gi * (0.5 * (1 + t) + curve);
          scale = std::fabs(gi) * (0.5 * (1 + std::fabs(t)) + std::fabs(curve));
        }
        const std::string what = std::string(form) + " " + std::string(ox::dtype_name(dt)) +
                                 " at " + std::to_string(xi) + ", g " + std::to_string(gi);
        EXPECT_EQ(std::isnan(got[i]), std::isnan(want)) << what;
        if (std::isnan(want)) continue;
        // Left of -4·√2 the f32 kernel flushes Φ(x) (erfc's tail, as gelu's forward and
        // PyTorch's 1 + erf(x / √2)): it leaves x φ(x), off by |g| Φ(x) < |g| 7.6e-9.
        const bool flushed = dt == ox::kF32 && std::string(form) == "none" && xi < -4 * M_SQRT2;
        const double flush = flushed ? std::fabs(gi) * 0.5 * std::erfc(-xi / std::sqrt(2.0)) : 0;
        const double tol =
            (16 + 4 * xi * xi) * eps * scale + flush + (dt == ox::kF32 ? 1e-37 : 1e-300);
        EXPECT_NEAR(got[i], want, tol) << what;
        EXPECT_EQ(got[i], strided[i]) << what << " strided";
      }
    }
  }
}

TEST_P(SimdTarget, UnaryEdgesAreIeee) {
  const auto at = [](ox::Tensor (*op)(const ox::Tensor&), double x) {
    return op(ox::tensor({x}, ox::TensorOptions{ox::kF32})).to_vector<double>()[0];
  };
  EXPECT_TRUE(std::isnan(at(ox::exp, kNan)));
  EXPECT_EQ(at(ox::exp, kInf), kInf);
  EXPECT_EQ(at(ox::exp, -kInf), 0.0);
  EXPECT_EQ(at(ox::exp, 89.0), kInf);
  EXPECT_EQ(at(ox::exp, 200.0), kInf);
  EXPECT_EQ(at(ox::expm1, -kInf), -1.0);
  EXPECT_EQ(at(ox::log, 0.0), -kInf);
  EXPECT_EQ(at(ox::log, -0.0), -kInf);
  EXPECT_TRUE(std::isnan(at(ox::log, -1.0)));
  EXPECT_TRUE(std::isnan(at(ox::log, kNan)));
  EXPECT_EQ(at(ox::log, kInf), kInf);
  EXPECT_EQ(at(ox::log2, 0.0), -kInf);
  EXPECT_EQ(at(ox::log10, kInf), kInf);
  EXPECT_EQ(at(ox::log1p, -1.0), -kInf);
  EXPECT_TRUE(std::isnan(at(ox::log1p, -2.0)));
  EXPECT_EQ(at(ox::tanh, kInf), 1.0);
  EXPECT_EQ(at(ox::tanh, -kInf), -1.0);
  EXPECT_EQ(at(ox::sigmoid, kInf), 1.0);
  EXPECT_EQ(at(ox::sigmoid, -kInf), 0.0);
  EXPECT_EQ(at(ox::logsigmoid, -kInf), -kInf);
  EXPECT_EQ(at(ox::erf, kInf), 1.0);
  EXPECT_EQ(at(ox::erf, -kInf), -1.0);
  EXPECT_TRUE(std::signbit(at(ox::erf, -0.0)));
  EXPECT_TRUE(std::isnan(at(ox::erf, kNan)));
  EXPECT_EQ(at(ox::erf, 4.5), 1.0);
  const auto gelu = [](const ox::Tensor& x) { return ox::gelu(x); };
  EXPECT_EQ(at(gelu, kInf), kInf);
  EXPECT_TRUE(std::isnan(at(gelu, -kInf)));  // -inf * 0, as libm's x (1 + erf(x / √2)) / 2
  EXPECT_TRUE(std::isnan(at(gelu, kNan)));
  EXPECT_TRUE(std::signbit(at(gelu, -0.0)));
}

// The reduction engine's order (reduce_engine.h), written out: chunks of 1024 elements, element
// i of a chunk in lane i % 16, the lanes and then the chunks combined by pairwise trees.
template <class T>
T sum_in_engine_order(const std::vector<T>& x) {
  std::vector<T> partial;
  for (size_t c = 0; c < x.size(); c += 1024) {
    T lane[16] = {};
    for (size_t i = c; i < std::min(x.size(), c + 1024); ++i) lane[(i - c) % 16] += x[i];
    for (int s = 1; s < 16; s *= 2)
      for (int l = 0; l < 16; l += 2 * s) lane[l] += lane[l + s];
    partial.push_back(lane[0]);
  }
  for (size_t s = 1; s < partial.size(); s *= 2)
    for (size_t k = 0; k + s < partial.size(); k += 2 * s) partial[k] += partial[k + s];
  return partial.empty() ? T(0) : partial[0];
}

TEST_P(SimdTarget, SumsFollowTheEngineOrderBitwise) {
  for (int64_t n : {int64_t(1024), int64_t(2048), int64_t(5 * 1024 + 7), int64_t(100003)}) {
    std::vector<float> v;
    for (int64_t i = 0; i < n; ++i)
      v.push_back(float(uniform_at(i, 13, -1.0, 1.0) * std::exp(uniform_at(i, 14, -5.0, 5.0))));
    const float want = sum_in_engine_order(v);
    EXPECT_EQ(std::bit_cast<uint32_t>(ox::sum(ox::tensor(v)).item<float>()),
              std::bit_cast<uint32_t>(want))
        << "n=" << n;
    // Rows of 3 and 7 chunks: each row's chunks are one run of the vector kernel, which takes
    // them four, two and one at a time.
    for (const int64_t width : {3 * 1024, 7 * 1024}) {
      const ox::Tensor rows = ox::tensor(v).narrow(0, 0, n / width * width).reshape({-1, width});
      const std::vector<float> got = ox::sum(rows, {1}).to_vector<float>();
      for (size_t r = 0; r < got.size(); ++r) {
        const std::vector<float> row(v.begin() + r * width, v.begin() + (r + 1) * width);
        EXPECT_EQ(std::bit_cast<uint32_t>(got[r]),
                  std::bit_cast<uint32_t>(sum_in_engine_order(row)))
            << "row " << r << " of " << width;
      }
    }
  }
}

TEST_P(SimdTarget, SumsAreBitwiseTheSameAsOnThePortableTarget) {
  // Lengths around the 16 lanes and the 1024-element chunks.
  for (int64_t n :
       {int64_t(15), int64_t(16), int64_t(17), int64_t(1023), int64_t(1025), int64_t(100003)}) {
    for (ox::DType dt : {ox::kF32, ox::kF64}) {
      std::vector<double> v(static_cast<size_t>(n));
      double want = 0;
      for (int64_t i = 0; i < n; ++i) {
        v[size_t(i)] = uniform_at(i, 11, -1.0, 1.0) * std::exp(uniform_at(i, 12, -5.0, 5.0));
        want += dt == ox::kF32 ? double(float(v[size_t(i)])) : v[size_t(i)];
      }
      const ox::Tensor x = ox::tensor(v, ox::TensorOptions{dt});
      const double here = ox::sum(x).item<double>();
      double portable;
      {
        oxtest::AtSimdTarget portable_target(ox::simd_targets().back());
        portable = ox::sum(x).item<double>();
      }
      ox::set_simd_target(GetParam());
      EXPECT_EQ(std::bit_cast<uint64_t>(here), std::bit_cast<uint64_t>(portable))
          << ox::dtype_name(dt) << " n=" << n;
      // Reductions grow their error with n (docs/TESTING.md): sqrt(n) ulps of the magnitudes.
      double magnitude = 0;
      for (double e : v) magnitude += std::fabs(e);
      const double eps = dt == ox::kF32 ? 6e-8 : 1.2e-16;
      EXPECT_NEAR(here, want, 4 * eps * std::sqrt(double(n)) * magnitude + 1e-30);
    }
  }
}

TEST_P(SimdTarget, SoftmaxRowsMatchF64) {
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(8), int64_t(17), int64_t(64), int64_t(1000)}) {
    for (bool log : {false, true}) {
      std::vector<double> v(size_t(5 * n));
      for (int64_t i = 0; i < 5 * n; ++i) v[size_t(i)] = uniform_at(i, 13, -30.0, 30.0);
      v[size_t(n)] = kNan;                                           // row 1 has a NaN
      for (int64_t i = 0; i < n; ++i) v[size_t(2 * n + i)] = -kInf;  // row 2 is all -inf
      v[size_t(3 * n)] = 1e4;                                        // row 3 has a huge entry
      v[size_t(5 * n - 1)] = kInf;  // row 4 has +inf: inf - inf is NaN, and so is the sum
      const ox::Tensor x = ox::tensor(v, ox::TensorOptions{ox::kF32}).reshape({5, n});
      const std::vector<double> got =
          (log ? ox::log_softmax(x, 1) : ox::softmax(x, 1)).to_vector<double>();
      for (int64_t r = 0; r < 5; ++r) {
        double max = -kInf, sum = 0;
        for (int64_t i = 0; i < n; ++i) max = std::max(max, double(float(v[size_t(r * n + i)])));
        for (int64_t i = 0; i < n; ++i) sum += std::exp(double(float(v[size_t(r * n + i)])) - max);
        for (int64_t i = 0; i < n; ++i) {
          const double xi = double(float(v[size_t(r * n + i)]));
          double want = log ? (xi - max) - std::log(sum) : std::exp(xi - max) / sum;
          if (r == 1 || r == 2 || r == 4) want = kNan;
          expect_close(got[size_t(r * n + i)], want, 1.3e-6, log ? 1e-5 : 1e-5,
                       (log ? "log_softmax" : "softmax") + std::string(" row ") +
                           std::to_string(r) + " n=" + std::to_string(n));
        }
      }
    }
  }
}

TEST_P(SimdTarget, LayerNormKeepsSmallSpreadAroundLargeMean) {
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(16), int64_t(33), int64_t(768)}) {
    std::vector<double> v(size_t(2 * n)), w(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (int64_t i = 0; i < 2 * n; ++i)
      v[size_t(i)] = (i < n ? 1e6 : 0.0) + uniform_at(i, 14, -1e-3, 1e-3) * (i < n ? 1 : 1e3);
    for (int64_t i = 0; i < n; ++i) w[size_t(i)] = uniform_at(i, 15, 0.5, 2.0);
    for (int64_t i = 0; i < n; ++i) b[size_t(i)] = uniform_at(i, 16, -1.0, 1.0);
    const ox::Tensor x = ox::tensor(v, ox::TensorOptions{ox::kF64}).reshape({2, n});
    const std::vector<double> got =
        ox::layer_norm(x, {n}, ox::tensor(w, ox::TensorOptions{ox::kF64}),
                       ox::tensor(b, ox::TensorOptions{ox::kF64}), 1e-12)
            .to_vector<double>();
    for (int64_t r = 0; r < 2; ++r) {
      // In long double: the reference's own mean must be closer than the kernel's.
      long double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += v[size_t(r * n + i)];
      mean /= n;
      for (int64_t i = 0; i < n; ++i)
        var += (v[size_t(r * n + i)] - mean) * (v[size_t(r * n + i)] - mean);
      var /= n;
      for (int64_t i = 0; i < n; ++i) {
        const double want =
            double((v[size_t(r * n + i)] - mean) / std::sqrt(var + 1e-12L)) * w[size_t(i)] +
            b[size_t(i)];
        expect_close(got[size_t(r * n + i)], want, 1e-7, 1e-7, "layer_norm n=" + std::to_string(n));
      }
    }
  }
}

TEST_P(SimdTarget, HalfWideningIsExactForEveryValue) {
  std::vector<ox::Half> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i].bits = uint16_t(i);
  std::vector<float> got(65536);
  ox::cpu::simd::widen(h.data(), got.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    const float want = ox::detail::half_bits_to_float(uint16_t(i));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[i])) << std::hex << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want)) << std::hex << i;
    }
  }
  std::vector<ox::BFloat16> bf(65536);
  for (uint32_t i = 0; i < 65536; ++i) bf[i].bits = uint16_t(i);
  ox::cpu::simd::widen(bf.data(), got.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), i << 16) << std::hex << i;
}

TEST_P(SimdTarget, NarrowingRoundsAsTheScalarConversions) {
  // A stride through all f32 bit patterns, plus every tie and edge near the f16 range.
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 65521)
    x.push_back(std::bit_cast<float>(uint32_t(b)));
  for (float f : {65504.f, 65519.f, 65520.f, 65536.f, 6.1035156e-05f, 5.9604645e-08f,
                  2.9802322e-08f, 2.9802326e-08f, 1.0009766f, 1.0004883f, 1.0014648f})
    for (float s : {1.f, -1.f}) x.push_back(f * s);
  for (uint32_t m = 0; m < 8192; ++m) x.push_back(std::bit_cast<float>(0x3f800000u | m));
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(std::numeric_limits<float>::infinity());
  const int64_t n = int64_t(x.size());
  std::vector<ox::Half> h(x.size());
  std::vector<ox::BFloat16> bf(x.size());
  ox::cpu::simd::narrow(x.data(), h.data(), n);
  ox::cpu::simd::narrow(x.data(), bf.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want_h = ox::detail::float_to_half_bits(x[i]);
    const uint16_t want_bf = ox::detail::float_to_bfloat16_bits(x[i]);
    if (std::isnan(x[i])) {
      EXPECT_EQ(h[i].bits & 0x7e00, 0x7e00) << "f16 of NaN is a quiet NaN";
      EXPECT_EQ(bf[i].bits & 0x7fc0, 0x7fc0) << "bf16 of NaN is a quiet NaN";
      continue;
    }
    ASSERT_EQ(h[i].bits, want_h) << "f16 of " << x[i];
    ASSERT_EQ(bf[i].bits, want_bf) << "bf16 of " << x[i];
  }
}

std::vector<std::string> targets_here() { return ox::simd_targets(); }

INSTANTIATE_TEST_SUITE_P(Targets, SimdTarget, ::testing::ValuesIn(targets_here()),
                         [](const auto& info) { return info.param; });

TEST(SimdTargets, ListsThePortableTargetAndRefusesUnknownNames) {
  const std::vector<std::string> all = ox::simd_targets();
  ASSERT_FALSE(all.empty());
  // The portable C++ target (SCALAR or EMU128, as Highway's build chose) is always there.
  EXPECT_TRUE(all.back() == "SCALAR" || all.back() == "EMU128") << all.back();
  EXPECT_EQ(ox::simd_target(), all.front());
  const ox::Error e = oxtest::caught([] { ox::set_simd_target("NEON9"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(e, "NEON9")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, all.back())) << e.what();
  EXPECT_EQ(ox::simd_target(), all.front());
}

}  // namespace

namespace {

// OXMERA_TEST_PORTABLE_SIMD=1 runs the binary on the portable target (ctest's
// ops_on_portable_simd), whatever Highway names it on this build.
class PortableSimd : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv("OXMERA_TEST_PORTABLE_SIMD")) ox::set_simd_target(ox::simd_targets().back());
  }
};
[[maybe_unused]] const auto* const kPortableSimd =
    ::testing::AddGlobalTestEnvironment(new PortableSimd);

}  // namespace
