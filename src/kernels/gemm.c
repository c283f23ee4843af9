/* Matrix products: lc_gemm (CBLAS dispatch), the built-in blocked kernel lc_gemm_builtin, and the
 * double-precision reference lc_gemm_ref.
 *
 * The built-in kernel follows the BLIS/Goto scheme, arranged so threads never wait for each other
 * (the machine is shared: a barrier per K slice costs a scheduler time slice whenever a core is busy).
 * C is cut into tasks of several MC-row blocks x NT columns, handed out dynamically. For each KC-deep
 * slice of K a task packs its block of op(B) into NR-wide panels once, then for each MC-row block packs
 * op(A) into MR-tall panels and runs the register-tiled micro-kernel (an MR x NR block of C held in
 * vector registers) over it. Packing buffers are private to each thread (A is repacked once per NT
 * columns, about 1/NT of the arithmetic). Every C element is summed by one thread over the same KC
 * slices in the order k = 0..K-1, so results do not depend on the thread count, the task shapes or
 * the schedule. Edge blocks are zero-padded at packing time and written back through a small buffer. */
#include <stdlib.h>
#include <string.h>

#include "core/table.h"
#include "core/thread_buffer.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"

#ifdef LC_USE_CBLAS
#include <cblas.h>
static void lc_gemm_cblas_split(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc);
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
/* Blocking (overridable with -D for tuning experiments). */
#ifndef LC_KC
#define LC_KC 256 /* depth of a packed slice: an NR x KC panel of B stays in L1 */
#endif
#ifndef LC_MC
#define LC_MC (16 * LC_MR) /* rows of a packed A block (L2 resident); a multiple of MR */
#endif
#ifndef LC_NT
#define LC_NT (8 * LC_NR) /* columns of C in one thread's tile; a multiple of NR */
#endif

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

/* ---- packing ----
 * A panel is `width` floats wide (MR for A, NR for B) and kc deep, stored k-major: panel[k * width + w].
 * Depending on the transpose flag the source holds the panel either row by row (a copy) or column by
 * column (a transpose, done in 4 x 4 register blocks). Lanes past `valid` are zero. */

typedef float lc_v4 __attribute__((vector_size(16)));
typedef float lc_v4_unaligned __attribute__((vector_size(16), aligned(4)));
typedef int lc_v4i __attribute__((vector_size(16)));

#ifdef __clang__
#define LC_SHUFFLE2(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define LC_SHUFFLE2(a, b, i, j, k, l) __builtin_shuffle(a, b, (lc_v4i){i, j, k, l})
#endif

/* panel[k * width + w] = src[k * ld + w] for w < valid. */
static inline void lc_pack_copy(float *restrict panel, int width, const float *src, int ld, int valid, int kc) {
    for (int k = 0; k < kc; k++) {
        float *dst = panel + (size_t)k * width;
        const float *row = src + (size_t)k * ld;
        if (valid == width) {
            memcpy(dst, row, (size_t)width * sizeof(float));
        } else {
            for (int w = 0; w < width; w++) dst[w] = w < valid ? row[w] : 0.0f;
        }
    }
}

/* Transposes a 4 x 4 block: dst[c * dst_ld + r] = src[r * src_ld + c]. */
static inline void lc_transpose4(float *dst, int dst_ld, const float *src, int src_ld) {
    lc_v4 r0 = *(const lc_v4_unaligned *)src, r1 = *(const lc_v4_unaligned *)(src + src_ld);
    lc_v4 r2 = *(const lc_v4_unaligned *)(src + 2 * (size_t)src_ld);
    lc_v4 r3 = *(const lc_v4_unaligned *)(src + 3 * (size_t)src_ld);
    lc_v4 t0 = LC_SHUFFLE2(r0, r1, 0, 4, 1, 5), t1 = LC_SHUFFLE2(r0, r1, 2, 6, 3, 7);
    lc_v4 t2 = LC_SHUFFLE2(r2, r3, 0, 4, 1, 5), t3 = LC_SHUFFLE2(r2, r3, 2, 6, 3, 7);
    *(lc_v4_unaligned *)dst = LC_SHUFFLE2(t0, t2, 0, 1, 4, 5);
    *(lc_v4_unaligned *)(dst + dst_ld) = LC_SHUFFLE2(t0, t2, 2, 3, 6, 7);
    *(lc_v4_unaligned *)(dst + 2 * dst_ld) = LC_SHUFFLE2(t1, t3, 0, 1, 4, 5);
    *(lc_v4_unaligned *)(dst + 3 * dst_ld) = LC_SHUFFLE2(t1, t3, 2, 3, 6, 7);
}

