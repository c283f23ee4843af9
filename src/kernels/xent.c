/* Softmax cross-entropy over rows of logits: forward saves each row's log-sum-exp (computed with the row
 * maximum subtracted), backward rebuilds the softmax from it; ignored rows (target < 0) give zero loss
 * and zero gradient. Rows run in parallel; the total loss is summed in row order. */
#include <assert.h>
#include <math.h>

#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

#define LC_PARALLEL_MIN 16384 /* rows x V below which threads are not worth starting */

/* log(sum_j exp(x[j])) with the maximum subtracted first. */
static float lc_row_logsumexp(const float *x, int V) {
    float max = x[0];
    for (int j = 1; j < V; j++) max = x[j] > max ? x[j] : max;
    double sum = 0;
    for (int j = 0; j < V; j++) sum += lc_expf(x[j] - max);
    return max + (float)log(sum);
}

double lc_xent_forward(float *losses, float *lse, const float *logits, const int *targets, int n, int V) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS) if ((long)n * V > LC_PARALLEL_MIN)
#endif
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * V;
        assert(targets[r] < V);
        lse[r] = lc_row_logsumexp(x, V);
        losses[r] = targets[r] < 0 ? 0.0f : lse[r] - x[targets[r]];
    }
    double total = 0;
    for (int r = 0; r < n; r++)
        if (targets[r] >= 0) total += losses[r];
    return total;
}

void lc_xent_backward(float *dlogits, const float *logits, const float *lse, const int *targets, int n, int V,
                      float scale) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS) if ((long)n * V > LC_PARALLEL_MIN)
#endif
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        if (targets[r] < 0) {
            for (int j = 0; j < V; j++) d[j] = 0.0f;
            continue;
        }
        for (int j = 0; j < V; j++) d[j] = scale * lc_expf(x[j] - lse[r]);
        d[targets[r]] -= scale;
    }
}

double lc_xent_forward_ref(double *losses, const double *logits, const int *targets, int n, int V) {
    double total = 0;
    for (int r = 0; r < n; r++) {
        const double *x = logits + (size_t)r * V;
        double max = x[0], sum = 0;
        for (int j = 1; j < V; j++) max = fmax(max, x[j]);
        for (int j = 0; j < V; j++) sum += exp(x[j] - max);
        losses[r] = targets[r] < 0 ? 0.0 : max + log(sum) - x[targets[r]];
        total += losses[r];
    }
    return total;
}

void lc_xent_backward_ref(double *dlogits, const double *logits, const int *targets, int n, int V, double scale) {
    for (int r = 0; r < n; r++) {
        const double *x = logits + (size_t)r * V;
        double *d = dlogits + (size_t)r * V;
        double max = x[0], sum = 0;
        for (int j = 1; j < V; j++) max = fmax(max, x[j]);
        for (int j = 0; j < V; j++) sum += exp(x[j] - max);
        for (int j = 0; j < V; j++) d[j] = targets[r] < 0 ? 0.0 : scale * exp(x[j] - max) / sum;
        if (targets[r] >= 0) d[targets[r]] -= scale;
    }
}
