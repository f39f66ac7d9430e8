// RNN, LSTM, GRU and their cells against the f64 loops of rnn_reference.h and closed forms:
// layers, directions, batch_first, unbatched input, initial states, lengths, projections;
// PyTorch's parameter names and shapes; printing; bad input.

#include <gtest/gtest.h>
#include <oxmera/nn/rnn.h>
#include <oxmera/oxmera.h>

#include <sstream>

#include "rnn_reference.h"
#include "test_util.h"

namespace {

using namespace ox;
using namespace rnnref;
using oxtest::kind_of;

struct Case {
  Kind kind = Kind::Lstm;
  int64_t layers = 1;
  bool bidirectional = false, batch_first = false, unbatched = false, initial = false,
       lengths = false, bias = true;
  int64_t proj = 0;
  std::string name() const {
    std::ostringstream os;
    os << "kind " << int(kind) << " layers " << layers << " bidir " << bidirectional
       << " batch_first " << batch_first << " unbatched " << unbatched << " initial " << initial
       << " lengths " << lengths << " bias " << bias << " proj " << proj;
    return os.str();
  }
};

// Builds the module of `c`, gives it known parameters, runs it on known input and compares
// output and final states with the reference loop.
void check_case(const Case& c, DType dt) {
  const int64_t L = 5, N = c.unbatched ? 1 : 3, in = 3, H = 4;
  const Spec spec{c.kind, in, H, c.proj, c.layers, c.bidirectional ? 2 : 1};
  std::shared_ptr<nn::RNNBaseImpl> m;
  if (c.kind == Kind::Lstm)
    m = nn::LSTM(in, H,
                 {.num_layers = c.layers,
                  .bias = c.bias,
                  .batch_first = c.batch_first,
                  .bidirectional = c.bidirectional,
                  .proj_size = c.proj})
            .ptr();
  else if (c.kind == Kind::Gru)
    m = nn::GRU(in, H,
                {.num_layers = c.layers,
                 .bias = c.bias,
                 .batch_first = c.batch_first,
                 .bidirectional = c.bidirectional})
            .ptr();
  else
    m = nn::RNN(in, H,
                {.num_layers = c.layers,
                 .nonlinearity = c.kind == Kind::Relu ? "relu" : "tanh",
                 .bias = c.bias,
                 .batch_first = c.batch_first,
                 .bidirectional = c.bidirectional})
            .ptr();
  const std::vector<Weights> w = set_known(*m);
  m->to(dt);
  const int64_t count = spec.layers * spec.dirs;
  const Vec x = known(L * N * in, 101);
  const Vec h0 = c.initial ? known(count * N * spec.h_out(), 102) : Vec{};
  const Vec c0 = c.initial && c.kind == Kind::Lstm ? known(count * N * H, 103) : Vec{};
  const std::vector<int64_t> lens =
      c.lengths ? std::vector<int64_t>{5, 2, 0} : std::vector<int64_t>{};
  const Result want = run(spec, w, x, L, N, h0, c0, lens);

  Tensor xt = tensor(x, {L, N, in}).to(dt);
  if (c.batch_first) xt = xt.transpose(0, 1).contiguous();
  if (c.unbatched) xt = xt.squeeze(1);
  const auto state = [&](const Vec& v, int64_t size) {
    if (v.empty()) return Tensor();
    Tensor t = tensor(v, {count, N, size}).to(dt);
    return c.unbatched ? t.squeeze(1) : t;
  };
  const Tensor h0t = state(h0, spec.h_out()), c0t = state(c0, H);
  const Tensor lt = c.lengths ? tensor(lens) : Tensor();
  Tensor out, hn, cn;
  if (c.kind == Kind::Lstm) {
    auto* lstm = static_cast<nn::LSTMImpl*>(m.get());
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> r;
    if (c.initial)
      r = lstm->forward(xt, std::make_tuple(h0t, c0t), lt);
    else
      r = lstm->forward(xt, std::nullopt, lt);
    out = std::get<0>(r);
    std::tie(hn, cn) = std::get<1>(r);
  } else if (c.kind == Kind::Gru) {
    std::tie(out, hn) = static_cast<nn::GRUImpl*>(m.get())->forward(xt, h0t, lt);
  } else {
    std::tie(out, hn) = static_cast<nn::RNNImpl*>(m.get())->forward(xt, h0t, lt);
  }
  const int64_t width = spec.dirs * spec.h_out();
  Shape out_shape = c.unbatched     ? Shape{L, width}
                    : c.batch_first ? Shape{N, L, width}
                                    : Shape{L, N, width};
  ASSERT_EQ(out.shape(), out_shape) << c.name();
  EXPECT_EQ(out.dtype(), dt);
  if (c.batch_first) out = out.transpose(0, 1);
  const double atol = dt == kF64 ? 1e-12 : 2e-6, rtol = dt == kF64 ? 1e-10 : 1e-5;
  expect_close(out.contiguous().to_vector<double>(), want.out, atol, rtol, c.name() + " output");
  const Shape hn_shape = c.unbatched ? Shape{count, spec.h_out()} : Shape{count, N, spec.h_out()};
  ASSERT_EQ(hn.shape(), hn_shape) << c.name();
  expect_close(hn.to_vector<double>(), want.h_n, atol, rtol, c.name() + " h_n");
  if (c.kind == Kind::Lstm) {
    ASSERT_EQ(cn.shape(), (c.unbatched ? Shape{count, H} : Shape{count, N, H})) << c.name();
    expect_close(cn.to_vector<double>(), want.c_n, atol, rtol, c.name() + " c_n");
  }
}

std::vector<Case> cases(Kind kind) {
  std::vector<Case> out;
  out.push_back({.kind = kind});
  out.push_back({.kind = kind, .bidirectional = true});
  out.push_back({.kind = kind, .layers = 2});
  out.push_back({.kind = kind, .layers = 2, .bidirectional = true, .initial = true});
  out.push_back({.kind = kind, .batch_first = true, .initial = true});
  out.push_back({.kind = kind, .unbatched = true});
  out.push_back({.kind = kind, .bidirectional = true, .unbatched = true, .initial = true});
  out.push_back({.kind = kind, .lengths = true});
  out.push_back({.kind = kind,
                 .layers = 2,
                 .bidirectional = true,
                 .batch_first = true,
                 .initial = true,
                 .lengths = true});
  out.push_back({.kind = kind, .bidirectional = true, .bias = false});
  if (kind == Kind::Lstm) {
    out.push_back({.kind = kind, .proj = 2});
    out.push_back({.kind = kind,
                   .layers = 2,
                   .bidirectional = true,
                   .initial = true,
                   .lengths = true,
                   .proj = 3});
  }
  return out;
}

TEST(RNNLayers, MatchReferenceLoops) {
  for (Kind kind : {Kind::Tanh, Kind::Relu, Kind::Lstm, Kind::Gru})
    for (const Case& c : cases(kind))
      for (DType dt : {kF64, kF32}) {
        SCOPED_TRACE(c.name() + (dt == kF64 ? " f64" : " f32"));
        check_case(c, dt);
      }
}

TEST(RNNLayers, ZeroLengthSequenceKeepsInitialStateAndZeroOutput) {
  // Every length 0: the output is zeros and h_n the initial state, for both directions.
  nn::GRU gru(2, 3, {.bidirectional = true});
  const Tensor x = randn({4, 2, 2}), h0 = randn({2, 2, 3});
  auto [out, hn] = gru(x, h0, tensor(std::vector<int64_t>{0, 0}));
  EXPECT_EQ(out.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(hn.to_vector<float>(), h0.to_vector<float>());
}

TEST(RNNLayers, EmptySequence) {
  nn::LSTM lstm(2, 3);
  auto [out, state] = lstm(zeros({0, 2, 2}));
  EXPECT_EQ(out.shape(), (Shape{0, 2, 3}));
  EXPECT_EQ(std::get<0>(state).abs().sum().item<double>(), 0.0);
}

// ---- Closed forms ----------------------------------------------------------------------------

void zero_parameters(nn::Module& m) {
  NoGradGuard g;
  for (Tensor& p : m.parameters()) p.fill_(0);
}

TEST(RNNCells, ClosedFormsWithZeroWeights) {
  // All weights and biases 0: LSTM gates i = f = o = 1/2, g = 0, so c' = c/2 and
  // h' = tanh(c/2)/2; GRU r = z = 1/2, n = 0, so h' = h/2; RNN h' = tanh(0) = 0.
  nn::LSTMCell lstm(2, 3);
  nn::GRUCell gru(2, 3);
  nn::RNNCell rnn(2, 3);
  for (nn::Module* m : std::initializer_list<nn::Module*>{lstm.get(), gru.get(), rnn.get()}) {
    zero_parameters(*m);
    m->to(kF64);
  }
  const Tensor x = tensor({0.3, -0.7}, {.dtype = kF64});
  const Tensor h = tensor({1.0, -2.0, 0.5}, {.dtype = kF64});
  const Tensor c = tensor({2.0, -1.0, 0.0}, {.dtype = kF64});
  auto [h2, c2] = lstm(x, std::make_tuple(h, c));
  EXPECT_EQ(c2.to_vector<double>(), (std::vector<double>{1.0, -0.5, 0.0}));
  const std::vector<double> hv = h2.to_vector<double>();
  EXPECT_NEAR(hv[0], std::tanh(1.0) / 2, 1e-15);
  EXPECT_NEAR(hv[1], std::tanh(-0.5) / 2, 1e-15);
  EXPECT_EQ(hv[2], 0.0);
  EXPECT_EQ(gru(x, h).to_vector<double>(), (std::vector<double>{0.5, -1.0, 0.25}));
  EXPECT_EQ(rnn(x, h).to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

TEST(RNNCells, MatchReferenceStep) {
  for (Kind kind : {Kind::Tanh, Kind::Relu, Kind::Lstm, Kind::Gru})
    for (DType dt : {kF64, kF32})
      for (bool batched : {true, false})
        for (bool with_state : {true, false}) {
          SCOPED_TRACE(::testing::Message() << "kind " << int(kind) << " " << dt << " batched "
                                            << batched << " state " << with_state);
          const int64_t in = 3, H = 4, N = batched ? 2 : 1;
          std::shared_ptr<nn::Module> m;
          Tensor *w_ih, *w_hh, *b_ih, *b_hh;
          if (kind == Kind::Lstm) {
            auto cell = nn::LSTMCell(in, H).ptr();
            w_ih = &cell->weight_ih, w_hh = &cell->weight_hh, b_ih = &cell->bias_ih,
            b_hh = &cell->bias_hh, m = cell;
          } else if (kind == Kind::Gru) {
            auto cell = nn::GRUCell(in, H).ptr();
            w_ih = &cell->weight_ih, w_hh = &cell->weight_hh, b_ih = &cell->bias_ih,
            b_hh = &cell->bias_hh, m = cell;
          } else {
            auto cell =
                nn::RNNCell(in, H, {.nonlinearity = kind == Kind::Relu ? "relu" : "tanh"}).ptr();
            w_ih = &cell->weight_ih, w_hh = &cell->weight_hh, b_ih = &cell->bias_ih,
            b_hh = &cell->bias_hh, m = cell;
          }
          Weights w{set_known(*w_ih, 1),
                    set_known(*w_hh, 2),
                    set_known(*b_ih, 3),
                    set_known(*b_hh, 4),
                    {}};
          m->to(dt);
          const Vec x = known(N * in, 5), h0 = known(N * H, 6), c0 = known(N * H, 7);
          Vec want_h, want_c;
          for (int64_t n = 0; n < N; ++n) {
            Vec h = with_state ? Vec(h0.begin() + n * H, h0.begin() + (n + 1) * H) : Vec(H, 0.0);
            Vec c = with_state ? Vec(c0.begin() + n * H, c0.begin() + (n + 1) * H) : Vec(H, 0.0);
            step(kind, w, &x[size_t(n * in)], in, H, h, c);
            want_h.insert(want_h.end(), h.begin(), h.end());
            want_c.insert(want_c.end(), c.begin(), c.end());
          }
          const Shape xs = batched ? Shape{N, in} : Shape{in},
                      hs = batched ? Shape{N, H} : Shape{H};
          const Tensor xt = tensor(x, xs).to(dt);
          const Tensor ht = with_state ? tensor(h0, hs).to(dt) : Tensor();
          const Tensor ct = with_state ? tensor(c0, hs).to(dt) : Tensor();
          Tensor h, c;
          if (kind == Kind::Lstm) {
            auto* cell = static_cast<nn::LSTMCellImpl*>(m.get());
            std::tie(h, c) =
                with_state ? cell->forward(xt, std::make_tuple(ht, ct)) : cell->forward(xt);
          } else if (kind == Kind::Gru) {
            h = static_cast<nn::GRUCellImpl*>(m.get())->forward(xt, ht);
          } else {
            h = static_cast<nn::RNNCellImpl*>(m.get())->forward(xt, ht);
          }
          EXPECT_EQ(h.shape(), hs);
          const double atol = dt == kF64 ? 1e-13 : 1e-6, rtol = dt == kF64 ? 1e-12 : 1e-5;
          expect_close(h.to_vector<double>(), want_h, atol, rtol, "h'");
          if (kind == Kind::Lstm) expect_close(c.to_vector<double>(), want_c, atol, rtol, "c'");
        }
}

// ---- Names, shapes, printing -----------------------------------------------------------------

std::vector<std::pair<std::string, Shape>> names_and_shapes(const nn::Module& m) {
  std::vector<std::pair<std::string, Shape>> out;
  const TensorDict dict = m.state_dict();
  for (const std::string& key : dict.keys()) out.emplace_back(key, dict.at(key).shape());
  return out;
}

TEST(RNNLayers, StateDictMatchesPyTorch) {
  // torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True).state_dict()
  using P = std::vector<std::pair<std::string, Shape>>;
  const P lstm = {{"weight_ih_l0", {80, 10}},
                  {"weight_hh_l0", {80, 20}},
                  {"bias_ih_l0", {80}},
                  {"bias_hh_l0", {80}},
                  {"weight_ih_l0_reverse", {80, 10}},
                  {"weight_hh_l0_reverse", {80, 20}},
                  {"bias_ih_l0_reverse", {80}},
                  {"bias_hh_l0_reverse", {80}},
                  {"weight_ih_l1", {80, 40}},
                  {"weight_hh_l1", {80, 20}},
                  {"bias_ih_l1", {80}},
                  {"bias_hh_l1", {80}},
                  {"weight_ih_l1_reverse", {80, 40}},
                  {"weight_hh_l1_reverse", {80, 20}},
                  {"bias_ih_l1_reverse", {80}},
                  {"bias_hh_l1_reverse", {80}}};
  EXPECT_EQ(names_and_shapes(*nn::LSTM(10, 20, {.num_layers = 2, .bidirectional = true})), lstm);
  // torch.nn.GRU(10, 20).state_dict()
  const P gru = {{"weight_ih_l0", {60, 10}},
                 {"weight_hh_l0", {60, 20}},
                 {"bias_ih_l0", {60}},
                 {"bias_hh_l0", {60}}};
  EXPECT_EQ(names_and_shapes(*nn::GRU(10, 20)), gru);
  // torch.nn.LSTM(10, 20, proj_size=5).state_dict()
  const P proj = {{"weight_ih_l0", {80, 10}},
                  {"weight_hh_l0", {80, 5}},
                  {"bias_ih_l0", {80}},
                  {"bias_hh_l0", {80}},
                  {"weight_hr_l0", {5, 20}}};
  EXPECT_EQ(names_and_shapes(*nn::LSTM(10, 20, {.proj_size = 5})), proj);
  // torch.nn.RNN(10, 20, bias=False).state_dict(); the cells
  EXPECT_EQ(names_and_shapes(*nn::RNN(10, 20, {.bias = false})),
            (P{{"weight_ih_l0", {20, 10}}, {"weight_hh_l0", {20, 20}}}));
  EXPECT_EQ(
      names_and_shapes(*nn::GRUCell(10, 20)),
      (P{{"weight_ih", {60, 10}}, {"weight_hh", {60, 20}}, {"bias_ih", {60}}, {"bias_hh", {60}}}));
  EXPECT_EQ(
      names_and_shapes(*nn::LSTMCell(10, 20)),
      (P{{"weight_ih", {80, 10}}, {"weight_hh", {80, 20}}, {"bias_ih", {80}}, {"bias_hh", {80}}}));
}

TEST(RNNLayers, InitIsUniformWithinOneOverSqrtHidden) {
  manual_seed(3);
  nn::LSTM lstm(7, 16, {.num_layers = 2, .bidirectional = true, .proj_size = 4});
  const double k = 1.0 / 4.0;
  double lo = 1, hi = -1;
  for (const Tensor& p : lstm->parameters()) {
    lo = std::min(lo, p.min().item<double>());
    hi = std::max(hi, p.max().item<double>());
  }
  EXPECT_GE(lo, -k);
  EXPECT_LE(hi, k);
  EXPECT_LT(lo, -0.9 * k);  // spread over the whole interval
  EXPECT_GT(hi, 0.9 * k);
}

TEST(RNNLayers, StateDictRoundTripsBetweenModules) {
  nn::GRU a(3, 4, {.num_layers = 2}), b(3, 4, {.num_layers = 2});
  b->load_state_dict(a->state_dict());
  const Tensor x = randn({5, 2, 3});
  EXPECT_EQ(std::get<0>(a(x)).to_vector<float>(), std::get<0>(b(x)).to_vector<float>());
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

TEST(RNNLayers, Printing) {
  EXPECT_EQ(
      printed(*nn::LSTM(
          10, 20, {.num_layers = 2, .batch_first = true, .dropout = 0.5, .bidirectional = true})),
      "LSTM(10, 20, num_layers=2, batch_first=true, dropout=0.5, bidirectional=true)");
  EXPECT_EQ(printed(*nn::RNN(3, 4, {.nonlinearity = "relu"})), "RNN(3, 4, nonlinearity=relu)");
  EXPECT_EQ(printed(*nn::GRU(3, 4)), "GRU(3, 4)");
  EXPECT_EQ(printed(*nn::LSTM(3, 4, {.proj_size = 2})), "LSTM(3, 4, proj_size=2)");
  EXPECT_EQ(printed(*nn::GRUCell(3, 4, {.bias = false})), "GRUCell(3, 4, bias=false)");
  EXPECT_EQ(printed(*nn::RNNCell(3, 4)), "RNNCell(3, 4)");
}

// ---- Bad input -------------------------------------------------------------------------------

void expect_error(const std::function<void()>& f, ErrorKind kind,
                  const std::vector<std::string>& words) {
  const Error e = oxtest::caught(f);
  EXPECT_EQ(e.kind(), kind) << e.what();
  for (const std::string& w : words) EXPECT_TRUE(oxtest::contains(e, w)) << e.what();
}

TEST(RNNLayers, BadOptionsAreValueErrors) {
  expect_error([] { nn::LSTM(3, 0); }, ErrorKind::Value, {"[LSTM]", "hidden_size"});
  expect_error([] { nn::GRU(3, 4, {.num_layers = 0}); }, ErrorKind::Value, {"[GRU]", "num_layers"});
  expect_error([] { nn::RNN(3, 4, {.nonlinearity = "sigmoid"}); }, ErrorKind::Value,
               {"[RNN]", "sigmoid"});
  expect_error([] { nn::LSTM(3, 4, {.dropout = 1.5}); }, ErrorKind::Value, {"dropout"});
  expect_error([] { nn::LSTM(3, 4, {.proj_size = 4}); }, ErrorKind::Value, {"proj_size"});
  expect_error([] { nn::RNNCell(3, 4, {.nonlinearity = "gelu"}); }, ErrorKind::Value, {"gelu"});
  expect_error([] { nn::LSTMCell(-1, 4); }, ErrorKind::Value, {"[LSTMCell]"});
}

TEST(RNNLayers, BadInputNamesOpAndShapes) {
  nn::LSTM lstm(3, 4, {.num_layers = 2});
  nn::GRU gru_bf(3, 4, {.batch_first = true});
  const Tensor x = randn({5, 2, 3});
  // Rank and features.
  expect_error([&] { lstm(randn({5, 2, 3, 1})); }, ErrorKind::Shape, {"[LSTM]", "[5, 2, 3, 1]"});
  expect_error([&] { lstm(randn({5})); }, ErrorKind::Shape, {"[LSTM]", "[5]"});
  expect_error([&] { lstm(randn({5, 2, 6})); }, ErrorKind::Shape, {"[LSTM]", "[5, 2, 6]", "3"});
  // batch_first given [L, N, in] whose N is not the feature count.
  expect_error([&] { gru_bf(randn({2, 5, 4})); }, ErrorKind::Shape, {"[GRU]", "batch_first"});
  // States of the wrong shape (h_0 for 1 layer, c_0 with a different batch) and dtype.
  expect_error(
      [&] {
        lstm(x, std::make_tuple(randn({1, 2, 4}), randn({2, 2, 4})));
      },
      ErrorKind::Shape, {"[LSTM]", "h_0", "[1, 2, 4]", "[2, 2, 4]"});
  expect_error(
      [&] {
        lstm(x, std::make_tuple(randn({2, 2, 4}), randn({2, 3, 4})));
      },
      ErrorKind::Shape, {"[LSTM]", "c_0", "[2, 3, 4]"});
  expect_error(
      [&] {
        lstm(x, std::make_tuple(randn({2, 2, 4}, {.dtype = kF64}), randn({2, 2, 4})));
      },
      ErrorKind::DType, {"[LSTM]", "h_0", "f64"});
  // Unbatched input takes unbatched states.
  expect_error(
      [&] {
        lstm(randn({5, 3}), std::make_tuple(randn({2, 1, 4}), randn({2, 1, 4})));
      },
      ErrorKind::Shape, {"[LSTM]", "unbatched"});
  // Input dtype: integers refused, f64 input with f32 parameters refused.
  expect_error([&] { lstm(ones({5, 2, 3}, kI64)); }, ErrorKind::DType, {"[LSTM]", "i64"});
  expect_error([&] { lstm(ones({5, 2, 3}, kF16)); }, ErrorKind::DType, {"[LSTM]", "f16"});
  expect_error(
      [&] {
        lstm(randn({5, 2, 3}, {.dtype = kF64}));
      },
      ErrorKind::DType, {"[LSTM]", "f64", "f32"});
  // lengths: dtype, shape, range, unbatched input.
  expect_error(
      [&] {
        lstm(x, std::nullopt, tensor({5.f, 2.f}));
      },
      ErrorKind::DType, {"[LSTM]", "lengths", "f32"});
  expect_error(
      [&] {
        lstm(x, std::nullopt, tensor(std::vector<int64_t>{5, 2, 1}));
      },
      ErrorKind::Shape, {"[LSTM]", "lengths", "[3]"});
  expect_error(
      [&] {
        lstm(x, std::nullopt, tensor(std::vector<int64_t>{6, 2}));
      },
      ErrorKind::Value, {"[LSTM]", "length 6", "[0, 5]"});
  expect_error(
      [&] {
        lstm(x, std::nullopt, tensor(std::vector<int64_t>{-1, 2}));
      },
      ErrorKind::Value, {"[LSTM]", "length -1"});
  expect_error(
      [&] {
        lstm(randn({5, 3}), std::nullopt, tensor(std::vector<int64_t>{5}));
      },
      ErrorKind::Shape, {"[LSTM]", "lengths", "unbatched"});
}

TEST(RNNCells, BadInputNamesOpAndShapes) {
  nn::LSTMCell lstm(3, 4);
  nn::GRUCell gru(3, 4);
  nn::RNNCell rnn(3, 4);
  expect_error([&] { gru(randn({2, 5})); }, ErrorKind::Shape, {"[gru_cell]", "[2, 5]", "3"});
  expect_error([&] { rnn(randn({2, 2, 3})); }, ErrorKind::Shape, {"[rnn_cell]", "[2, 2, 3]"});
  expect_error(
      [&] {
        gru(randn({2, 3}), randn({3, 4}));
      },
      ErrorKind::Shape, {"[gru_cell]", "hx", "[3, 4]", "[2, 4]"});
  expect_error(
      [&] {
        lstm(randn({2, 3}), std::make_tuple(randn({2, 4}), randn({2, 5})));
      },
      ErrorKind::Shape, {"[lstm_cell]", "cx", "[2, 5]"});
  expect_error([&] { rnn(randn({3}), randn({2, 4})); }, ErrorKind::Shape, {"[rnn_cell]", "hx"});
  expect_error([&] { lstm(ones({2, 3}, kI32)); }, ErrorKind::DType, {"[LSTMCell]", "i32"});
  expect_error(
      [&] {
        gru(randn({2, 3}), randn({2, 4}, {.dtype = kF64}));
      },
      ErrorKind::DType, {"[gru_cell]", "hx", "f64"});
}

}  // namespace
