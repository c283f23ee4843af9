/* bf16 matrix products: lc_gemm_bf16 (A and B rounded to bf16, fp32 sums), its run-time choice of path
 * (CPUID, LC_BF16, lc_gemm_bf16_force_portable), the blocked driver both paths share, the portable packing
 * and kernel, and the bf16 rounding.
 *
 * The driver is lc_gemm_builtin's scheme (gemm.c) on packed bf16 pairs (formats in gemm_bf16.h): C is cut
 * into tasks of several MC-row blocks x NT columns, handed out dynamically; for each KC slice a task packs
 * its block of op(B) once, then for each MC-row block packs op(A) and runs the MR x NR kernel over it.
 * Packing buffers are per thread. Every element of C is summed by one thread over the same KC slices in
 * the same order, so results depend neither on the thread count nor on the schedule. The path supplies
 * the packing (which rounds) and the kernel: gemm_bf16_avx512.c for vdpbf16ps, this file for the rest. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/table.h"
#include "core/thread_buffer.h"
#include "core/timer.h"
#include "kernels/gemm_bf16.h"
#include "kernels/kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if LC_BF16_AVX512
#include <cpuid.h>
#endif

#define MR LC_BF16_MR
#define NR LC_BF16_NR
#define KC LC_BF16_KC
#define KP LC_BF16_KP
#define MC LC_BF16_MC
#define NT LC_BF16_NT

/* ---- rounding ---- */

uint16_t lc_bf16_from_f32(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return lc_bf16_round_bits(b);
}

float lc_bf16_to_f32(uint16_t h) {
    const uint32_t b = (uint32_t)h << 16;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static void lc_bf16_round_portable(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &src[i], sizeof b);
        dst[i] = lc_bf16_round_bits(b);
    }
}

/* the pair word of elements k (lo) and k + 1 (hi) */
static inline uint32_t lc_bf16_pair(float lo, float hi) {
    uint32_t a, b;
    memcpy(&a, &lo, sizeof a);
    memcpy(&b, &hi, sizeof b);
    return (uint32_t)lc_bf16_round_bits(a) | (uint32_t)lc_bf16_round_bits(b) << 16;
}

/* ---- portable packing ---- */

/* One row of the rows layout: kc floats, K contiguous, as (kc + 1) / 2 pair words. */
static void lc_bf16_pack_row_portable(uint32_t *dst, const float *src, int kc, const float *next) {
    (void)next;
    for (int p = 0; p < kc / 2; p++) dst[p] = lc_bf16_pair(src[2 * p], src[2 * p + 1]);
    if (kc & 1) dst[kc / 2] = lc_bf16_pair(src[kc - 1], 0.0f);
}

static void lc_bf16_pack_a_portable(uint32_t *panel, lc_trans ta, const float *A, int lda, int i0, int rows, int k0,
                                    int kc, int ahead) {
    const int kp = (kc + 1) / 2;
    if (!ta) { /* rows layout: word[i * KP + p], K contiguous in A */
        lc_bf16_pack_a_rows(panel, A, lda, i0, rows, k0, kc, ahead, 0, lc_bf16_pack_row_portable);
        return;
    }
    for (int p = 0; p < kp; p++) { /* pairs layout: word[p * MR + i], M contiguous in A */
        const float *lo = A + (size_t)(k0 + 2 * p) * lda + i0, *hi = 2 * p + 1 < kc ? lo + lda : NULL;
        uint32_t *dst = panel + (size_t)p * MR;
        for (int i = 0; i < MR; i++) dst[i] = i < rows ? lc_bf16_pair(lo[i], hi ? hi[i] : 0.0f) : 0;
    }
}

