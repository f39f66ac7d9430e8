// Opening a Hugging Face folder: config.json, the weight files, the architecture by model_type,
// and the checks that every weight has its place.

#include "models/pretrained.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/text_util.h"
#include "oxmera/autograd.h"
#include "oxmera/core/error.h"
#include "oxmera/io/pytorch.h"
#include "oxmera/io/safetensors.h"
#include "oxmera/nn/functional.h"
#include "oxmera/nn/init.h"
#include "oxmera/ops.h"

namespace ox::models {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  OX_CHECK(in, Io, kFromPretrained, "cannot open ", path.string());
  std::ostringstream read;
  read << in.rdbuf();
  const std::string text = std::move(read).str();
  check_json_nesting(text, 64, kFromPretrained, path.string());
  try {
    auto parsed = nlohmann::json::parse(text);
    OX_CHECK(parsed.is_object(), Format, kFromPretrained, path.string(), " is not a JSON object");
    return parsed;
  } catch (const nlohmann::json::exception& e) {
    OX_FAIL(Format, kFromPretrained, path.string(), " is not valid JSON: ", e.what());
  }
}

}  // namespace

Config Config::read(const std::filesystem::path& dir) {
  std::error_code ec;
  OX_CHECK(std::filesystem::is_directory(dir, ec), Io, kFromPretrained, dir.string(),
           " is not a folder");
  const auto path = dir / "config.json";
  OX_CHECK(std::filesystem::exists(path, ec), Io, kFromPretrained, dir.string(),
           " has no config.json (a Hugging Face model folder has one)");
  Config config;
  config.json_ = read_json(path);
  config.path_ = path.string();
  return config;
}

Config Config::parse(std::string_view text) {
  check_json_nesting(text, 64, kFromPretrained, "the config");
  Config config;
  try {
    config.json_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    OX_FAIL(Format, kFromPretrained, "the config is not valid JSON: ", e.what());
  }
  OX_CHECK(config.json_.is_object(), Format, kFromPretrained, "the config is not a JSON object");
  config.path_ = "the config";
  return config;
}

const nlohmann::json* Config::find(const char* key) const {
  const auto it = json_.find(key);
  return it == json_.end() || it->is_null() ? nullptr : &*it;
}

std::string Config::model_type() const {
  const auto type = string("model_type");
  OX_CHECK(type, Format, kFromPretrained, path_, " has no \"model_type\"");
  return *type;
}

int64_t Config::integer(const char* key, std::optional<int64_t> fallback) const {
  const nlohmann::json* value = find(key);
  if (!value) {
    OX_CHECK(fallback, Format, kFromPretrained, path_, " has no \"", key, "\"");
    return *fallback;
  }
  OX_CHECK(value->is_number_integer(), Format, kFromPretrained, path_, ": \"", key,
           "\" is not an integer: ", value->dump());
  return value->get<int64_t>();
}

double Config::number(const char* key, std::optional<double> fallback) const {
  const nlohmann::json* value = find(key);
  if (!value) {
    OX_CHECK(fallback, Format, kFromPretrained, path_, " has no \"", key, "\"");
    return *fallback;
  }
  OX_CHECK(value->is_number(), Format, kFromPretrained, path_, ": \"", key,
           "\" is not a number: ", value->dump());
  return value->get<double>();
}

bool Config::boolean(const char* key, bool fallback) const {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  OX_CHECK(value->is_boolean(), Format, kFromPretrained, path_, ": \"", key,
           "\" is not true or false");
  return value->get<bool>();
}

std::optional<std::string> Config::string(const char* key) const {
  const nlohmann::json* value = find(key);
  if (!value) return std::nullopt;
  OX_CHECK(value->is_string(), Format, kFromPretrained, path_, ": \"", key, "\" is not a string");
  return value->get<std::string>();
}

