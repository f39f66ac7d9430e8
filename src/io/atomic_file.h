#pragma once
// Writing a file so that a crash or a failure at any point leaves either the old file or the
// complete new one under `path`, never a truncated mix: the contents go to a temporary file
// in the same folder, which is fsynced, renamed over `path`, and the folder fsynced so the
// rename itself is durable. Safetensors saving uses it; checkpoints will too.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace ox::io {

// Calls `write_contents(fd)` with a file descriptor open for writing on the temporary file,
// then makes it `path`. Any failure (an OS call, or an exception from `write_contents`)
// removes the temporary file; OS failures are ErrorKind::Io errors naming `op`, the path
// and strerror. The new file is created with mode 0666 less the umask, as open(2) would.
void write_file_atomically(const std::string& path,
                           const std::function<void(int fd)>& write_contents,
                           std::string_view op = "write_file_atomically");

// write(2) until all `size` bytes are written (retrying short writes and EINTR); an Io error
// naming `op` and `path` otherwise.
void write_all(int fd, const void* data, size_t size, const std::string& path, std::string_view op);

}  // namespace ox::io
