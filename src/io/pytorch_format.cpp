#include "io/pytorch_format.h"

#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "io/pickle.h"
#include "io/zip_reader.h"
#include "oxmera/core/error.h"

namespace ox::io {

namespace {

using pickle::Kind;
using pickle::Value;

// torch.serialization's MAGIC_NUMBER, 0x1950a86a20f9469cfc6c, as LONG1's little-endian bytes.
constexpr uint8_t kMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

template <class... Args>
[[noreturn]] void fail(std::string_view source, const Args&... args) {
  OX_FAIL(Format, kLoadPytorch, source, ": ", args...);
}

struct Walk {
  const pickle::Result& r;
  std::string_view source;
  std::vector<std::pair<std::string, uint32_t>> tensors;  // name, Tensor value
  std::vector<std::string> skipped;
  std::unordered_set<std::string> names;
  uint64_t budget;  // containers and leaves visited: memo sharing can make a DAG exponential

  void visit(uint32_t index, const std::string& name, size_t depth) {
    if (budget-- == 0) fail(source, "the pickled object is too large to flatten");
    if (depth > pickle::kMaxPickleDepth)
      fail(source, "nesting deeper than ", pickle::kMaxPickleDepth, " at '", name, "'");
    const Value& v = r.values[index];
    const auto child = [&](const std::string& key) {
      return name.empty() ? key : name + "." + key;
    };
    switch (v.kind) {
      case Kind::Tensor:
        if (!names.insert(name.empty() ? "tensor" : name).second)
          fail(source, "two tensors flatten to the name '", name, "'");
        tensors.emplace_back(name.empty() ? "tensor" : name, index);
        return;
      case Kind::Dict:
        for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
          const Value& key = r.values[v.items[i]];
          std::string text;
          if (key.kind == Kind::String)
            text = key.text;
          else if (key.kind == Kind::Int)
            text = std::to_string(key.integer);
          else
            fail(source, "a dict key at '", name, "' is a ", pickle::describe(r, v.items[i]),
                 " (only str and int keys name tensors)");
          visit(v.items[i + 1], child(text), depth + 1);
        }
        return;
      case Kind::List:
      case Kind::Tuple:
        for (size_t i = 0; i < v.items.size(); ++i)
          visit(v.items[i], child(std::to_string(i)), depth + 1);
        return;
      default:
        skipped.push_back((name.empty() ? std::string("<root>") : name) + " (" +
                          pickle::describe(r, index) + ")");
    }
  }
};

// The storage key -> dtype map from every Storage value of the pickle.
std::map<std::string, DType> storage_dtypes(const pickle::Result& r, std::string_view source) {
  std::map<std::string, DType> out;
  for (const Value& v : r.values)
    if (v.kind == Kind::Storage) {
      const auto [it, added] = out.emplace(v.text, v.dtype);
      if (!added && it->second != v.dtype)
        fail(source, "storage '", v.text, "' is named with two dtypes (", it->second, ", ", v.dtype,
             ")");
    }
  return out;
}

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Builds the views and checks each against its storage.
void add_views(PytorchContents& out, const pickle::Result& r, const Walk& walk,
               const std::unordered_map<std::string, size_t>& storage_index,
               std::string_view source) {
  uint64_t view_bytes = 0;
  std::unordered_set<uint32_t> counted;
  for (const auto& [name, index] : walk.tensors) {
    const Value& t = r.values[index];
    const Value& storage = r.values[t.items[0]];
    const auto found = storage_index.find(storage.text);
    if (found == storage_index.end())
      fail(source, "tensor '", name, "': no storage '", storage.text, "'");
    const PytorchStorage& s = out.storages[found->second];
    PytorchTensorView view{name, t.dtype, t.shape, t.strides, t.integer, found->second, index, 1};
    if (view.offset < 0) fail(source, "tensor '", name, "': negative storage offset ", view.offset);
    int64_t last = view.offset;  // the highest element index the view reads
    for (size_t d = 0; d < view.shape.size(); ++d) {
      const int64_t n = view.shape[d], stride = view.strides[d];
      if (n < 0 || stride < 0)
        fail(source, "tensor '", name, "': negative size or stride (", n, ", ", stride,
             ") in dimension ", d);
      if (mul_overflows(view.numel, n, &view.numel))
        fail(source, "tensor '", name, "': its element count overflows 64 bits");
    }
    if (view.numel > 0)
      for (size_t d = 0; d < view.shape.size(); ++d) {
        int64_t reach = 0;
        if (mul_overflows(view.shape[d] - 1, view.strides[d], &reach) ||
            __builtin_add_overflow(last, reach, &last))
          fail(source, "tensor '", name, "': its extent overflows 64 bits");
      }
    if (view.numel > 0 && last >= s.numel())
      fail(source, "tensor '", name, "' (offset ", view.offset, ", ", view.shape.size(),
           " dims) reads element ", last, " of storage '", s.key, "', which holds ", s.numel());
    if (counted.insert(index).second) {
      view_bytes += static_cast<uint64_t>(view.numel) * dtype_size(view.dtype);
      if (view_bytes > kMaxViewBytesFactor * out.storage_bytes + kMaxViewBytesSlack)
        fail(source, "its tensors would take ", view_bytes, " bytes, over ", kMaxViewBytesFactor,
             " times the ", out.storage_bytes, " bytes of its storages");
    }
    out.tensors.push_back(std::move(view));
  }
}

// Flattens `r` and resolves its storages through `load(key, dtype) -> storage`.
template <class Load>
PytorchContents finish(const pickle::Result& r, std::string_view source, std::string format,
                       Load&& load) {
  Walk walk{r, source, {}, {}, {}, 4 * uint64_t(r.values.size()) + 16};
  walk.visit(r.root, "", 0);
  PytorchContents out;
  out.format = std::move(format);
  out.skipped = std::move(walk.skipped);
  std::unordered_map<std::string, size_t> storage_index;
  for (const auto& [name, index] : walk.tensors) {
    const Value& storage = r.values[r.values[index].items[0]];
    if (storage_index.contains(storage.text)) continue;
    PytorchStorage s = load(storage.text, storage.dtype);
    if (s.bytes.size() % dtype_size(s.dtype) != 0)
      fail(source, "storage '", s.key, "' holds ", s.bytes.size(), " bytes, not a whole number of ",
           s.dtype, " elements");
    // The count the pickle declares must be what is stored, as torch.load requires.
    if (uint64_t(storage.integer) != s.bytes.size() / dtype_size(s.dtype))
      fail(source, "storage '", s.key, "' is declared with ", storage.integer, " ", s.dtype,
           " elements but holds ", s.bytes.size() / dtype_size(s.dtype), " (", s.bytes.size(),
           " bytes)");
    out.storage_bytes += s.bytes.size();
    storage_index.emplace(storage.text, out.storages.size());
    out.storages.push_back(std::move(s));
  }
  add_views(out, r, walk, storage_index, source);
  return out;
}

PytorchContents parse_zip(const uint8_t* bytes, size_t size, std::string_view source) {
  const std::vector<ZipEntry> entries = read_zip_directory(bytes, size, source);
  std::unordered_map<std::string_view, const ZipEntry*> by_name;
  const ZipEntry* pickle_entry = nullptr;
  std::string prefix;
  for (const ZipEntry& e : entries) {
    by_name.emplace(e.name, &e);
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
      if (pickle_entry != nullptr)
        fail(source, "two data.pkl records ('", pickle_entry->name, "', '", e.name, "')");
      pickle_entry = &e;
      prefix = e.name.substr(0, slash + 1);
    }
  }
  if (pickle_entry == nullptr) {
    for (const ZipEntry& e : entries)
      if (e.name.ends_with("constants.pkl"))
        fail(source, "is a TorchScript archive (torch.jit.save), not a state dict");
    fail(source, "is a zip without a <name>/data.pkl record: not a PyTorch checkpoint");
  }
  if (const auto order = by_name.find(prefix + "byteorder"); order != by_name.end()) {
    std::shared_ptr<std::string> owned;
    const std::string_view text = read_zip_entry(bytes, size, *order->second, source, &owned);
    if (text == "big")
      fail(source, "is big-endian (byteorder 'big'); only little-endian files are supported");
    if (text != "little")
      fail(source, "byteorder record '", text.substr(0, 16), "' is neither little nor big");
  }
  std::shared_ptr<std::string> pickle_owned;
  const std::string_view pkl = read_zip_entry(bytes, size, *pickle_entry, source, &pickle_owned);
  const auto* data = reinterpret_cast<const uint8_t*>(pkl.data());
  const std::string what = pickle_entry->name;
  pickle::Result r = pickle::unpickle(data, pkl.size(), 0, source, what);
  if (r.end != pkl.size()) fail(source, what, ": ", pkl.size() - r.end, " bytes after STOP");
  return finish(r, source, "zip", [&](const std::string& key, DType dtype) {
    const auto found = by_name.find(prefix + "data/" + key);
    if (found == by_name.end())
      fail(source, "storage record '", prefix, "data/", key, "' is missing");
    PytorchStorage s{key, dtype, {}, nullptr};
    s.bytes = read_zip_entry(bytes, size, *found->second, source, &s.owned);
    return s;
  });
}

