// Gradients of the recurrent cells and layers (gradcheck in f64, through lengths and both
// directions, the fused CPU kernels' backward and its create_graph path), the fused path against
// the composite one, thread-count independence, and dropout between layers.

#include <gtest/gtest.h>
#include <oxmera/nn/rnn.h>
#include <oxmera/oxmera.h>

#include "rnn_reference.h"
#include "test_util.h"

namespace {

using namespace ox;

// Turns the fused kernels off for a scope.
struct Unfused {
  Unfused() { nn::set_fused_rnn_enabled(false); }
  ~Unfused() { nn::set_fused_rnn_enabled(true); }
  Unfused(const Unfused&) = delete;
  Unfused& operator=(const Unfused&) = delete;
};

Tensor leaf(const Shape& shape, uint64_t salt) {
  int64_t count = 1;
  for (int64_t s : shape.vec()) count *= s;
  return tensor(rnnref::known(count, salt), shape).requires_grad_(true);
}

// ---- Cells -----------------------------------------------------------------------------------

struct CellInputs {
  std::vector<Tensor> all;  // x, h, c, w_ih, w_hh, b_ih, b_hh
};
CellInputs cell_inputs(int64_t gates) {
  const int64_t N = 2, in = 3, H = 2;
  return {{leaf({N, in}, 1), leaf({N, H}, 2), leaf({N, H}, 3), leaf({gates * H, in}, 4),
           leaf({gates * H, H}, 5), leaf({gates * H}, 6), leaf({gates * H}, 7)}};
}

std::vector<Tensor> lstm_cell_fn(const std::vector<Tensor>& a) {
  auto [h, c] = nn::functional::lstm_cell(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  return {h, c};
}
std::vector<Tensor> gru_cell_fn(const std::vector<Tensor>& a) {
  return {nn::functional::gru_cell(a[0], a[1], a[3], a[4], a[5], a[6])};
}
std::vector<Tensor> rnn_cell_fn(const std::vector<Tensor>& a) {
  return {nn::functional::rnn_cell(a[0], a[1], a[3], a[4], a[5], a[6], "tanh")};
}

TEST(RNNGrad, CellsGradcheckFusedAndComposite) {
  for (bool fused : {true, false}) {
    nn::set_fused_rnn_enabled(fused);
    SCOPED_TRACE(fused ? "fused" : "composite");
    auto lstm = autograd::gradcheck(lstm_cell_fn, cell_inputs(4).all);
    EXPECT_TRUE(lstm.ok) << lstm.report;
    auto gru = autograd::gradcheck(gru_cell_fn, cell_inputs(3).all);
    EXPECT_TRUE(gru.ok) << gru.report;
    auto rnn = autograd::gradcheck(rnn_cell_fn, cell_inputs(1).all);
    EXPECT_TRUE(rnn.ok) << rnn.report;
  }
  nn::set_fused_rnn_enabled(true);
}

TEST(RNNGrad, FusedPathRecordsItsOwnNode) {
  const CellInputs lstm = cell_inputs(4), gru = cell_inputs(3);
  const std::string fused_lstm = lstm_cell_fn(lstm.all)[1].grad_fn()->name();
  const std::string fused_gru = gru_cell_fn(gru.all)[0].grad_fn()->name();
  if (oxtest::on_test_device()) {  // other devices compose public ops
    EXPECT_NE(fused_lstm, "LSTMPointwiseBackward");
    EXPECT_NE(fused_gru, "GRUPointwiseBackward");
    return;
  }
  EXPECT_EQ(fused_lstm, "LSTMPointwiseBackward");
  EXPECT_EQ(fused_gru, "GRUPointwiseBackward");
  Unfused off;
  EXPECT_NE(lstm_cell_fn(lstm.all)[1].grad_fn()->name(), fused_lstm);
  EXPECT_NE(gru_cell_fn(gru.all)[0].grad_fn()->name(), fused_gru);
}

TEST(RNNGrad, FusedCellsGradgradcheck) {
  // The fused kernels' backward under create_graph goes through public ops.
  auto lstm = autograd::gradgradcheck(lstm_cell_fn, cell_inputs(4).all);
  EXPECT_TRUE(lstm.ok) << lstm.report;
  auto gru = autograd::gradgradcheck(gru_cell_fn, cell_inputs(3).all);
  EXPECT_TRUE(gru.ok) << gru.report;
}

TEST(RNNGrad, FusedCellOnlyOneOutputUsed) {
  // A gradient reaching only c' (h' unused) or only h'.
  CellInputs in = cell_inputs(4);
  auto only_c = autograd::gradcheck(
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{lstm_cell_fn(a)[1]}; }, in.all);
  EXPECT_TRUE(only_c.ok) << only_c.report;
  auto only_h = autograd::gradcheck(
      [](const std::vector<Tensor>& a) { return std::vector<Tensor>{lstm_cell_fn(a)[0]}; }, in.all);
  EXPECT_TRUE(only_h.ok) << only_h.report;
}

// ---- Layers ----------------------------------------------------------------------------------

// gradcheck of a layer's output and final states with respect to its input, initial states and
// every parameter.
void gradcheck_layer(nn::RNNBaseImpl& m, bool lengths) {
  m.to(kF64);
  const int64_t L = 3, N = 3, D = m.num_directions(), count = m.config.num_layers * D;
  const int64_t h_out = m.config.proj_size > 0 ? m.config.proj_size : m.hidden_size;
  std::vector<Tensor> inputs = {leaf({L, N, m.input_size}, 21), leaf({count, N, h_out}, 22)};
  const bool lstm = m.mode == nn::RNNBaseImpl::Mode::LSTM;
  if (lstm) inputs.push_back(leaf({count, N, m.hidden_size}, 23));
  const size_t first_param = inputs.size();
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  const Tensor lens = lengths ? tensor(std::vector<int64_t>{3, 1, 2}) : Tensor();
  auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>& a) -> std::vector<Tensor> {
        if (lstm) {
          auto [out, state] =
              static_cast<nn::LSTMImpl&>(m).forward(a[0], std::make_tuple(a[1], a[2]), lens);
          return {out, std::get<0>(state), std::get<1>(state)};
        }
        if (m.mode == nn::RNNBaseImpl::Mode::GRU) {
          auto [out, h] = static_cast<nn::GRUImpl&>(m).forward(a[0], a[1], lens);
          return {out, h};
        }
        auto [out, h] = static_cast<nn::RNNImpl&>(m).forward(a[0], a[1], lens);
        return {out, h};
      },
      inputs);
  EXPECT_TRUE(result.ok) << result.report;
  EXPECT_GT(inputs.size(), first_param);
}

