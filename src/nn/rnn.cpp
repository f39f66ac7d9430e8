// RNN, LSTM, GRU and their cells. A layer projects the inputs of all time steps at once (one
// GEMM per layer and direction), then runs one GEMM h W_hhᵀ per step and the gate arithmetic
// (rnn_pointwise.cpp: fused on the CPU).

#include "oxmera/nn/rnn.h"

#include <cmath>
#include <ostream>

#include "nn/rnn_pointwise.h"
#include "oxmera/nn/init.h"
#include "oxmera/ops.h"

namespace ox::nn {

namespace {

int64_t gate_count(RNNBaseImpl::Mode mode) {
  switch (mode) {
    case RNNBaseImpl::Mode::LSTM:
      return 4;
    case RNNBaseImpl::Mode::GRU:
      return 3;
    default:
      return 1;
  }
}

// x Wᵀ + b (b may be undefined), for x [N, in].
Tensor affine(const Tensor& x, const Tensor& w, const Tensor& b) {
  return b.defined() ? addmm(b, x, w.t()) : matmul(x, w.t());
}

void check_floating(const char* op, const Tensor& input, const Tensor& weight) {
  OX_CHECK(input.defined(), Value, op, "the input is undefined");
  OX_CHECK(is_floating(input.dtype()), DType, op, "takes floating input, got ", input.dtype(),
           " of shape ", input.shape());
  OX_CHECK(input.dtype() == weight.dtype(), DType, op, "input dtype ", input.dtype(),
           " does not match the parameters' ", weight.dtype(),
           " (modules do not promote; convert the input or call module->to(", input.dtype(), "))");
}

double init_bound(int64_t hidden_size) { return 1.0 / std::sqrt(double(hidden_size)); }

// ---- One step: the checks the three cells share -----------------------------------------------

struct CellInput {
  Tensor x;      // [N, in]
  bool batched;  // input was [N, in]
};

CellInput cell_input(const char* op, const Tensor& input, const Tensor& w_ih) {
  check_floating(op, input, w_ih);
  OX_CHECK(input.dim() == 1 || input.dim() == 2, Shape, op,
           "expects input [N, input_size] or [input_size], got ", input.shape());
  OX_CHECK(input.size(-1) == w_ih.size(1), Shape, op, "input of shape ", input.shape(), " has ",
           input.size(-1), " features, expected ", w_ih.size(1), " (weight_ih ", w_ih.shape(), ")");
  return {input.dim() == 2 ? input : input.unsqueeze(0), input.dim() == 2};
}

// The state [N, H] (zeros when undefined), checked against the input's batch.
Tensor cell_state(const char* op, const char* what, const Tensor& state, const CellInput& in,
                  int64_t hidden) {
  const int64_t n = in.x.size(0);
  if (!state.defined()) return zeros({n, hidden}, {.dtype = in.x.dtype(), .device = in.x.device()});
  OX_CHECK(state.dtype() == in.x.dtype(), DType, op, what, " dtype ", state.dtype(),
           " does not match the input's ", in.x.dtype());
  const Shape expected = in.batched ? Shape{n, hidden} : Shape{hidden};
  OX_CHECK(state.shape() == expected, Shape, op, what, " of shape ", state.shape(),
           " does not match input ", (in.batched ? in.x.shape() : in.x.squeeze(0).shape()),
           ": expected ", expected);
  return in.batched ? state : state.unsqueeze(0);
}

Tensor cell_output(const Tensor& h, const CellInput& in) { return in.batched ? h : h.squeeze(0); }

void check_nonlinearity(const char* op, const std::string& nonlinearity) {
  OX_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", Value, op,
           "nonlinearity must be \"tanh\" or \"relu\", got \"", nonlinearity, "\"");
}

void check_sizes(const char* op, int64_t input_size, int64_t hidden_size) {
  OX_CHECK(input_size >= 0 && hidden_size > 0, Value, op,
           "input_size must be >= 0 and hidden_size > 0, got ", input_size, " and ", hidden_size);
}

}  // namespace

// ---- Functional forms --------------------------------------------------------------------------

