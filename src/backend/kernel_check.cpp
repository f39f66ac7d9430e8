// The table of check sites, and the message of a failed check.

#include "backend/kernel_check.h"

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "oxmera/core/error.h"

namespace ox {

namespace {

struct Site {
  std::string op, message;
  ErrorKind kind = ErrorKind::Index;
};

// Sites are few (an op, and a dim or two in its message), but a program could make new ones
// without end (a message that names a shape); past the cap they share the generic message.
constexpr size_t kMaxSites = 1 << 14;

struct SiteTable {
  std::mutex mutex;
  std::deque<Site> sites;  // a deque: references stay valid as it grows
  std::unordered_map<std::string, CheckSite> ids;
};

SiteTable& table() {
  static SiteTable t;
  return t;
}

void append(std::string& out, std::string_view text, const CheckFailure& f) {
  while (!text.empty()) {
    const size_t open = text.find('{');
    const size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      out += text;
      return;
    }
    out += text.substr(0, open);
    const std::string_view name = text.substr(open + 1, close - open - 1);
    if (name == "value")
      out += std::to_string(f.value);
    else if (name == "position")
      out += std::to_string(f.position);
    else if (name == "bound")
      out += std::to_string(f.bound);
    else
      out += text.substr(open, close - open + 1);
    text.remove_prefix(close + 1);
  }
}

}  // namespace

CheckSite check_site(std::string_view op, std::string_view message, ErrorKind kind) {
  SiteTable& t = table();
  std::string key(1, static_cast<char>(kind));
  key.append(op).push_back('\0');
  key.append(message);
  const std::lock_guard lock(t.mutex);
  if (auto it = t.ids.find(key); it != t.ids.end()) return it->second;
  if (t.sites.size() >= kMaxSites) return -1;
  const auto id = static_cast<CheckSite>(t.sites.size());
  t.sites.push_back({std::string(op), std::string(message), kind});
  t.ids.emplace(std::move(key), id);
  return id;
}

void raise_check_failure(const CheckFailure& f) {
  Site site{"kernel", "value {value} at position {position} is out of bounds for size {bound}"};
  if (f.site >= 0) {
    SiteTable& t = table();
    const std::lock_guard lock(t.mutex);
    if (static_cast<size_t>(f.site) < t.sites.size()) site = t.sites[static_cast<size_t>(f.site)];
  }
  std::string text;
  append(text, site.message, f);
  throw Error(site.kind, "[" + site.op + "] " + text);
}

}  // namespace ox
