#include "core/file_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "oxmera/core/error.h"

namespace ox::detail {
namespace {

FileStatus of_mode(mode_t mode, uint64_t size) {
  if (S_ISREG(mode)) return {FileKind::kRegular, "is a regular file", size};
  if (S_ISDIR(mode)) return {FileKind::kFolder, "is a folder", 0};
  if (S_ISFIFO(mode)) return {FileKind::kOther, "is a FIFO (named pipe)", 0};
  if (S_ISCHR(mode)) return {FileKind::kOther, "is a character device", 0};
  if (S_ISBLK(mode)) return {FileKind::kOther, "is a block device", 0};
  if (S_ISSOCK(mode)) return {FileKind::kOther, "is a socket", 0};
  return {FileKind::kOther, "is not a regular file", 0};
}

// Why stat failed, in words a user can act on (strerror's are terse for the common cases).
FileStatus of_error(int error) {
  switch (error) {
    case ENOENT:
      return {FileKind::kMissing, "does not exist", 0};
    case ENOTDIR:
      return {FileKind::kUnreachable, "does not exist (a part of its folder path is not a folder)",
              0};
    case ENAMETOOLONG:
      return {FileKind::kUnreachable, "has a name too long for this system", 0};
    case ELOOP:
      return {FileKind::kUnreachable, "cannot be resolved (a loop of symbolic links)", 0};
    case EACCES:
      return {FileKind::kUnreachable,
              "cannot be reached (permission denied on a folder of its path)", 0};
    default:
      return {FileKind::kUnreachable,
              std::string("cannot be examined (") + std::strerror(error) + ")", 0};
  }
}

}  // namespace

FileStatus file_status(const std::string& path) {
  if (path.empty()) return {FileKind::kMissing, "is an empty name", 0};
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return of_error(errno);
  return of_mode(info.st_mode, static_cast<uint64_t>(info.st_size));
}

std::uint64_t require_regular_file(const std::string& path, std::string_view op) {
  const FileStatus status = file_status(path);
  OX_CHECK(status.kind == FileKind::kRegular, Io, op, "'", path, "' ", status.what,
           status.kind == FileKind::kFolder || status.kind == FileKind::kOther
               ? ", not a regular file"
               : "");
  return status.size;
}

FdCloser::~FdCloser() {
  if (fd_ >= 0) ::close(fd_);
}

std::string read_to_end(int fd, const std::string& path, std::string_view op, std::uint64_t limit) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return bytes;
    if (n < 0 && errno == EINTR) continue;
    OX_CHECK(n > 0, Io, op, "error reading '", path, "': ", std::strerror(errno));
    OX_CHECK(bytes.size() + size_t(n) <= limit, Io, op, "'", path,
             "' reports no size and holds more than ", limit, " bytes");
    bytes.append(buffer, size_t(n));
  }
}

void require_folder(const std::string& path, std::string_view op) {
  const FileStatus status = file_status(path);
  OX_CHECK(
      status.kind == FileKind::kFolder, Io, op, "'", path, "' ", status.what,
      status.kind == FileKind::kRegular || status.kind == FileKind::kOther ? ", not a folder" : "");
}

}  // namespace ox::detail
