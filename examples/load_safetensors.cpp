// Saving a model's weights to a .safetensors file (the format of Hugging Face models, which
// PyTorch's safetensors.torch.load_file reads) and loading them into a fresh model, as
//   save_file(model.state_dict(), path, metadata); model2.load_state_dict(load_file(path))
//
//   load_safetensors [PATH]   (default: a file in the system's temporary folder, removed after)
//
// Exits 1 if the loaded model's outputs differ from the original's.

#include <oxmera/oxmera.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

namespace nn = ox::nn;

nn::Sequential make_model() {
  return nn::Sequential(nn::Linear(8, 32), nn::GELU(), nn::LayerNorm(ox::Shape{32}),
                        nn::Linear(32, 4));
}

double max_abs_diff(const ox::Tensor& a, const ox::Tensor& b) {
  return ox::max(ox::abs(a - b)).item<double>();
}

int main(int argc, char** argv) {
  const bool temporary = argc < 2;
  const std::string path =
      temporary
          ? (std::filesystem::temp_directory_path() / "oxmera_load_safetensors_example.safetensors")
                .string()
          : argv[1];
  ox::manual_seed(0);
  bool ok = true;

  try {
    nn::Sequential model = make_model();
    model->eval();  // outputs are compared, so no training-mode randomness
    const ox::Tensor x = ox::randn({5, 8});
    const ox::Tensor expected = model(x);

    // Metadata is a string -> string map stored in the header, next to the tensors.
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"}, {"architecture", "mlp-8-32-4"}, {"oxmera_version", OXMERA_VERSION}};
    ox::save_safetensors(path, model->state_dict(), metadata);
    std::printf("saved %zu tensors to %s (%lld bytes)\n", model->state_dict().size(), path.c_str(),
                (long long)std::filesystem::file_size(path));

    // SafetensorsFile reads only the header up front: a cheap way to inspect a large file, and
    // get(name) maps one tensor at a time without reading the rest.
    const ox::SafetensorsFile file = ox::SafetensorsFile::open(path);
    for (const auto& [key, value] : file.metadata())
      std::printf("  metadata %s = %s\n", key.c_str(), value.c_str());
    for (const std::string& name : file.keys()) {
      const ox::SafetensorsTensorInfo& info = file.info(name);
      std::cout << "  " << name << " " << info.dtype << " " << info.shape << "\n";
    }

    // Into a freshly initialized model: load_state_dict is strict, so a key the model lacks
    // or one it misses is an error, and a shape mismatch always is.
    nn::Sequential fresh = make_model();
    fresh->eval();
    const double before = max_abs_diff(fresh(x), expected);
    fresh->load_state_dict(ox::load_safetensors(path));
    const double after = max_abs_diff(fresh(x), expected);
    std::printf("max |output difference|: %.3g before loading, %g after\n", before, after);
    if (after != 0) ok = false;

    // Half the size in bf16, a common way to ship weights: load_state_dict converts them back
    // to the model's f32, so outputs now differ by about bf16's rounding (2^-8 relative).
    ox::TensorDict bf16;
    for (const auto& [name, tensor] : model->state_dict()) bf16.insert(name, tensor.to(ox::kBF16));
    ox::save_safetensors(path, bf16, metadata);
    nn::Sequential from_bf16 = make_model();
    from_bf16->eval();
    from_bf16->load_state_dict(ox::load_safetensors(path));
    const double rounded = max_abs_diff(from_bf16(x), expected);
    std::printf("bf16 file: %lld bytes, max |output difference| %.3g\n",
                (long long)std::filesystem::file_size(path), rounded);
    if (!(rounded < 0.05)) ok = false;
  } catch (const ox::Error& e) {  // Io for an unwritable path, Format for a corrupt file
    std::fprintf(stderr, "load_safetensors: %s error: %s\n", ox::error_kind_name(e.kind()),
                 e.what());
    ok = false;
  }
  if (temporary) std::filesystem::remove(path);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
