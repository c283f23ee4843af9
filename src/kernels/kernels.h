/* Numeric kernels on raw float arrays: matrix products, linear layers, LayerNorm, activations,
 * dropout, softmax cross-entropy, AdamW and reductions.
 *
 * Conventions (every kernel):
 *  - fp32 row-major storage; weights in PyTorch nn.Linear layout [out, in] (y = x W^T + b).
 *  - _forward writes its outputs. _backward ACCUMULATES (+=) into every gradient buffer it is given,
 *    and any gradient pointer may be NULL to skip it; exceptions are marked "writes".
 *  - Threads split independent outputs (rows, channels); no atomics; results are identical for a
 *    given thread count and run (reductions over rows use a fixed order).
 *  - Each op has a plain reference in double precision (_ref) with the same meaning, used by the tests
 *    for finite-difference gradient checks and to check the fast fp32 versions. */
#ifndef LC_KERNELS_H
#define LC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"

/* ---- matrix products ---- */
typedef enum { LC_NO_TRANS = 0, LC_TRANS = 1 } lc_trans;

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major with leading dimensions lda, ldb, ldc
 * (op(X) = X or X^T). Dispatches to CBLAS when built with LC_USE_CBLAS, else to the built-in blocked
 * kernel. beta == 0 means C is not read (may hold garbage/NaN). */
void lc_gemm(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
             int ldb, float beta, float *C, int ldc);
/* The built-in kernel, always available (tested against the reference in every build). */
void lc_gemm_builtin(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);
/* Tests: while refuse != 0 the built-in kernel acts as if its packing buffers could not be allocated and
 * takes its fallback (stack-sized panels, the same results). */
void lc_gemm_refuse_pack_buffers(int refuse);
/* Reference in double: same meaning on double arrays. */
void lc_gemm_ref(lc_trans ta, lc_trans tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc);
/* "openblas" or "builtin". */
const char *lc_gemm_backend(void);
/* Threads worth using for an M x N x K product: one per flops_per_thread flops (2MNK), at most the
 * OpenMP maximum; 1 without OpenMP. lc_gemm_builtin and lc_gemm_bf16 size their teams with it. */
int lc_gemm_useful_threads(int M, int N, int K, double flops_per_thread);
/* One product C = alpha op(A) op(B) + beta C as the blocked drivers of lc_gemm_builtin and lc_gemm_bf16
 * pass it to their packing and tasks. */
typedef struct {
    lc_trans ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} lc_gemm_args;
/* Benchmark accounting, per thread: while enabled on a thread, the lc_gemm and lc_gemm_bf16 calls that
 * thread makes (outside parallel regions) add their floating-point operations (2 M N K) and wall time to
 * its running totals; other threads neither see nor change them. */
void lc_gemm_profile(int enable);
void lc_gemm_profile_totals(double *flops, double *seconds);
/* For lc_gemm_bf16 (gemm_bf16.c): whether accounting is on, and add to it. */
int lc_gemm_profiling(void);
void lc_gemm_profile_add(double flops, double seconds);

/* ---- key panels (src/kernels/panel.c): an n x D matrix packed once for many products with its transpose.
 * Row r, column d lives at panels[(r / LC_PANEL_ROWS) * LC_PANEL_ROWS * D + d * LC_PANEL_ROWS + r % LC_PANEL_ROWS]. */
#define LC_PANEL_ROWS 16
/* Floats a panel store of n rows takes (n rounded up to whole panels, times D). */
static inline size_t lc_panel_floats(long n, int D) {
    return (size_t)((n + LC_PANEL_ROWS - 1) / LC_PANEL_ROWS) * LC_PANEL_ROWS * (size_t)D;
}
/* Writes rows r0 .. r0 + n - 1 of the store from src (row i at src + i * ld, D floats each). */
void lc_panel_pack(float *panels, int D, int r0, int n, const float *src, long ld);
/* C[i][c] = alpha * sum_d A[i][d] * row c of the store, for i < M and every column c < 16 * n_panels of the
 * first n_panels panels (whole panels: the caller gives C room for them). A is M x D with leading dimension
 * lda; C has leading dimension ldc. No threads: callers run it per head. */
void lc_panel_gemm(int M, int n_panels, int D, float alpha, const float *A, int lda, const float *panels, float *C,
                   long ldc);
