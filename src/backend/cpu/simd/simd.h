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

// y[i] = op(x[i]) for the ops has_unary accepts; x may equal y.
bool has_unary(UnaryOp op);
void unary(UnaryOp op, const float* x, float* y, int64_t n);
void unary(UnaryOp op, const double* x, double* y, int64_t n);

// softmax (log_softmax when log) of one contiguous row; x may equal y. NaN anywhere in the row
// makes the row NaN; an all -inf row gives NaN (as PyTorch).
void softmax_row(const float* x, float* y, int64_t n, bool log);
void softmax_row(const double* x, double* y, int64_t n, bool log);

// acc[l] += x[i] for every i with i % 16 == l, in index order, over n (a multiple of 16)
// elements: exactly the scalar reduction's 16 lanes, so sums are bitwise the same on every
// target.
inline constexpr int kSumLanes = 16;
void add_lanes(const float* x, int64_t n, float* acc);
void add_lanes(const double* x, int64_t n, double* acc);

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

// The targets compiled in and supported by this CPU, best first, as Highway names them
// ("AVX3", "AVX2", "SSE4", and "SCALAR" or "EMU128" for portable C++), and the one in use.
std::vector<std::string> targets();
std::string target();
// Makes every kernel above run at `name` (one of targets()); "" goes back to the best.
void set_target(const std::string& name);

}  // namespace ox::cpu::simd
