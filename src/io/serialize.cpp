// ox::save / ox::load: one safetensors file per object, with the kind of object in the metadata.

#include "oxmera/io/serialize.h"

#include <map>

#include "oxmera/io/safetensors.h"

namespace ox {

namespace {

constexpr const char* kKindKey = "oxmera.kind";

void write(const std::string& path, const TensorDict& tensors, const std::string& kind) {
  save_safetensors(path, tensors, {{kKindKey, kind}});
}

// The file's tensors, after checking that it holds `kind` (files without the mark, written by
// other programs, are taken as they are).
TensorDict read(const std::string& path, const std::string& kind) {
  const std::map<std::string, std::string> metadata = SafetensorsFile::open(path).metadata();
  const auto mark = metadata.find(kKindKey);
  OX_CHECK(mark == metadata.end() || mark->second == kind, Format, "load", path, " holds a ",
           mark == metadata.end() ? std::string() : mark->second, ", not a ", kind);
  return load_safetensors(path);
}

std::string index_name(size_t i) { return std::to_string(i); }

}  // namespace

void save(const nn::Module& module, const std::string& path) {
  write(path, module.state_dict(), "module " + module.type_name());
}

void load(nn::Module& module, const std::string& path) {
  module.load_state_dict(read(path, "module " + module.type_name()));
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  write(path, optimizer.state_dict(), "optimizer");
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  optimizer.load_state_dict(read(path, "optimizer"));
}

void save(const Tensor& tensor, const std::string& path) {
  OX_CHECK(tensor.defined(), Value, "save", "the tensor is undefined");
  TensorDict dict;
  dict.insert("tensor", tensor);
  write(path, dict, "tensor");
}

void load(Tensor& tensor, const std::string& path) {
  const TensorDict dict = read(path, "tensor");
  OX_CHECK(dict.size() == 1 && dict.contains("tensor"), Format, "load", path, " holds ",
           dict.size(), " tensors, not one named 'tensor'");
  tensor = dict["tensor"];
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  TensorDict dict;
  for (size_t i = 0; i < tensors.size(); ++i) {
    OX_CHECK(tensors[i].defined(), Value, "save", "tensor ", i, " of the list is undefined");
    dict.insert(index_name(i), tensors[i]);
  }
  write(path, dict, "tensors");
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  const TensorDict dict = read(path, "tensors");
  std::vector<Tensor> out;
  for (size_t i = 0; i < dict.size(); ++i) {
    OX_CHECK(dict.contains(index_name(i)), Format, "load", path, " has no tensor ", i,
             " of its list of ", dict.size());
    out.push_back(dict[index_name(i)]);
  }
  tensors = std::move(out);
}

}  // namespace ox
