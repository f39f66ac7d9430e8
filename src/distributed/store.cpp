// FileStore (a directory on a file system every rank shares) and PrefixStore.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "oxmera/distributed.h"

namespace ox::distributed {

namespace fs = std::filesystem;

namespace {

// Keys become file names: every byte outside [A-Za-z0-9_-] is written as %XX.
std::string escape(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '_' || c == '-') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::optional<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Written whole under a temporary name, then renamed: readers never see half a value.
void write_file(const std::string& path, const std::vector<uint8_t>& value, const char* what) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), std::streamsize(value.size()));
    OX_CHECK(out.good(), Distributed, what, "cannot write ", tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  OX_CHECK(!ec, Distributed, what, "cannot rename ", tmp, " to ", path, ": ", ec.message());
}

}  // namespace

FileStore::FileStore(std::string directory, Milliseconds timeout)
    : directory_(std::move(directory)) {
  timeout_ = timeout;
  std::error_code ec;
  fs::create_directories(directory_, ec);
  OX_CHECK(!ec && fs::is_directory(directory_), Distributed, "FileStore", "cannot use directory ",
           directory_, ec ? ": " + ec.message() : "");
}

std::string FileStore::path_of(const std::string& key) const {
  return (fs::path(directory_) / ("k_" + escape(key))).string();
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  write_file(path_of(key), value, "FileStore.set");
}

std::vector<uint8_t> FileStore::get(const std::string& key) {
  wait({key});
  auto value = read_file(path_of(key));
  OX_CHECK(value.has_value(), Distributed, "FileStore.get", "key '", key, "' vanished");
  return *value;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  // One writer at a time: an exclusive lock on a file beside the keys.
  const std::string lock_path = (fs::path(directory_) / "lock").string();
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  OX_CHECK(fd >= 0, Distributed, "FileStore.add", "cannot open ", lock_path, ": ",
           std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  int64_t value = delta;
  try {
    if (auto old = read_file(path_of(key)))
      value += std::stoll(std::string(old->begin(), old->end()));
    const std::string text = std::to_string(value);
    write_file(path_of(key), {text.begin(), text.end()}, "FileStore.add");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // releases the lock
  return value;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (!fs::exists(path_of(k))) return false;
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = Milliseconds(1);
  while (!check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
      OX_FAIL(Distributed, "FileStore.wait", "timed out after ", timeout.count(),
              " ms waiting for keys ", names, " in ", directory_);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, Milliseconds(50));
  }
}

bool FileStore::delete_key(const std::string& key) {
  std::error_code ec;
  return fs::remove(path_of(key), ec);
}

PrefixStore::PrefixStore(std::string prefix, StorePtr store)
    : prefix_(std::move(prefix)), store_(std::move(store)) {
  OX_CHECK(store_ != nullptr, Value, "PrefixStore", "null store");
  timeout_ = store_->get_timeout();
}

void PrefixStore::set(const std::string& k, const std::vector<uint8_t>& value) {
  store_->set(key(k), value);
}
std::vector<uint8_t> PrefixStore::get(const std::string& k) { return store_->get(key(k)); }
int64_t PrefixStore::add(const std::string& k, int64_t delta) { return store_->add(key(k), delta); }
bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (const auto& k : keys) full.push_back(key(k));
  return store_->check(full);
}
void PrefixStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  std::vector<std::string> full;
  for (const auto& k : keys) full.push_back(key(k));
  store_->wait(full, timeout);
}
bool PrefixStore::delete_key(const std::string& k) { return store_->delete_key(key(k)); }

}  // namespace ox::distributed
