// Shaping ops that copy: repeat, repeat_interleave, tile, pad, tril/triu, roll. Written with
// views (expand, narrow, flip) and public ops, so every backend runs them.

#include "ops/op_util.h"

namespace ox {

Tensor repeat(const Tensor& x, const Dims& repeats) {
  const Shape& shape = ops::impl_of(x, "repeat").layout().shape;
  OX_CHECK(repeats.size() >= shape.size(), Shape, "repeat", "number of repeats ", repeats,
           " cannot be fewer than the number of dimensions of shape ", shape);
  const size_t lead = repeats.size() - shape.size();
  // View x as [1, s0, 1, s1, ...], expand the 1s to the repeat counts, then merge the pairs.
  Shape paired, expanded, merged;
  for (size_t i = 0; i < repeats.size(); ++i) {
    OX_CHECK(repeats[i] >= 0, Value, "repeat", "repeats must be non-negative, got ", repeats);
    const int64_t s = i < lead ? 1 : shape[i - lead];
    paired.push_back(1);
    paired.push_back(s);
    expanded.push_back(repeats[i]);
    expanded.push_back(s);
    merged.push_back(repeats[i] * s);
  }
  checked_numel(merged, "repeat");
  return x.reshape(paired).expand(expanded).contiguous().view(merged);
}

Tensor tile(const Tensor& x, const Dims& reps) {
  const int64_t nd = ops::impl_of(x, "tile").layout().dim();
  Dims full;
  for (int64_t i = static_cast<int64_t>(reps.size()); i < nd; ++i) full.push_back(1);
  for (int64_t r : reps) full.push_back(r);
  return repeat(x, full);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  ops::impl_of(x, "repeat_interleave");
  OX_CHECK(repeats >= 0, Value, "repeat_interleave", "repeats must be non-negative, got ", repeats);
  const Tensor src = dim ? x : x.flatten();
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(src.dim(), 1), "repeat_interleave") : 0;
  if (src.dim() == 0) return src.reshape({1}).expand({repeats}).contiguous();
  Shape expanded = src.shape();
  expanded.insert(expanded.begin() + d + 1, repeats);
  return src.unsqueeze(d + 1).expand(expanded).contiguous().flatten(d, d + 1);
}

namespace {

void check_repeats_tensor(const Tensor& repeats) {
  OX_CHECK(is_integral(ops::impl_of(repeats, "repeat_interleave").dtype()), DType,
           "repeat_interleave", "repeats must be an integer tensor, got ", repeats.dtype());
  OX_CHECK(repeats.dim() <= 1, Shape, "repeat_interleave", "repeats must be 0-d or 1-d, got shape ",
           repeats.shape());
}

}  // namespace

// Row i fills the output positions [c[i] - r[i], c[i]) (c the running sum of r), so the row
// of position j is the number of c[i] <= j: a running sum of a histogram of c.
Tensor repeat_interleave(const Tensor& repeats) {
  check_repeats_tensor(repeats);
  OX_CHECK(repeats.dim() == 1, Shape, "repeat_interleave",
           "without an input takes 1-d repeats, got shape ", repeats.shape());
  const Device device = repeats.device();
  const int64_t n = repeats.numel();
  if (n == 0) return empty({0}, {.dtype = kI64, .device = device});
  const int64_t least = amin(repeats).item<int64_t>();
  OX_CHECK(least >= 0, Value, "repeat_interleave", "repeats must be non-negative, got ", least);
  const Tensor ends = cumsum(repeats, 0);  // i64
  const int64_t total = ends.select(0, n - 1).item<int64_t>();
  const Tensor hist = index_add(zeros({total + 1}, {.dtype = kI64, .device = device}), 0, ends,
                                ones({n}, {.dtype = kI64, .device = device}));
  return cumsum(hist.narrow(0, 0, total), 0);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim) {
  ops::impl_of(x, "repeat_interleave");
  check_repeats_tensor(repeats);
  ops::common_device("repeat_interleave", {&x, &repeats});
  if (repeats.numel() == 1) return repeat_interleave(x, repeats.item<int64_t>(), dim);
  Tensor src = dim ? x : x.flatten();
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(src.dim(), 1), "repeat_interleave") : 0;
  if (src.dim() == 0) src = src.reshape({1});
  OX_CHECK(repeats.numel() == src.size(d), Shape, "repeat_interleave", "repeats has ",
           repeats.numel(), " elements but dimension ", d, " of shape ", src.shape(), " has size ",
           src.size(d));
  return index_select(src, d, repeat_interleave(repeats));
}

