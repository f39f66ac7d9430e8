#pragma once
// An insertion-ordered map from names to values with constant-time lookup, as LibTorch's
// OrderedDict: what named_parameters(), state_dict() and safetensors files hold.

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oxmera/core/error.h"
#include "oxmera/tensor.h"

namespace ox {

template <class V>
class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& item : items) insert(item.first, item.second);
  }

  // A key inserted twice is a Value error; insert_or_assign replaces in place.
  V& insert(std::string key, V value) {
    OX_CHECK(!contains(key), Value, "OrderedDict", "key '", key, "' is already present");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  V& insert_or_assign(std::string key, V value) {
    if (V* found = find(key)) return *found = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  // Removes a key (later items move up one place); false when it was absent.
  bool erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    const size_t position = it->second;
    index_.erase(it);
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(position));
    for (auto& [name, i] : index_)
      if (i > position) --i;
    return true;
  }

  bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }
  const V* find(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  V* find(std::string_view key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  // A missing key is an Index error naming it.
  const V& at(std::string_view key) const {
    const V* found = find(key);
    OX_CHECK(found != nullptr, Index, "OrderedDict", "no key '", key, "'");
    return *found;
  }
  V& at(std::string_view key) { return const_cast<V&>(std::as_const(*this).at(key)); }
  const V& operator[](std::string_view key) const { return at(key); }
  V& operator[](std::string_view key) { return at(key); }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  const std::vector<Item>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
};

// Named tensors: module and optimizer state, the contents of a safetensors file.
using TensorDict = OrderedDict<Tensor>;

}  // namespace ox
