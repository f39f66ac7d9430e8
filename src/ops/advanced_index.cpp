// Python-style indexing: x.index({...}), x.index_put_({...}, v), index_put and masked_select.
// Integers, slices, None and Ellipsis become views (select, slice, unsqueeze). The tensor
// indices left then drive one gather or scatter laid out as PyTorch's advanced indexing: the
// index tensors broadcast to one shape B, which takes the place of the indexed dims when they
// are adjacent and goes first when they are not.
//
// Autograd: the views record themselves; the gather and an out-of-place scatter record, each
// one's vjp being the other (gather_recorded, put_recorded). In-place writes under autograd
// rewrite the whole tensor out of place through the flat positions written.

#include <string>

#include "autograd/record.h"
#include "ops/index_util.h"
#include "oxmera/indexing.h"

namespace ox {

namespace {

// A tensor index and the first dim of the indexed tensor it applies to (a bool mask covers
// as many dims as it has).
struct DimIndex {
  int64_t dim;
  Tensor index;
};

int64_t dims_covered(const Tensor& t) { return t.dtype() == kBool ? t.dim() : 1; }

// x[...] with the basic indices applied: a view of x, and the tensor indices still to apply.
struct Sliced {
  Tensor view;
  std::vector<DimIndex> indices;
};

// x[True] / x[False]: a new axis, indexed by [0] or by nothing.
Tensor bool_axis_index(bool value, Device device) {
  return value ? zeros({1}, {.dtype = kI64, .device = device})
               : empty({0}, {.dtype = kI64, .device = device});
}

Tensor select_checked(const Tensor& t, int64_t dim, int64_t i, const char* op) {
  const int64_t size = t.size(dim);
  OX_CHECK(i >= -size && i < size, Index, op, "index ", i, " is out of bounds for dimension ", dim,
           " with size ", size);
  return t.select(dim, i);
}

Sliced apply_basic(const Tensor& x, const std::vector<TensorIndex>& items, const char* op) {
  const Device device = ops::impl_of(x, op).device();
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::Integer:
      case TensorIndex::Kind::Slice:
        ++consumed;
        break;
      case TensorIndex::Kind::Tensor:
        ops::impl_of(it.tensor(), op);
        OX_CHECK(it.tensor().device() == device, Device, op, "index on ", it.tensor().device(),
                 " for a tensor on ", device);
        consumed += dims_covered(it.tensor());
        break;
      case TensorIndex::Kind::Ellipsis:
        ++ellipses;
        break;
      case TensorIndex::Kind::None:
      case TensorIndex::Kind::Boolean:
        break;
    }
  }
  OX_CHECK(ellipses <= 1, Index, op, "an index can only have a single ellipsis (...)");
  OX_CHECK(consumed <= x.dim(), Index, op, "too many indices for a tensor of dimension ", x.dim(),
           ": ", consumed, " given");
  Sliced s{x, {}};
  int64_t dim = 0;
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::Integer:
        s.view = select_checked(s.view, dim, it.integer(), op);
        break;
      case TensorIndex::Kind::Slice: {
        const Slice& sl = it.slice();
        const int64_t step = sl.step.value_or(1);
        OX_CHECK(step > 0, Value, op, "slice step must be positive, got ", step);
        s.view = s.view.slice(dim, sl.start.value_or(0), sl.stop.value_or(INT64_MAX), step);
        ++dim;
        break;
      }
      case TensorIndex::Kind::None:
        s.view = s.view.unsqueeze(dim++);
        break;
      case TensorIndex::Kind::Ellipsis:
        dim += x.dim() - consumed;
        break;
      case TensorIndex::Kind::Boolean:
        s.view = s.view.unsqueeze(dim);
        s.indices.push_back({dim++, bool_axis_index(it.boolean(), device)});
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = it.tensor();
        if (t.dim() == 0 && t.dtype() == kBool) {  // as the bool True / False
          s.view = s.view.unsqueeze(dim);
          s.indices.push_back({dim++, bool_axis_index(t.item<bool>(), device)});
        } else if (t.dim() == 0) {  // a 0-d integer tensor is an integer: a view
          ops::check_index_dtype(t, op);
          s.view = select_checked(s.view, dim, t.item<int64_t>(), op);
        } else {
          if (t.dtype() != kBool) ops::check_index_dtype(t, op);
          s.indices.push_back({dim, t});
          dim += dims_covered(t);
        }
        break;
      }
    }
  }
  return s;
}