static void lc_bf16_pack_b_portable(uint32_t *panel, lc_trans tb, const float *B, int ldb, int k0, int kc, int j0,
                                    int cols, int ahead) {
    (void)ahead;
    const int kp = (kc + 1) / 2;
    if (tb) { /* column j of op(B) is row j of B, K contiguous */
        for (int j = 0; j < NR; j++) {
            const float *src = j < cols ? B + (size_t)(j0 + j) * ldb + k0 : NULL;
            for (int p = 0; p < kp; p++)
                panel[(size_t)p * NR + j] = src ? lc_bf16_pair(src[2 * p], 2 * p + 1 < kc ? src[2 * p + 1] : 0.0f) : 0;
        }
        return;
    }
    for (int p = 0; p < kp; p++) {
        const float *lo = B + (size_t)(k0 + 2 * p) * ldb + j0, *hi = 2 * p + 1 < kc ? lo + ldb : NULL;
        uint32_t *dst = panel + (size_t)p * NR;
        for (int j = 0; j < NR; j++) dst[j] = j < cols ? lc_bf16_pair(lo[j], hi ? hi[j] : 0.0f) : 0;
    }
}

/* ---- portable kernel: GCC vectors of the target's width (emulated where the hardware lacks them) ---- */

#if defined(__AVX512F__)
#define VF 16
#define RG 6 /* rows per pass: RG x NV accumulators + 2 NV B vectors fit the register file */
#elif defined(__AVX__)
#define VF 8
#define RG 2
#else
#define VF 4
#define RG 1
#endif
#define NV (NR / VF)

typedef float lc_bf16_vf __attribute__((vector_size(VF * 4)));
typedef uint32_t lc_bf16_vu __attribute__((vector_size(VF * 4), aligned(4)));

/* C[rows, cols] = alpha * acc + beta * C as the AVX512_BF16 kernel stores it (fmaf: one rounding). */
static void lc_bf16_store_rows(const float *acc, int acc_ld, float *C, int ldc, int rows, int cols, float alpha,
                               float beta) {
    for (int r = 0; r < rows; r++) {
        float *c = C + (size_t)r * ldc;
        const float *s = acc + (size_t)r * acc_ld;
        if (beta == 0)
            for (int j = 0; j < cols; j++) c[j] = alpha * s[j];
        else if (beta == 1)
            for (int j = 0; j < cols; j++) c[j] = fmaf(alpha, s[j], c[j]);
        else
            for (int j = 0; j < cols; j++) c[j] = fmaf(alpha, s[j], beta * c[j]);
    }
}

/* RG rows from row r0 of the A panel (word of row i, pair p at a[p * sp + i * si]) against the B panel. */
static inline __attribute__((always_inline)) void lc_bf16_rows_portable(int kp, const uint32_t *a, int sp, int si,
                                                                         int r0, const uint32_t *b,
                                                                         float out[RG][NR]) {
    lc_bf16_vf acc[RG][NV];
    memset(acc, 0, sizeof acc);
    for (int p = 0; p < kp; p++) {
        lc_bf16_vf be[NV], bo[NV];
        for (int v = 0; v < NV; v++) {
            const lc_bf16_vu w = *(const lc_bf16_vu *)(b + (size_t)p * NR + v * VF);
            be[v] = (lc_bf16_vf)(w << 16);
            bo[v] = (lc_bf16_vf)(w & 0xffff0000u);
        }
#pragma GCC unroll 8
        for (int r = 0; r < RG; r++) {
            const uint32_t w = a[(size_t)p * sp + (size_t)(r0 + r) * si];
            const uint32_t we = w << 16, wo = w & 0xffff0000u;
            float ae, ao;
            memcpy(&ae, &we, sizeof ae);
            memcpy(&ao, &wo, sizeof ao);
            for (int v = 0; v < NV; v++) { /* odd then even, each rounded: vdpbf16ps's order (exact products) */
                acc[r][v] += ao * bo[v];
                acc[r][v] += ae * be[v];
            }
        }
    }
    memcpy(out, acc, sizeof acc);
}

static void lc_bf16_kernel_portable(int kp, lc_trans ta, const uint32_t *a, const uint32_t *b, float *C, int ldc,
                                    int rows, int cols, float alpha, float beta) {
    float out[RG][NR];
    for (int r0 = 0; r0 < rows; r0 += RG) { /* rows past the edge are zero in the panel */
        if (ta) lc_bf16_rows_portable(kp, a, MR, 1, r0, b, out);
        else lc_bf16_rows_portable(kp, a, 1, KP, r0, b, out);
        lc_bf16_store_rows(&out[0][0], NR, C + (size_t)r0 * ldc, ldc, rows - r0 < RG ? rows - r0 : RG, cols, alpha,
                           beta);
    }
}

