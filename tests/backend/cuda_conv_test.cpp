// The CUDA convolution-window and pooling kernels' arithmetic on the CPU
// (src/backend/cuda/kernels/conv.cuh): each kernel's per-element body, run here over every
// output element on host memory, gives bitwise the CPU backend's result (cpu/conv.cpp,
// cpu/pool.cpp) over random geometries, strides (negative, padded, permuted), dtypes and values
// (NaN, -inf, ties). The launches themselves run in scripts/gpu-check.sh; here, every kernel
// name the launchers look up must be an entry of the embedded PTX.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels/conv.cuh"
#include "backend/kernel_check.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/image.h"
#include "backend/cuda_ptx.h"
#endif

namespace {

using ox::DType;
using ox::Shape;
using ox::StridedArray;
using ox::Strides;
namespace k = ox::cuda::kernels;

// Host storage for an array of `shape` in a random layout: dims permuted, padded and flipped
// (negative strides) unless contiguous; the whole storage holds random values, so a stray
// read or write shows.
template <class T>
struct HostArray {
  std::vector<T> storage;
  int64_t offset = 0;  // of element [0, ..., 0]
  Shape shape;
  Strides strides;

  StridedArray array() {
    return StridedArray{storage.data() + offset, shape, strides, ox::dtype_of<T>,
                        ox::Device::cpu()};
  }
  k::Strides6 strides6() const {
    k::Strides6 s;
    for (size_t d = 0; d < strides.size(); ++d) s.v[d] = strides[d];
    return s;
  }
  T* data() { return storage.data() + offset; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
};

template <class T>
T value_of(float v) {
  return T(v);
}

template <class T>
HostArray<T> make_array(const Shape& shape, std::mt19937& rng, bool contiguous,
                        const std::vector<float>& pool) {
  HostArray<T> a;
  a.shape = shape;
  const size_t nd = shape.size();
  std::vector<size_t> order(nd);
  std::iota(order.begin(), order.end(), size_t(0));
  if (!contiguous) std::shuffle(order.begin(), order.end(), rng);
  std::vector<int64_t> strides(nd);
  int64_t size = 1;
  for (size_t r = nd; r-- > 0;) {
    const size_t d = order[r];
    strides[d] = size;
    size *= std::max<int64_t>(shape[d], 1) + (contiguous ? 0 : int64_t(rng() % 2));
  }
  if (!contiguous) {
    for (size_t d = 0; d < nd; ++d) {
      if (rng() % 4 == 0) {
        a.offset += (shape[d] - 1) * strides[d];
        strides[d] = -strides[d];
      }
    }
  }
  a.strides = Strides(strides);
  a.storage.resize(size_t(size));
  for (T& x : a.storage) x = value_of<T>(pool[rng() % pool.size()]);
  return a;
}

// Values: random fractions (an order of summation that differs shows in the low bits).
std::vector<float> fractions(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(97);
  for (float& x : v) x = u(rng);
  return v;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
void expect_same_storage(const HostArray<T>& got, const HostArray<T>& want,
                         const std::string& what) {
  ASSERT_EQ(got.storage.size(), want.storage.size());
  for (size_t i = 0; i < got.storage.size(); ++i) {
    if (!same_bits(got.storage[i], want.storage[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << double(got.storage[i])
                    << ", the CPU backend has " << double(want.storage[i]);
      return;
    }
  }
}

struct Case {
  int64_t n, c, h, w, kh, kw, ho, wo;
  ox::Window2d win;
};

int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// A random convolution geometry; the output extent sometimes one off the usual (the contract
// takes it from the shapes: the trailing padding follows).
Case random_case(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint32_t(hi - lo + 1)); };
  for (;;) {
    Case c;
    c.n = pick(1, 2), c.c = pick(1, 3), c.h = pick(1, 7), c.w = pick(1, 7);
    c.kh = pick(1, 4), c.kw = pick(1, 4);
    c.win.kernel_h = c.kh, c.win.kernel_w = c.kw;
    c.win.stride_h = pick(1, 3), c.win.stride_w = pick(1, 3);
    c.win.dilation_h = pick(1, 3), c.win.dilation_w = pick(1, 3);
    c.win.pad_h = pick(0, 3), c.win.pad_w = pick(0, 3);
    c.ho = out_extent(c.h, c.kh, c.win.stride_h, c.win.pad_h, c.win.dilation_h) + pick(-1, 1);
    c.wo = out_extent(c.w, c.kw, c.win.stride_w, c.win.pad_w, c.win.dilation_w) + pick(-1, 1);
    if (c.ho >= 1 && c.wo >= 1) return c;
  }
}

k::ConvGeom geom_of(const Case& c) {
  k::ConvGeom g;
  g.n = c.n, g.c = c.c, g.h = c.h, g.w = c.w, g.kh = c.kh, g.kw = c.kw, g.ho = c.ho, g.wo = c.wo;
  g.sh = c.win.stride_h, g.sw = c.win.stride_w, g.ph = c.win.pad_h, g.pw = c.win.pad_w;
  g.dh = c.win.dilation_h, g.dw = c.win.dilation_w;
  return g;
}

std::string describe(const Case& c) {
  const ox::Window2d& w = c.win;
  return "N" + std::to_string(c.n) + " C" + std::to_string(c.c) + " H" + std::to_string(c.h) +
         " W" + std::to_string(c.w) + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
         " out" + std::to_string(c.ho) + "x" + std::to_string(c.wo) + " s" +
         std::to_string(w.stride_h) + "," + std::to_string(w.stride_w) + " p" +
         std::to_string(w.pad_h) + "," + std::to_string(w.pad_w) + " d" +
         std::to_string(w.dilation_h) + "," + std::to_string(w.dilation_w);
}

template <class T>
class CudaConvKernels : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double, ox::Half, ox::BFloat16>;
TYPED_TEST_SUITE(CudaConvKernels, FloatTypes);

constexpr int kCases = 300;

TYPED_TEST(CudaConvKernels, Im2colAndCol2imMatchTheCpuBackend) {
  using T = TypeParam;
  std::mt19937 rng(11);
  const std::vector<float> values = fractions(rng);
  for (int t = 0; t < kCases; ++t) {
    const Case c = random_case(rng);
    const k::ConvGeom g = geom_of(c);
    const Shape in{c.n, c.c, c.h, c.w}, cols{c.n, c.c, c.kh, c.kw, c.ho, c.wo};
    SCOPED_TRACE(describe(c));

    HostArray<T> src = make_array<T>(in, rng, false, values);
    HostArray<T> want = make_array<T>(cols, rng, t % 2 == 0, values);
    HostArray<T> got = want;
    ox::cpu::im2col(want.array(), src.array(), c.win);
    for (int64_t i = 0; i < got.numel(); ++i)
      k::im2col_at<T>(got.data(), got.strides6(), src.data(), src.strides6(), g, i);
    expect_same_storage(got, want, "im2col");

    HostArray<T> col = make_array<T>(cols, rng, t % 3 == 0, values);
    HostArray<T> want2 = make_array<T>(in, rng, true, values);
    HostArray<T> got2 = want2;
    ox::cpu::col2im(want2.array(), col.array(), c.win);
    for (int64_t i = 0; i < got2.numel(); ++i)
      k::col2im_at<T>(got2.data(), col.data(), col.strides6(), g, i);
    expect_same_storage(got2, want2, "col2im");
  }
}

TYPED_TEST(CudaConvKernels, DepthwiseMatchesTheCpuBackend) {
  using T = TypeParam;
  std::mt19937 rng(12);
  const std::vector<float> values = fractions(rng);
  for (int t = 0; t < kCases; ++t) {
    Case c = random_case(rng);
    if (t % 4 ==
        0) {  // the CPU's 8-lane path of the weight gradient: unit width strides, wide rows
      c.w = 11 + int64_t(rng() % 9), c.win.stride_w = 1;
      c.wo = out_extent(c.w, c.kw, 1, c.win.pad_w, c.win.dilation_w);
    }
    const int64_t m = 1 + int64_t(rng() % 3), o = c.c * m;
    k::ConvGeom g = geom_of(c);
    g.m = m;
    SCOPED_TRACE(describe(c) + " M" + std::to_string(m));
    const Shape in{c.n, c.c, c.h, c.w}, out{c.n, o, c.ho, c.wo}, wshape{o, 1, c.kh, c.kw};
    const bool contiguous = t % 2 == 0;  // the lane path needs unit width strides
    HostArray<T> x = make_array<T>(in, rng, contiguous, values);
    HostArray<T> wt = make_array<T>(wshape, rng, contiguous, values);
    HostArray<T> bias = make_array<T>(Shape{o}, rng, false, values);
    HostArray<T> go = make_array<T>(out, rng, contiguous, values);
    const bool with_bias = t % 3 != 0;
    StridedArray bias_array = bias.array();
    if (!with_bias) bias_array.data = nullptr;

    HostArray<T> want = make_array<T>(out, rng, true, values);
    HostArray<T> got = want;
    ox::cpu::depthwise_conv2d(ox::DepthwiseOp::Forward, want.array(), x.array(), wt.array(),
                              bias_array, c.win);
    for (int64_t i = 0; i < got.numel(); ++i)
      k::depthwise_forward_at<T>(got.data(), x.data(), x.strides6(), wt.data(), wt.strides6(),
                                 with_bias ? bias.data() : nullptr, bias.strides[0], g, i);
    expect_same_storage(got, want, "depthwise forward");

    HostArray<T> want_in = make_array<T>(in, rng, true, values);
    HostArray<T> got_in = want_in;
    ox::cpu::depthwise_conv2d(ox::DepthwiseOp::InputGrad, want_in.array(), go.array(), wt.array(),
                              StridedArray{}, c.win);
    for (int64_t i = 0; i < got_in.numel(); ++i)
      k::depthwise_input_grad_at<T>(got_in.data(), go.data(), go.strides6(), wt.data(),
                                    wt.strides6(), g, i);
    expect_same_storage(got_in, want_in, "depthwise input grad");

    HostArray<T> want_w = make_array<T>(wshape, rng, true, values);
    HostArray<T> got_w = want_w;
    ox::cpu::depthwise_conv2d(ox::DepthwiseOp::WeightGrad, want_w.array(), go.array(), x.array(),
                              StridedArray{}, c.win);
    for (int64_t i = 0; i < got_w.numel(); ++i)
      k::depthwise_weight_grad_at<T>(got_w.data(), go.data(), go.strides6(), x.data(), x.strides6(),
                                     g, i);
    expect_same_storage(got_w, want_w, "depthwise weight grad");
  }
}

// A pool geometry: Max with dilation, Avg with padding at most half the kernel (as PyTorch
// requires), AdaptiveAvg of any output extent.
Case random_pool_case(std::mt19937& rng, ox::PoolOp op) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint32_t(hi - lo + 1)); };
  for (;;) {
    Case c = random_case(rng);
    if (op == ox::PoolOp::AdaptiveAvg) {
      c.ho = pick(1, 9), c.wo = pick(1, 9);
      return c;
    }
    if (op == ox::PoolOp::Avg) {
      c.win.dilation_h = c.win.dilation_w = 1;
      c.win.pad_h = pick(0, c.kh / 2), c.win.pad_w = pick(0, c.kw / 2);
      // ceil_mode's extra output sometimes (its window starts inside input + left padding).
      c.ho = out_extent(c.h, c.kh, c.win.stride_h, c.win.pad_h, 1) + pick(0, 1);
      c.wo = out_extent(c.w, c.kw, c.win.stride_w, c.win.pad_w, 1) + pick(0, 1);
      if ((c.ho - 1) * c.win.stride_h >= c.h + c.win.pad_h) --c.ho;
      if ((c.wo - 1) * c.win.stride_w >= c.w + c.win.pad_w) --c.wo;
    }
    if (c.ho >= 1 && c.wo >= 1) return c;
  }
}

