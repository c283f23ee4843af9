/* Tests of the bf16 matrix product lc_gemm_bf16 and the bf16 rounding, on each code path this CPU has
 * (avx512bf16 where CPUID says so, and always the portable one, forced with lc_gemm_bf16_force_portable):
 * the rounding on ties, NaN, infinities, subnormals and overflow, scalar against vcvtne2ps2bf16; products
 * against a double reference on the rounded inputs (1e-5 of the sum of |products|) and against the fp32
 * product (2^-8 of it) for all four transposes, odd sizes, K odd and 1, alpha and beta, padded leading
 * dimensions, empty shapes; the two paths bit for bit; the same bits for every thread count, from inside a
 * parallel region and without packing buffers; NaN and infinity propagation; LC_BF16 and the backend. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "gemm_kit.h"
#include "harness.h"
#include "kernels/kernels.h"

static int has_vector; /* the avx512bf16 path runs here */

static float bits_float(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static uint32_t float_bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The paths to test: 0 = the default (avx512bf16 where it runs), 1 = portable. */
static int path_count(void) { return has_vector ? 2 : 1; }

static const char *use_path(int p) {
    lc_gemm_bf16_force_portable(p == 1 || !has_vector);
    return lc_gemm_bf16_backend();
}

/* ---- rounding ---- */

TEST(bf16_rounding_special_values) {
    static const uint32_t cases[][2] = {
        {0x3f800000, 0x3f80}, /* 1 */
        {0x3f808000, 0x3f80}, /* 1 + 2^-8: a tie, to the even 1 */
        {0x3f818000, 0x3f82}, /* a tie, to the even neighbour above */
        {0x3f808001, 0x3f81}, /* just past a tie: up */
        {0x3f807fff, 0x3f80}, /* just below: down */
        {0xbf808000, 0xbf80}, /* negative tie */
        {0xbf818000, 0xbf82},
        {0x3f7fffff, 0x3f80}, /* rounds up into the next binade */
        {0x7f7fffff, 0x7f80}, /* FLT_MAX: past the largest bf16, to +inf */
        {0xff7fffff, 0xff80},
        {0x7f7f7fff, 0x7f7f}, /* the largest bf16 stays */
        {0x7f800000, 0x7f80}, /* +inf */
        {0xff800000, 0xff80}, /* -inf */
        {0x7fc00000, 0x7fc0}, /* quiet NaN */
        {0xffc00001, 0xffc0},
        {0x7f800001, 0x7fc0}, /* signalling NaN with its payload in the dropped half: still NaN, quiet */
        {0xff800001, 0xffc0},
        {0x7f810000, 0x7fc1}, /* payload kept where it fits */
        {0x7fbfffff, 0x7fff}, /* never rounded into the next exponent */
        {0x00000000, 0x0000},
        {0x80000000, 0x8000},
        {0x00000001, 0x0000}, /* subnormals: a zero of their sign */
        {0x807fffff, 0x8000},
        {0x00400000, 0x0000},
        {0x00800000, 0x0080}, /* smallest normal */
        {0x00ffffff, 0x0100},
        {0x80808000, 0x8080}, /* tie at the smallest binade */
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        const uint16_t got = lc_bf16_from_f32(bits_float(cases[i][0]));
        CHECK(got == cases[i][1], "%08x -> %04x, want %04x", (unsigned)cases[i][0], got, (unsigned)cases[i][1]);
    }
    /* every bf16 value: widening is exact, and rounding it back gives it again (subnormals flush, NaN quiets) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const float x = lc_bf16_to_f32((uint16_t)h);
        CHECK(float_bits(x) == h << 16, "to_f32 %04x", (unsigned)h);
        uint16_t want = (uint16_t)h;
        if ((h & 0x7f80) == 0) want = (uint16_t)(h & 0x8000);
        else if ((h & 0x7fff) > 0x7f80) want = (uint16_t)(h | 0x40);
        bad += lc_bf16_from_f32(x) != want;
    }
    CHECK(bad == 0, "%d bf16 values do not round back to themselves", bad);
    /* every tie between two finite bf16 neighbours goes to the even one (half of them up) */
    int up = 0;
    for (uint32_t m = 0; m < 65536; m++) {
        const uint32_t b = m << 16 | 0x8000u;
        if ((b & 0x7f800000u) == 0 || (b & 0x7f800000u) == 0x7f800000u) continue;
        const uint16_t r = lc_bf16_from_f32(bits_float(b));
        CHECK(!(r & 1), "tie %08x rounded to odd %04x", (unsigned)b, r);
        up += r != (uint16_t)(b >> 16);
    }
    printf("  ties rounded up: %d (to the even neighbour)\n", up);
}

/* lc_bf16_round on each path (vcvtne2ps2bf16 on avx512bf16) against the scalar rule: the special values, a
 * million random bit patterns, and every length up to 70 (the 32-wide tail masks). */
TEST(bf16_rounding_paths_agree) {
    enum { N = 1 << 20 };
    float *x = alloc_floats(N);
    uint16_t *got = lc_alloc_aligned(N * sizeof *got);
    static const uint32_t specials[] = {0x3f808000, 0x3f818000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
                                        0x7fc00000, 0x7f800001, 0xff800001, 0x7f810000, 0x00000001, 0x807fffff,
                                        0x00800000, 0x00ffffff, 0x80000000, 0x00000000, 0x7fbfffff, 0x80808000};
    const int ns = (int)(sizeof specials / sizeof specials[0]);
    for (int i = 0; i < N; i++) x[i] = i < ns ? bits_float(specials[i]) : bits_float((uint32_t)(lc_rng_next(&rng) >> 32));
    if (!has_vector) printf("  note: avx512bf16 path skipped (this CPU or build lacks AVX512_BF16)\n");
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        lc_bf16_round(got, x, N);
        int bad = 0, first = -1;
        for (int i = 0; i < N; i++)
            if (got[i] != lc_bf16_from_f32(x[i])) bad++, first = first < 0 ? i : first;
        CHECK(bad == 0, "%s: %d of %d differ from the scalar rounding (first %08x -> %04x)", name, bad, N,
              first < 0 ? 0u : (unsigned)float_bits(x[first]), first < 0 ? 0u : (unsigned)got[first]);
        for (int n = 0; n <= 70; n++) { /* tails: nothing written past n */
            uint16_t buf[80];
            for (int i = 0; i < 80; i++) buf[i] = 0xdead;
            lc_bf16_round(buf, x + 5, (size_t)n);
            for (int i = 0; i < 80; i++)
                if (buf[i] != (i < n ? lc_bf16_from_f32(x[5 + i]) : 0xdead)) bad++;
        }
        CHECK(bad == 0, "%s: lengths 0..70 wrong or wrote past the end", name);
        printf("  %s: %d values agree with the scalar rounding\n", name, N);
    }
    lc_gemm_bf16_force_portable(0);
    lc_free(x), lc_free(got);
}

