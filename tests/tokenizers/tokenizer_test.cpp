// Tokenizer on small tokenizer.json files written here, with hand-derived ids: BPE merge order,
// truncation, padding, the lookups; and the errors for bad files and bad text.

#include <gtest/gtest.h>

#include <fstream>

#include "oxmera/core/error.h"
#include "oxmera/tokenizers.h"

namespace {

using ox::tokenizers::Tokenizer;
using Ids = std::vector<int64_t>;

// A WordLevel tokenizer over whitespace-separated words (or `pre_tokenizer`'s), with `extra`
// members added at the top.
std::string word_level(const std::string& extra = "",
                       const std::string& pre_tokenizer = R"({"type": "WhitespaceSplit"})") {
  return R"({)" + extra + R"("model": {"type": "WordLevel", "unk_token": "<unk>",
    "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "d": 4, "[CLS]": 5, "[SEP]": 6, "[PAD]": 7}},
    "pre_tokenizer": )" +
         pre_tokenizer + R"(,
    "added_tokens": [{"id": 5, "content": "[CLS]", "special": true},
                     {"id": 6, "content": "[SEP]", "special": true},
                     {"id": 7, "content": "[PAD]", "special": true}]})";
}

std::string bpe(const std::string& merges) {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4,
    "abc": 5}, "merges": )" +
         merges + "}}";
}

template <class F>
void expect_error(F&& f, ox::ErrorKind kind, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing \"" << fragment << "\"";
  } catch (const ox::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, WordLevelLooksUpWordsAndTheUnknown) {
  const auto tok = Tokenizer::from_json(word_level());
  EXPECT_EQ(tok.encode("a  b\td zebra"), (Ids{1, 2, 4, 0}));
  EXPECT_EQ(tok.encode(""), Ids{});
  EXPECT_EQ(tok.token_to_id("c"), 3);
  EXPECT_EQ(tok.token_to_id("nope"), std::nullopt);
  EXPECT_EQ(tok.id_to_token(4), "d");
  EXPECT_EQ(tok.id_to_token(99), std::nullopt);
  EXPECT_EQ(tok.vocab_size(), 8);
  EXPECT_TRUE(tok.is_special(5));
  EXPECT_FALSE(tok.is_special(1));
  // No decoder: tokens joined by spaces; special ones skipped unless asked; unknown ids skipped.
  EXPECT_EQ(tok.decode(Ids{5, 1, 2, 6}), "a b");
  EXPECT_EQ(tok.decode(Ids{5, 1, 2, 6}, false), "[CLS] a b [SEP]");
  EXPECT_EQ(tok.decode(Ids{1, -3, 1000, 2}), "a b");
  // An added token inside a word is found there.
  EXPECT_EQ(tok.encode("a[SEP]b"), (Ids{1, 6, 2}));
}

TEST(Tokenizer, BpeMergesByRankNotPosition) {
  // "abc": (a,b) has rank 1 and (b,c) rank 0, so b+c first, and (a,bc) has no merge.
  EXPECT_EQ(Tokenizer::from_json(bpe(R"(["b c", "a b"])")).encode("abc"), (Ids{0, 4}));
  // a+b first, then ab+c: one token. Both merge spellings ("a b" and ["a", "b"]) are read.
  EXPECT_EQ(Tokenizer::from_json(bpe(R"([["a", "b"], ["ab", "c"]])")).encode("abc"), Ids{5});
  // Equal pairs merge leftmost first: "abab" with only a+b is ab ab.
  EXPECT_EQ(Tokenizer::from_json(bpe(R"(["a b"])")).encode("abab"), (Ids{3, 3}));
  // No unk token: a character outside the vocabulary is dropped, as the library does, and its
  // neighbours then merge.
  EXPECT_EQ(Tokenizer::from_json(bpe(R"(["a b"])")).encode("axb"), Ids{3});
}