template <class T, int OP>
void run_pool_forward(HostArray<T>& dst, std::vector<int64_t>& indices, HostArray<T>& src,
                      const k::ConvGeom& g) {
  for (int64_t i = 0; i < dst.numel(); ++i)
    k::pool_forward_at<T, OP>(dst.data(), indices.data(), src.data(), src.strides6(), g, i);
}

TYPED_TEST(CudaConvKernels, PoolingMatchesTheCpuBackend) {
  using T = TypeParam;
  std::mt19937 rng(13);
  std::vector<float> values = fractions(rng);
  // Ties, NaN and -inf for Max (NaN also flows through the sums).
  std::vector<float> special = {
      1.0f, 1.0f, 1.0f, 0.5f, 0.5f, -1.0f, 2.0f, 2.0f, -std::numeric_limits<float>::infinity()};
  special.push_back(std::numeric_limits<float>::quiet_NaN());
  for (int t = 0; t < 3 * kCases; ++t) {
    const auto op = ox::PoolOp(t % 3);
    Case c = random_pool_case(rng, op);
    const bool pairs = op == ox::PoolOp::Max && t % 4 == 0;
    if (pairs) {  // MaxPool2d(2), which the CPU backend runs on its own unrolled path
      c.kh = c.kw = c.win.kernel_h = c.win.kernel_w = 2;
      c.win.stride_h = c.win.stride_w = 2;
      c.win.pad_h = c.win.pad_w = 0;
      c.win.dilation_h = c.win.dilation_w = 1;
      c.h = 2 + int64_t(rng() % 7), c.w = 2 + int64_t(rng() % 7);
      c.ho = c.h / 2, c.wo = c.w / 2;
    }
    k::ConvGeom g = geom_of(c);
    ox::PoolParams p;
    p.window = c.win;
    p.count_include_pad = rng() % 2 == 0;
    p.divisor = rng() % 4 == 0 ? int64_t(1 + rng() % 5) : 0;
    g.divisor = p.divisor;
    g.count_include_pad = p.count_include_pad;
    SCOPED_TRACE(describe(c) + " op " + std::to_string(t % 3) + " divisor " +
                 std::to_string(p.divisor) + " include_pad " + std::to_string(p.count_include_pad));
    const Shape in{c.n, c.c, c.h, c.w}, out{c.n, c.c, c.ho, c.wo};
    const std::vector<float>& pool = (op == ox::PoolOp::Max && t % 2 == 0) ? special : values;
    HostArray<T> src = make_array<T>(in, rng, pairs || t % 5 == 0, pool);

    HostArray<T> want = make_array<T>(out, rng, true, values);
    HostArray<T> got = want;
    std::vector<int64_t> want_index(size_t(want.numel()), 7), got_index = want_index;
    const StridedArray index_array{want_index.data(), out,
                                   Strides{c.c * c.ho * c.wo, c.ho * c.wo, c.wo, 1}, ox::kI64,
                                   ox::Device::cpu()};
    ox::cpu::pool2d(op, want.array(), index_array, src.array(), p);
    if (op == ox::PoolOp::Max) run_pool_forward<T, k::kMax>(got, got_index, src, g);
    if (op == ox::PoolOp::Avg) run_pool_forward<T, k::kAvg>(got, got_index, src, g);
    if (op == ox::PoolOp::AdaptiveAvg) run_pool_forward<T, k::kAdaptiveAvg>(got, got_index, src, g);
    expect_same_storage(got, want, "pool2d");
    EXPECT_EQ(got_index, want_index);

    // Backward: Avg and AdaptiveAvg gather per input element; Max scatters plane by plane.
    HostArray<T> gd = make_array<T>(out, rng, t % 4 == 0, values);
    HostArray<T> want_g = make_array<T>(in, rng, true, values);
    HostArray<T> got_g = want_g;
    ox::cpu::pool2d_backward(op, want_g.array(), gd.array(), index_array, p, -1);
    if (op == ox::PoolOp::Max) {
      std::vector<k::acc_t<T>> acc(size_t(got_g.numel()), k::acc_t<T>(0));
      for (int64_t pl = 0; pl < c.n * c.c; ++pl) {
        const k::Strides6 is{{c.c * c.ho * c.wo, c.ho * c.wo, c.wo, 1}};
        EXPECT_EQ((k::pool_max_backward_plane<T>(acc.data(), gd.data(), gd.strides6(),
                                                 want_index.data(), is, g, pl)),
                  -1);
      }
      for (int64_t i = 0; i < got_g.numel(); ++i) got_g.data()[i] = k::from_acc<T>(acc[size_t(i)]);
    } else {
      for (int64_t i = 0; i < got_g.numel(); ++i) {
        if (op == ox::PoolOp::Avg)
          k::pool_avg_backward_at<T, k::kAvg>(got_g.data(), gd.data(), gd.strides6(), g, i);
        else
          k::pool_avg_backward_at<T, k::kAdaptiveAvg>(got_g.data(), gd.data(), gd.strides6(), g, i);
      }
    }
    expect_same_storage(got_g, want_g, "pool2d_backward");
  }
}