/* ---- products against references ---- */

static double round_d(float x) { return (double)lc_bf16_to_f32(lc_bf16_from_f32(x)); }

/* Fills a rows x cols matrix (leading dimension ld) with random values; padding holds a sentinel. */
static void fill_matrix(float *x, int rows, int cols, int ld) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld; c++) x[(size_t)r * ld + c] = c < cols ? nonzero_uniform() : 777.0f;
}

/* Worst errors of one product, as shares of two tolerances: against the double product of the rounded
 * inputs, 1e-5 S (fp32 summation), and against the double product of the unrounded ones, 2^-7 S + 4e-5 S
 * (each input is off by up to 2^-8 of itself, a product by up to 2^-7), where S = |alpha| sum_k |a_ik b_kj|
 * + |beta c_ij| for each element. Ar, Br: op(A) as [M][K] and op(B) as [N][K] in double, Ax, Bx unrounded. */
typedef struct {
    double vs_rounded, vs_exact;
    int touched;
} errors;

static void check_product(dims d, scalars sc, const double *Ar, const double *Br, const double *Ax, const double *Bx,
                          const float *C0, const float *C, int ldc, errors *e) {
    for (int i = 0; i < d.M; i++)
        for (int j = 0; j < ldc; j++) {
            const size_t at = (size_t)i * ldc + j;
            if (j >= d.N) {
                e->touched += C[at] != 777.0f;
                continue;
            }
            const double *ar = Ar + (size_t)i * d.K, *br = Br + (size_t)j * d.K;
            const double *ax = Ax + (size_t)i * d.K, *bx = Bx + (size_t)j * d.K;
            double sum_r = 0, sum_x = 0, abs_r = 0, abs_x = 0;
            for (int k = 0; k < d.K; k++) {
                sum_r += ar[k] * br[k], abs_r += fabs(ar[k] * br[k]);
                sum_x += ax[k] * bx[k], abs_x += fabs(ax[k] * bx[k]);
            }
            const double c0 = sc.beta == 0 ? 0.0 : (double)sc.beta * C0[at];
            const double want_r = sc.alpha * sum_r + c0, want_x = sc.alpha * sum_x + c0;
            const double S_r = fabs(sc.alpha) * abs_r + fabs(c0) + 1e-30, S_x = fabs(sc.alpha) * abs_x + fabs(c0) + 1e-30;
            const double r1 = fabs(C[at] - want_r) / (1e-5 * S_r), r2 = fabs(C[at] - want_x) / ((1.0 / 128 + 4e-5) * S_x);
            if (!(r1 <= e->vs_rounded)) e->vs_rounded = r1; /* a NaN sticks */
            if (!(r2 <= e->vs_exact)) e->vs_exact = r2;
        }
}

