/* Tests of the matrix products: lc_gemm (whatever backend the build uses), lc_gemm_builtin and the key
 * panels' and the rows products (lc_panel_gemm, lc_rows_gemm) against double references, for all four transposes, odd sizes, padded
 * leading dimensions, alpha and beta (beta == 0 with NaN in C), block-boundary sizes, degenerate K, and
 * thread-count independence. */
#include <math.h>
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

static double *alloc_doubles(size_t n) {
    double *p = lc_alloc_aligned(n * sizeof(double));
    if (!p) abort();
    return p;
}

/* Fills a rows x cols matrix with leading dimension ld; the padding holds a sentinel. */
static void fill_matrix(float *x, double *xd, int rows, int cols, int ld) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld; c++) {
            float v = c < cols ? nonzero_uniform() : 777.0f;
            x[(size_t)r * ld + c] = v;
            xd[(size_t)r * ld + c] = v;
        }
}

/* Runs the three alpha/beta cases of one shape and transpose pair; results of all three are appended
 * to got/want (M*N each) so one CHECK_CLOSE covers them. Returns the number of padding cells of C that
 * were modified (must be 0). */
static int run_case(gemm_fn f, lc_trans ta, lc_trans tb, dims d, float *got, double *want) {
    int a_rows = ta ? d.K : d.M, a_cols = ta ? d.M : d.K, b_rows = tb ? d.N : d.K, b_cols = tb ? d.K : d.N;
    int lda = a_cols + 3, ldb = b_cols + 1, ldc = d.N + 2, touched = 0;
    float *A = alloc_floats((size_t)a_rows * lda), *B = alloc_floats((size_t)b_rows * ldb);
    float *C = alloc_floats((size_t)d.M * ldc);
    double *Ad = alloc_doubles((size_t)a_rows * lda), *Bd = alloc_doubles((size_t)b_rows * ldb);
    double *Cd = alloc_doubles((size_t)d.M * ldc);
    fill_matrix(A, Ad, a_rows, a_cols, lda);
    fill_matrix(B, Bd, b_rows, b_cols, ldb);
    for (int s = 0; s < 3; s++) {
        scalars sc = scalar_cases[s];
        fill_matrix(C, Cd, d.M, d.N, ldc);
        if (sc.beta == 0)
            for (int i = 0; i < d.M; i++)
                for (int j = 0; j < d.N; j++) C[(size_t)i * ldc + j] = NAN; /* must not be read */
        f(ta, tb, d.M, d.N, d.K, sc.alpha, A, lda, B, ldb, sc.beta, C, ldc);
        lc_gemm_ref(ta, tb, d.M, d.N, d.K, sc.alpha, Ad, lda, Bd, ldb, sc.beta, Cd, ldc);
        for (int i = 0; i < d.M; i++)
            for (int j = 0; j < ldc; j++) {
                size_t at = (size_t)i * ldc + j, out = ((size_t)s * d.M + i) * d.N + j;
                if (j >= d.N) touched += C[at] != 777.0f;
                else got[out] = C[at], want[out] = Cd[at];
            }
    }
    lc_free(A), lc_free(B), lc_free(C), lc_free(Ad), lc_free(Bd), lc_free(Cd);
    return touched;
}

/* Checks every transpose pair of each shape. The absolute tolerance scales with K (fp32 accumulation of
 * K terms, |C| up to a few units): observed worst errors are about 6e-8 K. */
static void check_shapes(gemm_fn f, const char *name, const dims *shapes, int count) {
    for (int s = 0; s < count; s++) {
        dims d = shapes[s];
        size_t n = 3 * (size_t)d.M * d.N;
        float *got = alloc_floats(n);
        double *want = alloc_doubles(n);
        for (int t = 0; t < 4; t++) {
            lc_trans ta = (lc_trans)(t >> 1), tb = (lc_trans)(t & 1);
            int touched = run_case(f, ta, tb, d, got, want);
            char label[96];
            snprintf(label, sizeof label, "%s %c%c %dx%dx%d", name, ta ? 'T' : 'N', tb ? 'T' : 'N', d.M, d.N, d.K);
            CHECK_CLOSE(label, got, want, n, 1e-4, 3e-7 * d.K);
            CHECK(touched == 0, "%s: %d padding cells of C written", label, touched);
        }
        lc_free(got), lc_free(want);
    }
}

static const dims odd_shapes[6] = {{1, 1, 1}, {7, 13, 5}, {65, 33, 129}, {200, 150, 70},
                                   {1, 300, 70}, {2, 129, 133}}; /* M <= 2: the gemv path */
/* Sizes that cross the built-in kernel's blocking boundaries (MC, NT, KC and NC) with ragged edges. */
static const dims block_shapes[2] = {{205, 290, 520}, {37, 2085, 260}};