TEST(RNNGrad, LayersGradcheck) {
  {
    SCOPED_TRACE("LSTM 2 layers bidirectional, lengths");
    nn::LSTM m(2, 2, {.num_layers = 2, .bidirectional = true});
    gradcheck_layer(*m, true);
  }
  {
    SCOPED_TRACE("LSTM proj, lengths");
    nn::LSTM m(2, 3, {.proj_size = 2});
    gradcheck_layer(*m, true);
  }
  {
    SCOPED_TRACE("GRU 2 layers bidirectional, lengths");
    nn::GRU m(2, 2, {.num_layers = 2, .bidirectional = true});
    gradcheck_layer(*m, true);
  }
  {
    SCOPED_TRACE("GRU bidirectional");
    nn::GRU m(2, 2, {.bidirectional = true});
    gradcheck_layer(*m, false);
  }
  {
    SCOPED_TRACE("RNN tanh bidirectional, lengths");
    nn::RNN m(2, 2, {.bidirectional = true});
    gradcheck_layer(*m, true);
  }
  {
    SCOPED_TRACE("RNN relu 2 layers");
    nn::RNN m(2, 2, {.num_layers = 2, .nonlinearity = "relu"});
    gradcheck_layer(*m, false);
  }
}

// Output, states and every gradient of `m` on fixed input, flattened to f64.
std::vector<std::vector<double>> run_with_grads(nn::RNNBaseImpl& m, const Tensor& x,
                                                const Tensor& lens) {
  m.zero_grad();
  const Tensor xg = x.detach().requires_grad_(true);
  std::vector<Tensor> outs;
  if (m.mode == nn::RNNBaseImpl::Mode::LSTM) {
    auto [out, state] = static_cast<nn::LSTMImpl&>(m).forward(xg, std::nullopt, lens);
    outs = {out, std::get<0>(state), std::get<1>(state)};
  } else {
    auto [out, h] = static_cast<nn::GRUImpl&>(m).forward(xg, Tensor(), lens);
    outs = {out, h};
  }
  Tensor loss = zeros({}, {.dtype = x.dtype()});
  for (size_t i = 0; i < outs.size(); ++i)
    loss = loss + (outs[i] * (outs[i] + double(i + 1))).sum();
  loss.backward();
  std::vector<std::vector<double>> all;
  for (const Tensor& o : outs) all.push_back(o.to_vector<double>());
  all.push_back(xg.grad().to_vector<double>());
  for (const Tensor& p : m.parameters()) all.push_back(p.grad().to_vector<double>());
  return all;
}

