#include "run_settings.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include "precision.h"

namespace oxcli {

namespace {

ox::Tensor scalar_i64(int64_t value) { return ox::tensor(std::vector<int64_t>{value}); }
ox::Tensor text_tensor(const std::string& text) {
  return ox::tensor(std::vector<uint8_t>(text.begin(), text.end()));
}

// Shortest text that reads back to the same double, so two rates that differ print apart.
std::string number_text(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace

void store_run_settings(ox::TensorDict& extra, const RunSettings& settings) {
  extra.insert("train.recipe", text_tensor(settings.recipe));
  extra.insert("train.optimizer", text_tensor(settings.optimizer));
  extra.insert("train.scheduler", text_tensor(settings.scheduler));
  extra.insert("train.data", text_tensor(settings.data));
  extra.insert("train.epochs", scalar_i64(settings.epochs));
  extra.insert("train.batch_size", scalar_i64(settings.batch_size));
  extra.insert("train.limit", scalar_i64(settings.limit));
  extra.insert("train.seed", scalar_i64(std::bit_cast<int64_t>(settings.seed)));
  extra.insert("train.lr", ox::tensor(std::vector<double>{settings.lr}));
  extra.insert("train.data_fingerprint",
               scalar_i64(std::bit_cast<int64_t>(settings.data_fingerprint)));
  extra.insert("train.precision", text_tensor(settings.precision));
  extra.insert("train.world_size", scalar_i64(settings.world_size));
}

RunSettings read_run_settings(const ox::TensorDict& all, const std::string& path) {
  const auto get = [&](const char* key) -> const ox::Tensor& {
    const std::string name = std::string("extra.train.") + key;
    OX_CHECK(all.contains(name), Format, "oxmera train", "checkpoint '", path,
             "' was not written by this version of `oxmera train` (it has no train.", key,
             "); start a new run without --resume");
    const ox::Tensor& t = all.at(name);
    OX_CHECK(t.dim() == 1 && t.numel() >= 1, Format, "oxmera train", "checkpoint '", path,
             "': train.", key, " is not a 1-d tensor");
    return t;
  };
  const auto text = [&](const char* key) {
    std::string out;
    for (int64_t c : get(key).to_vector<int64_t>()) out += char(c);
    return out;
  };
  const auto whole = [&](const char* key) { return get(key).to_vector<int64_t>().at(0); };
  RunSettings out;
  out.recipe = text("recipe");
  out.optimizer = text("optimizer");
  out.scheduler = text("scheduler");
  out.data = text("data");
  out.epochs = whole("epochs");
  out.batch_size = whole("batch_size");
  out.limit = whole("limit");
  out.seed = std::bit_cast<uint64_t>(whole("seed"));
  out.lr = get("lr").to_vector<double>().at(0);
  out.data_fingerprint = std::bit_cast<uint64_t>(whole("data_fingerprint"));
  // Checkpoints written before --precision existed trained in f32.
  if (all.contains("extra.train.precision")) out.precision = text("precision");
  // ... and before --ddp, in one process.
  if (all.contains("extra.train.world_size")) out.world_size = whole("world_size");
  // Values the flags could not have given are a damaged or forged file, not a run to continue.
  const auto in = [](const std::string& value, const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), value) != names.end();
  };
  OX_CHECK(in(out.recipe, recipe_names()) && in(out.optimizer, {"adam", "adamw", "sgd"}) &&
               in(out.scheduler, {"none", "cosine", "step", "onecycle"}) &&
               in(out.precision, precision_names()) && !out.data.empty() && out.epochs >= 1 &&
               out.batch_size >= 1 && out.limit >= 0 && std::isfinite(out.lr) && out.lr > 0 &&
               out.lr <= kMaxLearningRate && out.world_size >= 1,
           Format, "oxmera train", "checkpoint '", path,
           "' holds run settings no `oxmera train` flags give (recipe '", out.recipe,
           "', optimizer '", out.optimizer, "', scheduler '", out.scheduler, "', precision '",
           out.precision, "', epochs ", out.epochs, ", batch size ", out.batch_size, ", limit ",
           out.limit, ", lr ", out.lr, ", world size ", out.world_size, ")");
  return out;
}

void settle_resumed_settings(TrainConfig& config, const RunSettings& stored,
                             std::vector<std::string>& inherited) {
  const auto settle = [&](const char* flag, auto& value, const auto& want, std::string shown,
                          std::string wanted) {
    if (!config.was_given(flag)) {
      value = want;
      inherited.push_back(std::string(flag) + " " + wanted);
      return;
    }
    OX_CHECK(value == want, Value, "oxmera train", flag, " ", shown, " conflicts with checkpoint '",
             config.resume, "', which was trained with ", flag, " ", wanted, "; leave ", flag,
             " out to continue that run, or start a new run without --resume");
  };
  settle("--recipe", config.recipe, stored.recipe, config.recipe, stored.recipe);
  settle("--optimizer", config.optimizer, stored.optimizer, config.optimizer, stored.optimizer);
  settle("--scheduler", config.scheduler, stored.scheduler, config.scheduler, stored.scheduler);
  settle("--precision", config.precision, stored.precision, config.precision, stored.precision);
  settle("--batch-size", config.batch_size, stored.batch_size, std::to_string(config.batch_size),
         std::to_string(stored.batch_size));
  settle("--lr", config.lr, stored.lr, number_text(config.lr), number_text(stored.lr));
  settle("--seed", config.seed, stored.seed, std::to_string(config.seed),
         std::to_string(stored.seed));
  settle("--limit", config.limit, stored.limit, std::to_string(config.limit),
         std::to_string(stored.limit));
  // The data is compared by content once read (another path may hold the same files).
  const char* data_flag = is_text_recipe(config.recipe) ? "--text" : "--data";
  std::string& data = is_text_recipe(config.recipe) ? config.text : config.data;
  if (!config.was_given(data_flag)) {
    data = stored.data;
    inherited.push_back(std::string(data_flag) + " " + stored.data);
  }
  // More epochs extend a run whose rate does not depend on its length; a cosine or one-cycle
  // schedule spans the epochs it was made for.
  const bool spans_run = stored.scheduler == "cosine" || stored.scheduler == "onecycle";
  if (!config.was_given("--epochs")) {
    config.epochs = stored.epochs;
    inherited.push_back("--epochs " + std::to_string(stored.epochs));
  }
  OX_CHECK(!spans_run || config.epochs == stored.epochs, Value, "oxmera train", "--epochs ",
           config.epochs, " conflicts with checkpoint '", config.resume, "', whose ",
           stored.scheduler, " schedule spans --epochs ", stored.epochs,
           " (its length cannot change in the middle); leave --epochs out to continue that run");
}

// The training data read for a resumed run must be the data the checkpoint was trained on:
// another text with as many distinct characters would silently remap every token id.
void check_resumed_data(const TrainConfig& config, const Task& task, const RunSettings& stored,
                        const ox::TensorDict& all) {
  const bool text = is_text_recipe(config.recipe);
  const char* flag = text ? "--text" : "--data";
  const std::string& path = text ? config.text : config.data;
  if (text && all.contains("extra.vocabulary")) {
    const std::vector<int64_t> want = all.at("extra.vocabulary").to_vector<int64_t>();
    const std::vector<int64_t> got = task.extra.at("vocabulary").to_vector<int64_t>();
    size_t first = 0;
    while (first < want.size() && first < got.size() && want[first] == got[first]) ++first;
    OX_CHECK(want == got, Value, "oxmera train", "--text '", path, "' has another vocabulary (",
             got.size(), " characters) than checkpoint '", config.resume, "' (", want.size(),
             " characters, trained on '", stored.data, "'): they differ first at token id ", first,
             "; every token would mean another character");
  }
  OX_CHECK(task.data_fingerprint == stored.data_fingerprint, Value, "oxmera train", flag, " '",
           path, "' holds other training data than checkpoint '", config.resume,
           "' was trained on ('", stored.data, "')",
           config.was_given(flag) ? "; resume with that data, or start a new run"
                                  : ": the data has changed since the checkpoint was written");
}

}  // namespace oxcli