// The windows holding an input position, by pool_outputs_covering and pool_span, are exactly
// those a brute force over every output finds.
TEST(CudaConvGeometry, OutputsCoveringAnInputAreExactlyTheWindowsHoldingIt) {
  for (int op : {k::kAvg, k::kAdaptiveAvg}) {
    for (int64_t n_in = 1; n_in <= 12; ++n_in) {
      for (int64_t kernel = 1; kernel <= 5; ++kernel) {
        for (int64_t stride = 1; stride <= 4; ++stride) {
          for (int64_t pad = 0; pad <= kernel / 2; ++pad) {
            const int64_t usual = out_extent(n_in, kernel, stride, pad, 1);
            for (int64_t n_out = 1; n_out <= (op == k::kAdaptiveAvg ? 14 : usual + 1); ++n_out) {
              for (int64_t p = 0; p < n_in; ++p) {
                std::vector<int64_t> brute, fast;
                for (int64_t o = 0; o < n_out; ++o) {
                  const k::Span s = k::pool_span(op, o, n_out, n_in, kernel, stride, pad, 1);
                  if (p >= s.lo && p < s.hi) brute.push_back(o);
                }
                const k::Range r =
                    k::pool_outputs_covering(op, p, n_in, n_out, kernel, stride, pad);
                for (int64_t o = r.lo; o < r.hi; ++o) {
                  const k::Span s = k::pool_span(op, o, n_out, n_in, kernel, stride, pad, 1);
                  if (p >= s.lo && p < s.hi) fast.push_back(o);
                }
                ASSERT_EQ(fast, brute)
                    << "op " << op << " n_in " << n_in << " n_out " << n_out << " kernel " << kernel
                    << " stride " << stride << " pad " << pad << " position " << p;
              }
            }
          }
        }
      }
    }
  }
}