/* panel[k * width + w] = src[w * ld + k] for w < valid. */
static inline void lc_pack_transpose(float *restrict panel, int width, const float *src, int ld, int valid, int kc) {
    int w4 = valid & ~3, k4 = kc & ~3;
    for (int w = 0; w < w4; w += 4)
        for (int k = 0; k < k4; k += 4) lc_transpose4(panel + (size_t)k * width + w, width, src + (size_t)w * ld + k, ld);
    for (int k = 0; k < kc; k++) {
        float *dst = panel + (size_t)k * width;
        int w_start = k < k4 ? w4 : 0; /* the blocks covered w < w4 for k < k4 */
        for (int w = w_start; w < width; w++) dst[w] = w < valid ? src[(size_t)w * ld + k] : 0.0f;
    }
}

/* Packs op(A)[i0 : i0+mc, k0 : k0+kc] as consecutive MR-row panels. */
static void lc_pack_a(float *restrict dst, lc_trans ta, const float *A, int lda, int i0, int mc, int k0, int kc) {
    for (int p = 0; p < mc; p += LC_MR) {
        int rows = mc - p < LC_MR ? mc - p : LC_MR;
        float *panel = dst + (size_t)p * kc;
        if (ta) lc_pack_copy(panel, LC_MR, A + (size_t)k0 * lda + i0 + p, lda, rows, kc);
        else lc_pack_transpose(panel, LC_MR, A + (size_t)(i0 + p) * lda + k0, lda, rows, kc);
    }
}

