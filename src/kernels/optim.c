/* AdamW (PyTorch torch.optim.AdamW semantics) and the reductions the optimizer needs: a deterministic
 * sum of squares (gradient-norm clipping) and in-place scaling. */
#include <math.h>

#include "core/status.h"
#include "core/threads.h"
#include "kernels/kernels.h"

#define LC_PARALLEL_MIN 32768
#define LC_SUM_CHUNK 16384 /* smallest chunk of the parallel sum */
#define LC_MAX_CHUNKS 1024
#define LC_LANES 8

/* torch.optim.AdamW's single-tensor step (foreach=False, maximize=False, amsgrad=False), with its scalars
 * computed in double as PyTorch does in Python and its element operations in float:
 *   p *= 1 - lr*wd;  m.lerp_(g, 1-b1) = m + (1-b1)(g - m);  v = b2 v + (1-b2) g^2;
 *   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * The decay uses the parameter before the Adam step, so this equals the contract's single formula. */
void lc_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float weight_decay, int t) {
    float step_size = (float)(lr / (1.0 - pow(beta1, t)));
    float bias_correction2_sqrt = (float)sqrt(1.0 - pow(beta2, t));
    float decay = (float)(1.0 - (double)lr * weight_decay);
    float m_weight = (float)(1.0 - beta1), v_weight = (float)(1.0 - beta2);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        float mi = m[i] + m_weight * (g - m[i]);
        float vi = beta2 * v[i] + v_weight * g * g;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / bias_correction2_sqrt + eps;
        params[i] = params[i] * decay - step_size * mi / denom;
    }
}

/* Sum of squares of one chunk in double, lanes combined in a fixed order. */
static double lc_chunk_sum_squares(const float *x, size_t n) {
    double lane[LC_LANES] = {0};
    size_t i = 0;
    for (; i + LC_LANES <= n; i += LC_LANES)
        for (int j = 0; j < LC_LANES; j++) lane[j] += (double)x[i + j] * x[i + j];
    for (; i < n; i++) lane[0] += (double)x[i] * x[i];
    double sum = 0;
    for (int j = 0; j < LC_LANES; j++) sum += lane[j];
    return sum;
}

/* Chunk length depends only on n (at least LC_SUM_CHUNK, at most LC_MAX_CHUNKS chunks), so the order of
 * additions is fixed whatever the thread count; partial sums are combined in chunk order. */
double lc_sum_squares(const float *x, size_t n) {
    size_t chunk = (n + LC_MAX_CHUNKS - 1) / LC_MAX_CHUNKS;
    if (chunk < LC_SUM_CHUNK) chunk = LC_SUM_CHUNK;
    size_t chunks = (n + chunk - 1) / chunk;
    double partial[LC_MAX_CHUNKS];
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t c = 0; c < chunks; c++) {
        size_t start = c * chunk, len = n - start < chunk ? n - start : chunk;
        partial[c] = lc_chunk_sum_squares(x + start, len);
    }
    double sum = 0;
    for (size_t c = 0; c < chunks; c++) sum += partial[c];
    return sum;
}

void lc_scale(float *x, size_t n, float s) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

lc_status lc_adamw_options_check(const lc_train_options *o) {
    if (!o) return lc_fail(LC_ERR_ARG, "training options are required");
    if (o->steps < 0) return lc_fail(LC_ERR_ARG, "steps must be >= 0, got %ld", o->steps);
    if (!(o->lr > 0) || !(o->min_lr >= 0)) return lc_fail(LC_ERR_ARG, "lr must be > 0 and min-lr >= 0");
    if (o->warmup < 0) return lc_fail(LC_ERR_ARG, "warmup must be >= 0, got %ld", o->warmup);
    if (!(o->clip >= 0)) return lc_fail(LC_ERR_ARG, "clip must be >= 0");
    if (!(o->weight_decay >= 0)) return lc_fail(LC_ERR_ARG, "weight-decay must be >= 0");
    return LC_OK;
}