void for_each_weight_file(const std::filesystem::path& dir,
                          const std::function<void(const std::string&, const TensorDict&)>& take) {
  std::error_code ec;
  // Safetensors files are mapped (copy-on-write): a tensor's pages are read when it is placed.
  const auto mapped = [](const std::filesystem::path& path) {
    return SafetensorsFile::open(path.string()).get_all();
  };
  if (std::filesystem::exists(dir / "model.safetensors", ec)) {
    take("model.safetensors", mapped(dir / "model.safetensors"));
    return;
  }
  if (std::filesystem::exists(dir / "model.safetensors.index.json", ec)) {
    const auto index_path = dir / "model.safetensors.index.json";
    const nlohmann::json index = read_json(index_path);
    const auto map = index.find("weight_map");
    OX_CHECK(map != index.end() && map->is_object(), Format, kFromPretrained, index_path.string(),
             " has no \"weight_map\" object");
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, shard] : map->items()) {
      OX_CHECK(shard.is_string(), Format, kFromPretrained, index_path.string(), ": the shard of \"",
               name, "\" is not a file name");
      const std::string file = shard.get<std::string>();
      OX_CHECK(file.find('/') == std::string::npos && file != ".." && !file.empty(), Format,
               kFromPretrained, index_path.string(), ": the shard \"", file,
               "\" is not a file of the folder");
      by_shard[file].push_back(name);
    }
    // Every shard must exist before any is read: a missing one fails at once.
    for (const auto& [file, names] : by_shard) {
      OX_CHECK(std::filesystem::exists(dir / file, ec), Io, kFromPretrained, "the shard ", file,
               " named by ", index_path.string(), " is missing");
    }
    for (const auto& [file, names] : by_shard) {
      const TensorDict shard = mapped(dir / file);
      for (const std::string& name : names) {
        OX_CHECK(shard.contains(name), Format, kFromPretrained, index_path.string(), " puts \"",
                 name, "\" in ", file, ", which does not hold it");
      }
      take(file, shard);
    }
    return;
  }
  if (std::filesystem::exists(dir / "pytorch_model.bin", ec)) {
    take("pytorch_model.bin", load_pytorch((dir / "pytorch_model.bin").string()));
    return;
  }
  OX_FAIL(Io, kFromPretrained, dir.string(),
          " has no weights: none of model.safetensors, model.safetensors.index.json, "
          "pytorch_model.bin");
}

Conv1DImpl::Conv1DImpl(int64_t in, int64_t out) {
  weight = register_parameter("weight", empty({in, out}));
  bias = register_parameter("bias", zeros({out}));
  nn::init::normal_(weight, 0.0, 0.02);  // Hugging Face's initializer_range default
}

Tensor Conv1DImpl::forward(const Tensor& x) const {
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(weight.size(1));
  return addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(shape);
}

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t window,
                        const Tensor& key_mask) {
  const int64_t heads = q.size(1), kv_heads = k.size(1);
  Tensor keys = k, values = v;
  if (kv_heads != heads) {  // grouped-query attention: each KV head serves heads / kv_heads
    const int64_t group = heads / kv_heads;
    const auto widen = [&](const Tensor& t) {
      return t.unsqueeze(2)
          .expand({t.size(0), kv_heads, group, t.size(2), t.size(3)})
          .reshape({t.size(0), heads, t.size(2), t.size(3)});
    };
    keys = widen(k);
    values = widen(v);
  }
  const int64_t t_len = q.size(2), s_len = keys.size(2);
  const bool windowed = window > 0 && window < s_len;
  if (!key_mask.defined() && !windowed) {
    if (t_len == s_len) {
      return nn::functional::scaled_dot_product_attention(q, keys, values, {.is_causal = true});
    }
    if (t_len == 1) return nn::functional::scaled_dot_product_attention(q, keys, values);
  }
  // Query i sits at position s_len - t_len + i: it sees keys up to there, only the last
  // `window` of them when there is a window, and only real tokens; a padding query sees itself
  // (its output is never used, but a row with no key at all would be NaN).
  const auto options = ox::dtype(kI64).device(q.device());
  const Tensor rows = (arange(t_len, options) + (s_len - t_len)).unsqueeze(1);
  const Tensor cols = arange(s_len, options).unsqueeze(0);
  Tensor mask = le(cols, rows);
  if (windowed) mask = logical_and(mask, gt(cols, rows - window));
  if (key_mask.defined()) {
    mask = logical_or(logical_and(mask.unsqueeze(0), key_mask.unsqueeze(1)), eq(cols, rows))
               .unsqueeze(1);
  }
  return nn::functional::scaled_dot_product_attention(q, keys, values, {.attn_mask = mask});
}