TEST(Tokenizer, TruncationKeepsTheSideItIsToldAndCountsTheSpecialTokens) {
  const std::string post = R"("post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 6],
    "cls": ["[CLS]", 5]},)";
  const auto right = Tokenizer::from_json(word_level(
      post + R"("truncation": {"max_length": 4, "strategy": "LongestFirst", "direction": "Right",
      "stride": 0},)"));
  EXPECT_EQ(right.encode("a b c d"), (Ids{5, 1, 2, 6}));  // 4 - 2 special tokens = 2 words
  EXPECT_EQ(right.encode("a b c d", false), (Ids{1, 2, 3, 4}));
  const auto left = Tokenizer::from_json(
      word_level(post + R"("truncation": {"max_length": 4, "direction": "Left"},)"));
  EXPECT_EQ(left.encode("a b c d"), (Ids{5, 3, 4, 6}));
  // A pair under LongestFirst and 7 tokens (3 for [CLS] [SEP] [SEP]): 4 words; with 3 and 1
  // words the longer keeps max(1, 4 - 1) = 3: nothing to cut. With 4 and 3: 2 and 2.
  const auto pair = Tokenizer::from_json(word_level(post + R"("truncation": {"max_length": 7},)"));
  EXPECT_EQ(pair.encode_full("a b c", "d").ids, (Ids{5, 1, 2, 3, 6, 4, 6}));
  const auto cut = pair.encode_full("a b c d", "c b a");
  EXPECT_EQ(cut.ids, (Ids{5, 1, 2, 6, 3, 2, 6}));
  EXPECT_EQ(cut.type_ids, (Ids{0, 0, 0, 0, 1, 1, 1}));
  const auto only_second = Tokenizer::from_json(
      word_level(post + R"("truncation": {"max_length": 6, "strategy": "OnlySecond"},)"));
  EXPECT_EQ(only_second.encode_full("a b", "c d a").ids, (Ids{5, 1, 2, 6, 3, 6}));
  expect_error([&] { only_second.encode_full("a b c d", "c"); }, ox::ErrorKind::Value,
               "truncation");
}

