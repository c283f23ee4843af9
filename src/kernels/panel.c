/* Key panels: a matrix of rows kept in the layout a product with its transpose wants, packed once when a
 * row is written and multiplied many times; and the product with a matrix of rows read in place (the
 * values of a head, kept contiguous). Transformer-XL evaluation multiplies every segment's queries
 * with all L cached keys and all L position rows of each head; lc_gemm (the BLAS) repacks those operands
 * on every call, which at L = 3,800 cost as much per segment as an 80-byte segment's arithmetic is worth
 * (experiments/xl-eval/README.md). Here each row is packed once in its life.
 *
 * Layout (LC_PANEL_ROWS = 16): row r, column d of an n x D matrix lives at
 *     panel[(r / 16) * 16 * D + d * 16 + r % 16],
 * i.e. each block of 16 rows is stored transposed, D vectors of 16 floats. The product
 *     C[i][16 p + l] = alpha * sum_d A[i][d] * panel p's row l, column d
 * then reads one vector per (panel, d) and broadcasts A's elements: a register tile of MR rows of A
 * by NV vectors of panels, as the inner kernel of a GEMM whose B operand is already packed. */
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/vec.h"

void lc_panel_pack(float *panels, int D, int r0, int n, const float *src, long ld) {
    for (int i = 0; i < n; i++) {
        const int r = r0 + i;
        float *dst = panels + (size_t)(r / LC_PANEL_ROWS) * LC_PANEL_ROWS * D + r % LC_PANEL_ROWS;
        const float *row = src + (long)i * ld;
        for (int d = 0; d < D; d++) dst[(size_t)d * LC_PANEL_ROWS] = row[d];
    }
}

/* Register tile: MR rows of A by NPAN panels (NPAN * 16 columns, NV native vectors): 24 accumulators
 * with AVX-512, 12 with AVX2 (its 16 registers), 12 below. */
#if LC_VW == 16
enum { MR = 8, NPAN = 3 };
#elif LC_VW == 8
enum { MR = 6, NPAN = 1 };
#else
enum { MR = 3, NPAN = 1 };
#endif
enum { NV = NPAN * LC_VPARTS };

/* Vector j of the tile at depth d: panel j / LC_VPARTS, lanes (j % LC_VPARTS) * LC_VW onwards. */
static inline const float *tile_vector(const float *panel0, int D, int j, int d) {
    return panel0 + (size_t)(j / LC_VPARTS) * LC_PANEL_ROWS * D + (size_t)d * LC_PANEL_ROWS + (j % LC_VPARTS) * LC_VW;
}

/* The full tile: MR rows, NPAN panels. */
static void tile_full(int D, float alpha, const float *A, int lda, const float *panel0, float *C, long ldc) {
    lc_vn acc[MR][NV];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) acc[i][j] = (lc_vn){0};
    for (int d = 0; d < D; d++) {
        lc_vn b[NV];
        for (int j = 0; j < NV; j++) b[j] = lc_vnload(tile_vector(panel0, D, j, d));
        for (int i = 0; i < MR; i++) {
            const lc_vn a = (lc_vn){0} + A[(size_t)i * lda + d];
            for (int j = 0; j < NV; j++) acc[i][j] += a * b[j];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) lc_vnstore(C + (size_t)i * ldc + j * LC_VW, acc[i][j] * alpha);
}

/* An edge tile: rows < MR or vectors < NV, one vector of accumulators at a time. */
static void tile_edge(int D, float alpha, const float *A, int lda, const float *panel0, int rows, int vectors,
                      float *C, long ldc) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < vectors; j++) {
            lc_vn acc = (lc_vn){0};
            for (int d = 0; d < D; d++) acc += A[(size_t)i * lda + d] * lc_vnload(tile_vector(panel0, D, j, d));
            lc_vnstore(C + (size_t)i * ldc + j * LC_VW, acc * alpha);
        }
}