namespace functional {

Tensor rnn_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh, const std::string& nonlinearity) {
  check_nonlinearity("rnn_cell", nonlinearity);
  const CellInput in = cell_input("rnn_cell", input, w_ih);
  const Tensor h = cell_state("rnn_cell", "hx", hx, in, w_hh.size(1));
  const Tensor pre = affine(h, w_hh, b_hh) + affine(in.x, w_ih, b_ih);
  return cell_output(nonlinearity == "tanh" ? tanh(pre) : relu(pre), in);
}

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx,
                                     const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                     const Tensor& b_hh) {
  const CellInput in = cell_input("lstm_cell", input, w_ih);
  const int64_t hidden = w_hh.size(1);
  const Tensor h = cell_state("lstm_cell", "hx", hx, in, hidden);
  const Tensor c = cell_state("lstm_cell", "cx", cx, in, hidden);
  Tensor bias = b_ih.defined() && b_hh.defined() ? b_ih + b_hh : b_ih.defined() ? b_ih : b_hh;
  const Tensor gates = addmm(affine(in.x, w_ih, bias), h, w_hh.t());
  auto [h2, c2] = detail::lstm_pointwise(gates, c);
  return {cell_output(h2, in), cell_output(c2, in)};
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh) {
  const CellInput in = cell_input("gru_cell", input, w_ih);
  const Tensor h = cell_state("gru_cell", "hx", hx, in, w_hh.size(1));
  return cell_output(detail::gru_pointwise(affine(in.x, w_ih, b_ih), affine(h, w_hh, b_hh), h), in);
}

}  // namespace functional

// ---- Cells -------------------------------------------------------------------------------------

namespace {
// Registers weight_ih, weight_hh, bias_ih, bias_hh of a cell with `gates` gates.
template <class Cell>
void register_cell(Cell& cell, int64_t gates, bool bias) {
  check_sizes(cell.type_name().c_str(), cell.input_size, cell.hidden_size);
  const int64_t gh = gates * cell.hidden_size;
  cell.weight_ih = cell.register_parameter("weight_ih", empty({gh, cell.input_size}));
  cell.weight_hh = cell.register_parameter("weight_hh", empty({gh, cell.hidden_size}));
  if (bias) {
    cell.bias_ih = cell.register_parameter("bias_ih", empty({gh}));
    cell.bias_hh = cell.register_parameter("bias_hh", empty({gh}));
  }
  cell.reset_parameters();
}

template <class Cell>
void reset_cell(Cell& cell) {
  const double k = init_bound(cell.hidden_size);
  for (Tensor* t : {&cell.weight_ih, &cell.weight_hh, &cell.bias_ih, &cell.bias_hh})
    if (t->defined()) init::uniform_(*t, -k, k);
}

void print_cell(std::ostream& os, const char* name, int64_t in, int64_t hidden, bool bias,
                const std::string& nonlinearity = "tanh") {
  os << name << "(" << in << ", " << hidden;
  if (!bias) os << ", bias=false";
  if (nonlinearity != "tanh") os << ", nonlinearity=" << nonlinearity;
  os << ")";
}
}  // namespace

RNNCellImpl::RNNCellImpl(int64_t input_size, int64_t hidden_size, const RNNCellOptions& options)
    : Module("RNNCell"), input_size(input_size), hidden_size(hidden_size), options(options) {
  check_nonlinearity("RNNCell", options.nonlinearity);
  register_cell(*this, 1, options.bias);
}
void RNNCellImpl::reset_parameters() { reset_cell(*this); }
Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) const {
  check_floating("RNNCell", input, weight_ih);
  return functional::rnn_cell(input, hx, weight_ih, weight_hh, bias_ih, bias_hh,
                              options.nonlinearity);
}
void RNNCellImpl::pretty_print(std::ostream& os) const {
  print_cell(os, "RNNCell", input_size, hidden_size, options.bias, options.nonlinearity);
}

LSTMCellImpl::LSTMCellImpl(int64_t input_size, int64_t hidden_size, const LSTMCellOptions& options)
    : Module("LSTMCell"), input_size(input_size), hidden_size(hidden_size), options(options) {
  register_cell(*this, 4, options.bias);
}
void LSTMCellImpl::reset_parameters() { reset_cell(*this); }
std::tuple<Tensor, Tensor> LSTMCellImpl::forward(
    const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx) const {
  check_floating("LSTMCell", input, weight_ih);
  const Tensor h = hx ? std::get<0>(*hx) : Tensor(), c = hx ? std::get<1>(*hx) : Tensor();
  return functional::lstm_cell(input, h, c, weight_ih, weight_hh, bias_ih, bias_hh);
}
void LSTMCellImpl::pretty_print(std::ostream& os) const {
  print_cell(os, "LSTMCell", input_size, hidden_size, options.bias);
}

