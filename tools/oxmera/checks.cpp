#include "checks.h"

#include "commands.h"

#include <oxmera/oxmera.h>
#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <type_traits>

// The library's stat-only file check (src/core, not installed): one wording for every reader.
#include "core/file_check.h"

namespace oxcli {

namespace {

namespace fs = std::filesystem;
using ox::detail::FileKind;

// Decimal digits with an optional sign and nothing around them; from_chars alone would also
// take a prefix ("12abc") and CLI11 would take hex, octal and saturated values.
template <class T>
bool parse_whole(std::string_view text, T& out) {
  const bool plus = !text.empty() && text.front() == '+';
  if (plus) text.remove_prefix(1);
  const bool digit_first = !text.empty() && text.front() >= '0' && text.front() <= '9';
  if (!digit_first && (plus || text.empty() || text.front() != '-')) return false;  // "+-5"
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, out);
  return error == std::errc() && ptr == end;
}

template <class T>
CLI::Option* add_whole(CLI::App* cmd, const std::string& name, T& target, T min, T max,
                       const std::string& help) {
  const auto store = [&target, name, min, max](const std::string& text) {
    T value{};
    if (!parse_whole(text, value) || value < min || value > max)
      throw CLI::ValidationError(name, "'" + text + "' is not a whole number in [" +
                                           std::to_string(min) + ", " + std::to_string(max) + "]");
    target = value;
  };
  CLI::Option* option = cmd->add_option_function<std::string>(name, store, help)->type_name("INT");
  // A default outside the range (0: "the recipe's") is said by the help text, not as a number.
  if (target >= min && target <= max) option->default_str(std::to_string(target));
  return option;
}

std::string compact(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

int hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The folder must exist and take new files (the checkpoint writer makes a temporary beside
// its target; the logs create theirs).
void check_writable_folder(const std::string& folder, const std::string& path, const char* flag) {
  const ox::detail::FileStatus status = ox::detail::file_status(folder);
  OX_CHECK(status.kind == FileKind::kFolder, Io, flag, "the folder '", folder, "' of '", path, "' ",
           status.what, status.kind == FileKind::kMissing ? "" : ", not a usable folder");
  OX_CHECK(::access(folder.c_str(), W_OK | X_OK) == 0, Io, flag, "cannot write in the folder '",
           folder, "' of '", path, "' (", std::strerror(errno), ")");
}

}  // namespace

CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, int64_t& target,
                                int64_t min, int64_t max, const std::string& help) {
  return add_whole(cmd, name, target, min, max, help);
}

CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, uint64_t& target,
                                uint64_t min, uint64_t max, const std::string& help) {
  return add_whole(cmd, name, target, min, max, help);
}

CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, int& target, int min,
                                int max, const std::string& help) {
  return add_whole(cmd, name, target, min, max, help);
}

CLI::Option* add_real_option(CLI::App* cmd, const std::string& name, double& target,
                             double exclusive_min, double max, const std::string& help) {
  const auto store = [&target, name, exclusive_min, max](const std::string& text) {
    std::string_view digits = text;
    const bool plus = !digits.empty() && digits.front() == '+';
    if (plus) digits.remove_prefix(1);
    double value = 0;
    const char* end = digits.data() + digits.size();
    const auto [ptr, error] = std::from_chars(digits.data(), end, value);
    // Subnormals are refused too: they hold fewer digits than were written.
    const bool signed_twice =
        plus && !digits.empty() && (digits.front() == '-' || digits.front() == '+');
    const bool exact = !digits.empty() && !signed_twice && error == std::errc() && ptr == end &&
                       std::isfinite(value) && (value == 0 || std::isnormal(value));
    if (!exact || !(value > exclusive_min && value <= max))
      throw CLI::ValidationError(name, "'" + text + "' is not a finite number in (" +
                                           compact(exclusive_min) + ", " + compact(max) + "]");
    target = value;
  };
  return cmd->add_option_function<std::string>(name, store, help)->type_name("NUMBER");
}

int threads_to_use(int requested, const char* command) {
  if (requested <= 0) return 0;
  const int hardware = hardware_threads();
  if (requested <= hardware) return requested;
  std::fprintf(stderr, "%s: --threads %d is more than the %d hardware threads here; using %d\n",
               command, requested, hardware, hardware);
  return hardware;
}

void check_input_file(const std::string& path, const char* flag) {
  ox::detail::require_regular_file(path, flag);
}