// Where the tensor indices of `src` take the data from: the result shape, src's strides over
// it (0 along B) and one index argument per indexed dim.
struct IndexPlan {
  Shape shape;
  Strides strides;
  std::vector<ops::IndexArg> args;
};

IndexPlan plan_advanced(const Tensor& src, const std::vector<DimIndex>& indices, const char* op) {
  const int64_t nd = src.dim();
  std::vector<Tensor> per_dim(static_cast<size_t>(nd));
  for (const auto& [dim, t] : indices) {
    const int64_t k = dims_covered(t);
    OX_CHECK(dim + k <= nd, Index, op, "too many indices for a tensor of dimension ", nd);
    if (t.dtype() == kBool) {
      OX_CHECK(k > 0, Index, op, "a 0-d bool index here has no dims to cover; use ",
               "x.index({mask}) or x.index_put_({mask}, v)");
      for (int64_t j = 0; j < k; ++j)
        OX_CHECK(t.size(j) == src.size(dim + j), Shape, op, "mask of shape ", t.shape(),
                 " does not match the indexed tensor of shape ", src.shape(), " at dimension ",
                 dim + j);
      const Tensor nz = nonzero(t);  // [n, k]: one index per dim the mask covers
      for (int64_t j = 0; j < k; ++j) per_dim[static_cast<size_t>(dim + j)] = nz.select(1, j);
    } else {
      per_dim[static_cast<size_t>(dim)] = t;
    }
  }
  // Index arrays of one call share a dtype: i64 unless all are i32.
  bool has_i64 = false, has_i32 = false;
  for (const Tensor& t : per_dim) {
    has_i64 = has_i64 || (t.defined() && t.dtype() == kI64);
    has_i32 = has_i32 || (t.defined() && t.dtype() == kI32);
  }
  if (has_i64 && has_i32)
    for (Tensor& t : per_dim)
      if (t.defined()) t = t.to(kI64);
  Shape b;
  int64_t lo = -1, hi = -1;
  for (int64_t d = 0; d < nd; ++d) {
    const Tensor& t = per_dim[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    b = lo < 0 ? t.shape() : broadcast_shapes(b, t.shape(), op);
    if (lo < 0) lo = d;
    hi = d;
  }
  OX_ASSERT(lo >= 0, "advanced indexing without index tensors");
  bool adjacent = true;
  for (int64_t d = lo; d <= hi; ++d)
    adjacent = adjacent && per_dim[static_cast<size_t>(d)].defined();
  IndexPlan p;
  auto keep = [&](int64_t d) {
    p.shape.push_back(src.size(d));
    p.strides.push_back(src.stride(d));
  };
  auto place_b = [&] {
    const size_t at = p.shape.size();
    for (int64_t s : b) {
      p.shape.push_back(s);
      p.strides.push_back(0);
    }
    return at;
  };
  size_t b_at = 0;
  if (adjacent) {
    for (int64_t d = 0; d < lo; ++d) keep(d);
    b_at = place_b();
    for (int64_t d = hi + 1; d < nd; ++d) keep(d);
  } else {  // PyTorch moves B to the front when a slice separates the index tensors
    b_at = place_b();
    for (int64_t d = 0; d < nd; ++d)
      if (!per_dim[static_cast<size_t>(d)].defined()) keep(d);
  }
  for (int64_t d = 0; d < nd; ++d) {
    const Tensor& t = per_dim[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    const Layout e = t.layout().expand(b);
    Strides s(p.shape.size(), 0);
    for (size_t i = 0; i < b.size(); ++i) s[b_at + i] = e.strides[i];
    p.args.push_back({t, ops::restrided(t, p.shape, s), d, src.size(d), src.stride(d), true});
  }
  return p;
}

Tensor advanced_gather(const Tensor& src, const std::vector<DimIndex>& indices, const char* op) {
  const IndexPlan p = plan_advanced(src, indices, op);
  Tensor out = make_empty(p.shape, src.dtype(), src.device(), op);
  if (out.numel() > 0)
    ops::gather_into(op, out.impl()->array(), ops::restrided(src, p.shape, p.strides), p.args);
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

void advanced_scatter(const Tensor& dest, std::vector<DimIndex> indices, const Tensor& values,
                      bool accumulate, const char* op) {
  ops::check_writable(dest, op);
  for (DimIndex& di : indices) di.index = ops::unaliased(di.index, dest);
  const IndexPlan p = plan_advanced(dest, indices, op);
  OX_CHECK(broadcasts_to(values.shape(), p.shape), Shape, op, "values of shape ", values.shape(),
           " cannot be broadcast to the indexing result of shape ", p.shape);
  if (checked_numel(p.shape, op) == 0) return;
  const Tensor v = ops::unaliased(values, dest);
  ops::scatter_into(op, dest, ops::restrided(dest, p.shape, p.strides),
                    ops::broadcast_array(v, p.shape), p.args,
                    accumulate ? ScatterReduce::Sum : ScatterReduce::Assign);
}

// The list form of index_put: entry k indexes the next dim (a mask the next mask.dim() dims),
// an undefined entry takes a whole dim.
std::vector<DimIndex> listed(const Tensor& x, const std::vector<Tensor>& indices, const char* op) {
  std::vector<DimIndex> out;
  int64_t dim = 0;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      ++dim;
      continue;
    }
    ops::common_device(op, {&x, &t});
    if (t.dtype() != kBool) ops::check_index_dtype(t, op);
    out.push_back({dim, t});
    dim += dims_covered(t);
  }
  OX_CHECK(dim <= x.dim(), Index, op, "too many indices for a tensor of dimension ", x.dim(), ": ",
           dim, " given");
  OX_CHECK(!out.empty(), Value, op, "needs at least one index tensor");
  return out;
}

// ---- Autograd ------------------------------------------------------------------------------
// advanced_gather and an out-of-place advanced_scatter, recorded: each one's vjp is the other.

Tensor put_recorded(const Tensor& x, const std::vector<DimIndex>& indices, const Tensor& values,
                    bool accumulate, const char* op);

// src[indices]; its gradient is a zero tensor with the gradient put back (accumulating repeats).
Tensor gather_recorded(const Tensor& src, const std::vector<DimIndex>& indices, const char* op) {
  if (!autograd::needs_grad({&src})) return advanced_gather(src, indices, op);
  Tensor out = autograd::without_grad([&] { return advanced_gather(src, indices, op); });
  autograd::record(
      "index", {src}, {out}, {},
      [indices, shape = src.shape(), op](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        const Tensor z = zeros(shape, {.dtype = g[0].dtype(), .device = g[0].device()});
        return std::vector<Tensor>{put_recorded(z, indices, g[0], true, op)};
      });
  return out;
}

// A copy of x with x[indices] = values (or += with accumulate); values has x's dtype. Gradients:
// x's is g with the written elements zeroed (g itself with accumulate), values' is g[indices]
// (summed back over the dims values was broadcast along).
Tensor put_recorded(const Tensor& x, const std::vector<DimIndex>& indices, const Tensor& values,
                    bool accumulate, const char* op) {
  auto forward = [&] {
    Tensor out = x.clone();
    advanced_scatter(out, indices, values, accumulate, op);
    return out;
  };
  if (!autograd::needs_grad({&x, &values})) return forward();
  Tensor out = autograd::without_grad(forward);
  autograd::record(
      "index_put", {x, values}, {out}, {},
      [indices, accumulate, op](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        const Tensor& gx = g[0];
        const Tensor zero = zeros({}, {.dtype = gx.dtype(), .device = gx.device()});
        return std::vector<Tensor>{accumulate ? gx : put_recorded(gx, indices, zero, false, op),
                                   gather_recorded(gx, indices, op)};
      });
  return out;
}

// Tensor::index_put_ while autograd records: x's element positions indexed like x give the
// flat positions written, and the whole of x is rewritten out of place through them.
Tensor& index_put_recorded(Tensor& x, const std::vector<TensorIndex>& items, const Tensor& value,
                           const char* op) {
  autograd::check_inplace(x, op);
  const Tensor positions =
      arange(x.numel(), {.dtype = kI64, .device = x.device()}).reshape(x.shape());
  const Sliced s = apply_basic(positions, items, op);
  const Tensor at = s.indices.empty() ? s.view : advanced_gather(s.view, s.indices, op);
  OX_CHECK(broadcasts_to(value.shape(), at.shape()), Shape, op, "value of shape ", value.shape(),
           " cannot be broadcast to the indexed shape ", at.shape());
  const Tensor v = value.to(x.dtype()).expand(at.shape()).reshape({-1});
  const Tensor out = put_recorded(x.reshape({-1}), {{0, at.reshape({-1})}}, v, false, op);
  return ops::assign_result(x, out.reshape(x.shape()), op);
}

}  // namespace

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  const Sliced s = apply_basic(*this, indices, "index");
  return s.indices.empty() ? s.view : gather_recorded(s.view, s.indices, "index");
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return index_put_(std::vector<TensorIndex>(indices), value);
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  return index_put_(std::vector<TensorIndex>(indices), value);
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) {
  const char* op = "index_put_";
  ops::impl_of(value, op);
  if (autograd::needs_grad({this, &value})) {
    ops::common_device(op, {this, &value});
    ops::check_writable(*this, op);
    return index_put_recorded(*this, indices, value, op);
  }
  const Sliced s = apply_basic(*this, indices, op);
  ops::common_device(op, {this, &value});
  ops::check_writable(s.view, op);
  if (s.indices.empty()) {
    OX_CHECK(broadcasts_to(value.shape(), s.view.shape()), Shape, op, "value of shape ",
             value.shape(), " cannot be broadcast to the indexed shape ", s.view.shape());
    Tensor view = s.view;
    view.copy_(value);
    return *this;
  }
  advanced_scatter(s.view, s.indices, value.to(dtype()), false, op);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value) {
  const char* op = "index_put_";
  if (autograd::needs_grad({this})) {
    ops::check_writable(*this, op);
    OX_CHECK(scalar_fits(value, dtype()), Value, op, "value ", value, " cannot be converted to ",
             dtype(), " without overflow");
    return index_put_recorded(*this, indices, ops::scalar_operand(value, dtype(), device()), op);
  }
  const Sliced s = apply_basic(*this, indices, op);
  ops::check_writable(s.view, op);
  if (s.indices.empty()) {
    Tensor view = s.view;
    view.fill_(value);
    return *this;
  }
  OX_CHECK(scalar_fits(value, dtype()), Value, op, "value ", value, " cannot be converted to ",
           dtype(), " without overflow");
  advanced_scatter(s.view, s.indices, ops::scalar_operand(value, dtype(), device()), false, op);
  return *this;
}

