/* The AVX512_BF16 path of lc_gemm_bf16 (gemm_bf16.c): packing that rounds with vcvtne2ps2bf16 into the
 * pair formats of gemm_bf16.h, and the MR x NR = 12 x 32 register-tiled kernel on vdpbf16ps (24 zmm
 * accumulators; per pair row two B vectors and twelve broadcast A words). Compiled for AVX512_BF16 by a
 * target pragma whatever -march says; gemm_bf16.c calls it only after CPUID and XGETBV say yes. */
#include "kernels/gemm_bf16.h"

#if !LC_BF16_AVX512

const lc_bf16_ops *lc_bf16_avx512_ops(void) { return NULL; }

#else

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")
#include <immintrin.h>
#include <string.h>

#define MR LC_BF16_MR
#define NR LC_BF16_NR
#define KP LC_BF16_KP

/* Lanes below n (n may exceed 16 or be negative). */
static inline __mmask16 lc_lanes(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* 16 pair words (lo[j], hi[j]) from two rows of 16 floats: one conversion, one interleave. */
static inline __m512i lc_interleave_pairs(__m512 lo, __m512 hi) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* Requests n floats from src into L1 (the row segments packed here are 1 KB: too short for the hardware
 * prefetcher to learn, so each line would wait for memory in turn). */
static inline void lc_prefetch_run(const float *src, int n) {
    for (int i = 0; i < n; i += 16) _mm_prefetch((const char *)(src + i), _MM_HINT_T0);
}

/* 16 pair words from 32 consecutive floats (n of them valid): K contiguous, so no reordering. */
static inline __m512i lc_convert_run(const float *src, int n) {
    const __m512 lo = _mm512_maskz_loadu_ps(lc_lanes(n), src), hi = _mm512_maskz_loadu_ps(lc_lanes(n - 16), src + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* Prefetch distances, in rows of the source read one after the other (a converted row of 256 floats takes
 * about 50 ns, a line from memory about twice that). */
#ifndef LC_AHEAD_RUNS
#define LC_AHEAD_RUNS 3 /* K-contiguous rows of 2 KB */
#endif
#ifndef LC_AHEAD_PAIRS
#define LC_AHEAD_PAIRS 8 /* pair rows of the strided layouts */
#endif

/* One row of the rows layout, converted in place; next (a row further on, maybe in the next panel) is
 * prefetched. */
static void lc_bf16x_pack_row(uint32_t *dst, const float *src, int kc, const float *next) {
    const int kp = (kc + 1) / 2;
    if (next) lc_prefetch_run(next, kc);
    for (int p = 0; p < kp; p += 16)
        _mm512_mask_storeu_epi32(dst + p, lc_lanes(kp - p), lc_convert_run(src + 2 * p, kc - 2 * p));
}

static void lc_bf16x_pack_a(uint32_t *panel, lc_trans ta, const float *A, int lda, int i0, int rows, int k0, int kc,
                            int ahead) {
    const int kp = (kc + 1) / 2;
    if (!ta) {
        lc_bf16_pack_a_rows(panel, A, lda, i0, rows, k0, kc, ahead, LC_AHEAD_RUNS, lc_bf16x_pack_row);
        return;
    }
    const __mmask16 valid = lc_lanes(rows);
    for (int p = 0; p < kp; p++) { /* pairs layout: two rows of A give one row of MR words */
        const float *lo = A + (size_t)(k0 + 2 * p) * lda + i0;
        if (2 * (p + LC_AHEAD_PAIRS) + 1 < kc) {
            _mm_prefetch((const char *)(lo + 2 * LC_AHEAD_PAIRS * (size_t)lda), _MM_HINT_T0);
            _mm_prefetch((const char *)(lo + (2 * LC_AHEAD_PAIRS + 1) * (size_t)lda), _MM_HINT_T0);
        }
        const __m512 vlo = _mm512_maskz_loadu_ps(valid, lo);
        const __m512 vhi = 2 * p + 1 < kc ? _mm512_maskz_loadu_ps(valid, lo + lda) : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(panel + (size_t)p * MR, lc_lanes(MR), lc_interleave_pairs(vlo, vhi));
    }
}

static void lc_bf16x_pack_b(uint32_t *panel, lc_trans tb, const float *B, int ldb, int k0, int kc, int j0, int cols,
                            int ahead) {
    const int kp = (kc + 1) / 2;
    if (tb) { /* column j of op(B) is row j of B: convert 16 pairs, then scatter them down the column */
        uint32_t run[16];
        for (int j = 0; j < NR; j++) {
            if (j >= cols) {
                for (int p = 0; p < kp; p++) panel[(size_t)p * NR + j] = 0;
                continue;
            }
            const float *src = B + (size_t)(j0 + j) * ldb + k0;
            if (j + LC_AHEAD_RUNS < cols + ahead) lc_prefetch_run(src + LC_AHEAD_RUNS * (size_t)ldb, kc);
            for (int p0 = 0; p0 < kp; p0 += 16) {
                _mm512_storeu_si512(run, lc_convert_run(src + 2 * p0, kc - 2 * p0));
                const int n = kp - p0 < 16 ? kp - p0 : 16;
                for (int q = 0; q < n; q++) panel[(size_t)(p0 + q) * NR + j] = run[q];
            }
        }
        return;
    }
    const __mmask16 m0 = lc_lanes(cols), m1 = lc_lanes(cols - 16);
    for (int p = 0; p < kp; p++) {
        const float *lo = B + (size_t)(k0 + 2 * p) * ldb + j0;
        uint32_t *dst = panel + (size_t)p * NR;
        if (2 * (p + LC_AHEAD_PAIRS) + 1 < kc) { /* the panel's 128 bytes of a row span up to three lines */
            lc_prefetch_run(lo + 2 * LC_AHEAD_PAIRS * (size_t)ldb, cols);
            lc_prefetch_run(lo + (2 * LC_AHEAD_PAIRS + 1) * (size_t)ldb, cols);
        }
        const __m512 lo0 = _mm512_maskz_loadu_ps(m0, lo), lo1 = _mm512_maskz_loadu_ps(m1, lo + 16);
        __m512 hi0 = _mm512_setzero_ps(), hi1 = hi0;
        if (2 * p + 1 < kc) hi0 = _mm512_maskz_loadu_ps(m0, lo + ldb), hi1 = _mm512_maskz_loadu_ps(m1, lo + ldb + 16);
        _mm512_storeu_si512(dst, lc_interleave_pairs(lo0, hi0));
        _mm512_storeu_si512(dst + 16, lc_interleave_pairs(lo1, hi1));
    }
}

/* The tile: acc[r][h] += A word (row r, pair p) x B words (pair p, columns 16h..16h+15). The A word of row
 * r, pair p is at a[p * SP + r * SI]: (1, KP) in the rows layout, (MR, 1) in the pairs layout; constants,
 * so every address is a fixed displacement. */
static inline __attribute__((always_inline)) void lc_bf16x_tile(int kp, const uint32_t *restrict a,
                                                                  const uint32_t *restrict b, const int SP,
                                                                  const int SI, __m512 acc[MR][2]) {
    for (int p = 0; p < kp; p++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + (size_t)p * NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + (size_t)p * NR + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            const __m512bh w = (__m512bh)_mm512_set1_epi32((int)a[(size_t)p * SP + (size_t)r * SI]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], w, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], w, b1);
        }
    }
}

