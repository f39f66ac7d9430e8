// einsum against loops written out by hand for each equation (f64 sums over the operands'
// logical values), in explicit and implicit form, with ellipses, diagonals, traces, size-1
// broadcasting, three and four operands, several dtypes and layouts; bad equations get typed
// errors that name the equation; 1 and 2 threads agree bitwise.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>
#include <vector>

#include "ops/matmul_util.h"
#include "test_util.h"

namespace {

using mmtest::expect_close;
using mmtest::input;
using mmtest::ShapeV;
using mmtest::values;
using ox::DType;
using ox::ErrorKind;
using ox::Tensor;
using oxtest::kind_of;

// Row-major offset of a multi-index.
int64_t at(const ShapeV& s, std::initializer_list<int64_t> idx) {
  int64_t off = 0;
  size_t d = 0;
  for (int64_t i : idx) off = off * s[d++] + i;
  return off;
}

class EinsumTest : public ::testing::Test {
 protected:
  void SetUp() override { ox::manual_seed(99); }
};

constexpr DType kTypes[] = {DType::F32, DType::F64, DType::I64, DType::BF16};

TEST_F(EinsumTest, MatrixProduct) {
  for (DType dt : kTypes) {
    const Tensor a = input({4, 5}, dt), b = input({5, 3}, dt);
    const auto va = values(a), vb = values(b);
    std::vector<double> w(12, 0.0);
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 5; ++j)
          w[size_t(i * 3 + k)] += va[size_t(i * 5 + j)] * vb[size_t(j * 3 + k)];
    expect_close(ox::einsum("ij,jk->ik", {a, b}), {4, 3}, w, 5, "ij,jk->ik");
    expect_close(ox::einsum("ij,jk", {a, b}), {4, 3}, w, 5, "implicit ij,jk");
    expect_close(ox::einsum(" i j , j k -> i k ", {a, b}), {4, 3}, w, 5, "spaces");
    expect_close(ox::einsum("Ab,bC->AC", {a, b}), {4, 3}, w, 5, "upper case");
    // ki,jk: implicit output is i,j in alphabetical order = (b^T a^T)... written out:
    std::vector<double> w2(12, 0.0);  // out[i][j] = sum_k b[k][i] * a[j][k], i < 3, j < 4
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 5; ++k)
          w2[size_t(i * 4 + j)] += vb[size_t(k * 3 + i)] * va[size_t(j * 5 + k)];
    expect_close(ox::einsum("ki,jk", {b, a}), {3, 4}, w2, 5, "implicit ki,jk");
  }
}

TEST_F(EinsumTest, BatchedProduct) {
  for (DType dt : kTypes) {
    const Tensor a = input({3, 4, 5}, dt), b = input({3, 5, 2}, dt);
    const ShapeV sa{3, 4, 5}, sb{3, 5, 2}, so{3, 4, 2};
    const auto va = values(a), vb = values(b);
    std::vector<double> w(24, 0.0);
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 2; ++k)
          for (int j = 0; j < 5; ++j)
            w[size_t(at(so, {n, i, k}))] +=
                va[size_t(at(sa, {n, i, j}))] * vb[size_t(at(sb, {n, j, k}))];
    expect_close(ox::einsum("bij,bjk->bik", {a, b}), so, w, 5, "bij,bjk->bik");
    // Implicit: b is used twice, so it is summed too (output "ik").
    std::vector<double> wi(8, 0.0);
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 2; ++k)
          for (int j = 0; j < 5; ++j)
            wi[size_t(i * 2 + k)] += va[size_t(at(sa, {n, i, j}))] * vb[size_t(at(sb, {n, j, k}))];
    expect_close(ox::einsum("bij,bjk", {a, b}), {4, 2}, wi, 15, "implicit bij,bjk");
    // A transposed and a flipped operand give the same values.
    const Tensor at_ = a.transpose(1, 2).contiguous().transpose(1, 2);
    expect_close(ox::einsum("bij,bjk->bik", {at_, b}), so, w, 5, "transposed operand");
    const Tensor bf = b.flip({0, 1, 2});
    const auto vbf = values(bf);
    std::vector<double> wf(24, 0.0);
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 2; ++k)
          for (int j = 0; j < 5; ++j)
            wf[size_t(at(so, {n, i, k}))] +=
                va[size_t(at(sa, {n, i, j}))] * vbf[size_t(at(sb, {n, j, k}))];
    expect_close(ox::einsum("bij,bjk->bik", {a, bf}), so, wf, 5, "flipped operand");
  }
}