GRUCellImpl::GRUCellImpl(int64_t input_size, int64_t hidden_size, const GRUCellOptions& options)
    : Module("GRUCell"), input_size(input_size), hidden_size(hidden_size), options(options) {
  register_cell(*this, 3, options.bias);
}
void GRUCellImpl::reset_parameters() { reset_cell(*this); }
Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) const {
  check_floating("GRUCell", input, weight_ih);
  return functional::gru_cell(input, hx, weight_ih, weight_hh, bias_ih, bias_hh);
}
void GRUCellImpl::pretty_print(std::ostream& os) const {
  print_cell(os, "GRUCell", input_size, hidden_size, options.bias);
}

// ---- Layers ------------------------------------------------------------------------------------

RNNBaseImpl::RNNBaseImpl(const char* name, Mode mode, int64_t input_size, int64_t hidden_size,
                         const Config& config)
    : Module(name), mode(mode), input_size(input_size), hidden_size(hidden_size), config(config) {
  check_sizes(name, input_size, hidden_size);
  OX_CHECK(config.num_layers >= 1, Value, name, "num_layers must be >= 1, got ", config.num_layers);
  OX_CHECK(config.dropout >= 0 && config.dropout <= 1, Value, name,
           "dropout must be in [0, 1], got ", config.dropout);
  OX_CHECK(config.proj_size >= 0 && config.proj_size < hidden_size, Value, name,
           "proj_size must be >= 0 and smaller than hidden_size ", hidden_size, ", got ",
           config.proj_size);
  const int64_t gh = gate_count(mode) * hidden_size;
  const int64_t h_out = config.proj_size > 0 ? config.proj_size : hidden_size;
  for (int64_t k = 0; k < config.num_layers; ++k) {
    for (int64_t d = 0; d < num_directions(); ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d == 1 ? "_reverse" : "");
      const int64_t in = k == 0 ? input_size : h_out * num_directions();
      Weights w;
      w.w_ih = register_parameter("weight_ih" + suffix, empty({gh, in}));
      w.w_hh = register_parameter("weight_hh" + suffix, empty({gh, h_out}));
      if (config.bias) {
        w.b_ih = register_parameter("bias_ih" + suffix, empty({gh}));
        w.b_hh = register_parameter("bias_hh" + suffix, empty({gh}));
      }
      if (config.proj_size > 0)
        w.w_hr = register_parameter("weight_hr" + suffix, empty({config.proj_size, hidden_size}));
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

void RNNBaseImpl::reset_parameters() {
  const double k = init_bound(hidden_size);
  for (Tensor& p : parameters(false)) init::uniform_(p, -k, k);
}

const RNNBaseImpl::Weights& RNNBaseImpl::weights(int64_t layer, int64_t direction) const {
  OX_CHECK(
      layer >= 0 && layer < config.num_layers && direction >= 0 && direction < num_directions(),
      Index, type_name(), "no weights for layer ", layer, " direction ", direction);
  return weights_[size_t(layer * num_directions() + direction)];
}

void RNNBaseImpl::pretty_print(std::ostream& os) const {
  os << type_name() << "(" << input_size << ", " << hidden_size;
  if (config.proj_size > 0) os << ", proj_size=" << config.proj_size;
  if (config.num_layers != 1) os << ", num_layers=" << config.num_layers;
  if (mode == Mode::RNNRelu) os << ", nonlinearity=relu";
  if (!config.bias) os << ", bias=false";
  if (config.batch_first) os << ", batch_first=true";
  if (config.dropout != 0) os << ", dropout=" << config.dropout;
  if (config.bidirectional) os << ", bidirectional=true";
  os << ")";
}

namespace {

// The initial state of every layer and direction, [D*layers, N, size] (zeros when undefined).
Tensor initial_state(const char* op, const char* what, const Tensor& state, const Tensor& x,
                     bool batched, int64_t count, int64_t size) {
  const int64_t n = x.size(1);
  if (!state.defined()) return zeros({count, n, size}, {.dtype = x.dtype(), .device = x.device()});
  const Shape expected = batched ? Shape{count, n, size} : Shape{count, size};
  OX_CHECK(state.shape() == expected, Shape, op, what, " of shape ", state.shape(),
           " does not fit ", batched ? "batched" : "unbatched", " input with batch ", n,
           ": expected ", expected);
  OX_CHECK(state.dtype() == x.dtype(), DType, op, what, " dtype ", state.dtype(),
           " does not match the input's ", x.dtype());
  OX_CHECK(state.device() == x.device(), Device, op, what, " is on ", state.device(),
           ", the input on ", x.device());
  return batched ? state : state.unsqueeze(1);
}

// [L, N, 1] bool: step t of sequence n is within its length.
Tensor length_mask(const char* op, const Tensor& lengths, const Tensor& x, bool batched) {
  const int64_t steps = x.size(0), n = x.size(1);
  OX_CHECK(batched, Shape, op, "lengths needs batched input, got unbatched input of shape ",
           x.squeeze(1).shape());
  OX_CHECK(lengths.dtype() == kI64, DType, op, "lengths must be i64, got ", lengths.dtype());
  OX_CHECK(lengths.dim() == 1 && lengths.size(0) == n, Shape, op, "lengths of shape ",
           lengths.shape(), " does not fit batch ", n, ": expected [", n, "]");
  for (const int64_t len : lengths.to_vector<int64_t>())
    OX_CHECK(len >= 0 && len <= steps, Value, op, "length ", len, " is outside [0, ", steps,
             "] for input of ", steps, " steps");
  const Tensor t = arange(steps, {.dtype = kI64, .device = x.device()}).unsqueeze(1);
  return (t < lengths.to(x.device()).unsqueeze(0)).unsqueeze(2);
}

}  // namespace

std::vector<Tensor> RNNBaseImpl::run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                     const Tensor& lengths) const {
  const char* op = type_name().c_str();
  check_floating(op, input, weights_[0].w_ih);
  OX_CHECK(input.dim() == 2 || input.dim() == 3, Shape, op, "expects input ",
           config.batch_first ? "[N, L, input_size]" : "[L, N, input_size]",
           " or [L, input_size], got ", input.shape());
  const bool batched = input.dim() == 3;
  const Tensor x = !batched             ? input.unsqueeze(1)
                   : config.batch_first ? input.transpose(0, 1)
                                        : input;
  OX_CHECK(x.size(2) == input_size, Shape, op, "input of shape ", input.shape(), " has ", x.size(2),
           " features, expected input_size ", input_size,
           config.batch_first && batched ? " (batch_first: [N, L, input_size])" : "");
  const int64_t steps = x.size(0), n = x.size(1), dirs = num_directions();
  const int64_t h_out = config.proj_size > 0 ? config.proj_size : hidden_size;
  const int64_t count = config.num_layers * dirs;
  const Tensor h_init = initial_state(op, "h_0", h0, x, batched, count, h_out);
  const Tensor c_init =
      mode == Mode::LSTM ? initial_state(op, "c_0", c0, x, batched, count, hidden_size) : Tensor();
  const Tensor mask = lengths.defined() ? length_mask(op, lengths, x, batched) : Tensor();

  Tensor layer_input = x;
  std::vector<Tensor> h_last, c_last;
  for (int64_t k = 0; k < config.num_layers; ++k) {
    std::vector<Tensor> direction_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Weights& w = weights(k, d);
      const int64_t in = layer_input.size(2), gh = w.w_ih.size(0);
      // All steps' input projections in one GEMM; LSTM and RNN fold b_hh in here too (GRU
      // needs it inside r * (W_hn h + b_hn)).
      Tensor bias = w.b_ih;
      if (bias.defined() && mode != Mode::GRU) bias = w.b_ih + w.b_hh;
      const Tensor xproj =
          affine(layer_input.reshape({steps * n, in}), w.w_ih, bias).reshape({steps, n, gh});
      Tensor h = h_init.select(0, k * dirs + d);
      Tensor c = c_init.defined() ? c_init.select(0, k * dirs + d) : Tensor();
      std::vector<Tensor> outputs(static_cast<size_t>(steps));
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t t = d == 0 ? s : steps - 1 - s;
        const Tensor xt = xproj.select(0, t);
        Tensor h_new, c_new;
        switch (mode) {
          case Mode::RNNTanh:
            h_new = tanh(addmm(xt, h, w.w_hh.t()));
            break;
          case Mode::RNNRelu:
            h_new = relu(addmm(xt, h, w.w_hh.t()));
            break;
          case Mode::LSTM: {
            std::tie(h_new, c_new) = detail::lstm_pointwise(addmm(xt, h, w.w_hh.t()), c);
            if (w.w_hr.defined()) h_new = matmul(h_new, w.w_hr.t());
            break;
          }
          case Mode::GRU:
            h_new = detail::gru_pointwise(xt, affine(h, w.w_hh, w.b_hh), h);
            break;
        }
        if (mask.defined()) {
          const Tensor m = mask.select(0, t);
          outputs[size_t(t)] = where(m, h_new, 0.0);
          h = where(m, h_new, h);
          if (c.defined()) c = where(m, c_new, c);
        } else {
          outputs[size_t(t)] = h_new;
          h = h_new;
          c = c_new;
        }
      }
      direction_outputs.push_back(
          steps > 0 ? stack(outputs, 0)
                    : zeros({0, n, h_out}, {.dtype = x.dtype(), .device = x.device()}));
      h_last.push_back(h);
      if (c.defined()) c_last.push_back(c);
    }
    layer_input = dirs == 1 ? direction_outputs[0] : cat(direction_outputs, 2);
    if (k + 1 < config.num_layers && config.dropout > 0 && is_training())
      layer_input = dropout(layer_input, config.dropout, true);
  }
  Tensor output = layer_input, h_n = stack(h_last, 0);
  Tensor c_n = c_last.empty() ? Tensor() : stack(c_last, 0);
  if (!batched) {
    output = output.squeeze(1);
    h_n = h_n.squeeze(1);
    if (c_n.defined()) c_n = c_n.squeeze(1);
  } else if (config.batch_first) {
    output = output.transpose(0, 1);
  }
  return {output, h_n, c_n};
}

