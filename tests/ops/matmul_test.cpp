// Matrix products: matmul in every broadcasting form, mm, bmm, mv, dot, outer, addmm, baddbmm,
// tensordot, and the backend primitive with output layouts the op layer never makes. Expected
// values are f64 loops written here (ref_matmul) or hand-derived numbers; inputs come in every
// layout of matmul_util.h; 1 and 2 threads must agree bitwise.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "ops/matmul_util.h"
#include "tensor/tensor_impl.h"
#include "test_util.h"

namespace {

using mmtest::expect_close;
using mmtest::input;
using mmtest::Lay;
using mmtest::ShapeV;
using mmtest::str;
using mmtest::values;
using ox::DType;
using ox::ErrorKind;
using ox::Tensor;
using oxtest::kind_of;
using oxtest::shape_of;

// ---- The reference: NumPy's matmul rules, written out in f64 -------------------------------

struct Ref {
  ShapeV shape;
  std::vector<double> v;
  int64_t k;
};

// Row-major offset of `index` (right-aligned onto `shape`, size-1 dims broadcast).
int64_t broadcast_offset(const ShapeV& shape, const std::vector<int64_t>& index) {
  int64_t off = 0;
  const size_t lead = index.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    off = off * shape[d] + (shape[d] == 1 ? 0 : index[lead + d]);
  return off;
}

Ref ref_matmul(const Tensor& a, const Tensor& b) {
  ShapeV sa = shape_of(a), sb = shape_of(b);
  const std::vector<double> va = values(a), vb = values(b);
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  const ShapeV ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  ShapeV batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t p = i < ba.size() ? ba[ba.size() - 1 - i] : 1;
    const int64_t q = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    batch[batch.size() - 1 - i] = p == 1 ? q : p;
  }
  Ref r{batch, {}, K};
  r.shape.push_back(M);
  r.shape.push_back(N);
  r.v.assign(size_t(oxtest::product(r.shape)), 0.0);
  int64_t t = 0;
  auto one = [&](const std::vector<int64_t>& bi) {
    const int64_t oa = broadcast_offset(ba, bi) * M * K, ob = broadcast_offset(bb, bi) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += va[size_t(oa + i * K + k)] * vb[size_t(ob + k * N + j)];
        r.v[size_t((t * M + i) * N + j)] = s;
      }
    ++t;
  };
  oxtest::for_each_index(batch, one);
  if (a1) r.shape.erase(r.shape.end() - 2);
  if (b1) r.shape.pop_back();
  return r;
}

void check(const Tensor& got, const Ref& want, const std::string& what) {
  expect_close(got, want.shape, want.v, want.k, what);
}

class MatmulTest : public ::testing::Test {
 protected:
  void SetUp() override { ox::manual_seed(1234); }
};

// ---- matmul --------------------------------------------------------------------------------

TEST_F(MatmulTest, EveryBroadcastingForm) {
  const std::vector<std::pair<ShapeV, ShapeV>> pairs = {
      {{3}, {3}},                    // dot -> 0-d
      {{2, 3}, {3}},                 // matrix @ vector
      {{3}, {3, 4}},                 // vector @ matrix
      {{2, 3}, {3, 4}},              // matrices
      {{5, 2, 3}, {3, 4}},           // batch @ matrix (folded into one product)
      {{2, 3}, {5, 3, 4}},           // matrix @ batch
      {{3}, {5, 3, 4}},              // vector @ batch
      {{5, 2, 3}, {3}},              // batch @ vector
      {{5, 2, 3}, {5, 3, 4}},        // equal batches
      {{1, 2, 3}, {4, 3, 5}},        // size-1 batch broadcasts
      {{5, 1, 2, 3}, {1, 6, 3, 4}},  // both broadcast
      {{2, 1, 4, 2, 3}, {3, 1, 3, 2}},
      {{1, 1}, {1, 1}},
  };
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                   DType::I16, DType::I8, DType::U8})
    for (const auto& [sa, sb] : pairs) {
      const Tensor a = input(sa, dt), b = input(sb, dt);
      const Tensor got = ox::matmul(a, b);
      EXPECT_EQ(got.dtype(), dt);
      check(got, ref_matmul(a, b),
            str(sa) + " @ " + str(sb) + " " + std::string(ox::dtype_name(dt)));
    }
}

