#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

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

// A name no other writer (thread or process) picks at the same time; O_EXCL settles the rest.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return folder + "." + base + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1)) + "." + std::to_string(ticks & 0xFFFFFF);
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

void write_file_atomically(const std::string& path,
                           const std::function<void(int fd)>& write_contents, std::string_view op) {
  OX_CHECK(!path.empty() && path.back() != '/', Value, op, "'", path, "' is not a file path");
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