TEST(gemm_dispatch_matches_reference) { check_shapes(lc_gemm, lc_gemm_backend(), odd_shapes, 6); }

TEST(gemm_builtin_matches_reference) { check_shapes(lc_gemm_builtin, "builtin", odd_shapes, 6); }

TEST(gemm_builtin_block_boundaries) { check_shapes(lc_gemm_builtin, "builtin", block_shapes, 2); }

/* K == 0: C = beta * C, and beta == 0 writes zeros over NaN. */
TEST(gemm_empty_inner_dimension) {
    gemm_fn fns[2] = {lc_gemm, lc_gemm_builtin};
    for (int f = 0; f < 2; f++) {
        float A[1] = {1}, B[3] = {1, 1, 1}, C[6] = {1, 2, 3, 4, 5, 6}, Z[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        fns[f](LC_NO_TRANS, LC_NO_TRANS, 2, 3, 0, 1.0f, A, 1, B, 3, 2.0f, C, 3);
        fns[f](LC_NO_TRANS, LC_NO_TRANS, 2, 3, 0, 1.0f, A, 1, B, 3, 0.0f, Z, 3);
        for (int i = 0; i < 6; i++) {
            CHECK(C[i] == 2.0f * (float)(i + 1), "fn %d: C[%d] = %g", f, i, C[i]);
            CHECK(Z[i] == 0.0f, "fn %d: Z[%d] = %g", f, i, Z[i]);
        }
    }
}

/* The built-in kernel sums each C element in one fixed order: bit-identical for 1 and 2 threads. */
TEST(gemm_builtin_thread_count_independent) {
    int M = 300, N = 270, K = 600;
    float *A = alloc_floats((size_t)M * K), *B = alloc_floats((size_t)K * N);
    float *C1 = alloc_floats((size_t)M * N), *C2 = alloc_floats((size_t)M * N);
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = nonzero_uniform();
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = nonzero_uniform();
    lc_threads_use(1);
    lc_gemm_builtin(LC_NO_TRANS, LC_TRANS, M, N, K, 1.0f, A, K, B, K, 0.0f, C1, N);
    lc_threads_use(2);
    lc_gemm_builtin(LC_NO_TRANS, LC_TRANS, M, N, K, 1.0f, A, K, B, K, 0.0f, C2, N);
    CHECK(memcmp(C1, C2, (size_t)M * N * sizeof(float)) == 0, "results differ between 1 and 2 threads");
    lc_threads_use(0);
    lc_free(A), lc_free(B), lc_free(C1), lc_free(C2);
}

/* Products started from inside a parallel region (as an attention kernel might, one per head) run
 * single-threaded there and must not share packing buffers. */
TEST(gemm_builtin_called_from_parallel_threads) {
    CHECK(concurrent_products_agree(lc_gemm_builtin, LC_NO_TRANS), "concurrent products differ");
}

/* The dispatched product (a BLAS when built with one) gives the same bits for every thread count and
 * from inside a parallel region: the product is cut into BLAS calls by its shape alone. Before that
 * rule, OpenBLAS's Haswell/Zen kernels (OPENBLAS_CORETYPE=Haswell) summed a half-height call in another
 * order than the whole, and a product differed between 1 and 2 threads. */
TEST(gemm_dispatch_thread_count_independent) {
    const dims shapes[] = {{300, 270, 600}, {1024, 64, 64}, {40, 1000, 96}, {513, 129, 257}, {64, 64, 1024}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int M = shapes[si].M, N = shapes[si].N, K = shapes[si].K;
        float *A = alloc_floats((size_t)M * K), *B = alloc_floats((size_t)K * N);
        float *C0 = alloc_floats((size_t)M * N), *C = alloc_floats((size_t)M * N);
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = nonzero_uniform();
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = nonzero_uniform();
        for (size_t i = 0; i < (size_t)M * N; i++) C0[i] = nonzero_uniform();
        memcpy(C, C0, (size_t)M * N * sizeof(float));
        lc_threads_use(1);
        lc_gemm(LC_NO_TRANS, LC_TRANS, M, N, K, 0.5f, A, K, B, K, 1.0f, C0, N); /* beta 1: accumulate */
        const float *want = C0;
        float *start = alloc_floats((size_t)M * N);
        memcpy(start, C, (size_t)M * N * sizeof(float));
        for (int threads = 2; threads <= 5; threads++) {
            memcpy(C, start, (size_t)M * N * sizeof(float));
            lc_threads_use(threads);
            lc_gemm(LC_NO_TRANS, LC_TRANS, M, N, K, 0.5f, A, K, B, K, 1.0f, C, N);
            CHECK(memcmp(want, C, (size_t)M * N * sizeof(float)) == 0, "%dx%dx%d: %d threads differ from 1",
                  M, N, K, threads);
        }
        memcpy(C, start, (size_t)M * N * sizeof(float));
        lc_threads_use(2);
#ifdef _OPENMP
#pragma omp parallel num_threads(2)
#endif
        {
#ifdef _OPENMP
            if (omp_get_thread_num() == 0)
#endif
                lc_gemm(LC_NO_TRANS, LC_TRANS, M, N, K, 0.5f, A, K, B, K, 1.0f, C, N);
        }
        CHECK(memcmp(want, C, (size_t)M * N * sizeof(float)) == 0, "%dx%dx%d: inside a parallel region differs",
              M, N, K);
        lc_free(A), lc_free(B), lc_free(C0), lc_free(C), lc_free(start);
    }
    lc_threads_use(0);
}

/* When the packing buffers cannot be allocated the built-in kernel must neither abort nor change a bit:
 * its stack-buffer fallback sums and stores every element as the packed path does. All four transposes,
 * edges in every dimension, K over two KC slices, beta 0 (C holds NaN), 1 and another value. */
TEST(gemm_builtin_without_pack_buffers) {
    const dims shapes[] = {{300, 270, 600}, {13, 37, 5}, {3, 200, 70}, {97, 33, 513}};
    const scalars ab[] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.25f, 0.75f}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < 3; c++) {
                const int M = shapes[si].M, N = shapes[si].N, K = shapes[si].K;
                const lc_trans ta = t & 1 ? LC_TRANS : LC_NO_TRANS, tb = t & 2 ? LC_TRANS : LC_NO_TRANS;
                float *A = alloc_floats((size_t)M * K), *B = alloc_floats((size_t)K * N);
                float *C0 = alloc_floats((size_t)M * N), *C1 = alloc_floats((size_t)M * N);
                for (size_t i = 0; i < (size_t)M * K; i++) A[i] = nonzero_uniform();
                for (size_t i = 0; i < (size_t)K * N; i++) B[i] = nonzero_uniform();
                for (size_t i = 0; i < (size_t)M * N; i++) C0[i] = ab[c].beta == 0 ? NAN : nonzero_uniform();
                memcpy(C1, C0, (size_t)M * N * sizeof(float));
                const int lda = ta ? M : K, ldb = tb ? K : N;
                lc_gemm_builtin(ta, tb, M, N, K, ab[c].alpha, A, lda, B, ldb, ab[c].beta, C0, N);
                lc_gemm_refuse_pack_buffers(1);
                lc_gemm_builtin(ta, tb, M, N, K, ab[c].alpha, A, lda, B, ldb, ab[c].beta, C1, N);
                lc_gemm_refuse_pack_buffers(0);
                CHECK(memcmp(C0, C1, (size_t)M * N * sizeof(float)) == 0, "%dx%dx%d ta %d tb %d case %d differs",
                      M, N, K, ta, tb, c);
                lc_free(A), lc_free(B), lc_free(C0), lc_free(C1);
            }
}