/* Packs one NR-column panel op(B)[k0 : k0+kc, j0 : j0+cols]. */
static void lc_pack_b_panel(float *restrict panel, lc_trans tb, const float *B, int ldb, int k0, int kc, int j0,
                            int cols) {
    if (tb) lc_pack_transpose(panel, LC_NR, B + (size_t)j0 * ldb + k0, ldb, cols, kc);
    else lc_pack_copy(panel, LC_NR, B + (size_t)k0 * ldb + j0, ldb, cols, kc);
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
    for (int r = 0; r < rows; r++) { /* C is touched only at the end: fetch it while computing */
        __builtin_prefetch(C + (size_t)r * ldc, 1);
        __builtin_prefetch(C + (size_t)r * ldc + cols - 1, 1);
    }
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

/* Packs op(B)[k0 : k0+kc, j0 : j0+nt] as NR-wide panels. */
static void lc_pack_b(float *b_pack, const lc_gemm_args *g, int k0, int kc, int j0, int nt) {
    for (int jr = 0; jr < nt; jr += LC_NR) {
        int cols = nt - jr < LC_NR ? nt - jr : LC_NR;
        lc_pack_b_panel(b_pack + (size_t)jr * kc, g->tb, g->B, g->ldb, k0, kc, j0 + jr, cols);
    }
}

/* One MC x NT block of C against packed A (mc x kc) and packed B (kc x nt): each NR panel of B stays in
 * L1 while the MR panels of A stream past it. */
static void lc_gemm_block(const lc_gemm_args *g, const float *a_pack, const float *b_pack, int i0, int mc, int j0,
                          int nt, int kc, float beta) {
    for (int jr = 0; jr < nt; jr += LC_NR) {
        int cols = nt - jr < LC_NR ? nt - jr : LC_NR;
        for (int ir = 0; ir < mc; ir += LC_MR) {
            int rows = mc - ir < LC_MR ? mc - ir : LC_MR;
            float *c = g->C + (size_t)(i0 + ir) * g->ldc + (j0 + jr);
            lc_micro_kernel(kc, a_pack + (size_t)ir * kc, b_pack + (size_t)jr * kc, c, g->ldc, rows, cols, g->alpha,
                            beta);
        }
    }
}

/* One task: rows [i0, i0+m) x columns [j0, j0+nt) of C, over all of K, by the calling thread with its
 * private packing buffers. For each KC slice the B block is packed once and reused by every MC block of
 * the task's rows. Tasks are independent, so threads never wait for each other inside a product. */
static void lc_gemm_task(const lc_gemm_args *g, float *a_pack, float *b_pack, int i0, int m, int j0, int nt) {
    for (int pc = 0; pc < g->K; pc += LC_KC) {
        int kc = g->K - pc < LC_KC ? g->K - pc : LC_KC;
        float beta = pc == 0 ? g->beta : 1.0f; /* later slices accumulate onto the first */
        lc_pack_b(b_pack, g, pc, kc, j0, nt);
        for (int ib = i0; ib < i0 + m; ib += LC_MC) {
            int mc = i0 + m - ib < LC_MC ? i0 + m - ib : LC_MC;
            lc_pack_a(a_pack, g->ta, g->A, g->lda, ib, mc, pc, kc);
            lc_gemm_block(g, a_pack, b_pack, ib, mc, j0, nt, kc, beta);
        }
    }
}

/* The same task without the thread's packing buffers, for when they cannot be allocated: one MR-row
 * panel of A and one NR-column panel of B at a time, in buffers on the stack (about 45 KB with AVX-512).
 * The MR x NR blocks, the KC slices and the micro-kernel are lc_gemm_task's, so every element is summed
 * and stored exactly as there and the results are bit-identical; only A is packed again for every NR
 * panel. */
static void lc_gemm_task_stack(const lc_gemm_args *g, int i0, int m, int j0, int nt) {
    _Alignas(64) float a_panel[(size_t)LC_MR * LC_KC];
    _Alignas(64) float b_panel[(size_t)LC_NR * LC_KC];
    for (int pc = 0; pc < g->K; pc += LC_KC) {
        int kc = g->K - pc < LC_KC ? g->K - pc : LC_KC;
        float beta = pc == 0 ? g->beta : 1.0f;
        for (int jr = 0; jr < nt; jr += LC_NR) {
            int cols = nt - jr < LC_NR ? nt - jr : LC_NR;
            lc_pack_b_panel(b_panel, g->tb, g->B, g->ldb, pc, kc, j0 + jr, cols);
            for (int ir = 0; ir < m; ir += LC_MR) {
                int rows = m - ir < LC_MR ? m - ir : LC_MR;
                lc_pack_a(a_panel, g->ta, g->A, g->lda, i0 + ir, rows, pc, kc);
                float *c = g->C + (size_t)(i0 + ir) * g->ldc + (j0 + jr);
                lc_micro_kernel(kc, a_panel, b_panel, c, g->ldc, rows, cols, g->alpha, beta);
            }
        }
    }
}

/* C[i, n] = alpha * A[i, :] . B[n, :] + beta * C[i, n] for one or two rows: packing the weights would
 * cost as much as the product (generation feeds one byte at a time). Parallel over n, each element
 * summed in one fixed order (eight partial sums, so the compiler vectorizes it). */
static void lc_gemv_rows(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                         float beta, float *C, int ldc) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((long)N * K > 65536 && !omp_in_parallel())
#endif
    for (int n = 0; n < N; n++) {
        const float *b = B + (size_t)n * ldb;
        for (int i = 0; i < M; i++) {
            const float *a = A + (size_t)i * lda;
            float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int k = 0;
            for (; k + 8 <= K; k += 8)
                for (int j = 0; j < 8; j++) part[j] += a[k + j] * b[k + j];
            float dotv = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
            for (; k < K; k++) dotv += a[k] * b[k];
            float *c = C + (size_t)i * ldc + n;
            *c = alpha * dotv + (beta == 0.0f ? 0.0f : beta * *c);
        }
    }
}

