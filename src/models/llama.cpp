// Llama (LlamaForCausalLM) and the models written as it: RMSNorm, rotary position embeddings
// (with rope_scaling "linear" and "llama3"), grouped-query attention, the SwiGLU MLP. Mistral
// adds a sliding window, Qwen2 biases on q, k and v (and optionally a window on upper layers).

#include <cmath>
#include <numbers>

#include "models/pretrained.h"
#include "oxmera/nn.h"
#include "oxmera/ops.h"

namespace ox::models {
namespace {

struct LlamaSizes {
  std::string type;
  int64_t vocab, hidden, inner, layers, heads, kv_heads, head_dim;
  double eps;
  bool qkv_bias, o_bias, mlp_bias, tied;
  std::vector<double> inv_freq;  // the rotary frequencies, scaled
  std::vector<int64_t> window;   // per layer; 0 for none
};

nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return nn::Linear(in, out, {.bias = bias});
}

// x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] for the halves x1, x2.
Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const Tensor rotated = cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

class LlamaAttentionImpl : public nn::Module {
 public:
  LlamaAttentionImpl(const LlamaSizes& s, size_t layer) : s_(s), layer_(layer) {
    q_proj = register_module("q_proj", linear(s.hidden, s.heads * s.head_dim, s.qkv_bias));
    k_proj = register_module("k_proj", linear(s.hidden, s.kv_heads * s.head_dim, s.qkv_bias));
    v_proj = register_module("v_proj", linear(s.hidden, s.kv_heads * s.head_dim, s.qkv_bias));
    o_proj = register_module("o_proj", linear(s.heads * s.head_dim, s.hidden, s.o_bias));
  }
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin,
                 const CausalLM::Step& step) {
    const int64_t b = x.size(0), t = x.size(1);
    const auto heads = [&](const Tensor& y, int64_t n) {
      return y.view({b, t, n, s_.head_dim}).transpose(1, 2);
    };
    const Tensor q = rotate(heads(q_proj->forward(x), s_.heads), cos, sin);
    Tensor k = rotate(heads(k_proj->forward(x), s_.kv_heads), cos, sin);
    Tensor v = heads(v_proj->forward(x), s_.kv_heads);
    if (step.cache) std::tie(k, v) = step.cache->update(layer_, k, v);
    const Tensor y = causal_attention(q, k, v, s_.window[layer_], step.key_mask);
    return o_proj->forward(y.transpose(1, 2).reshape({b, t, s_.heads * s_.head_dim}));
  }
  nn::Linear q_proj = nullptr, k_proj = nullptr, v_proj = nullptr, o_proj = nullptr;

 private:
  LlamaSizes s_;
  size_t layer_;
};
OX_MODULE(LlamaAttention);

class LlamaMlpImpl : public nn::Module {
 public:
  explicit LlamaMlpImpl(const LlamaSizes& s) {
    gate_proj = register_module("gate_proj", linear(s.hidden, s.inner, s.mlp_bias));
    up_proj = register_module("up_proj", linear(s.hidden, s.inner, s.mlp_bias));
    down_proj = register_module("down_proj", linear(s.inner, s.hidden, s.mlp_bias));
  }
  Tensor forward(const Tensor& x) {
    return down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x));
  }
  nn::Linear gate_proj = nullptr, up_proj = nullptr, down_proj = nullptr;
};
OX_MODULE(LlamaMlp);

class LlamaLayerImpl : public nn::Module {
 public:
  LlamaLayerImpl(const LlamaSizes& s, size_t layer) {
    self_attn = register_module("self_attn", LlamaAttention(s, layer));
    mlp = register_module("mlp", LlamaMlp(s));
    input_layernorm =
        register_module("input_layernorm", nn::RMSNorm(Shape{s.hidden}, {.eps = s.eps}));
    post_attention_layernorm =
        register_module("post_attention_layernorm", nn::RMSNorm(Shape{s.hidden}, {.eps = s.eps}));
  }
  Tensor forward(Tensor x, const Tensor& cos, const Tensor& sin, const CausalLM::Step& step) {
    x = x + self_attn->forward(input_layernorm->forward(x), cos, sin, step);
    return x + mlp->forward(post_attention_layernorm->forward(x));
  }
  LlamaAttention self_attn = nullptr;
  LlamaMlp mlp = nullptr;
  nn::RMSNorm input_layernorm = nullptr, post_attention_layernorm = nullptr;
};
OX_MODULE(LlamaLayer);

class LlamaModelImpl : public nn::Module {
 public:
  explicit LlamaModelImpl(const LlamaSizes& s) {
    embed_tokens = register_module("embed_tokens", nn::Embedding(s.vocab, s.hidden));
    layers = register_module("layers", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) {
      LlamaLayer layer(s, size_t(i));
      layers->push_back(layer);
      blocks.push_back(layer);
    }
    norm = register_module("norm", nn::RMSNorm(Shape{s.hidden}, {.eps = s.eps}));
  }
  nn::Embedding embed_tokens = nullptr;
  nn::ModuleList layers = nullptr;
  std::vector<LlamaLayer> blocks;
  nn::RMSNorm norm = nullptr;
};
OX_MODULE(LlamaModel);

