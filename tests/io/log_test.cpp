// JSON-lines training logs (oxmera/io/log.h): lines parsed back here with nlohmann-json, with
// exact doubles and key order, and read_jsonl's validation with line numbers.

#include <oxmera/io/log.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using ox::ErrorKind;
using ox::io::EvalRecord;
using ox::io::JsonlLogger;
using ox::io::read_jsonl;
using ox::io::StepRecord;
using oxtest::read_file;
using oxtest::write_file;

class JsonlLog : public oxtest::ScratchDir {};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

TEST_F(JsonlLog, StepLineHasFixedKeyOrderAndExactDoubles) {
  const double third = 1.0 / 3.0;
  const double denormal = std::numeric_limits<double>::denorm_min();
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_step({.step = 12,
                     .epoch = 3,
                     .loss = third,
                     .lr = 3e-4,
                     .grad_norm = 0.1,
                     .samples_per_s = 1234.5,
                     .elapsed_s = 1e300,
                     .extra = {{"zeta", denormal}, {"alpha", -0.0}, {"mid", 2.0}}});
  }
  const std::string text = read_file(path("run.jsonl"));
  ASSERT_EQ(text.back(), '\n');
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 1u);
  const auto line = nlohmann::ordered_json::parse(lines[0]);
  EXPECT_EQ(keys_of(line),
            (std::vector<std::string>{"type", "step", "epoch", "loss", "lr", "grad_norm",
                                      "samples_per_s", "elapsed_s", "alpha", "mid", "zeta"}));
  EXPECT_EQ(line["type"], "step");
  EXPECT_EQ(line["step"].get<int64_t>(), 12);
  EXPECT_EQ(line["epoch"].get<int64_t>(), 3);
  // Bitwise equality: the text reads back to the same double.
  EXPECT_EQ(std::bit_cast<uint64_t>(line["loss"].get<double>()), std::bit_cast<uint64_t>(third));
  EXPECT_EQ(line["lr"].get<double>(), 3e-4);
  EXPECT_EQ(line["grad_norm"].get<double>(), 0.1);
  EXPECT_EQ(line["samples_per_s"].get<double>(), 1234.5);
  EXPECT_EQ(line["elapsed_s"].get<double>(), 1e300);
  EXPECT_EQ(line["zeta"].get<double>(), denormal);
  // Whole-valued doubles and -0.0 are floats in the text, so the sign of zero survives.
  EXPECT_TRUE(line["mid"].is_number_float());
  EXPECT_EQ(line["mid"].get<double>(), 2.0);
  EXPECT_TRUE(line["alpha"].is_number_float());
  EXPECT_TRUE(std::signbit(line["alpha"].get<double>()));
}

TEST_F(JsonlLog, EvalLineLeavesOutUnsetOptionals) {
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_eval({.step = 100, .epoch = 1, .loss = 0.25, .accuracy = 0.875, .elapsed_s = 9.5});
    logger.log_eval({.step = 200, .epoch = 2, .loss = 0.125});
    logger.log_step({.step = 201, .epoch = 2, .loss = 1.5, .lr = 0.01});
  }
  const auto lines = lines_of(read_file(path("run.jsonl")));
  ASSERT_EQ(lines.size(), 3u);
  const auto first = nlohmann::ordered_json::parse(lines[0]);
  EXPECT_EQ(keys_of(first),
            (std::vector<std::string>{"type", "step", "epoch", "loss", "accuracy", "elapsed_s"}));
  EXPECT_EQ(first["type"], "eval");
  EXPECT_EQ(first["accuracy"].get<double>(), 0.875);
  const auto second = nlohmann::ordered_json::parse(lines[1]);
  EXPECT_EQ(keys_of(second),
            (std::vector<std::string>{"type", "step", "epoch", "loss", "elapsed_s"}));
  const auto third = nlohmann::ordered_json::parse(lines[2]);
  EXPECT_EQ(keys_of(third),
            (std::vector<std::string>{"type", "step", "epoch", "loss", "lr", "elapsed_s"}));
}

