#include "io/pickle.h"

#include <charconv>
#include <cstring>
#include <unordered_map>

#include "oxmera/core/error.h"

namespace ox::io::pickle {

namespace {

constexpr std::string_view kOp = "load_pytorch";

struct GlobalEntry {
  std::string_view module, name;
  Callable callable;
  DType dtype;
};

constexpr GlobalEntry kAllowed[] = {
    {"collections", "OrderedDict", Callable::OrderedDict, kU8},
    {"torch._utils", "_rebuild_tensor_v2", Callable::RebuildTensorV2, kU8},
    {"torch._utils", "_rebuild_tensor", Callable::RebuildTensor, kU8},
    {"torch._utils", "_rebuild_parameter", Callable::RebuildParameter, kU8},
    {"torch._utils", "_rebuild_parameter_with_state", Callable::RebuildParameterWithState, kU8},
    {"torch", "device", Callable::Device, kU8},
    {"torch", "FloatStorage", Callable::StorageClass, kF32},
    {"torch", "DoubleStorage", Callable::StorageClass, kF64},
    {"torch", "HalfStorage", Callable::StorageClass, kF16},
    {"torch", "BFloat16Storage", Callable::StorageClass, kBF16},
    {"torch", "LongStorage", Callable::StorageClass, kI64},
    {"torch", "IntStorage", Callable::StorageClass, kI32},
    {"torch", "ShortStorage", Callable::StorageClass, kI16},
    {"torch", "CharStorage", Callable::StorageClass, kI8},
    {"torch", "ByteStorage", Callable::StorageClass, kU8},
    {"torch", "BoolStorage", Callable::StorageClass, kBool},
    {"torch", "UntypedStorage", Callable::StorageClass, kU8},
    {"torch.storage", "UntypedStorage", Callable::StorageClass, kU8},
};

// Storage classes PyTorch has and oxmera does not: a DType error naming the dtype.
constexpr std::pair<std::string_view, std::string_view> kUnsupportedStorages[] = {
    {"ComplexFloatStorage", "complex64"},        {"ComplexDoubleStorage", "complex128"},
    {"ComplexHalfStorage", "complex32"},         {"QInt8Storage", "qint8 (quantized)"},
    {"QUInt8Storage", "quint8 (quantized)"},     {"QInt32Storage", "qint32 (quantized)"},
    {"QUInt4x2Storage", "quint4x2 (quantized)"}, {"QUInt2x4Storage", "quint2x4 (quantized)"},
};

constexpr const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::BigInt:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::Tuple:
      return "tuple";
    case Kind::List:
      return "list";
    case Kind::Dict:
      return "dict";
    case Kind::Global:
      return "global";
    case Kind::Storage:
      return "storage";
    case Kind::Tensor:
      return "tensor";
    case Kind::Object:
      return "object";
  }
  return "?";
}