// output_of_tap inverts the window map: tap k of output o reads o * stride - pad + k * dilation.
TEST(CudaConvGeometry, OutputOfTapInvertsTheWindowMap) {
  for (int64_t stride = 1; stride <= 4; ++stride) {
    for (int64_t dilation = 1; dilation <= 3; ++dilation) {
      for (int64_t pad = 0; pad <= 4; ++pad) {
        for (int64_t n_out = 1; n_out <= 6; ++n_out) {
          for (int64_t k = 0; k < 4; ++k) {
            for (int64_t p = 0; p < 12; ++p) {
              int64_t want = -1;
              for (int64_t o = 0; o < n_out; ++o)
                if (o * stride - pad + k * dilation == p) want = o;
              EXPECT_EQ(k::output_of_tap(p, k, stride, pad, dilation, n_out), want);
            }
          }
        }
      }
    }
  }
}

// A bad index in Max's backward: the plane reports its first bad position, and the row-major
// smallest over the planes (what the kernels keep with atomicMin) is the CPU backend's report.
TEST(CudaConvGeometry, MaxBackwardReportsTheCpuBackendsBadIndex) {
  const int64_t n = 2, c = 3, h = 4, w = 5, ho = 2, wo = 3;
  k::ConvGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.ho = ho, g.wo = wo;
  std::vector<float> grad(size_t(n * c * ho * wo), 1.0f), out(size_t(n * c * h * w));
  // indices [N, C, Ho, Wo] stored transposed in the last two dims (strides 6 ... 1, 2).
  std::vector<int64_t> index(size_t(n * c * ho * wo), -1);
  const Strides istrides{c * ho * wo, ho * wo, 1, ho};
  const k::Strides6 is{{c * ho * wo, ho * wo, 1, ho}};
  auto at = [&](int64_t position) -> int64_t& {
    return index[size_t(k::pool_index_offset(position, is, g))];
  };
  at(4) = 3;
  at(9) = h * w;  // bad: plane 1, position 9
  at(10) = -2;    // bad, later
  at(25) = 1000;  // bad, plane 4
  at(30) = 7;
  const ox::CheckSite site =
      ox::check_site("cuda_conv_test", "index {value} at {position} of {bound}");
  std::string cpu_message;
  try {
    ox::cpu::pool2d_backward(
        ox::PoolOp::Max,
        StridedArray{out.data(), Shape{n, c, h, w}, Strides{c * h * w, h * w, w, 1}, ox::kF32,
                     ox::Device::cpu()},
        StridedArray{grad.data(), Shape{n, c, ho, wo}, Strides{c * ho * wo, ho * wo, wo, 1},
                     ox::kF32, ox::Device::cpu()},
        StridedArray{index.data(), Shape{n, c, ho, wo}, istrides, ox::kI64, ox::Device::cpu()},
        ox::PoolParams{}, site);
    ADD_FAILURE() << "the CPU backend reported nothing";
  } catch (const ox::Error& e) {
    cpu_message = e.what();
  }
  std::vector<float> acc(out.size(), 0.0f);
  const k::Strides6 gs{{c * ho * wo, ho * wo, wo, 1}};
  int64_t first = -1;
  std::vector<int64_t> reports;
  for (int64_t p = 0; p < n * c; ++p) {
    const int64_t bad =
        k::pool_max_backward_plane<float>(acc.data(), grad.data(), gs, index.data(), is, g, p);
    reports.push_back(bad);
    if (bad >= 0 && (first < 0 || bad < first)) first = bad;
  }
  EXPECT_EQ(reports, (std::vector<int64_t>{-1, 9, -1, -1, 25, -1}));
  ASSERT_EQ(first, 9);
  const std::string expected = "index " + std::to_string(at(first)) + " at " +
                               std::to_string(first) + " of " + std::to_string(h * w);
  EXPECT_NE(cpu_message.find(expected), std::string::npos) << cpu_message;
  EXPECT_EQ(acc[size_t(0 * h * w + 3)], 1.0f);  // the good ones landed
  EXPECT_EQ(acc[size_t(5 * h * w + 7)], 1.0f);
}

#ifdef OXMERA_TEST_WITH_CUDA
// Every kernel the launchers look up ("ox_conv_<row>_<dtype>", src/backend/cuda/conv.cpp) is an
// entry of the conv family's embedded PTX.
TEST(CudaConvKernelNames, EveryLaunchedKernelIsInThePtx) {
  namespace cuda = ox::cuda::detail;
  const std::string ptx = oxtest::embedded_ptx("conv");
  for (const char* row : k::kConvKernelRows) {
    for (DType dt : {ox::kF32, ox::kF64, ox::kF16, ox::kBF16}) {
      const std::string entry =
          ".entry ox_conv_" + std::string(row) + "_" + std::string(ox::dtype_name(dt)) + "(";
      EXPECT_NE(ptx.find(entry), std::string::npos) << entry;
    }
  }
}
#endif

}  // namespace
