/* What tests/test_gemm.c and tests/test_gemm_bf16.c share: the shape and scalar cases of a product, the random
 * values they fill matrices with (never zero, so a skipped term shows) and aligned buffers. main seeds
 * rng. */
#ifndef LC_TESTS_GEMM_KIT_H
#define LC_TESTS_GEMM_KIT_H

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/table.h"
#include "kernels/kernels.h"

typedef struct {
    int M, N, K;
} dims;

typedef struct {
    float alpha, beta;
} scalars;

static const scalars scalar_cases[3] = {{1.0f, 0.0f}, {0.7f, 1.3f}, {-1.5f, 1.0f}};

static lc_rng rng;

/* Uniform in +-[0.1, 1): random, never zero. */
static inline float nonzero_uniform(void) {
    float u = 0.1f + 0.9f * lc_rng_uniform(&rng);
    return lc_rng_uniform(&rng) < 0.5f ? -u : u;
}

static inline float *alloc_floats(size_t n) {
    float *p = lc_alloc_aligned(n * sizeof(float));
    if (!p) abort();
    return p;
}

typedef void (*gemm_fn)(lc_trans, lc_trans, int, int, int, float, const float *, int, const float *, int, float,
                        float *, int);

/* Four products C_q = op(A_q) B (op(A_q) 70 x 300, transposed in memory for ta; B 300 x 90) by f, one after
 * another and from a parallel loop, where each runs single-threaded with its own packing buffers: 1 when both
 * give the same bits. */
static inline int concurrent_products_agree(gemm_fn f, lc_trans ta) {
    enum { P = 4, M = 70, N = 90, K = 300 };
    float *A = alloc_floats((size_t)P * M * K), *B = alloc_floats((size_t)K * N);
    float *C = alloc_floats((size_t)P * M * N), *C1 = alloc_floats((size_t)P * M * N);
    for (size_t i = 0; i < (size_t)P * M * K; i++) A[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = nonzero_uniform();
    const int lda = ta ? M : K;
    for (int q = 0; q < P; q++)
        f(ta, LC_NO_TRANS, M, N, K, 1.0f, A + (size_t)q * M * K, lda, B, N, 0.0f, C1 + (size_t)q * M * N, N);
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1)
#endif
    for (int q = 0; q < P; q++)
        f(ta, LC_NO_TRANS, M, N, K, 1.0f, A + (size_t)q * M * K, lda, B, N, 0.0f, C + (size_t)q * M * N, N);
    const int same = memcmp(C, C1, (size_t)P * M * N * sizeof(float)) == 0;
    lc_free(A), lc_free(B), lc_free(C), lc_free(C1);
    return same;
}

#endif