TEST_F(EinsumTest, DiagonalTraceTranspose) {
  for (DType dt : kTypes) {
    const Tensor x = input({4, 4}, dt);
    const auto v = values(x);
    std::vector<double> diag(4), t(16);
    double trace = 0;
    for (int i = 0; i < 4; ++i) {
      diag[size_t(i)] = v[size_t(i * 4 + i)];
      trace += v[size_t(i * 4 + i)];
      for (int j = 0; j < 4; ++j) t[size_t(j * 4 + i)] = v[size_t(i * 4 + j)];
    }
    expect_close(ox::einsum("ii->i", {x}), {4}, diag, 1, "ii->i");
    expect_close(ox::einsum("ii", {x}), {}, {trace}, 4, "ii");
    expect_close(ox::einsum("ii->", {x}), {}, {trace}, 4, "ii->");
    expect_close(ox::einsum("ij->ji", {x}), {4, 4}, t, 1, "ij->ji");
    expect_close(ox::einsum("ji", {x}), {4, 4}, t, 1, "implicit ji (a transpose)");
    expect_close(ox::einsum("ij", {x}), {4, 4}, v, 1, "implicit ij");
  }
  // Diagonals inside larger operands: bii->bi, iij->j, ...ii->...i.
  const Tensor y = input({2, 3, 3}, DType::F64);
  const auto vy = values(y);
  std::vector<double> bd(6), ell(6);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i) bd[size_t(b * 3 + i)] = vy[size_t(at({2, 3, 3}, {b, i, i}))];
  expect_close(ox::einsum("bii->bi", {y}), {2, 3}, bd, 1, "bii->bi");
  expect_close(ox::einsum("...ii->...i", {y}), {2, 3}, bd, 1, "...ii->...i");
  const Tensor z = input({3, 3, 2}, DType::F64);
  const auto vz = values(z);
  std::vector<double> iij(2, 0.0);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 3; ++i) iij[size_t(j)] += vz[size_t(at({3, 3, 2}, {i, i, j}))];
  expect_close(ox::einsum("iij->j", {z}), {2}, iij, 3, "iij->j");
  expect_close(ox::einsum("iij", {z}), {2}, iij, 3, "implicit iij");
  // The same label three times: the main diagonal of a cube.
  const Tensor c = input({3, 3, 3}, DType::F64);
  const auto vc = values(c);
  expect_close(ox::einsum("iii->i", {c}), {3},
               {vc[0], vc[size_t(at({3, 3, 3}, {1, 1, 1}))], vc[size_t(at({3, 3, 3}, {2, 2, 2}))]},
               1, "iii->i");
}

TEST_F(EinsumTest, VectorForms) {
  for (DType dt : kTypes) {
    const Tensor u = input({5}, dt), v = input({5}, dt), w = input({3}, dt);
    const auto vu = values(u), vv = values(v), vw = values(w);
    double dot = 0;
    std::vector<double> had(5), outer(15);
    for (int i = 0; i < 5; ++i) {
      dot += vu[size_t(i)] * vv[size_t(i)];
      had[size_t(i)] = vu[size_t(i)] * vv[size_t(i)];
      for (int j = 0; j < 3; ++j) outer[size_t(i * 3 + j)] = vu[size_t(i)] * vw[size_t(j)];
    }
    expect_close(ox::einsum("i,i->", {u, v}), {}, {dot}, 5, "i,i->");
    expect_close(ox::einsum("i,i", {u, v}), {}, {dot}, 5, "implicit i,i");
    expect_close(ox::einsum("i,i->i", {u, v}), {5}, had, 1, "i,i->i");
    expect_close(ox::einsum("i,j->ij", {u, w}), {5, 3}, outer, 1, "i,j->ij");
    expect_close(ox::einsum("i,j", {u, w}), {5, 3}, outer, 1, "implicit i,j");
    double total = 0;
    for (double x : vu) total += x;
    expect_close(ox::einsum("i->", {u}), {}, {total}, 5, "i->");
  }
}