namespace {
template <class Options>
RNNBaseImpl::Config base_config(const Options& o) {
  RNNBaseImpl::Config config{o.num_layers, o.bias, o.batch_first, o.dropout, o.bidirectional, 0};
  if constexpr (requires { o.proj_size; }) config.proj_size = o.proj_size;
  return config;
}
RNNBaseImpl::Mode rnn_mode(const RNNOptions& options) {
  check_nonlinearity("RNN", options.nonlinearity);
  return options.nonlinearity == "relu" ? RNNBaseImpl::Mode::RNNRelu : RNNBaseImpl::Mode::RNNTanh;
}
std::tuple<Tensor, Tensor> output_and_h(const std::vector<Tensor>& out) { return {out[0], out[1]}; }
}  // namespace

RNNImpl::RNNImpl(int64_t input_size, int64_t hidden_size, const RNNOptions& options)
    : RNNBaseImpl("RNN", rnn_mode(options), input_size, hidden_size, base_config(options)),
      options(options) {}
std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& hx,
                                            const Tensor& lengths) const {
  return output_and_h(run(input, hx, Tensor(), lengths));
}

LSTMImpl::LSTMImpl(int64_t input_size, int64_t hidden_size, const LSTMOptions& options)
    : RNNBaseImpl("LSTM", Mode::LSTM, input_size, hidden_size, base_config(options)),
      options(options) {}
std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx,
    const Tensor& lengths) const {
  const std::vector<Tensor> out =
      run(input, hx ? std::get<0>(*hx) : Tensor(), hx ? std::get<1>(*hx) : Tensor(), lengths);
  return {out[0], {out[1], out[2]}};
}

GRUImpl::GRUImpl(int64_t input_size, int64_t hidden_size, const GRUOptions& options)
    : RNNBaseImpl("GRU", Mode::GRU, input_size, hidden_size, base_config(options)),
      options(options) {}
std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& hx,
                                            const Tensor& lengths) const {
  return output_and_h(run(input, hx, Tensor(), lengths));
}

}  // namespace ox::nn
