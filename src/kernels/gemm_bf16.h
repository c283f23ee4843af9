/* Internal to the bf16 matrix product (not part of the library's API): the packed formats and the blocking
 * that its driver (gemm_bf16.c, with the portable kernels) and the AVX512_BF16 kernels (gemm_bf16_avx512.c)
 * share.
 *
 * Packed values are bf16 pairs along K in one 32-bit word: bits 0-15 hold element k (even), bits 16-31
 * element k + 1, as vdpbf16ps reads them; a missing k + 1 (K odd) is zero. A KC-deep slice has
 * kp = (kc + 1) / 2 pair rows.
 *   B panel, NR columns:  word[p * NR + j]; columns past the edge are zero.
 *   A panel, MR rows, in the layout that packs without a transpose:
 *     op(A) = A   (ta = LC_NO_TRANS, K contiguous): word[i * LC_BF16_KP + p]  ("rows": fixed row stride)
 *     op(A) = A^T (ta = LC_TRANS,    M contiguous): word[p * MR + i]          ("pairs")
 *   rows past the edge are zero. Every panel starts LC_BF16_MR * LC_BF16_KP words after the last.
 * Every kernel sums an element of C the way vdpbf16ps does: from zero at the start of each KC slice, per
 * pair first the product of the odd elements, then of the even ones, each addition rounded to fp32; then
 * C = alpha * sum + beta * C with one rounding (fmaf). Both paths therefore give the same bits wherever
 * the hardware follows that definition (Intel's, which Zen 4 matches) and no value is subnormal. */
#ifndef LC_KERNELS_GEMM_BF16_H
#define LC_KERNELS_GEMM_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

#define LC_BF16_MR 12                   /* rows of the register tile: 24 accumulators of 32 zmm registers */
#define LC_BF16_NR 32                   /* columns of the register tile: two 16-float vectors */
#ifndef LC_BF16_KC
#define LC_BF16_KC 512                  /* depth of a packed slice (even); a B panel is 32 KB */
#endif
#define LC_BF16_KP (LC_BF16_KC / 2)     /* pair rows of a full slice */
#ifndef LC_BF16_MC
#define LC_BF16_MC (16 * LC_BF16_MR)    /* rows of a packed A block (192 KB, in L2); a multiple of MR */
#endif
#ifndef LC_BF16_NT
#define LC_BF16_NT (16 * LC_BF16_NR)    /* columns of C in one task (its B block: 512 KB); a multiple of NR.
                                         * A is packed again for every task: wider tasks read it less often
                                         * (Zen 4, one thread: NT 512 / KC 512 beat 256 / 256 by 5-25%) */
#endif

/* Whether the AVX512_BF16 path is compiled in: on x86-64 with a compiler that knows the instructions,
 * except in the generic half of a portable build (-DLC_DISPATCH without AVX-512), whose path is the
 * baseline's; the AVX-512 half and the build tree compile it with a target pragma, whatever -march says. */
#if defined(__x86_64__) && (__GNUC__ >= 10 || (defined(__clang__) && __clang_major__ >= 9)) && \
    !(defined(LC_DISPATCH) && !defined(__AVX512F__))
#define LC_BF16_AVX512 1
#else
#define LC_BF16_AVX512 0
#endif

/* The operations a code path provides; the driver calls them through this table. */
typedef struct {
    /* one A panel: op(A)[i0 : i0+rows, k0 : k0+kc], rows <= MR; `ahead` rows of op(A) follow it (the
     * packing may prefetch them: the next panel) */
    void (*pack_a)(uint32_t *panel, lc_trans ta, const float *A, int lda, int i0, int rows, int k0, int kc,
                   int ahead);
    /* one B panel: op(B)[k0 : k0+kc, j0 : j0+cols], cols <= NR; `ahead` columns of op(B) follow it */
    void (*pack_b)(uint32_t *panel, lc_trans tb, const float *B, int ldb, int k0, int kc, int j0, int cols,
                   int ahead);
    /* C[rows, cols] = alpha * (A panel x B panel over kp pair rows) + beta * C (not read when beta == 0) */
    void (*kernel)(int kp, lc_trans ta, const uint32_t *a, const uint32_t *b, float *C, int ldc, int rows, int cols,
                   float alpha, float beta);
    /* dst[i] = the bf16 rounding of src[i] */
    void (*round)(uint16_t *dst, const float *src, size_t n);
} lc_bf16_ops;

/* The AVX512_BF16 path (gemm_bf16_avx512.c); NULL where it is not compiled in. Call it only when
 * lc_cpu_has_avx512_bf16() says the CPU and OS run it. */
const lc_bf16_ops *lc_bf16_avx512_ops(void);

/* The rows layout of an A panel (op(A) = A, K contiguous): each row i < rows of op(A)[i0.., k0 .. k0+kc)
 * into word[i * KP ..] by row(dst, src, kc, next), where next is the row `runs` rows further on while it is
 * one of the rows + ahead the packing reads (a path's prefetch; NULL otherwise, and always when runs is 0);
 * the rows past the edge are zero. */
static inline void lc_bf16_pack_a_rows(uint32_t *panel, const float *A, int lda, int i0, int rows, int k0, int kc,
                                       int ahead, int runs,
                                       void (*row)(uint32_t *dst, const float *src, int kc, const float *next)) {
    for (int i = 0; i < LC_BF16_MR; i++) {
        uint32_t *dst = panel + (size_t)i * LC_BF16_KP;
        if (i >= rows) {
            memset(dst, 0, (size_t)((kc + 1) / 2) * sizeof *dst);
            continue;
        }
        const float *src = A + (size_t)(i0 + i) * lda + k0;
        row(dst, src, kc, runs > 0 && i + runs < rows + ahead ? src + (size_t)runs * lda : NULL);
    }
}

/* Scalar rounding of the bits of one float (the definition both paths follow). */
static inline uint16_t lc_bf16_round_bits(uint32_t b) {
    if ((b & 0x7f800000u) == 0) return (uint16_t)((b >> 16) & 0x8000u);  /* zero or subnormal: signed zero */
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u); /* NaN: truncated, made quiet */
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);        /* nearest, ties to even (may give Inf) */
}

#endif
