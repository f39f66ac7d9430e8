#pragma once
// ox::Error: the one exception type of oxmera, tagged with an ErrorKind.

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ox {

enum class ErrorKind {
  Shape,
  DType,
  Device,
  Index,
  Value,
  Empty,
  Io,
  Format,
  Backend,
  OutOfMemory,  // an allocation failed (std::bad_alloc inside oxmera becomes this)
  NotImplemented,
  Distributed,  // a collective failed: a rank left or stalled, or the ranks disagree
  Internal,
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {

// Streams every argument, so messages can name shapes, dtypes and devices directly.
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

[[noreturn]] void throw_error(ErrorKind kind, std::string_view op, const std::string& message);
[[noreturn]] void throw_internal(const char* file, int line, const char* condition,
                                 const std::string& message);

}  // namespace detail
}  // namespace ox

// A user error: `OX_CHECK(a.dim() == 2, Shape, "mm", "expected 2-D, got ", a.shape())`
// throws ox::Error{ErrorKind::Shape, "[mm] expected 2-D, got [3]"}.
#define OX_CHECK(cond, kind, op, ...)                                                          \
  do {                                                                                         \
    if (!(cond)) [[unlikely]]                                                                  \
      ::ox::detail::throw_error(::ox::ErrorKind::kind, op, ::ox::detail::concat(__VA_ARGS__)); \
  } while (0)

#define OX_FAIL(kind, op, ...) \
  ::ox::detail::throw_error(::ox::ErrorKind::kind, op, ::ox::detail::concat(__VA_ARGS__))

// An internal invariant: failing it is a bug in oxmera, never in the caller's input.
#define OX_ASSERT(cond, ...)                                                             \
  do {                                                                                   \
    if (!(cond)) [[unlikely]]                                                            \
      ::ox::detail::throw_internal(__FILE__, __LINE__, #cond,                            \
                                   ::ox::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
