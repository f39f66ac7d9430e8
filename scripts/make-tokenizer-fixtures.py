#!/usr/bin/env python3
"""Writes the tokenizer fixtures of tests/tokenizers/ into tests/tokenizers/fixtures/. Run once, by
hand, with the Hugging Face tokenizers library from PyPI (verification tooling only):

    pip install tokenizers && python3 scripts/make-tokenizer-fixtures.py

CI does not need Python: the files are committed. Each fixture folder holds a `tokenizer.json`
trained here on corpus.txt (this repository's docs at the time, plus the multilingual lines
below) in the layout of a well-known model family, and `expected.json`: for every text of TEXTS
and every fourth line of corpus.txt, the ids the library gives with and without special tokens, the
pair encoding (ids and type ids) for a few pairs, and both decodes. The C++ tests compare with
those; nothing in them is computed by oxmera.
"""

import glob
import json
import os

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "tokenizers", "fixtures")

MULTILINGUAL = [
    "Le café est très chaud, n'est-ce pas ? Où est la bibliothèque ?",
    "Größere Übungen wären schön; Straße, Zürich, Köln.",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "机器学习框架需要快速的张量运算和自动微分。",
    "日本語のテキストも正しく分割されるべきです。",
    "한국어 문장도 토큰화되어야 합니다.",
    "العربية تكتب من اليمين إلى اليسار.",
    "Emoji: 😀 🎉 👍🏽 👨‍👩‍👧 🇫🇷 — and symbols ∑ ∫ √ ≤ ≥ ±.",
    "Numbers: 3.14159, 1,000,000, 2026-12-07, 0x1F, 42%, ½ ⅔ ①②③.",
    "Contractions: I'm, you're, we've, they'll, she'd, it's, don't, WON'T, Y'ALL'D.",
    "Code: def f(x):\n    return x ** 2  # squares\n\tif (a && b) { c[i] += d->e; }",
]

# Texts meant to trip a tokenizer: whitespace runs and kinds, newlines, accents (composed and
# not), compatibility forms, CJK, emoji sequences, digits, contractions, the empty string,
# special-token look-alikes.
TEXTS = [
    "", " ", "  ", "\n", "\t", "a", "Hello world", "Hello, world!", "hello   world",
    "  leading spaces", "trailing spaces   ", "line one\nline two\n\n\nline five",
    "windows\r\nnewlines\r\n", "tab\tseparated\tvalues", "mixed \t\n whitespace \n\t ",
    "non\u00a0breaking\u2003em\u3000ideographic", "next\u0085line\u2028sep\u2029para",
    "café", "cafe\u0301", "naïve Zürich résumé", "ÅNGSTRÖM", "İstanbul ıi", "ΣΟΦΙΑ σοφία",
    "ﬁne ﬂow ①②③ ＡＢＣ ｶﾀｶﾅ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝",
    "中文测试", "日本語とEnglishの混在", "한국어", "ไทย", "עברית", "हिन्दी",
    "😀", "👨‍👩‍👧‍👦 family", "🇯🇵🇫🇷", "👍🏽👍🏿",
    "1", "12", "123", "1234", "12345678901234567890", "3.14", "-42", "1e-5", "v2.0.1",
    "don't", "I'm", "they'll", "we've", "you're", "she'd", "it's", "DON'T", "O'Neil's",
    "'s", "''", "\"quoted\"", "«guillemets»", "(parens) [brackets] {braces}",
    "e-mail: someone@example.com, url: https://example.com/a?b=c&d=e#f",
    "a" * 300, "ab " * 50, "!!!???...", "____----====", "\u200bzero\u200bwidth\u200b",
    "control\x00chars\x07here\x1b[0m", "\ufffdreplacement", "\ufeffbom",
    "<|endoftext|>", "text<|endoftext|>more", "<s>hi</s>", "[CLS] x [SEP]", "<unk>",
    "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>Hello", "not<|special",
    "Hello<mask>world", "<extra> token", " <extra> ", "<extra><extra>",
] + MULTILINGUAL

PAIRS = [("Hello world", "How are you?"), ("", "second only"), ("first only", ""),
         ("中文", "日本語"), ("a b c", "d e f")]

CORPUS_STRIDE = 4

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                 r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def corpus_lines():
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path, encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f if line.strip()]
    return lines + MULTILINGUAL


def byte_level_bpe(vocab_size, pre_tokenizer, specials, added=()):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    return tok, trainer


def gpt2():
    tok, trainer = byte_level_bpe(1500, pre_tokenizers.ByteLevel(add_prefix_space=False),
                                  ["<|endoftext|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)

    def finish(t):
        t.add_tokens([AddedToken("<extra>", single_word=True)])
        return t
    return tok, trainer, finish


def llama3():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok, trainer = byte_level_bpe(1800, pre, specials)
    tok.model = models.BPE(ignore_merges=True)

    def finish(t):
        model = json.loads(t.to_str())
        model["model"]["ignore_merges"] = True
        t = Tokenizer.from_str(json.dumps(model))
        t.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))])])
        t.add_tokens([AddedToken("<extra>", lstrip=True, rstrip=True)])
        return t
    return tok, trainer, finish