/* Key panels (src/kernels/panel.c): rows packed at an offset inside their first panel, then the product
 * with the transpose over whole panels against the double reference; C's columns past the panels and its
 * padding keep their sentinel. Sizes around the register tile (rows 1 to 17, 1 to 7 panels) and odd D. */
TEST(panel_product_matches_reference) {
    const int Ds[] = {1, 3, 16, 33, 64}, Ms[] = {1, 2, 5, 8, 9, 13, 16, 17}, Ps[] = {1, 2, 3, 4, 7};
    for (int di = 0; di < 5; di++)
        for (int mi = 0; mi < 8; mi++)
            for (int pi = 0; pi < 5; pi++) {
                const int D = Ds[di], M = Ms[mi], P = Ps[pi], rows = P * LC_PANEL_ROWS, r0 = (3 * D + M) % 11;
                const int n = rows - r0 - (M % 3), lda = D + 3, ldc = rows + 5; /* rows r0 .. r0 + n - 1 packed */
                float *A = alloc_floats((size_t)M * lda), *src = alloc_floats((size_t)n * (D + 2));
                float *store = alloc_floats(lc_panel_floats(rows, D)), *C = alloc_floats((size_t)M * ldc);
                double *Ad = alloc_doubles((size_t)M * lda), *srcd = alloc_doubles((size_t)n * (D + 2));
                fill_matrix(A, Ad, M, D, lda);
                fill_matrix(src, srcd, n, D, D + 2);
                for (size_t i = 0; i < lc_panel_floats(rows, D); i++) store[i] = 0.0f;
                for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = 777.0f;
                lc_panel_pack(store, D, r0, n, src, D + 2);
                lc_panel_gemm(M, P, D, 0.5f, A, lda, store, C, ldc);
                double worst = 0;
                int sentinels = 1;
                for (int i = 0; i < M; i++) {
                    for (int c = 0; c < rows; c++) {
                        double want = 0;
                        for (int d = 0; c >= r0 && c < r0 + n && d < D; d++)
                            want += Ad[(size_t)i * lda + d] * srcd[(size_t)(c - r0) * (D + 2) + d];
                        const double err = fabs(C[(size_t)i * ldc + c] - 0.5 * want) / (1.0 + fabs(0.5 * want));
                        worst = err > worst ? err : worst;
                    }
                    for (int c = rows; c < ldc; c++) sentinels &= C[(size_t)i * ldc + c] == 777.0f;
                }
                CHECK(worst < 1e-5 * (1 + D / 16), "M %d panels %d D %d: worst relative error %g", M, P, D, worst);
                CHECK(sentinels, "M %d panels %d D %d: wrote past its panels' columns", M, P, D);
                lc_free(A), lc_free(src), lc_free(store), lc_free(C), lc_free(Ad), lc_free(srcd);
            }
}

