/* `longctx bench gemm`: fp32 against bf16 matrix products at the shapes of a model's linear layers, side by
 * side in one run. For one layer (rows = batch x length token rows, width dim, feed-forward ffn) the
 * twelve products of a training step: the query/key/value projection (dim -> 3 dim), the output
 * projection (dim -> dim), and the feed-forward's two layers (dim -> ffn, ffn -> dim), each as forward
 * (x W^T, NT), input gradient (dy W, NN) and weight gradient (dy^T x, TN), as src/kernels/linear.c calls
 * them. fp32 is lc_gemm (OpenBLAS when built with it), bf16 is lc_gemm_bf16 on the path it takes
 * (--portable adds its portable path). Runs of the precisions alternate, so a busy machine slows them
 * alike; medians of --reps runs.
 *
 * Peak: register-resident loops with 24 independent accumulators, fp32 FMA (vfmadd231ps zmm) and bf16
 * dot products (vdpbf16ps zmm) on every thread. Each product's runs alternate with runs of both loops
 * (about 15 ms each), and "x/pk" divides a product's median by the median of its own loop runs, so a
 * machine whose load changes during the benchmark still gives a fraction measured under one load. Once
 * per thread count a dependent chain of integer additions (one per cycle) gives the clock the loops run
 * at, so the peaks are also printed per cycle (Zen 4: one 512-bit FMA per cycle = 32 flop, one 512-bit
 * vdpbf16ps = 16 lanes x 2 products x 2 flop = 64 flop). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/cpu.h"
#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"

#ifdef LC_USE_OPENBLAS
char *openblas_get_corename(void);
#endif

#define BG_MAX_THREADS 16
#define BG_MAX_REPS 101

/* ---- peaks ---- */

#if defined(__x86_64__) && (__GNUC__ >= 10 || (defined(__clang__) && __clang_major__ >= 9))
#include <immintrin.h>
#define BG_HAVE_PEAK 1
#define BG_ACC 24

/* A peak loop `name` for the ISA `isa`: BG_ACC independent accumulators, each updated as acc = op(acc)
 * (after `setup`) every iteration, `flop` flop per lane; returns the flop done, their sum in *sink. */
#define BG_PEAK_LOOP(name, isa, flop, setup, op)                                                              \
    __attribute__((target(isa))) static double name(long iters, float *sink) {                                 \
        __m512 acc[BG_ACC];                                                                                   \
        for (int i = 0; i < BG_ACC; i++) acc[i] = _mm512_set1_ps((float)i * 1e-3f);                           \
        setup;                                                                                                \
        for (long it = 0; it < iters; it++) {                                                                 \
            _Pragma("GCC unroll 24") for (int i = 0; i < BG_ACC; i++) acc[i] = op;                            \
        }                                                                                                     \
        float total = 0;                                                                                      \
        for (int i = 0; i < BG_ACC; i++) total += _mm512_reduce_add_ps(acc[i]);                               \
        *sink = total;                                                                                        \
        return (flop) * 16 * BG_ACC * (double)iters;                                                          \
    }

BG_PEAK_LOOP(loop_fp32, "avx512f,fma", 2.0, const __m512 mul = _mm512_set1_ps(0.999999f);
             const __m512 add = _mm512_set1_ps(1e-6f), _mm512_fmadd_ps(acc[i], mul, add))
/* a = 1, b = 0.5 in bf16 */
BG_PEAK_LOOP(loop_bf16, "avx512f,avx512bf16", 4.0, const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);
             const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f00), _mm512_dpbf16_ps(acc[i], a, b))

/* a chain of dependent additions: one per cycle; returns the additions done */
static double loop_clock(long iters, float *sink) {
    long x = 0;
    __asm__ volatile("1:\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tdec %1\n\tjnz 1b"
                     : "+r"(x), "+r"(iters));
    *sink = (float)x;
    return (double)x;
}
#endif

typedef struct {
    double fp32, bf16, ghz; /* GFLOP/s of the loops (0: not run), clock in GHz */
} peaks;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#ifdef BG_HAVE_PEAK
/* Operations per second of `threads` threads each running `loop`. */
static double run_loop(double (*loop)(long, float *), long iters, int threads) {
    float sinks[BG_MAX_THREADS * 16] = {0};
    double ops = 0, t0 = lc_now_seconds();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : ops)
#endif
    ops += loop(iters, &sinks[16 * (lc_thread_id() % BG_MAX_THREADS)]);
    (void)threads;
    const double rate = ops / (lc_now_seconds() - t0);
    if (sinks[0] == 12345.0f) printf("#\n"); /* keeps the results live */
    return rate;
}
#endif

