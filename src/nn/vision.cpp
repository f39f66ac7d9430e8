// interpolate, pixel_shuffle and pixel_unshuffle, and their modules: composites of public ops
// (index_select, mul, add, reshape, permute), so they run and differentiate on every backend.

#include <algorithm>
#include <cmath>
#include <ostream>

#include "oxmera/nn/vision.h"

namespace ox::nn {
namespace functional {
namespace {

// One spatial dim's resampling: out[j] = Σ_k weights[k][j] * in[index[k][j]] (no weights: one
// tap that copies, the nearest modes).
struct Taps {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weights;
};

// PyTorch's cubic convolution (A = -0.75): the weight of a tap at distance x.
double cubic_near(double x) { return ((-0.75 + 2) * x - (-0.75 + 3)) * x * x + 1; }  // |x| <= 1
double cubic_far(double x) { return ((-0.75 * x + 3.75) * x - 6) * x + 3; }          // 1 < |x| < 2

Taps taps(const std::string& mode, int64_t in, int64_t out, std::optional<double> scale,
          bool align_corners) {
  // How far apart output samples are in input pixels (area_pixel_compute_scale).
  const bool interpolating = mode != "nearest" && mode != "nearest-exact";
  double step;
  if (interpolating && align_corners)
    step = out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  else
    step = scale ? 1.0 / *scale : double(in) / double(out);
  const auto clamped = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  Taps t;
  const size_t kinds = mode == "bicubic" ? 4 : interpolating ? 2 : 1;
  t.index.assign(kinds, std::vector<int64_t>(size_t(out)));
  if (interpolating) t.weights.assign(kinds, std::vector<double>(size_t(out)));
  for (int64_t j = 0; j < out; ++j) {
    const size_t o = size_t(j);
    if (!interpolating) {
      const double at = mode == "nearest" ? double(j) * step : (double(j) + 0.5) * step;
      t.index[0][o] = std::min(int64_t(std::floor(at)), in - 1);
      continue;
    }
    double src = align_corners ? step * double(j) : step * (double(j) + 0.5) - 0.5;
    if (mode != "bicubic") src = std::max(src, 0.0);
    const double base = std::floor(src), frac = src - base;
    const int64_t i = int64_t(base);
    if (mode == "bicubic") {
      const double w[4] = {cubic_far(frac + 1), cubic_near(frac), cubic_near(1 - frac),
                           cubic_far(2 - frac)};
      for (size_t k = 0; k < 4; ++k) {
        t.index[k][o] = clamped(i - 1 + int64_t(k));
        t.weights[k][o] = w[k];
      }
    } else {
      t.index[0][o] = clamped(i);
      t.index[1][o] = clamped(i + 1);
      t.weights[0][o] = 1 - frac;
      t.weights[1][o] = frac;
    }
  }
  return t;
}

// input resampled along `dim` by `t`.
Tensor resample(const Tensor& input, int64_t dim, const Taps& t) {
  const int64_t out = int64_t(t.index[0].size());
  Shape along(size_t(input.dim()), 1);
  along[size_t(dim)] = out;
  Tensor result;
  for (size_t k = 0; k < t.index.size(); ++k) {
    Tensor picked = index_select(input, dim, ox::tensor(t.index[k], {out}).to(input.device()));
    if (!t.weights.empty())
      picked = picked * ox::tensor(t.weights[k], {out}, {.dtype = input.dtype()})
                            .to(input.device())
                            .reshape(along);
    result = k == 0 ? picked : result + picked;
  }
  return result;
}

// `head` followed by `tail` (shapes and permutations of [*, ...]).
Dims joined(const Dims& head, std::initializer_list<int64_t> tail) {
  Dims out = head;
  for (int64_t v : tail) out.push_back(v);
  return out;
}

// The identity permutation of n leading dims.
Dims leading(int64_t n) {
  Dims out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

int64_t spatial_dims_of(const std::string& mode) {
  if (mode == "linear") return 1;
  if (mode == "bilinear" || mode == "bicubic") return 2;
  if (mode == "trilinear") return 3;
  return 0;  // the nearest modes: any
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& o) {
  OX_CHECK(input.defined(), Value, "interpolate", "input is undefined");
  const std::string& mode = o.mode;
  OX_CHECK(mode == "nearest" || mode == "nearest-exact" || mode == "linear" || mode == "bilinear" ||
               mode == "bicubic" || mode == "trilinear",
           Value, "interpolate", "mode \"", mode,
           "\" is not one of nearest, nearest-exact, linear, bilinear, bicubic, trilinear");
  OX_CHECK(input.dim() >= 3 && input.dim() <= 5, Shape, "interpolate",
           "input must be [N, C, W], [N, C, H, W] or [N, C, D, H, W], got ", input.shape());
  const int64_t dims = input.dim() - 2, wanted = spatial_dims_of(mode);
  OX_CHECK(wanted == 0 || wanted == dims, Shape, "interpolate", "mode \"", mode, "\" needs a ",
           wanted + 2, "-D input, got ", input.shape());
  const bool interpolating = wanted != 0;
  OX_CHECK(interpolating || !o.align_corners, Value, "interpolate",
           "align_corners can only be set with the interpolating modes (linear, bilinear, "
           "bicubic, trilinear), not \"",
           mode, "\"");
  OX_CHECK(!o.antialias, Value, "interpolate", "antialias=true is not supported");
  OX_CHECK(o.size.empty() != o.scale_factor.empty(), Value, "interpolate",
           "give exactly one of size and scale_factor");
  const size_t given = std::max(o.size.size(), o.scale_factor.size());
  OX_CHECK(given == 1 || int64_t(given) == dims, Value, "interpolate", "size/scale_factor has ",
           given, " values for the ", dims, " spatial dims of input ", input.shape());
  OX_CHECK(!interpolating || is_floating(input.dtype()), DType, "interpolate", "mode \"", mode,
           "\" needs a floating input, got ", input.dtype());
  if (interpolating && (input.dtype() == kF16 || input.dtype() == kBF16))
    return interpolate(input.to(kF32), o).to(input.dtype());
  const bool recompute = o.recompute_scale_factor.value_or(false);
  Tensor result = input;
  for (int64_t d = 0; d < dims; ++d) {
    const size_t at = given == 1 ? 0 : size_t(d);
    const int64_t in = input.size(2 + d);
    std::optional<double> scale;
    int64_t out;
    if (!o.size.empty()) {
      out = o.size[at];
    } else {
      scale = o.scale_factor[at];
      OX_CHECK(std::isfinite(*scale) && *scale > 0, Value, "interpolate", "scale_factor ", *scale,
               " must be positive and finite");
      out = int64_t(std::floor(double(in) * *scale));
      if (recompute) scale.reset();
    }
    OX_CHECK(in > 0 && out > 0, Shape, "interpolate",
             "input and output sizes must be positive: ", "spatial dim ", d, " of input ",
             input.shape(), " -> ", out);
    result = resample(result, 2 + d, taps(mode, in, out, scale, o.align_corners.value_or(false)));
  }
  return result;
}

Tensor pixel_shuffle(const Tensor& input, int64_t r) {
  OX_CHECK(input.defined(), Value, "pixel_shuffle", "input is undefined");
  OX_CHECK(r > 0, Value, "pixel_shuffle", "upscale_factor must be positive, got ", r);
  OX_CHECK(input.dim() >= 3 && input.size(-3) % (r * r) == 0, Shape, "pixel_shuffle",
           "input must be [*, C r², H, W] with r = ", r, ", got ", input.shape());
  const Shape lead(input.shape().begin(), input.shape().end() - 3);
  const int64_t c = input.size(-3) / (r * r), h = input.size(-2), w = input.size(-1);
  const int64_t n = int64_t(lead.size());
  return input.reshape(joined(lead, {c, r, r, h, w}))
      .permute(joined(leading(n), {n, n + 3, n + 1, n + 4, n + 2}))  // C, H, r, W, r
      .reshape(joined(lead, {c, h * r, w * r}));
}

Tensor pixel_unshuffle(const Tensor& input, int64_t r) {
  OX_CHECK(input.defined(), Value, "pixel_unshuffle", "input is undefined");
  OX_CHECK(r > 0, Value, "pixel_unshuffle", "downscale_factor must be positive, got ", r);
  OX_CHECK(input.dim() >= 3 && input.size(-2) % r == 0 && input.size(-1) % r == 0, Shape,
           "pixel_unshuffle", "input must be [*, C, H r, W r] with r = ", r, ", got ",
           input.shape());
  const Shape lead(input.shape().begin(), input.shape().end() - 3);
  const int64_t c = input.size(-3), h = input.size(-2) / r, w = input.size(-1) / r;
  const int64_t n = int64_t(lead.size());
  return input.reshape(joined(lead, {c, h, r, w, r}))
      .permute(joined(leading(n), {n, n + 2, n + 4, n + 1, n + 3}))  // C, r, r, H, W
      .reshape(joined(lead, {c * r * r, h, w}));
}

}  // namespace functional

UpsampleImpl::UpsampleImpl(functional::InterpolateOptions options)
    : Module("Upsample"), options(std::move(options)) {}
Tensor UpsampleImpl::forward(const Tensor& input) const {
  return functional::interpolate(input, options);
}
void UpsampleImpl::pretty_print(std::ostream& os) const {
  os << "Upsample(";
  if (!options.size.empty()) os << "size=" << Shape(options.size);
  for (size_t i = 0; i < options.scale_factor.size(); ++i)
    os << (i == 0 ? "scale_factor=(" : ", ") << options.scale_factor[i]
       << (i + 1 == options.scale_factor.size() ? ")" : "");
  os << ", mode='" << options.mode << "')";
}

PixelShuffleImpl::PixelShuffleImpl(int64_t upscale_factor)
    : Module("PixelShuffle"), upscale_factor(upscale_factor) {}
Tensor PixelShuffleImpl::forward(const Tensor& input) const {
  return functional::pixel_shuffle(input, upscale_factor);
}
void PixelShuffleImpl::pretty_print(std::ostream& os) const {
  os << "PixelShuffle(upscale_factor=" << upscale_factor << ")";
}

PixelUnshuffleImpl::PixelUnshuffleImpl(int64_t downscale_factor)
    : Module("PixelUnshuffle"), downscale_factor(downscale_factor) {}
Tensor PixelUnshuffleImpl::forward(const Tensor& input) const {
  return functional::pixel_unshuffle(input, downscale_factor);
}
void PixelUnshuffleImpl::pretty_print(std::ostream& os) const {
  os << "PixelUnshuffle(downscale_factor=" << downscale_factor << ")";
}

}  // namespace ox::nn
