// Printing as PyTorch does: one format for all elements, rows aligned, large tensors
// summarised with "...", and dtype/device named when they are not the defaults.

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "oxmera/autograd.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

const char* element_address(const TensorImpl& t, const Dims& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.layout().strides[d];
  return static_cast<const char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

// Elements are read from the CPU copy as they are shown (a summarized tensor reads a few): no
// converted copy of the whole tensor. Floating values as double; integers and bools as int64,
// not through double, so every i64 prints exactly.
double element_at(const TensorImpl& t, const Dims& index) {
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    return static_cast<double>(*reinterpret_cast<const T*>(element_address(t, index)));
  });
}
int64_t integer_at(const TensorImpl& t, const Dims& index) {
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    return static_cast<int64_t>(*reinterpret_cast<const T*>(element_address(t, index)));
  });
}

// Visits the indices that will be shown, in order, for choosing one number format.
template <class F>
void visit_shown(const Shape& shape, bool summarize, Dims& index, size_t d, F&& f) {
  if (d == shape.size()) {
    f(index);
    return;
  }
  for (int64_t i = 0; i < shape[d]; ++i) {
    if (summarize && shape[d] > 2 * kEdgeItems && i == kEdgeItems) i = shape[d] - kEdgeItems;
    index[d] = i;
    visit_shown(shape, summarize, index, d + 1, f);
  }
}

// PyTorch's _Formatter: integers and bools are as wide as the widest shown; floats pick one
// format from their nonzero finite values (integer mode "3.", fixed "%.4f" or scientific
// "%.4e") and are as wide as the widest of those; nan, inf and zeros are padded to that width.
class Formatter {
 public:
  Formatter(const TensorImpl& t, DType dtype, bool summarize) : dtype_(dtype) {
    const Shape& shape = t.layout().shape;
    Dims index = Dims::filled(shape.size(), 0);
    if (!is_floating(dtype_)) {
      visit_shown(shape, summarize, index, 0,
                  [&](const Dims& i) { width_ = std::max(width_, format_at(t, i).size()); });
      return;
    }
    double lo = INFINITY, hi = 0;
    bool any = false;
    visit_shown(shape, summarize, index, 0, [&](const Dims& i) {
      const double v = element_at(t, i);
      if (!std::isfinite(v) || v == 0) return;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      integer_mode_ &= std::ceil(v) == v;
    });
    if (!any) return;  // only zeros, nan and inf: integer mode, width 1
    scientific_ = hi / lo > 1000 || hi > 1e8 || (!integer_mode_ && lo < 1e-4);
    if (scientific_) integer_mode_ = false;
    visit_shown(shape, summarize, index, 0, [&](const Dims& i) {
      const double v = element_at(t, i);
      if (std::isfinite(v) && v != 0) width_ = std::max(width_, format(v).size());
    });
  }

  std::string format(double v) const {
    char buf[64];
    if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (integer_mode_) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else if (scientific_) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
  std::string format_at(const TensorImpl& t, const Dims& index) const {
    if (is_floating(dtype_)) return format(element_at(t, index));
    const int64_t v = integer_at(t, index);
    if (dtype_ == kBool) return v != 0 ? "True" : "False";
    return std::to_string(v);
  }
  std::string padded_at(const TensorImpl& t, const Dims& index) const {
    std::string s = format_at(t, index);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }
  size_t width() const { return width_; }

 private:
  DType dtype_;
  bool integer_mode_ = true, scientific_ = false;
  size_t width_ = 1;
};

void print_dim(std::ostream& os, const TensorImpl& t, const Formatter& fmt, bool summarize,
               Dims& index, size_t d, size_t indent) {
  const Shape& shape = t.layout().shape;
  const int64_t n = shape[d];
  const bool cut = summarize && n > 2 * kEdgeItems;
  os << '[';
  if (d + 1 == shape.size()) {
    // As PyTorch's _vector_str: " ..." is an item of its own, and lines hold as many items
    // of width + 2 as fit in the line width after the indent (at least one).
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdgeItems) {
        items.emplace_back(" ...");
        i = n - kEdgeItems;
      }
      index[d] = i;
      items.push_back(fmt.padded_at(t, index));
    }
    const size_t room = indent < kLineWidth ? kLineWidth - indent : 0;
    const size_t per_line = std::max<size_t>(1, room / (fmt.width() + 2));
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0 && k % per_line == 0) {
        os << ",\n" << std::string(indent + 1, ' ');
      } else if (k > 0) {
        os << ", ";
      }
      os << items[k];
    }
  } else {
    std::string gap(1, ',');  // appended, not concatenated: GCC 12 warns wrongly on `+` here
    gap.append(shape.size() - d - 1, '\n');
    gap.append(indent + 1, ' ');
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) os << gap;
      if (cut && i == kEdgeItems) {
        os << "..." << gap;
        i = n - kEdgeItems;
      }
      index[d] = i;
      print_dim(os, t, fmt, summarize, index, d + 1, indent + 1);
    }
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
  if (!tensor.defined()) return os << "tensor(undefined)";
  const DType dtype = tensor.dtype();
  const NoGradGuard no_grad;
  const Tensor host = tensor.cpu();  // the tensor itself on the CPU
  const TensorImpl& t = *host.impl();
  const Shape& shape = t.layout().shape;
  const int64_t numel = t.layout().numel();
  const bool summarize = numel > kSummarizeAbove;
  const size_t indent = 7;  // strlen("tensor(")
  os << "tensor(";
  if (numel == 0) {
    os << "[]";
    if (shape.size() > 1) os << ", size=" << shape;
  } else if (shape.empty()) {
    os << Formatter(t, dtype, false).format_at(t, {});
  } else {
    const Formatter fmt(t, dtype, summarize);
    Dims index = Dims::filled(shape.size(), 0);
    print_dim(os, t, fmt, summarize, index, 0, indent);
  }
  // As PyTorch: f32, i64 and bool go without saying, except when empty (no values to tell
  // an i64 or a bool tensor from an f32 one); there only f32 does.
  const bool default_dtype =
      numel == 0 ? dtype == kF32 : dtype == kF32 || dtype == kI64 || dtype == kBool;
  if (!tensor.device().is_cpu()) os << ", device=" << tensor.device();
  if (!default_dtype) os << ", dtype=" << dtype;
  return os << ')';
}

std::string Tensor::str() const {
  std::ostringstream out;
  out << *this;
  return out.str();
}

}  // namespace ox