namespace {

// Pads (or, for negative amounts, crops) one dim of x.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t before, int64_t after, std::string_view mode,
               const Scalar& value) {
  Tensor t = x;
  if (before < 0) t = t.narrow(d, -before, t.size(d) + before);
  if (after < 0) t = t.narrow(d, 0, t.size(d) + after);
  before = std::max<int64_t>(before, 0);
  after = std::max<int64_t>(after, 0);
  if (before == 0 && after == 0) return t;
  const int64_t n = t.size(d);
  std::vector<Tensor> pieces;
  if (mode == "constant") {
    Shape side = t.shape();
    side[d] = before;
    pieces.push_back(full(side, value, {.dtype = t.dtype(), .device = t.device()}));
    pieces.push_back(t);
    side[d] = after;
    pieces.push_back(full(side, value, {.dtype = t.dtype(), .device = t.device()}));
  } else if (mode == "reflect") {
    OX_CHECK(before < n && after < n, Value, "pad", "reflect padding of ", before, " and ", after,
             " must be smaller than dimension ", d, " of size ", n);
    pieces.push_back(t.narrow(d, 1, before).flip({d}));
    pieces.push_back(t);
    pieces.push_back(t.narrow(d, n - 1 - after, after).flip({d}));
  } else {  // replicate
    OX_CHECK(n > 0, Value, "pad", "cannot replicate-pad an empty dimension ", d);
    Shape side = t.shape();
    side[d] = before;
    pieces.push_back(t.narrow(d, 0, 1).expand(side));
    pieces.push_back(t);
    side[d] = after;
    pieces.push_back(t.narrow(d, n - 1, 1).expand(side));
  }
  return cat(pieces, d);
}

}  // namespace

Tensor pad(const Tensor& x, const Dims& pads, std::string_view mode, const Scalar& value) {
  const int64_t nd = ops::impl_of(x, "pad").layout().dim();
  OX_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) <= 2 * nd, Value, "pad",
           "pads ", pads, " must be pairs, at most two per dimension of shape ", x.shape());
  OX_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate", Value, "pad",
           "mode must be constant, reflect or replicate, got \"", std::string(mode), "\"");
  OX_CHECK(mode == "constant" || value.to_double() == 0, Value, "pad",
           "a fill value only goes with constant padding");
  Tensor out = x;
  // As torch.nn.functional.pad: pairs start from the last dim.
  for (size_t i = 0; i < pads.size() / 2; ++i)
    out = pad_dim(out, nd - 1 - static_cast<int64_t>(i), pads[2 * i], pads[2 * i + 1], mode, value);
  return out.is_same_storage(x) ? out.clone() : out;
}

namespace {

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* name) {
  const TensorImpl& xi = ops::impl_of(x, name);
  OX_CHECK(xi.layout().dim() >= 2, Shape, name, "needs at least 2 dimensions, got shape ",
           xi.layout().shape);
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const Tensor r = arange(rows, {.device = xi.device()}).unsqueeze(1);
  const Tensor c = arange(cols, {.device = xi.device()}).unsqueeze(0);
  const Tensor offset = c - r;  // col - row: 0 on the main diagonal
  const Tensor keep = lower ? offset <= diagonal : offset >= diagonal;
  return where(keep, x, scalar_tensor(0, {.dtype = xi.dtype(), .device = xi.device()}));
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor roll(const Tensor& x, const Dims& shifts, const Dims& dims) {
  ops::impl_of(x, "roll");
  if (dims.empty()) {
    OX_CHECK(shifts.size() == 1, Value, "roll", "without dims takes one shift, got ", shifts);
    return roll(x.flatten(), shifts, {0}).view(x.shape());
  }
  OX_CHECK(shifts.size() == dims.size(), Value, "roll", "shifts ", shifts, " and dims ", dims,
           " differ in length");
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], std::max<int64_t>(x.dim(), 1), "roll");
    const int64_t n = out.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same_storage(x) ? out.clone() : out;
}

}  // namespace ox
