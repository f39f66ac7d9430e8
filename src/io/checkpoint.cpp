// A checkpoint is one safetensors file: each part's state_dict under a prefix ("model.",
// "optimizer.", "scheduler.", "scaler.", "extra."), the generator as "rng.seed"/"rng.offset" (0-d
// i64 holding the u64 bits), and metadata naming the format with the step and epoch, and the CRC32C
// of every tensor's bytes (io::kChecksumKey), verified on load.

#include "oxmera/io/checkpoint.h"

#include <algorithm>
#include <bit>

#include "io/safetensors_internal.h"
#include "oxmera/amp/grad_scaler.h"
#include "oxmera/io/safetensors.h"

namespace ox {

namespace {

constexpr const char* kFormat = "oxmera-checkpoint";
constexpr const char* kVersion = "1";

void add_prefixed(TensorDict& out, const std::string& prefix, const TensorDict& part) {
  for (const auto& [name, tensor] : part) out.insert(prefix + name, tensor);
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.is_same_storage(b) && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.storage_offset() == b.storage_offset();
}

// A model with tied weights lists one tensor under several names; the file stores it once and
// the metadata maps each other name to the stored one ("b=a;d=c").
std::string drop_aliases(TensorDict& part) {
  std::string aliases;
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& [name, tensor] : part) {
    const auto original = std::find_if(
        kept.begin(), kept.end(), [&](const auto& item) { return same_view(item.second, tensor); });
    if (original == kept.end())
      kept.emplace_back(name, tensor);
    else
      aliases += name + "=" + original->first + ";";
  }
  part.clear();
  for (auto& [name, tensor] : kept) part.insert(name, tensor);
  return aliases;
}

void restore_aliases(TensorDict& part, const std::string& aliases, const std::string& path) {
  size_t start = 0;
  while (start < aliases.size()) {
    const size_t end = aliases.find(';', start), eq = aliases.find('=', start);
    OX_CHECK(end != std::string::npos && eq < end, Format, "load_checkpoint", path,
             ": malformed model_aliases metadata");
    const std::string name = aliases.substr(start, eq - start);
    const Tensor* original = part.find(aliases.substr(eq + 1, end - eq - 1));
    OX_CHECK(original != nullptr, Format, "load_checkpoint", path, ": alias '", name,
             "' names a tensor the checkpoint does not hold");
    part.insert(name, *original);
    start = end + 1;
  }
}

TensorDict cloned(const TensorDict& dict) {
  TensorDict out;
  for (const auto& [name, tensor] : dict) out.insert(name, tensor.clone());
  return out;
}

// The entries of `all` under `prefix`, with the prefix removed.
TensorDict part_of(const TensorDict& all, const std::string& prefix) {
  TensorDict out;
  for (const auto& [name, tensor] : all)
    if (name.starts_with(prefix)) out.insert(name.substr(prefix.size()), tensor);
  return out;
}

template <class F>
void visit_scheduler(const Checkpoint& c, F&& fn) {
  if (auto* s = std::get_if<optim::LRScheduler*>(&c.scheduler); s != nullptr && *s != nullptr)
    fn(**s);
  if (auto* s = std::get_if<optim::ReduceLROnPlateau*>(&c.scheduler); s != nullptr && *s != nullptr)
    fn(**s);
}

Tensor u64_tensor(uint64_t v) {
  return full({}, std::bit_cast<int64_t>(v), {.dtype = kI64, .device = Device::cpu()});
}

int64_t parse_count(const std::map<std::string, std::string>& meta, const char* key,
                    const std::string& path) {
  const auto it = meta.find(key);
  OX_CHECK(it != meta.end(), Format, "load_checkpoint", path, ": metadata has no '", key, "'");
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  OX_CHECK(used == it->second.size() && used > 0, Format, "load_checkpoint", path, ": metadata '",
           key, "' is not an integer: '", it->second, "'");
  return value;
}

const Tensor& required(const TensorDict& all, const std::string& key, const std::string& path) {
  const Tensor* t = all.find(key);
  OX_CHECK(t != nullptr, Format, "load_checkpoint", path, ": the checkpoint has no '", key, "'");
  return *t;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  TensorDict tensors;
  std::map<std::string, std::string> meta = {{"format", kFormat},
                                             {"version", kVersion},
                                             {"step", std::to_string(c.step)},
                                             {"epoch", std::to_string(c.epoch)}};
  std::string parts;
  if (c.model) {
    TensorDict model = c.model->state_dict();
    meta["model_aliases"] = drop_aliases(model);
    add_prefixed(tensors, "model.", model);
    parts += "model ";
  }
  if (c.optimizer) {
    add_prefixed(tensors, "optimizer.", c.optimizer->state_dict());
    parts += "optimizer ";
  }
  visit_scheduler(c, [&](const auto& scheduler) {
    add_prefixed(tensors, "scheduler.", scheduler.state_dict());
    parts += "scheduler ";
  });
  if (c.scaler && c.scaler->is_enabled()) {
    add_prefixed(tensors, "scaler.", c.scaler->state_dict());
    parts += "scaler ";
  }
  if (c.rng) {
    tensors.insert("rng.seed", u64_tensor(c.rng->seed()));
    tensors.insert("rng.offset", u64_tensor(c.rng->offset()));
    parts += "rng ";
  }
  add_prefixed(tensors, "extra.", c.extra);
  meta["parts"] = parts;
  io::save_safetensors_with_checksums(path, tensors, meta);
}

void load_checkpoint(const std::string& path, Checkpoint& c) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto& meta = file.metadata();
  const auto format = meta.find("format");
  OX_CHECK(format != meta.end() && format->second == kFormat, Format, "load_checkpoint", path,
           " is not an oxmera checkpoint (its metadata has no format '", kFormat, "')");
  const auto version = meta.find("version");
  OX_CHECK(version != meta.end() && version->second == kVersion, Format, "load_checkpoint", path,
           ": checkpoint version '", version == meta.end() ? "" : version->second,
           "' is not supported (expected ", kVersion, ")");
  const int64_t step = parse_count(meta, "step", path);
  const int64_t epoch = parse_count(meta, "epoch", path);
  io::require_checksums_match(file, "load_checkpoint");  // before anything reads a value
  const TensorDict all = file.get_all();

