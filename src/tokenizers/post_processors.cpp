// The post-processors of tokenizer.json: the special tokens around one text or a pair
// (TemplateProcessing, BertProcessing, RobertaProcessing), ByteLevel's (nothing for ids).

#include <map>

#include "tokenizers/pipeline.h"

namespace ox::tokenizers::post_processors {
namespace {

// A (token, id) pair as BertProcessing and RobertaProcessing write them: ["[SEP]", 102].
int64_t token_pair_id(const Json& j, const char* key, std::string_view where) {
  const Json& pair = json::member(j, key, where);
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) {
    json::fail(where, std::string("\"") + key + "\" is not [token, id]");
  }
  return json::as_id(pair[1], where);
}

// [CLS] A [SEP] (B [SEP]); type ids 0 for the first part, 1 for the second.
class BertProcessing final : public PostProcessor {
 public:
  BertProcessing(int64_t cls, int64_t sep) : cls_(cls), sep_(sep) {}
  std::vector<Encoded> process(std::vector<Encoded> sequences, bool add_special) const override {
    if (!add_special) return sequences;
    std::vector<Encoded> out(1);
    out[0].append_special(cls_, 0);
    out[0].append(sequences[0]);
    out[0].append_special(sep_, 0);
    if (sequences.size() > 1) {
      out[0].append(sequences[1]);
      out[0].append_special(sep_, 1);
    }
    return out;
  }
  size_t added_tokens(bool pair) const override { return pair ? 3 : 2; }

 private:
  int64_t cls_, sep_;
};

// <s> A </s> (</s> B </s>); every type id 0.
class RobertaProcessing final : public PostProcessor {
 public:
  RobertaProcessing(int64_t cls, int64_t sep) : cls_(cls), sep_(sep) {}
  std::vector<Encoded> process(std::vector<Encoded> sequences, bool add_special) const override {
    for (auto& sequence : sequences) sequence.type_ids.assign(sequence.ids.size(), 0);
    if (!add_special) return sequences;
    std::vector<Encoded> out(1);
    out[0].append_special(cls_, 0);
    out[0].append(sequences[0]);
    out[0].append_special(sep_, 0);
    if (sequences.size() > 1) {
      out[0].append_special(sep_, 0);
      out[0].append(sequences[1]);
      out[0].append_special(sep_, 0);
    }
    return out;
  }
  size_t added_tokens(bool pair) const override { return pair ? 4 : 2; }

 private:
  int64_t cls_, sep_;
};

class TemplateProcessing final : public PostProcessor {
 public:
  explicit TemplateProcessing(const Json& j) {
    constexpr std::string_view where = "post_processor (TemplateProcessing)";
    const Json& specials = json::member(j, "special_tokens", where);
    if (!specials.is_object()) json::fail(where, "\"special_tokens\" is not an object");
    for (const auto& [name, token] : specials.items()) {
      const Json& ids = json::member(token, "ids", where);
      if (!ids.is_array()) json::fail(where, "\"" + name + "\" has no list of ids");
      for (const Json& id : ids) special_ids_[name].push_back(json::as_id(id, where));
    }
    single_ = read_template(json::member(j, "single", where), where);
    pair_ = read_template(json::member(j, "pair", where), where);
  }

  std::vector<Encoded> process(std::vector<Encoded> sequences, bool add_special) const override {
    const auto& pieces = sequences.size() > 1 ? pair_ : single_;
    std::vector<Encoded> out(1);
    for (const Item& item : pieces) {
      if (item.sequence >= 0) {
        if (size_t(item.sequence) >= sequences.size()) continue;
        Encoded part = sequences[size_t(item.sequence)];
        part.type_ids.assign(part.ids.size(), item.type_id);
        out[0].append(part);
      } else if (add_special) {
        for (int64_t id : special_ids_.at(item.special)) out[0].append_special(id, item.type_id);
      }
    }
    return out;
  }

  size_t added_tokens(bool pair) const override {
    size_t count = 0;
    for (const Item& item : pair ? pair_ : single_) {
      if (item.sequence < 0) count += special_ids_.at(item.special).size();
    }
    return count;
  }

 private:
  struct Item {
    int sequence = -1;  // 0 for $A, 1 for $B, -1 for a special token
    std::string special;
    int64_t type_id = 0;
  };

  std::vector<Item> read_template(const Json& list, std::string_view where) const {
    if (!list.is_array()) json::fail(where, "a template is not a list");
    std::vector<Item> items;
    for (const Json& entry : list) {
      Item item;
      if (const Json* sequence = json::optional_member(entry, "Sequence")) {
        const std::string id = json::string(*sequence, "id", where);
        if (id != "A" && id != "B") json::fail(where, "the sequence \"" + id + "\" is not A or B");
        item.sequence = id == "A" ? 0 : 1;
        item.type_id = json::integer(*sequence, "type_id", 0, where);
      } else if (const Json* special = json::optional_member(entry, "SpecialToken")) {
        item.special = json::string(*special, "id", where);
        if (!special_ids_.count(item.special)) {
          json::fail(where, "the template names \"" + item.special +
                                "\", which is not among its special_tokens");
        }
        item.type_id = json::integer(*special, "type_id", 0, where);
      } else {
        json::fail(where, "a template entry is neither {\"Sequence\"} nor {\"SpecialToken\"}");
      }
      items.push_back(std::move(item));
    }
    return items;
  }

  std::map<std::string, std::vector<int64_t>> special_ids_;
  std::vector<Item> single_, pair_;
};

// ByteLevel's post-processing trims offsets, which encode does not return.
class NoTokens final : public PostProcessor {
 public:
  std::vector<Encoded> process(std::vector<Encoded> sequences, bool) const override {
    return sequences;
  }
  size_t added_tokens(bool) const override { return 0; }
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  std::vector<Encoded> process(std::vector<Encoded> sequences, bool add_special) const override {
    for (const auto& step : steps_) sequences = step->process(std::move(sequences), add_special);
    return sequences;
  }
  size_t added_tokens(bool pair) const override {
    size_t count = 0;
    for (const auto& step : steps_) count += step->added_tokens(pair);
    return count;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

}  // namespace

std::unique_ptr<PostProcessor> make(const Json& j) {
  if (j.is_null()) return nullptr;
  constexpr std::string_view where = "post_processor";
  const std::string type = json::type(j, where);
  if (type == "TemplateProcessing") return std::make_unique<TemplateProcessing>(j);
  if (type == "BertProcessing") {
    return std::make_unique<BertProcessing>(token_pair_id(j, "cls", where),
                                            token_pair_id(j, "sep", where));
  }
  if (type == "RobertaProcessing") {
    return std::make_unique<RobertaProcessing>(token_pair_id(j, "cls", where),
                                               token_pair_id(j, "sep", where));
  }
  if (type == "ByteLevel") return std::make_unique<NoTokens>();
  if (type == "Sequence") {
    const Json& list = json::member(j, "processors", where);
    if (!list.is_array()) json::fail(where, "\"processors\" is not a list");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const Json& step : list) {
      if (auto made = make(step)) steps.push_back(std::move(made));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  json::fail(where, "the post-processor \"" + type +
                        "\" is not supported (TemplateProcessing, BertProcessing, "
                        "RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace ox::tokenizers::post_processors
