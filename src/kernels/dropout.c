/* Dropout with a counter-based mask: element i survives iff lc_hash_uniform(seed, i) >= p, so the mask
 * is the same for any thread count and backward regenerates it instead of storing it. */
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"

#define LC_PARALLEL_MIN 32768

/* dst[i] = keep(i) ? src[i] / (1 - p) : 0 (dst == src allowed). p >= 1 drops everything. */
static void lc_dropout_apply(float *dst, const float *src, size_t n, float p, uint64_t seed) {
    if (p <= 0) {
        if (dst != src) memmove(dst, src, n * sizeof(float));
        return;
    }
    float scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) dst[i] = lc_hash_uniform(seed, i) >= p ? src[i] * scale : 0.0f;
}

void lc_dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t seed) {
    lc_dropout_apply(out, inp, n, p, seed);
}

void lc_dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t seed) {
    lc_dropout_apply(dinp, dout, n, p, seed);
}
