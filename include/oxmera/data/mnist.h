#pragma once
// IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed, and the MNIST dataset.

#include <cstdint>
#include <filesystem>

#include "oxmera/data/dataset.h"

namespace ox::data {

// The tensor in an IDX file (u8, i8, i16, i32, f32 or f64 as its type byte says), gzip
// decompressed when the file starts with 1f 8b. Every header field is checked against the
// bytes actually read: ErrorKind::Format (naming the path and the fault) for a bad header, a
// truncated file, trailing bytes or a corrupt gzip stream; Io when the file cannot be read.
Tensor read_idx(const std::filesystem::path& path);

// MNIST-layout files in `root`: {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte, each
// plain or with .gz. Images are f32 [1, H, W] scaled to [0, 1]; labels 0-d i64. Images must
// be u8 [N, H, W] and labels u8 [N] (Format).
class MnistDataset : public Dataset {
 public:
  explicit MnistDataset(const std::filesystem::path& root, bool train = true);
  int64_t size() const override;
  Example get(int64_t index) const override;
  const Tensor& images() const { return images_; }  // u8 [N, H, W]
  const Tensor& labels() const { return labels_; }  // i64 [N]

 private:
  Tensor images_, labels_;
};

}  // namespace ox::data
