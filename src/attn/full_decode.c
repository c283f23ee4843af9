/* Forward of the full kind for a few queries (generation: T = 1 against a long memory). The tiled
 * kernel pads queries to 64-row tiles, which for a single query wastes 64x the work; here each query
 * row streams over its visible keys with an online softmax: O(S * D) per row, no scratch memory. When
 * the caller keeps the keys, values and r in the layouts of attn.h's lc_attn_store (the model's cache),
 * the rows stream from those. Same semantics as lc_attn_full_forward (window, relative positions, lse). */
#include <math.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/full_decode.h"
#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

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

/* One query row of one head while it streams over its keys: q + u and q + v, the visible keys [lo, hi],
 * and the online softmax's running maximum, sum and weighted values. */
typedef struct {
    int D, lo, hi;
    float qu[LC_DECODE_MAX_D], qv[LC_DECODE_MAX_D], acc[LC_DECODE_MAX_D];
    float run_max, run_sum;
} decode_state;

static void decode_begin(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int row, decode_state *st) {
    const int D = s->D, M = s->M, S = s->M + s->T;
    const long hd = (long)h * D;
    const float *q = t->q.p + b * t->q.sb + row * t->q.st + hd;
    st->D = D;
    for (int d = 0; d < D; d++) {
        st->qu[d] = q[d] + (t->rel ? t->rel->u[hd + d] : 0.0f);
        st->qv[d] = t->rel ? q[d] + t->rel->v[hd + d] : 0.0f;
        st->acc[d] = 0;
    }
    st->hi = s->causal ? M + row : S - 1, st->lo = 0;
    if (s->window > 0 && M + row - s->window + 1 > st->lo) st->lo = M + row - s->window + 1;
    if (s->window > 0 && !s->causal && M + row + s->window - 1 < st->hi) st->hi = M + row + s->window - 1;
    st->run_max = -INFINITY, st->run_sum = 0;
}

/* n consecutive keys' scores (overwritten by their exponentials) and their value rows, v + j * v_stride:
 * one rescale of what was accumulated under the old maximum, then the weighted values. */
static void decode_chunk(decode_state *st, float *score, int n, const float *v, long v_stride) {
    const int D = st->D;
    float chunk_max = -INFINITY;
    for (int j = 0; j < n; j++) chunk_max = score[j] > chunk_max ? score[j] : chunk_max;
    if (chunk_max > st->run_max) {
        const float c = lc_expf(st->run_max - chunk_max);
        st->run_sum *= c;
        for (int d = 0; d < D; d++) st->acc[d] *= c;
        st->run_max = chunk_max;
    }
    for (int j = 0; j < n; j++) score[j] = lc_expf(score[j] - st->run_max);
    for (int j = 0; j < n; j++) {
        const float *vj = v + j * v_stride;
        st->run_sum += score[j];
        for (int d = 0; d < D; d++) st->acc[d] += score[j] * vj[d];
    }
}

static void decode_end(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int row,
                       const decode_state *st) {
    float *out = t->out.p + b * t->out.sb + row * t->out.st + (long)h * st->D;
    for (int d = 0; d < st->D; d++) out[d] = st->acc[d] / st->run_sum;
    t->lse[((long)b * s->H + h) * s->T + row] = st->run_max + logf(st->run_sum);
}

/* One query row t of head h in batch b, keys, values and r read from the views. */
static void decode_row(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int row) {
    decode_state st;
    decode_begin(s, t, b, h, row, &st);
    const int D = s->D, M = s->M;
    const long hd = (long)h * D, HD = (long)s->H * D;
    float score[LC_DECODE_CHUNK];
    for (int k0 = st.lo; k0 <= st.hi; k0 += LC_DECODE_CHUNK) { /* scores of a chunk, then one rescale */
        const int n = st.hi - k0 + 1 < LC_DECODE_CHUNK ? st.hi - k0 + 1 : LC_DECODE_CHUNK;
        for (int j = 0; j < n; j++) {
            const int key = k0 + j;
            float sc = dot(st.qu, t->k.p + b * t->k.sb + key * t->k.st + hd, D);
            if (t->rel) sc += dot(st.qv, t->rel->r + (long)(M + row - key) * HD + hd, D);
            score[j] = sc * s->scale;
        }
        decode_chunk(&st, score, n, t->v.p + b * t->v.sb + k0 * t->v.st + hd, t->v.st);
    }
    decode_end(s, t, b, h, row, &st);
}