  // Everything asked for must be present before anything changes.
  TensorDict model = part_of(all, "model.");
  const TensorDict optimizer = part_of(all, "optimizer."), scheduler = part_of(all, "scheduler.");
  const TensorDict scaler = part_of(all, "scaler.");
  if (const auto aliases = meta.find("model_aliases"); aliases != meta.end())
    restore_aliases(model, aliases->second, path);
  const auto need = [&](bool wanted, const TensorDict& part, const char* what) {
    OX_CHECK(!wanted || !part.empty(), Format, "load_checkpoint", path, " holds no ", what,
             " state");
  };
  need(c.model != nullptr, model, "model");
  need(c.optimizer != nullptr, optimizer, "optimizer");
  bool wants_scheduler = false;
  visit_scheduler(c, [&](const auto&) { wants_scheduler = true; });
  need(wants_scheduler, scheduler, "scheduler");
  need(c.scaler != nullptr && c.scaler->is_enabled(), scaler, "GradScaler");
  Tensor seed, offset;
  if (c.rng) {
    seed = required(all, "rng.seed", path);
    offset = required(all, "rng.offset", path);
    OX_CHECK(seed.dtype() == kI64 && seed.dim() == 0 && offset.dtype() == kI64 && offset.dim() == 0,
             Format, "load_checkpoint", path, ": rng.seed and rng.offset must be 0-d i64");
  }

  // All or nothing: each part refuses a state that does not fit before changing, and the parts
  // loaded before a refusal get their own state back.
  TensorDict model_before, optimizer_before, scheduler_before, scaler_before;
  if (c.model) model_before = cloned(c.model->state_dict());
  if (c.optimizer) optimizer_before = cloned(c.optimizer->state_dict());
  visit_scheduler(c, [&](const auto& s) { scheduler_before = s.state_dict(); });
  if (c.scaler) scaler_before = c.scaler->state_dict();  // fresh host tensors already
  try {
    if (c.model) c.model->load_state_dict(model);
    if (c.optimizer) c.optimizer->load_state_dict(optimizer);
    visit_scheduler(c, [&](auto& s) { s.load_state_dict(scheduler); });
    if (c.scaler) c.scaler->load_state_dict(scaler);
  } catch (...) {
    if (c.model) c.model->load_state_dict(model_before);
    if (c.optimizer) c.optimizer->load_state_dict(optimizer_before);
    visit_scheduler(c, [&](auto& s) { s.load_state_dict(scheduler_before); });
    if (c.scaler) c.scaler->load_state_dict(scaler_before);
    throw;
  }
  if (c.rng) {
    c.rng->manual_seed(std::bit_cast<uint64_t>(seed.item<int64_t>()));
    c.rng->set_offset(std::bit_cast<uint64_t>(offset.item<int64_t>()));
  }
  c.step = step;
  c.epoch = epoch;
  c.extra = cloned(part_of(all, "extra."));  // owned, not views of the closed file
}

}  // namespace ox