static peaks measure_peaks(int threads) {
    peaks p = {0, 0, 0};
#ifdef BG_HAVE_PEAK
    double f[5], b[5], c[5];
    const int has512 = lc_cpu_has_avx512(), has_bf16 = lc_cpu_has_avx512_bf16();
    for (int r = 0; r < 5; r++) { /* alternating, so a busy machine slows all three alike */
        c[r] = run_loop(loop_clock, 25000000, threads) / threads; /* each loop about 100 M cycles */
        f[r] = has512 ? run_loop(loop_fp32, 4000000, threads) : 0;
        b[r] = has_bf16 ? run_loop(loop_bf16, 4000000, threads) : 0;
    }
    p.ghz = median(c, 5) * 1e-9, p.fp32 = median(f, 5) * 1e-9, p.bf16 = median(b, 5) * 1e-9;
#else
    (void)threads;
#endif
    return p;
}

/* ---- products ---- */

typedef struct {
    const char *name;
    lc_trans ta, tb;
    int M, N, K;
} product;

/* The twelve products of one layer's training step (linear.c: forward NT, dinp NN, dW TN). */
static int layer_products(int rows, int dim, int ffn, product *out) {
    const struct {
        const char *name;
        int in, out;
    } lin[4] = {{"qkv", dim, 3 * dim}, {"attn out", dim, dim}, {"ffn up", dim, ffn}, {"ffn down", ffn, dim}};
    int n = 0;
    for (int l = 0; l < 4; l++) {
        out[n++] = (product){lin[l].name, LC_NO_TRANS, LC_TRANS, rows, lin[l].out, lin[l].in};
        out[n++] = (product){lin[l].name, LC_NO_TRANS, LC_NO_TRANS, rows, lin[l].in, lin[l].out};
        out[n++] = (product){lin[l].name, LC_TRANS, LC_NO_TRANS, lin[l].out, lin[l].in, rows};
    }
    return n;
}

static const char *op_name(const product *p) {
    return !p->ta && p->tb ? "fwd" : !p->ta ? "dinp" : "dW";
}

/* the variants that alternate: the products, then the peak loops (their median is GFLOP/s, not seconds) */
enum { V_FP32, V_BF16, V_PORTABLE, V_PEAK_FP32, V_PEAK_BF16, V_COUNT };

static double run_variant(int v, const product *p, const float *A, const float *B, float *C, int threads) {
    const int lda = p->ta ? p->M : p->K, ldb = p->tb ? p->K : p->N;
#ifdef BG_HAVE_PEAK
    if (v == V_PEAK_FP32) return run_loop(loop_fp32, 600000, threads) * 1e-9;
    if (v == V_PEAK_BF16) return run_loop(loop_bf16, 600000, threads) * 1e-9;
#else
    (void)threads;
    if (v >= V_PEAK_FP32) return 0;
#endif
    const double t0 = lc_now_seconds();
    if (v == V_FP32) {
        lc_gemm(p->ta, p->tb, p->M, p->N, p->K, 1.0f, A, lda, B, ldb, 0.0f, C, p->N);
    } else {
        lc_gemm_bf16_force_portable(v == V_PORTABLE);
        lc_gemm_bf16(p->ta, p->tb, p->M, p->N, p->K, 1.0f, A, lda, B, ldb, 0.0f, C, p->N);
        lc_gemm_bf16_force_portable(0);
    }
    return lc_now_seconds() - t0;
}

/* The median of each variant (seconds of a product, GFLOP/s of a loop; 0 when not run), the variants
 * alternating run by run. */
static int time_product(const product *p, int reps, const int *run, int threads, double *med) {
    const size_t a_n = (size_t)p->M * p->K, b_n = (size_t)p->K * p->N, c_n = (size_t)p->M * p->N;
    float *A = lc_alloc_aligned(a_n * sizeof(float)), *B = lc_alloc_aligned(b_n * sizeof(float));
    float *C = lc_alloc_aligned(c_n * sizeof(float));
    if (!A || !B || !C) {
        lc_free(A), lc_free(B), lc_free(C);
        return -1;
    }
    lc_rng rng;
    lc_rng_seed(&rng, 11);
    for (size_t i = 0; i < a_n; i++) A[i] = lc_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < b_n; i++) B[i] = lc_rng_uniform(&rng) - 0.5f;
    double t[V_COUNT][BG_MAX_REPS];
    for (int v = 0; v < V_PEAK_FP32; v++)
        if (run[v]) run_variant(v, p, A, B, C, threads); /* warm-up: packing buffers, pages */
    for (int r = 0; r < reps; r++)
        for (int v = 0; v < V_COUNT; v++)
            if (run[v]) t[v][r] = run_variant(v, p, A, B, C, threads);
    for (int v = 0; v < V_COUNT; v++) med[v] = run[v] ? median(t[v], reps) : 0;
    lc_free(A), lc_free(B), lc_free(C);
    return 0;
}

