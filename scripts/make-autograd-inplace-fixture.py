#!/usr/bin/env python3
"""Writes tests/autograd/fixtures/inplace_after_op.json: for each op, whether PyTorch's backward
still works after an in-place write into the op's result or into one of its inputs, and the
gradients it then gives. Run once, by hand, with the torch wheel of
`scripts/install-deps.sh --bench`:

    PYTHONPATH=build/torch-wheel /usr/bin/python3 scripts/make-autograd-inplace-fixture.py

tests/autograd/inplace_after_op_test.cpp builds the same graphs in oxmera: what PyTorch accepts
must work there too, with PyTorch's gradients. Inputs are f64 and closed forms (repeated in the
test): element j of input i is 0.3 + 0.65 * ((7 j + 3 i) % 11) / 11 + 0.001 j. Each case is
  none  y = op(x...), y.sum().backward()
  out   y = op(x...), y.mul_(2), then the same
  inI   y = op(x...), x[I].mul_(2), then the same
with every x a non-leaf clone of a leaf that requires grad; the gradients are the leaves'.
"""

import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "autograd",
                   "fixtures", "inplace_after_op.json")


def value(i, n):
    return [0.3 + 0.65 * ((7 * j + 3 * i) % 11) / 11 + 0.001 * j for j in range(n)]


IDX = lambda *v: torch.tensor(v, dtype=torch.int64)

