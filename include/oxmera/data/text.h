#pragma once
// Character-level text for language modelling: a vocabulary of Unicode code points and a
// dataset of (context, next-characters) windows over a UTF-8 file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "oxmera/data/dataset.h"

namespace ox::data {

// The sorted distinct code points of a text; id i is code_points()[i].
class Vocabulary {
 public:
  Vocabulary() = default;
  // Code points of valid UTF-8 text (Format for invalid UTF-8).
  static Vocabulary from_text(std::string_view utf8);
  // From a 1-d integer tensor of strictly increasing valid code points (as to_tensor gives),
  // e.g. read back from a checkpoint; Value otherwise.
  static Vocabulary from_tensor(const Tensor& code_points);

  int64_t size() const { return int64_t(code_points_.size()); }
  const std::vector<char32_t>& code_points() const { return code_points_; }
  // The ids of a UTF-8 string as i64 [n]; Format for invalid UTF-8, Value for a character
  // outside the vocabulary.
  Tensor encode(std::string_view utf8) const;
  // The UTF-8 text of a 1-d integer tensor of ids (Index for an id out of range).
  std::string decode(const Tensor& ids) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  // The code points as i32 [size()], to store with a model (a checkpoint's extra dict).
  Tensor to_tensor() const;

 private:
  std::vector<char32_t> code_points_;
};

// Examples (x = ids[i : i + context], y = ids[i + 1 : i + context + 1]), both i64 [context],
// for i in [0, characters - context). The file must hold more than `context` characters (Value)
// of valid UTF-8 (Format); a path that is not a regular file is refused before it is opened
// (Io: a FIFO, folder or device); OutOfMemory when the text does not fit in memory.
class TextDataset : public Dataset {
 public:
  TextDataset(const std::filesystem::path& path, int64_t context);
  int64_t size() const override;
  Example get(int64_t index) const override;
  const Vocabulary& vocabulary() const { return vocabulary_; }
  Tensor encode(std::string_view utf8) const { return vocabulary_.encode(utf8); }
  std::string decode(const Tensor& ids) const { return vocabulary_.decode(ids); }
  const Tensor& ids() const { return ids_; }  // the whole text, i64
  int64_t context() const { return context_; }

 private:
  void load(const std::string& source);
  Vocabulary vocabulary_;
  Tensor ids_;
  int64_t context_;
};

}  // namespace ox::data
