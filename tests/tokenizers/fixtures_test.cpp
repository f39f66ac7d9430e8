// Every fixture tokenizer (tests/tokenizers/fixtures, from scripts/make-tokenizer-fixtures.py)
// against the ids and texts the Hugging Face tokenizers library gave for the same inputs:
// awkward texts, pairs, and every fourth line of the training corpus.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "oxmera/tokenizers.h"
#include "test_paths.h"

namespace {

using nlohmann::json;

std::filesystem::path fixtures() {
  return std::filesystem::path(oxtest::kSourceDir) / "tests" / "tokenizers" / "fixtures";
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<int64_t> ids_of(const json& list) { return list.get<std::vector<int64_t>>(); }

std::string show(const std::vector<int64_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

class TokenizerFixture : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const auto folder = fixtures() / GetParam();
    tokenizer_ = std::make_unique<ox::tokenizers::Tokenizer>(
        ox::tokenizers::Tokenizer::from_file(folder / "tokenizer.json"));
    expected_ = json::parse(read(folder / "expected.json"));
  }
  std::unique_ptr<ox::tokenizers::Tokenizer> tokenizer_;
  json expected_;
};

TEST_P(TokenizerFixture, VocabularySizes) {
  EXPECT_EQ(tokenizer_->vocab_size(), expected_["vocab_size"].get<int64_t>());
  EXPECT_EQ(tokenizer_->vocab_size(false), expected_["vocab_size_without_added"].get<int64_t>());
}

TEST_P(TokenizerFixture, AwkwardTextsEncodeAndDecodeAsTheLibrary) {
  for (const json& c : expected_["cases"]) {
    const std::string text = c["text"];
    SCOPED_TRACE("text: \"" + text + "\"");
    const auto ids = tokenizer_->encode(text);
    EXPECT_EQ(show(ids), show(ids_of(c["ids"])));
    EXPECT_EQ(show(tokenizer_->encode(text, false)), show(ids_of(c["ids_no_special"])));
    const auto expected_ids = ids_of(c["ids"]);
    EXPECT_EQ(tokenizer_->decode(expected_ids), c["decoded"].get<std::string>());
    EXPECT_EQ(tokenizer_->decode(expected_ids, false),
              c["decoded_with_special"].get<std::string>());
  }
}

TEST_P(TokenizerFixture, PairsCarryTheirTypeIds) {
  for (const json& p : expected_["pairs"]) {
    const std::string a = p["a"], b = p["b"];
    SCOPED_TRACE("pair: \"" + a + "\", \"" + b + "\"");
    const auto enc = tokenizer_->encode_full(a, b);
    EXPECT_EQ(show(enc.ids), show(ids_of(p["ids"])));
    EXPECT_EQ(show(enc.type_ids), show(ids_of(p["type_ids"])));
    const auto plain = tokenizer_->encode_full(a, b, false);
    EXPECT_EQ(show(plain.ids), show(ids_of(p["ids_no_special"])));
    EXPECT_EQ(show(plain.type_ids), show(ids_of(p["type_ids_no_special"])));
    EXPECT_EQ(enc.attention_mask, std::vector<int64_t>(enc.ids.size(), 1));
  }
}

TEST_P(TokenizerFixture, CorpusLinesEncodeAsTheLibrary) {
  std::vector<std::string> lines;
  std::istringstream corpus(read(fixtures() / "corpus.txt"));
  for (std::string line; std::getline(corpus, line);) lines.push_back(line);
  int mismatches = 0;
  std::vector<std::string> texts;
  for (const json& c : expected_["corpus"]) {
    const std::string& line = lines.at(c["line"].get<size_t>());
    texts.push_back(line);
    const auto ids = tokenizer_->encode(line);
    const auto expected = ids_of(c["ids"]);
    if (ids != expected && ++mismatches <= 5) {
      ADD_FAILURE() << "line " << c["line"] << ": \"" << line << "\"\n  got      " << show(ids)
                    << "\n  expected " << show(expected);
    }
    const std::string decoded = c.contains("decoded") ? c["decoded"].get<std::string>() : line;
    if (tokenizer_->decode(expected) != decoded && ++mismatches <= 5) {
      ADD_FAILURE() << "line " << c["line"] << " decodes to \"" << tokenizer_->decode(expected)
                    << "\", not \"" << decoded << "\"";
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The batch gives each text's ids, whatever the thread count.
  const auto batch = tokenizer_->encode_batch(texts);
  ASSERT_EQ(batch.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(batch[i], tokenizer_->encode(texts[i]));
}

INSTANTIATE_TEST_SUITE_P(Families, TokenizerFixture,
                         testing::Values("gpt2", "llama3", "qwen2", "llama2", "mistral", "bert",
                                         "bert_processing", "mixed", "wordlevel"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