/* op(X) of a matrix (rows x cols at leading dimension ld, transposed when t) as [rows'][K] doubles, rounded
 * to bf16 or not. */
static double *as_rows(const float *X, int ld, lc_trans t, int n, int K, int rounded) {
    double *out = lc_alloc_aligned((size_t)n * K * sizeof(double) + 8);
    if (!out) abort();
    for (int i = 0; i < n; i++)
        for (int k = 0; k < K; k++) {
            const float v = t ? X[(size_t)k * ld + i] : X[(size_t)i * ld + k];
            out[(size_t)i * K + k] = rounded ? round_d(v) : (double)v;
        }
    return out;
}

/* All four transposes and the three alpha/beta cases of each shape, on the current path; the leading
 * dimensions are wider than the matrices and the padding must stay untouched. */
static void check_shapes(const char *path, const dims *shapes, int count) {
    for (int s = 0; s < count; s++) {
        const dims d = shapes[s];
        for (int t = 0; t < 4; t++) {
            const lc_trans ta = (lc_trans)(t >> 1), tb = (lc_trans)(t & 1);
            const int a_rows = ta ? d.K : d.M, a_cols = ta ? d.M : d.K, b_rows = tb ? d.N : d.K, b_cols = tb ? d.K : d.N;
            const int lda = a_cols + 3, ldb = b_cols + 1, ldc = d.N + 2;
            float *A = alloc_floats((size_t)a_rows * lda + 1), *B = alloc_floats((size_t)b_rows * ldb + 1);
            float *C0 = alloc_floats((size_t)d.M * ldc + 1), *C = alloc_floats((size_t)d.M * ldc + 1);
            fill_matrix(A, a_rows, a_cols, lda);
            fill_matrix(B, b_rows, b_cols, ldb);
            /* op(A) rows are A's rows unless ta; op(B) columns are B's rows when tb */
            double *Ar = as_rows(A, lda, ta, d.M, d.K, 1), *Ax = as_rows(A, lda, ta, d.M, d.K, 0);
            double *Br = as_rows(B, ldb, !tb, d.N, d.K, 1), *Bx = as_rows(B, ldb, !tb, d.N, d.K, 0);
            errors e = {0, 0, 0};
            for (int c = 0; c < 3; c++) {
                const scalars sc = scalar_cases[c];
                fill_matrix(C0, d.M, d.N, ldc);
                memcpy(C, C0, (size_t)d.M * ldc * sizeof(float));
                if (sc.beta == 0)
                    for (int i = 0; i < d.M; i++)
                        for (int j = 0; j < d.N; j++) C[(size_t)i * ldc + j] = NAN; /* must not be read */
                lc_gemm_bf16(ta, tb, d.M, d.N, d.K, sc.alpha, A, lda, B, ldb, sc.beta, C, ldc);
                check_product(d, sc, Ar, Br, Ax, Bx, C0, C, ldc, &e);
            }
            const int ok = e.vs_rounded <= 1 && e.vs_exact <= 1 && e.touched == 0;
            printf("  %-10s %c%c %4dx%4dx%4d: %5.1f%% of 1e-5 S vs rounded inputs, %5.1f%% of 2^-7 S vs fp32 inputs%s\n",
                   path, ta ? 'T' : 'N', tb ? 'T' : 'N', d.M, d.N, d.K, 100 * e.vs_rounded, 100 * e.vs_exact,
                   ok ? "" : "  <-- FAIL");
            CHECK(ok, "%s %c%c %dx%dx%d: errors %.3g %.3g of tolerance, %d padding cells written", path,
                  ta ? 'T' : 'N', tb ? 'T' : 'N', d.M, d.N, d.K, e.vs_rounded, e.vs_exact, e.touched);
            lc_free(A), lc_free(B), lc_free(C0), lc_free(C), lc_free(Ar), lc_free(Ax), lc_free(Br), lc_free(Bx);
        }
    }
}

