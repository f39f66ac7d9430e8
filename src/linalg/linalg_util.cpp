#include "linalg/linalg_util.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace ox::linalg::detail {

Tensor transposed_result(const Tensor& t) {
  return Tensor(
      std::make_shared<TensorImpl>(t.storage(), t.impl()->layout().transpose(-2, -1), t.dtype()));
}

void check_matrix(const Tensor& a, const char* op, bool square) {
  OX_CHECK(a.defined(), Value, op, "got an undefined tensor");
  OX_CHECK(a.dtype() == kF32 || a.dtype() == kF64, DType, op, "takes f32 or f64 matrices, got ",
           a.dtype());
  OX_CHECK(a.dim() >= 2, Shape, op, "takes matrices [..., m, n], got shape ", a.shape());
  OX_CHECK(!square || a.size(-1) == a.size(-2), Shape, op, "takes square matrices, got shape ",
           a.shape());
}

void check_same(const Tensor& a, const Tensor& b, const char* op) {
  OX_CHECK(a.device() == b.device(), Device, op, "operands on ", a.device(), " and ", b.device());
  OX_CHECK(a.dtype() == b.dtype(), DType, op, "operands of one dtype expected, got ", a.dtype(),
           " and ", b.dtype());
}

Shape batch_shape(const Tensor& a, size_t matrix_dims) {
  const Shape& s = a.shape();
  return Shape(s.begin(), s.end() - static_cast<int64_t>(matrix_dims));
}

Shape broadcast_batch(const Tensor& a, const Tensor& b, const char* op) {
  const Shape ba = batch_shape(a), bb = batch_shape(b);
  try {
    return broadcast_shapes(ba, bb, op);
  } catch (const Error&) {
    OX_CHECK(false, Shape, op, "batch dims of shapes ", a.shape(), " and ", b.shape(),
             " do not broadcast");
  }
  return {};
}

Tensor column_major_empty(const Shape& batch, int64_t rows, int64_t cols, DType dtype,
                          Device device, const char* op) {
  Shape transposed = batch;
  transposed.push_back(cols);
  transposed.push_back(rows);
  return transposed_result(make_empty(transposed, dtype, device, op));
}

Tensor fresh_copy(const Tensor& a, const char* op) {
  Tensor out = make_empty(a.shape(), a.dtype(), a.device(), op);
  if (out.numel() > 0) backend_of(a, op).copy(array_of(out), array_of(a), false);
  return out;
}

double machine_epsilon(DType dtype) {
  return dtype == kF32 ? std::numeric_limits<float>::epsilon()
                       : std::numeric_limits<double>::epsilon();
}

Tensor column_major_copy(const Tensor& a, const Shape& batch, const char* op) {
  Tensor out = column_major_empty(batch, a.size(-2), a.size(-1), a.dtype(), a.device(), op);
  Shape full = batch;
  full.push_back(a.size(-2));
  full.push_back(a.size(-1));
  const Tensor src = a.expand(full);
  if (out.numel() > 0) backend_of(a, op).copy(array_of(out), array_of(src), false);
  return out;
}

Tensor column_major_copy(const Tensor& a, const char* op) {
  return column_major_copy(a, batch_shape(a), op);
}

bool is_column_major(const Tensor& a) {
  const int64_t rows = a.size(-2), cols = a.size(-1);
  return (a.stride(-2) == 1 || rows <= 1) &&
         (a.stride(-1) >= std::max<int64_t>(1, rows) || cols <= 1);
}

LapackOperand lapack_operand(const Tensor& a, const char* op) {
  if (is_column_major(a)) return {a, false};
  if (is_column_major(mT(a))) return {mT(a), true};
  return {column_major_copy(a, op), false};
}

Tensor permutation_matrix(const Tensor& pivots, int64_t m, DType dtype) {
  const Shape batch = batch_shape(pivots, 1);
  const int64_t k = pivots.size(-1);
  const std::vector<int32_t> piv = pivots.contiguous().to_vector<int32_t>();
  int64_t matrices = 1;
  for (int64_t s : batch) matrices *= s;
  std::vector<double> p(static_cast<size_t>(matrices * m * m), 0.0);
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t b = 0; b < matrices; ++b) {
    for (int64_t i = 0; i < m; ++i) perm[size_t(i)] = i;
    for (int64_t i = 0; i < k; ++i)
      std::swap(perm[size_t(i)], perm[size_t(piv[size_t(b * k + i)] - 1)]);
    // Row i of L U is row perm[i] of A.
    for (int64_t i = 0; i < m; ++i) p[size_t((b * m + perm[size_t(i)]) * m + i)] = 1;
  }
  Shape shape = batch;
  shape.push_back(m);
  shape.push_back(m);
  return tensor(p).reshape(shape).to(dtype).to(pivots.device());
}

Tensor int32_zeros(const Shape& shape, Device device) {
  return zeros(shape, {.dtype = kI32, .device = device});
}

Tensor identity_like(const Tensor& like, int64_t n, std::optional<int64_t> m) {
  return eye(n, m, {.dtype = like.dtype(), .device = like.device()});
}

UnpackedLu unpack_lu(const Tensor& lu) {
  return {tril(lu, -1) + identity_like(lu, lu.size(-1)), triu(lu)};
}

std::string batch_text(const Shape& batch, int64_t t) {
  if (batch.empty()) return "";
  Shape index = batch;
  for (size_t d = batch.size(); d-- > 0;) {
    index[d] = t % batch[d];
    t /= batch[d];
  }
  std::ostringstream os;
  os << " (batch element " << index << ")";
  return os.str();
}

void check_finite_info(const Tensor& info, const char* op) {
  if (info.numel() == 0) return;
  const std::vector<int32_t> codes = info.contiguous().to_vector<int32_t>();
  const auto bad = std::find(codes.begin(), codes.end(), Backend::kLinalgNonFinite);
  OX_CHECK(bad == codes.end(), Value, op, "the input holds NaN or Inf",
           batch_text(info.shape(), bad - codes.begin()));
}

void check_info(const Tensor& info, const char* op,
                const std::function<std::string(int32_t)>& failure) {
  if (info.numel() == 0) return;
  const std::vector<int32_t> codes = info.contiguous().to_vector<int32_t>();
  for (size_t t = 0; t < codes.size(); ++t) {
    if (codes[t] == 0) continue;
    const std::string where = batch_text(info.shape(), static_cast<int64_t>(t));
    OX_CHECK(codes[t] != Backend::kLinalgNonFinite, Value, op, "the input holds NaN or Inf", where);
    OX_CHECK(false, Value, op, failure(codes[t]), where);
  }
}

}  // namespace ox::linalg::detail
