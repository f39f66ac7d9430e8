// BERT (BertModel, BertForSequenceClassification): post-LayerNorm encoder blocks over word,
// position and token-type embeddings, the erf GELU, a tanh pooler over the first token.

#include "models/pretrained.h"
#include "oxmera/nn.h"
#include "oxmera/ops.h"

namespace ox::models {
namespace {

struct BertSizes {
  int64_t vocab, hidden, layers, heads, inner, positions, types, labels;
  double eps;
};

class BertEmbeddingsImpl : public nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertSizes& s) {
    word_embeddings = register_module("word_embeddings", nn::Embedding(s.vocab, s.hidden));
    position_embeddings =
        register_module("position_embeddings", nn::Embedding(s.positions, s.hidden));
    token_type_embeddings =
        register_module("token_type_embeddings", nn::Embedding(s.types, s.hidden));
    LayerNorm = register_module("LayerNorm", nn::LayerNorm(Shape{s.hidden}, {.eps = s.eps}));
  }
  nn::Embedding word_embeddings = nullptr, position_embeddings = nullptr,
                token_type_embeddings = nullptr;
  nn::LayerNorm LayerNorm = nullptr;  // NOLINT: Hugging Face's name, in every weight file
};
OX_MODULE(BertEmbeddings);

// A Linear then LayerNorm(that + residual): BertSelfOutput and BertOutput.
class BertResidualImpl : public nn::Module {
 public:
  BertResidualImpl(int64_t in, const BertSizes& s) {
    dense = register_module("dense", nn::Linear(in, s.hidden));
    LayerNorm = register_module("LayerNorm", nn::LayerNorm(Shape{s.hidden}, {.eps = s.eps}));
  }
  Tensor forward(const Tensor& x, const Tensor& residual) {
    return LayerNorm->forward(dense->forward(x) + residual);
  }
  nn::Linear dense = nullptr;
  nn::LayerNorm LayerNorm = nullptr;  // NOLINT
};
OX_MODULE(BertResidual);

class BertSelfAttentionImpl : public nn::Module {
 public:
  explicit BertSelfAttentionImpl(const BertSizes& s) : heads_(s.heads) {
    query = register_module("query", nn::Linear(s.hidden, s.hidden));
    key = register_module("key", nn::Linear(s.hidden, s.hidden));
    value = register_module("value", nn::Linear(s.hidden, s.hidden));
  }
  Tensor forward(const Tensor& x, const Tensor& mask) {
    const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
    const auto heads = [&](const nn::Linear& l) {
      return l->forward(x).view({b, t, heads_, h / heads_}).transpose(1, 2);
    };
    const Tensor y = nn::functional::scaled_dot_product_attention(
        heads(query), heads(key), heads(value), {.attn_mask = mask});
    return y.transpose(1, 2).reshape({b, t, h});
  }
  nn::Linear query = nullptr, key = nullptr, value = nullptr;

 private:
  int64_t heads_;
};
OX_MODULE(BertSelfAttention);

class BertAttentionImpl : public nn::Module {
 public:
  explicit BertAttentionImpl(const BertSizes& s) {
    self = register_module("self", BertSelfAttention(s));
    output = register_module("output", BertResidual(s.hidden, s));
  }
  BertSelfAttention self = nullptr;
  BertResidual output = nullptr;
};
OX_MODULE(BertAttention);

class BertIntermediateImpl : public nn::Module {
 public:
  explicit BertIntermediateImpl(const BertSizes& s) {
    dense = register_module("dense", nn::Linear(s.hidden, s.inner));
  }
  nn::Linear dense = nullptr;
};
OX_MODULE(BertIntermediate);

class BertLayerImpl : public nn::Module {
 public:
  explicit BertLayerImpl(const BertSizes& s) {
    attention = register_module("attention", BertAttention(s));
    intermediate = register_module("intermediate", BertIntermediate(s));
    output = register_module("output", BertResidual(s.inner, s));
  }
  Tensor forward(const Tensor& x, const Tensor& mask) {
    const Tensor a = attention->output->forward(attention->self->forward(x, mask), x);
    return output->forward(gelu(intermediate->dense->forward(a)), a);
  }
  BertAttention attention = nullptr;
  BertIntermediate intermediate = nullptr;
  BertResidual output = nullptr;
};
OX_MODULE(BertLayer);

class BertEncoderImpl : public nn::Module {
 public:
  explicit BertEncoderImpl(const BertSizes& s) {
    layer = register_module("layer", nn::ModuleList());
    for (int64_t i = 0; i < s.layers; ++i) {
      BertLayer block(s);
      layer->push_back(block);
      blocks.push_back(block);
    }
  }
  nn::ModuleList layer = nullptr;
  std::vector<BertLayer> blocks;
};
OX_MODULE(BertEncoder);

class BertPoolerImpl : public nn::Module {
 public:
  explicit BertPoolerImpl(const BertSizes& s) {
    dense = register_module("dense", nn::Linear(s.hidden, s.hidden));
  }
  Tensor forward(const Tensor& hidden) { return tanh(dense->forward(hidden.select(1, 0))); }
  nn::Linear dense = nullptr;
};
OX_MODULE(BertPooler);

