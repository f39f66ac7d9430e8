"""PyTorch's side of `oxmera bench --device cuda`: the op rows of docs/WORKLOADS.md on a CUDA
GPU, and the Hugging Face model rows with transformers (bench/hf_reference.py), with the same
shapes and units as bench/rows.cpp (seeded uniform inputs in [-1, 1), not the same numbers:
timing does not depend on them), timed with CUDA events (median
of many calls after a warm-up). scripts/gpu-check.sh runs both and prints the ratios.

usage: python3 bench/gpu_torch.py [ROW ...]   (prints "row value unit" lines)
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference  # noqa: E402  (the Hugging Face rows: transformers, as on the CPU)

K_VEC, K_SQUARE = 1 << 24, 4096
K_BATCH, K_BMM_M, K_BMM_K, K_BMM_N = 64, 128, 64, 128
K_SOFTMAX_ROWS, K_SOFTMAX_COLS = 4096, 1024
K_SMALL_NUMEL, K_SMALL_CALLS, K_CHAIN_OPS = 8, 10000, 1000
K_CHOL_BATCH, K_CHOL_N, K_SOLVE_N, K_SOLVE_RHS, K_EIGH_N = 4096, 32, 512, 64, 256
# The Hugging Face rows (bench/harness.h: kGpt2Config, kLlamaConfig and the token counts).
K_PREFILL, K_PROMPT, K_DECODE = 512, 16, 32
GPT2_CONFIG = ('{"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, '
               '"n_layer": 12, "n_head": 12}')
LLAMA_CONFIG = ('{"model_type": "llama", "vocab_size": 32000, "hidden_size": 768, '
                '"intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 12, '
                '"num_key_value_heads": 4, "max_position_embeddings": 2048, '
                '"tie_word_embeddings": false}')
GIGA = 1e-9
DEV = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False  # oxmera's default ("highest")


def rand(shape, seed, dtype=torch.float32):
    # The exact inputs matter little for timing; a seeded draw keeps the large rows fast to make.
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.rand(shape, generator=g) * 2 - 1).to(dtype).to(DEV)


def median_seconds(fn, reps=50):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def spd(batch, n):
    m = rand((batch, n, n), 1, torch.float64)
    return m @ m.transpose(-1, -2) / n + torch.eye(n, dtype=torch.float64, device=DEV)


def rows():
    sq = float(K_SQUARE) ** 2
    gemm = lambda b, m, k, n: 2.0 * b * m * k * n * GIGA
    table = {}

    def sgemm(n):
        a, b = rand((n, n), 1), rand((n, n), 2)
        return median_seconds(lambda: a @ b), "GFLOP/s", gemm(1, n, n, n)

    table["sgemm256"] = lambda: sgemm(256)
    table["sgemm1024"] = lambda: sgemm(1024)
    table["sgemm2048"] = lambda: sgemm(2048)

    def bmm():
        a, b = rand((K_BATCH, K_BMM_M, K_BMM_K), 1), rand((K_BATCH, K_BMM_K, K_BMM_N), 2)
        return median_seconds(lambda: torch.bmm(a, b)), "GFLOP/s", gemm(K_BATCH, K_BMM_M, K_BMM_K, K_BMM_N)

    def add16m():
        a, b = rand((K_VEC,), 1), rand((K_VEC,), 2)
        return median_seconds(lambda: a + b), "GB/s", 12.0 * K_VEC * GIGA

    def add_bcast():
        a, r = rand((K_SQUARE, K_SQUARE), 1), rand((K_SQUARE,), 2)
        return median_seconds(lambda: a + r), "GB/s", (8.0 * sq + 4.0 * K_SQUARE) * GIGA

    def sum16m():
        x = rand((K_VEC,), 1)
        return median_seconds(lambda: x.sum()), "GB/s", 4.0 * K_VEC * GIGA

    def sum_rows():
        x = rand((K_SQUARE, K_SQUARE), 1)
        return median_seconds(lambda: x.sum(1)), "GB/s", (4.0 * sq + 4.0 * K_SQUARE) * GIGA

    def softmax():
        x = rand((K_SOFTMAX_ROWS, K_SOFTMAX_COLS), 1)
        return median_seconds(lambda: torch.softmax(x, -1)), "ms", None

    def small_add():
        a, b = rand((K_SMALL_NUMEL,), 1), rand((K_SMALL_NUMEL,), 2)

        def block():
            for _ in range(K_SMALL_CALLS):
                a + b

        return median_seconds(block, reps=5) / K_SMALL_CALLS, "µs/op", None

    def transpose_copy():
        x = rand((K_SQUARE, K_SQUARE), 1)
        return median_seconds(lambda: x.t().contiguous()), "GB/s", 8.0 * sq * GIGA

    def backward_overhead():
        x = rand((K_SMALL_NUMEL,), 1).requires_grad_()

        def chain():
            y = x
            for _ in range(0, K_CHAIN_OPS, 2):
                y = (y * 1.0001) + 0.0001
            y.sum().backward()

        return median_seconds(chain, reps=5) / K_CHAIN_OPS, "µs/op", None

    def cholesky():
        a = spd(K_CHOL_BATCH, K_CHOL_N)
        return median_seconds(lambda: torch.linalg.cholesky(a), reps=10), "ms", None

    def solve():
        a, b = rand((K_SOLVE_N, K_SOLVE_N), 1), rand((K_SOLVE_N, K_SOLVE_RHS), 2)
        return median_seconds(lambda: torch.linalg.solve(a, b), reps=10), "ms", None

    def eigh():
        m = rand((K_EIGH_N, K_EIGH_N), 1, torch.float64)
        a = (m + m.t()) / 2
        return median_seconds(lambda: torch.linalg.eigh(a).eigenvectors, reps=10), "ms", None

    table.update({"bmm": bmm, "add16M": add16m, "add16M_bcast": add_bcast, "sum16M": sum16m,
                  "sum_rows": sum_rows, "softmax": softmax, "small_add": small_add,
                  "transpose_copy": transpose_copy, "backward_overhead": backward_overhead,
                  "cholesky_batched": cholesky, "solve": solve, "eigh": eigh})

    # As bench/rows.cpp's hf_row() reads a row's id.
    def hf(row):
        batch = 8 if "_b8" in row else 1
        args = argparse.Namespace(
            config=GPT2_CONFIG if row.startswith("gpt2_") else LLAMA_CONFIG, batch=batch,
            dtype="bf16" if row.endswith("_bf16") else "f32",
            kind="prefill" if "prefill" in row else "decode", threads=torch.get_num_threads(),
            prefill=K_PREFILL, prompt=K_PROMPT, decode=K_DECODE, device="cuda")
        seconds = hf_reference.model_seconds(args)
        if args.kind == "prefill":
            return seconds, "ms", None
        return seconds, "tokens/s", float(batch * K_DECODE)

    for row in ("gpt2_prefill512", "gpt2_decode_b1", "gpt2_decode_b8", "gpt2_decode_b1_bf16",
                "llama_prefill512", "llama_prefill512_bf16", "llama_decode_b1", "llama_decode_b8",
                "llama_decode_b1_bf16"):
        table[row] = lambda row=row: hf(row)
    return table


def main():
    hf_reference.quiet()
    table = rows()
    wanted = sys.argv[1:] or list(table)
    print(f"torch {torch.__version__}, on {torch.cuda.get_device_name(0)}")
    for row in wanted:
        if row not in table:
            print(f"{row} n/a unknown")
            continue
        seconds, unit, amount = table[row]()
        scale = {"ms": 1e3, "µs/op": 1e6}.get(unit)
        value = amount / seconds if amount is not None else seconds * scale
        print(f"{row} {value:.6g} {unit}", flush=True)


if __name__ == "__main__":
    main()