/* odd sizes (K odd, K = 1, edges of every tile) and sizes across the blocking (MC 192, NT 512, KC 512) */
static const dims odd_shapes[] = {{1, 1, 1}, {7, 13, 5}, {13, 37, 1}, {12, 32, 2}, {65, 33, 129},
                                  {1, 300, 70}, {2, 129, 133}, {25, 31, 3}};
static const dims block_shapes[] = {{205, 290, 520}, {37, 600, 1031}, {400, 40, 513}};

TEST(gemm_bf16_matches_references) {
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        check_shapes(name, odd_shapes, (int)(sizeof odd_shapes / sizeof odd_shapes[0]));
        check_shapes(name, block_shapes, (int)(sizeof block_shapes / sizeof block_shapes[0]));
    }
    if (!has_vector) printf("  note: avx512bf16 path skipped (this CPU or build lacks AVX512_BF16)\n");
    lc_gemm_bf16_force_portable(0);
}

/* Against the fp32 product lc_gemm of the same (unrounded) inputs at a training-like shape (the products of
 * x W^T, dout W and dout^T x; K >= 170): within 2^-8 of the sum of |products| (the worst case is 2^-7, one
 * product whose two inputs both lose 2^-8; over K terms the independent roundings average out), and
 * 2^-11 on average. */