/* Rows per task: as many MC blocks as possible while leaving about four tasks per thread. */
static int lc_gemm_task_rows(int M, int N, int threads) {
    int m_blocks = (M + LC_MC - 1) / LC_MC, n_blocks = (N + LC_NT - 1) / LC_NT;
    int m_chunks = (4 * threads + n_blocks - 1) / n_blocks;
    if (m_chunks > m_blocks) m_chunks = m_blocks;
    return (m_blocks + m_chunks - 1) / m_chunks * LC_MC;
}

/* Work of every thread inside the parallel region: tasks handed out dynamically (the values do not
 * depend on which thread computes a task, nor on the task shapes: every element is summed over the same
 * KC slices in the same order). */
static void lc_gemm_tasks(const lc_gemm_args *g, float *a_pack, float *b_pack, int threads) { /* NULL: stack */
    int rows = lc_gemm_task_rows(g->M, g->N, threads);
    int m_tasks = (g->M + rows - 1) / rows, n_tasks = (g->N + LC_NT - 1) / LC_NT;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (int t = 0; t < m_tasks * n_tasks; t++) {
        int i0 = t / n_tasks * rows, j0 = t % n_tasks * LC_NT;
        int m = g->M - i0 < rows ? g->M - i0 : rows, nt = g->N - j0 < LC_NT ? g->N - j0 : LC_NT;
        if (a_pack) lc_gemm_task(g, a_pack, b_pack, i0, m, j0, nt);
        else lc_gemm_task_stack(g, i0, m, j0, nt);
    }
}

/* C = beta * C for the degenerate cases (K == 0 or alpha == 0); beta == 0 writes zeros. */
static void lc_gemm_scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0.0f : beta * C[(size_t)i * ldc + j];
}

#define LC_A_PACK_FLOATS ((size_t)LC_MC * LC_KC)
#define LC_B_PACK_FLOATS ((size_t)LC_NT * LC_KC)

static int lc_gemm_pack_refused; /* lc_gemm_refuse_pack_buffers */

void lc_gemm_refuse_pack_buffers(int refuse) { lc_gemm_pack_refused = refuse; }

/* The calling thread's packing buffers (A block then B block), kept for the thread's lifetime
 * (core/thread_buffer.h): products are called often, and a fresh allocation per call costs page faults.
 * NULL when they cannot be allocated (under 1 MB, so it is retried next time): the caller then takes
 * lc_gemm_task_stack, which gives the same results without them. A library never aborts. */
static float *lc_thread_pack_buffer(void) {
    if (lc_gemm_pack_refused) return NULL;
    return lc_thread_buffer(LC_THREAD_BUFFER_GEMM, (LC_A_PACK_FLOATS + LC_B_PACK_FLOATS) * sizeof(float));
}

int lc_gemm_useful_threads(int M, int N, int K, double flops_per_thread) {
#ifdef _OPENMP
    const double flops = 2.0 * M * N * K;
    const int max = omp_get_max_threads(), useful = (int)(flops / flops_per_thread) + 1;
    return useful < max ? useful : max;
#else
    (void)M, (void)N, (void)K, (void)flops_per_thread;
    return 1;
#endif
}

void lc_gemm_builtin(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 2 && ta == LC_NO_TRANS && tb == LC_TRANS && M > 0 && N > 0) { /* a row or two times W^T */
        lc_gemv_rows(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        lc_gemm_scale_c(M, N, beta, C, ldc);
        return;
    }
    lc_gemm_args g = {ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C};
    int threads = lc_gemm_useful_threads(g.M, g.N, g.K, 2e6); /* below ~2 MFLOP a second thread costs more than it saves */
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        float *a_pack = lc_thread_pack_buffer();
        lc_gemm_tasks(&g, a_pack, a_pack ? a_pack + LC_A_PACK_FLOATS : NULL, threads);
    }
}

/* ---- dispatch ---- */

