#!/usr/bin/env python3
"""Writes the seed corpus of the safetensors fuzz target (tests/fuzz/corpus/safetensors/):
small valid files and one of each kind of broken file. Run once; the output is committed.
Crashes the fuzzer finds are added to that folder by hand as regression files."""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")


def pack(header, data=b"", pad=True):
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


SEEDS = {
    "valid_empty": pack({}),
    "valid_one_f32": pack({"w": entry("F32", [2, 2], 0, 16)}, bytes(range(16))),
    "valid_metadata": pack({"__metadata__": {"format": "pt"}, "b": entry("I64", [1], 0, 8),
                            "a": entry("U8", [3], 8, 11)}, bytes(11)),
    "valid_all_dtypes": pack({
        "f64": entry("F64", [1], 0, 8), "i64": entry("I64", [1], 8, 16),
        "f32": entry("F32", [1], 16, 20), "i32": entry("I32", [1], 20, 24),
        "f16": entry("F16", [1], 24, 26), "bf16": entry("BF16", [1], 26, 28),
        "i16": entry("I16", [1], 28, 30), "i8": entry("I8", [1], 30, 31),
        "u8": entry("U8", [1], 31, 32), "bool": entry("BOOL", [2], 32, 34)}, bytes(34)),
    "valid_scalar_and_empty": pack({"s": entry("F32", [], 0, 4), "z": entry("F32", [0, 3], 4, 4)},
                                   bytes(4)),
    "valid_unpadded": pack({"x": entry("U8", [1], 0, 1)}, b"\x01", pad=False),
    "bad_short": b"\x08\x00\x00",
    "bad_header_too_long": struct.pack("<Q", 1 << 40) + b"{}",
    "bad_not_utf8": pack(b'{"\xff":1}'),
    "bad_not_object": pack([1, 2]),
    "bad_unknown_dtype": pack({"x": entry("F7", [1], 0, 1)}, b"\0"),
    "bad_foreign_dtype": pack({"x": entry("U16", [1], 0, 2)}, b"\0\0"),
    "bad_negative_dim": pack({"x": entry("U8", [-1], 0, 1)}, b"\0"),
    "bad_float_dim": pack({"x": entry("U8", [1.5], 0, 1)}, b"\0"),
    "bad_offsets": pack({"x": {"dtype": "U8", "shape": [1], "data_offsets": [0]}}, b"\0"),
    "bad_not_at_zero": pack({"x": entry("U8", [1], 1, 2)}, b"\0\0"),
    "bad_hole": pack({"x": entry("U8", [1], 0, 1), "y": entry("U8", [1], 2, 3)}, b"\0\0\0"),
    "bad_overlap": pack({"x": entry("U8", [2], 0, 2), "y": entry("U8", [2], 1, 3)}, b"\0\0\0"),
    "bad_past_buffer": pack({"x": entry("U8", [4], 0, 4)}, b"\0"),
    "bad_size": pack({"x": entry("F32", [2], 0, 4)}, b"\0" * 4),
    "bad_overflow": pack({"x": entry("F64", [4294967296, 4294967296], 0, 8)}, b"\0" * 8),
    "bad_trailing": pack({"x": entry("U8", [1], 0, 1)}, b"\0\0"),
    "bad_duplicate": pack(b'{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                          b'"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"),
    "bad_metadata": pack({"__metadata__": {"k": 1}}),
    "bad_deep": pack(b'{"x":{"dtype":"U8","shape":[[[1]]],"data_offsets":[0,1]}}', b"\0"),
}

os.makedirs(OUT, exist_ok=True)
for name, content in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(content)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