namespace {

// index_put's operands: defined, on one device, values of x's dtype.
void check_put(const Tensor& x, const Tensor& values, const char* op) {
  ops::impl_of(x, op);
  ops::impl_of(values, op);
  ops::common_device(op, {&x, &values});
  OX_CHECK(values.dtype() == x.dtype(), DType, op, "values of dtype ", values.dtype(),
           " must have the tensor's dtype ", x.dtype());
}

}  // namespace

Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate) {
  const char* op = "index_put";
  check_put(x, values, op);
  const std::vector<DimIndex> listing = listed(x, indices, op);
  if (autograd::needs_grad({&x, &values})) {
    ops::check_writable(x, op);
    autograd::check_inplace(x, op);
    return ops::assign_result(x, put_recorded(x.clone(), listing, values, accumulate, op), op);
  }
  advanced_scatter(x, listing, values, accumulate, op);
  return x;
}

Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  const char* op = "index_put";
  check_put(x, values, op);
  return put_recorded(x, listed(x, indices, op), values, accumulate, op);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  ops::impl_of(x, op);
  OX_CHECK(ops::impl_of(mask, op).dtype() == kBool, DType, op, "mask must be bool, got ",
           mask.dtype());
  ops::common_device(op, {&x, &mask});
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), op);
  if (shape.empty())  // both 0-d: zero or one element
    return mask.item<bool>() ? x.reshape({1}).clone()
                             : empty({0}, {.dtype = x.dtype(), .device = x.device()});
  return gather_recorded(x.expand(shape), {{0, mask.expand(shape)}}, op);
}

}  // namespace ox
