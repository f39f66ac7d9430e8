#pragma once
// Dims: a small vector of int64 with inline room for six entries, so shapes and strides of
// ordinary tensors never touch the heap. Shape and Strides are both Dims.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace ox {

class Dims {
 public:
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Dims() = default;
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  // A bare integer is one dim, as LibTorch's IntArrayRef: `zeros(3)`, `view(-1)`, `flip(-1)`.
  template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) Dims(I value) {  // NOLINT
    push_back(static_cast<int64_t>(value));
  }
  // `n` copies of `value`; both are required: `Dims(n)` is the one-dim shape [n].
  Dims(size_t n, int64_t value) { resize(n, value); }
  static Dims filled(size_t n, int64_t value) { return Dims(n, value); }
  template <class It>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT
  Dims(const Dims& other) { assign(other.begin(), other.end()); }
  Dims(Dims&& other) noexcept { *this = std::move(other); }
  Dims& operator=(const Dims& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this == &other) return *this;
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
    } else {
      heap_.reset();
      capacity_ = kInline;
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
    other.capacity_ = kInline;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  int64_t front() const { return data()[0]; }
  int64_t back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n <= capacity_) return;
    auto grown = std::make_unique<int64_t[]>(n);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = n;
  }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    std::fill(data() + std::min(n, size_), data() + n, value);
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, int64_t v) {
    const size_t at = pos - begin();
    push_back(v);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  iterator erase(const_iterator pos) {
    const size_t at = pos - begin();
    std::copy(begin() + at + 1, end(), begin() + at);
    --size_;
    return begin() + at;
  }
  template <class It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = static_cast<int64_t>(*first);
  }

  std::vector<int64_t> vec() const { return {begin(), end()}; }
  friend bool operator==(const Dims& a, const Dims& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr size_t kInline = 6;
  std::unique_ptr<int64_t[]> heap_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
  int64_t inline_[kInline] = {};
};

using Shape = Dims;
using Strides = Dims;

std::string to_string(const Dims& d);  // "[2, 3]"
std::ostream& operator<<(std::ostream& os, const Dims& d);

}  // namespace ox
