#!/usr/bin/env python3
"""The transformers side of oxmera_bench's Hugging Face rows (bench/oxmera_hf.cpp measures
oxmera's the same way): a model of the given config with random weights, its prefill (one
forward pass of --prefill tokens into a cache) or its decode (--decode greedy steps after an
untimed --prompt-token prompt), or the tokenizers library encoding the fixture corpus. Prints
"oxbench-seconds S": the median of five timed runs after one warm-up.

Run by oxmera_bench on the newest torch wheel, transformers and tokenizers from PyPI in
build/torch-wheel (scripts/install-deps.sh --bench), and by bench/gpu_torch.py on a GPU
(--device=cuda) with the GPU machine's own.
"""

import argparse
import json
import os
import statistics
import time
import warnings


def prompt_ids(torch, batch, length):
    return torch.tensor([[(7 * i + 3 * b) % 1000 for i in range(length)] for b in range(batch)])


def median_after_setup(setup, timed, finish, reps=5):
    times = []
    for r in range(-1, reps):
        state = setup()
        finish()
        start = time.perf_counter()
        timed(state)
        finish()
        if r >= 0:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def model_seconds(args):
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = json.loads(args.config)
    config = AutoConfig.for_model(config.pop("model_type"), **config)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    # transformers 4.56 renamed from_config's torch_dtype to dtype.
    major, minor = (int(v) for v in transformers.__version__.split(".")[:2])
    dtype_arg = {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": dtype}
    device = torch.device(args.device)
    with device:  # the weights made where they run
        model = AutoModelForCausalLM.from_config(config, **dtype_arg).eval()
    # On a GPU a timing ends when the device has finished.
    finish = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    with torch.no_grad():
        if args.kind == "prefill":
            ids = prompt_ids(torch, args.batch, args.prefill).to(device)
            return median_after_setup(lambda: None, lambda _: model(ids, use_cache=True), finish)
        prompt = prompt_ids(torch, args.batch, args.prompt).to(device)

        def setup():
            out = model(prompt, use_cache=True)
            return [out.logits, out.past_key_values]

        def decode(state):
            logits, past = state
            for _ in range(args.decode):
                next_ids = logits[:, -1].argmax(-1, keepdim=True)
                out = model(next_ids, past_key_values=past, use_cache=True)
                logits, past = out.logits, out.past_key_values
            float(logits.float().sum())

        return median_after_setup(setup, decode, finish)


def tokenize_seconds(args):
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(os.path.join(args.fixtures, "gpt2", "tokenizer.json"))
    with open(os.path.join(args.fixtures, "corpus.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    times = []
    tok.encode_batch(lines)
    for _ in range(5):
        start = time.perf_counter()
        tok.encode_batch(lines)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def quiet():
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main():
    quiet()
    parser = argparse.ArgumentParser()
    for name in ("row", "config", "dtype", "kind", "fixtures"):
        parser.add_argument("--" + name, default="")
    parser.add_argument("--device", default="cpu")
    for name in ("threads", "batch", "prefill", "prompt", "decode"):
        parser.add_argument("--" + name, type=int, default=1)
    args = parser.parse_args()
    seconds = tokenize_seconds(args) if args.kind == "tokenize" else model_seconds(args)
    print("oxbench-seconds %.9g" % seconds)


if __name__ == "__main__":
    main()