std::string describe_one(const Value& v) {
  return v.kind == Kind::Global || v.kind == Kind::Object ? v.text : kind_name(v.kind);
}

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, std::string_view source, std::string_view what)
      : data_(data), size_(size), source_(source), what_(what) {}

  Result run(size_t start) {
    pos_ = start;
    while (true) {
      op_at_ = pos_;
      const uint8_t op = byte();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      fail("STOP with ", stack_.size(), " values on the stack and ", marks_.size(),
           " open MARKs (expected one value)");
    Result out;
    out.root = stack_[0];
    out.values = std::move(values_);
    out.end = pos_;
    return out;
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    OX_FAIL(Format, kOp, source_, ": ", what_, " offset ", op_at_, ": ", args...);
  }

  // ---- reading bytes ----
  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) fail("needs ", n, " bytes, only ", size_ - pos_, " left (truncated)");
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  uint8_t byte() { return *take(1); }
  uint64_t le(size_t n) {
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
  }
  std::string_view line() {  // text up to '\n' (protocol 0 arguments), at most 1024 bytes
    const size_t limit = std::min(size_ - pos_, size_t{1024});
    const void* nl = std::memchr(data_ + pos_, '\n', limit);
    if (nl == nullptr) fail("no end of line within ", limit, " bytes");
    const size_t n = static_cast<const uint8_t*>(nl) - (data_ + pos_);
    std::string_view text(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n + 1;
    return text;
  }
  int64_t decimal(std::string_view text) {
    int64_t v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (error != std::errc() || end != text.data() + text.size())
      fail("'", text, "' is not a 64-bit integer");
    return v;
  }

  // ---- the stack ----
  uint32_t add(Value v) {
    values_.push_back(std::move(v));
    return static_cast<uint32_t>(values_.size() - 1);
  }
  void push(Value v) { stack_.push_back(add(std::move(v))); }
  uint32_t pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    const uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  uint32_t top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  Value& at(uint32_t index) { return values_[index]; }
  void memo_put(uint64_t key) {
    if (stack_.empty()) fail("memo PUT with an empty stack");
    memo_[key] = stack_.back();
  }
  void memo_get(uint64_t key) {
    const auto found = memo_.find(key);
    if (found == memo_.end()) fail("memo GET of ", key, ", which was never PUT");
    stack_.push_back(found->second);
  }

  // The memo key a PUT, GET or MEMOIZE opcode names.
  uint64_t memo_index(uint8_t op) {
    if (op == 'q' || op == 'h') return byte();
    if (op == 'r' || op == 'j') return le(4);
    if (op == 0x94) return memo_.size();
    return static_cast<uint64_t>(decimal(line()));  // 'p', 'g': protocol 0 text
  }

  void push_int(int64_t v) { push({.kind = Kind::Int, .integer = v}); }
  void push_text(Kind kind, uint64_t n) {
    const uint8_t* p = take(n);
    push({.kind = kind, .text = std::string(reinterpret_cast<const char*>(p), n)});
  }
  void push_long(uint64_t n) {
    const uint8_t* p = take(n);
    if (n <= 8) {
      uint64_t v = 0;
      for (uint64_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
      if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      push_int(static_cast<int64_t>(v));
    } else {
      push({.kind = Kind::BigInt, .text = std::string(reinterpret_cast<const char*>(p), n)});
    }
  }
  void tuple(size_t n) {
    if (stack_.size() < floor() + n) fail("stack underflow");
    Value v{.kind = Kind::Tuple};
    v.items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push(std::move(v));
  }
  void set_items(std::vector<uint32_t> items) {
    if (items.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    Value& dict = at(top());
    if (dict.kind != Kind::Dict) fail("SETITEM(S) on a ", kind_name(dict.kind), ", not a dict");
    dict.items.insert(dict.items.end(), items.begin(), items.end());
  }
  void append(const std::vector<uint32_t>& items) {
    Value& list = at(top());
    if (list.kind != Kind::List) fail("APPEND(S) on a ", kind_name(list.kind), ", not a list");
    list.items.insert(list.items.end(), items.begin(), items.end());
  }
  void global(std::string_view module, std::string_view name) {
    for (const GlobalEntry& g : kAllowed)
      if (g.module == module && g.name == name) {
        push({.kind = Kind::Global,
              .text = std::string(module) + "." + std::string(name),
              .callable = g.callable,
              .dtype = g.dtype});
        return;
      }
    if (module == "torch")
      for (const auto& [cls, dtype] : kUnsupportedStorages)
        if (name == cls)
          OX_FAIL(DType, kOp, source_, ": ", what_, " offset ", op_at_, ": tensors of dtype ",
                  dtype, " (torch.", name, ") are not supported by oxmera");
    fail("global '", module, ".", name,
         "' is not allowed (a state dict needs only collections.OrderedDict, torch._utils "
         "rebuild functions, torch storage classes and torch.device); nothing was executed");
  }

  // ---- REDUCE / NEWOBJ / BUILD / persistent ids ----
  const Value& arg(const Value& args, size_t i) { return at(args.items[i]); }
  std::vector<int64_t> int_tuple(const Value& v, std::string_view fn, size_t i) {
    if (v.kind != Kind::Tuple && v.kind != Kind::List)
      fail(fn, ": argument ", i, " is a ", kind_name(v.kind), ", not a tuple of ints");
    if (v.items.size() > kMaxTensorDims)
      fail(fn, ": ", v.items.size(), " dimensions (at most ", kMaxTensorDims, ")");
    std::vector<int64_t> out;
    for (uint32_t item : v.items) {
      if (at(item).kind != Kind::Int) fail(fn, ": argument ", i, " holds a non-integer");
      out.push_back(at(item).integer);
    }
    return out;
  }
  void reduce(uint32_t callable_index, uint32_t args_index, std::string_view opname) {
    const Value& callable = at(callable_index);
    const Value& args = at(args_index);
    if (callable.kind != Kind::Global)
      fail(opname, " on a ", kind_name(callable.kind), ", which is not an allowed callable");
    if (args.kind != Kind::Tuple)
      fail(opname, " of ", callable.text, " with a ", kind_name(args.kind), " as arguments");
    const std::string& fn = callable.text;
    const size_t n = args.items.size();
    switch (callable.callable) {
      case Callable::OrderedDict:
        if (n != 0) fail(fn, " with arguments (only OrderedDict() is supported)");
        push({.kind = Kind::Dict});
        return;
      case Callable::Device:
        if (n < 1 || n > 2 || arg(args, 0).kind != Kind::String) fail(fn, ": bad arguments");
        push({.kind = Kind::Object, .text = "torch.device"});
        return;
      case Callable::StorageClass:
        fail(opname, " on storage class ", fn, " (storages come only from persistent ids)");
      case Callable::RebuildParameter:
      case Callable::RebuildParameterWithState:
        if (n < 3 || n > 4 || arg(args, 0).kind != Kind::Tensor)
          fail(fn, ": expected (tensor, requires_grad, hooks[, state])");
        stack_.push_back(args.items[0]);
        return;
      case Callable::RebuildTensorV2:
      case Callable::RebuildTensor: {
        const bool v2 = callable.callable == Callable::RebuildTensorV2;
        if (v2 ? (n < 6 || n > 7) : n != 4)
          fail(fn, ": ", n, " arguments (expected ", v2 ? "6 or 7" : "4", ")");
        const Value& storage = arg(args, 0);
        if (storage.kind != Kind::Storage) fail(fn, ": argument 0 is not a storage");
        if (arg(args, 1).kind != Kind::Int) fail(fn, ": storage offset is not an int");
        Value t{.kind = Kind::Tensor, .integer = arg(args, 1).integer};
        t.shape = int_tuple(arg(args, 2), fn, 2);
        t.strides = int_tuple(arg(args, 3), fn, 3);
        if (t.shape.size() != t.strides.size())
          fail(fn, ": ", t.shape.size(), " sizes but ", t.strides.size(), " strides");
        t.dtype = storage.dtype;
        t.items.push_back(args.items[0]);
        push(std::move(t));
        return;
      }
    }
    fail(opname, " on ", fn);
  }
  void persistent(uint32_t pid_index) {
    const Value& pid = at(pid_index);
    const auto bad = [&](const char* why) {
      fail("persistent id is not ('storage', class, key, location, numel): ", why);
    };
    if (pid.kind != Kind::Tuple || pid.items.size() < 5 || pid.items.size() > 6)
      bad("not a tuple of 5 or 6");
    const Value& tag = arg(pid, 0);
    const Value& cls = arg(pid, 1);
    const Value& key = arg(pid, 2);
    if (tag.kind != Kind::String || tag.text != "storage") bad("no 'storage' tag");
    if (cls.kind != Kind::Global || cls.callable != Callable::StorageClass) bad("no storage class");
    if (key.kind != Kind::String) bad("the key is not a string");
    if (arg(pid, 3).kind != Kind::String) bad("the location is not a string");
    if (arg(pid, 4).kind != Kind::Int || arg(pid, 4).integer < 0) bad("bad element count");
    if (pid.items.size() == 6 && arg(pid, 5).kind != Kind::None)
      fail("storage views (view_metadata, torch < 0.4) are not supported");
    push({.kind = Kind::Storage,
          .integer = arg(pid, 4).integer,
          .text = key.text,
          .dtype = cls.dtype});
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t proto = byte();
        if (proto < 2 || proto > 5) fail("pickle protocol ", int(proto), " (2 to 5 supported)");
        return;
      }
      case 0x95:
        take(8);
        return;  // FRAME: a length hint; the bytes follow inline
      case '(':
        if (marks_.size() >= kMaxPickleDepth) fail("nesting deeper than ", kMaxPickleDepth);
        marks_.push_back(stack_.size());
        return;
      case '0':
        pop();
        return;
      case '1':
        pop_mark();
        return;
      case 'N':
        push({.kind = Kind::None});
        return;
      case 0x88:
        push({.kind = Kind::Bool, .flag = true});
        return;
      case 0x89:
        push({.kind = Kind::Bool, .flag = false});
        return;
      case 'I': {
        const std::string_view text = line();
        if (text == "00" || text == "01")
          push({.kind = Kind::Bool, .flag = text == "01"});
        else
          push_int(decimal(text));
        return;
      }
      case 'J':
        push_int(static_cast<int32_t>(static_cast<uint32_t>(le(4))));
        return;
      case 'K':
        push_int(byte());
        return;
      case 'M':
        push_int(static_cast<int64_t>(le(2)));
        return;
      case 0x8a:
        push_long(byte());
        return;
      case 0x8b: {
        const uint64_t n = le(4);
        if (n > 255) fail("LONG4 of ", n, " bytes (too large an integer)");
        push_long(n);
        return;
      }
      case 'G': {
        const uint64_t bits = __builtin_bswap64(le(8));  // big-endian
        double v;
        std::memcpy(&v, &bits, 8);
        push({.kind = Kind::Float, .number = v});
        return;
      }
      case 'X':
        push_text(Kind::String, le(4));
        return;
      case 0x8c:
        push_text(Kind::String, byte());
        return;
      case 0x8d:
        push_text(Kind::String, le(8));
        return;
      case 'T':
        push_text(Kind::String, le(4));
        return;
      case 'U':
        push_text(Kind::String, byte());
        return;
      case 'B':
        push_text(Kind::Bytes, le(4));
        return;
      case 'C':
        push_text(Kind::Bytes, byte());
        return;
      case 0x8e:
        push_text(Kind::Bytes, le(8));
        return;
      case '}':
        push({.kind = Kind::Dict});
        return;
      case ']':
        push({.kind = Kind::List});
        return;
      case ')':
        push({.kind = Kind::Tuple});
        return;
      case 't': {
        Value v{.kind = Kind::Tuple, .items = pop_mark()};
        push(std::move(v));
        return;
      }
      case 0x85:
        tuple(1);
        return;
      case 0x86:
        tuple(2);
        return;
      case 0x87:
        tuple(3);
        return;
      case 'l': {
        Value v{.kind = Kind::List, .items = pop_mark()};
        push(std::move(v));
        return;
      }
      case 'd': {
        std::vector<uint32_t> items = pop_mark();
        if (items.size() % 2 != 0) fail("DICT with an odd number of values");
        push({.kind = Kind::Dict, .items = std::move(items)});
        return;
      }
      case 's': {
        const uint32_t v = pop(), k = pop();
        set_items({k, v});
        return;
      }
      case 'u':
        set_items(pop_mark());
        return;
      case 'a':
        append({pop()});
        return;
      case 'e':
        append(pop_mark());
        return;
      case 'c': {
        const std::string module(line());
        global(module, line());
        return;
      }
      case 0x93: {  // STACK_GLOBAL
        const uint32_t name = pop(), module = pop();
        if (at(name).kind != Kind::String || at(module).kind != Kind::String)
          fail("STACK_GLOBAL with non-string operands");
        global(at(module).text, at(name).text);
        return;
      }
      case 'R': {
        const uint32_t args = pop(), callable = pop();
        reduce(callable, args, "REDUCE");
        return;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), allowed for OrderedDict only
        const uint32_t args = pop(), cls = pop();
        if (at(cls).kind != Kind::Global || at(cls).callable != Callable::OrderedDict)
          fail("NEWOBJ of ", describe_one(at(cls)), " (only OrderedDict)");
        reduce(cls, args, "NEWOBJ");
        return;
      }
      case 'b': {  // BUILD: a state set on a dict (OrderedDict's _metadata) or tensor: ignored
        const uint32_t state = pop();
        const Kind target = at(top()).kind;
        if (target != Kind::Dict && target != Kind::Tensor) fail("BUILD on a ", kind_name(target));
        (void)state;
        return;
      }
      case 'Q':
        persistent(pop());
        return;
      case 'P': {
        const std::string_view text = line();
        fail("PERSID with text id '", text.substr(0, 64), "' (PyTorch writes BINPERSID)");
      }
      case 'q':
      case 'r':
      case 'p':
      case 0x94:  // MEMOIZE
        memo_put(memo_index(op));
        return;
      case 'h':
      case 'j':
      case 'g':
        memo_get(memo_index(op));
        return;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", op);
        fail("opcode ", hex, " is not supported");
      }
    }
  }

  const uint8_t* data_;
  size_t size_;
  std::string_view source_, what_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<Value> values_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

}  // namespace

Result unpickle(const uint8_t* data, size_t size, size_t start, std::string_view source,
                std::string_view what) {
  OX_CHECK(start <= size, Format, kOp, source, ": ", what, " starts past the end of the file");
  return Unpickler(data, size, source, what).run(start);
}

std::string describe(const Result& r, uint32_t index) { return describe_one(r.values[index]); }

}  // namespace ox::io::pickle