/* "1,2" into counts; the number of counts, or -1. */
static int parse_counts(const char *s, int *out, int max) {
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > BG_MAX_THREADS || (*end && *end != ',') || n == max) return -1;
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

static const char *fraction(double gflops, double peak, char *buf) {
    if (peak > 0) snprintf(buf, 16, "%.2f", gflops / peak);
    else snprintf(buf, 16, "-");
    return buf;
}

/* One row: sec holds the products' median seconds and the loops' median GFLOP/s (the row's peaks). */
static void print_row(int json, int threads, const product *p, const char *name, const char *op, double flops,
                      const double *sec, const int *run) {
    double g[V_PEAK_FP32];
    for (int v = 0; v < V_PEAK_FP32; v++) g[v] = run[v] ? flops / sec[v] * 1e-9 : 0;
    const peaks row = {sec[V_PEAK_FP32], sec[V_PEAK_BF16], 0}, *pk = &row;
    if (json) {
        printf("{\"bench\":\"gemm\",\"threads\":%d,\"product\":\"%s\",\"op\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,"
               "\"flops\":%.0f,\"fp32_ms\":%.3f,\"bf16_ms\":%.3f,\"fp32_gflops\":%.2f,\"bf16_gflops\":%.2f,"
               "\"bf16_over_fp32\":%.3f,\"fp32_peak_gflops\":%s,\"bf16_peak_gflops\":%s,\"fp32_fraction_of_peak\":%s,"
               "\"bf16_fraction_of_peak\":%s",
               threads, name, op, p ? p->M : 0, p ? p->N : 0, p ? p->K : 0, flops, sec[V_FP32] * 1e3,
               sec[V_BF16] * 1e3, g[V_FP32], g[V_BF16], g[V_BF16] / g[V_FP32], lc_json_number(pk->fp32 > 0 ? pk->fp32 : NAN),
               lc_json_number(pk->bf16 > 0 ? pk->bf16 : NAN), lc_json_number(pk->fp32 > 0 ? g[V_FP32] / pk->fp32 : NAN),
               lc_json_number(pk->bf16 > 0 ? g[V_BF16] / pk->bf16 : NAN));
        if (run[V_PORTABLE]) printf(",\"bf16_portable_gflops\":%.2f", g[V_PORTABLE]);
        printf("}\n");
    } else {
        char f1[16], f2[16];
        char shape[48] = "";
        if (p) snprintf(shape, sizeof shape, "%c%c %5d %5d %5d", p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', p->M, p->N, p->K);
        printf("%7d  %-8s %-4s %-20s %9.1f %9.1f %9.2fx %8s %8s", threads, name, op, shape, g[V_FP32], g[V_BF16],
               g[V_BF16] / g[V_FP32], fraction(g[V_FP32], pk->fp32, f1), fraction(g[V_BF16], pk->bf16, f2));
        if (run[V_PORTABLE]) printf(" %9.1f", g[V_PORTABLE]);
        printf("\n");
    }
    fflush(stdout);
}

int lc_cmd_bench_gemm(int argc, char **argv) {
    const char *thread_list = "1,2";
    int rows = 2048, dim = 512, ffn = 2048, reps = 7, portable = 0, json = 0;
    lc_opt opts[] = {
        {"--threads", OPT_STR, &thread_list, 0, 0, "thread counts, comma separated (default 1,2)", 0},
        {"--rows", OPT_INT, &rows, 1, 1 << 20, "token rows of a step, batch x length (default 2048 = 8 x 256)", 0},
        {"--dim", OPT_INT, &dim, 1, 1 << 16, "model width (default 512)", 0},
        {"--ffn", OPT_INT, &ffn, 1, 1 << 18, "feed-forward width (default 2048)", 0},
        {"--reps", OPT_INT, &reps, 1, BG_MAX_REPS, "timed runs of each product and precision (median; default 7)", 0},
        {"--portable", OPT_FLAG, &portable, 0, 0, "also time lc_gemm_bf16's portable path (as LC_BF16=off)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "one JSON line per measurement instead of the table", 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("bench gemm", "[options]", opts, n_opts, argc, argv);
    if (rc >= 0) return rc;
    int counts[BG_MAX_THREADS];
    const int n_counts = parse_counts(thread_list, counts, BG_MAX_THREADS);
    if (n_counts < 1) {
        lc_cli_error("bench gemm: --threads must be a comma-separated list of counts from 1 to %d, got '%s'",
                     BG_MAX_THREADS, thread_list);
        return LC_EXIT_USAGE;
    }
    product prods[12];
    const int n_prods = layer_products(rows, dim, ffn, prods);
    int run[V_COUNT] = {1, 1, portable, 0, 0};
#ifdef BG_HAVE_PEAK
    run[V_PEAK_FP32] = lc_cpu_has_avx512(), run[V_PEAK_BF16] = lc_cpu_has_avx512_bf16();
#endif
    const char *core = "none", *coretype = getenv("OPENBLAS_CORETYPE");
#ifdef LC_USE_OPENBLAS
    core = openblas_get_corename();
#endif
    if (json)
        printf("{\"bench\":\"gemm_config\",\"rows\":%d,\"dim\":%d,\"ffn\":%d,\"reps\":%d,\"fp32_backend\":\"%s\","
               "\"openblas_core\":\"%s\",\"openblas_coretype_env\":\"%s\",\"bf16_backend\":\"%s\"}\n",
               rows, dim, ffn, reps, lc_gemm_backend(), core, coretype ? coretype : "", lc_gemm_bf16_backend());
    else
        printf("bench gemm: one layer's training-step products | rows %d (batch x length), dim %d, ffn %d | fp32: lc_gemm "
               "(%s, core %s%s%s) | bf16: lc_gemm_bf16 (%s) | GFLOP/s, medians of %d alternating runs\n",
               rows, dim, ffn, lc_gemm_backend(), core, coretype ? ", OPENBLAS_CORETYPE=" : "", coretype ? coretype : "",
               lc_gemm_bf16_backend(), reps);
    for (int c = 0; c < n_counts; c++) {
        lc_threads_use(counts[c]);
        const int threads = lc_threads_current(); /* 1 without OpenMP */
        const peaks pk = measure_peaks(threads);
        if (json) {
            printf("{\"bench\":\"gemm_peak\",\"threads\":%d,\"fp32_fma_gflops\":%s,\"bf16_dp_gflops\":%s,\"clock_ghz\":%s,"
                   "\"fp32_flop_per_cycle_per_thread\":%s,\"bf16_flop_per_cycle_per_thread\":%s}\n",
                   threads, lc_json_number(pk.fp32 > 0 ? pk.fp32 : NAN), lc_json_number(pk.bf16 > 0 ? pk.bf16 : NAN),
                   lc_json_number(pk.ghz > 0 ? pk.ghz : NAN),
                   lc_json_number(pk.ghz > 0 && pk.fp32 > 0 ? pk.fp32 / pk.ghz / threads : NAN),
                   lc_json_number(pk.ghz > 0 && pk.bf16 > 0 ? pk.bf16 / pk.ghz / threads : NAN));
        } else {
            if (pk.ghz > 0)
                printf("peak at %d thread%s (register loops): fp32 FMA %.1f GFLOP/s (%.1f flop/cycle/thread), bf16 "
                       "vdpbf16ps %.1f GFLOP/s (%.1f flop/cycle/thread); clock as run %.2f GHz; x/pk: GFLOP/s over "
                       "the loop's\n",
                       threads, threads > 1 ? "s" : "", pk.fp32, pk.fp32 / pk.ghz / threads, pk.bf16,
                       pk.bf16 / pk.ghz / threads, pk.ghz);
            else printf("peak at %d thread%s: not measured on this CPU\n", threads, threads > 1 ? "s" : "");
            printf("%7s  %-8s %-4s %-20s %9s %9s %10s %8s %8s%s\n", "threads", "layer", "op", "   M     N     K",
                   "fp32", "bf16", "bf16/fp32", "fp32/pk", "bf16/pk", portable ? "  portable" : "");
        }
        double total[V_COUNT] = {0}, flops_total = 0, row_peaks[2][12];
        for (int i = 0; i < n_prods; i++) {
            double med[V_COUNT];
            if (time_product(&prods[i], reps, run, threads, med))
                return lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory"));
            const double flops = 2.0 * prods[i].M * prods[i].N * prods[i].K;
            for (int v = 0; v < V_PEAK_FP32; v++) total[v] += med[v];
            row_peaks[0][i] = med[V_PEAK_FP32], row_peaks[1][i] = med[V_PEAK_BF16];
            flops_total += flops;
            print_row(json, threads, &prods[i], prods[i].name, op_name(&prods[i]), flops, med, run);
        }
        total[V_PEAK_FP32] = median(row_peaks[0], n_prods), total[V_PEAK_BF16] = median(row_peaks[1], n_prods);
        print_row(json, threads, NULL, "layer", "all", flops_total, total, run); /* peaks: the rows' median */
    }
    lc_threads_use(0);
    return LC_EXIT_OK;
}
