// interpolate, pixel_shuffle, pixel_unshuffle, instance_norm and their modules against
// PyTorch's outputs and gradients for fixed inputs (tests/nn/fixtures/vision.json, made by
// scripts/make-vision-fixtures.py), plus layouts, dtypes and refusals.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_paths.h"
#include "test_util.h"

namespace {

using namespace ox;
namespace F = ox::nn::functional;
using oxtest::kind_of;

// The fixture script's input: element j is sin(0.37 j + 0.1) + 0.01 j.
Tensor input(const Shape& shape, DType dt = kF64) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t j = 0; j < v.size(); ++j) v[j] = std::sin(0.37 * double(j) + 0.1) + 0.01 * double(j);
  return ox::tensor(v, shape).to(dt);
}
Tensor upstream(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t j = 0; j < v.size(); ++j) v[j] = 0.5 + double((5 * j) % 7) / 7;
  return ox::tensor(v, shape);
}

F::InterpolateOptions options_of(const nlohmann::json& j) {
  F::InterpolateOptions o;
  if (j.contains("size")) o.size = j["size"].get<std::vector<int64_t>>();
  if (j.contains("scale_factor")) o.scale_factor = j["scale_factor"].get<std::vector<double>>();
  o.mode = j["mode"].get<std::string>();
  if (j.contains("align_corners")) o.align_corners = j["align_corners"].get<bool>();
  if (j.contains("recompute_scale_factor"))
    o.recompute_scale_factor = j["recompute_scale_factor"].get<bool>();
  return o;
}

