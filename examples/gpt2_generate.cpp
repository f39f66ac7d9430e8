// Text generation with a Hugging Face causal language model folder (GPT-2, Llama, Mistral,
// Qwen2: config.json, the weights and tokenizer.json), as transformers'
//   tok = AutoTokenizer.from_pretrained(dir); model = AutoModelForCausalLM.from_pretrained(dir)
//   out = model.generate(**tok(prompt, return_tensors="pt"), max_new_tokens=30)
//
//   gpt2_generate DIR [PROMPT]
//
// The continuation is printed as it is generated; exits 1 if nothing was generated.

#include <oxmera/oxmera.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: gpt2_generate DIR [PROMPT]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string prompt = argc > 2 ? argv[2] : "The tensor";
  const auto tokenizer = ox::tokenizers::Tokenizer::from_file(dir);
  const auto model = ox::models::AutoModelForCausalLM::from_pretrained(dir);

  const std::vector<int64_t> ids = tokenizer.encode(prompt);
  const ox::Tensor input = ox::tensor(ids, {1, int64_t(ids.size())});
  std::cout << prompt;
  std::vector<int64_t> generated;
  std::string shown;
  const ox::Tensor out = model->generate(
      input, {.max_new_tokens = 30, .on_tokens = [&](std::span<const int64_t> step) {
                // Decode everything new and print what was not printed yet.
                generated.push_back(step[0]);
                const std::string text = tokenizer.decode(generated);
                if (text.starts_with(shown)) std::cout << text.substr(shown.size()) << std::flush;
                shown = text;
              }});
  std::cout << "\n(" << ids.size() << " prompt tokens, " << out.size(1) - int64_t(ids.size())
            << " new)\n";
  return out.size(1) > int64_t(ids.size()) ? 0 : 1;
}