TEST_F(JsonlLog, NonFiniteValuesAreStringsAndReadBack) {
  const double inf = std::numeric_limits<double>::infinity();
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_step({.step = 1,
                     .loss = std::nan(""),
                     .lr = inf,
                     .grad_norm = -inf,
                     .extra = {{"scale", std::nan("")}}});
  }
  const auto line = nlohmann::json::parse(lines_of(read_file(path("run.jsonl")))[0]);
  EXPECT_EQ(line["loss"], "NaN");
  EXPECT_EQ(line["lr"], "Infinity");
  EXPECT_EQ(line["grad_norm"], "-Infinity");
  EXPECT_EQ(line["scale"], "NaN");

  const auto records = read_jsonl(path("run.jsonl"));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(std::isnan(records[0].scalars.at("loss")));
  EXPECT_EQ(records[0].scalars.at("lr"), inf);
  EXPECT_EQ(records[0].scalars.at("grad_norm"), -inf);
  EXPECT_TRUE(std::isnan(records[0].scalars.at("scale")));
}

TEST_F(JsonlLog, ReopeningAppendsAndReadJsonlReturnsEveryRecord) {
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_step({.step = 1, .epoch = 0, .loss = 2.5, .lr = 0.1, .elapsed_s = 0.5});
    logger.flush();
  }
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_eval(
        {.step = 2, .epoch = -1, .loss = 0.75, .accuracy = 0.5, .extra = {{"top5", 0.9}}});
    JsonlLogger moved = std::move(logger);
    moved.log_step({.step = int64_t{1} << 53, .epoch = 7, .loss = 1e-7});
  }
  const auto records = read_jsonl(path("run.jsonl"));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].type, "step");
  EXPECT_EQ(records[0].step, 1);
  EXPECT_EQ(records[0].epoch, 0);
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[0].scalars,
            (std::map<std::string, double>{{"loss", 2.5}, {"lr", 0.1}, {"elapsed_s", 0.5}}));
  EXPECT_EQ(records[1].type, "eval");
  EXPECT_EQ(records[1].step, 2);
  EXPECT_EQ(records[1].epoch, -1);
  EXPECT_EQ(records[1].line, 2);
  EXPECT_EQ(records[1].scalars,
            (std::map<std::string, double>{
                {"loss", 0.75}, {"accuracy", 0.5}, {"elapsed_s", 0.0}, {"top5", 0.9}}));
  EXPECT_EQ(records[2].step, int64_t{1} << 53);
  EXPECT_EQ(records[2].epoch, 7);
  EXPECT_EQ(records[2].scalars.at("loss"), 1e-7);
  EXPECT_EQ(records[2].line, 3);
}

TEST_F(JsonlLog, LoggersSharingAFileNeverInterleaveLines) {
  constexpr int kLines = 400;
  auto log_many = [&](int64_t epoch) {
    JsonlLogger logger(path("shared.jsonl"));
    for (int i = 0; i < kLines; ++i)
      logger.log_step({.step = i, .epoch = epoch, .loss = 1.0 / (i + 1), .extra = {{"pad", 1e-9}}});
  };
  std::thread first(log_many, 1);
  std::thread second(log_many, 2);
  first.join();
  second.join();
  const auto records = read_jsonl(path("shared.jsonl"));
  ASSERT_EQ(records.size(), 2u * kLines);
  std::map<int64_t, int64_t> next_step;  // each writer's lines stay in its order
  for (const auto& record : records) {
    EXPECT_EQ(record.step, next_step[record.epoch]++);
    EXPECT_EQ(record.scalars.at("loss"), 1.0 / static_cast<double>(record.step + 1));
  }
  EXPECT_EQ(next_step[1], kLines);
  EXPECT_EQ(next_step[2], kLines);
}

TEST_F(JsonlLog, ExtraNamesAreEscaped) {
  const std::string name = "quote\" back\\ tab\t nl\n ctl\x01 utf8 \xc3\xa9";
  {
    JsonlLogger logger(path("run.jsonl"));
    logger.log_step({.step = 1, .extra = {{name, 4.0}}});
  }
  const auto lines = lines_of(read_file(path("run.jsonl")));
  ASSERT_EQ(lines.size(), 1u);  // the newline in the name is escaped
  EXPECT_EQ(nlohmann::json::parse(lines[0])[name].get<double>(), 4.0);
  EXPECT_EQ(read_jsonl(path("run.jsonl"))[0].scalars.at(name), 4.0);
}