class BertModel final : public EncoderModel {
 public:
  explicit BertModel(const BertSizes& s) : s_(s) {
    embeddings = register_module("embeddings", BertEmbeddings(s));
    encoder = register_module("encoder", BertEncoder(s));
    pooler = register_module("pooler", BertPooler(s));
  }

  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask,
                 const Tensor& token_type_ids) override {
    OX_CHECK(input_ids.dim() == 2, Shape, "bert", "input_ids must be [batch, length], got ",
             input_ids.shape());
    const int64_t b = input_ids.size(0), t = input_ids.size(1);
    OX_CHECK(t <= s_.positions, Value, "bert", "a sequence of ", t,
             " tokens is longer than the model's ", s_.positions, " positions");
    const auto i64 = ox::dtype(kI64).device(input_ids.device());
    const auto check = [&](const Tensor& m, const char* what) {
      OX_CHECK(!m.defined() || m.shape() == input_ids.shape(), Shape, "bert", what, " must be ",
               input_ids.shape(), " as input_ids, got ", m.shape());
    };
    check(attention_mask, "attention_mask");
    check(token_type_ids, "token_type_ids");
    const Tensor types = token_type_ids.defined() ? token_type_ids.to(kI64) : zeros({b, t}, i64);
    Tensor x = embeddings->word_embeddings->forward(input_ids) +
               embeddings->token_type_embeddings->forward(types) +
               embeddings->position_embeddings->forward(arange(t, i64));
    x = embeddings->LayerNorm->forward(x);
    // Padding keys are masked out for every query: [B, 1, 1, T].
    const Tensor mask = attention_mask.defined()
                            ? ne(attention_mask.to(input_ids.device()), 0).view({b, 1, 1, t})
                            : Tensor();
    for (auto& layer : encoder->blocks) x = layer->forward(x, mask);
    return x;
  }
  std::string model_type() const override { return "bert"; }
  int64_t hidden_size() const override { return s_.hidden; }

  BertEmbeddings embeddings = nullptr;
  BertEncoder encoder = nullptr;
  BertPooler pooler = nullptr;

 private:
  BertSizes s_;
};

class BertForSequenceClassification final : public SequenceClassifier {
 public:
  explicit BertForSequenceClassification(const BertSizes& s) : s_(s) {
    bert = register_module("bert", std::make_shared<BertModel>(s));
    classifier = register_module("classifier", nn::Linear(s.hidden, s.labels));
  }
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask,
                 const Tensor& token_type_ids) override {
    return classifier->forward(
        bert->pooler->forward(bert->forward(input_ids, attention_mask, token_type_ids)));
  }
  std::string model_type() const override { return "bert"; }
  int64_t num_labels() const override { return s_.labels; }

  std::shared_ptr<BertModel> bert;
  nn::Linear classifier = nullptr;

 private:
  BertSizes s_;
};

BertSizes sizes(const Config& c) {
  BertSizes s;
  s.vocab = c.integer("vocab_size");
  s.hidden = c.integer("hidden_size", 768);
  s.layers = c.integer("num_hidden_layers", 12);
  s.heads = c.integer("num_attention_heads", 12);
  s.inner = c.integer("intermediate_size", 3072);
  s.positions = c.integer("max_position_embeddings", 512);
  s.types = c.integer("type_vocab_size", 2);
  s.eps = c.number("layer_norm_eps", 1e-12);
  s.labels = 2;
  if (const nlohmann::json* labels = c.find("id2label")) {
    OX_CHECK(labels->is_object() && !labels->empty(), Format, kFromPretrained, c.where(),
             ": \"id2label\" is not an object of labels");
    s.labels = int64_t(labels->size());
  }
  s.labels = c.integer("num_labels", s.labels);
  OX_CHECK(s.heads > 0 && s.hidden % s.heads == 0, Format, kFromPretrained, c.where(),
           ": hidden_size ", s.hidden, " is not a multiple of num_attention_heads ", s.heads);
  const auto act = c.string("hidden_act").value_or("gelu");
  OX_CHECK(act == "gelu", Format, kFromPretrained, c.where(), ": hidden_act \"", act,
           "\" is not supported (gelu)");
  const auto position = c.string("position_embedding_type").value_or("absolute");
  OX_CHECK(position == "absolute", Format, kFromPretrained, c.where(),
           ": position_embedding_type \"", position, "\" is not supported (absolute)");
  return s;
}

Config bert_config(const std::filesystem::path& dir, const char* auto_class) {
  Config config = Config::read(dir);
  OX_CHECK(config.model_type() == "bert", Value, kFromPretrained, config.where(), ": model_type \"",
           config.model_type(), "\" is not supported by ", auto_class, " (bert)");
  return config;
}

}  // namespace

std::shared_ptr<EncoderModel> AutoModel::from_pretrained(const std::filesystem::path& dir,
                                                         const PretrainedOptions& options) {
  const Config config = bert_config(dir, "AutoModel");
  std::shared_ptr<BertModel> model;
  {
    nn::init::SkipInitGuard skip;  // every parameter is about to be overwritten
    model = std::make_shared<BertModel>(sizes(config));
  }
  load_weights(*model, config, dir, options);
  return model;
}

std::shared_ptr<SequenceClassifier> AutoModelForSequenceClassification::from_pretrained(
    const std::filesystem::path& dir, const PretrainedOptions& options) {
  const Config config = bert_config(dir, "AutoModelForSequenceClassification");
  std::shared_ptr<BertForSequenceClassification> model;
  {
    nn::init::SkipInitGuard skip;  // loaded, or (the head) initialized by load_weights
    model = std::make_shared<BertForSequenceClassification>(sizes(config));
  }
  load_weights(*model, config, dir, options,
               [](const std::string& name) { return name.starts_with("classifier."); });
  return model;
}

}  // namespace ox::models
