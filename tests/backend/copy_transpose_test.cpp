// Transposing copies (the CPU copy kernel's cache-blocked path): a permuted, sliced or
// expanded view made contiguous, and contiguous values written into a transposed view, for
// every element size, odd and large sizes, with and without dtype conversion, at 1 and 2
// threads. Expected bytes are gathered here element by element from strides written by hand.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using ox::DType;
using ox::Tensor;
using Ints = std::vector<int64_t>;

// One dtype of each element size, plus the other 1- and 2-byte ones (bool holds 0/1 only).
const DType kTypes[] = {ox::kU8,  ox::kI8,  ox::kBool, ox::kF16, ox::kBF16,
                        ox::kI16, ox::kF32, ox::kI32,  ox::kF64, ox::kI64};

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// n elements of `dt` as distinct-looking bit patterns (NaN payloads included for floats:
// a same-dtype copy must move bits).
std::vector<unsigned char> pattern(DType dt, int64_t n) {
  const size_t es = ox::dtype_size(dt);
  std::vector<unsigned char> out(size_t(n) * es);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = dt == ox::kBool ? splitmix(uint64_t(i)) & 1 : splitmix(uint64_t(i));
    std::memcpy(out.data() + size_t(i) * es, &bits, es);  // little-endian low bytes
  }
  return out;
}

// Row-major gather of a view: element `index` at offset + sum(index[d] * strides[d]).
std::vector<unsigned char> gather(const std::vector<unsigned char>& base, size_t es,
                                  const Ints& shape, const Ints& strides, int64_t offset) {
  std::vector<unsigned char> out;
  out.reserve(size_t(oxtest::product(shape)) * es);
  oxtest::for_each_index(shape, [&](const Ints& index) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d) at += index[d] * strides[d];
    out.insert(out.end(), base.begin() + at * int64_t(es), base.begin() + (at + 1) * int64_t(es));
  });
  return out;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  EXPECT_TRUE(t.is_contiguous());
  std::vector<unsigned char> out(size_t(t.numel()) * ox::dtype_size(t.dtype()));
  if (!out.empty()) std::memcpy(out.data(), t.raw_data_ptr(t.dtype()), out.size());
  return out;
}