TEST(gemm_bf16_against_fp32_product) {
    const int n = 300, in = 200, out = 170;
    float *x = alloc_floats((size_t)n * in), *w = alloc_floats((size_t)out * in), *dy = alloc_floats((size_t)n * out);
    for (size_t i = 0; i < (size_t)n * in; i++) x[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)out * in; i++) w[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)n * out; i++) dy[i] = nonzero_uniform();
    struct {
        lc_trans ta, tb;
        int M, N, K, lda, ldb;
        const float *A, *B;
        const char *what;
    } prods[3] = {{LC_NO_TRANS, LC_TRANS, n, out, in, in, in, x, w, "y = x W^T"},
                  {LC_NO_TRANS, LC_NO_TRANS, n, in, out, out, in, dy, w, "dx = dy W"},
                  {LC_TRANS, LC_NO_TRANS, out, in, n, out, in, dy, x, "dW = dy^T x"}};
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        for (int q = 0; q < 3; q++) {
            const int M = prods[q].M, N = prods[q].N, K = prods[q].K;
            float *c32 = alloc_floats((size_t)M * N), *c16 = alloc_floats((size_t)M * N);
            lc_gemm(prods[q].ta, prods[q].tb, M, N, K, 1.0f, prods[q].A, prods[q].lda, prods[q].B, prods[q].ldb, 0.0f,
                    c32, N);
            lc_gemm_bf16(prods[q].ta, prods[q].tb, M, N, K, 1.0f, prods[q].A, prods[q].lda, prods[q].B, prods[q].ldb,
                         0.0f, c16, N);
            double worst = 0, mean = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double S = 0;
                    for (int k = 0; k < K; k++) {
                        const float a = prods[q].ta ? prods[q].A[(size_t)k * prods[q].lda + i]
                                                    : prods[q].A[(size_t)i * prods[q].lda + k];
                        const float b = prods[q].tb ? prods[q].B[(size_t)j * prods[q].ldb + k]
                                                    : prods[q].B[(size_t)k * prods[q].ldb + j];
                        S += fabs((double)a * b);
                    }
                    const double r = fabs((double)c16[(size_t)i * N + j] - c32[(size_t)i * N + j]) / S;
                    if (!(r <= worst)) worst = r;
                    mean += r / ((double)M * N);
                }
            printf("  %-10s %-12s %dx%dx%d: |bf16 - fp32| / sum|products|: worst %.2g (2^-8 = %.2g), mean %.2g "
                   "(2^-11 = %.2g)\n", name, prods[q].what, M, N, K, worst, 1.0 / 256, mean, 1.0 / 2048);
            CHECK(worst <= 1.0 / 256, "%s %s: worst %.3g", name, prods[q].what, worst);
            CHECK(mean <= 1.0 / 2048 && mean > 1e-6, "%s %s: mean %.3g", name, prods[q].what, mean);
            lc_free(c32), lc_free(c16);
        }
    }
    lc_gemm_bf16_force_portable(0);
    lc_free(x), lc_free(w), lc_free(dy);
}

/* K = 1 with inputs on rounding ties and subnormals: every element is one exact product of the rounded
 * inputs, so the result must equal it bit for bit on every path. */
TEST(gemm_bf16_k1_exact_on_ties_and_subnormals) {
    enum { M = 29, N = 45 };
    float A[M], B[N], C[M * N];
    for (int i = 0; i < M; i++) {
        const uint32_t b = float_bits(nonzero_uniform());
        A[i] = bits_float(i % 3 == 0 ? (b & 0xffff0000u) | 0x8000u : i % 3 == 1 ? (b & 0x807fffffu) : b);
    }
    for (int j = 0; j < N; j++) B[j] = bits_float((float_bits(nonzero_uniform()) & 0xffff0000u) | 0x8000u);
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        for (int t = 0; t < 4; t++) { /* with K = 1 the transposes read the same arrays */
            const lc_trans ta = (lc_trans)(t >> 1), tb = (lc_trans)(t & 1);
            lc_gemm_bf16(ta, tb, M, N, 1, 1.0f, A, ta ? M : 1, B, tb ? 1 : N, 0.0f, C, N);
            int bad = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) bad += C[i * N + j] != (float)(round_d(A[i]) * round_d(B[j]));
            CHECK(bad == 0, "%s %c%c: %d of %d products differ", name, ta ? 'T' : 'N', tb ? 'T' : 'N', bad, M * N);
        }
    }
    lc_gemm_bf16_force_portable(0);
}

/* Degenerate shapes: M or N = 0 touch nothing; K = 0 or alpha = 0 give beta * C (beta = 0 writes zeros
 * over NaN) without reading A or B. */
TEST(gemm_bf16_empty_shapes) {
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {NAN, 1, 1, 1, 1, 1}, C[6] = {1, 2, 3, 4, 5, 6};
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, 0, 3, 2, 1.0f, A, 2, B, 3, 0.0f, C, 3);
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, 2, 0, 2, 1.0f, A, 2, B, 3, 0.0f, C, 3);
        for (int i = 0; i < 6; i++) CHECK(C[i] == (float)(i + 1), "%s: M or N = 0 wrote C[%d] = %g", name, i, C[i]);
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, 2, 3, 0, 1.0f, A, 1, B, 3, 2.0f, C, 3);
        for (int i = 0; i < 6; i++) CHECK(C[i] == 2.0f * (float)(i + 1), "%s: K = 0: C[%d] = %g", name, i, C[i]);
        float Z[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, 2, 3, 0, 1.0f, A, 1, B, 3, 0.0f, Z, 3);
        for (int i = 0; i < 6; i++) CHECK(Z[i] == 0.0f, "%s: K = 0, beta 0: Z[%d] = %g", name, i, Z[i]);
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, 2, 3, 2, 0.0f, A, 2, B, 3, 0.5f, C, 3); /* B's NaN unread */
        for (int i = 0; i < 6; i++) CHECK(C[i] == (float)(i + 1), "%s: alpha 0: C[%d] = %g", name, i, C[i]);
    }
    lc_gemm_bf16_force_portable(0);
}