# name, input shapes, the op (first output when it has several).
OPS = [
    # unary elementwise
    ("exp", [[2, 3]], lambda x: torch.exp(x)),
    ("exp2", [[2, 3]], lambda x: torch.exp2(x)),
    ("expm1", [[2, 3]], lambda x: torch.expm1(x)),
    ("log", [[2, 3]], lambda x: torch.log(x)),
    ("log2", [[2, 3]], lambda x: torch.log2(x)),
    ("log10", [[2, 3]], lambda x: torch.log10(x)),
    ("log1p", [[2, 3]], lambda x: torch.log1p(x)),
    ("sqrt", [[2, 3]], lambda x: torch.sqrt(x)),
    ("rsqrt", [[2, 3]], lambda x: torch.rsqrt(x)),
    ("reciprocal", [[2, 3]], lambda x: torch.reciprocal(x)),
    ("square", [[2, 3]], lambda x: torch.square(x)),
    ("abs", [[2, 3]], lambda x: torch.abs(x)),
    ("neg", [[2, 3]], lambda x: torch.neg(x)),
    ("sign", [[2, 3]], lambda x: torch.sign(x)),
    ("floor", [[2, 3]], lambda x: torch.floor(x)),
    ("sin", [[2, 3]], lambda x: torch.sin(x)),
    ("cos", [[2, 3]], lambda x: torch.cos(x)),
    ("tan", [[2, 3]], lambda x: torch.tan(x)),
    ("asin", [[2, 3]], lambda x: torch.asin(x)),
    ("acos", [[2, 3]], lambda x: torch.acos(x)),
    ("atan", [[2, 3]], lambda x: torch.atan(x)),
    ("sinh", [[2, 3]], lambda x: torch.sinh(x)),
    ("cosh", [[2, 3]], lambda x: torch.cosh(x)),
    ("tanh", [[2, 3]], lambda x: torch.tanh(x)),
    ("sigmoid", [[2, 3]], lambda x: torch.sigmoid(x)),
    ("erf", [[2, 3]], lambda x: torch.erf(x)),
    ("relu", [[2, 3]], lambda x: torch.relu(x - 0.6)),
    ("gelu", [[2, 3]], lambda x: F.gelu(x)),
    ("silu", [[2, 3]], lambda x: F.silu(x)),
    ("softplus", [[2, 3]], lambda x: F.softplus(x)),
    ("elu", [[2, 3]], lambda x: F.elu(x - 0.6)),
    ("leaky_relu", [[2, 3]], lambda x: F.leaky_relu(x - 0.6, 0.1)),
    ("mish", [[2, 3]], lambda x: F.mish(x)),
    ("logsigmoid", [[2, 3]], lambda x: F.logsigmoid(x)),
    ("clamp", [[2, 3]], lambda x: torch.clamp(x, 0.4, 0.8)),
    # with a scalar
    ("add_scalar", [[2, 3]], lambda x: x + 2),
    ("sub_scalar", [[2, 3]], lambda x: x - 2),
    ("mul_scalar", [[2, 3]], lambda x: x * 2),
    ("div_scalar", [[2, 3]], lambda x: x / 2),
    ("pow_scalar", [[2, 3]], lambda x: x ** 3),
    # binary, one operand broadcast
    ("add", [[2, 3], [3]], lambda x, y: x + y),
    ("sub", [[2, 3], [3]], lambda x, y: x - y),
    ("mul", [[2, 3], [3]], lambda x, y: x * y),
    ("div", [[2, 3], [3]], lambda x, y: x / y),
    ("pow", [[2, 3], [3]], lambda x, y: torch.pow(x, y)),
    ("atan2", [[2, 3], [3]], lambda x, y: torch.atan2(x, y)),
    ("maximum", [[2, 3], [3]], lambda x, y: torch.maximum(x, y)),
    ("minimum", [[2, 3], [3]], lambda x, y: torch.minimum(x, y)),
    ("hypot", [[2, 3], [3]], lambda x, y: torch.hypot(x, y)),
    ("logaddexp", [[2, 3], [3]], lambda x, y: torch.logaddexp(x, y)),
    # reductions and scans
    ("sum", [[2, 3]], lambda x: x.sum(1)),
    ("mean", [[2, 3]], lambda x: x.mean(1)),
    ("prod", [[2, 3]], lambda x: x.prod(1)),
    ("amax", [[2, 3]], lambda x: x.amax(1)),
    ("max_dim", [[2, 3]], lambda x: x.max(1)[0]),
    ("norm", [[2, 3]], lambda x: torch.linalg.vector_norm(x, dim=1)),
    ("std", [[2, 3]], lambda x: x.std(1)),
    ("var", [[2, 3]], lambda x: x.var(1)),
    ("logsumexp", [[2, 3]], lambda x: torch.logsumexp(x, 1)),
    ("cumsum", [[2, 3]], lambda x: torch.cumsum(x, 1)),
    ("cumprod", [[2, 3]], lambda x: torch.cumprod(x, 1)),
    ("softmax", [[2, 3]], lambda x: torch.softmax(x, 1)),
    ("log_softmax", [[2, 3]], lambda x: torch.log_softmax(x, 1)),
    ("sort", [[2, 3]], lambda x: torch.sort(x, 1)[0]),
    ("topk", [[2, 3]], lambda x: torch.topk(x, 2, 1)[0]),
    # products
    ("matmul", [[2, 3], [3, 4]], lambda x, y: x @ y),
    ("mm", [[2, 3], [3, 4]], lambda x, y: torch.mm(x, y)),
    ("bmm", [[2, 2, 3], [2, 3, 2]], lambda x, y: torch.bmm(x, y)),
    ("addmm", [[4], [2, 3], [3, 4]], lambda c, x, y: torch.addmm(c, x, y)),
    ("mv", [[2, 3], [3]], lambda x, y: torch.mv(x, y)),
    ("dot", [[3], [3]], lambda x, y: torch.dot(x, y)),
    ("linear", [[2, 3], [4, 3], [4]], lambda x, w, b: F.linear(x, w, b)),
    # joins, indexing, selection
    ("cat", [[2, 3], [1, 3]], lambda x, y: torch.cat([x, y], 0)),
    ("stack", [[2, 3], [2, 3]], lambda x, y: torch.stack([x, y], 0)),
    ("gather", [[2, 3]], lambda x: torch.gather(x, 1, IDX([2, 0], [1, 1]))),
    ("index_select", [[2, 3]], lambda x: torch.index_select(x, 1, IDX(2, 0, 2))),
    ("where", [[2, 3], [2, 3]], lambda x, y: torch.where(x > 0.6, x, y)),
    ("masked_fill", [[2, 3]], lambda x: x.masked_fill(x > 0.6, 0.5)),
    ("embedding", [[4, 3]], lambda w: F.embedding(IDX(3, 0, 3), w)),
    # nn
    ("layer_norm", [[2, 3], [3], [3]], lambda x, w, b: F.layer_norm(x, [3], w, b)),
    ("cross_entropy", [[2, 3]], lambda x: F.cross_entropy(x, IDX(2, 0))),
    ("mse_loss", [[2, 3], [2, 3]], lambda x, y: F.mse_loss(x, y)),
    ("conv1d", [[1, 2, 5], [3, 2, 2], [3]], lambda x, w, b: F.conv1d(x, w, b)),
    ("conv2d", [[1, 2, 3, 3], [2, 2, 2, 2], [2]], lambda x, w, b: F.conv2d(x, w, b)),
    ("max_pool2d", [[1, 1, 4, 4]], lambda x: F.max_pool2d(x, 2)),
    ("avg_pool2d", [[1, 1, 4, 4]], lambda x: F.avg_pool2d(x, 2)),
    ("adaptive_avg_pool2d", [[1, 1, 4, 4]], lambda x: F.adaptive_avg_pool2d(x, 2)),
]


def run(shapes, op, case):
    leaves = [torch.tensor(value(i, torch.Size(s).numel()), dtype=torch.float64).reshape(s)
              .requires_grad_() for i, s in enumerate(shapes)]
    xs = [leaf.clone() for leaf in leaves]
    y = op(*xs)
    if case == "out":
        y.mul_(2)
    elif case.startswith("in"):
        xs[int(case[2:])].mul_(2)
    try:
        y.sum().backward()
    except RuntimeError:
        return {"ok": False}
    return {"ok": True, "grads": [leaf.grad.reshape(-1).tolist() for leaf in leaves]}


def main():
    ops = []
    for name, shapes, op in OPS:
        cases = ["none", "out"] + ["in%d" % i for i in range(len(shapes))]
        ops.append({"name": name, "shapes": shapes,
                    "cases": {c: run(shapes, op, c) for c in cases}})
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "ops": ops}, f, indent=1)
        f.write("\n")
    refused = [(o["name"], c) for o in ops for c, r in o["cases"].items() if not r["ok"]]
    print("wrote", OUT, "-", len(ops), "ops; PyTorch refuses", len(refused), "cases")


if __name__ == "__main__":
    main()
