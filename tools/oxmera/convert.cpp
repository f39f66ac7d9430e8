// `oxmera convert IN.pt OUT.safetensors`: a PyTorch checkpoint (torch.save of a state dict, zip
// or legacy format; read by ox::load_pytorch, which executes nothing) written as safetensors.
// Nested dicts become dotted names; tensors are written contiguous and independent (views of
// one storage become separate tensors). Exit 2 when the input does not parse or the output
// cannot be written there.

#include <oxmera/io/pytorch.h>
#include <oxmera/oxmera.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <unordered_map>

#include "checks.h"
#include "commands.h"

namespace oxcli {

namespace {

struct ConvertOptions {
  std::string input, output;
};

int convert(const ConvertOptions& o) {
  check_input_file(o.input, "input");
  check_output_file(o.output, "output");
  check_distinct("input", o.input, "output", o.output);
  const ox::TensorDict tensors = ox::load_pytorch(o.input);
  // Tied weights load as one tensor under two names; safetensors wants each to own its bytes.
  ox::TensorDict owned;
  std::unordered_map<const void*, bool> seen;
  for (const auto& [name, t] : tensors) {
    const bool again = !seen.emplace(t.storage().get(), true).second;
    owned.insert(name, again ? t.clone() : t);
  }
  ox::save_safetensors(o.output, owned, {{"format", "pt"}});
  std::cout << "wrote " << owned.size() << " tensors to " << printable(o.output) << "\n";
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("convert", "write a PyTorch checkpoint (.pt/.pth) as .safetensors");
  auto options = std::make_shared<ConvertOptions>();
  cmd->add_option("input", options->input, "a torch.save checkpoint (zip or legacy format)")
      ->required();
  cmd->add_option("output", options->output, "the .safetensors file to write")->required();
  return [options] {
    try {
      return convert(*options);
    } catch (const ox::Error& e) {
      std::cout.flush();
      std::fprintf(stderr, "oxmera convert: %s error: %s\n", ox::error_kind_name(e.kind()),
                   printable(e.what()).c_str());
      return 2;
    }
  };
}

}  // namespace oxcli
