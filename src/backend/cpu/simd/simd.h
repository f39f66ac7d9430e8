#pragma once
// The CPU kernels written with Highway, for every instruction set it can target (AVX-512, AVX2,
// SSE4 and a portable emulation), chosen at run time by the CPU (or by set_simd_target). This
// header is plain C++: the Highway code stays in the .cpp files of this folder.
//
// Every function here works lane by lane, and a tail shorter than a vector goes through the
// same vector code on a padded copy, so an element's result never depends on where it sits in
// a run: callers may split runs anywhere (threads, strided gathers) without changing results.

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "oxmera/core/half.h"

namespace ox::cpu::simd {

// Whether the CPU computes unary op `op` on floating dtype `dt` with its vector kernel
// (math.cpp's Unary), for every layout, instead of the op's scalar functor. f16 and bf16 run the
// f32 kernel; erf and erf-GELU have a vector kernel in f32 only (f64 keeps libm's erf).
constexpr bool has_unary(UnaryOp op, DType dt) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Log1p:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Silu:
    case UnaryOp::LogSigmoid:
    case UnaryOp::GeluTanh:
    case UnaryOp::Mish:
      return is_floating(dt);
    case UnaryOp::Erf:
    case UnaryOp::GeluErf:
      return is_floating(dt) && dt != kF64;
    default:
      return false;
  }
}
// y[i] = op(x[i]) for the ops has_unary accepts; x may equal y.
void unary(UnaryOp op, const float* x, float* y, int64_t n);
void unary(UnaryOp op, const double* x, double* y, int64_t n);

// Whether the CPU computes binary op `op` on floating dtype `dt` with its vector kernel
// (math.cpp's Binary), for every layout: gelu's gradients, whose scalar erf/tanh would cost
// several times the pass. The erf form in f32 only (f64 keeps libm's erfc), as has_unary.
constexpr bool has_binary(BinaryOp op, DType dt) {
  switch (op) {
    case BinaryOp::GeluTanhBackward:
      return is_floating(dt);
    case BinaryOp::GeluErfBackward:
      return is_floating(dt) && dt != kF64;
    default:
      return false;
  }
}
// y[i] = op(a[i], b[i]) for the ops has_binary accepts; y may equal a or b.
void binary(BinaryOp op, const float* a, const float* b, float* y, int64_t n);
void binary(BinaryOp op, const double* a, const double* b, double* y, int64_t n);

// softmax (log_softmax when log) of one contiguous row; x may equal y. A NaN or +inf anywhere in
// the row makes the row NaN, and so does an all -inf row (as PyTorch).
void softmax_row(const float* x, float* y, int64_t n, bool log);
void softmax_row(const double* x, double* y, int64_t n, bool log);

// acc[l] += x[i] for every i with i % 16 == l, in index order, over n (a multiple of 16)
// elements: exactly the scalar reduction's 16 lanes, so sums are bitwise the same on every
// target.
inline constexpr int kSumLanes = 16;
void add_lanes(const float* x, int64_t n, float* acc);
void add_lanes(const double* x, int64_t n, double* acc);
// Direct convolution of one plane at stride 1 without padding or dilation (simd/conv.cpp): the
// input's rows W elements apart, W = Wo + KW - 1; w the KH x KW taps in row-major order.
// out[oh][ow] = bias + sum of w[i][j] x[oh + i][ow + j], out Ho x Wo contiguous.
void conv_plane(const float* x, int64_t W, const float* w, int64_t KH, int64_t KW, float bias,
                float* out, int64_t Ho, int64_t Wo);
void conv_plane(const double* x, int64_t W, const double* w, int64_t KH, int64_t KW, double bias,
                double* out, int64_t Ho, int64_t Wo);
// grad[i * KW + j] = sum over `images` pairs of planes (go Ho x Wo contiguous, go_image apart; x
// as above, x_image apart) of go[oh][ow] x[oh + i][ow + j], in one fixed order.
void conv_plane_weight_grad(const float* go, int64_t go_image, const float* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, float* grad);
void conv_plane_weight_grad(const double* go, int64_t go_image, const double* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, double* grad);

// partial[c] for `count` consecutive chunks of `chunk` elements (a multiple of kSumLanes): the
// chunk's sum by add_lanes from zero, its lanes then combined by the reduction engine's tree.
void sum_chunks(const float* x, int64_t chunk, int64_t count, float* partial);
void sum_chunks(const double* x, int64_t chunk, int64_t count, double* partial);

// Mean (0 when rms) and biased variance of a row, accumulated in f64.
struct Moments {
  double mean, var;
};
Moments row_moments(const float* x, int64_t n, bool rms);
Moments row_moments(const double* x, int64_t n, bool rms);
// y = ((x - mean) * rstd) [* w] [+ b]; (x - mean) * rstd in f64, the affine part in T.
void normalize_row(const float* x, float* y, int64_t n, double mean, double rstd, const float* w,
                   const float* b);