TEST_F(EinsumTest, SumsAndBatchedDots) {
  const Tensor x = input({6, 7}, DType::F64), y = input({6, 7}, DType::F64);
  const auto vx = values(x), vy = values(y);
  std::vector<double> cols(7, 0.0), dots(6, 0.0);
  double all = 0;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j) {
      cols[size_t(j)] += vx[size_t(i * 7 + j)];
      all += vx[size_t(i * 7 + j)];
      dots[size_t(i)] += vx[size_t(i * 7 + j)] * vy[size_t(i * 7 + j)];
    }
  expect_close(ox::einsum("ij->j", {x}), {7}, cols, 6, "ij->j");
  expect_close(ox::einsum("ij->", {x}), {}, {all}, 42, "ij->");
  expect_close(ox::einsum("bi,bi->b", {x, y}), {6}, dots, 7, "bi,bi->b");
  // A label one operand has alone and the output lacks is summed before the product.
  const Tensor a = input({3, 4}, DType::F64), b = input({4, 5}, DType::F64);
  const auto va = values(a), vb = values(b);
  std::vector<double> w(3, 0.0);  // sum over j, k of a[i][j] * b[j][k]
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) w[size_t(i)] += va[size_t(i * 4 + j)] * vb[size_t(j * 5 + k)];
  expect_close(ox::einsum("ij,jk->i", {a, b}), {3}, w, 20, "ij,jk->i");
}

TEST_F(EinsumTest, EllipsisBroadcasting) {
  for (DType dt : {DType::F32, DType::F64, DType::I32}) {
    // a [2, 1, 3, 4] and b [5, 4, 6]: batch dims broadcast to [2, 5].
    const Tensor a = input({2, 1, 3, 4}, dt), b = input({5, 4, 6}, dt);
    const auto va = values(a), vb = values(b);
    const ShapeV so{2, 5, 3, 6};
    std::vector<double> w(180, 0.0);
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 5; ++q)
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 6; ++k)
            for (int j = 0; j < 4; ++j)
              w[size_t(at(so, {p, q, i, k}))] +=
                  va[size_t(at({2, 1, 3, 4}, {p, 0, i, j}))] * vb[size_t(at({5, 4, 6}, {q, j, k}))];
    expect_close(ox::einsum("...ij,...jk->...ik", {a, b}), so, w, 4, "...ij,...jk->...ik");
    expect_close(ox::einsum("...ij,...jk", {a, b}), so, w, 4, "implicit ...ij,...jk");
  }
  // An ellipsis absent from an explicit output is summed; one covering no dims is allowed.
  const Tensor x = input({2, 3, 4}, DType::F64);
  const auto vx = values(x);
  std::vector<double> s(4, 0.0);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) s[size_t(j)] += vx[size_t(at({2, 3, 4}, {b, i, j}))];
  expect_close(ox::einsum("...j->j", {x}), {4}, s, 6, "...j->j");
  const Tensor m = input({3, 4}, DType::F64);
  expect_close(ox::einsum("...ij->...ij", {m}), {3, 4}, values(m), 1, "empty ellipsis");
}

TEST_F(EinsumTest, SizeOneBroadcasts) {
  // j has size 1 in a and 3 in b: out[i][k] = a[i][0] * sum_j b[j][k].
  const Tensor a = input({2, 1}, DType::F64), b = input({3, 4}, DType::F64);
  const auto va = values(a), vb = values(b);
  std::vector<double> w(8, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) w[size_t(i * 4 + k)] += va[size_t(i)] * vb[size_t(j * 4 + k)];
  expect_close(ox::einsum("ij,jk->ik", {a, b}), {2, 4}, w, 3, "size-1 label");
}

TEST_F(EinsumTest, ThreeAndFourOperands) {
  for (DType dt : {DType::F32, DType::F64, DType::I64}) {
    const Tensor x = input({2, 3, 4}, dt), y = input({4, 5}, dt), z = input({5, 6}, dt);
    const auto vx = values(x), vy = values(y), vz = values(z);
    const ShapeV so{2, 3, 6};
    std::vector<double> w(36, 0.0);
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int e = 0; e < 6; ++e)
          for (int c = 0; c < 4; ++c)
            for (int d = 0; d < 5; ++d)
              w[size_t(at(so, {a, b, e}))] += vx[size_t(at({2, 3, 4}, {a, b, c}))] *
                                              vy[size_t(c * 5 + d)] * vz[size_t(d * 6 + e)];
    expect_close(ox::einsum("abc,cd,de->abe", {x, y, z}), so, w, 20, "abc,cd,de->abe");
    expect_close(ox::einsum("abc,cd,de", {x, y, z}), so, w, 20, "implicit abc,cd,de");
    // Four operands, a chain: ab,bc,cd,de->ae.
    const Tensor p = input({3, 4}, dt), q = input({4, 5}, dt), r = input({5, 2}, dt),
                 s = input({2, 6}, dt);
    const auto vp = values(p), vq = values(q), vr = values(r), vs = values(s);
    std::vector<double> w4(18, 0.0);
    for (int a = 0; a < 3; ++a)
      for (int e = 0; e < 6; ++e)
        for (int b = 0; b < 4; ++b)
          for (int c = 0; c < 5; ++c)
            for (int d = 0; d < 2; ++d)
              w4[size_t(a * 6 + e)] += vp[size_t(a * 4 + b)] * vq[size_t(b * 5 + c)] *
                                       vr[size_t(c * 2 + d)] * vs[size_t(d * 6 + e)];
    expect_close(ox::einsum("ab,bc,cd,de->ae", {p, q, r, s}), {3, 6}, w4, 40, "four operands");
  }
}