/* C[M,N] = A[M,K] B[K,N] (C written), row-major, B's rows read in place: for a product whose B is already
 * laid out as rows (a head's values, kept contiguous). Only for N that lc_rows_gemm_fits (a whole number
 * of the target's vectors); K == 0 writes zeros. No threads. */
int lc_rows_gemm_fits(int N);
void lc_rows_gemm(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, long ldc);

/* ---- bf16 matrix products (src/kernels/gemm_bf16.c) ----
 * lc_gemm_bf16 has lc_gemm's contract, but every element of A and B is first rounded to bf16
 * (lc_bf16_from_f32) and the products are summed in fp32. Two code paths, chosen at run time:
 *   "avx512bf16": packed panels and a vdpbf16ps register-tiled kernel, where the CPU (CPUID leaf 7.1
 *                 EAX bit 5) and the OS (XCR0 zmm state) allow it;
 *   "portable":   the same packing and blocking with plain fp32 vector code, everywhere else.
 * Both sum each element in vdpbf16ps's order (per K pair the odd product, then the even one, each
 * rounded; from zero for each 512-deep K slice, then C = alpha * sum + beta * C in one rounding), so they
 * agree bit for bit except where a product or sum is subnormal (vdpbf16ps flushes those to zero).
 * Threads take independent blocks of C; results do not depend on the thread count.
 * The environment variable LC_BF16=off (or portable) makes the portable path the default; auto (or
 * unset) takes the best path. */
void lc_gemm_bf16(lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);
/* The path lc_gemm_bf16 takes now: "avx512bf16" or "portable". */
const char *lc_gemm_bf16_backend(void);
/* force != 0: the portable path from now on; 0: back to the default (CPU and LC_BF16). */
void lc_gemm_bf16_force_portable(int force);
/* The default path as the CPU and LC_BF16 decide it now (re-reads the environment; the first value other
 * than off, portable, auto or on gets a one-line warning on stderr); 1 = avx512bf16, 0 = portable. */
int lc_gemm_bf16_choose(void);
/* Whether this CPU and OS run the avx512bf16 path, and this build has it (0 on other architectures, and
 * in the generic half of a portable build, whose path is the baseline's). */
int lc_cpu_has_avx512_bf16(void);
/* Tests: while refuse != 0 the packing buffers count as unallocatable (stack panels, the same results). */
void lc_gemm_bf16_refuse_pack_buffers(int refuse);
/* bf16 rounding as vcvtne2ps2bf16 does it: nearest, ties to even; subnormals to a zero of their sign;
 * NaN stays NaN (quieted); values past the largest bf16 round to infinity. */
uint16_t lc_bf16_from_f32(float x);
float lc_bf16_to_f32(uint16_t h);
/* dst[i] = lc_bf16_from_f32(src[i]) on the path lc_gemm_bf16 takes (vcvtne2ps2bf16 on avx512bf16). */
void lc_bf16_round(uint16_t *dst, const float *src, size_t n);

/* Whether products asked for at LC_PRECISION_BF16 run in bf16 now: 1 where the avx512bf16 path is the
 * default, with LC_BF16=portable (the portable path: emulated, slow, for tests) or while
 * lc_gemm_bf16_force_portable is on; 0 with LC_BF16=off or on a CPU without AVX512_BF16 (fp32 there). */
int lc_bf16_products_active(void);
/* lc_gemm_bf16 when p is LC_PRECISION_BF16 and lc_bf16_products_active(), else lc_gemm. */
void lc_gemm_at_precision(lc_precision p, lc_trans ta, lc_trans tb, int M, int N, int K, float alpha, const float *A,
                          int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* How lc_gemm_at_precision's products at p run now: "fp32", "bf16/avx512bf16" or "bf16/portable". */
const char *lc_precision_path(lc_precision p);

/* ---- linear layer: out[n,o] = inp[n,i] W[o,i]^T + b[o] (b may be NULL) ---- */
void lc_linear_forward(float *out, const float *inp, const float *w, const float *b, int n, int in_dim, int out_dim);
/* dinp[n,i] += dout W; dw[o,i] += dout^T inp; db[o] += sum over rows of dout. */
void lc_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int n,
                        int in_dim, int out_dim);
/* The same at a precision: its matrix products through lc_gemm_at_precision (bias and its gradient in fp32). */
void lc_linear_forward_at(lc_precision p, float *out, const float *inp, const float *w, const float *b, int n,
                          int in_dim, int out_dim);
