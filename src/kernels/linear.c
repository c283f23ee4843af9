/* Linear layer y = x W^T + b (PyTorch nn.Linear layout W[out, in]): forward and backward through lc_gemm (or
 * lc_gemm_bf16 at LC_PRECISION_BF16),
 * the bias broadcast, the bias gradient (a column sum: lc_channel_grads) and double references. */
#include "core/threads.h"
#include "kernels/kernels.h"

/* out[r, :] = b for every row (rows are independent). */
static void lc_fill_rows_with_bias(float *out, const float *b, int n, int out_dim) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS) if ((long)n * out_dim > 16384)
#endif
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out_dim; o++) out[(size_t)r * out_dim + o] = b[o];
}

void lc_linear_forward_at(lc_precision p, float *out, const float *inp, const float *w, const float *b, int n,
                          int in_dim, int out_dim) {
    float beta = 0.0f;
    if (b) {
        lc_fill_rows_with_bias(out, b, n, out_dim);
        beta = 1.0f;
    }
    lc_gemm_at_precision(p, LC_NO_TRANS, LC_TRANS, n, out_dim, in_dim, 1.0f, inp, in_dim, w, in_dim, beta, out, out_dim);
}

void lc_linear_forward(float *out, const float *inp, const float *w, const float *b, int n, int in_dim, int out_dim) {
    lc_linear_forward_at(LC_PRECISION_FP32, out, inp, w, b, n, in_dim, out_dim);
}

void lc_linear_backward_at(lc_precision p, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, int n, int in_dim, int out_dim) {
    if (dinp)
        lc_gemm_at_precision(p, LC_NO_TRANS, LC_NO_TRANS, n, in_dim, out_dim, 1.0f, dout, out_dim, w, in_dim, 1.0f,
                             dinp, in_dim);
    if (dw)
        lc_gemm_at_precision(p, LC_TRANS, LC_NO_TRANS, out_dim, in_dim, n, 1.0f, dout, out_dim, inp, in_dim, 1.0f, dw,
                             in_dim);
    if (db) lc_channel_grads(NULL, db, dout, NULL, NULL, NULL, n, out_dim);
}

void lc_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w, int n,
                        int in_dim, int out_dim) {
    lc_linear_backward_at(LC_PRECISION_FP32, dinp, dw, db, dout, inp, w, n, in_dim, out_dim);
}

void lc_linear_forward_ref(double *out, const double *inp, const double *w, const double *b, int n, int in_dim,
                           int out_dim) {
    for (int r = 0; r < n; r++) {
        for (int o = 0; o < out_dim; o++) {
            double sum = b ? b[o] : 0.0;
            for (int i = 0; i < in_dim; i++) sum += inp[(size_t)r * in_dim + i] * w[(size_t)o * in_dim + i];
            out[(size_t)r * out_dim + o] = sum;
        }
    }
}

void lc_linear_backward_ref(double *dinp, double *dw, double *db, const double *dout, const double *inp,
                            const double *w, int n, int in_dim, int out_dim) {
    for (int r = 0; r < n; r++) {
        for (int o = 0; o < out_dim; o++) {
            double g = dout[(size_t)r * out_dim + o];
            if (db) db[o] += g;
            for (int i = 0; i < in_dim; i++) {
                if (dinp) dinp[(size_t)r * in_dim + i] += g * w[(size_t)o * in_dim + i];
                if (dw) dw[(size_t)o * in_dim + i] += g * inp[(size_t)r * in_dim + i];
            }
        }
    }
}
