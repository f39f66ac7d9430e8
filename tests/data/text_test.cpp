// TextDataset and Vocabulary on small UTF-8 files with multi-byte characters, and on files
// that are not valid UTF-8.

#include <string>
#include <vector>

#include "data/data_test_util.h"

namespace {

using namespace ox::data;
using oxtest::caught;
using oxtest::contains;
using oxtest::write_bytes;

// "abé€𝄞ab": a (U+61), b (U+62), é (U+E9, 2 bytes), € (U+20AC, 3 bytes), 𝄞 (U+1D11E, 4 bytes).
const std::string kText =
    "ab\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E"
    "ab";

class DataText : public oxtest::DataScratch {};

TEST_F(DataText, VocabularyAndWindows) {
  write_bytes(path("t.txt"), kText);
  TextDataset ds(path("t.txt"), 3);
  EXPECT_EQ(ds.vocabulary().code_points(),
            (std::vector<char32_t>{0x61, 0x62, 0xE9, 0x20AC, 0x1D11E}));
  // ids by hand: a0 b1 é2 €3 𝄞4 a0 b1
  EXPECT_EQ(ds.ids().dtype(), ox::kI64);
  EXPECT_EQ(ds.ids().to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1}));
  EXPECT_EQ(ds.size(), 4);
  const Example e = ds.get(1);
  EXPECT_EQ(e.data.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(e.target.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4}));
  const Example last = ds.get(3);
  EXPECT_EQ(last.data.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 0}));
  EXPECT_EQ(last.target.to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 1}));
  EXPECT_EQ(caught([&] { ds.get(4); }).kind(), ox::ErrorKind::Index);

  // Batches through a loader: [B, context] each.
  DataLoader loader(std::make_shared<TextDataset>(path("t.txt"), 3), {.batch_size = 2});
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.shape(), ox::Shape({2, 3}));
    EXPECT_EQ(batch.target.shape(), ox::Shape({2, 3}));
  }
}

TEST_F(DataText, EncodeDecode) {
  write_bytes(path("t.txt"), kText);
  TextDataset ds(path("t.txt"), 1);
  EXPECT_EQ(ds.encode("b\xE2\x82\xAC"
                      "a")
                .to_vector<int64_t>(),
            (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(ds.decode(ox::tensor({4, 2, 0})),
            "\xF0\x9D\x84\x9E\xC3\xA9"
            "a");
  EXPECT_EQ(ds.decode(ds.ids()), kText);
  const ox::Error unknown = caught([&] { ds.encode("abz"); });
  EXPECT_EQ(unknown.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(unknown, "U+7a")) << unknown.what();
  EXPECT_EQ(caught([&] { ds.decode(ox::tensor({5})); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([&] { ds.decode(ox::tensor({-1})); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(caught([&] { ds.encode("\xC3"); }).kind(), ox::ErrorKind::Format);
}

TEST_F(DataText, VocabularyTensorRoundTrip) {
  const Vocabulary v = Vocabulary::from_text(kText);
  const ox::Tensor t = v.to_tensor();
  EXPECT_EQ(t.dtype(), ox::kI32);
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0x61, 0x62, 0xE9, 0x20AC, 0x1D11E}));
  const Vocabulary back = Vocabulary::from_tensor(t);
  EXPECT_EQ(back.code_points(), v.code_points());
  EXPECT_EQ(back.decode(std::vector<int64_t>{3}), "\xE2\x82\xAC");
  // Through a checkpoint-style dict of tensors.
  ox::TensorDict extra;
  extra.insert("vocabulary", v.to_tensor());
  EXPECT_EQ(Vocabulary::from_tensor(extra["vocabulary"]).size(), 5);

  EXPECT_EQ(caught([] {
              Vocabulary::from_tensor(ox::tensor({0x62, 0x61}));
            }).kind(),
            ox::ErrorKind::Value);
  EXPECT_EQ(caught([] {
              Vocabulary::from_tensor(ox::tensor({0x61, 0x61}));
            }).kind(),
            ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { Vocabulary::from_tensor(ox::tensor({0xD800})); }).kind(),
            ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { Vocabulary::from_tensor(ox::tensor({0x110000})); }).kind(),
            ox::ErrorKind::Value);
  EXPECT_EQ(caught([] { Vocabulary::from_tensor(ox::tensor({1.0f})); }).kind(),
            ox::ErrorKind::Value);
  EXPECT_EQ(caught([] {
              Vocabulary::from_tensor(ox::zeros({1, 1}, ox::kI32));
            }).kind(),
            ox::ErrorKind::Value);
}

TEST_F(DataText, InvalidUtf8IsFormat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ab\xC3", "truncated UTF-8 sequence at byte 8"},
      {"\xC0\xAF", "overlong"},
      {"\xE0\x80\xAF", "overlong"},
      {"x\xED\xA0\x80", "U+d800"},
      {"\xF4\x90\x80\x80", "U+110000"},
      {"\xFF", "lead byte 0xff at byte 6"},
      {"a\x80", "lead byte 0x80 at byte 7"},
      {"\xE2\x28\xA1", "continuation byte 0x28 at byte 7"},
  };
  int k = 0;
  for (const auto& [bytes, what] : cases) {
    const std::string name = "bad" + std::to_string(k++) + ".txt";
    write_bytes(path(name), "abcdef" + bytes);  // errors name offsets in the file
    const ox::Error e = caught([&] { TextDataset(path(name), 2); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << name;
    EXPECT_TRUE(contains(e, path(name))) << e.what();
    EXPECT_TRUE(contains(e, what)) << "expected '" << what << "' in: " << e.what();
  }
}

TEST_F(DataText, OtherErrors) {
  write_bytes(path("short.txt"), "abc");
  EXPECT_EQ(caught([&] { TextDataset(path("short.txt"), 3); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(TextDataset(path("short.txt"), 2).size(), 1);
  EXPECT_EQ(caught([&] { TextDataset(path("short.txt"), 0); }).kind(), ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] { TextDataset(path("absent.txt"), 2); }).kind(), ox::ErrorKind::Io);
}

}  // namespace