def qwen2():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok, trainer = byte_level_bpe(1600, pre, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.normalizer = normalizers.NFC()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, trainer, None


def sentencepiece_bpe(metaspace):
    """Llama 2 (Prepend + Replace normalizers) or Mistral's newer layout (Metaspace)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                     split=False)
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="first",
                                                            split=False),
                                         decoders.ByteFallback(), decoders.Fuse()])
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                               normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=1150, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=200, show_progress=False)

    def finish(t):
        # As in Llama 2's file: the 256 byte tokens are ids 3-258 of the model's vocabulary (not
        # added tokens), so that byte fallback has them and decoding keeps them.
        model = json.loads(t.to_str())
        vocab = model["model"]["vocab"]
        shifted = {token: (i if i < 3 else i + 256) for token, i in vocab.items()}
        shifted.update({"<0x%02X>" % b: 3 + b for b in range(256)})
        model["model"]["vocab"] = dict(sorted(shifted.items(), key=lambda item: item[1]))
        t = Tokenizer.from_str(json.dumps(model))
        t.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B:1",
            special_tokens=[("<s>", t.token_to_id("<s>"))])
        return t
    return tok, trainer, finish


def bert(template):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=1200, limit_alphabet=300, show_progress=False,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])

    def finish(t):
        cls, sep = t.token_to_id("[CLS]"), t.token_to_id("[SEP]")
        if template:
            t.post_processor = processors.TemplateProcessing(
                single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
        else:
            t.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
        return t
    return tok, trainer, finish


def mixed():
    """The other components once each: NFKC, Lowercase, Strip, StripAccents over NFD, Replace with
    a regex, Whitespace/Digits/Punctuation pre-tokenizers, a WordPiece-style continuing prefix on
    BPE with an end-of-word suffix, RobertaProcessing and the BPE decoder."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##",
                               end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(), normalizers.Replace(Regex(r"\d{5,}"), "#"), normalizers.NFD(),
        normalizers.StripAccents(), normalizers.Lowercase(), normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="isolated")])
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"],
                                  continuing_subword_prefix="##", end_of_word_suffix="</w>",
                                  limit_alphabet=150, show_progress=False)

    def finish(t):
        t.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1))
        return t
    return tok, trainer, finish


def wordlevel():
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(Regex(r"[,.;:!?]"), behavior="merged_with_previous")])
    trainer = trainers.WordLevelTrainer(vocab_size=700, special_tokens=["<unk>"],
                                        show_progress=False)
    return tok, trainer, None


FAMILIES = {
    "gpt2": gpt2, "llama3": llama3, "qwen2": qwen2,
    "llama2": lambda: sentencepiece_bpe(metaspace=False),
    "mistral": lambda: sentencepiece_bpe(metaspace=True),
    "bert": lambda: bert(template=True), "bert_processing": lambda: bert(template=False),
    "mixed": mixed, "wordlevel": wordlevel,
}


def expected(tok, lines):
    cases = []
    for text in TEXTS:
        with_special = tok.encode(text).ids
        cases.append({
            "text": text,
            "ids": with_special,
            "ids_no_special": tok.encode(text, add_special_tokens=False).ids,
            "decoded": tok.decode(with_special),
            "decoded_with_special": tok.decode(with_special, skip_special_tokens=False),
        })
    pairs = []
    for a, b in PAIRS:
        enc = tok.encode(a, b)
        plain = tok.encode(a, b, add_special_tokens=False)
        pairs.append({"a": a, "b": b, "ids": enc.ids, "type_ids": enc.type_ids,
                      "ids_no_special": plain.ids, "type_ids_no_special": plain.type_ids})
    # Every CORPUS_STRIDE-th line of corpus.txt: its ids, and its decode where that is not the line.
    corpus = []
    for number in range(0, len(lines), CORPUS_STRIDE):
        ids = tok.encode(lines[number]).ids
        case = {"line": number, "ids": ids}
        decoded = tok.decode(ids)
        if decoded != lines[number]:
            case["decoded"] = decoded
        corpus.append(case)
    return {"library": "tokenizers " + tokenizers.__version__, "vocab_size": tok.get_vocab_size(),
            "vocab_size_without_added": tok.get_vocab_size(with_added_tokens=False),
            "cases": cases, "pairs": pairs, "corpus": corpus}


def main():
    lines = corpus_lines()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    for name, make in FAMILIES.items():
        tok, trainer, finish = make()
        tok.train_from_iterator(lines, trainer=trainer)
        if finish is not None:
            tok = finish(tok)
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        tok.save(os.path.join(folder, "tokenizer.json"))
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))  # as a user loads it
        with open(os.path.join(folder, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected(tok, lines), f, ensure_ascii=False, separators=(",", ":"))
        print(name, tok.get_vocab_size(), "tokens")


if __name__ == "__main__":
    main()