static const lc_bf16_ops lc_bf16_portable = {lc_bf16_pack_a_portable, lc_bf16_pack_b_portable,
                                             lc_bf16_kernel_portable, lc_bf16_round_portable};

/* ---- choice of path ---- */

#if LC_BF16_AVX512
/* CPUID leaf 7 subleaf 1 EAX bit 5 (AVX512_BF16), with AVX-512 F and BW (leaf 7 EBX bits 16, 30), and the
 * OS saving the opmask and zmm state (XCR0 bits 1, 2, 5, 6, 7 through XGETBV, OSXSAVE first). */
static int lc_bf16_cpuid(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 27))) return 0; /* OSXSAVE: XGETBV usable */
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xe6u) != 0xe6u) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & (1u << 16)) || !(b & (1u << 30)) || a < 1) return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 5) & 1u;
}
#endif

int lc_cpu_has_avx512_bf16(void) {
#if LC_BF16_AVX512
    static _Atomic int known = -1;
    int has = atomic_load_explicit(&known, memory_order_relaxed);
    if (has < 0) atomic_store_explicit(&known, has = lc_bf16_cpuid() && lc_bf16_avx512_ops(), memory_order_relaxed);
    return has;
#else
    return 0;
#endif
}

/* LC_BF16 as a mode: off, portable, or (auto, on, unset, and anything else after a one-line warning) the
 * best path the CPU has. */
enum { LC_BF16_OFF, LC_BF16_PORTABLE, LC_BF16_BEST };
static int lc_bf16_env_mode(void) {
    const char *env = getenv("LC_BF16");
    if (!env || !*env || !strcmp(env, "auto") || !strcmp(env, "on")) return LC_BF16_BEST;
    if (!strcmp(env, "off")) return LC_BF16_OFF;
    if (!strcmp(env, "portable")) return LC_BF16_PORTABLE;
    static _Atomic int warned;
    if (!atomic_exchange(&warned, 1))
        fprintf(stderr, "longctx: warning: LC_BF16=%s is not off, portable, auto or on; using %s\n", env,
            lc_cpu_has_avx512_bf16() ? "avx512bf16" : "portable");
    return LC_BF16_BEST;
}

int lc_gemm_bf16_choose(void) { return lc_bf16_env_mode() == LC_BF16_BEST && lc_cpu_has_avx512_bf16(); }

static _Atomic int lc_bf16_default = -1; /* lc_gemm_bf16_choose's answer, taken at first use */
static _Atomic int lc_bf16_forced;
static _Atomic int lc_bf16_products = -1; /* lc_bf16_products_active's answer, taken at first use */

void lc_gemm_bf16_force_portable(int force) {
    atomic_store(&lc_bf16_forced, force != 0);
    if (!force) { /* the environment is read again */
        atomic_store(&lc_bf16_default, -1);
        atomic_store(&lc_bf16_products, -1);
    }
}

int lc_bf16_products_active(void) {
    if (atomic_load_explicit(&lc_bf16_forced, memory_order_relaxed)) return 1;
    int on = atomic_load_explicit(&lc_bf16_products, memory_order_relaxed);
    if (on < 0) {
        const int mode = lc_bf16_env_mode();
        on = mode == LC_BF16_PORTABLE || (mode == LC_BF16_BEST && lc_cpu_has_avx512_bf16());
        atomic_store(&lc_bf16_products, on);
    }
    return on;
}

