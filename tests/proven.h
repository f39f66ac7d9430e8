#pragma once
// Results of slow, deterministic checks, remembered by what decides them. Assembling a family's
// PTX with ptxas, or compiling its sources with NVRTC, gives the same answer for the same bytes
// and the same tool: a check whose key (the family's stamp, which hashes its sources, flags and
// compiler; the target; the tool's version) passed before is not run again, as the compiler
// cache does not compile a file again. The folder: $OXMERA_TEST_CACHE_DIR, else
// $XDG_CACHE_HOME/oxmera/tests, else $HOME/.cache/oxmera/tests; OXMERA_TEST_CACHE_DIR= (empty)
// runs every check.

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace oxtest {

inline std::filesystem::path proven_dir() {
  if (const char* dir = std::getenv("OXMERA_TEST_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::filesystem::path(xdg) / "oxmera" / "tests";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::filesystem::path(home) / ".cache" / "oxmera" / "tests";
  return {};
}

// The key as a file name: anything but [A-Za-z0-9._-] becomes '_'.
inline std::filesystem::path proven_file(std::string key) {
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  const std::filesystem::path dir = proven_dir();
  return dir.empty() ? dir : dir / key;
}

inline bool proven_before(const std::string& key) {
  const std::filesystem::path file = proven_file(key);
  std::error_code ec;
  return !file.empty() && std::filesystem::exists(file, ec);
}

// Remembers a passed check (best effort: a cache that cannot be written only costs time).
inline void remember_proven(const std::string& key) {
  const std::filesystem::path file = proven_file(key);
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream(file) << key << '\n';
}

}  // namespace oxtest