static void lc_gemm_dispatch(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
             int ldb, float beta, float *C, int ldc) {
#ifdef LC_USE_CBLAS
    if (M <= 0 || N <= 0) return;
    lc_gemm_cblas_split(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    lc_gemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

#ifdef LC_USE_CBLAS
static void lc_cblas(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                lda, B, ldb, beta, C, ldc);
}

/* One thread pool for the whole program: the BLAS library runs single-threaded (lc_threads_blas_serial) and
 * lc_gemm cuts C into blocks of rows (or of columns, when C is wide) that the OpenMP threads take in
 * turn, each block one serial BLAS call. A BLAS with its own busy-waiting threads next to OpenMP's
 * halved the training speed on 2 cores.
 *
 * The cut depends on M, N and K only, never on the thread count or on whether the call is made inside
 * a parallel region: a BLAS may sum an element of C in an order that depends on the shape of the call
 * (OpenBLAS's Haswell and Zen kernels do: a product split in two halves differed in the last bit from
 * the whole), so every run makes exactly the same calls and gets exactly the same bits. */
#ifndef LC_CBLAS_MIN_WORK
#define LC_CBLAS_MIN_WORK 1048576.0 /* multiply-adds per block: smaller products are one call */
#endif
#ifndef LC_CBLAS_MAX_BLOCKS
#define LC_CBLAS_MAX_BLOCKS 16
#endif
#ifndef LC_CBLAS_ROW_QUANTUM
#define LC_CBLAS_ROW_QUANTUM 64 /* block edges on multiples of this many rows (or columns): each block
                                   * repacks op(B), about 1/64 of its arithmetic at this height */
#endif

/* The number of blocks a product is cut into, and the rows (or columns) of each but the last. */
static int lc_cblas_blocks(int M, int N, int K, int *per_block) {
    const int total = M >= N ? M : N;
    double work = (double)M * N * K;
    int blocks = work < 2 * LC_CBLAS_MIN_WORK ? 1 : (int)(work / LC_CBLAS_MIN_WORK);
    if (blocks > LC_CBLAS_MAX_BLOCKS) blocks = LC_CBLAS_MAX_BLOCKS;
    if (blocks > total / LC_CBLAS_ROW_QUANTUM) blocks = total / LC_CBLAS_ROW_QUANTUM;
    if (blocks < 1) blocks = 1;
    int per = (total + blocks - 1) / blocks;
    per = (per + LC_CBLAS_ROW_QUANTUM - 1) / LC_CBLAS_ROW_QUANTUM * LC_CBLAS_ROW_QUANTUM;
    *per_block = per;
    return (total + per - 1) / per;
}

static void lc_gemm_cblas_split(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc) {
    int per = 0;
    const int blocks = lc_cblas_blocks(M, N, K, &per), by_rows = M >= N, total = by_rows ? M : N;
    lc_threads_blas_serial();
    int threads = lc_threads_current(); /* the calling thread's: its model's count (lc_threads_use) */
#ifdef _OPENMP
    if (omp_in_parallel()) threads = 1;
#endif
    if (threads > blocks) threads = blocks;
    (void)threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
#endif
    for (int i = 0; i < blocks; i++) {
        const int lo = i * per, hi = lo + per < total ? lo + per : total;
        if (by_rows)
            lc_cblas(ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + (size_t)lo * lda, lda, B, ldb, beta,
                     C + (size_t)lo * ldc, ldc);
        else
            lc_cblas(ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + (size_t)lo * ldb : B + lo, ldb, beta, C + lo, ldc);
    }
}
#endif

/* The calling thread's accounting: a benchmark counts the products of its own thread, and two threads
 * (two models) never add to one total. */
static _Thread_local int lc_profile_on;
static _Thread_local double lc_profile_flops, lc_profile_seconds;

void lc_gemm_profile(int enable) {
    lc_profile_on = enable;
    lc_profile_flops = lc_profile_seconds = 0;
}

int lc_gemm_profiling(void) { return lc_profile_on; }

void lc_gemm_profile_add(double flops, double seconds) {
    lc_profile_flops += flops;
    lc_profile_seconds += seconds;
}

void lc_gemm_profile_totals(double *flops, double *seconds) {
    *flops = lc_profile_flops;
    *seconds = lc_profile_seconds;
}

void lc_gemm(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
             int ldb, float beta, float *C, int ldc) {
    if (!lc_profile_on) {
        lc_gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    double t0 = lc_now_seconds();
    lc_gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    lc_profile_seconds += lc_now_seconds() - t0;
    lc_profile_flops += 2.0 * M * N * K;
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
