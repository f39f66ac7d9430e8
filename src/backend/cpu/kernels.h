#pragma once
// The CPU backend's primitives, one family per file.

#include "backend/backend.h"

namespace ox::cpu {

void copy(const StridedArray& dst, const StridedArray& src);
void fill(const StridedArray& dst, const Scalar& value);
void arange(const StridedArray& dst, const Scalar& start, const Scalar& step);
void linspace(const StridedArray& dst, double start, double end);
void random(const StridedArray& dst, const RandomSpec& spec);
void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed, uint64_t first_block,
               CheckSite site);
void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block);
void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src, const ReduceParams& p);
void scan(ScanOp op, const StridedArray& dst, const StridedArray& src, const StridedArray* indices);
void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src, const UnaryParams& p);
void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            double alpha);
void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
           const StridedArray& b);
// Linear algebra on LAPACK (linalg.cpp); Backend says what each computes.
void cholesky(const StridedArray& a, const StridedArray& info, bool upper);
void lu_factor(const StridedArray& a, const StridedArray& pivots, const StridedArray& info);
void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper, bool transpose,
                      bool unit_diagonal);
void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
              bool transpose);
void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info);
void orgqr(const StridedArray& q, const StridedArray& tau);
void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info, bool vectors,
          bool upper);
void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
         const StridedArray& vh, const StridedArray& info, bool full_matrices);
// Batched matmul (matmul.cpp).
void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            const Scalar& alpha, const Scalar& beta);

// Normalization and losses (softmax_norm.cpp, loss.cpp).
void softmax(const StridedArray& dst, const StridedArray& src, bool log);
void softmax_backward(const StridedArray& gi, const StridedArray& go, const StridedArray& y,
                      bool log);
void layer_norm(const StridedArray& dst, const StridedArray& mean, const StridedArray& rstd,
                const StridedArray& src, const StridedArray& weight, const StridedArray& bias,
                double eps, bool rms);
void layer_norm_backward(const StridedArray& gi, const StridedArray& gw, const StridedArray& gb,
                         const StridedArray& go, const StridedArray& src, const StridedArray& mean,
                         const StridedArray& rstd, const StridedArray& weight, bool rms);
void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                   const StridedArray& logits, const StridedArray& target,
                   const StridedArray& weight, int64_t ignore_index, double smoothing,
                   CheckSite site);
void cross_entropy_backward(const StridedArray& grad, const StridedArray& grad_loss,
                            const StridedArray& logits, const StridedArray& target,
                            const StridedArray& weight, int64_t ignore_index, double smoothing);

// NN kernels: convolution and pooling (conv.cpp, pool.cpp).
void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w);
void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w);
void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                      const StridedArray& b, const StridedArray& bias, const Window2d& w);
void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
            const StridedArray& src, const PoolParams& p);
void pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                     const StridedArray& indices, const PoolParams& p, CheckSite site);

// Indexing (index.cpp).
void gather(const StridedArray& dst, const StridedArray& src,
            const std::vector<IndexOperand>& indices);
void scatter(const StridedArray& dst, const StridedArray& src,
             const std::vector<IndexOperand>& indices, ScatterReduce reduce);
void nonzero(const StridedArray& dst, const StridedArray& src);

// Sorting (sort.cpp).
void sort(const StridedArray& values, const StridedArray& indices, const StridedArray& src,
          const SortParams& params);

}  // namespace ox::cpu