/* NaN and infinity in the inputs reach exactly the elements they feed. */
TEST(gemm_bf16_nan_and_inf_propagate) {
    enum { M = 20, N = 40, K = 33 };
    float *A = alloc_floats(M * K), *B = alloc_floats(K * N), *C = alloc_floats(M * N);
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        for (int i = 0; i < M * K; i++) A[i] = 0.25f + 0.5f * lc_rng_uniform(&rng); /* positive */
        for (int i = 0; i < K * N; i++) B[i] = 0.25f + 0.5f * lc_rng_uniform(&rng);
        A[3 * K + 7] = NAN;       /* row 3 of C */
        B[12 * N + 5] = INFINITY; /* column 5 of C (+inf: every a is positive) */
        lc_gemm_bf16(LC_NO_TRANS, LC_NO_TRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        int bad = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                const float c = C[i * N + j];
                if (i == 3) bad += !isnan(c);
                else if (j == 5) bad += !(isinf(c) && c > 0);
                else bad += !isfinite(c);
            }
        CHECK(bad == 0, "%s: %d elements with the wrong class", name, bad);
    }
    lc_gemm_bf16_force_portable(0);
    lc_free(A), lc_free(B), lc_free(C);
}

/* ---- the two paths, threads, buffers ---- */

static void random_product(lc_trans ta, lc_trans tb, dims d, float **A, float **B, float **C) {
    *A = alloc_floats((size_t)d.M * d.K), *B = alloc_floats((size_t)d.K * d.N), *C = alloc_floats((size_t)d.M * d.N);
    for (size_t i = 0; i < (size_t)d.M * d.K; i++) (*A)[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)d.K * d.N; i++) (*B)[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)d.M * d.N; i++) (*C)[i] = nonzero_uniform();
    (void)ta, (void)tb;
}

/* Case i of shapes: shape i / 4 with transposes i % 4 (A's in bit 1, B's in bit 0), random A, B and C0, and the
 * leading dimensions of A and B that the transposes give. */
typedef struct {
    dims d;
    lc_trans ta, tb;
    int lda, ldb;
    float *A, *B, *C0;
} product_case;

static product_case random_case(const dims *shapes, int i) {
    product_case p = {shapes[i / 4], (lc_trans)((i % 4) >> 1), (lc_trans)(i & 1), 0, 0, NULL, NULL, NULL};
    p.lda = p.ta ? p.d.M : p.d.K, p.ldb = p.tb ? p.d.K : p.d.N;
    random_product(p.ta, p.tb, p.d, &p.A, &p.B, &p.C0);
    return p;
}

/* Both paths sum in vdpbf16ps's order (odd product, then even, each rounded): on a CPU that follows that
 * definition they agree bit for bit (values here are never subnormal, where vdpbf16ps flushes). */
