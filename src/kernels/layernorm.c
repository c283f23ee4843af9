/* LayerNorm over the last dimension: forward parallel over rows (saving mean and rstd), backward with
 * dinp parallel over rows and dw/db parallel over channel chunks (each channel summed over rows in order,
 * so the result is independent of the schedule), and double references. */
#include <math.h>

#include "core/threads.h"
#include "kernels/kernels.h"

#define LC_LANES 8          /* independent partial sums: lets the compiler vectorize without reassociating */
#define LC_CHANNEL_CHUNK 64 /* channels per parallel work item in dw/db */

/* Sum of x[i] (and of (x[i] - shift)^2 into *sq) in double, in a fixed lane order. */
static double lc_row_sum(const float *x, int c, double shift, double *sq) {
    double s[LC_LANES] = {0}, q[LC_LANES] = {0};
    int i = 0;
    for (; i + LC_LANES <= c; i += LC_LANES) {
        for (int j = 0; j < LC_LANES; j++) {
            double d = (double)x[i + j] - shift;
            s[j] += d;
            q[j] += d * d;
        }
    }
    for (; i < c; i++) {
        double d = (double)x[i] - shift;
        s[0] += d;
        q[0] += d * d;
    }
    double sum = 0, sumsq = 0;
    for (int j = 0; j < LC_LANES; j++) {
        sum += s[j];
        sumsq += q[j];
    }
    *sq = sumsq;
    return sum;
}

static void lc_layernorm_row(float *out, float *mean_out, float *rstd_out, const float *x, const float *w,
                             const float *b, int c, float eps) {
    double unused, sq;
    double mean = lc_row_sum(x, c, 0.0, &unused) / c;
    lc_row_sum(x, c, mean, &sq); /* two-pass variance: accurate for large means */
    float m = (float)mean, rstd = (float)(1.0 / sqrt(sq / c + eps));
    for (int i = 0; i < c; i++) out[i] = (x[i] - m) * rstd * w[i] + b[i];
    *mean_out = m;
    *rstd_out = rstd;
}

void lc_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                          int n, int c, float eps) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS) if ((long)n * c > 16384)
#endif
    for (int r = 0; r < n; r++)
        lc_layernorm_row(out + (size_t)r * c, &mean[r], &rstd[r], inp + (size_t)r * c, w, b, c, eps);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * w, for one row. */
static void lc_layernorm_row_backward(float *dinp, const float *dout, const float *x, const float *w, float mean,
                                      float rstd, int c) {
    double sum_g[LC_LANES] = {0}, sum_gx[LC_LANES] = {0};
    for (int i0 = 0; i0 < c; i0 += LC_LANES) {
        int width = c - i0 < LC_LANES ? c - i0 : LC_LANES;
        for (int j = 0; j < width; j++) {
            float g = dout[i0 + j] * w[i0 + j], xhat = (x[i0 + j] - mean) * rstd;
            sum_g[j] += g;
            sum_gx[j] += g * xhat;
        }
    }
    for (int j = 1; j < LC_LANES; j++) {
        sum_g[0] += sum_g[j];
        sum_gx[0] += sum_gx[j];
    }
    float mean_g = (float)(sum_g[0] / c), mean_gx = (float)(sum_gx[0] / c);
    for (int i = 0; i < c; i++) {
        float g = dout[i] * w[i], xhat = (x[i] - mean) * rstd;
        dinp[i] += rstd * (g - mean_g - xhat * mean_gx);
    }
}

void lc_channel_grads(float *dw, float *db, const float *dout, const float *inp, const float *mean, const float *rstd,
                      int n, int c) {
    int chunks = (c + LC_CHANNEL_CHUNK - 1) / LC_CHANNEL_CHUNK;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if ((long)n * c > 16384)
#endif
    for (int ch = 0; ch < chunks; ch++) {
        int i0 = ch * LC_CHANNEL_CHUNK, width = c - i0 < LC_CHANNEL_CHUNK ? c - i0 : LC_CHANNEL_CHUNK;
        double sum_w[LC_CHANNEL_CHUNK] = {0}, sum_b[LC_CHANNEL_CHUNK] = {0};
        for (int r = 0; r < n; r++) {
            const float *g = dout + (size_t)r * c + i0;
            if (!dw) { /* a bias gradient alone */
                for (int j = 0; j < width; j++) sum_b[j] += g[j];
                continue;
            }
            const float *x = inp + (size_t)r * c + i0;
            for (int j = 0; j < width; j++) {
                sum_w[j] += g[j] * ((x[j] - mean[r]) * rstd[r]);
                sum_b[j] += g[j];
            }
        }
        for (int j = 0; j < width; j++) {
            if (dw) dw[i0 + j] += (float)sum_w[j];
            if (db) db[i0 + j] += (float)sum_b[j];
        }
    }
}

void lc_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                           const float *mean, const float *rstd, int n, int c) {
    if (dinp) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS) if ((long)n * c > 16384)
#endif
        for (int r = 0; r < n; r++)
            lc_layernorm_row_backward(dinp + (size_t)r * c, dout + (size_t)r * c, inp + (size_t)r * c, w, mean[r],
                                      rstd[r], c);
    }
    if (dw || db) lc_channel_grads(dw, db, dout, inp, mean, rstd, n, c);
}

void lc_layernorm_forward_ref(double *out, double *mean, double *rstd, const double *inp, const double *w,
                              const double *b, int n, int c, double eps) {
    for (int r = 0; r < n; r++) {
        const double *x = inp + (size_t)r * c;
        double m = 0, var = 0;
        for (int i = 0; i < c; i++) m += x[i];
        m /= c;
        for (int i = 0; i < c; i++) var += (x[i] - m) * (x[i] - m);
        var /= c;
        double s = 1.0 / sqrt(var + eps);
        for (int i = 0; i < c; i++) out[(size_t)r * c + i] = (x[i] - m) * s * w[i] + b[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

void lc_layernorm_backward_ref(double *dinp, double *dw, double *db, const double *dout, const double *inp,
                               const double *w, const double *mean, const double *rstd, int n, int c) {
    for (int r = 0; r < n; r++) {
        const double *x = inp + (size_t)r * c, *dy = dout + (size_t)r * c;
        double mean_g = 0, mean_gx = 0;
        for (int i = 0; i < c; i++) {
            double xhat = (x[i] - mean[r]) * rstd[r];
            mean_g += dy[i] * w[i] / c;
            mean_gx += dy[i] * w[i] * xhat / c;
            if (dw) dw[i] += dy[i] * xhat;
            if (db) db[i] += dy[i];
        }
        if (!dinp) continue;
        for (int i = 0; i < c; i++) {
            double xhat = (x[i] - mean[r]) * rstd[r];
            dinp[(size_t)r * c + i] += rstd[r] * (dy[i] * w[i] - mean_g - xhat * mean_gx);
        }
    }
}