Tensor run(const nlohmann::json& c, const Tensor& x) {
  const std::string op = c["op"];
  if (op == "interpolate") return F::interpolate(x, options_of(c["options"]));
  if (op == "pixel_shuffle") return F::pixel_shuffle(x, c["factor"].get<int64_t>());
  return F::pixel_unshuffle(x, c["factor"].get<int64_t>());
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol,
                   const std::string& what) {
  const std::vector<double> got = t.reshape({-1}).to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

nlohmann::json fixture() {
  std::ifstream in(std::filesystem::path(oxtest::kSourceDir) / "tests" / "nn" / "fixtures" /
                   "vision.json");
  return nlohmann::json::parse(in);
}

TEST(Vision, OutputsAndGradientsArePyTorchs) {
  const nlohmann::json doc = fixture();
  ASSERT_GE(doc["cases"].size(), 25u);
  for (const auto& c : doc["cases"]) {
    if (c["op"] == "instance_norm") continue;  // InstanceNorm's own test
    const std::string what = c.dump().substr(0, 120);
    const Tensor x = input(c["shape"].get<Shape>()).requires_grad_();
    const Tensor out = run(c, x);
    ASSERT_EQ(out.shape(), c["out_shape"].get<Shape>()) << what;
    expect_values(out, c["out"], 1e-12, what);
    (out * upstream(out.shape())).sum().backward();
    expect_values(x.grad(), c["grad"], 1e-12, what + " (gradient)");
    // f32, and a strided (transposed twice) f32 input: PyTorch's values to f32 rounding.
    const Tensor x32 = input(c["shape"].get<Shape>(), kF32);
    expect_values(run(c, x32), c["out"], 2e-6, what + " (f32)");
    expect_values(run(c, x32.transpose(0, 1).contiguous().transpose(0, 1)), c["out"], 2e-6,
                  what + " (strided f32)");
  }
}

TEST(InstanceNorm, OutputsGradientsAndRunningStatisticsArePyTorchs) {
  int cases = 0;
  const nlohmann::json doc = fixture();
  for (const auto& c : doc["cases"]) {
    if (c["op"] != "instance_norm") continue;
    ++cases;
    const std::string what = c.dump().substr(0, 100);
    const Shape shape = c["shape"].get<Shape>();
    const int64_t channels = shape[1];
    std::vector<double> w0, b0;
    for (int64_t i = 0; i < channels; ++i)
      w0.push_back(1 + 0.1 * double(i)), b0.push_back(0.05 * double(i));
    const Tensor x = input(shape).requires_grad_();
    const Tensor w = ox::tensor(w0, {channels}).requires_grad_();
    const Tensor b = ox::tensor(b0, {channels}).requires_grad_();
    const bool affine = c["affine"], running = c["running"];
    const Tensor mean = running ? ox::zeros({channels}, {.dtype = kF64}) : Tensor();
    const Tensor var = running ? ox::ones({channels}, {.dtype = kF64}) : Tensor();
    const Tensor out = F::instance_norm(x, mean, var, affine ? w : Tensor(), affine ? b : Tensor());
    expect_values(out, c["out"], 1e-10, what);
    (out * upstream(out.shape())).sum().backward();
    expect_values(x.grad(), c["grad"], 1e-10, what + " (gradient)");
    if (affine) {
      expect_values(w.grad(), c["weight_grad"], 1e-10, what + " (weight gradient)");
      expect_values(b.grad(), c["bias_grad"], 1e-10, what + " (bias gradient)");
    }
    if (running) {
      expect_values(mean, c["running_mean"], 1e-12, what + " (running mean)");
      expect_values(var, c["running_var"], 1e-12, what + " (running var)");
    }
  }
  EXPECT_EQ(cases, 4);
}

TEST(InstanceNorm, ModulesTrainEvalUnbatchedAndRefusals) {
  nn::InstanceNorm2d plain(3);
  EXPECT_TRUE(plain->parameters().empty());
  const Tensor x = input({2, 3, 4, 3});
  // Each instance normalized: zero mean, unit (biased) variance up to eps.
  const Tensor y = plain->forward(x);
  const Tensor m = ox::mean(y, {2, 3}), v = ox::var(y, {2, 3}, 0);
  for (double e : m.reshape({-1}).to_vector<double>()) EXPECT_NEAR(e, 0, 1e-12);
  for (double e : v.reshape({-1}).to_vector<double>()) EXPECT_NEAR(e, 1, 1e-3);
  // Unbatched [C, H, W] is the batch of one.
  EXPECT_TRUE(ox::allclose(plain->forward(x.select(0, 1)), y.select(0, 1), 1e-12, 1e-12));
  // Tracking: training updates the buffers; eval normalizes by them.
  nn::InstanceNorm1d tracked(2, {.affine = true, .track_running_stats = true});
  tracked->to(kF64);
  const Tensor s = input({3, 2, 5});
  tracked->forward(s);
  EXPECT_EQ(tracked->num_batches_tracked.item<int64_t>(), 1);
  const Tensor mean_seen = tracked->running_mean.clone(), var_seen = tracked->running_var.clone();
  tracked->eval();
  const Tensor e = tracked->forward(s);
  const Tensor want = (s - mean_seen.view({1, 2, 1})) / ox::sqrt(var_seen.view({1, 2, 1}) + 1e-5);
  EXPECT_TRUE(ox::allclose(e, want, 1e-12, 1e-12));
  EXPECT_TRUE(ox::equal(tracked->running_mean, mean_seen));  // eval does not update
  std::ostringstream printed;
  printed << *tracked;
  EXPECT_EQ(printed.str(),
            "InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(kind_of([&] { plain->forward(ox::zeros({3, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              tracked->forward(ox::zeros({2, 3, 4}, {.dtype = kF64}));
            }),
            ErrorKind::Shape);  // 3 channels, 2 expected
  EXPECT_EQ(kind_of([&] { F::instance_norm(ox::zeros({2, 3, 1})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { F::instance_norm(ox::zeros({2, 3})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { nn::InstanceNorm3d(0); }), ErrorKind::Value);
}

TEST(Vision, DtypesAndEmptyBatches) {
  // Nearest copies: any dtype, bit for bit.
  const Tensor ints = ox::arange(6, {.dtype = kI64}).reshape({1, 1, 2, 3});
  const Tensor up = F::interpolate(ints, {.scale_factor = {2}});
  EXPECT_EQ(up.dtype(), kI64);
  EXPECT_EQ(up.reshape({-1}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2,
                                  3, 3, 4, 4, 5, 5, 3, 3, 4, 4, 5, 5}));
  // bf16 computes in f32 and rounds once: within one bf16 rounding of the f64 result.
  const Tensor x = input({1, 2, 3, 4});
  const F::InterpolateOptions bilinear{.size = {5, 7}, .mode = "bilinear"};
  const Tensor want = F::interpolate(x, bilinear);
  const Tensor got = F::interpolate(x.to(kBF16), bilinear);
  EXPECT_EQ(got.dtype(), kBF16);
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  // The bf16 input itself is rounded (2^-9 relative), then the result once more.
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 0x1p-7 * (1 + std::abs(w[i])));
  // An empty batch resamples to an empty batch.
  EXPECT_EQ(F::interpolate(ox::zeros({0, 3, 4, 4}), bilinear).shape(), (Shape{0, 3, 5, 7}));
  EXPECT_EQ(F::pixel_shuffle(ox::zeros({0, 4, 2, 2}), 2).shape(), (Shape{0, 1, 4, 4}));
}

TEST(Vision, ModulesForwardTheirOptions) {
  nn::Upsample up({.scale_factor = {2}, .mode = "bilinear", .align_corners = true});
  const Tensor x = input({1, 1, 2, 2});
  EXPECT_TRUE(ox::equal(
      up->forward(x),
      F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear", .align_corners = true})));
  // align_corners maps corner to corner: the corners are the input's.
  const Tensor y = up->forward(x);
  EXPECT_DOUBLE_EQ(y.index({0, 0, 3, 3}).item<double>(), x.index({0, 0, 1, 1}).item<double>());
  nn::PixelShuffle shuffle(2);
  nn::PixelUnshuffle unshuffle(2);
  const Tensor z = input({2, 8, 3, 3});
  EXPECT_TRUE(ox::equal(unshuffle->forward(shuffle->forward(z)), z));
  std::ostringstream printed;
  printed << *up << " " << *shuffle;
  EXPECT_EQ(printed.str(),
            "Upsample(scale_factor=(2), mode='bilinear') PixelShuffle(upscale_factor=2)");
}

TEST(Vision, RefusesBadArguments) {
  const Tensor x = input({1, 2, 3, 4});
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x, {.size = {5, 7}, .mode = "linear"});
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x, {.size = {5, 7}, .mode = "area"});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x, {.size = {5, 7}, .scale_factor = {2}});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { F::interpolate(x, {}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { F::interpolate(x, {.size = {5, 7, 2}}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x, {.size = {5, 7}, .align_corners = true});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x, {.size = {5, 7}, .mode = "bilinear", .antialias = true});
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { F::interpolate(x, {.scale_factor = {0.1}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { F::interpolate(x, {.scale_factor = {-2}}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              F::interpolate(x.to(kI32), {.size = {5, 7}, .mode = "bilinear"});
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { F::interpolate(ox::zeros({3, 4}), {.size = {5}}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { F::pixel_shuffle(x, 2); }), ErrorKind::Shape);  // 2 channels, not 4k
  EXPECT_EQ(kind_of([&] { F::pixel_shuffle(x, 0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { F::pixel_unshuffle(x, 2); }), ErrorKind::Shape);  // 3 rows
  EXPECT_EQ(kind_of([&] { F::pixel_unshuffle(ox::zeros({4, 4}), 2); }), ErrorKind::Shape);
}

}  // namespace
