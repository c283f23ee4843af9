/* Matrix products: lc_gemm (CBLAS dispatch), the built-in blocked kernel lc_gemm_builtin, and the
 * double-precision reference lc_gemm_ref.
 *
 * The built-in kernel follows the BLIS/Goto scheme. For each NC-wide column block and KC-deep slice:
 * op(B) is packed into NR-wide panels (shared), then the MC x NT tiles of C are handed to threads; a
 * thread packs its MC x KC block of op(A) into MR-tall panels and runs the register-tiled micro-kernel
 * (an MR x NR block of C held in vector registers) over the tile. Every C element is summed by one
 * thread in the fixed order k = 0..K-1, so results do not depend on the thread count or schedule.
 * Edge tiles are zero-padded at packing time and written back through a small buffer. */
#include <stdlib.h>
#include <string.h>

#include "core/table.h"
#include "kernels/kernels.h"

#ifdef LC_USE_CBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* Vector width follows the target: 16 floats with AVX-512, 8 with AVX, else 4 (GCC emulates the
 * vector type where the hardware lacks it, so the code stays portable). */
#if defined(__AVX512F__)
#define LC_VEC_FLOATS 16
#define LC_MR 12 /* 24 accumulators + 2 B vectors of 32 zmm registers */
#elif defined(__AVX__)
#define LC_VEC_FLOATS 8
#define LC_MR 6 /* 12 accumulators + 2 B vectors + 1 broadcast of 16 ymm registers */
#else
#define LC_VEC_FLOATS 4
#define LC_MR 6
#endif
#define LC_NR (2 * LC_VEC_FLOATS)
#define LC_KC 256          /* depth of a packed slice: an NR x KC panel of B stays in L1 */
#define LC_MC (16 * LC_MR) /* rows of a packed A block (L2 resident) */
#define LC_NT (8 * LC_NR)  /* columns of C in one thread's tile */
#define LC_NC 2048         /* columns of B packed at once (bounds the shared buffer) */

typedef float lc_vf __attribute__((vector_size(LC_VEC_FLOATS * 4)));
typedef float lc_vf_unaligned __attribute__((vector_size(LC_VEC_FLOATS * 4), aligned(4)));

/* ---- reference ---- */

void lc_gemm_ref(lc_trans ta, lc_trans tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc) {
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double sum = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                sum += a * b;
            }
            double *c = &C[(size_t)i * ldc + j];
            *c = beta == 0 ? alpha * sum : alpha * sum + beta * *c;
        }
    }
}

/* ---- packing ---- */

/* Packs op(A)[i0 : i0+mc, k0 : k0+kc] as consecutive MR-row panels, each stored k-major
 * (panel[k * MR + r]); rows past mc are zero. Source reads run along memory in both layouts. */
static void lc_pack_a(float *restrict dst, lc_trans ta, const float *A, int lda, int i0, int mc, int k0, int kc) {
    for (int p = 0; p < mc; p += LC_MR) {
        int rows = mc - p < LC_MR ? mc - p : LC_MR;
        float *panel = dst + (size_t)p * kc;
        if (rows < LC_MR) memset(panel, 0, (size_t)kc * LC_MR * sizeof(float));
        if (ta) {
            for (int k = 0; k < kc; k++) {
                const float *src = A + (size_t)(k0 + k) * lda + i0 + p;
                for (int r = 0; r < rows; r++) panel[k * LC_MR + r] = src[r];
            }
        } else {
            for (int r = 0; r < rows; r++) {
                const float *src = A + (size_t)(i0 + p + r) * lda + k0;
                for (int k = 0; k < kc; k++) panel[k * LC_MR + r] = src[k];
            }
        }
    }
}

/* Packs one NR-column panel op(B)[k0 : k0+kc, j0 : j0+cols] k-major (panel[k * NR + c]); columns past
 * `cols` are zero. */