TEST_F(JsonlLog, ExtraNamedLikeAFixedKeyOrEmptyIsAValueError) {
  JsonlLogger logger(path("run.jsonl"));
  for (const char* name : {"type", "step", "epoch", "loss", "lr", "accuracy", "elapsed_s"}) {
    const ox::Error error = oxtest::caught([&] { logger.log_step({.extra = {{name, 1.0}}}); });
    EXPECT_EQ(error.kind(), ErrorKind::Value) << name;
    EXPECT_TRUE(oxtest::contains(error, std::string("'") + name + "'")) << error.what();
  }
  EXPECT_EQ(oxtest::caught([&] {
              logger.log_eval({.extra = {{"", 1.0}}});
            }).kind(),
            ErrorKind::Value);
  EXPECT_EQ(read_file(path("run.jsonl")), "");  // nothing half-written
}

TEST_F(JsonlLog, UnopenableFilesAreIoErrors) {
  const std::string missing = path("no/such/folder/run.jsonl");
  const ox::Error open_error = oxtest::caught([&] { JsonlLogger logger(missing); });
  EXPECT_EQ(open_error.kind(), ErrorKind::Io);
  EXPECT_TRUE(oxtest::contains(open_error, missing)) << open_error.what();
  EXPECT_EQ(oxtest::caught([&] { read_jsonl(missing); }).kind(), ErrorKind::Io);
}

TEST_F(JsonlLog, EmptyFileHasNoRecords) {
  write_file(path("empty.jsonl"), "");
  EXPECT_TRUE(read_jsonl(path("empty.jsonl")).empty());
}

TEST_F(JsonlLog, BrokenLinesAreFormatErrorsNamingTheLine) {
  const std::string good = R"({"type":"step","step":1,"epoch":0,"loss":1.0})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"step","step":3,"ep)", "not valid JSON"},  // a line cut by a crash
      {"[1,2]", "not a JSON object"},
      {R"({"step":1,"epoch":0})", "no \"type\""},
      {R"({"type":"train","step":1,"epoch":0})", "\"type\" is not"},
      {R"({"type":"step","epoch":0})", "no \"step\""},
      {R"({"type":"step","step":1.5,"epoch":0})", "\"step\" is not a 64-bit integer"},
      {R"({"type":"step","step":1,"epoch":18446744073709551615})", "\"epoch\" is not a 64-bit"},
      {R"({"type":"step","step":1,"epoch":0,"loss":"abc"})", "\"loss\" is not a number"},
      {R"({"type":"step","step":1,"epoch":0,"loss":null})", "\"loss\" is not a number"},
      {R"({"type":"step","step":1,"epoch":0,"loss":{"a":1}})", "nested"},
      {R"({"type":"step","step":1,"epoch":0,"loss":1,"loss":2})", "duplicate key \"loss\""},
      {"", "empty line"},
  };
  for (const auto& [bad, expected] : cases) {
    write_file(path("bad.jsonl"), good + "\n" + good + "\n" + bad + "\n" + good + "\n");
    const ox::Error error = oxtest::caught([&] { read_jsonl(path("bad.jsonl")); });
    EXPECT_EQ(error.kind(), ErrorKind::Format) << bad;
    EXPECT_TRUE(oxtest::contains(error, "[read_jsonl] " + path("bad.jsonl") + ":3: "))
        << error.what();
    EXPECT_TRUE(oxtest::contains(error, expected)) << error.what();
  }
  // A last line without its newline is still read, and checked.
  write_file(path("cut.jsonl"), good + "\n" + good);
  EXPECT_EQ(read_jsonl(path("cut.jsonl")).size(), 2u);
  write_file(path("cut.jsonl"), good + "\n{\"type\":");
  EXPECT_TRUE(oxtest::contains(oxtest::caught([&] { read_jsonl(path("cut.jsonl")); }),
                               path("cut.jsonl") + ":2: "));
}

}  // namespace