TEST_F(MatmulTest, EveryLayoutOfEitherOperand) {
  const std::vector<std::pair<ShapeV, ShapeV>> pairs = {
      {{4, 5, 6}, {4, 6, 7}}, {{23, 17}, {17, 9}}, {{1, 8}, {8, 1}}, {{17}, {17, 5}}};
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I64})
    for (const auto& [sa, sb] : pairs)
      for (Lay la : mmtest::kLayouts)
        for (Lay lb : mmtest::kLayouts) {
          if (sa.size() == 1 && (la == Lay::Expanded || la == Lay::Flipped)) continue;
          const Tensor a = mmtest::laid_out(sa, dt, la), b = mmtest::laid_out(sb, dt, lb);
          check(ox::matmul(a, b), ref_matmul(a, b),
                str(sa) + " " + mmtest::lay_name(la) + " @ " + str(sb) + " " +
                    mmtest::lay_name(lb) + " " + std::string(ox::dtype_name(dt)));
        }
}

TEST_F(MatmulTest, TransposedViewsMatchTheContiguousProduct) {
  // The same values given to BLAS as a transposed view and as a copy (f64: far inside tolerance).
  const Tensor a = input({31, 40}, DType::F64), b = input({40, 29}, DType::F64);
  const Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
  const Ref want = ref_matmul(a, b);
  check(ox::matmul(at, b), want, "a column-major");
  check(ox::matmul(a, bt), want, "b column-major");
  check(ox::matmul(at, bt), want, "both column-major");
  check(ox::matmul(b.t(), a.t()).t(), want, "(b^T a^T)^T");
}

TEST_F(MatmulTest, ZeroSizes) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32}) {
    const std::string name(ox::dtype_name(dt));
    Tensor k0 = ox::matmul(input({3, 0}, dt), input({0, 4}, dt));  // K = 0: zeros
    expect_close(k0, {3, 4}, std::vector<double>(12, 0.0), 0, "K=0 " + name);
    expect_close(ox::matmul(input({0, 3}, dt), input({3, 4}, dt)), {0, 4}, {}, 3, "M=0 " + name);
    expect_close(ox::matmul(input({2, 3}, dt), input({3, 0}, dt)), {2, 0}, {}, 3, "N=0 " + name);
    expect_close(ox::matmul(input({0, 2, 3}, dt), input({3, 4}, dt)), {0, 2, 4}, {}, 3,
                 "B=0 " + name);
    expect_close(ox::matmul(input({1, 0, 3}, dt), input({3, 2}, dt)), {1, 0, 2}, {}, 3,
                 "(1,0,3) " + name);
    expect_close(ox::matmul(input({0}, dt), input({0}, dt)), {}, {0.0}, 0, "(0,).(0,) " + name);
    expect_close(ox::matmul(input({2, 0}, dt), input({5, 0, 3}, dt)), {5, 2, 3},
                 std::vector<double>(30, 0.0), 0, "batched K=0 " + name);
  }
}

TEST_F(MatmulTest, TestingShapes) {
  for (const ShapeV& s : std::vector<ShapeV>{{1}, {23}, {812}}) {
    const Tensor a = input(s, DType::F32), b = input(s, DType::F32);
    check(ox::matmul(a, b), ref_matmul(a, b), "dot " + str(s));
  }
  const Tensor big = input({1029, 917}, DType::F32), v = input({917}, DType::F32);
  check(ox::matmul(big, v), ref_matmul(big, v), "(1029, 917) @ (917,)");
  const Tensor w = input({917, 23}, DType::F64), big64 = big.to(DType::F64);
  check(ox::matmul(big64, w), ref_matmul(big64, w), "(1029, 917) @ (917, 23) f64");
}