PytorchContents parse_legacy(const uint8_t* bytes, size_t size, std::string_view source) {
  const pickle::Result magic = pickle::unpickle(bytes, size, 0, source, "magic number pickle");
  const Value& m = magic.values[magic.root];
  if (m.kind != Kind::BigInt ||
      m.text != std::string_view(reinterpret_cast<const char*>(kMagic), sizeof(kMagic)))
    fail(source, "starts with a pickle that is not PyTorch's magic number: not a checkpoint");
  const pickle::Result version =
      pickle::unpickle(bytes, size, magic.end, source, "protocol pickle");
  const Value& v = version.values[version.root];
  if (v.kind != Kind::Int || v.integer != 1001) fail(source, "legacy protocol version is not 1001");
  const pickle::Result info = pickle::unpickle(bytes, size, version.end, source, "sys_info pickle");
  const Value& sys = info.values[info.root];
  if (sys.kind != Kind::Dict) fail(source, "sys_info is not a dict");
  for (size_t i = 0; i + 1 < sys.items.size(); i += 2) {
    const Value& key = info.values[sys.items[i]];
    const Value& value = info.values[sys.items[i + 1]];
    if (key.kind == Kind::String && key.text == "little_endian" &&
        !(value.kind == Kind::Bool && value.flag))
      fail(source,
           "is big-endian (sys_info little_endian is not True); only little-endian files are "
           "supported");
  }
  const pickle::Result main = pickle::unpickle(bytes, size, info.end, source, "main pickle");
  const pickle::Result keys =
      pickle::unpickle(bytes, size, main.end, source, "storage keys pickle");
  const Value& list = keys.values[keys.root];
  if (list.kind != Kind::List) fail(source, "the storage keys pickle is not a list");
  const std::map<std::string, DType> dtypes = storage_dtypes(main, source);
  std::unordered_map<std::string, std::string_view> data;
  size_t at = keys.end;
  for (uint32_t item : list.items) {
    const Value& key = keys.values[item];
    if (key.kind != Kind::String) fail(source, "a storage key is not a string");
    const auto dtype = dtypes.find(key.text);
    if (dtype == dtypes.end()) fail(source, "storage '", key.text, "' is listed but never used");
    if (size - at < 8) fail(source, "storage '", key.text, "' at offset ", at, ": file truncated");
    uint64_t numel = 0;
    for (int i = 0; i < 8; ++i) numel |= uint64_t(bytes[at + i]) << (8 * i);
    at += 8;
    const uint64_t element = dtype_size(dtype->second);
    if (numel > (size - at) / element)
      fail(source, "storage '", key.text, "' at offset ", at - 8, " claims ", numel,
           " elements; the file has ", size - at, " bytes left (truncated?)");
    if (!data.emplace(key.text,
                      std::string_view(reinterpret_cast<const char*>(bytes + at), numel * element))
             .second)
      fail(source, "storage '", key.text, "' is listed twice");
    at += numel * element;
  }
  if (at != size) fail(source, size - at, " bytes after the last storage");
  return finish(main, source, "legacy", [&](const std::string& key, DType dtype) {
    const auto found = data.find(key);
    if (found == data.end()) fail(source, "storage '", key, "' is not in the file");
    return PytorchStorage{key, dtype, found->second, nullptr};
  });
}

}  // namespace

bool looks_like_pytorch(const uint8_t* bytes, size_t size) {
  return (size >= 4 && std::memcmp(bytes, "PK\x03\x04", 4) == 0) ||
         (size >= 2 && bytes[0] == 0x80 && bytes[1] >= 2 && bytes[1] <= 5);
}

PytorchContents parse_pytorch(const uint8_t* bytes, size_t size, std::string_view source) {
  if (size >= 4 && std::memcmp(bytes, "PK\x03\x04", 4) == 0) return parse_zip(bytes, size, source);
  if (size >= 2 && bytes[0] == 0x80) return parse_legacy(bytes, size, source);
  if (size >= 262 && std::memcmp(bytes + 257, "ustar", 5) == 0)
    fail(source,
         "is a tar checkpoint (torch < 0.4), which is not supported; load and save it "
         "again with a newer torch");
  if (size >= 4 && std::memcmp(bytes, "PK\x05\x06", 4) == 0) fail(source, "is an empty zip");
  fail(source, "is neither a zip nor a pickle: not a PyTorch checkpoint");
}

}  // namespace ox::io