void lc_gemm_at_precision(lc_precision p, lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A,
                          int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (p == LC_PRECISION_BF16 && lc_bf16_products_active())
        lc_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        lc_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static const lc_bf16_ops *lc_bf16_path(void) {
    if (atomic_load_explicit(&lc_bf16_forced, memory_order_relaxed)) return &lc_bf16_portable;
    int vector = atomic_load_explicit(&lc_bf16_default, memory_order_relaxed);
    if (vector < 0) atomic_store(&lc_bf16_default, vector = lc_gemm_bf16_choose());
    return vector ? lc_bf16_avx512_ops() : &lc_bf16_portable;
}

const char *lc_gemm_bf16_backend(void) { return lc_bf16_path() == &lc_bf16_portable ? "portable" : "avx512bf16"; }

const char *lc_precision_path(lc_precision p) {
    if (p != LC_PRECISION_BF16 || !lc_bf16_products_active()) return "fp32";
    return lc_bf16_path() == &lc_bf16_portable ? "bf16/portable" : "bf16/avx512bf16";
}

void lc_bf16_round(uint16_t *dst, const float *src, size_t n) { lc_bf16_path()->round(dst, src, n); }

/* ---- blocked driver ---- */

/* op(B)[k0 : k0+kc, j0 : j0+nt] as NR-wide panels of kp pair rows each. */
static void lc_bf16_pack_b_block(uint32_t *b_pack, const lc_gemm_args *g, const lc_bf16_ops *ops, int k0, int kc,
                                 int j0, int nt) {
    const int kp = (kc + 1) / 2;
    for (int jr = 0; jr < nt; jr += NR) {
        const int cols = nt - jr < NR ? nt - jr : NR;
        ops->pack_b(b_pack + (size_t)jr * kp, g->tb, g->B, g->ldb, k0, kc, j0 + jr, cols, nt - jr - cols);
    }
}

/* op(A)[i0 : i0+mc, k0 : k0+kc] as MR-row panels, MR * KP words apart. */
static void lc_bf16_pack_a_block(uint32_t *a_pack, const lc_gemm_args *g, const lc_bf16_ops *ops, int i0, int mc,
                                 int k0, int kc) {
    for (int ir = 0; ir < mc; ir += MR) {
        const int rows = mc - ir < MR ? mc - ir : MR;
        ops->pack_a(a_pack + (size_t)ir * KP, g->ta, g->A, g->lda, i0 + ir, rows, k0, kc, g->M - i0 - ir - rows);
    }
}

/* One task (rows [i0, i0+m) x columns [j0, j0+nt) of C, all of K) with the thread's packing buffers. */
static void lc_bf16_task(const lc_gemm_args *g, const lc_bf16_ops *ops, uint32_t *a_pack, uint32_t *b_pack, int i0,
                         int m, int j0, int nt) {
    for (int pc = 0; pc < g->K; pc += KC) {
        const int kc = g->K - pc < KC ? g->K - pc : KC, kp = (kc + 1) / 2;
        const float beta = pc == 0 ? g->beta : 1.0f; /* later slices accumulate onto the first */
        lc_bf16_pack_b_block(b_pack, g, ops, pc, kc, j0, nt);
        for (int ib = i0; ib < i0 + m; ib += MC) {
            const int mc = i0 + m - ib < MC ? i0 + m - ib : MC;
            lc_bf16_pack_a_block(a_pack, g, ops, ib, mc, pc, kc);
            for (int jr = 0; jr < nt; jr += NR) /* each B panel stays in L1 while the A panels pass */
                for (int ir = 0; ir < mc; ir += MR)
                    ops->kernel(kp, g->ta, a_pack + (size_t)ir * KP, b_pack + (size_t)jr * kp,
                                g->C + (size_t)(ib + ir) * g->ldc + j0 + jr, g->ldc, mc - ir < MR ? mc - ir : MR,
                                nt - jr < NR ? nt - jr : NR, g->alpha, beta);
        }
    }
}

/* The same task with one A panel and one B panel on the stack (44 KB), for when the buffers cannot be
 * allocated: the same slices and kernel calls, so the same bits; A is packed again for every B panel. */
static void lc_bf16_task_stack(const lc_gemm_args *g, const lc_bf16_ops *ops, int i0, int m, int j0, int nt) {
    _Alignas(64) uint32_t a_panel[(size_t)MR * KP];
    _Alignas(64) uint32_t b_panel[(size_t)NR * KP];
    for (int pc = 0; pc < g->K; pc += KC) {
        const int kc = g->K - pc < KC ? g->K - pc : KC, kp = (kc + 1) / 2;
        const float beta = pc == 0 ? g->beta : 1.0f;
        for (int jr = 0; jr < nt; jr += NR) {
            const int cols = nt - jr < NR ? nt - jr : NR;
            ops->pack_b(b_panel, g->tb, g->B, g->ldb, pc, kc, j0 + jr, cols, 0);
            for (int ir = 0; ir < m; ir += MR) {
                const int rows = m - ir < MR ? m - ir : MR;
                ops->pack_a(a_panel, g->ta, g->A, g->lda, i0 + ir, rows, pc, kc, 0);
                ops->kernel(kp, g->ta, a_panel, b_panel, g->C + (size_t)(i0 + ir) * g->ldc + j0 + jr, g->ldc, rows,
                            cols, g->alpha, beta);
            }
        }
    }
}

/* The task shape: rows, as many MC blocks as possible while leaving about four tasks per thread (one
 * thread: one task per NT columns, so B is packed once), and columns, NT unless that still leaves fewer
 * (a 512 x 512 weight gradient is three row blocks): then narrower, in NR steps (each task packs its own
 * A). Any shape gives the same bits. */
static void lc_bf16_task_shape(int M, int N, int threads, int *rows, int *cols) {
    const int m_blocks = (M + MC - 1) / MC, n_blocks = (N + NT - 1) / NT, want = threads > 1 ? 4 * threads : 1;
    int m_chunks = (want + n_blocks - 1) / n_blocks;
    if (m_chunks > m_blocks) m_chunks = m_blocks;
    *rows = (m_blocks + m_chunks - 1) / m_chunks * MC;
    *cols = NT;
    const int m_tasks = (M + *rows - 1) / *rows;
    if (threads > 1 && m_tasks * n_blocks < want) {
        const int n_tasks = (want + m_tasks - 1) / m_tasks, c = (N + n_tasks - 1) / n_tasks;
        *cols = (c + NR - 1) / NR * NR;
        if (*cols > NT) *cols = NT;
    }
}

#define LC_BF16_A_WORDS ((size_t)MC * KP)
#define LC_BF16_B_WORDS ((size_t)NT * KP)

static _Atomic int lc_bf16_pack_refused;

void lc_gemm_bf16_refuse_pack_buffers(int refuse) { atomic_store(&lc_bf16_pack_refused, refuse != 0); }

/* The calling thread's packing buffers (A block, then B block: 704 KB), kept for the thread's lifetime
 * (core/thread_buffer.h); NULL when they cannot be allocated (retried next time). */
static uint32_t *lc_bf16_thread_buffer(void) {
    if (atomic_load_explicit(&lc_bf16_pack_refused, memory_order_relaxed)) return NULL;
    return lc_thread_buffer(LC_THREAD_BUFFER_GEMM_BF16, (LC_BF16_A_WORDS + LC_BF16_B_WORDS) * sizeof(uint32_t));
}

static void lc_gemm_bf16_run(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) { /* C = beta * C; beta == 0 writes zeros */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    const lc_gemm_args g = {ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C};
    const lc_bf16_ops *ops = lc_bf16_path();
    const int threads = lc_gemm_useful_threads(g.M, g.N, g.K, 4e6); /* twice gemm.c's: twice the rate */
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        uint32_t *a_pack = lc_bf16_thread_buffer(), *b_pack = a_pack ? a_pack + LC_BF16_A_WORDS : NULL;
        int rows, cols;
        lc_bf16_task_shape(M, N, threads, &rows, &cols);
        const int m_tasks = (M + rows - 1) / rows, n_tasks = (N + cols - 1) / cols;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int t = 0; t < m_tasks * n_tasks; t++) {
            const int i0 = t / n_tasks * rows, j0 = t % n_tasks * cols;
            const int m = M - i0 < rows ? M - i0 : rows, nt = N - j0 < cols ? N - j0 : cols;
            if (a_pack) lc_bf16_task(&g, ops, a_pack, b_pack, i0, m, j0, nt);
            else lc_bf16_task_stack(&g, ops, i0, m, j0, nt);
        }
    }
}

void lc_gemm_bf16(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    if (!lc_gemm_profiling()) { /* lc_gemm's benchmark accounting counts these products too */
        lc_gemm_bf16_run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const double t0 = lc_now_seconds();
    lc_gemm_bf16_run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    lc_gemm_profile_add(2.0 * M * N * K, lc_now_seconds() - t0);
}
