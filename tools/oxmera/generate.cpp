// `oxmera generate DIR --prompt TEXT`: a Hugging Face causal model and its tokenizer from DIR,
// the prompt's continuation streamed to stdout as it is decoded, and the prompt's (prefill) and
// the new tokens' (decode) rates in tokens/s on stderr.

#include <oxmera/oxmera.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "checks.h"
#include "commands.h"
#include "core/text_util.h"

namespace oxcli {
namespace {

struct GenerateCommand {
  std::string dir, prompt, device = "cpu", dtype;
  int64_t max_new_tokens = 64, top_k = 0;
  double temperature = 1.0, top_p = 1.0, repetition_penalty = 1.0;
  uint64_t seed = 0;
  bool sample = false, no_special = false;
};

// The end tokens: generation_config.json's eos_token_id, else config.json's (a number or a list).
std::vector<int64_t> end_tokens(const std::filesystem::path& dir) {
  for (const char* name : {"generation_config.json", "config.json"}) {
    std::ifstream in(dir / name);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    ox::check_json_nesting(text.str(), 64, "generate", name);
    const auto json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("eos_token_id")) continue;
    const auto& eos = json["eos_token_id"];
    std::vector<int64_t> ids;
    if (eos.is_number_integer()) ids.push_back(eos.get<int64_t>());
    if (eos.is_array())
      for (const auto& id : eos)
        if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
    return ids;
  }
  return {};
}

int generate(const GenerateCommand& c) {
  using Clock = std::chrono::steady_clock;
  const std::filesystem::path dir(c.dir);
  const auto tokenizer = ox::tokenizers::Tokenizer::from_file(dir);
  ox::models::PretrainedOptions load;
  load.device = ox::Device::parse(c.device);
  if (!c.dtype.empty()) load.dtype = ox::parse_dtype(c.dtype);
  const auto model = ox::models::AutoModelForCausalLM::from_pretrained(dir, load);
  const std::vector<int64_t> prompt = tokenizer.encode(c.prompt, !c.no_special);
  OX_CHECK(!prompt.empty(), Value, "generate", "the prompt encodes to no tokens");
  ox::models::GenerateOptions options;
  options.max_new_tokens = c.max_new_tokens;
  options.do_sample = c.sample;
  options.temperature = c.temperature;
  options.top_k = c.top_k;
  options.top_p = c.top_p;
  options.repetition_penalty = c.repetition_penalty;
  options.eos_token_id = end_tokens(dir);
  options.seed = c.seed;
  // Streaming: decode everything generated so far and print what is new, holding back a tail
  // that decodes to U+FFFD (a character whose bytes are not all generated yet).
  std::vector<int64_t> generated;
  std::string shown;
  Clock::time_point first;
  options.on_tokens = [&](std::span<const int64_t> step) {
    if (generated.empty()) first = Clock::now();
    generated.push_back(step[0]);
    const std::string text = tokenizer.decode(generated);
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return;
    if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
      std::cout << text.substr(shown.size()) << std::flush;
    }
    shown = text;
  };
  const auto start = Clock::now();
  model->generate(ox::tensor(prompt, {1, int64_t(prompt.size())}).to(*load.device), options);
  const auto end = Clock::now();
  std::cout << "\n";
  const double prefill = std::chrono::duration<double>(first - start).count();
  const double decode = std::chrono::duration<double>(end - first).count();
  std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s; generated: %zu tokens", prompt.size(),
               double(prompt.size()) / prefill, generated.size());
  if (generated.size() > 1) {
    std::fprintf(stderr, ", %.1f tokens/s", double(generated.size() - 1) / decode);
  }
  std::fprintf(stderr, " (%s, %s)\n", model->model_type().c_str(), c.device.c_str());
  return 0;
}

}  // namespace

Runner add_generate(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "generate", "continue a prompt with a Hugging Face causal model folder (and its tokenizer)");
  auto c = std::make_shared<GenerateCommand>();
  cmd->add_option("dir", c->dir, "a folder with config.json, weights and tokenizer.json")
      ->required();
  cmd->add_option("--prompt", c->prompt, "the text to continue")->required();
  cmd->add_option("--max-new-tokens", c->max_new_tokens, "at most this many new tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  auto* temperature = cmd->add_option("--temperature", c->temperature, "sample at this temperature")
                          ->check(CLI::PositiveNumber);
  auto* top_p = cmd->add_option("--top-p", c->top_p, "sample from the top tokens of this mass")
                    ->check(CLI::Range(1e-9, 1.0));
  auto* top_k = cmd->add_option("--top-k", c->top_k, "sample from this many top tokens")
                    ->check(CLI::NonNegativeNumber);
  cmd->add_option("--repetition-penalty", c->repetition_penalty, "transformers' penalty (> 0)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", c->seed, "the sampling's seed")->capture_default_str();
  cmd->add_option("--device", c->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--dtype", c->dtype, "f32, bf16 or f16 (the weights' own by default)");
  cmd->add_flag("--no-special-tokens", c->no_special, "encode the prompt without BOS and the like");
  return [c, temperature, top_p, top_k] {
    // Greedy unless a sampling setting is given, as transformers' do_sample.
    c->sample = temperature->count() + top_p->count() + top_k->count() > 0;
    try {
      return generate(*c);
    } catch (const ox::Error& e) {
      std::cout.flush();
      std::fprintf(stderr, "oxmera generate: %s error: %s\n", ox::error_kind_name(e.kind()),
                   printable(e.what()).c_str());
      return 2;
    }
  };
}

}  // namespace oxcli
