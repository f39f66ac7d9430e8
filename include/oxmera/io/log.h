#pragma once
// Logging a training run: a JSON-lines file (one object per step or evaluation, read back by
// read_jsonl to compare runs) and TensorBoard event files for scalars, written without a
// protobuf library.
//
// JSON lines: every line is one complete object written with one write(2) on a file opened
// with O_APPEND, so a crash leaves whole lines only, and several processes may share a file.
// Keys come in a fixed order: "type" ("step" or "eval"), "step", "epoch", the record's fields in
// declaration order (an unset optional field is left out), then the extra scalars in name order.
// Doubles are written with the shortest text that reads back to the same bits, always with a
// '.' or an exponent (so a reader sees a float, and -0.0 keeps its sign). JSON has no NaN or
// infinity: they are written as the strings "NaN", "Infinity" and "-Infinity" (not null, so a
// diverged loss stays distinguishable from a missing one), and read_jsonl turns them back.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ox::io {

// One training step: `logger.log_step({.step = s, .epoch = e, .loss = l, .lr = lr})`.
struct StepRecord {
  int64_t step = 0;
  int64_t epoch = 0;
  double loss = 0.0;
  double lr = 0.0;
  std::optional<double> grad_norm = std::nullopt;
  std::optional<double> samples_per_s = std::nullopt;
  double elapsed_s = 0.0;
  std::map<std::string, double> extra = {};  // more named scalars ("loss_scale", ...)
};

// One evaluation: `logger.log_eval({.step = s, .epoch = e, .loss = l, .accuracy = a})`.
struct EvalRecord {
  int64_t step = 0;
  int64_t epoch = 0;
  double loss = 0.0;
  std::optional<double> accuracy = std::nullopt;
  double elapsed_s = 0.0;
  std::map<std::string, double> extra = {};
};

// Appends records to a JSON-lines file (created with mode 0666 less the umask if missing).
// Failing OS calls are Io errors naming the path; an extra scalar named like a fixed key
// ("type", "step", "loss", ...) or with an empty name is a Value error. A logger holds no state
// but the descriptor, so threads may share one; lines from several loggers never interleave.
class JsonlLogger {
 public:
  explicit JsonlLogger(const std::string& path);
  ~JsonlLogger();
  JsonlLogger(JsonlLogger&& other) noexcept;
  JsonlLogger& operator=(JsonlLogger&& other) noexcept;
  JsonlLogger(const JsonlLogger&) = delete;
  JsonlLogger& operator=(const JsonlLogger&) = delete;

  void log_step(const StepRecord& record);
  void log_eval(const EvalRecord& record);
  // Lines reach the OS as they are logged; flush() also makes them durable (fsync).
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_line(const std::string& line);
  std::string path_;
  int fd_ = -1;
};

// One line of a JSON-lines log, as read back: every number other than step and epoch (the
// record's fields and its extras) is in `scalars`, "NaN"/"Infinity"/"-Infinity" as doubles.
struct LogRecord {
  std::string type;  // "step" or "eval"
  int64_t step = 0;
  int64_t epoch = 0;
  std::map<std::string, double> scalars;
  int64_t line = 0;  // 1-based line number in the file
};

// Reads a JSON-lines log. A line that is not a JSON object, lacks "type"/"step"/"epoch", has a
// type other than "step"/"eval", a non-integer step or epoch, or a value that is not a number
// (or one of the three strings above) is a Format error "[read_jsonl] <path>:<line>: ...".
// Only the final newline may be followed by nothing; an empty line elsewhere is an error.
// A file that cannot be read is an Io error.
std::vector<LogRecord> read_jsonl(const std::string& path);

// Writes TensorBoard event files: `events.out.tfevents.<unix seconds>.<hostname>` in `logdir`
// (created with its parents if missing; a name already taken gets a ".1", ".2"... suffix).
// Records are TFRecord frames of hand-encoded tensorflow.Event protobufs; the first holds
// file_version "brain.Event:2". Records are buffered and written on flush(), when the buffer
// grows past 64 KiB, and by the destructor (which swallows errors; call flush() to see them).
// OS failures are Io errors naming the path. One thread at a time: a writer is not locked.
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::string& logdir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One scalar (stored as a float, as TensorBoard's simple_value is) at `step`; `wall_time`
  // in seconds since the epoch, now when not given.
  void add_scalar(std::string_view tag, double value, int64_t step,
                  std::optional<double> wall_time = std::nullopt);
  // Several scalars in one event (one Summary with a value per entry, in name order).
  void add_scalars(const std::map<std::string, double>& values, int64_t step,
                   std::optional<double> wall_time = std::nullopt);
  void flush();
  // The event file's full path.
  const std::string& path() const { return path_; }

 private:
  void append_record(const std::string& event);
  std::string path_;
  int fd_ = -1;
  std::string pending_;
};

}  // namespace ox::io