namespace {

// A file's name for a weight as the model spells it: with or without the base model's prefix
// (GPT-2's original files lack "transformer.", a BertForSequenceClassification file has "bert."
// that AutoModel's BertModel lacks), and TensorFlow-era LayerNorm.gamma/beta.
std::optional<std::string> place(std::string name, const TensorDict& own) {
  for (const auto& [from, to] : {std::pair{".gamma", ".weight"}, std::pair{".beta", ".bias"}}) {
    if (name.ends_with(from) && name.find("LayerNorm") != std::string::npos) {
      name = name.substr(0, name.size() - std::string_view(from).size()) + to;
    }
  }
  if (own.contains(name)) return name;
  for (const char* prefix : {"transformer.", "bert."}) {
    if (own.contains(prefix + name)) return prefix + name;
    if (name.starts_with(prefix) && own.contains(name.substr(std::strlen(prefix)))) {
      return name.substr(std::strlen(prefix));
    }
  }
  return std::nullopt;
}

// What a file may hold that is no weight of this model: buffers Hugging Face recomputes, a tied
// output layer saved anyway (pytorch_model.bin files hold it), the heads of another task (BERT's
// pre-training "cls.", a classifier when the base model is asked for).
bool ignorable(const std::string& name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
         name.ends_with("rotary_emb.inv_freq") || name.ends_with("position_ids") ||
         name == "lm_head.weight" || name.starts_with("cls.") || name.starts_with("classifier.");
}

// Hugging Face's initialization of a parameter: matrices normal(0, std), biases zero, norms one.
void initialize(Tensor& parameter, const std::string& name, double std) {
  if (parameter.dim() >= 2) {
    nn::init::normal_(parameter, 0.0, std);
  } else if (name.ends_with("bias")) {
    nn::init::zeros_(parameter);
  } else {
    nn::init::ones_(parameter);
  }
}

std::string listed(const std::vector<std::string>& list) {
  std::string out;
  for (size_t i = 0; i < list.size() && i < 8; ++i) out += (i ? ", " : "") + list[i];
  return list.size() > 8 ? out + ", ... (" + std::to_string(list.size()) + " in all)" : out;
}

}  // namespace

void load_weights(PretrainedModel& model, const Config& config, const std::filesystem::path& dir,
                  const PretrainedOptions& options,
                  const std::function<bool(const std::string&)>& may_be_missing) {
  const std::string type = config.model_type();
  model.set_config_json(config.json().dump());
  // A file at a time: its weights go into the parameters as it is read, so that at most one
  // shard is held beside the model.
  TensorDict own;
  std::set<std::string> loaded;
  std::vector<std::string> unexpected, mismatched;
  NoGradGuard no_grad;
  for_each_weight_file(dir, [&](const std::string& file, const TensorDict& weights) {
    if (own.empty()) {
      // The floating dtype: as asked, else as stored (the first floating weight's).
      std::optional<DType> dtype = options.dtype;
      for (const auto& [name, tensor] : weights) {
        if (!dtype && is_floating(tensor.dtype())) dtype = tensor.dtype();
      }
      if (dtype && *dtype != kF32) model.to(*dtype);
      own = model.state_dict();  // detached views of the parameters: copy_ reaches them
    }
    for (const auto& [name, tensor] : weights) {
      const auto key = place(name, own);
      if (!key) {
        if (!ignorable(name)) unexpected.push_back(name);
        continue;
      }
      Tensor& target = own[*key];
      if (target.shape() != tensor.shape()) {
        std::ostringstream line;
        line << name << " (" << file << ") is " << tensor.shape() << ", the model's "
             << target.shape();
        mismatched.push_back(line.str());
        continue;
      }
      target.copy_(tensor);
      loaded.insert(*key);
    }
  });
  std::vector<std::string> missing;
  for (auto& [name, tensor] : own) {
    if (loaded.count(name)) continue;
    if (may_be_missing && may_be_missing(name)) {  // a new head: initialized as transformers does
      initialize(tensor, name, config.number("initializer_range", 0.02));
    } else {
      missing.push_back(name);
    }
  }
  OX_CHECK(mismatched.empty(), Value, kFromPretrained, dir.string(),
           ": weights of the wrong shape for its ", type, " model: ", listed(mismatched));
  OX_CHECK(missing.empty(), Format, kFromPretrained, dir.string(), " lacks weights of its ", type,
           " model: ", listed(missing));
  OX_CHECK(unexpected.empty(), Format, kFromPretrained, dir.string(), " holds weights its ", type,
           " model has no place for: ", listed(unexpected));
  if (options.device) model.to(*options.device);
  model.train(false);
}