TEST(gemm_bf16_paths_bit_identical) {
    if (!has_vector) {
        printf("  note: skipped: one path on this CPU (portable)\n");
        return;
    }
    const dims shapes[] = {{300, 270, 600}, {13, 37, 5}, {97, 33, 513}, {205, 530, 1025}};
    const scalars ab[] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.25f, 0.75f}};
    int differing = 0, runs = 0;
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]) * 4; i++) {
        const product_case p = random_case(shapes, i);
        const dims d = p.d;
        float *C1 = alloc_floats((size_t)d.M * d.N), *C2 = alloc_floats((size_t)d.M * d.N);
        for (int c = 0; c < 3; c++) {
            memcpy(C1, p.C0, (size_t)d.M * d.N * sizeof(float));
            memcpy(C2, p.C0, (size_t)d.M * d.N * sizeof(float));
            use_path(0);
            lc_gemm_bf16(p.ta, p.tb, d.M, d.N, d.K, ab[c].alpha, p.A, p.lda, p.B, p.ldb, ab[c].beta, C1, d.N);
            use_path(1);
            lc_gemm_bf16(p.ta, p.tb, d.M, d.N, d.K, ab[c].alpha, p.A, p.lda, p.B, p.ldb, ab[c].beta, C2, d.N);
            const int same = memcmp(C1, C2, (size_t)d.M * d.N * sizeof(float)) == 0;
            differing += !same, runs++;
            CHECK(same, "%dx%dx%d %c%c case %d: avx512bf16 and portable differ", d.M, d.N, d.K, p.ta ? 'T' : 'N',
                  p.tb ? 'T' : 'N', c);
        }
        lc_free(p.A), lc_free(p.B), lc_free(p.C0), lc_free(C1), lc_free(C2);
    }
    printf("  %d of %d products bit-identical across the two paths\n", runs - differing, runs);
    lc_gemm_bf16_force_portable(0);
}

/* Every element is summed by one thread in a fixed order: the same bits for 1 to 4 threads, and for
 * products started from inside a parallel region (one thread each, private packing buffers). */
TEST(gemm_bf16_thread_count_independent) {
    const dims shapes[] = {{300, 270, 600}, {1024, 64, 64}, {40, 1000, 96}, {513, 129, 257}};
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const dims d = shapes[si];
            float *A, *B, *C0;
            random_product(LC_NO_TRANS, LC_TRANS, d, &A, &B, &C0);
            float *want = alloc_floats((size_t)d.M * d.N), *C = alloc_floats((size_t)d.M * d.N);
            memcpy(want, C0, (size_t)d.M * d.N * sizeof(float));
            lc_threads_use(1);
            lc_gemm_bf16(LC_NO_TRANS, LC_TRANS, d.M, d.N, d.K, 0.5f, A, d.K, B, d.K, 1.0f, want, d.N);
            for (int threads = 2; threads <= 4; threads++) {
                memcpy(C, C0, (size_t)d.M * d.N * sizeof(float));
                lc_threads_use(threads);
                lc_gemm_bf16(LC_NO_TRANS, LC_TRANS, d.M, d.N, d.K, 0.5f, A, d.K, B, d.K, 1.0f, C, d.N);
                CHECK(memcmp(want, C, (size_t)d.M * d.N * sizeof(float)) == 0, "%s %dx%dx%d: %d threads differ from 1",
                      name, d.M, d.N, d.K, threads);
            }
            lc_free(A), lc_free(B), lc_free(C0), lc_free(want), lc_free(C);
        }
        /* four products at once from a parallel loop */
        lc_threads_use(2);
        CHECK(concurrent_products_agree(lc_gemm_bf16, LC_TRANS), "%s: concurrent products differ", name);
    }
    lc_threads_use(0);
    lc_gemm_bf16_force_portable(0);
}

/* Without packing buffers (allocation refused) the stack panels give the same bits. */
TEST(gemm_bf16_without_pack_buffers) {
    const dims shapes[] = {{300, 270, 600}, {13, 37, 5}, {3, 200, 70}, {97, 33, 513}};
    for (int p = 0; p < path_count(); p++) {
        const char *name = use_path(p);
        for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]) * 4; i++) {
            const product_case c = random_case(shapes, i);
            const dims d = c.d;
            float *C1 = alloc_floats((size_t)d.M * d.N);
            memcpy(C1, c.C0, (size_t)d.M * d.N * sizeof(float));
            lc_gemm_bf16(c.ta, c.tb, d.M, d.N, d.K, 0.75f, c.A, c.lda, c.B, c.ldb, 1.5f, c.C0, d.N);
            lc_gemm_bf16_refuse_pack_buffers(1);
            lc_gemm_bf16(c.ta, c.tb, d.M, d.N, d.K, 0.75f, c.A, c.lda, c.B, c.ldb, 1.5f, C1, d.N);
            lc_gemm_bf16_refuse_pack_buffers(0);
            CHECK(memcmp(c.C0, C1, (size_t)d.M * d.N * sizeof(float)) == 0, "%s %dx%dx%d %c%c: stack panels differ",
                  name, d.M, d.N, d.K, c.ta ? 'T' : 'N', c.tb ? 'T' : 'N');
            lc_free(c.A), lc_free(c.B), lc_free(c.C0), lc_free(C1);
        }
    }
    lc_gemm_bf16_force_portable(0);
}