class LlamaForCausalLM final : public CausalLM {
 public:
  explicit LlamaForCausalLM(const LlamaSizes& s) : s_(s) {
    model = register_module("model", LlamaModel(s));
    if (!s.tied) lm_head = register_module("lm_head", linear(s.hidden, s.vocab, false));
  }

  std::string model_type() const override { return s_.type; }
  int64_t vocab_size() const override { return s_.vocab; }

 protected:
  Tensor run(const Tensor& input_ids, const Step& step) override {
    Tensor x = model->embed_tokens->forward(input_ids);
    // cos and sin of position × frequency, in f32 as Hugging Face computes them, then x's dtype;
    // [B, 1, T, head_dim] for every head.
    const auto f32 = ox::dtype(kF32).device(input_ids.device());
    const std::vector<float> freq(s_.inv_freq.begin(), s_.inv_freq.end());
    const Tensor angles = step.positions.to(kF32).unsqueeze(-1) * tensor(freq, f32);
    const Tensor both = cat({angles, angles}, -1).unsqueeze(1);
    const Tensor cos = ox::cos(both).to(x.dtype()), sin = ox::sin(both).to(x.dtype());
    for (auto& layer : model->blocks) x = layer->forward(x, cos, sin, step);
    if (step.last_only) x = x.narrow(1, x.size(1) - 1, 1);
    x = model->norm->forward(x);
    return s_.tied ? matmul(x, model->embed_tokens->weight.t()) : lm_head->forward(x);
  }

 public:
  LlamaModel model = nullptr;
  nn::Linear lm_head = nullptr;

 private:
  LlamaSizes s_;
};

// Hugging Face's rotary frequencies: 1 / theta^(2i / d), then rope_scaling's adjustment.
std::vector<double> rotary_frequencies(const Config& c, int64_t head_dim) {
  const double theta = c.number("rope_theta", 10000.0);
  std::vector<double> inv(size_t(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    inv[i] = 1.0 / std::pow(theta, double(2 * i) / double(head_dim));
  }
  const nlohmann::json* scaling = c.find("rope_scaling");
  if (!scaling) return inv;
  const auto field = [&](const char* key) -> double {
    const auto it = scaling->find(key);
    OX_CHECK(it != scaling->end() && it->is_number(), Format, kFromPretrained, c.where(),
             ": rope_scaling has no number \"", key, "\"");
    return it->get<double>();
  };
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (const auto it = scaling->find(key); it != scaling->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  if (type == "default") return inv;
  if (type == "linear") {
    for (double& f : inv) f /= field("factor");
    return inv;
  }
  OX_CHECK(type == "llama3", Format, kFromPretrained, c.where(), ": rope_scaling type \"", type,
           "\" is not supported (linear, llama3)");
  const double factor = field("factor"), low = field("low_freq_factor"),
               high = field("high_freq_factor"),
               old_context = field("original_max_position_embeddings");
  const double low_wavelen = old_context / low, high_wavelen = old_context / high;
  for (double& f : inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen > low_wavelen) {
      f /= factor;
    } else if (wavelen >= high_wavelen) {  // between the two: a blend
      const double smooth = (old_context / wavelen - low) / (high - low);
      f = (1 - smooth) * f / factor + smooth * f;
    }
  }
  return inv;
}

}  // namespace

std::shared_ptr<CausalLM> make_llama(const Config& c) {
  LlamaSizes s;
  s.type = c.model_type();
  s.vocab = c.integer("vocab_size");
  s.hidden = c.integer("hidden_size");
  s.inner = c.integer("intermediate_size");
  s.layers = c.integer("num_hidden_layers");
  s.heads = c.integer("num_attention_heads");
  s.kv_heads = c.integer("num_key_value_heads", s.heads);
  OX_CHECK(s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0, Format, kFromPretrained,
           c.where(), ": num_attention_heads ", s.heads,
           " is not a multiple of num_key_value_heads ", s.kv_heads);
  s.head_dim = c.find("head_dim") ? c.integer("head_dim") : s.hidden / s.heads;
  s.eps = c.number("rms_norm_eps", 1e-6);
  const bool qwen2 = s.type == "qwen2";
  const bool attention_bias = c.boolean("attention_bias", false);
  s.qkv_bias = qwen2 || attention_bias;
  s.o_bias = attention_bias && !qwen2;
  s.mlp_bias = c.boolean("mlp_bias", false);
  s.tied = c.boolean("tie_word_embeddings", false);
  const auto act = c.string("hidden_act").value_or("silu");
  OX_CHECK(act == "silu", Format, kFromPretrained, c.where(), ": hidden_act \"", act,
           "\" is not supported (silu)");
  s.inv_freq = rotary_frequencies(c, s.head_dim);
  s.window.assign(size_t(s.layers), 0);
  const int64_t window = c.find("sliding_window") ? c.integer("sliding_window") : 0;
  if (s.type == "mistral") {
    s.window.assign(size_t(s.layers), window);
  } else if (qwen2 && c.boolean("use_sliding_window", false)) {
    const int64_t first = c.integer("max_window_layers", s.layers);
    for (int64_t i = first; i < s.layers; ++i) s.window[size_t(i)] = window;
  }
  return std::make_shared<LlamaForCausalLM>(s);
}

}  // namespace ox::models