static void lc_pack_b_panel(float *restrict panel, lc_trans tb, const float *B, int ldb, int k0, int kc, int j0,
                            int cols) {
    if (cols < LC_NR) memset(panel, 0, (size_t)kc * LC_NR * sizeof(float));
    if (tb) {
        for (int c = 0; c < cols; c++) {
            const float *src = B + (size_t)(j0 + c) * ldb + k0;
            for (int k = 0; k < kc; k++) panel[k * LC_NR + c] = src[k];
        }
    } else {
        for (int k = 0; k < kc; k++) {
            const float *src = B + (size_t)(k0 + k) * ldb + j0;
            for (int c = 0; c < cols; c++) panel[k * LC_NR + c] = src[c];
        }
    }
}

/* ---- micro-kernel ---- */

/* Writes an MR x NR block of products into C: C = alpha * acc + beta * C (C not read when beta == 0). */
static inline void lc_store_full(const lc_vf acc[LC_MR][2], float *C, int ldc, float alpha, float beta) {
    for (int r = 0; r < LC_MR; r++) {
        lc_vf_unaligned *c = (lc_vf_unaligned *)(C + (size_t)r * ldc);
        for (int v = 0; v < 2; v++) {
            if (beta == 0) c[v] = alpha * acc[r][v];
            else if (beta == 1) c[v] += alpha * acc[r][v];
            else c[v] = alpha * acc[r][v] + beta * c[v];
        }
    }
}

/* Same for a partial block of rows x cols, through a buffer. */
static void lc_store_partial(const lc_vf acc[LC_MR][2], float *C, int ldc, int rows, int cols, float alpha,
                             float beta) {
    float buf[LC_MR][LC_NR];
    memcpy(buf, acc, sizeof buf);
    for (int r = 0; r < rows; r++) {
        float *c = C + (size_t)r * ldc;
        for (int j = 0; j < cols; j++) c[j] = beta == 0 ? alpha * buf[r][j] : alpha * buf[r][j] + beta * c[j];
    }
}

/* acc = sum over k of (packed A column k) x (packed B row k), then stored into C. */
static void lc_micro_kernel(int kc, const float *restrict a, const float *restrict b, float *C, int ldc, int rows,
                            int cols, float alpha, float beta) {
    lc_vf acc[LC_MR][2];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kc; k++) {
        const lc_vf b0 = *(const lc_vf *)(b + (size_t)k * LC_NR);
        const lc_vf b1 = *(const lc_vf *)(b + (size_t)k * LC_NR + LC_VEC_FLOATS);
        const float *ak = a + (size_t)k * LC_MR;
#pragma GCC unroll 16
        for (int r = 0; r < LC_MR; r++) {
            acc[r][0] += ak[r] * b0;
            acc[r][1] += ak[r] * b1;
        }
    }
    if (rows == LC_MR && cols == LC_NR) lc_store_full(acc, C, ldc, alpha, beta);
    else lc_store_partial(acc, C, ldc, rows, cols, alpha, beta);
}

/* ---- blocked driver ---- */

typedef struct {
    lc_trans ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} lc_gemm_args;

/* One thread's tile: rows [i0, i0+mc) x columns [j0, j0+nt) of the current column block, against the
 * packed A block (a_pack) and the packed B block (b_pack, starting at column jc). */
static void lc_gemm_tile(const lc_gemm_args *g, const float *a_pack, const float *b_pack, int i0, int mc, int jc,
                         int j0, int nt, int kc, float beta) {
    for (int jr = 0; jr < nt; jr += LC_NR) {
        int cols = nt - jr < LC_NR ? nt - jr : LC_NR;
        const float *b_panel = b_pack + (size_t)((j0 - jc + jr) / LC_NR) * LC_NR * kc;
        for (int ir = 0; ir < mc; ir += LC_MR) {
            int rows = mc - ir < LC_MR ? mc - ir : LC_MR;
            float *c = g->C + (size_t)(i0 + ir) * g->ldc + (j0 + jr);
            lc_micro_kernel(kc, a_pack + (size_t)ir * kc, b_panel, c, g->ldc, rows, cols, g->alpha, beta);
        }
    }
}