/* The rows product (lc_rows_gemm: C = A B, B's rows in place) against the double reference, for the
 * widths it takes (a whole number of vectors, one to nine of them: its tile takes up to four), row
 * counts around its tile, K across its 256-row blocks and K = 0; C's padding keeps its sentinel. */
TEST(rows_product_matches_reference) {
    const int Ns[] = {4, 8, 16, 32, 48, 64, 80, 144}, Ms[] = {1, 5, 6, 7, 13}, Ks[] = {0, 1, 255, 256, 600};
    int tried = 0;
    for (int ni = 0; ni < 8; ni++)
        for (int mi = 0; mi < 5; mi++)
            for (int ki = 0; ki < 5; ki++) {
                const int N = Ns[ni], M = Ms[mi], K = Ks[ki], lda = K + 3, ldb = N + 5, ldc = N + 2;
                if (!lc_rows_gemm_fits(N)) continue;
                tried++;
                float *A = alloc_floats((size_t)M * lda + 1), *B = alloc_floats((size_t)K * ldb + 1);
                float *C = alloc_floats((size_t)M * ldc);
                double *Ad = alloc_doubles((size_t)M * lda + 1), *Bd = alloc_doubles((size_t)K * ldb + 1);
                fill_matrix(A, Ad, M, K, lda);
                fill_matrix(B, Bd, K, N, ldb);
                for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = 777.0f;
                lc_rows_gemm(M, N, K, A, lda, B, ldb, C, ldc);
                double worst = 0;
                int sentinels = 1;
                for (int i = 0; i < M; i++) {
                    for (int j = 0; j < N; j++) {
                        double want = 0, size = 0;
                        for (int k = 0; k < K; k++) {
                            want += Ad[(size_t)i * lda + k] * Bd[(size_t)k * ldb + j];
                            size += fabs(Ad[(size_t)i * lda + k] * Bd[(size_t)k * ldb + j]);
                        }
                        const double err = fabs(C[(size_t)i * ldc + j] - want) / (1.0 + size);
                        worst = err > worst ? err : worst;
                    }
                    for (int j = N; j < ldc; j++) sentinels &= C[(size_t)i * ldc + j] == 777.0f;
                }
                CHECK(worst < 1e-6, "M %d N %d K %d: worst error %g of the sum of |products|", M, N, K, worst);
                CHECK(sentinels, "M %d N %d K %d: wrote past N columns", M, N, K);
                lc_free(A), lc_free(B), lc_free(C), lc_free(Ad), lc_free(Bd);
            }
    CHECK(tried >= 5 * 5 * 6, "only %d shapes fit the rows kernel", tried);
    CHECK(!lc_rows_gemm_fits(3) && !lc_rows_gemm_fits(0), "odd widths accepted");
}

int main(void) {
    lc_rng_seed(&rng, 12345);
    lc_threads_use(0);
    printf("gemm backend: %s\n", lc_gemm_backend());
    RUN(gemm_dispatch_matches_reference);
    RUN(gemm_builtin_matches_reference);
    RUN(gemm_builtin_block_boundaries);
    RUN(gemm_empty_inner_dimension);
    RUN(gemm_builtin_thread_count_independent);
    RUN(gemm_dispatch_thread_count_independent);
    RUN(gemm_builtin_called_from_parallel_threads);
    RUN(gemm_builtin_without_pack_buffers);
    RUN(panel_product_matches_reference);
    RUN(rows_product_matches_reference);
    return test_summary("test_gemm");
}