void normalize_row(const double* x, double* y, int64_t n, double mean, double rstd, const double* w,
                   const double* b);

// 16-bit floats to and from f32, bitwise as the scalar conversions in oxmera/core/half.h
// (round to nearest even; NaN stays NaN).
void widen(const Half* x, float* y, int64_t n);
void widen(const BFloat16* x, float* y, int64_t n);
void narrow(const float* x, Half* y, int64_t n);
void narrow(const float* x, BFloat16* y, int64_t n);

// GEMM building blocks (gemm.cpp); the blocking and the threads are the caller's. The kernel
// computes register tiles of mr rows x nr columns from packed panels:
// - gemm_pack_a: A's rows [0, m) x depth [0, kc), element (i, k) at a[i * rs + k * cs], as
//   panels of mr rows (k-major in a panel, rows past m zero): round_up(m, mr) * kc elements.
// - gemm_pack_b: B's depth [0, kc) x columns [0, n), element (k, j) at b[k * rs + j * cs], as
//   panels of nr columns: kc * round_up(n, nr) elements.
// - gemm_block: C[m x n] = alpha * A @ B + beta * C from a packed A and B of depth kc, element
//   (i, j) of C at c[i * rs + j * cs]; C is not read when beta is 0.
// Each element of C sums its kc products in k order with fused multiply-adds from zero, so a
// product depends on how the caller splits K, never on how it splits M and N, nor on mr/nr.
struct GemmTile {
  int64_t mr, nr;
};
GemmTile gemm_tile(const float*);
GemmTile gemm_tile(const double*);
void gemm_pack_a(const float* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out);
void gemm_pack_a(const double* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, double* out);
void gemm_pack_b(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out);
void gemm_pack_b(const double* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, double* out);
// 16-bit A and B, widened to f32 panels as they are packed (bitwise widen() of each value): the
// f32 kernel then multiplies them, so no whole-operand f32 copy is needed.
void gemm_pack_a(const Half* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out);
void gemm_pack_a(const BFloat16* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out);
void gemm_pack_b(const Half* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out);
void gemm_pack_b(const BFloat16* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out);
void gemm_block(const float* apack, const float* bpack, int64_t m, int64_t n, int64_t kc, float* c,
                int64_t rs, int64_t cs, float alpha, float beta);
void gemm_block(const double* apack, const double* bpack, int64_t m, int64_t n, int64_t kc,
                double* c, int64_t rs, int64_t cs, double alpha, double beta);
// - gemm_small_rows: the same C (with contiguous rows) for m <= kSmallRows rows of A, read from
//   A and from B (rows contiguous, element (k, j) at b[k * brs + j]) without packing, with the
//   same bits; acc is m x n scratch.
inline constexpr int64_t kSmallRows = 8;
void gemm_small_rows(const float* a, int64_t ars, int64_t acs, const float* b, int64_t brs,
                     int64_t m, int64_t n, int64_t kc, float* c, int64_t crs, float alpha,
                     float beta, float* acc);
void gemm_small_rows(const double* a, int64_t ars, int64_t acs, const double* b, int64_t brs,
                     int64_t m, int64_t n, int64_t kc, double* c, int64_t crs, double alpha,
                     double beta, double* acc);
// - gemm_small_rows_transposed: the same C (element (i, j) at c[i * crs + j * ccs]) for m <=
//   kSmallRows rows of A against a B with contiguous columns (element (k, j) at b[k + j * bcs]:
//   x @ W^T), read from B without packing, with the same bits; 16-bit B is widened as it is read
//   (A and C are then f32).
void gemm_small_rows_transposed(const float* a, int64_t ars, int64_t acs, const float* b,
                                int64_t bcs, int64_t m, int64_t n, int64_t kc, float* c,
                                int64_t crs, int64_t ccs, float alpha, float beta);
void gemm_small_rows_transposed(const double* a, int64_t ars, int64_t acs, const double* b,
                                int64_t bcs, int64_t m, int64_t n, int64_t kc, double* c,
                                int64_t crs, int64_t ccs, double alpha, double beta);
void gemm_small_rows_transposed(const float* a, int64_t ars, int64_t acs, const Half* b,
                                int64_t bcs, int64_t m, int64_t n, int64_t kc, float* c,
                                int64_t crs, int64_t ccs, float alpha, float beta);
void gemm_small_rows_transposed(const float* a, int64_t ars, int64_t acs, const BFloat16* b,
                                int64_t bcs, int64_t m, int64_t n, int64_t kc, float* c,
                                int64_t crs, int64_t ccs, float alpha, float beta);

// The targets compiled in and supported by this CPU, best first, as Highway names them
// ("AVX3", "AVX2", "SSE4", and "SCALAR" or "EMU128" for portable C++), and the one in use.
std::vector<std::string> targets();
std::string target();
// Makes every kernel above run at `name` (one of targets()); "" goes back to the best.
void set_target(const std::string& name);

}  // namespace ox::cpu::simd
