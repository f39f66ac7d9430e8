// einsum: parsed into integer labels, then lowered to views (diagonal, permute, expand),
// sums over labels used by one operand only, and pairwise batched products.

#include <algorithm>
#include <string>
#include <vector>

#include "ops/matmul.h"

namespace ox {

namespace {

constexpr const char* kOp = "einsum";
// Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (so sorting them is ASCII order); the dims an
// ellipsis stands for are kEllipsis + i, right-aligned across operands.
constexpr int kLetters = 52;
constexpr int kEllipsis = kLetters;

std::string label_name(int l) {
  if (l >= kEllipsis) return "...";
  return std::string(1, char(l < 26 ? 'A' + l : 'a' + (l - 26)));
}

// One side of the equation: labels, and where "..." stood (-1 when absent).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

Term parse_term(std::string_view text, std::string_view equation) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= 'A' && c <= 'Z') {
      t.letters.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      t.letters.push_back(26 + (c - 'a'));
    } else if (c == '.') {
      OX_CHECK(text.substr(i, 3) == "..." && t.ellipsis_at < 0, Value, kOp, "equation \"", equation,
               "\": '.' must come as one \"...\" per operand");
      t.ellipsis_at = int(t.letters.size());
      i += 2;
    } else {
      OX_FAIL(Value, kOp, "equation \"", equation, "\" has an invalid character '", c, "'");
    }
  }
  return t;
}

// An operand as it flows through the lowering: a tensor with one unique label per dim.
struct Operand {
  Tensor t;
  std::vector<int> labels;
};

// The diagonal over dims d < d2, in place of dim d (diagonal() puts it last).
Tensor diagonal_at(const Tensor& t, int64_t d, int64_t d2) {
  const Tensor diag = t.diagonal(0, d, d2);
  Dims perm;
  for (int64_t i = 0; i < diag.dim() - 1; ++i) {
    if (i == d) perm.push_back(diag.dim() - 1);
    perm.push_back(i);
  }
  if (d == diag.dim() - 1) perm.push_back(d);
  return diag.permute(perm);
}

bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// Sums `x` over the dims whose label `drop` marks (ox::sum: integers wrap back to the dtype).
Operand sum_out(const Operand& x, const std::vector<bool>& drop) {
  Dims dims;
  std::vector<int> kept;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (drop[size_t(x.labels[d])])
      dims.push_back(int64_t(d));
    else
      kept.push_back(x.labels[d]);
  }
  if (dims.empty()) return x;
  return {sum(x.t, dims, /*keepdim=*/false, x.t.dtype()), kept};
}