TEST_F(MatmulTest, IntegersWrap) {
  // 2 * 65536 * 32768 = 2^32, which is 0 modulo 2^32.
  const Tensor a32 = ox::tensor(std::vector<int32_t>{65536, 65536}, {1, 2});
  const Tensor b32 = ox::tensor(std::vector<int32_t>{32768, 32768}, {2, 1});
  EXPECT_EQ(ox::matmul(a32, b32).to_vector<int32_t>(), std::vector<int32_t>{0});
  // 2^62 * 2 + 2^62 * 1 = 2^63 + 2^62, which is -2^62 as a wrapped int64.
  const int64_t p62 = int64_t{1} << 62;
  const Tensor a64 = ox::tensor(std::vector<int64_t>{p62, p62}), b64 = ox::tensor({2, 1});
  EXPECT_EQ(ox::dot(a64, b64).item<int64_t>(), -p62);
  // i8: 100 * 2 + 100 * 1 = 300 = 44 + 256; u8: 200 * 2 = 400 = 144 + 256.
  const Tensor a8 = ox::tensor(std::vector<int8_t>{100, 100}),
               b8 = ox::tensor(std::vector<int8_t>{2, 1});
  EXPECT_EQ(ox::dot(a8, b8).item<int64_t>(), 44);
  const Tensor u8 = ox::tensor(std::vector<uint8_t>{200}), v8 = ox::tensor(std::vector<uint8_t>{2});
  EXPECT_EQ(ox::dot(u8, v8).item<int64_t>(), 144);
}

TEST_F(MatmulTest, IntegerBlocksAndLayouts) {
  // Crosses the loop kernel's row (32), column (256) and depth (128) blocks.
  const Tensor a = input({70, 300}, DType::I64), b = input({300, 600}, DType::I64);
  check(ox::matmul(a, b), ref_matmul(a, b), "i64 70x300x600");
  const Tensor bt = b.t().contiguous().t();  // column-major b is repacked
  check(ox::matmul(a, bt), ref_matmul(a, bt), "i64 column-major b");
  const Tensor a3 = input({3, 40, 50}, DType::I32), b3 = input({50, 270}, DType::I32);
  check(ox::matmul(a3, b3), ref_matmul(a3, b3), "i32 batch @ matrix");
}

TEST_F(MatmulTest, Promotion) {
  struct Case {
    DType a, b, out;
  };
  for (const Case& c : std::vector<Case>{{DType::I32, DType::F32, DType::F32},
                                         {DType::F16, DType::BF16, DType::F32},
                                         {DType::I64, DType::F64, DType::F64},
                                         {DType::I32, DType::I64, DType::I64},
                                         {DType::U8, DType::I8, DType::I16},
                                         {DType::F32, DType::F64, DType::F64}}) {
    const Tensor a = input({3, 4}, c.a), b = input({4, 2}, c.b);
    const Tensor got = ox::matmul(a, b);
    EXPECT_EQ(got.dtype(), c.out) << ox::dtype_name(c.a) << " @ " << ox::dtype_name(c.b);
    check(got, ref_matmul(a, b), "promotion");
  }
}

