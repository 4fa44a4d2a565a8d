/*
 * blas.h — OpenBLAS, the CPU peer of kiln bench's GEMM, convolution and
 * perceptron cases, loaded when a case first calls it (blas.c), not linked:
 * a linked OpenBLAS starts a thread a core at every kiln command's start,
 * which spin while the command discovers its OpenCL drivers, and every
 * symbol the drivers' libraries look up searched it too. Include this
 * instead of <cblas.h>: cblas_sgemm() then calls the loaded one.
 */
#ifndef KILN_TOOLS_BLAS_H
#define KILN_TOOLS_BLAS_H

#include <cblas.h>

void kiln_cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m,
                      int n, int k, float alpha, const float *a, int lda, const float *b,
                      int ldb, float beta, float *c, int ldc);
#define cblas_sgemm kiln_cblas_sgemm

#endif