// Contracts two operands over their shared labels that nothing else needs (`keep` false).
Operand contract(const Operand& x, const Operand& y, const std::vector<bool>& keep,
                 const std::vector<int64_t>& size) {
  std::vector<int> batch, xfree, yfree, summed;
  for (int l : x.labels) {
    if (!has(y.labels, l))
      xfree.push_back(l);
    else if (keep[size_t(l)])
      batch.push_back(l);
    else
      summed.push_back(l);
  }
  for (int l : y.labels)
    if (!has(x.labels, l)) yfree.push_back(l);
  auto dim_of = [](const Operand& o, int l) {
    return int64_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin());
  };
  auto extent = [&](const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= size[size_t(l)];
    return n;
  };
  Dims px, py, batch_shape, out_shape;
  for (int l : batch) {
    px.push_back(dim_of(x, l));
    py.push_back(dim_of(y, l));
    batch_shape.push_back(size[size_t(l)]);
  }
  std::vector<int> labels = batch;
  out_shape = batch_shape;
  for (int l : xfree) {
    px.push_back(dim_of(x, l));
    out_shape.push_back(size[size_t(l)]);
    labels.push_back(l);
  }
  for (int l : summed) {
    px.push_back(dim_of(x, l));
    py.push_back(dim_of(y, l));
  }
  for (int l : yfree) {
    py.push_back(dim_of(y, l));
    out_shape.push_back(size[size_t(l)]);
    labels.push_back(l);
  }
  const int64_t m = extent(xfree), k = extent(summed), n = extent(yfree);
  Dims xs = batch_shape, ys = batch_shape;
  xs.push_back(m);
  xs.push_back(k);
  ys.push_back(k);
  ys.push_back(n);
  const Tensor xt = x.t.permute(px).reshape(xs), yt = y.t.permute(py).reshape(ys);
  // No sum: [..., m, 1] * [..., 1, n] elementwise (a batch of 1x1 products would be slow).
  if (summed.empty()) return {mul(xt, yt).reshape(out_shape), labels};
  if (m == 1 && n == 1 && !batch.empty()) {  // batched dots: multiply, then one summing product
    Dims flat = batch_shape;
    flat.push_back(k);
    Operand prod{mul(xt, yt.transpose(-1, -2)).reshape(flat), batch};
    prod.labels.push_back(summed.front());
    std::vector<bool> drop(keep.size(), false);
    drop[size_t(summed.front())] = true;
    return {sum_out(prod, drop).t.reshape(out_shape), labels};
  }
  return {ops::batched_product(xt, yt, kOp).reshape(out_shape), labels};
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(std::string_view(lhs).substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  OX_CHECK(terms.size() == tensors.size(), Value, kOp, "equation \"", equation, "\" names ",
           terms.size(), " operand(s), got ", tensors.size());
  ResultType rt;
  for (const Tensor& t : tensors) {
    ops::impl_of(t, kOp);
    ops::common_device(kOp, {&tensors.front(), &t});
    rt.tensor(t.dtype(), t.dim() == 0);
  }
  const DType dtype = rt.get();
  OX_CHECK(dtype != kBool, DType, kOp, "is not defined for bool tensors");

  // Labels per dim of each operand, the ellipsis right-aligned to the widest one.
  int64_t ell_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t named = int64_t(terms[i].letters.size()), dims = tensors[i].dim();
    OX_CHECK(terms[i].ellipsis_at >= 0 ? dims >= named : dims == named, Shape, kOp, "equation \"",
             equation, "\": operand ", i, " of shape ", tensors[i].shape(), " has ", dims,
             " dims, its subscripts name ", named);
    if (terms[i].ellipsis_at >= 0) ell_rank = std::max(ell_rank, dims - named);
  }
  const int num_labels = kEllipsis + int(ell_rank);
  std::vector<int> count(size_t(num_labels), 0);
  std::vector<int64_t> size(size_t(num_labels), 1);
  std::vector<Operand> ops_list;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& term = terms[i];
    Operand o{tensors[i].to(dtype), {}};
    const int64_t e = o.t.dim() - int64_t(term.letters.size());
    for (size_t j = 0; j <= term.letters.size(); ++j) {
      if (int(j) == term.ellipsis_at)
        for (int64_t d = 0; d < e; ++d) o.labels.push_back(kEllipsis + int(ell_rank - e + d));
      if (j < term.letters.size()) o.labels.push_back(term.letters[j]);
    }
    // A label repeated within an operand reads its diagonal.
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d];
      ++count[size_t(l)];
      for (size_t d2 = d + 1; d2 < o.labels.size();) {
        if (o.labels[d2] != l) {
          ++d2;
          continue;
        }
        OX_CHECK(o.t.size(int64_t(d)) == o.t.size(int64_t(d2)), Shape, kOp, "equation \"", equation,
                 "\": subscript '", label_name(l), "' is repeated in operand ", i,
                 " over dims of sizes ", o.t.size(int64_t(d)), " and ", o.t.size(int64_t(d2)));
        ++count[size_t(l)];
        o.t = diagonal_at(o.t, int64_t(d), int64_t(d2));
        o.labels.erase(o.labels.begin() + int64_t(d2));
      }
    }
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d];
      const int64_t s = o.t.size(int64_t(d));
      OX_CHECK(s == size[size_t(l)] || s == 1 || size[size_t(l)] == 1, Shape, kOp, "equation \"",
               equation, "\": subscript '", label_name(l), "' has sizes ", size[size_t(l)], " and ",
               s, " (operand ", i, " of shape ", tensors[i].shape(), ")");
      if (s != 1) size[size_t(l)] = s;
    }
    ops_list.push_back(std::move(o));
  }

  // The output labels.
  std::vector<int> out;
  if (arrow == std::string::npos) {
    for (int l = kEllipsis; l < num_labels; ++l) out.push_back(l);
    for (int l = 0; l < kLetters; ++l)
      if (count[size_t(l)] == 1) out.push_back(l);
  } else {
    const Term t = parse_term(std::string_view(eq).substr(arrow + 2), equation);
    for (size_t j = 0; j <= t.letters.size(); ++j) {
      if (int(j) == t.ellipsis_at)
        for (int l = kEllipsis; l < num_labels; ++l) out.push_back(l);
      if (j == t.letters.size()) break;
      const int l = t.letters[j];
      OX_CHECK(count[size_t(l)] > 0, Value, kOp, "equation \"", equation, "\": output subscript '",
               label_name(l), "' is not in any operand");
      OX_CHECK(!has(out, l), Value, kOp, "equation \"", equation, "\": output subscript '",
               label_name(l), "' appears twice");
      out.push_back(l);
    }
  }

  // Size-1 dims broadcast to their label's size (a view).
  for (Operand& o : ops_list) {
    Dims target;
    for (int l : o.labels) target.push_back(size[size_t(l)]);
    if (!(target == o.t.shape())) o.t = o.t.expand(target);
  }
  std::vector<bool> in_output(size_t(num_labels), false);
  for (int l : out) in_output[size_t(l)] = true;
  // Whether label l is needed outside operands i and j (-1: none).
  auto needed = [&](int l, size_t i, size_t j) {
    if (in_output[size_t(l)]) return true;
    for (size_t k = 0; k < ops_list.size(); ++k)
      if (k != i && k != j && has(ops_list[k].labels, l)) return true;
    return false;
  };
  auto keep_mask = [&](size_t i, size_t j) {
    std::vector<bool> keep(size_t(num_labels), false);
    for (int l = 0; l < num_labels; ++l) keep[size_t(l)] = needed(l, i, j);
    return keep;
  };
  // Labels only one operand has and the output lacks are summed there first.
  for (size_t i = 0; i < ops_list.size(); ++i) {
    std::vector<bool> keep = keep_mask(i, i), drop(size_t(num_labels), false);
    for (int l : ops_list[i].labels) drop[size_t(l)] = !keep[size_t(l)];
    ops_list[i] = sum_out(ops_list[i], drop);
  }
  // Pairwise, the pair whose result is smallest first (ties: the first pair).
  while (ops_list.size() > 1) {
    size_t bi = 0, bj = 1;
    double best = -1;
    for (size_t i = 0; i < ops_list.size(); ++i)
      for (size_t j = i + 1; j < ops_list.size(); ++j) {
        double elements = 1;
        for (int l = 0; l < num_labels; ++l)
          if ((has(ops_list[i].labels, l) || has(ops_list[j].labels, l)) && needed(l, i, j))
            elements *= double(size[size_t(l)]);
        if (best < 0 || elements < best) {
          best = elements;
          bi = i;
          bj = j;
        }
      }
    Operand merged = contract(ops_list[bi], ops_list[bj], keep_mask(bi, bj), size);
    ops_list.erase(ops_list.begin() + int64_t(bj));
    ops_list.erase(ops_list.begin() + int64_t(bi));
    ops_list.push_back(std::move(merged));
  }
  const Operand& last = ops_list.front();
  Dims perm;
  for (int l : out)
    perm.push_back(
        int64_t(std::find(last.labels.begin(), last.labels.end(), l) - last.labels.begin()));
  return last.t.permute(perm);
}

}  // namespace ox