Ints row_major(const Ints& shape) {
  Ints s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

struct Threads {
  explicit Threads(int n) : saved(ox::get_num_threads()) { ox::set_num_threads(n); }
  ~Threads() { ox::set_num_threads(saved); }
  int saved;
};

// permute(perm) of a contiguous `shape` tensor made contiguous, against the gather.
void check_permute(DType dt, const Ints& shape, const Ints& perm) {
  const auto src = pattern(dt, oxtest::product(shape));
  const size_t es = ox::dtype_size(dt);
  std::vector<unsigned char> storage = src;
  const Tensor x = ox::from_blob(storage.data(), ox::Shape(shape), dt);
  const Ints cs = row_major(shape);
  Ints vshape, vstrides;
  for (int64_t p : perm) vshape.push_back(shape[size_t(p)]), vstrides.push_back(cs[size_t(p)]);
  const auto expected = gather(src, es, vshape, vstrides, 0);
  for (int threads : {1, 2}) {
    Threads t(threads);
    const Tensor y = x.permute(ox::Dims(perm)).contiguous();
    EXPECT_EQ(oxtest::shape_of(y), vshape);
    EXPECT_TRUE(bytes_of(y) == expected)
        << ox::dtype_name(dt) << " shape " << testing::PrintToString(shape) << " perm "
        << testing::PrintToString(perm) << " threads " << threads;
  }
}

TEST(CopyTranspose, TwoDimOddAndLargeSizesEveryElementSize) {
  const std::vector<Ints> shapes = {{1, 1},   {3, 1000}, {1000, 3}, {67, 131},   {2, 2},
                                    {17, 33}, {16, 16},  {64, 257}, {1024, 1024}};
  for (DType dt : kTypes)
    for (const Ints& s : shapes) check_permute(dt, s, {1, 0});
}

TEST(CopyTranspose, BatchedPermutesOfThreeAndFourDims) {
  const std::vector<Ints> perms3 = {{0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}};
  for (DType dt : {ox::kU8, ox::kF16, ox::kF32, ox::kF64})
    for (const Ints& s : std::vector<Ints>{{3, 37, 70}, {5, 64, 33}, {2, 300, 260}, {7, 1, 9}})
      for (const Ints& p : perms3) check_permute(dt, s, p);
  for (DType dt : {ox::kI8, ox::kI16, ox::kI32, ox::kI64})
    for (const Ints& p : std::vector<Ints>{{0, 3, 1, 2}, {0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 3, 2}})
      check_permute(dt, {2, 3, 17, 19}, p);
}

// A column slice of a wider matrix, transposed: src rows are further apart than they are long.
TEST(CopyTranspose, SlicedAndExpandedSources) {
  for (DType dt : kTypes) {
    const size_t es = ox::dtype_size(dt);
    const auto src = pattern(dt, 90 * 150);
    std::vector<unsigned char> storage = src;
    const Tensor x = ox::from_blob(storage.data(), {90, 150}, dt);
    const auto sliced = gather(src, es, {67, 90}, {1, 150}, 5);  // x[:, 5:72].t()
    const auto expanded = gather(src, es, {4, 150, 90}, {0, 1, 150}, 0);
    for (int threads : {1, 2}) {
      Threads t(threads);
      EXPECT_TRUE(bytes_of(x.narrow(1, 5, 67).t().contiguous()) == sliced) << ox::dtype_name(dt);
      EXPECT_TRUE(bytes_of(x.unsqueeze(0).expand({4, 90, 150}).transpose(1, 2).contiguous()) ==
                  expanded)
          << ox::dtype_name(dt);
    }
  }
}

// The other direction: contiguous values written into a transposed destination view.
TEST(CopyTranspose, IntoTransposedDestination) {
  OXTEST_SKIP_ON_TEST_DEVICE("reads the destination's host memory");
  for (DType dt : kTypes)
    for (const Ints& s : std::vector<Ints>{{67, 131}, {3, 1000}, {512, 300}}) {
      const size_t es = ox::dtype_size(dt);
      const auto src = pattern(dt, s[0] * s[1]);
      std::vector<unsigned char> storage = src;
      const Tensor x = ox::from_blob(storage.data(), ox::Shape(s), dt);
      // out is [s1, s0]; out.t() (shape s) receives x, so out(i, j) = x(j, i).
      const auto expected = gather(src, es, {s[1], s[0]}, {1, s[1]}, 0);
      for (int threads : {1, 2}) {
        Threads t(threads);
        Tensor out = ox::zeros({s[1], s[0]}, dt);
        out.t().copy_(x);
        EXPECT_TRUE(bytes_of(out) == expected) << ox::dtype_name(dt) << " threads " << threads;
      }
    }
}

// Transposes that also convert: values 0..96 are exact in every dtype.
TEST(CopyTranspose, WithDtypeConversion) {
  const int64_t R = 131, C = 67;
  std::vector<double> values(size_t(R * C));
  for (int64_t i = 0; i < R * C; ++i) values[size_t(i)] = double((i * 37) % 97);
  for (DType from : kTypes)
    for (DType to : kTypes) {
      if (from == to) continue;
      const Tensor x = ox::tensor(values, {R, C}).to(from);
      for (int threads : {1, 2}) {
        Threads t(threads);
        const auto got = x.t().to(to).to(ox::kF64).to_vector<double>();
        ASSERT_EQ(got.size(), values.size());
        bool ok = true;
        for (int64_t i = 0; i < C && ok; ++i)
          for (int64_t j = 0; j < R; ++j) {
            const double v = values[size_t(j * C + i)];
            const double want = (from == ox::kBool || to == ox::kBool) ? double(v != 0) : v;
            if (got[size_t(i * R + j)] != want) {
              ok = false;
              ADD_FAILURE() << ox::dtype_name(from) << " -> " << ox::dtype_name(to) << " at (" << i
                            << ", " << j << "): " << got[size_t(i * R + j)] << " != " << want;
              break;
            }
          }
      }
    }
}

}  // namespace
