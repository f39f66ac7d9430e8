// GPT-2 (GPT2LMHeadModel): learned positions, pre-LayerNorm blocks of Conv1D layers, the
// tanh-approximated GELU, the output layer tied to the token embedding.

#include "models/pretrained.h"
#include "oxmera/nn.h"
#include "oxmera/ops.h"

namespace ox::models {
namespace {

struct Gpt2Sizes {
  int64_t vocab, positions, embed, layers, heads, inner;
  double eps;
};

class Gpt2AttentionImpl : public nn::Module {
 public:
  Gpt2AttentionImpl(const Gpt2Sizes& s, size_t layer) : heads_(s.heads), layer_(layer) {
    c_attn = register_module("c_attn", Conv1D(s.embed, 3 * s.embed));
    c_proj = register_module("c_proj", Conv1D(s.embed, s.embed));
  }
  Tensor forward(const Tensor& x, const CausalLM::Step& step) {
    const int64_t b = x.size(0), t = x.size(1), e = x.size(2);
    const Tensor qkv = c_attn->forward(x).view({b, t, 3, heads_, e / heads_});
    const auto part = [&](int64_t i) { return qkv.select(2, i).transpose(1, 2); };
    Tensor k = part(1), v = part(2);
    if (step.cache) std::tie(k, v) = step.cache->update(layer_, k, v);
    const Tensor y = causal_attention(part(0), k, v, 0, step.key_mask);
    return c_proj->forward(y.transpose(1, 2).reshape({b, t, e}));
  }
  Conv1D c_attn = nullptr, c_proj = nullptr;

 private:
  int64_t heads_;
  size_t layer_;
};
OX_MODULE(Gpt2Attention);

class Gpt2MlpImpl : public nn::Module {
 public:
  explicit Gpt2MlpImpl(const Gpt2Sizes& s) {
    c_fc = register_module("c_fc", Conv1D(s.embed, s.inner));
    c_proj = register_module("c_proj", Conv1D(s.inner, s.embed));
  }
  Tensor forward(const Tensor& x) { return c_proj->forward(gelu(c_fc->forward(x), "tanh")); }
  Conv1D c_fc = nullptr, c_proj = nullptr;
};
OX_MODULE(Gpt2Mlp);

class Gpt2BlockImpl : public nn::Module {
 public:
  Gpt2BlockImpl(const Gpt2Sizes& s, size_t layer) {
    ln_1 = register_module("ln_1", nn::LayerNorm(Shape{s.embed}, {.eps = s.eps}));
    attn = register_module("attn", Gpt2Attention(s, layer));
    ln_2 = register_module("ln_2", nn::LayerNorm(Shape{s.embed}, {.eps = s.eps}));
    mlp = register_module("mlp", Gpt2Mlp(s));
  }
  Tensor forward(Tensor x, const CausalLM::Step& step) {
    x = x + attn->forward(ln_1->forward(x), step);
    return x + mlp->forward(ln_2->forward(x));
  }
  nn::LayerNorm ln_1 = nullptr, ln_2 = nullptr;
  Gpt2Attention attn = nullptr;
  Gpt2Mlp mlp = nullptr;
};
OX_MODULE(Gpt2Block);

class Gpt2ModelImpl : public nn::Module {
 public:
  explicit Gpt2ModelImpl(const Gpt2Sizes& s) {
    wte = register_module("wte", nn::Embedding(s.vocab, s.embed));
    wpe = register_module("wpe", nn::Embedding(s.positions, s.embed));
    h = register_module("h", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) {
      Gpt2Block block(s, size_t(i));
      h->push_back(block);
      blocks.push_back(block);
    }
    ln_f = register_module("ln_f", nn::LayerNorm(Shape{s.embed}, {.eps = s.eps}));
  }
  nn::Embedding wte = nullptr, wpe = nullptr;
  nn::ModuleList h = nullptr;
  std::vector<Gpt2Block> blocks;
  nn::LayerNorm ln_f = nullptr;
};
OX_MODULE(Gpt2Model);

class Gpt2LMHead final : public CausalLM {
 public:
  explicit Gpt2LMHead(const Gpt2Sizes& s) : sizes_(s) {
    transformer = register_module("transformer", Gpt2Model(s));
  }

  std::string model_type() const override { return "gpt2"; }
  int64_t vocab_size() const override { return sizes_.vocab; }
  Gpt2Model transformer = nullptr;

 protected:
  Tensor run(const Tensor& input_ids, const Step& step) override {
    const int64_t end = step.cache ? step.cache->length() + input_ids.size(1) : input_ids.size(1);
    OX_CHECK(end <= sizes_.positions, Value, "gpt2", "a sequence of ", end,
             " tokens is longer than the model's ", sizes_.positions, " positions");
    Tensor x = transformer->wte->forward(input_ids) + transformer->wpe->forward(step.positions);
    for (auto& block : transformer->blocks) x = block->forward(x, step);
    if (step.last_only) x = x.narrow(1, x.size(1) - 1, 1);
    x = transformer->ln_f->forward(x);
    return matmul(x, transformer->wte->weight.t());  // tied to the token embedding
  }

 private:
  Gpt2Sizes sizes_;
};

}  // namespace

std::shared_ptr<CausalLM> make_gpt2(const Config& c) {
  Gpt2Sizes s;
  s.vocab = c.integer("vocab_size", 50257);
  s.positions = c.integer("n_positions", 1024);
  s.embed = c.integer("n_embd", 768);
  s.layers = c.integer("n_layer", 12);
  s.heads = c.integer("n_head", 12);
  s.inner = c.find("n_inner") ? c.integer("n_inner") : 4 * s.embed;
  s.eps = c.number("layer_norm_epsilon", 1e-5);
  OX_CHECK(s.heads > 0 && s.embed % s.heads == 0, Format, kFromPretrained, c.where(), ": n_embd ",
           s.embed, " is not a multiple of n_head ", s.heads);
  const auto act = c.string("activation_function").value_or("gelu_new");
  OX_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", Format, kFromPretrained, c.where(),
           ": activation_function \"", act, "\" is not supported (gelu_new)");
  return std::make_shared<Gpt2LMHead>(s);
}

}  // namespace ox::models