void lc_linear_backward_at(lc_precision p, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, int n, int in_dim, int out_dim);
void lc_linear_forward_ref(double *out, const double *inp, const double *w, const double *b, int n, int in_dim,
                           int out_dim);
void lc_linear_backward_ref(double *dinp, double *dw, double *db, const double *dout, const double *inp,
                            const double *w, int n, int in_dim, int out_dim);

/* ---- LayerNorm over the last dimension c: out = (x - mean) * rstd * w + b ---- */
/* The epsilon every LayerNorm of the model uses (inside the square root, with the variance). */
#define LC_LN_EPS 1e-5f
/* mean[n], rstd[n] are saved for backward. rstd = 1 / sqrt(var + eps), var biased (as PyTorch). */
void lc_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                          int n, int c, float eps);
void lc_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                           const float *mean, const float *rstd, int n, int c);
/* The parameter gradients of a LayerNorm: dw[i] += sum_r dout[r,i] * xhat[r,i] (skipped when dw is NULL;
 * xhat from inp, mean, rstd) and db[i] += sum_r dout[r,i] (when db is not NULL): with dw NULL, a linear
 * layer's bias gradient. Each chunk of channels is summed by one thread, rows in order, in double, so the
 * result does not depend on the schedule. */
void lc_channel_grads(float *dw, float *db, const float *dout, const float *inp, const float *mean, const float *rstd,
                      int n, int c);
void lc_layernorm_forward_ref(double *out, double *mean, double *rstd, const double *inp, const double *w,
                              const double *b, int n, int c, double eps);
void lc_layernorm_backward_ref(double *dinp, double *dw, double *db, const double *dout, const double *inp,
                               const double *w, const double *mean, const double *rstd, int n, int c);

/* ---- activations (elementwise over n values) ---- */
/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (PyTorch approximate="tanh"). */
/* out = a + b over n elements (the residual sum of a sublayer; out may alias a or b). */
void lc_add(float *out, const float *a, const float *b, long n);
void lc_gelu_forward(float *out, const float *inp, size_t n);
void lc_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void lc_gelu_forward_ref(double *out, const double *inp, size_t n);
void lc_gelu_backward_ref(double *dinp, const double *inp, const double *dout, size_t n);
void lc_relu_forward(float *out, const float *inp, size_t n);
void lc_relu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void lc_relu_forward_ref(double *out, const double *inp, size_t n);
void lc_relu_backward_ref(double *dinp, const double *inp, const double *dout, size_t n);

/* ---- dropout with a counter-based mask: element i is kept iff lc_hash_uniform(seed, i) >= p ----
 * Kept elements are scaled by 1/(1-p). p == 0 copies. The mask is never stored: backward regenerates
 * it from the seed. forward writes out (out == inp allowed); backward WRITES dinp = dout * mask/(1-p)
 * (dinp == dout allowed). */
void lc_dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t seed);
void lc_dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t seed);

/* ---- softmax cross-entropy over rows of V logits ----
 * targets[i] < 0 marks an ignored row (loss 0). Writes losses[n] (natural log units) and lse[n] (the
 * row's log-sum-exp, saved for backward). Returns the sum of losses over non-ignored rows (double). */
double lc_xent_forward(float *losses, float *lse, const float *logits, const int *targets, int n, int V);
/* WRITES dlogits = scale * (softmax(logits) - onehot(target)) for non-ignored rows and 0 for ignored ones. */
void lc_xent_backward(float *dlogits, const float *logits, const float *lse, const int *targets, int n, int V,
                      float scale);
double lc_xent_forward_ref(double *losses, const double *logits, const int *targets, int n, int V);
void lc_xent_backward_ref(double *dlogits, const double *logits, const int *targets, int n, int V, double scale);

/* ---- optimizer and reductions ---- */
/* One AdamW step (decoupled weight decay, PyTorch semantics), t = 1-based step number:
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd p). */
/* LC_ERR_ARG with a message when the options an optimisation step reads (schedule, clipping, decay) are
 * out of range. */
lc_status lc_adamw_options_check(const lc_train_options *o);
void lc_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float weight_decay, int t);
/* Sum of squares in double, deterministic for a given thread count. */
double lc_sum_squares(const float *x, size_t n);
/* x *= s */
void lc_scale(float *x, size_t n, float s);

#endif
