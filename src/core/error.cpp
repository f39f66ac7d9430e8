#include "oxmera/core/error.h"

namespace ox {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Shape:
      return "Shape";
    case ErrorKind::DType:
      return "DType";
    case ErrorKind::Device:
      return "Device";
    case ErrorKind::Index:
      return "Index";
    case ErrorKind::Value:
      return "Value";
    case ErrorKind::Empty:
      return "Empty";
    case ErrorKind::Io:
      return "Io";
    case ErrorKind::Format:
      return "Format";
    case ErrorKind::Backend:
      return "Backend";
    case ErrorKind::OutOfMemory:
      return "OutOfMemory";
    case ErrorKind::NotImplemented:
      return "NotImplemented";
    case ErrorKind::Distributed:
      return "Distributed";
    case ErrorKind::Internal:
      return "Internal";
  }
  return "Unknown";
}

namespace detail {

void throw_error(ErrorKind kind, std::string_view op, const std::string& message) {
  std::string text;
  text.reserve(op.size() + message.size() + 3);
  text += '[';
  text += op;
  text += "] ";
  text += message;
  throw Error(kind, text);
}

void throw_internal(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(ErrorKind::Internal,
              concat("[internal] ", file, ":", line, ": ", condition, message.empty() ? "" : " ",
                     message, " (a bug in oxmera; please report it)"));
}

}  // namespace detail
}  // namespace ox
