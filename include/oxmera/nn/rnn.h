#pragma once
// Recurrent layers, as torch.nn: RNN, LSTM and GRU over sequences, and the cells RNNCell,
// LSTMCell and GRUCell for one step. Parameter names, shapes, gate order and initialization are
// PyTorch's, so state dicts interchange.

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "oxmera/nn/module.h"

namespace ox::nn {

// ---- Functional forms of one step ------------------------------------------------------------
// input [N, in] or [in], hx (and cx) [N, H] or [H] (undefined: zeros); w_ih [G*H, in],
// w_hh [G*H, H], biases [G*H] or undefined, with G = 1 (RNN), 4 (LSTM: i, f, g, o) or
// 3 (GRU: r, z, n).
namespace functional {
// h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), act "tanh" or "relu".
Tensor rnn_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih = {}, const Tensor& b_hh = {},
                const std::string& nonlinearity = "tanh");
// (h', c'): c' = f*c + i*g, h' = o*tanh(c').
std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx,
                                     const Tensor& w_ih, const Tensor& w_hh,
                                     const Tensor& b_ih = {}, const Tensor& b_hh = {});
// h' = (1-z)*n + z*h, n = tanh(W_in x + b_in + r*(W_hn h + b_hn)).
Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih = {}, const Tensor& b_hh = {});
}  // namespace functional

// Whether LSTM and GRU steps on the CPU (any floating dtype; f16/bf16 computed in f32) take the
// fused gate kernel (on by default; other devices always compose public ops). Process-wide; for
// tests and measurements.
void set_fused_rnn_enabled(bool enabled);
bool fused_rnn_enabled();

// ---- Cells -----------------------------------------------------------------------------------

struct RNNCellOptions {
  OX_NAMED_FIELDS_ONLY;
  bool bias = true;
  std::string nonlinearity = "tanh";  // or "relu"
};
struct LSTMCellOptions {
  OX_NAMED_FIELDS_ONLY;
  bool bias = true;
};
using GRUCellOptions = LSTMCellOptions;

// Parameters weight_ih [G*H, in], weight_hh [G*H, H], bias_ih and bias_hh [G*H], all
// U(-1/√H, 1/√H), in f32 on the CPU (module->to converts them).
class RNNCellImpl : public Module {
 public:
  using Options = RNNCellOptions;
  RNNCellImpl(int64_t input_size, int64_t hidden_size, const RNNCellOptions& options = {});
  // input [N, in] or [in], hx [N, H] or [H] (undefined: zeros) → h' of hx's shape.
  Tensor forward(const Tensor& input, const Tensor& hx = {}) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t input_size, hidden_size;
  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};
OX_MODULE(RNNCell);

class LSTMCellImpl : public Module {
 public:
  using Options = LSTMCellOptions;
  LSTMCellImpl(int64_t input_size, int64_t hidden_size, const LSTMCellOptions& options = {});
  // hx = (h, c), each [N, H] or [H]; none: zeros. Returns (h', c').
  std::tuple<Tensor, Tensor> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = {}) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t input_size, hidden_size;
  LSTMCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};
OX_MODULE(LSTMCell);

class GRUCellImpl : public Module {
 public:
  using Options = GRUCellOptions;
  GRUCellImpl(int64_t input_size, int64_t hidden_size, const GRUCellOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& hx = {}) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t input_size, hidden_size;
  GRUCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};
OX_MODULE(GRUCell);

// ---- Layers ----------------------------------------------------------------------------------

struct RNNOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t num_layers = 1;
  std::string nonlinearity = "tanh";  // or "relu"
  bool bias = true;
  bool batch_first = false;  // input and output [N, L, *] instead of [L, N, *]
  double dropout = 0.0;      // on each layer's output but the last, in training mode
  bool bidirectional = false;
};
struct LSTMOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;
  bool bidirectional = false;
  int64_t proj_size = 0;  // > 0: h = W_hr (o * tanh(c)), of size proj_size < hidden_size
};
struct GRUOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;
  bool bidirectional = false;
};

// What RNN, LSTM and GRU share: the parameters of every layer and direction, registered in
// PyTorch's order and names (weight_ih_l{k}[_reverse], weight_hh_l{k}[_reverse],
// bias_ih_l{k}[_reverse], bias_hh_l{k}[_reverse], weight_hr_l{k}[_reverse]), and the loop.
class RNNBaseImpl : public Module {
 public:
  enum class Mode { RNNTanh, RNNRelu, LSTM, GRU };
  struct Config {
    int64_t num_layers = 1;
    bool bias = true;
    bool batch_first = false;
    double dropout = 0.0;
    bool bidirectional = false;
    int64_t proj_size = 0;
  };
  RNNBaseImpl(const char* name, Mode mode, int64_t input_size, int64_t hidden_size,
              const Config& config);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  // The parameters of layer k, direction d (1: reverse): w_ih, w_hh, b_ih, b_hh, w_hr
  // (undefined where absent).
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
  };
  const Weights& weights(int64_t layer, int64_t direction) const;
  int64_t num_directions() const { return config.bidirectional ? 2 : 1; }

  Mode mode;
  int64_t input_size, hidden_size;
  Config config;

 protected:
  // input [L, N, in], [N, L, in] (batch_first) or [L, in]; h0/c0 [D*layers, N, H_out/H] or
  // [D*layers, H_out/H] unbatched (undefined: zeros); lengths int64 [N] in [0, L] (undefined:
  // all L). Returns output, h_n and c_n (LSTM only).
  std::vector<Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                          const Tensor& lengths) const;

 private:
  std::vector<Weights> weights_;  // layer-major, direction-minor
};

class RNNImpl : public RNNBaseImpl {
 public:
  using Options = RNNOptions;
  RNNImpl(int64_t input_size, int64_t hidden_size, const RNNOptions& options = {});
  // (output [L, N, D*H], h_n [D*num_layers, N, H]); steps at or past lengths[n] leave sequence
  // n's state unchanged and its output zero (what pack_padded_sequence gives).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {},
                                     const Tensor& lengths = {}) const;
  RNNOptions options;
};
OX_MODULE(RNN);

class LSTMImpl : public RNNBaseImpl {
 public:
  using Options = LSTMOptions;
  LSTMImpl(int64_t input_size, int64_t hidden_size, const LSTMOptions& options = {});
  // (output [L, N, D*H_out], (h_n [D*num_layers, N, H_out], c_n [D*num_layers, N, H])), with
  // H_out = proj_size or hidden_size.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = {},
      const Tensor& lengths = {}) const;
  LSTMOptions options;
};
OX_MODULE(LSTM);

class GRUImpl : public RNNBaseImpl {
 public:
  using Options = GRUOptions;
  GRUImpl(int64_t input_size, int64_t hidden_size, const GRUOptions& options = {});
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {},
                                     const Tensor& lengths = {}) const;
  GRUOptions options;
};
OX_MODULE(GRU);

}  // namespace ox::nn