TEST(RNNGrad, FusedEqualsComposite) {
  for (bool gru : {false, true}) {
    SCOPED_TRACE(gru ? "GRU" : "LSTM");
    manual_seed(5);
    std::shared_ptr<nn::RNNBaseImpl> m;
    if (gru)
      m = nn::GRU(4, 6, {.num_layers = 2, .bidirectional = true}).ptr();
    else
      m = nn::LSTM(4, 6, {.num_layers = 2, .bidirectional = true}).ptr();
    m->to(kF64);
    const Tensor x = randn({7, 5, 4}, {.dtype = kF64});
    const Tensor lens = tensor(std::vector<int64_t>{7, 3, 5, 1, 6});
    const auto fused = run_with_grads(*m, x, lens);
    std::vector<std::vector<double>> composite;
    {
      Unfused off;
      composite = run_with_grads(*m, x, lens);
    }
    ASSERT_EQ(fused.size(), composite.size());
    for (size_t i = 0; i < fused.size(); ++i)
      rnnref::expect_close(fused[i], composite[i], 1e-13, 1e-12, "tensor " + std::to_string(i));
  }
}

TEST(RNNGrad, BitwiseSameAtOneAndTwoThreads) {
  // Large enough for the fused kernels to split rows over threads.
  const int previous = get_num_threads();
  for (bool gru : {false, true}) {
    SCOPED_TRACE(gru ? "GRU" : "LSTM");
    manual_seed(9);
    std::shared_ptr<nn::RNNBaseImpl> m;
    if (gru)
      m = nn::GRU(8, 512).ptr();
    else
      m = nn::LSTM(8, 512).ptr();
    const Tensor x = randn({2, 64, 8});
    std::vector<int64_t> lengths(64, 2);
    lengths[3] = 1;
    const Tensor lens = tensor(lengths);
    set_num_threads(1);
    const auto one = run_with_grads(*m, x, lens);
    set_num_threads(2);
    const auto two = run_with_grads(*m, x, lens);
    ASSERT_EQ(one.size(), two.size());
    for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "tensor " << i;
  }
  set_num_threads(previous);
}

TEST(RNNGrad, BackwardTwiceGivesTheSameGradients) {
  nn::LSTM m(3, 4, {.bidirectional = true});
  m->to(kF64);
  const Tensor x = randn({4, 2, 3}, {.dtype = kF64}).requires_grad_(true);
  auto [out, state] = m(x);
  const Tensor loss = (out * out).sum() + std::get<1>(state).sum();
  const std::vector<double> first =
      autograd::grad({loss}, {x}, {}, /*retain_graph=*/true)[0].to_vector<double>();
  EXPECT_EQ(autograd::grad({loss}, {x})[0].to_vector<double>(), first);
}

// ---- Dropout between layers ------------------------------------------------------------------

TEST(RNNDropout, OnlyInTrainingAndSeeded) {
  nn::LSTM with(3, 5, {.num_layers = 2, .dropout = 0.5});
  nn::LSTM without(3, 5, {.num_layers = 2});
  without->load_state_dict(with->state_dict());
  const Tensor x = randn({6, 4, 3});
  const auto out = [&](nn::LSTM& m) { return std::get<0>(m(x)).to_vector<float>(); };
  // Eval: dropout does nothing.
  with->eval();
  EXPECT_EQ(out(with), out(without));
  // Training: the output changes, and the same seed gives the same output.
  with->train();
  manual_seed(42);
  const auto a = out(with);
  manual_seed(42);
  const auto b = out(with);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, out(without));
  const auto c = out(with);  // the generator moved on
  EXPECT_NE(a, c);
}

TEST(RNNDropout, ProbabilityOneZeroesTheSecondLayersInput) {
  // dropout = 1: the second layer sees zeros, so its output equals a one-layer GRU (with the
  // second layer's weights, input weights unused) run on zeros.
  nn::GRU two(3, 4, {.num_layers = 2, .dropout = 1.0});
  nn::GRU one(4, 4);
  const auto& w = two->weights(1, 0);
  {
    NoGradGuard g;
    nn::RNNBaseImpl::Weights target = one->weights(0, 0);
    target.w_ih.copy_(w.w_ih);
    target.w_hh.copy_(w.w_hh);
    target.b_ih.copy_(w.b_ih);
    target.b_hh.copy_(w.b_hh);
  }
  const Tensor x = randn({5, 2, 3});
  auto [out, h] = two(x);
  auto [want, wh] = one(zeros({5, 2, 4}));
  EXPECT_EQ(out.to_vector<float>(), want.to_vector<float>());
}

}  // namespace