/* ---- the choice of path ---- */

TEST(gemm_bf16_backend_choice) {
    const char *saved = getenv("LC_BF16");
    char keep[32] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    const int best = lc_cpu_has_avx512_bf16();
    printf("  CPU: avx512bf16 %s; LC_BF16=%s; default path %s\n", best ? "yes" : "no", saved ? saved : "(unset)",
           lc_gemm_bf16_backend());
    if (!saved || !strcmp(saved, "auto") || !strcmp(saved, "on"))
        CHECK(!strcmp(lc_gemm_bf16_backend(), best ? "avx512bf16" : "portable"), "default %s", lc_gemm_bf16_backend());
    else if (!strcmp(saved, "off") || !strcmp(saved, "portable"))
        CHECK(!strcmp(lc_gemm_bf16_backend(), "portable"), "LC_BF16=%s but %s", saved, lc_gemm_bf16_backend());
    setenv("LC_BF16", "off", 1);
    CHECK(lc_gemm_bf16_choose() == 0, "LC_BF16=off");
    lc_gemm_bf16_force_portable(0); /* takes the environment again */
    CHECK(!strcmp(lc_gemm_bf16_backend(), "portable"), "LC_BF16=off: %s", lc_gemm_bf16_backend());
    setenv("LC_BF16", "portable", 1);
    CHECK(lc_gemm_bf16_choose() == 0, "LC_BF16=portable");
    setenv("LC_BF16", "auto", 1);
    CHECK(lc_gemm_bf16_choose() == best, "LC_BF16=auto");
    setenv("LC_BF16", "on", 1);
    CHECK(lc_gemm_bf16_choose() == best, "LC_BF16=on takes it only where the CPU has it");
    unsetenv("LC_BF16");
    CHECK(lc_gemm_bf16_choose() == best, "no LC_BF16");
    lc_gemm_bf16_force_portable(0);
    CHECK(!strcmp(lc_gemm_bf16_backend(), best ? "avx512bf16" : "portable"), "after unset: %s", lc_gemm_bf16_backend());
    lc_gemm_bf16_force_portable(1);
    CHECK(!strcmp(lc_gemm_bf16_backend(), "portable"), "forced: %s", lc_gemm_bf16_backend());
    lc_gemm_bf16_force_portable(0);
    if (saved) setenv("LC_BF16", keep, 1);
    lc_gemm_bf16_force_portable(0);
}

int main(void) {
    lc_rng_seed(&rng, 4242);
    lc_threads_use(0);
    has_vector = lc_cpu_has_avx512_bf16();
    const char *env = getenv("LC_BF16");
    if (env && (!strcmp(env, "off") || !strcmp(env, "portable"))) has_vector = 0; /* honoured: one path */
    printf("bf16 paths: %s%s (lc_gemm backend %s)\n", lc_gemm_bf16_backend(), has_vector ? " and portable" : "",
           lc_gemm_backend());
    RUN(bf16_rounding_special_values);
    RUN(bf16_rounding_paths_agree);
    RUN(gemm_bf16_matches_references);
    RUN(gemm_bf16_against_fp32_product);
    RUN(gemm_bf16_k1_exact_on_ties_and_subnormals);
    RUN(gemm_bf16_empty_shapes);
    RUN(gemm_bf16_nan_and_inf_propagate);
    RUN(gemm_bf16_paths_bit_identical);
    RUN(gemm_bf16_thread_count_independent);
    RUN(gemm_bf16_without_pack_buffers);
    RUN(gemm_bf16_backend_choice);
    return test_summary("test_gemm_bf16");
}