void check_input_folder(const std::string& path, const char* flag) {
  ox::detail::require_folder(path, flag);
}

void check_output_file(const std::string& path, const char* flag, bool append) {
  OX_CHECK(!path.empty(), Io, flag, "the file name is empty");
  const ox::detail::FileStatus status = ox::detail::file_status(path);
  OX_CHECK(status.kind == FileKind::kRegular || status.kind == FileKind::kMissing, Io, flag, "'",
           path, "' ", status.what,
           status.kind == FileKind::kUnreachable ? "" : ", not a regular file: give a file name");
  check_writable_folder(folder_of(path), path, flag);
  OX_CHECK(!append || status.kind == FileKind::kMissing || ::access(path.c_str(), W_OK) == 0, Io,
           flag, "cannot write '", path, "' (", std::strerror(errno), ")");
}

void check_checkpoint_destination(const std::string& path, const char* flag, bool overwrite) {
  // An existing file (through any symbolic link) is replaced only if it is a checkpoint, such
  // as the one an earlier run of the same command wrote: never a user's other file by mistake.
  if (!overwrite && ox::detail::file_status(path).kind == FileKind::kRegular) {
    std::string why;
    try {
      ox::SafetensorsFile::open(path);
    } catch (const ox::Error& e) {
      why = e.what();
    }
    OX_CHECK(why.empty(), Io, flag, "'", path, "' exists and is not a safetensors checkpoint (",
             why, "): give another file name, or --overwrite to replace it");
  }
  // The checkpoint is written to a temporary file beside it and renamed over it: make one now,
  // so that a place no file can be made in (/proc, /sys, a read-only mount) fails before the
  // run trains, not after.
  std::string probe = (fs::path(folder_of(path)) / ".oxmera-save-check-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  OX_CHECK(fd >= 0, Io, flag, "cannot create a file in the folder '", folder_of(path), "' of '",
           path, "' (", std::strerror(errno), ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_folder(const std::string& path, const char* flag) {
  OX_CHECK(!path.empty(), Io, flag, "the folder name is empty");
  const ox::detail::FileStatus status = ox::detail::file_status(path);
  if (status.kind == FileKind::kFolder) {
    OX_CHECK(::access(path.c_str(), W_OK | X_OK) == 0, Io, flag, "cannot write in the folder '",
             path, "' (", std::strerror(errno), ")");
    return;
  }
  OX_CHECK(status.kind == FileKind::kMissing, Io, flag, "'", path, "' ", status.what,
           status.kind == FileKind::kUnreachable ? "" : ", not a folder");
  // Created with its missing parents: the nearest ancestor that exists must take them.
  std::error_code error;
  fs::path ancestor = fs::absolute(path, error).lexically_normal();
  while (ancestor.has_parent_path() && ancestor != ancestor.root_path() &&
         ox::detail::file_status(ancestor.string()).kind == FileKind::kMissing)
    ancestor = ancestor.parent_path();
  check_writable_folder(ancestor.string(), path, flag);
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code error;
  if (fs::equivalent(a, b, error) && !error) return true;
  // Absolute first: weakly_canonical leaves a relative path with no existing part relative.
  const auto canonical = [](const std::string& path) {
    std::error_code error;
    const fs::path absolute = fs::absolute(path, error).lexically_normal();
    fs::path out = fs::weakly_canonical(absolute, error);
    return error ? absolute : out;
  };
  return canonical(a) == canonical(b);
}

void check_distinct(const char* flag_a, const std::string& a, const char* flag_b,
                    const std::string& b) {
  OX_CHECK(!same_file(a, b), Value, "oxmera train", flag_a, " and ", flag_b,
           " name the same file ('", a, "' and '", b, "'); one would overwrite the other");
}

}  // namespace oxcli

namespace oxcli {

int run_guarded(const std::string& command, const Runner& run) {
  const char* name = command.c_str();
  try {
    return run();
  } catch (const ox::Error& e) {
    std::fprintf(stderr, "oxmera %s: %s error: %s\n", name, ox::error_kind_name(e.kind()),
                 e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // Only paths from the command line reach std::filesystem here.
    std::fprintf(stderr, "oxmera %s: Io error: %s\n", name, e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "oxmera %s: OutOfMemory error: not enough memory\n", name);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oxmera %s: error: %s\n", name, e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "oxmera %s: error: an unknown exception\n", name);
    return 1;
  }
}

}  // namespace oxcli
