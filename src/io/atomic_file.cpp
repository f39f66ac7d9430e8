#include "io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/file_check.h"
#include "oxmera/core/error.h"

namespace ox::io {
namespace {

[[noreturn]] void fail_os(std::string_view op, const std::string& what, const std::string& path,
                          int error) {
  OX_FAIL(Io, op, "cannot ", what, " '", path, "': ", std::strerror(error));
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ".<base>.tmp.": every temporary file of `path` starts so, followed by
// "<pid>.<counter>.<ticks>" (temporary_name), which is how stale ones are recognized.
std::string temporary_prefix(const std::string& path) {
  std::string prefix = ".";  // appended, not "." + ...: GCC 12 warns (-Wrestrict) on that falsely
  prefix += base_of(path);
  prefix += ".tmp.";
  return prefix;
}

// A name no other writer (thread or process) picks at the same time; O_EXCL settles the rest.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  return folder + temporary_prefix(path) + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1)) + "." + std::to_string(ticks & 0xFFFFFF);
}

// The writer's pid in a name of temporary_name's form after the prefix ("<pid>.<n>.<n>"), or
// -1 when the rest is not exactly three dot-separated decimal numbers.
pid_t writer_of(std::string_view rest) {
  int64_t pid = 0;
  for (int field = 0; field < 3; ++field) {
    if (field > 0) {
      if (!rest.starts_with('.')) return -1;
      rest.remove_prefix(1);
    }
    const size_t end = std::min(rest.find('.'), rest.size());
    if (end == 0 || end > 18) return -1;
    int64_t number = 0;
    for (char c : rest.substr(0, end)) {
      if (c < '0' || c > '9') return -1;
      number = number * 10 + (c - '0');
    }
    if (field == 0) pid = number;
    rest.remove_prefix(end);
  }
  if (!rest.empty() || pid <= 0 || pid > INT32_MAX) return -1;
  return static_cast<pid_t>(pid);
}

// Removes the temporary files of earlier saves of `path` whose writer process no longer exists
// (a save killed mid-write leaves its temporary file behind; nothing else ever removes it).
// Only names of exactly our form, only regular files, and only when kill(pid, 0) says ESRCH:
// a live writer (this process's other threads, another process) keeps its file. A writer in
// another pid namespace or on another machine sharing the folder would look gone: such setups
// must not save the same target concurrently.
void remove_stale_temporaries(const std::string& path) {
  const std::string folder = folder_of(path), prefix = temporary_prefix(path);
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;  // the save itself reports what is wrong with the folder
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (!name.starts_with(prefix)) continue;
    const pid_t pid = writer_of(name.substr(prefix.size()));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) stale.emplace_back(name);
  }
  ::closedir(dir);
  for (const std::string& name : stale) {
    const std::string full = folder + "/" + name;
    struct stat info {};
    if (::lstat(full.c_str(), &info) == 0 && S_ISREG(info.st_mode)) ::unlink(full.c_str());
  }
}

// The target may be missing or a regular file. Anything else would be replaced by the rename, or is
// a device whose contents are not a file's: refused before anything is written.
// `given` is the path as the caller wrote it, named in the error when a link led elsewhere.
void require_replaceable(const std::string& path, const std::string& given, std::string_view op) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return;  // missing (or unreachable: creating says why)
  OX_CHECK(S_ISREG(info.st_mode), Io, op, "'", given, "' ",
           given == path ? "" : "links to '" + path + "', which ",
           ox::detail::file_status(path).what, ", not a regular file: refusing to replace it");
}

// Removes the temporary file unless released, so every early exit cleans up.
class TemporaryFile {
 public:
  TemporaryFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(name_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  int fd() const { return fd_; }
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }
  void release() { released_ = true; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_;
  bool released_ = false;
};

}  // namespace

void write_all(int fd, const void* data, size_t size, const std::string& path,
               std::string_view op) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_os(op, "write", path, errno);
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

// A save through a symbolic link replaces the file the link names (as torch.save, which opens
// the path, writes through it); the link stays. A dangling link or a loop is saved as the link.
std::string through_links(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return path;
  std::error_code error;
  const std::filesystem::path target = std::filesystem::canonical(path, error);
  return error ? path : target.string();
}

void write_file_atomically(const std::string& link_or_path,
                           const std::function<void(int fd)>& write_contents, std::string_view op) {
  OX_CHECK(!link_or_path.empty() && link_or_path.back() != '/', Value, op, "'", link_or_path,
           "' is not a file path");
  const std::string path = through_links(link_or_path);
  require_replaceable(path, link_or_path, op);
  remove_stale_temporaries(path);
  int fd = -1;
  std::string name;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    name = temporary_name(path);
    fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) fail_os(op, "create a temporary file for", path, errno);
  }
  if (fd < 0) fail_os(op, "create a temporary file for", path, EEXIST);
  TemporaryFile temporary(name, fd);

  write_contents(temporary.fd());
  if (::fsync(temporary.fd()) != 0) fail_os(op, "fsync", path, errno);
  if (temporary.close() != 0) fail_os(op, "close", path, errno);
  require_replaceable(path, link_or_path,
                      op);  // again: it may have changed while the contents were written
  if (::rename(temporary.name().c_str(), path.c_str()) != 0)
    fail_os(op, "rename onto", path, errno);
  temporary.release();

  // The rename is only durable once the folder's entry is; some file systems refuse fsync on
  // a folder (EINVAL), where there is nothing more to do.
  const std::string folder = folder_of(path);
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd < 0) fail_os(op, "open the folder of", path, errno);
  const int synced = ::fsync(folder_fd);
  const int error = errno;
  ::close(folder_fd);
  if (synced != 0 && error != EINVAL) fail_os(op, "fsync the folder of", path, error);
}

}  // namespace ox::io