TEST_F(EinsumTest, PromotionAndZeroSizes) {
  const Tensor i = ox::tensor({{1, 2}, {3, 4}}), f = ox::tensor({0.5f, 0.25f});
  const Tensor got = ox::einsum("ij,j->i", {i, f});
  EXPECT_EQ(got.dtype(), DType::F32);
  expect_close(got, {2}, {1.0, 2.5}, 2, "i64 with f32");
  expect_close(ox::einsum("ij,jk->ik", {ox::zeros({2, 0}), ox::zeros({0, 3})}), {2, 3},
               std::vector<double>(6, 0.0), 0, "K = 0");
  expect_close(ox::einsum("ij,jk->ik", {ox::zeros({0, 2}), ox::zeros({2, 3})}), {0, 3}, {}, 2,
               "M = 0");
  expect_close(ox::einsum("i->", {ox::zeros({0})}), {}, {0.0}, 0, "empty sum");
}

TEST_F(EinsumTest, BitwiseTheSameAtOneAndTwoThreads) {
  const Tensor x = input({8, 40, 300}, DType::F32), y = input({300, 200}, DType::F32),
               z = input({200, 50}, DType::F32);
  const auto [one, two] = mmtest::at_1_and_2_threads([&] {
    return ox::einsum("abc,cd,de->abe", {x, y, z});
  });
  EXPECT_TRUE(mmtest::same_bits(one, two));
  const Tensor p = input({500, 400}, DType::F64), q = input({500, 400}, DType::F64);
  const auto [d1, d2] = mmtest::at_1_and_2_threads([&] { return ox::einsum("bi,bi->b", {p, q}); });
  EXPECT_TRUE(mmtest::same_bits(d1, d2));
}

TEST_F(EinsumTest, BadEquations) {
  const Tensor a = ox::zeros({2, 3}), b = ox::zeros({3, 4});
  auto expect_value = [&](const std::string& eq, const std::vector<Tensor>& ops) {
    const ox::Error e = oxtest::caught([&] { ox::einsum(eq, ops); });
    EXPECT_EQ(e.kind(), ErrorKind::Value) << eq << ": " << e.what();
    EXPECT_TRUE(oxtest::contains(e, "[einsum]")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, eq)) << e.what();
  };
  expect_value("ij,jk->ik", {a});           // operand count
  expect_value("ij,jk,kl->il", {a, b});     // operand count
  expect_value("ij,jk->iz", {a, b});        // output label in no operand
  expect_value("ij,jk->ii", {a, b});        // output label twice
  expect_value("i.j,jk->ik", {a, b});       // stray '.'
  expect_value("ij,jk->i...k...", {a, b});  // two ellipses
  expect_value("i1,jk->ik", {a, b});        // not a letter
  expect_value("ij,jk->i>k", {a, b});       // stray '>'
  // Shapes that disagree with the subscripts name the equation too.
  const ox::Error e1 = oxtest::caught([&] { ox::einsum("ijk,jk->i", {a, b}); });
  EXPECT_EQ(e1.kind(), ErrorKind::Shape);
  EXPECT_TRUE(oxtest::contains(e1, "ijk,jk->i")) << e1.what();
  EXPECT_EQ(kind_of([&] { ox::einsum("ij,jk->ik", {a, ox::zeros({4, 4})}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::einsum("ii->i", {a}); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::einsum("ij->ij", {ox::zeros({2, 2}, DType::Bool)});
            }),
            ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::einsum("ij->ij", {Tensor()}); }), ErrorKind::Value);
}

}  // namespace