/* Work of every thread inside the parallel region; a_pack is this thread's private A buffer. */
static void lc_gemm_blocked(const lc_gemm_args *g, float *b_pack, float *a_pack) {
    int m_tiles = (g->M + LC_MC - 1) / LC_MC;
    for (int jc = 0; jc < g->N; jc += LC_NC) {
        int nc = g->N - jc < LC_NC ? g->N - jc : LC_NC;
        int b_panels = (nc + LC_NR - 1) / LC_NR, n_tiles = (nc + LC_NT - 1) / LC_NT;
        for (int pc = 0; pc < g->K; pc += LC_KC) {
            int kc = g->K - pc < LC_KC ? g->K - pc : LC_KC;
            float beta = pc == 0 ? g->beta : 1.0f;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (int p = 0; p < b_panels; p++) {
                int cols = nc - p * LC_NR < LC_NR ? nc - p * LC_NR : LC_NR;
                lc_pack_b_panel(b_pack + (size_t)p * LC_NR * kc, g->tb, g->B, g->ldb, pc, kc, jc + p * LC_NR, cols);
            }
            int packed_tile_row = -1;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (int t = 0; t < m_tiles * n_tiles; t++) {
                int tm = t / n_tiles, tn = t % n_tiles;
                int i0 = tm * LC_MC, mc = g->M - i0 < LC_MC ? g->M - i0 : LC_MC;
                int j0 = jc + tn * LC_NT, nt = jc + nc - j0 < LC_NT ? jc + nc - j0 : LC_NT;
                if (tm != packed_tile_row) lc_pack_a(a_pack, g->ta, g->A, g->lda, i0, mc, pc, kc);
                packed_tile_row = tm;
                lc_gemm_tile(g, a_pack, b_pack, i0, mc, jc, j0, nt, kc, beta);
            }
        }
    }
}

/* C = beta * C for the degenerate cases (K == 0 or alpha == 0); beta == 0 writes zeros. */
static void lc_gemm_scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0.0f : beta * C[(size_t)i * ldc + j];
}

static int lc_gemm_thread_count(const lc_gemm_args *g) {
#ifdef _OPENMP
    double flops = 2.0 * g->M * g->N * g->K;
    int max = omp_get_max_threads();
    int useful = (int)(flops / 2e6) + 1; /* below ~2 MFLOP a second thread costs more than it saves */
    return useful < max ? useful : max;
#else
    (void)g;
    return 1;
#endif
}

void lc_gemm_builtin(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        lc_gemm_scale_c(M, N, beta, C, ldc);
        return;
    }
    lc_gemm_args g = {ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C};
    int threads = lc_gemm_thread_count(&g);
    int nc = N < LC_NC ? N : LC_NC, kc = K < LC_KC ? K : LC_KC;
    size_t b_floats = (size_t)((nc + LC_NR - 1) / LC_NR) * LC_NR * kc;
    size_t a_floats = (size_t)LC_MC * kc;
    float *b_pack = lc_alloc_aligned(b_floats * sizeof(float));
    float *a_packs = lc_alloc_aligned((size_t)threads * a_floats * sizeof(float));
    if (!b_pack || !a_packs) abort(); /* a few MB at most: treat as fatal */
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    lc_gemm_blocked(&g, b_pack, a_packs + (size_t)omp_get_thread_num() * a_floats);
#else
    lc_gemm_blocked(&g, b_pack, a_packs);
#endif
    lc_free(b_pack);
    lc_free(a_packs);
}

/* ---- dispatch ---- */

void lc_gemm(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
             int ldb, float beta, float *C, int ldc) {
#ifdef LC_USE_CBLAS
    if (M <= 0 || N <= 0) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                lda, B, ldb, beta, C, ldc);
#else
    lc_gemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

const char *lc_gemm_backend(void) {
#if defined(LC_USE_OPENBLAS)
    return "openblas";
#elif defined(LC_USE_CBLAS)
    return "cblas";
#else
    return "builtin";
#endif
}
