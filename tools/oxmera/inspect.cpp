// `oxmera inspect FILE.safetensors [--stats]`: the names, dtypes, shapes, sizes and offsets of a
// weights file, its metadata and totals; --stats adds value statistics per tensor. A file that
// does not parse prints its typed error and exits 2.

#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "commands.h"

namespace oxcli {

namespace {

std::string shape_text(const ox::Shape& shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  if (unit == 0)
    out << bytes << " B";
  else
    out << std::fixed << std::setprecision(1) << value << " " << units[unit];
  return out.str();
}

// min, max, mean and std of the finite values, and the NaN and Inf counts, in f64.
std::string stats_text(const ox::Tensor& t) {
  if (t.numel() == 0) return "empty";
  const ox::Tensor x = t.dtype() == ox::kBool ? t.to(ox::kU8).to(ox::kF64) : t.to(ox::kF64);
  const int64_t nan = ox::isnan(x).sum().item<int64_t>();
  const int64_t inf = ox::isinf(x).sum().item<int64_t>();
  const ox::Tensor finite = ox::masked_select(x, ox::isfinite(x));
  std::ostringstream out;
  out << std::setprecision(6);
  if (finite.numel() > 0) {
    out << "min " << finite.min().item<double>() << "  max " << finite.max().item<double>()
        << "  mean " << finite.mean().item<double>() << "  std "
        << (finite.numel() > 1 ? finite.std().item<double>() : 0.0);
  } else {
    out << "no finite values";
  }
  out << "  nan " << nan << "  inf " << inf;
  return out.str();
}

}  // namespace

Runner add_inspect(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("inspect", "what a .safetensors file holds");
  auto path = std::make_shared<std::string>();
  auto stats = std::make_shared<bool>(false);
  cmd->add_option("file", *path, "a .safetensors file")->required();
  cmd->add_flag("--stats", *stats, "min/max/mean/std and NaN/Inf counts per tensor");
  return [path, stats] {
    try {
      const ox::SafetensorsFile file = ox::SafetensorsFile::open(*path);
      size_t name_width = 4, shape_width = 5;
      for (const std::string& name : file.keys()) {
        name_width = std::max(name_width, name.size());
        shape_width = std::max(shape_width, shape_text(file.info(name).shape).size());
      }
      std::cout << *path << ": " << file.size() << " tensors\n";
      std::cout << std::left << std::setw(int(name_width)) << "name"
                << "  " << std::setw(5) << "dtype"
                << "  " << std::setw(int(shape_width)) << "shape"
                << "  " << std::setw(10) << "bytes"
                << "  offsets\n";
      uint64_t total_bytes = 0;
      int64_t total_elements = 0;
      for (const std::string& name : file.keys()) {
        const ox::SafetensorsTensorInfo& info = file.info(name);
        total_bytes += info.end - info.begin;
        int64_t elements = 1;
        for (int64_t d : info.shape) elements *= d;
        total_elements += elements;
        std::ostringstream dtype;
        dtype << info.dtype;
        std::cout << std::left << std::setw(int(name_width)) << name << "  " << std::setw(5)
                  << dtype.str() << "  " << std::setw(int(shape_width)) << shape_text(info.shape)
                  << "  " << std::setw(10) << bytes_text(info.end - info.begin) << "  ["
                  << info.begin << ", " << info.end << ")\n";
        if (*stats) std::cout << "    " << stats_text(file.get(name)) << "\n";
      }
      if (!file.metadata().empty()) {
        std::cout << "metadata:\n";
        for (const auto& [key, value] : file.metadata())
          std::cout << "  " << key << ": " << value << "\n";
      }
      std::cout << "total: " << file.size() << " tensors, " << total_elements << " elements, "
                << bytes_text(total_bytes) << " of data (header " << file.data_start()
                << " bytes)\n";
      return 0;
    } catch (const ox::Error& e) {
      std::fprintf(stderr, "oxmera inspect: %s: %s error: %s\n", path->c_str(),
                   ox::error_kind_name(e.kind()), e.what());
      return 2;
    }
  };
}

}  // namespace oxcli