TEST(Tokenizer, PaddingFillsToTheLongestOrAFixedLength) {
  const auto longest = Tokenizer::from_json(word_level(
      R"("padding": {"strategy": "BatchLongest", "direction": "Right", "pad_id": 7,
      "pad_type_id": 0, "pad_token": "[PAD]", "pad_to_multiple_of": null},)"));
  EXPECT_EQ(longest.encode("a b"), (Ids{1, 2}));  // alone, it is the longest
  EXPECT_EQ(longest.encode_batch({"a b c", "d", ""}),
            (std::vector<Ids>{{1, 2, 3}, {4, 7, 7}, {7, 7, 7}}));
  const auto fixed = Tokenizer::from_json(word_level(
      R"("padding": {"strategy": {"Fixed": 4}, "direction": "Left", "pad_id": 7,
      "pad_to_multiple_of": 3},)"));
  const auto enc = fixed.encode_full("a b");  // 4 rounded up to a multiple of 3
  EXPECT_EQ(enc.ids, (Ids{7, 7, 7, 7, 1, 2}));
  EXPECT_EQ(enc.attention_mask, (Ids{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(enc.special_tokens_mask, (Ids{1, 1, 1, 1, 0, 0}));
}

TEST(Tokenizer, ReadsAFileOrAFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "oxmera_tokenizer_folder";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << word_level();
  EXPECT_EQ(Tokenizer::from_file(dir).encode("b a"), (Ids{2, 1}));
  EXPECT_EQ(Tokenizer::from_file(dir / "tokenizer.json").vocab_size(), 8);
  std::filesystem::remove(dir / "tokenizer.json");
  expect_error([&] { Tokenizer::from_file(dir); }, ox::ErrorKind::Io, "has no tokenizer.json");
  expect_error([&] { Tokenizer::from_file(dir / "missing.json"); }, ox::ErrorKind::Io,
               "missing.json");
  std::filesystem::remove_all(dir);
}

TEST(Tokenizer, TextMustBeUtf8) {
  const auto tok = Tokenizer::from_json(word_level());
  expect_error([&] { tok.encode("a \xC3("); }, ox::ErrorKind::Value, "byte 2");
  expect_error([&] { tok.encode("\xED\xA0\x80"); }, ox::ErrorKind::Value, "not valid UTF-8");
  expect_error([&] { tok.encode_batch({"a", "\xFF"}); }, ox::ErrorKind::Value, "UTF-8");
}

TEST(Tokenizer, BadFilesAreFormatErrorsNamingThePart) {
  using ox::ErrorKind;
  const auto load = [](const std::string& text) { return [text] { Tokenizer::from_json(text); }; };
  expect_error(load("{"), ErrorKind::Format, "not valid JSON");
  expect_error(load("[1, 2]"), ErrorKind::Format, "not a JSON object");
  expect_error(load(std::string(100000, '[')), ErrorKind::Format, "nested deeper");
  expect_error(load(R"({"normalizer": null})"), ErrorKind::Format, "has no \"model\"");
  expect_error(load(R"({"model": {"type": "Unigram", "vocab": []}})"), ErrorKind::Format,
               "\"Unigram\" is not supported");
  expect_error(load(bpe(R"(["a x"])")), ErrorKind::Format, "\"x\", which is not in the vocabulary");
  expect_error(load(bpe(R"(["c a"])")), ErrorKind::Format, "makes \"ca\"");
  expect_error(load(bpe(R"(["abc"])")), ErrorKind::Format, "two tokens separated by a space");
  expect_error(load(bpe(R"([42])")), ErrorKind::Format, "merge 1");
  expect_error(load(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})"),
               ErrorKind::Format, "same id 0");
  expect_error(load(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})"),
               ErrorKind::Format, "out of range");
  expect_error(load(R"({"model": {"type": "BPE", "vocab": {"a": "0"}, "merges": []}})"),
               ErrorKind::Format, "expected an integer id");
  expect_error(load(R"({"model": {"type": "BPE", "vocab": {}, "merges": [], "dropout": 0.1}})"),
               ErrorKind::Format, "dropout");
  expect_error(load(word_level("", R"({"type": "Split", "pattern": {"Regex": "(unclosed"},
      "behavior": "Isolated"})")),
               ErrorKind::Format, "does not compile");
  expect_error(load(word_level(R"("normalizer": {"type": "Precompiled"},)")), ErrorKind::Format,
               "\"Precompiled\" is not supported");
  expect_error(load(word_level(R"("decoder": {"type": "Strip", "content": "ab"},)")),
               ErrorKind::Format, "not one character");
  expect_error(load(word_level(R"("post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[X]", "type_id": 0}}], "pair": [],
      "special_tokens": {}},)")),
               ErrorKind::Format, "\"[X]\", which is not among");
  expect_error(load(word_level(R"("normalizer": {"type": "Strip", "strip_left": "yes"},)")),
               ErrorKind::Format, "strip_left");
}

TEST(Tokenizer, UnknownTokensNeedOneInTheVocabulary) {
  const auto tok = Tokenizer::from_json(R"({"model": {"type": "WordPiece", "unk_token": "[UNK]",
      "vocab": {"a": 0, "##b": 1}}, "pre_tokenizer": {"type": "WhitespaceSplit"}})");
  EXPECT_EQ(tok.encode("ab a"), (Ids{0, 1, 0}));
  expect_error([&] { tok.encode("ab z"); }, ox::ErrorKind::Value, "\"[UNK]\", which is not in");
}

TEST(Tokenizer, APathologicalPatternFailsInsteadOfHanging) {
  // (a+)+$ against a's followed by a b backtracks exponentially; PCRE2's match limit stops it.
  const auto tok = Tokenizer::from_json(word_level("", R"({"type": "Split",
      "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated"})"));
  std::string text(40, 'a');
  text.push_back('b');
  expect_error([&] { tok.encode(text); }, ox::ErrorKind::Value, "match limit");
}

}  // namespace