static void lc_bf16x_kernel(int kp, lc_trans ta, const uint32_t *a, const uint32_t *b, float *C, int ldc, int rows,
                            int cols, float alpha, float beta) {
    __m512 acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int r = 0; r < rows; r++) { /* C is touched only at the end: fetch it while computing */
        _mm_prefetch((const char *)(C + (size_t)r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + (size_t)r * ldc + cols - 1), _MM_HINT_T0);
    }
    if (ta) lc_bf16x_tile(kp, a, b, MR, 1, acc);
    else lc_bf16x_tile(kp, a, b, 1, KP, acc);
    const __mmask16 m[2] = {lc_lanes(cols), lc_lanes(cols - 16)};
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < 2; h++) {
            float *c = C + (size_t)r * ldc + 16 * h;
            __m512 v;
            if (beta == 0) v = _mm512_mul_ps(va, acc[r][h]);
            else if (beta == 1) v = _mm512_fmadd_ps(va, acc[r][h], _mm512_maskz_loadu_ps(m[h], c));
            else v = _mm512_fmadd_ps(va, acc[r][h], _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m[h], c)));
            _mm512_mask_storeu_ps(c, m[h], v);
        }
}

static void lc_bf16x_round(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i += 32) {
        const int left = n - i < 32 ? (int)(n - i) : 32;
        const __m512i v = lc_convert_run(src + i, left);
        _mm512_mask_storeu_epi16(dst + i, left >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << left) - 1), v);
    }
}

#pragma GCC pop_options

static const lc_bf16_ops lc_bf16x_ops = {lc_bf16x_pack_a, lc_bf16x_pack_b, lc_bf16x_kernel, lc_bf16x_round};

const lc_bf16_ops *lc_bf16_avx512_ops(void) { return &lc_bf16x_ops; }
#endif