namespace {

std::shared_ptr<CausalLM> make_causal_lm(const Config& config) {
  const std::string type = config.model_type();
  std::shared_ptr<CausalLM> model;
  if (type == "gpt2") {
    model = make_gpt2(config);
  } else if (type == "llama" || type == "mistral" || type == "qwen2") {
    model = make_llama(config);
  } else {
    OX_FAIL(Value, kFromPretrained, config.where(), ": model_type \"", type,
            "\" is not supported by AutoModelForCausalLM (gpt2, llama, mistral, qwen2)");
  }
  return model;
}

}  // namespace

std::shared_ptr<CausalLM> AutoModelForCausalLM::from_pretrained(const std::filesystem::path& dir,
                                                                const PretrainedOptions& options) {
  const Config config = Config::read(dir);
  std::shared_ptr<CausalLM> model;
  {
    nn::init::SkipInitGuard skip;  // every parameter is about to be overwritten
    model = make_causal_lm(config);
  }
  load_weights(*model, config, dir, options);
  return model;
}

std::shared_ptr<CausalLM> AutoModelForCausalLM::from_config(std::string_view config_json,
                                                            const PretrainedOptions& options) {
  const Config config = Config::parse(config_json);
  std::shared_ptr<CausalLM> model;
  {
    nn::init::SkipInitGuard skip;  // initialized once, below, as Hugging Face does
    model = make_causal_lm(config);
  }
  model->set_config_json(config.json().dump());
  const double std = config.number("initializer_range", 0.02);
  NoGradGuard no_grad;
  for (auto& [name, parameter] : model->named_parameters()) initialize(parameter, name, std);
  if (options.dtype) model->to(*options.dtype);
  if (options.device) model->to(*options.device);
  model->train(false);
  return model;
}

namespace {

const char* torch_dtype_name(DType dtype) {
  switch (dtype) {
    case kF32:
      return "float32";
    case kF16:
      return "float16";
    case kBF16:
      return "bfloat16";
    case kF64:
      return "float64";
    default:
      return nullptr;
  }
}

}  // namespace

void PretrainedModel::save_pretrained(const std::filesystem::path& dir,
                                      const SaveOptions& options) const {
  const char* op = "save_pretrained";
  OX_CHECK(options.max_shard_bytes > 0, Value, op, "max_shard_bytes must be positive, got ",
           options.max_shard_bytes);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  OX_CHECK(!ec, Io, op, "cannot create ", dir.string(), ": ", ec.message());
  const TensorDict weights = state_dict();
  // Shards in state_dict order, each up to max_shard_bytes (a larger tensor alone in its own).
  std::vector<TensorDict> shards(1);
  int64_t shard_bytes = 0, total = 0;
  std::optional<DType> dtype;
  for (const auto& [name, tensor] : weights) {
    const int64_t bytes = tensor.numel() * int64_t(dtype_size(tensor.dtype()));
    if (shard_bytes > 0 && shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().insert(name, tensor);
    shard_bytes += bytes;
    total += bytes;
    if (!dtype && is_floating(tensor.dtype())) dtype = tensor.dtype();
  }
  // transformers reads a safetensors file only when its metadata says "format": "pt".
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  if (shards.size() == 1) {
    save_safetensors((dir / "model.safetensors").string(), shards[0], metadata);
  } else {
    nlohmann::json map = nlohmann::json::object();
    for (size_t i = 0; i < shards.size(); ++i) {
      char name[64];
      std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      save_safetensors((dir / name).string(), shards[i], metadata);
      for (const auto& entry : shards[i]) map[entry.first] = name;
    }
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
    std::ofstream((dir / "model.safetensors.index.json").string()) << index.dump(2) << "\n";
  }
  nlohmann::json config = nlohmann::json::parse(config_json_);
  if (dtype && torch_dtype_name(*dtype)) config["torch_dtype"] = torch_dtype_name(*dtype);
  std::ofstream out((dir / "config.json").string());
  out << config.dump(2) << "\n";
  OX_CHECK(out.good(), Io, op, "cannot write ", (dir / "config.json").string());
}

}  // namespace ox::models
