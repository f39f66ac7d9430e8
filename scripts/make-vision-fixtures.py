#!/usr/bin/env python3
"""Writes tests/nn/fixtures/vision.json: torch.nn.functional.interpolate, pixel_shuffle,
pixel_unshuffle and instance_norm on fixed inputs, their outputs and input gradients (and
instance_norm's weight gradient and running statistics). Run once, by hand, with the
torch wheel of `scripts/install-deps.sh --bench`:

    PYTHONPATH=build/torch-wheel /usr/bin/python3 scripts/make-vision-fixtures.py

Inputs are f64 closed forms (repeated in tests/nn/vision_test.cpp): element j is
sin(0.37 j + 0.1) + 0.01 j; the gradient is that of sum(out * g) with g[j] = 0.5 + (5 j % 7) / 7.
instance_norm's affine weight is 1 + 0.1 c and bias 0.05 c; its running statistics start at 0
and 1 with momentum 0.1.
"""

import json
import math
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "fixtures",
                   "vision.json")

# (input shape, interpolate's keyword arguments)
INTERPOLATE = [
    ([1, 2, 5], dict(size=[8], mode="nearest")),
    ([1, 2, 7], dict(size=[3], mode="nearest")),
    ([1, 2, 5], dict(scale_factor=[1.7], mode="nearest")),
    ([1, 1, 5], dict(size=[8], mode="nearest-exact")),
    ([1, 1, 7], dict(scale_factor=[0.6], mode="nearest-exact")),
    ([2, 1, 3, 4], dict(scale_factor=[2.0], mode="nearest")),
    ([1, 2, 2, 3, 2], dict(size=[3, 5, 4], mode="nearest")),
    ([1, 2, 5], dict(size=[9], mode="linear")),
    ([1, 2, 5], dict(size=[9], mode="linear", align_corners=True)),
    ([1, 2, 9], dict(size=[4], mode="linear")),
    ([1, 1, 6], dict(scale_factor=[1.5], mode="linear")),
    ([1, 1, 6], dict(scale_factor=[1.5], mode="linear", recompute_scale_factor=True)),
    ([2, 2, 3, 4], dict(size=[5, 7], mode="bilinear")),
    ([2, 2, 3, 4], dict(size=[5, 7], mode="bilinear", align_corners=True)),
    ([1, 1, 6, 5], dict(size=[4, 3], mode="bilinear")),
    ([1, 1, 4, 4], dict(scale_factor=[2.0, 1.5], mode="bilinear")),
    ([1, 2, 4, 5], dict(size=[7, 6], mode="bicubic")),
    ([1, 2, 4, 5], dict(size=[7, 6], mode="bicubic", align_corners=True)),
    ([1, 1, 6, 6], dict(size=[3, 4], mode="bicubic")),
    ([1, 1, 2, 3, 2], dict(size=[3, 4, 5], mode="trilinear")),
    ([1, 1, 2, 3, 2], dict(scale_factor=[2.0], mode="trilinear", align_corners=True)),
    ([1, 1, 1, 1], dict(size=[3, 2], mode="bilinear")),
]
SHUFFLE = [([1, 8, 2, 3], 2), ([2, 1, 9, 2, 2], 3), ([4, 3, 2], 2)]
UNSHUFFLE = [([1, 2, 4, 6], 2), ([2, 1, 1, 3, 3], 3)]
# (input shape, affine, running statistics)
INSTANCE_NORM = [([2, 3, 5], False, False), ([2, 3, 4, 3], True, False), ([3, 2, 2, 2, 3], True, True),
                 ([1, 2, 7], False, True)]


def inp(shape):
    n = math.prod(shape)
    return torch.tensor([math.sin(0.37 * j + 0.1) + 0.01 * j for j in range(n)],
                        dtype=torch.float64).reshape(shape).requires_grad_()


def record(x, out):
    g = torch.tensor([0.5 + (5 * j % 7) / 7 for j in range(out.numel())],
                     dtype=torch.float64).reshape(out.shape)
    (out * g).sum().backward()
    return {"out_shape": list(out.shape), "out": out.detach().reshape(-1).tolist(),
            "grad": x.grad.reshape(-1).tolist()}


def main():
    cases = []
    for shape, kw in INTERPOLATE:
        x = inp(shape)
        args = dict(kw)
        if "scale_factor" in args and len(args["scale_factor"]) == 1:
            args["scale_factor"] = args["scale_factor"][0]
        cases.append({"op": "interpolate", "shape": shape, "options": kw,
                      **record(x, F.interpolate(x, **args))})
    for shape, r in SHUFFLE:
        x = inp(shape)
        cases.append({"op": "pixel_shuffle", "shape": shape, "factor": r,
                      **record(x, F.pixel_shuffle(x, r))})
    for shape, r in UNSHUFFLE:
        x = inp(shape)
        cases.append({"op": "pixel_unshuffle", "shape": shape, "factor": r,
                      **record(x, F.pixel_unshuffle(x, r))})
    for shape, affine, running in INSTANCE_NORM:
        x = inp(shape)
        c = shape[1]
        w = torch.tensor([1 + 0.1 * i for i in range(c)], dtype=torch.float64).requires_grad_()
        b = torch.tensor([0.05 * i for i in range(c)], dtype=torch.float64).requires_grad_()
        rm = torch.zeros(c, dtype=torch.float64) if running else None
        rv = torch.ones(c, dtype=torch.float64) if running else None
        out = F.instance_norm(x, rm, rv, w if affine else None, b if affine else None,
                              use_input_stats=True, momentum=0.1, eps=1e-5)
        case = {"op": "instance_norm", "shape": shape, "affine": affine, "running": running,
                **record(x, out)}
        if affine:
            case["weight_grad"] = w.grad.tolist()
            case["bias_grad"] = b.grad.tolist()
        if running:
            case["running_mean"] = rm.tolist()
            case["running_var"] = rv.tolist()
        cases.append(case)
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print("wrote", OUT, "-", len(cases), "cases")


if __name__ == "__main__":
    main()
