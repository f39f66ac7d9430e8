#!/usr/bin/env python3
"""Writes the PyTorch checkpoint fixtures of tests/io/pytorch_*_test.cpp into
tests/io/fixtures/pytorch/. Run once, by hand, with Debian's python3-torch (1.13.1):

    /usr/bin/python3 scripts/make-pytorch-fixtures.py

CI does not need torch: the files are committed. Every value is a closed form of arange, so
the C++ tests compute the expected values on their own (the formulas are repeated there):

  dtypes_{zip,legacy}.pt   f32 = arange(6).reshape(2,3)*0.5-1, f64 = arange(5)/3,
                           f16 = arange(4)*0.25-0.5, bf16 = arange(4)*0.5+1,
                           i64 = (arange(5)-2)*10**12, i32 = (arange(5)-2)*100000,
                           i16 = (arange(5)-2)*1000, i8 = arange(-3,3), u8 = arange(250,256),
                           bool = arange(5)%2==0, scalar = tensor(2.5), empty = zeros(0,3)
  views_{zip,legacy}.pt    base = arange(24.).reshape(4,6) and views of its storage:
                           row = base[1] (offset 6), cols = base[:,2:4] (offset 2, strides 6,1),
                           t = base.t() (strides 1,6), tail = base.view(-1)[20:] (offset 20)
  module_{zip,legacy}.pt   Sequential(Linear(3,4), BatchNorm1d(4)).state_dict() with
                           0.weight = arange(12).reshape(4,3)/10, 0.bias = arange(4)-1,
                           1.weight = arange(4)+1, 1.bias = arange(4)/4,
                           1.running_mean = arange(4)*0.1, 1.running_var = arange(4)+0.5,
                           1.num_batches_tracked = 7 (i64 scalar)
  nested_zip.pt            {"model": <module state dict>, "epoch": 3, "lr": 0.1,
                           "optimizer": {"state": {0: {"step": tensor(5.),
                           "exp_avg": arange(4.)}}, "param_groups": [{"lr": 0.1,
                           "params": [0]}]}, "param": Parameter(arange(3.)),
                           "list": [arange(2.), "text", arange(3)], "device": device("cpu")}
  deflate_zip.pt           dtypes_zip.pt with every entry re-stored deflated
  bigendian_zip.pt         dtypes_zip.pt with archive/byteorder = "big"
"""

import io
import os
import zipfile

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "fixtures",
                   "pytorch")


def dtypes():
    a = torch.arange
    return {
        "f32": a(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1,
        "f64": a(5, dtype=torch.float64) / 3,
        "f16": a(4, dtype=torch.float16) * 0.25 - 0.5,
        "bf16": a(4, dtype=torch.bfloat16) * 0.5 + 1,
        "i64": (a(5, dtype=torch.int64) - 2) * 10**12,
        "i32": (a(5, dtype=torch.int32) - 2) * 100000,
        "i16": (a(5, dtype=torch.int16) - 2) * 1000,
        "i8": a(-3, 3, dtype=torch.int8),
        "u8": a(250, 256, dtype=torch.uint8),
        "bool": a(5) % 2 == 0,
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
    }


def views():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return {"base": base, "row": base[1], "cols": base[:, 2:4], "t": base.t(),
            "tail": base.view(-1)[20:]}


def module_state():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    with torch.no_grad():
        m[0].weight.copy_(torch.arange(12.).reshape(4, 3) / 10)
        m[0].bias.copy_(torch.arange(4.) - 1)
        m[1].weight.copy_(torch.arange(4.) + 1)
        m[1].bias.copy_(torch.arange(4.) / 4)
        m[1].running_mean.copy_(torch.arange(4.) * 0.1)
        m[1].running_var.copy_(torch.arange(4.) + 0.5)
        m[1].num_batches_tracked.fill_(7)
    return m.state_dict()


def nested():
    return {
        "model": module_state(),
        "epoch": 3,
        "lr": 0.1,
        "optimizer": {"state": {0: {"step": torch.tensor(5.), "exp_avg": torch.arange(4.)}},
                      "param_groups": [{"lr": 0.1, "params": [0]}]},
        "param": torch.nn.Parameter(torch.arange(3.)),
        "list": [torch.arange(2.), "text", torch.arange(3)],
        "device": torch.device("cpu"),
    }


def save(obj, name, legacy=False):
    path = os.path.join(OUT, name)
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    return path


def rezip(source, name, compression, byteorder=None):
    """A copy of the zip `source` with every entry stored with `compression` (and a byteorder
    record holding `byteorder` when given)."""
    with zipfile.ZipFile(source) as zin:
        entries = [(info.filename, zin.read(info.filename)) for info in zin.infolist()]
    buffer = io.BytesIO()
    prefix = entries[0][0].split("/")[0]
    if byteorder is not None:  # torch 1.13 writes no byteorder record (2.x writes "little")
        entries = [(f, d) for f, d in entries if not f.endswith("/byteorder")]
        entries.append((prefix + "/byteorder", byteorder))
    with zipfile.ZipFile(buffer, "w", compression) as zout:
        for filename, data in entries:
            zout.writestr(filename, data)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(buffer.getvalue())


def main():
    os.makedirs(OUT, exist_ok=True)
    for legacy, suffix in ((False, "zip"), (True, "legacy")):
        save(dtypes(), f"dtypes_{suffix}.pt", legacy)
        save(views(), f"views_{suffix}.pt", legacy)
        save(module_state(), f"module_{suffix}.pt", legacy)
    save(nested(), "nested_zip.pt")
    source = os.path.join(OUT, "dtypes_zip.pt")
    rezip(source, "deflate_zip.pt", zipfile.ZIP_DEFLATED)
    rezip(source, "bigendian_zip.pt", zipfile.ZIP_STORED, byteorder=b"big")
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, torch {torch.__version__}")


if __name__ == "__main__":
    main()