TEST_F(MatmulTest, Errors) {
  const Tensor a = ox::zeros({2, 3}), b = ox::zeros({4, 5});
  const ox::Error e = oxtest::caught([&] { ox::matmul(a, b); });
  EXPECT_EQ(e.kind(), ErrorKind::Shape);
  EXPECT_STREQ(e.what(), "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied");
  EXPECT_EQ(kind_of([] { ox::matmul(ox::zeros({3}), ox::zeros({4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] {
              ox::matmul(ox::zeros({2, 2, 3}), ox::zeros({3, 3, 4}));
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::matmul(ox::scalar_tensor(2.0), ox::zeros({3})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::matmul(ox::zeros({3}), ox::scalar_tensor(2.0)); }), ErrorKind::Shape);
  const Tensor flags = ox::zeros({2, 2}, DType::Bool);
  const ox::Error eb = oxtest::caught([&] { ox::matmul(flags, flags); });
  EXPECT_EQ(eb.kind(), ErrorKind::DType);
  EXPECT_TRUE(oxtest::contains(eb, "[matmul]")) << eb.what();
  EXPECT_EQ(kind_of([] { ox::matmul(Tensor(), ox::zeros({2})); }), ErrorKind::Value);
}

TEST_F(MatmulTest, BoolPromotedToANumberIsAccepted) {
  // bool with f32 promotes to f32 (result_type), which matmul takes.
  const Tensor flags = ox::tensor({true, false, true}), x = ox::tensor({1.f, 2.f, 3.f});
  EXPECT_EQ(ox::matmul(flags, x).item<float>(), 4.f);
}

TEST_F(MatmulTest, BitwiseTheSameAtOneAndTwoThreads) {
  struct Case {
    ShapeV a, b;
    DType dt;
  };
  const std::vector<Case> cases = {
      {{1029, 917}, {917, 64}, DType::F32},
      {{70, 2100}, {2100, 90}, DType::F32},  // three depth blocks of the packed GEMM
      {{300, 300}, {300, 300}, DType::F64},  // raw threaded dgemm differs here at 2 threads
      {{257, 513}, {513, 129}, DType::F32},
      {{257, 513}, {513, 129}, DType::F64},
      {{64, 128, 64}, {64, 64, 128}, DType::F32},  // many small matrices
      {{8, 100, 50}, {50, 300}, DType::F32},       // batch folded into rows
      {{70, 300}, {300, 600}, DType::I64},
      {{100, 200}, {200, 50}, DType::F16},
      {{600, 500}, {500, 700}, DType::BF16},
  };
  for (const Case& c : cases) {
    const Tensor a = input(c.a, c.dt), b = input(c.b, c.dt);
    const auto [one, two] = mmtest::at_1_and_2_threads([&] { return ox::matmul(a, b); });
    EXPECT_TRUE(mmtest::same_bits(one, two))
        << str(c.a) << " @ " << str(c.b) << " " << ox::dtype_name(c.dt);
  }
  const Tensor big = input({1029, 917}, DType::F32), v = input({917}, DType::F32);
  const auto [one, two] = mmtest::at_1_and_2_threads([&] { return ox::mv(big, v); });
  EXPECT_TRUE(mmtest::same_bits(one, two)) << "mv";
}

// ---- mm, bmm, mv, dot, outer ----------------------------------------------------------------

TEST_F(MatmulTest, MmBmmMvDot) {
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I32}) {
    const Tensor a = input({6, 7}, dt), b = input({7, 5}, dt);
    check(ox::mm(a, b), ref_matmul(a, b), "mm");
    check(a.mm(b), ref_matmul(a, b), "Tensor::mm");
    check(a.matmul(b), ref_matmul(a, b), "Tensor::matmul");
    const Tensor x = input({3, 6, 7}, dt), y = input({3, 7, 5}, dt);
    check(ox::bmm(x, y), ref_matmul(x, y), "bmm");
    const Tensor v = input({7}, dt);
    check(ox::mv(a, v), ref_matmul(a, v), "mv");
    check(ox::dot(v, v.flip({0})), ref_matmul(v, v.flip({0})), "dot");
  }
  EXPECT_EQ(kind_of([] { ox::mm(ox::zeros({2, 3, 4}), ox::zeros({4, 2})); }), ErrorKind::Shape);
  EXPECT_STREQ(oxtest::caught([] {
                 ox::mm(ox::zeros({2, 3}), ox::zeros({4, 2}));
               }).what(),
               "[mm] shapes [2, 3] and [4, 2] cannot be multiplied");
  EXPECT_EQ(kind_of([] { ox::bmm(ox::zeros({2, 3, 4}), ox::zeros({3, 4, 2})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::bmm(ox::zeros({3, 4}), ox::zeros({4, 2})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::mv(ox::zeros({2, 3}), ox::zeros({2})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::mv(ox::zeros({2, 3}), ox::zeros({3, 1})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::dot(ox::zeros({2}), ox::zeros({3})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::dot(ox::zeros({2, 1}), ox::zeros({2, 1})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { ox::dot(ox::zeros({2}, DType::Bool), ox::zeros({2}, DType::Bool)); }),
            ErrorKind::DType);
}

TEST_F(MatmulTest, Outer) {
  const Tensor a = ox::tensor({1.0, -2.0, 3.0}, {.dtype = ox::kF64}),
               b = ox::tensor({4.0, 0.5}, {.dtype = ox::kF64});
  expect_close(ox::outer(a, b), {3, 2}, {4, 0.5, -8, -1, 12, 1.5}, 1, "outer");
  const Tensor i = ox::tensor({2, 3}), f = ox::tensor({1.5f});
  const Tensor mixed = ox::outer(i, f);
  EXPECT_EQ(mixed.dtype(), DType::F32);
  expect_close(mixed, {2, 1}, {3, 4.5}, 1, "outer i64 x f32");
  EXPECT_EQ(kind_of([] { ox::outer(ox::zeros({2, 2}), ox::zeros({2})); }), ErrorKind::Shape);
}

// ---- addmm, baddbmm --------------------------------------------------------------------------

std::vector<double> axpby(const std::vector<double>& input_b, const std::vector<double>& prod,
                          double beta, double alpha) {
  std::vector<double> out(prod.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = (beta == 0 ? 0.0 : beta * input_b[i]) + alpha * prod[i];
  return out;
}

TEST_F(MatmulTest, Addmm) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I64}) {
    const Tensor a = input({5, 6}, dt), b = input({6, 4}, dt);
    const Ref p = ref_matmul(a, b);
    const bool fl = ox::is_floating(dt);
    for (const ShapeV& si : std::vector<ShapeV>{{5, 4}, {4}, {5, 1}, {}}) {
      const Tensor in = input(si, dt);
      const std::vector<double> inb = values(in.expand({5, 4}));
      const double beta = fl ? 0.5 : 3, alpha = fl ? -2.0 : 2;
      const ox::Scalar bs = fl ? ox::Scalar(beta) : ox::Scalar(int64_t(beta));
      const ox::Scalar as = fl ? ox::Scalar(alpha) : ox::Scalar(int64_t(alpha));
      expect_close(ox::addmm(in, a, b, bs, as), {5, 4}, axpby(inb, p.v, beta, alpha), 6 + 1,
                   "addmm input " + str(si) + " " + std::string(ox::dtype_name(dt)));
      expect_close(ox::addmm(in, a, b), {5, 4}, axpby(inb, p.v, 1, 1), 6 + 1, "addmm defaults");
    }
  }
  // beta == 0 ignores the input, NaN included.
  const Tensor nan = ox::full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  const Tensor a = ox::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.dtype = ox::kF64});
  expect_close(ox::addmm(nan, a, a, 0), {2, 2}, {7, 10, 15, 22}, 2, "beta 0");
  // K == 0: beta * input.
  expect_close(ox::addmm(ox::full({2, 3}, 4.0), ox::zeros({2, 0}), ox::zeros({0, 3}), 0.5), {2, 3},
               std::vector<double>(6, 2.0), 0, "K=0");
  // Promotion over all three; integers refuse floating alpha/beta.
  EXPECT_EQ(ox::addmm(ox::zeros({2, 2}, DType::F64), a.to(DType::F32), a.to(DType::F32)).dtype(),
            DType::F64);
  const Tensor ai = ox::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(kind_of([&] { ox::addmm(ai, ai, ai, 0.5); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::addmm(ai, ai, ai, 1, 1.5); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::addmm(ox::zeros({3, 2}), a, a); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::addmm(ox::zeros({2}), ox::zeros({2, 3}), ox::zeros({2, 2}));
            }),
            ErrorKind::Shape);
}

TEST_F(MatmulTest, Baddbmm) {
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I32}) {
    const Tensor x = input({3, 4, 5}, dt), y = input({3, 5, 2}, dt);
    const Ref p = ref_matmul(x, y);
    for (const ShapeV& si : std::vector<ShapeV>{{3, 4, 2}, {4, 2}, {3, 1, 1}, {}}) {
      const Tensor in = input(si, dt);
      const std::vector<double> inb = values(in.expand({3, 4, 2}));
      expect_close(ox::baddbmm(in, x, y, 2, 3), {3, 4, 2}, axpby(inb, p.v, 2, 3), 5 + 1,
                   "baddbmm input " + str(si) + " " + std::string(ox::dtype_name(dt)));
    }
  }
  EXPECT_EQ(kind_of([] {
              ox::baddbmm(ox::zeros({2, 2, 2}), ox::zeros({2, 2, 3}), ox::zeros({3, 3, 2}));
            }),
            ErrorKind::Shape);
}

// ---- tensordot ---------------------------------------------------------------------------------

TEST_F(MatmulTest, Tensordot) {
  const Tensor a = input({2, 3, 4}, DType::F64), b = input({4, 3, 5}, DType::F64);
  const std::vector<double> va = values(a), vb = values(b);
  // sum over j, k of a[i, j, k] * b[k, j, l]
  std::vector<double> want(10, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 5; ++l)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          want[size_t(i * 5 + l)] +=
              va[size_t((i * 3 + j) * 4 + k)] * vb[size_t((k * 3 + j) * 5 + l)];
  expect_close(ox::tensordot(a, b, {1, 2}, {1, 0}), {2, 5}, want, 12, "tensordot pairs");
  expect_close(ox::tensordot(a, b, {-2, -1}, {1, 0}), {2, 5}, want, 12, "negative dims");
  // dims = 1: a's last with b's first -> [2, 3, 3, 5].
  const Tensor got = ox::tensordot(a, b, 1);
  std::vector<double> w1(90, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 3; ++m)
        for (int l = 0; l < 5; ++l)
          for (int k = 0; k < 4; ++k)
            w1[size_t(((i * 3 + j) * 3 + m) * 5 + l)] +=
                va[size_t((i * 3 + j) * 4 + k)] * vb[size_t((k * 3 + m) * 5 + l)];
  expect_close(got, {2, 3, 3, 5}, w1, 4, "tensordot dims=1");
  // dims = 0: the outer product.
  const Tensor u = ox::tensor({1.0, 2.0}, {.dtype = ox::kF64}),
               v = ox::tensor({3.0, 4.0, 5.0}, {.dtype = ox::kF64});
  expect_close(ox::tensordot(u, v, 0), {2, 3}, {3, 4, 5, 6, 8, 10}, 1, "dims=0");
  EXPECT_EQ(kind_of([&] { ox::tensordot(a, b, {0}, {0}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::tensordot(a, b, {1, 1}, {1, 0}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::tensordot(a, b, {1}, {1, 0}); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::tensordot(a, b, 4); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::tensordot(a, b, {5}, {0}); }), ErrorKind::Index);
}

// ---- The primitive, with output layouts the op layer never makes
// ---------------------------------

TEST_F(MatmulTest, PrimitiveWritesAnyOutputLayout) {
  const ox::DeviceGuard on_cpu(ox::Device::cpu());  // the CPU primitive takes host tensors
  ox::Backend& cpu = ox::backend_for(ox::Device::cpu(), "test");
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I64}) {
    const Tensor a = input({2, 5, 6}, dt), b = input({2, 6, 4}, dt);
    const Ref p = ref_matmul(a, b);
    // Column-major (BLAS computes the transpose), flipped (a scratch copy), gapped rows.
    const Tensor colmajor = ox::zeros({2, 4, 5}, dt).transpose(1, 2);
    const Tensor flipped = ox::zeros({2, 5, 4}, dt).flip({1, 2});
    const Tensor gapped = ox::zeros({2, 5, 9}, dt).narrow(2, 3, 4);
    for (const Tensor& dst : {colmajor, flipped, gapped}) {
      Tensor out = dst;
      out.fill_(1);
      cpu.matmul(out.impl()->array(), a.impl()->array(), b.impl()->array(), 2, 3);
      expect_close(
          out, {2, 5, 4}, axpby(std::vector<double>(40, 1.0), p.v, 3, 2), 7,
          "dst strides " + str(oxtest::strides_of(out)) + " " + std::string(ox::dtype_name(dt)));
    }
  }
}

// A few rows against a B with contiguous rows take a path of their own (no packing); each row
// must have the bits it has inside a product of many rows (the packed kernel), for every K
// (one and several depth blocks), column tails, strided A, beta (addmm), f32 and f64.
TEST(MatmulSmallRows, RowsHaveTheBitsOfTheSameRowsInALargerProduct) {
  OXTEST_SKIP_ON_TEST_DEVICE("the CPU kernels' bits; a GPU library may take other paths");
  for (const DType dt : {DType::F32, DType::F64}) {
    for (const int64_t k : {1, 7, 1024, 2500}) {
      for (const int64_t n : {2, 37, 256, 600}) {
        SCOPED_TRACE(std::string(ox::dtype_name(dt)) + " k=" + std::to_string(k) +
                     " n=" + std::to_string(n));
        const Tensor a = ox::randn({16, k}, {.dtype = dt});
        const Tensor b = ox::randn({k, n}, {.dtype = dt});
        const Tensor bias = ox::randn({n}, {.dtype = dt});
        const Tensor big = ox::matmul(a, b);  // 16 rows: the packed kernel
        const Tensor big_addmm = ox::addmm(bias, a, b, 0.5, 2.0);
        for (const int64_t m : {1, 3, 8}) {
          EXPECT_TRUE(ox::equal(ox::matmul(a.narrow(0, 0, m), b), big.narrow(0, 0, m))) << m;
          EXPECT_TRUE(
              ox::equal(ox::addmm(bias, a.narrow(0, 0, m), b, 0.5, 2.0), big_addmm.narrow(0, 0, m)))
              << m;
        }
        // A strided A (every other row) and a batch of two.
        const Tensor every_other = a.slice(0, 0, 16, 2).narrow(0, 0, 4);
        EXPECT_TRUE(ox::equal(ox::matmul(every_other, b), big.slice(0, 0, 16, 2).narrow(0, 0, 4)));
        const Tensor batched = ox::matmul(ox::stack({a.narrow(0, 0, 2), a.narrow(0, 2, 2)}), b);
        EXPECT_TRUE(ox::equal(batched.reshape({4, n}), big.narrow(0, 0, 4)));
      }
    }
  }
}

// A few rows against W^T (B's columns contiguous: a Linear layer in decoding) pack W a few panels
// at a time instead of in one large block: each element within a few roundings of an f64 loop
// over its products and with the bits of the same row in a product of many rows (and of the
// same product with B contiguous), for every K (one and several depth blocks), column tails,
// strided A, beta (addmm), batches (one head each), f32, f64 and bf16 (summed in f32, rounded
// once); and the same bits on one thread and on two.
TEST(MatmulSmallRows, ProductsWithATransposedBAreExactAndHaveTheBitsOfLargerOnes) {
  const int threads = ox::get_num_threads();
  for (const DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    const double eps = dt == DType::F64 ? 0x1p-53 : 0x1p-24;
    const double out_eps = dt == DType::BF16  ? 0x1p-8
                           : dt == DType::F16 ? 0x1p-11
                                              : 0.0;  // the result's one rounding
    for (const int64_t k : {1, 7, 64, 1100}) {
      for (const int64_t n : {1, 5, 37, 600}) {
        SCOPED_TRACE(std::string(ox::dtype_name(dt)) + " k=" + std::to_string(k) +
                     " n=" + std::to_string(n));
        const Tensor a = ox::randn({3, 8, k}, {.dtype = dt});
        const Tensor w = ox::randn({3, n, k}, {.dtype = dt});
        const Tensor bias = ox::randn({n}, {.dtype = dt});
        const std::vector<double> av = values(a), wv = values(w), bv = values(bias);
        // out[t][i][j] = alpha * sum_p a[t][i][p] w[t][j][p] (+ beta * bias[j]), in f64.
        auto check = [&](const Tensor& out, int64_t batches, int64_t rows, int64_t row_step,
                         double alpha, double beta) {
          const std::vector<double> got = values(out);
          ASSERT_EQ(int64_t(got.size()), batches * rows * n);
          for (int64_t t = 0; t < batches; ++t)
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double dot = 0, mag = 0;
                for (int64_t p = 0; p < k; ++p) {
                  const double x = av[size_t((t * 8 + i * row_step) * k + p)];
                  const double y = wv[size_t((t * n + j) * k + p)];
                  dot += x * y, mag += std::abs(x * y);
                }
                const double want = alpha * dot + beta * bv[size_t(j)];
                const double tol = out_eps * std::abs(want) +
                                   4 * eps * (double(k) + 4) * (mag + std::abs(bv[size_t(j)]));
                EXPECT_NEAR(got[size_t((t * rows + i) * n + j)], want, tol)
                    << "batch " << t << " row " << i << " column " << j;
              }
        };
        const Tensor w0 = w.select(0, 0).t(), a0 = a.select(0, 0);
        for (const int64_t m : {1, 3, 5, 8})
          check(ox::matmul(a0.narrow(0, 0, m), w0), 1, m, 1, 1, 0);
        if (!oxtest::on_test_device()) {                         // the CPU kernel's bits
          const Tensor big = ox::matmul(ox::cat({a0, a0}), w0);  // 16 rows: one packed block
          for (const int64_t m : {1, 2, 3, 4, 5, 6, 7, 8})
            EXPECT_TRUE(ox::equal(ox::matmul(a0.narrow(0, 0, m), w0), big.narrow(0, 0, m))) << m;
          EXPECT_TRUE(ox::equal(ox::matmul(a0, w0.contiguous()), big.narrow(0, 0, 8)));
        }
        check(ox::addmm(bias, a0.narrow(0, 0, 2), w0, 0.5, 2.0), 1, 2, 1, 2.0, 0.5);
        check(ox::matmul(a0.slice(0, 0, 8, 2), w0), 1, 4, 2, 1, 0);  // every other row of A
        check(ox::matmul(a.narrow(1, 0, 1), w.transpose(1, 2)), 3, 1, 1, 1, 0);  // per head
        ox::set_num_threads(1);
        const Tensor one = ox::matmul(a0.narrow(0, 0, 3), w0);
        const Tensor batched_one = ox::matmul(a.narrow(1, 0, 2), w.transpose(1, 2));
        ox::set_num_threads(2);
        EXPECT_TRUE(ox::equal(ox::matmul(a0.narrow(0, 0, 3), w0), one));
        EXPECT_TRUE(ox::equal(ox::matmul(a.narrow(1, 0, 2), w.transpose(1, 2)), batched_one));
        ox::set_num_threads(threads);
      }
    }
  }
}

}  // namespace
