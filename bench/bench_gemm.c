/* GEMM benchmark: measures this machine's fp32 peak with a register-resident FMA loop (one thread and
 * all threads), then lc_gemm (CBLAS when built with it) and lc_gemm_builtin side by side at shapes of a
 * small transformer training step. Medians of repeated runs; one JSON object per line.
 * usage: bench_gemm [--threads N] [--full]   (--full: every M=4096 x N,K in {128..1024} pair) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#ifdef LC_USE_OPENBLAS
char *openblas_get_corename(void);
#endif

#define PEAK_ACCUMULATORS 12 /* independent FMA chains: above latency x ports (4 x 2), within 16 registers */

/* ---- peak: one thread's FMA loop; returns the flops it performed ---- */

#ifdef __AVX512F__
static double peak_fma_loop(long iters, float *sink) {
    __m512 acc[PEAK_ACCUMULATORS];
    for (int i = 0; i < PEAK_ACCUMULATORS; i++) acc[i] = _mm512_set1_ps((float)i * 1e-3f);
    const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < PEAK_ACCUMULATORS; i++) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    }
    float total = 0;
    for (int i = 0; i < PEAK_ACCUMULATORS; i++) total += _mm512_reduce_add_ps(acc[i]);
    *sink = total;
    return 2.0 * 16 * PEAK_ACCUMULATORS * (double)iters;
}
#else
/* Portable fallback: the target's vector width; a * b + c contracts to FMA where the target has it. */
#ifdef __AVX__
#define BENCH_VEC_FLOATS 8
#else
#define BENCH_VEC_FLOATS 4
#endif
typedef float bench_vf __attribute__((vector_size(BENCH_VEC_FLOATS * 4)));
static double peak_fma_loop(long iters, float *sink) {
    bench_vf acc[PEAK_ACCUMULATORS];
    for (int i = 0; i < PEAK_ACCUMULATORS; i++) acc[i] = (bench_vf){0} + (float)i * 1e-3f;
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < PEAK_ACCUMULATORS; i++) acc[i] = acc[i] * 0.999999f + 1e-6f;
    }
    float total = 0;
    for (int i = 0; i < PEAK_ACCUMULATORS; i++)
        for (int j = 0; j < BENCH_VEC_FLOATS; j++) total += acc[i][j];
    *sink = total;
    return 2.0 * BENCH_VEC_FLOATS * PEAK_ACCUMULATORS * (double)iters;
}
#endif

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* GFLOP/s of `threads` threads each running the FMA loop; median of 5 runs. */
static double measure_peak(int threads) {
    double runs[5];
    float sinks[64] = {0};
    for (int r = 0; r < 5; r++) {
        double flops = 0, t0 = lc_now_seconds();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : flops)
#endif
        flops += peak_fma_loop(20000000, &sinks[lc_thread_id() % 64]);
        runs[r] = flops / (lc_now_seconds() - t0) * 1e-9;
    }
    if (sinks[0] == 12345.0f) printf("#\n"); /* keeps the loop results live */
    return median(runs, 5);
}

/* ---- gemm ---- */

typedef void (*gemm_fn)(lc_trans, lc_trans, int, int, int, float, const float *, int, const float *, int, float,
                        float *, int);

typedef struct {
    lc_trans ta, tb;
    int M, N, K;
} shape;

static float *random_matrix(size_t n, uint64_t seed) {
    float *x = lc_alloc_aligned(n * sizeof(float));
    if (!x) exit(1);
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) x[i] = lc_rng_uniform(&rng) - 0.5f;
    return x;
}

/* Median seconds of one product: repeats until 0.25 s or 15 runs (at least 3). */
static double time_gemm(gemm_fn f, shape s, const float *A, const float *B, float *C) {
    int lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    f(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A, lda, B, ldb, 0.0f, C, s.N); /* warm-up */
    double runs[15], spent = 0;
    int n = 0;
    while (n < 15 && (n < 3 || spent < 0.25)) {
        double t0 = lc_now_seconds();
        f(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A, lda, B, ldb, 0.0f, C, s.N);
        runs[n] = lc_now_seconds() - t0;
        spent += runs[n++];
    }
    return median(runs, n);
}

static void bench_shape(shape s, int threads, double peak) {
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    float *A = random_matrix(a_n, 1), *B = random_matrix(b_n, 2), *C = random_matrix(c_n, 3);
    const char *names[2] = {lc_gemm_backend(), "builtin"};
    gemm_fn fns[2] = {lc_gemm, lc_gemm_builtin};
    int variants = strcmp(names[0], "builtin") ? 2 : 1;
    for (int v = 0; v < variants; v++) {
        double sec = time_gemm(fns[v], s, A, B, C);
        double gflops = 2.0 * s.M * s.N * s.K / sec * 1e-9;
        printf("{\"what\":\"gemm\",\"backend\":\"%s\",\"op\":\"%c%c\",\"M\":%d,\"N\":%d,\"K\":%d,\"threads\":%d,"
               "\"ms\":%.3f,\"gflops\":%.1f,\"fraction_of_peak\":%.3f}\n",
               names[v], s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, threads, sec * 1e3, gflops,
               gflops / peak);
        fflush(stdout);
    }
    lc_free(A);
    lc_free(B);
    lc_free(C);
}

static int parse_args(int argc, char **argv, int *threads, int *full) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) *threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--full")) *full = 1;
        else return fprintf(stderr, "usage: %s [--threads N] [--full]\n", argv[0]), 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    int threads = 0, full = 0;
    if (parse_args(argc, argv, &threads, &full)) return 2;
    lc_threads_use(threads);
    threads = lc_threads_current(); /* 1 without OpenMP */
    const char *core = "none";
#ifdef LC_USE_OPENBLAS
    core = openblas_get_corename();
#endif
    printf("{\"what\":\"config\",\"gemm_backend\":\"%s\",\"openblas_core\":\"%s\",\"threads\":%d}\n",
           lc_gemm_backend(), core, threads);
    double peak = measure_peak(1);
    printf("{\"what\":\"peak_fma\",\"threads\":1,\"gflops\":%.1f}\n", peak);
    if (threads > 1) {
        peak = measure_peak(threads);
        printf("{\"what\":\"peak_fma\",\"threads\":%d,\"gflops\":%.1f}\n", threads, peak);
    }
    shape square = {LC_NO_TRANS, LC_NO_TRANS, 512, 512, 512};
    bench_shape(square, threads, peak);
    int dims[4] = {128, 256, 512, 1024};
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            if (!full && i != j) continue;
            shape fwd = {LC_NO_TRANS, LC_TRANS, 4096, dims[j], dims[i]}; /* x W^T: K = in, N = out */
            bench_shape(fwd, threads, peak);
        }
    }
    /* the three products of one linear layer (in = out = 512): forward, dinp, dW */
    shape backward_dinp = {LC_NO_TRANS, LC_NO_TRANS, 4096, 512, 512};
    shape backward_dw = {LC_TRANS, LC_NO_TRANS, 512, 512, 4096};
    bench_shape(backward_dinp, threads, peak);
    bench_shape(backward_dw, threads, peak);
    return 0;
}
