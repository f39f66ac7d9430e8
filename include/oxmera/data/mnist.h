#pragma once
// IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed, and the MNIST dataset.

#include <cstdint>
#include <filesystem>

#include "oxmera/data/dataset.h"

namespace ox::data {

// The tensor in an IDX file (u8, i8, i16, i32, f32 or f64 as its type byte says), gzip
// decompressed when the file starts with 1f 8b (every member of a multi-member file, as gzip
// itself reads `cat a.gz b.gz`). Every header field is checked against the bytes actually
// there before anything is allocated by it: ErrorKind::Format (naming the path and the fault)
// for a bad header, a size the file cannot hold (a plain file's size; the most a gzip file can
// inflate to), a truncated file, trailing bytes or a corrupt gzip stream; Io when the path is
// not a regular file (checked with stat before opening: a FIFO, folder or device is refused,
// never read) or cannot be read; OutOfMemory when memory runs out (a gzip bomb).
Tensor read_idx(const std::filesystem::path& path);

// MNIST-layout files in `root`: {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte, each
// plain or with .gz. Images are f32 [1, H, W] scaled to [0, 1]; labels 0-d i64. Images must
// be u8 [N, H, W] and labels u8 [N] (Format); with num_classes > 0 every label must be in
// [0, num_classes) (Format naming the first bad example). `root` must be a folder (Io).
class MnistDataset : public Dataset {
 public:
  explicit MnistDataset(const std::filesystem::path& root, bool train = true,
                        int64_t num_classes = 0);
  int64_t size() const override;
  Example get(int64_t index) const override;
  const Tensor& images() const { return images_; }  // u8 [N, H, W]
  const Tensor& labels() const { return labels_; }  // i64 [N]

 private:
  Tensor images_, labels_;
};

}  // namespace ox::data
