#!/usr/bin/env python3
"""Writes the model fixtures of tests/models/ into tests/models/fixtures/. Run once, by hand, with
transformers from PyPI over Debian's python3-torch (verification tooling only):

    apt-get install python3-torch && pip install "transformers>=4.44,<4.46"
    /usr/bin/python3 scripts/make-model-fixtures.py

CI does not need Python: the files are committed. Each folder is a tiny randomly initialized
model as transformers' save_pretrained writes it (config.json, model.safetensors), and
`expected.json`: the input ids of two rows and the logits transformers computes for them in
f32 (for `bert`, BertModel, the last hidden state under an attention mask with padding and token
type ids; for `bert_classifier`, BertForSequenceClassification's logits); for the five causal
models also greedy generation from a prompt, and from two prompts of
different lengths left-padded with an attention mask, token for token. Variants: `gpt2_sharded` (model.safetensors.index.json and its shards), `gpt2_bin`
(pytorch_model.bin), `llama_bf16` (bf16 weights).
"""

import json
import os
import shutil

import tokenizers

import torch
from transformers import (BertConfig, BertForSequenceClassification, BertModel, GPT2Config,
                          GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "fixtures")
VOCAB = 64
IDS = [[5, 17, 3, 42, 8, 8, 61, 0, 29, 11], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]

COMMON = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)

MODELS = {
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32,
                                               n_layer=2, n_head=4)),
    "llama": lambda: LlamaForCausalLM(LlamaConfig(
        **COMMON, rope_theta=500000.0, tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "llama_linear_rope": lambda: LlamaForCausalLM(LlamaConfig(
        **COMMON, attention_bias=True, rope_scaling={"type": "linear", "factor": 2.0})),
    "mistral": lambda: MistralForCausalLM(MistralConfig(**COMMON, sliding_window=4)),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**COMMON, tie_word_embeddings=True)),
}


def write(name, model, generate=False, **save):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, **save)
    for extra in ("generation_config.json",):
        path = os.path.join(folder, extra)
        if os.path.exists(path):
            os.remove(path)
    with torch.no_grad():
        logits = model.float()(torch.tensor(IDS)).logits
    expected = {"input_ids": IDS, "shape": list(logits.shape),
                "logits": [round(float(x), 7) for x in logits.flatten()]}
    if generate:
        prompt = torch.tensor([IDS[0][:6]])
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12,
                             do_sample=False, pad_token_id=0)
        expected["greedy"] = {"prompt": prompt.tolist(), "max_new_tokens": 12,
                              "output": out.tolist()}
        padded = torch.tensor([[0, 0, 0, 9, 4, 33], [12, 7, 50, 2, 19, 23]])
        mask = torch.tensor([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
        out = model.generate(padded, attention_mask=mask, max_new_tokens=8, do_sample=False,
                             pad_token_id=0)
        expected["batched"] = {"input_ids": padded.tolist(), "attention_mask": mask.tolist(),
                               "max_new_tokens": 8, "output": out.tolist()}
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected, f)


BERT_IDS = [[2, 17, 9, 33, 3, 40, 41, 3], [2, 5, 6, 3, 0, 0, 0, 0]]
BERT_MASK = [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0, 0]]
BERT_TYPES = [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0]]


def write_bert(name, model):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder)
    inputs = dict(input_ids=torch.tensor(BERT_IDS), attention_mask=torch.tensor(BERT_MASK),
                  token_type_ids=torch.tensor(BERT_TYPES))
    with torch.no_grad():
        out = model(**inputs)
    values = out.logits if hasattr(out, "logits") else out.last_hidden_state
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"input_ids": BERT_IDS, "attention_mask": BERT_MASK, "token_type_ids": BERT_TYPES,
                   "shape": list(values.shape),
                   "values": [round(float(x), 7) for x in values.flatten()]}, f)


def tokenizer_size(path):
    return tokenizers.Tokenizer.from_file(path).get_vocab_size()


def main():
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model = make().eval()
        write(name, model, generate=True)
        if name == "gpt2":
            write("gpt2_sharded", model, max_shard_size="40KB")
            write("gpt2_bin", model, safe_serialization=False)
        if name == "llama":
            write("llama_bf16", model.to(torch.bfloat16))
    bert = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=48, max_position_embeddings=32)
    torch.manual_seed(0)
    write_bert("bert", BertModel(BertConfig(**bert)).eval())
    torch.manual_seed(1)
    write_bert("bert_classifier", BertForSequenceClassification(BertConfig(**bert, num_labels=3)).eval())
    # A model with the GPT-2-style tokenizer of tests/tokenizers/fixtures, for `oxmera generate`:
    # the text transformers generates greedily, decoded by the tokenizers library.
    folder = os.path.join(OUT, "gpt2_with_tokenizer")
    source = os.path.join(OUT, "..", "..", "tokenizers", "fixtures", "gpt2", "tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(source)
    torch.manual_seed(2)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32,
                                       n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)).eval()
    model.save_pretrained(folder)
    shutil.copy(source, os.path.join(folder, "tokenizer.json"))
    prompt = "The tensor"
    ids = tok.encode(prompt).ids
    out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=12, do_sample=False, pad_token_id=0)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"prompt": prompt, "max_new_tokens": 12, "ids": out[0].tolist(),
                   "text": tok.decode(out[0][len(ids):].tolist())}, f, ensure_ascii=False)
    # A BERT with the WordPiece tokenizer of tests/tokenizers/fixtures, for examples/bert_embed.cpp.
    folder = os.path.join(OUT, "bert_with_tokenizer")
    source = os.path.join(OUT, "..", "..", "tokenizers", "fixtures", "bert", "tokenizer.json")
    torch.manual_seed(3)
    BertModel(BertConfig(**dict(bert, vocab_size=tokenizer_size(source)))).eval().save_pretrained(folder)
    shutil.copy(source, os.path.join(folder, "tokenizer.json"))
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
