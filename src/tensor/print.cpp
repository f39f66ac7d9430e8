// Printing as PyTorch does: one format for all elements, rows aligned, large tensors
// summarised with "...", and dtype/device named when they are not the defaults.

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "backend/cpu/convert.h"
#include "core/dispatch.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

double element_at(const TensorImpl& t, const Dims& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.layout().strides[d];
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    return cpu::convert<double>(static_cast<const T*>(t.data())[offset]);
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

class Formatter {
 public:
  Formatter(const TensorImpl& t, bool summarize) : dtype_(t.dtype()) {
    if (!is_floating(dtype_)) {
      Dims index(t.layout().shape.size());
      visit_shown(t.layout().shape, summarize, index, 0,
                  [&](const Dims& i) { width_ = std::max(width_, format(element_at(t, i)).size()); });
      return;
    }
    double lo = INFINITY, hi = 0;
    bool all_integers = true, any = false;
    Dims index(t.layout().shape.size());
    visit_shown(t.layout().shape, summarize, index, 0, [&](const Dims& i) {
      const double v = element_at(t, i);
      if (!std::isfinite(v) || v == 0) return;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      all_integers &= std::nearbyint(v) == v;
    });
    if (any) {
      integer_mode_ = all_integers && hi <= 1e8;
      scientific_ = !integer_mode_ && (hi / lo > 1000 || hi > 1e8 || lo < 1e-4);
    }
    visit_shown(t.layout().shape, summarize, index, 0,
                [&](const Dims& i) { width_ = std::max(width_, format(element_at(t, i)).size()); });
  }

  std::string format(double v) const {
    if (dtype_ == kBool) return v != 0 ? "True" : "False";
    char buf[64];
    if (!is_floating(dtype_)) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else if (std::isnan(v)) {
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
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }
  size_t width() const { return width_; }

 private:
  DType dtype_;
  bool integer_mode_ = false, scientific_ = false;
  size_t width_ = 1;
};

void print_dim(std::ostream& os, const TensorImpl& t, const Formatter& fmt, bool summarize,
               Dims& index, size_t d, size_t indent) {
  const Shape& shape = t.layout().shape;
  const int64_t n = shape[d];
  const bool cut = summarize && n > 2 * kEdgeItems;
  os << '[';
  if (d + 1 == shape.size()) {
    const size_t per_line = std::max<size_t>(1, (kLineWidth - indent) / (fmt.width() + 2));
    size_t on_line = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) {
        os << ',';
        if (++on_line == per_line) {
          os << '\n' << std::string(indent + 1, ' ');
          on_line = 0;
        } else {
          os << ' ';
        }
      }
      if (cut && i == kEdgeItems) {
        os << "..., ";
        i = n - kEdgeItems;
      }
      index[d] = i;
      os << fmt.padded(element_at(t, index));
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
  const Tensor host = tensor.cpu();
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
    os << Formatter(t, false).format(element_at(t, {}));
  } else {
    const Formatter fmt(t, summarize);
    Dims index(shape.size());
    print_dim(os, t, fmt, summarize, index, 0, indent);
  }
  if (t.dtype() != kF32 && t.dtype() != kI64 && t.dtype() != kBool) os << ", dtype=" << t.dtype();
  if (!tensor.device().is_cpu()) os << ", device=" << tensor.device();
  return os << ')';
}

std::string Tensor::str() const {
  std::ostringstream out;
  out << *this;
  return out.str();
}

}  // namespace ox
