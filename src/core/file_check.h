#pragma once
// Checks a path names a regular file before anything opens it for reading: opening a FIFO
// blocks until a writer appears, and a folder or device opens "fine" and then reads nonsense,
// no bytes, or without end. One helper, so every reader refuses with the same words.

#include <cstdint>
#include <string>
#include <string_view>

namespace ox::detail {

enum class FileKind { kMissing, kRegular, kFolder, kOther, kUnreachable };

// What stat (following symbolic links) says of a path, never throwing for odd names.
struct FileStatus {
  FileKind kind = FileKind::kMissing;
  // A predicate for messages "'PATH' <what>": "is a regular file", "is a folder", "is a FIFO
  // (named pipe)", "is a character device", "does not exist", "has a name too long for this
  // system", "cannot be resolved (a loop of symbolic links)", ...
  std::string what;
  uint64_t size = 0;  // bytes, for a regular file
};
FileStatus file_status(const std::string& path);

// Throws ox::Error{Io} "[op] 'PATH' is a folder, not a regular file" (or "does not exist", "has
// a name too long ...", "cannot be resolved (a loop of symbolic links)", ...) unless `path` is a
// regular file (after following symbolic links). Uses stat, never open, so a FIFO cannot block
// it. Returns the file's size in bytes, which readers use to bound the counts a header declares.
std::uint64_t require_regular_file(const std::string& path, std::string_view op);

// The bytes of the open file `fd` from its current position to its end, for a regular file
// whose size the kernel reports as 0 (/proc, /sys: the bytes are made as they are read, so
// stat's size is no bound). More than `limit` bytes is an Io error naming `op` and `path`.
std::string read_to_end(int fd, const std::string& path, std::string_view op,
                        std::uint64_t limit = std::uint64_t(1) << 28);

// Closes a file descriptor when it goes out of scope (the readers' every return and throw).
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser();
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// The same for a folder: Io "[op] 'PATH' is a regular file, not a folder", ...
void require_folder(const std::string& path, std::string_view op);

}  // namespace ox::detail
