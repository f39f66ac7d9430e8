#pragma once
// The CPU backend's primitives, one family per file.

#include "backend/backend.h"

namespace ox::cpu {

void copy(const StridedArray& dst, const StridedArray& src);
void fill(const StridedArray& dst, const Scalar& value);
void arange(const StridedArray& dst, const Scalar& start, const Scalar& step);
void linspace(const StridedArray& dst, double start, double end);
void random(const StridedArray& dst, const RandomSpec& spec);
void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed, uint64_t first_block);
void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block);
void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src, const UnaryParams& p);
void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            double alpha);
void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
           const StridedArray& b);

}  // namespace ox::cpu