void lc_panel_gemm(int M, int n_panels, int D, float alpha, const float *A, int lda, const float *panels, float *C,
                   long ldc) {
    /* A panel block (NPAN panels, 12 KB at D = 64) is read from memory once and stays in L1 while every
     * row tile of A (M x D, from L1 or L2) passes over it. */
    for (int p = 0; p < n_panels; p += NPAN) {
        const int np = lc_imin(NPAN, n_panels - p);
        const float *panel0 = panels + (size_t)p * LC_PANEL_ROWS * D;
        float *Cp = C + (size_t)p * LC_PANEL_ROWS;
        for (int i = 0; i < M; i += MR) {
            const int rows = lc_imin(MR, M - i);
            if (rows == MR && np == NPAN)
                tile_full(D, alpha, A + (size_t)i * lda, lda, panel0, Cp + (size_t)i * ldc, ldc);
            else
                tile_edge(D, alpha, A + (size_t)i * lda, lda, panel0, rows, np * LC_VPARTS, Cp + (size_t)i * ldc,
                          ldc);
        }
    }
}

/* ---- C = A B with B's rows read in place: K-blocks of B stay in L1/L2 while every row tile of A passes
 * over them; the tile's sums live in registers across a block and in C between blocks. */
#if LC_VW == 16
enum { ROWS_MR = 6 };
#else
enum { ROWS_MR = 3 };
#endif
enum { ROWS_KB = 256, ROWS_NV = 4 };

static inline __attribute__((always_inline)) void rows_tile(int rows, int nv, int k0, int kn, const float *A, int lda,
                                                             const float *B, int ldb, float *C, long ldc) {
    lc_vn acc[ROWS_MR][ROWS_NV];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < nv; j++) acc[i][j] = k0 ? lc_vnload(C + (size_t)i * ldc + j * LC_VW) : (lc_vn){0};
    for (int k = k0; k < k0 + kn; k++) {
        lc_vn b[ROWS_NV];
        for (int j = 0; j < nv; j++) b[j] = lc_vnload(B + (size_t)k * ldb + j * LC_VW);
        for (int i = 0; i < rows; i++) {
            const lc_vn a = (lc_vn){0} + A[(size_t)i * lda + k];
            for (int j = 0; j < nv; j++) acc[i][j] += a * b[j];
        }
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < nv; j++) lc_vnstore(C + (size_t)i * ldc + j * LC_VW, acc[i][j]);
}

int lc_rows_gemm_fits(int N) { return N > 0 && N % LC_VW == 0; }

void lc_rows_gemm(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, long ldc) {
    if (K == 0) {
        for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
    for (int k0 = 0; k0 < K; k0 += ROWS_KB) {
        const int kn = lc_imin(ROWS_KB, K - k0);
        for (int n0 = 0; n0 < N; n0 += ROWS_NV * LC_VW) {
            const int nv = lc_imin(ROWS_NV, (N - n0) / LC_VW);
            for (int i = 0; i < M; i += ROWS_MR) {
                const int rows = lc_imin(ROWS_MR, M - i);
                const float *Ai = A + (size_t)i * lda;
                float *Ci = C + (size_t)i * ldc + n0;
                /* constant bounds for whole row tiles: the sums stay in registers */
                if (rows == ROWS_MR && nv == 4) rows_tile(ROWS_MR, 4, k0, kn, Ai, lda, B + n0, ldb, Ci, ldc);
                else if (rows == ROWS_MR && nv == 2) rows_tile(ROWS_MR, 2, k0, kn, Ai, lda, B + n0, ldb, Ci, ldc);
                else if (rows == ROWS_MR && nv == 1) rows_tile(ROWS_MR, 1, k0, kn, Ai, lda, B + n0, ldb, Ci, ldc);
                else rows_tile(rows, nv, k0, kn, Ai, lda, B + n0, ldb, Ci, ldc);
            }
        }
    }
}