/* The same row from the caller's stores (attn.h lc_attn_store: keys and r as panels, values as rows per
 * head; the model's key/value cache): keys in chunks of DECODE_PANELS whole panels of the key store, each
 * chunk's content scores one panel product, its position scores one over the panels of r that its
 * distances fall in, and its values read as consecutive rows. The cache's interleaved rows lie 4 KB
 * apart per head at width 512, a page each: read one by one they are latency-bound; the stores stream. */
enum { DECODE_PANELS = 4, CHUNK_ROWS = DECODE_PANELS * LC_PANEL_ROWS };

static void decode_row_stores(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int row) {
    decode_state st;
    decode_begin(s, t, b, h, row, &st);
    const int D = s->D, M = s->M;
    const lc_attn_store *ks = &t->k_panels, *vs = &t->v_rows, *rs = t->rel ? &t->rel->r_panels : NULL;
    const float *kp = ks->p + b * ks->sb + h * ks->sh, *vp = vs->p + b * vs->sb + h * vs->sh + (long)vs->row0 * D;
    /* content scores of a chunk's store rows; position scores of its distances' panels (a chunk's 64
     * distances span at most DECODE_PANELS + 1 panels) */
    float score[CHUNK_ROWS], pos[(DECODE_PANELS + 1) * LC_PANEL_ROWS];
    const int first_panel = (ks->row0 + st.lo) / LC_PANEL_ROWS, end_panel = (ks->row0 + st.hi) / LC_PANEL_ROWS + 1;
    for (int p = first_panel; p < end_panel; p += DECODE_PANELS) {
        const int np = end_panel - p < DECODE_PANELS ? end_panel - p : DECODE_PANELS;
        const int key0 = p * LC_PANEL_ROWS - ks->row0; /* the key of the chunk's first store row */
        const int j0 = st.lo > key0 ? st.lo - key0 : 0;
        const int j1 = st.hi - key0 + 1 < np * LC_PANEL_ROWS ? st.hi - key0 + 1 : np * LC_PANEL_ROWS;
        lc_panel_gemm(1, np, D, s->scale, st.qu, D, kp + (size_t)p * LC_PANEL_ROWS * D, score, CHUNK_ROWS);
        if (rs) { /* distance of key key0 + j: M + row - key0 - j, over [far - (j1 - 1 - j0), far] */
            const int far = M + row - key0 - j0, near = far - (j1 - 1 - j0), rp = near / LC_PANEL_ROWS;
            const int rn = far / LC_PANEL_ROWS - rp + 1;
            lc_panel_gemm(1, rn, D, s->scale, st.qv, D, rs->p + h * rs->sh + (size_t)rp * LC_PANEL_ROWS * D, pos,
                          (long)sizeof pos / sizeof pos[0]);
            for (int j = j0; j < j1; j++) score[j] += pos[M + row - key0 - j - rp * LC_PANEL_ROWS];
        }
        decode_chunk(&st, score + j0, j1 - j0, vp + (long)(key0 + j0) * D, D);
    }
    decode_end(s, t, b, h, row, &st);
}

int lc_attn_full_decode(const lc_attn_shape *s, const lc_attn_tensors *t) {
    if (s->T > LC_DECODE_MAX_T || s->D > LC_DECODE_MAX_D) return 0;
    const long rows = (long)s->B * s->H * s->T;
    const int stores = t->k_panels.p && t->v_rows.p && (!t->rel || t->rel->r_panels.p);
#ifdef _OPENMP
#pragma omp parallel for num_threads(lc_attn_threads(s)) schedule(static) if (rows > 1)
#endif
    for (long i = 0; i < rows; i++) {
        int row = (int)(i % s->T), h = (int)(i / s->T % s->H), b = (int)(i / s->T / s->H);
        if (stores) decode_row_stores(s, t, b, h, row);
        else decode_row(s, t, b, h, row);
    }
    return 1;
}
