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
/* Benchmark accounting: while enabled, lc_gemm calls made outside parallel regions add their
 * floating-point operations (2 M N K) and wall time to running totals. */
void lc_gemm_profile(int enable);
void lc_gemm_profile_totals(double *flops, double *seconds);

/* ---- linear layer: out[n,o] = inp[n,i] W[o,i]^T + b[o] (b may be NULL) ---- */
void lc_linear_forward(float *out, const float *inp, const float *w, const float *b, int n, int in_dim, int out_dim);
/* dinp[n,i] += dout W; dw[o,i] += dout^T inp; db[o] += sum over rows of dout. */
void lc_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int n,
                        int in_dim, int out_dim);
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
