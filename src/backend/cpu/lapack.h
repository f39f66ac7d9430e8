#pragma once
// What the LAPACK-based kernels share (linalg.cpp, tridiagonal.cpp).

#include <omp.h>

namespace ox::cpu {

// OpenBLAS (OpenMP build) takes its thread count from omp_get_max_threads() on each call and
// runs serially inside an active parallel region. Outside one (a batch of one matrix, or one
// thread), this guard makes the calling thread's count 1 for the duration of the call.
class SerialBlas {
 public:
  SerialBlas() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SerialBlas() { omp_set_num_threads(saved_); }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  int saved_;
};

// Eigenvalues (ascending, into d) and eigenvectors (columns of the n x n z, leading dimension
// ldz) of the symmetric tridiagonal matrix with diagonal d and off-diagonal e (n - 1 values,
// destroyed): LAPACK's stedc('I'), with its top divide-and-conquer step on all threads. The
// result does not depend on the thread count. Returns stedc's info (> 0: a root finder failed).
int tridiagonal_eigh(int n, float* d, float* e, float* z, int ldz);
int tridiagonal_eigh(int n, double* d, double* e, double* z, int ldz);

}  // namespace ox::cpu
