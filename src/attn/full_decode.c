/* Forward of the full kind for a few queries (generation: T = 1 against a long memory). The tiled
 * kernel pads queries to 64-row tiles, which for a single query wastes 64x the work; here each query
 * row streams over its visible keys with an online softmax: O(S * D) per row, no scratch memory. Same
 * semantics as lc_attn_full_forward (window, relative positions, lse). */
#include <math.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/full_decode.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

#define LC_DECODE_CHUNK 64

typedef float v8f __attribute__((vector_size(32)));

/* A dot product in 8-float vectors (GCC vector extensions; portable), summed in a fixed order. */
static inline __attribute__((always_inline)) float dot(const float *a, const float *b, int D) {
    v8f acc = {0, 0, 0, 0, 0, 0, 0, 0}, x, y;
    int d = 0;
    for (; d + 8 <= D; d += 8) memcpy(&x, a + d, sizeof x), memcpy(&y, b + d, sizeof y), acc += x * y;
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; d < D; d++) s += a[d] * b[d];
    return s;
}

/* One query row t of head h in batch b. */
static void decode_row(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int row) {
    const int D = s->D, M = s->M, S = s->M + s->T;
    const long hd = (long)h * D;
    const float *q = t->q.p + b * t->q.sb + row * t->q.st + hd;
    float qu[LC_DECODE_MAX_D], qv[LC_DECODE_MAX_D], acc[LC_DECODE_MAX_D];
    for (int d = 0; d < D; d++) {
        qu[d] = q[d] + (t->rel ? t->rel->u[hd + d] : 0.0f);
        qv[d] = t->rel ? q[d] + t->rel->v[hd + d] : 0.0f;
        acc[d] = 0;
    }
    int hi = s->causal ? M + row : S - 1, lo = 0;
    if (s->window > 0 && M + row - s->window + 1 > lo) lo = M + row - s->window + 1;
    if (s->window > 0 && !s->causal && M + row + s->window - 1 < hi) hi = M + row + s->window - 1;
    float run_max = -INFINITY, run_sum = 0, score[LC_DECODE_CHUNK];
    const long HD = (long)s->H * D;
    for (int k0 = lo; k0 <= hi; k0 += LC_DECODE_CHUNK) { /* scores of a chunk, then one rescale */
        int n = hi - k0 + 1 < LC_DECODE_CHUNK ? hi - k0 + 1 : LC_DECODE_CHUNK;
        float chunk_max = -INFINITY;
        for (int j = 0; j < n; j++) {
            int key = k0 + j;
            float sc = dot(qu, t->k.p + b * t->k.sb + key * t->k.st + hd, D);
            if (t->rel) sc += dot(qv, t->rel->r + (long)(M + row - key) * HD + hd, D);
            score[j] = sc * s->scale;
            chunk_max = score[j] > chunk_max ? score[j] : chunk_max;
        }
        if (chunk_max > run_max) { /* rescale what was accumulated under the old maximum */
            float c = lc_expf(run_max - chunk_max);
            run_sum *= c;
            for (int d = 0; d < D; d++) acc[d] *= c;
            run_max = chunk_max;
        }
        for (int j = 0; j < n; j++) score[j] = lc_expf(score[j] - run_max);
        for (int j = 0; j < n; j++) {
            const float *v = t->v.p + b * t->v.sb + (k0 + j) * t->v.st + hd;
            run_sum += score[j];
            for (int d = 0; d < D; d++) acc[d] += score[j] * v[d];
        }
    }
    float *out = t->out.p + b * t->out.sb + row * t->out.st + hd;
    for (int d = 0; d < D; d++) out[d] = acc[d] / run_sum;
    t->lse[((long)b * s->H + h) * s->T + row] = run_max + logf(run_sum);
}

int lc_attn_full_decode(const lc_attn_shape *s, const lc_attn_tensors *t) {
    if (s->T > LC_DECODE_MAX_T || s->D > LC_DECODE_MAX_D) return 0;
    const long rows = (long)s->B * s->H * s->T;
#ifdef _OPENMP
#pragma omp parallel for num_threads(lc_attn_threads(s)) schedule(static) if (rows > 1)
#endif
    for (long i = 0; i < rows; i++) {
        int row = (int)(i % s->T), h = (int)(i / s->T % s->H), b = (int)(i / s->T / s->H);
        decode_row(s, t, b, h, row);
    }
    return 1;
}
