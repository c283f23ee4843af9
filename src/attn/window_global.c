/* Global tokens (Longformer) for the `window` kind (window.h has the semantics). The band passes of
 * window.c run first, unchanged, over every row; this file then adds what the global tokens change.
 *
 * Forward, one task per query row:
 *  - an ordinary row (not global) also sees the global keys that are not already in its band (causal: only
 *    those at or before it), scored with the ordinary q and k: one more partial softmax over those few
 *    columns (chunks of 64, online max), merged with the band's result by log-sum-exp:
 *      lse = log(e^lse_band + sum_g e^s_g),  out = (e^lse_band out_band + sum_g e^s_g v_g) / e^lse;
 *  - a global row is recomputed from scratch with qg against kg, vg over all S keys (causal: up to itself),
 *    streamed in chunks of 64 keys; it overwrites out, its log-sum-exp goes to global->lse, and lse[] of the
 *    row is set to +inf, so that the band backward sees probability exp(score - inf) = 0 for that row.
 * Backward (FlashAttention style: only the merged out and lse are needed, and the band part's gradient is
 * the band kernels' own backward run on them): the band backward of window.c runs first and writes dq, dk,
 * dv (global rows contribute nothing: their P is 0, so their dq is 0). Then 2 B H tasks, each owning its
 * output rows and summing in a fixed order (no atomics, the same bits for any thread count):
 *  - (b, h) columns: for each ordinary row t and each extra global column g of it, P = exp(s - lse_t),
 *    dS = P (dout_t . v_g - Delta_t):  dq_t += scale dS k_g,  dk_g += scale dS q_t,  dv_g += P dout_t;
 *  - (b, h) rows: dkg, dvg (all S rows) zeroed, then per global row i (P, dS as usual with its own lse):
 *    dqg_i = scale sum_s dS k_s,  dkg_s += scale dS qg_i,  dvg_s += P dout_i;  dqg of ordinary rows = 0.
 * Only the listed positions < T are global in a call (Longformer: a short sequence lacks the others);
 * forward and backward cut the list the same way, so global->lse is indexed by the cut count.
 * Cost O(B H (n S + T n) D) on top of the band; no T x S matrix; workspace O(threads (64 + D)). */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "attn/full_tile.h"
#include "attn/window.h"
#include "attn/vec.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

enum { GLOB_CHUNK = 64 };


/* One thread's floats: GLOB_CHUNK scores and an accumulator of D. */
static size_t slot_floats(int D) { return GLOB_CHUNK + lc_round16((size_t)D); }

size_t lc_attn_window_global_workspace(const lc_attn_shape *s) {
    return 16 + (size_t)lc_attn_threads(s) * slot_floats(s->D);
}

/* dout . out summed in double, as the band backward does */
static inline float row_delta(const float *dout, const float *out, int D) {
    double sum = 0;
    for (int e = 0; e < D; e++) sum += (double)dout[e] * out[e];
    return (float)sum;
}

/* Index i with pos[i] == row, or -1 (pos is sorted). */
static int global_index(const lc_attn_global *g, int row) {
    int lo = 0, hi = g->n - 1;
    while (lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        if (g->pos[mid] == row) return mid;
        if (g->pos[mid] < row)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Whether the band of the query at key position p (dilation d, w keys per side) holds key position `key`:
 * causal p - k d for k = 0..w, bidirectional p + k d for k = -w..w (window.h). */
static inline int in_band(long p, long key, long d, long w, int causal) {
    const long diff = p - key;
    if (causal && diff < 0) return 0;
    const long a = diff < 0 ? -diff : diff;
    return a % d == 0 && a / d <= w;
}

/* The ordinary row's extra columns are the global keys M + pos[i] it sees (causal: at or before p) that its
 * band does not already hold. Returns the first such i >= i0 (increasing key order), or G->n. */
static inline int next_extra(const lc_attn_global *G, int i0, long M, long p, long d, long w, int causal) {
    for (int i = i0; i < G->n; i++) {
        const long key = M + G->pos[i];
        if (causal && key > p) return G->n;
        if (!in_band(p, key, d, w, causal)) return i;
    }
    return G->n;
}

/* Adds keys[0..n) (rows of k, v) to the running softmax (max, sum, acc = sum e^(s - max) v) of query q. */
static void stream_keys(const float *q, const lc_view *k, const lc_view *v, int b, int h, int D, float scale,
                        const long *keys, int n, float *scores, float *acc, float *run_max, float *run_sum) {
    float m = -INFINITY;
    for (int j = 0; j < n; j++) {
        scores[j] = scale * lc_vdot(q, lc_view_row(k, b, keys[j], h, D), D);
        m = scores[j] > m ? scores[j] : m;
    }
    if (m > *run_max) { /* rescale what was summed under the old maximum (none at first: factor 0) */
        const float c = *run_max == -INFINITY ? 0.0f : lc_expf(*run_max - m);
        *run_sum *= c;
        for (int e = 0; e < D; e++) acc[e] *= c;
        *run_max = m;
    }
    for (int j = 0; j < n; j++) {
        const float p = lc_expf(scores[j] - *run_max);
        *run_sum += p;
        lc_vaxpy(acc, p, lc_view_row(v, b, keys[j], h, D), D);
    }
}

typedef struct {
    int B, H, T, M, S, D, causal, w;
    float scale;
    const lc_attn_window_opts *o;
    int nthreads; /* of the call, lc_attn_threads */
    size_t slot;  /* floats of one thread's scratch */
} glob_geometry;

static glob_geometry geometry_of(const lc_attn_shape *s, const lc_attn_window_opts *o) {
    const glob_geometry g = {s->B, s->H, s->T, s->M, s->M + s->T, s->D, s->causal, o->w, s->scale, o,
                             lc_attn_threads(s), slot_floats(s->D)};
    return g;
}

/* The calling thread's scratch slot in work (after the 16-float header). */
static float *thread_slot(const glob_geometry *g, float *work) { return work + 16 + (size_t)lc_thread_id() * g->slot; }

/* An ordinary row: merges the extra global columns into the band's out and lse. */
static void ordinary_forward(const glob_geometry *g, const lc_attn_tensors *t, int b, int h, int row, float *slot) {
    const lc_attn_global *G = t->global;
    const int D = g->D;
    const long p = (long)g->M + row, d = lc_attn_window_dilation(g->o, h);
    float *scores = slot, *acc = slot + GLOB_CHUNK;
    float run_max = -INFINITY, run_sum = 0;
    memset(acc, 0, sizeof(float) * (size_t)D);
    const float *q = lc_view_row(&t->q, b, row, h, D);
    long keys[GLOB_CHUNK];
    int n = 0;
    for (int i = next_extra(G, 0, g->M, p, d, g->w, g->causal); i < G->n;
         i = next_extra(G, i + 1, g->M, p, d, g->w, g->causal)) {
        keys[n++] = (long)g->M + G->pos[i];
        if (n == GLOB_CHUNK) {
            stream_keys(q, &t->k, &t->v, b, h, D, g->scale, keys, n, scores, acc, &run_max, &run_sum);
            n = 0;
        }
    }
    if (n) stream_keys(q, &t->k, &t->v, b, h, D, g->scale, keys, n, scores, acc, &run_max, &run_sum);
    if (run_sum == 0) return; /* no extra column: the band's result stands */
    float *lse = t->lse + ((long)b * g->H + h) * g->T + row, *out = lc_view_row(&t->out, b, row, h, D);
    const float band = *lse, top = band > run_max ? band : run_max;
    const float w_band = lc_expf(band - top), w_glob = lc_expf(run_max - top);
    const float total = w_band + w_glob * run_sum, inv = 1.0f / total;
    for (int e = 0; e < D; e++) out[e] = (w_band * out[e] + w_glob * acc[e]) * inv;
    *lse = top + logf(total);
}

/* Global row i (query position pos[i]): qg against kg, vg over keys 0 .. M + pos (causal) or all S. */
static void global_forward(const glob_geometry *g, const lc_attn_tensors *t, int b, int h, int i, float *slot) {
    const lc_attn_global *G = t->global;
    const int D = g->D, row = G->pos[i];
    const long last = g->causal ? (long)g->M + row : g->S - 1;
    float *scores = slot, *acc = slot + GLOB_CHUNK;
    float run_max = -INFINITY, run_sum = 0;
    memset(acc, 0, sizeof(float) * (size_t)D);
    const float *q = lc_view_row(&G->qg, b, row, h, D);
    long keys[GLOB_CHUNK];
    for (long k0 = 0; k0 <= last; k0 += GLOB_CHUNK) {
        const int n = (int)(last - k0 + 1 < GLOB_CHUNK ? last - k0 + 1 : GLOB_CHUNK);
        for (int j = 0; j < n; j++) keys[j] = k0 + j;
        stream_keys(q, &G->kg, &G->vg, b, h, D, g->scale, keys, n, scores, acc, &run_max, &run_sum);
    }
    float *out = lc_view_row(&t->out, b, row, h, D);
    const float inv = 1.0f / run_sum; /* the row sees itself */
    for (int e = 0; e < D; e++) out[e] = acc[e] * inv;
    G->lse[((long)b * g->H + h) * G->n + i] = run_max + logf(run_sum);
    t->lse[((long)b * g->H + h) * g->T + row] = INFINITY; /* the band backward skips the row */
}

/* The global tokens of this call (Longformer): the listed positions that exist in the T rows. The
 * tensors are copied with global pointing at the cut list, so every pass sees only existing positions
 * and indexes global->lse by the cut count. */
static lc_attn_tensors existing_globals(const lc_attn_shape *s, const lc_attn_tensors *t, lc_attn_global *cut) {
    *cut = *t->global;
    assert(cut->n >= 0 && (cut->n == 0 || cut->pos));
    cut->n = lc_attn_global_count(cut, s->T);
    for (int i = 0; i < cut->n; i++) assert(cut->pos[i] >= 0 && (i == 0 || cut->pos[i] > cut->pos[i - 1]));
    assert(!cut->n || cut->lse);
    lc_attn_tensors r = *t;
    r.global = cut;
    return r;
}

void lc_attn_window_global_forward(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *all,
                                   float *work) {
    lc_attn_global cut;
    const lc_attn_tensors cut_tensors = existing_globals(s, all, &cut), *t = &cut_tensors;
    const lc_attn_global *G = &cut;
    const glob_geometry g = geometry_of(s, o);
    const long rows = (long)g.B * g.H * g.T;
    if (G->n == 0 || rows == 0) return;
#ifdef _OPENMP
#pragma omp parallel for num_threads(g.nthreads) schedule(dynamic, 16)
#endif
    for (long r = 0; r < rows; r++) {
        const int row = (int)(r % g.T), h = (int)(r / g.T % g.H), b = (int)(r / g.T / g.H);
        float *mine = thread_slot(&g, work);
        const int i = global_index(G, row);
        if (i >= 0)
            global_forward(&g, t, b, h, i, mine);
        else
            ordinary_forward(&g, t, b, h, row, mine);
    }
}

/* One (query, key) pair of the backward from the query row's lse and delta = dout . out:
 * P = exp(scale q . k - lse), dS = P (dout . v - delta); acc += dS k (the query's dq / scale), dk += scale dS q,
 * dv += P dout. */
static inline void pair_backward(float scale, const float *q, const float *dout, float lse, float delta, const float *kr,
                                 const float *vr, float *acc, float *dk, float *dv, int D) {
    const float prob = lc_expf(scale * lc_vdot(q, kr, D) - lse);
    const float ds = prob * (lc_vdot(dout, vr, D) - delta);
    lc_vaxpy(acc, ds, kr, D);
    lc_vaxpy(dk, scale * ds, q, D);
    lc_vaxpy(dv, prob, dout, D);
}

/* Gradients through the extra global columns of every ordinary row of (b, h): adds to dq of those rows
 * and to dk, dv of the global keys. */
static void columns_backward(const glob_geometry *g, const lc_attn_tensors *t, int b, int h, float *acc) {
    const lc_attn_global *G = t->global;
    const int D = g->D;
    const long d = lc_attn_window_dilation(g->o, h), r0 = ((long)b * g->H + h) * g->T;
    int next_global = 0; /* rows walk up, so the next global row is found by a pointer into pos */
    for (int row = 0; row < g->T; row++) {
        if (next_global < G->n && G->pos[next_global] == row) {
            next_global++;
            continue;
        }
        const long p = (long)g->M + row;
        const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
        float lse = 0, delta = 0;
        int any = 0;
        for (int i = next_extra(G, 0, g->M, p, d, g->w, g->causal); i < G->n;
             i = next_extra(G, i + 1, g->M, p, d, g->w, g->causal)) {
            const long key = (long)g->M + G->pos[i];
            if (!any) {
                any = 1;
                lse = t->lse[r0 + row], delta = row_delta(dout, lc_view_row(&t->out, b, row, h, D), D);
                memset(acc, 0, sizeof(float) * (size_t)D);
            }
            pair_backward(g->scale, q, dout, lse, delta, lc_view_row(&t->k, b, key, h, D), lc_view_row(&t->v, b, key, h, D),
                          acc, lc_view_row(&t->dk, b, key, h, D), lc_view_row(&t->dv, b, key, h, D), D);
        }
        if (any) lc_vaxpy(lc_view_row(&t->dq, b, row, h, D), g->scale, acc, D);
    }
}

/* Gradients of the global rows of (b, h): dqg (zero on ordinary rows), dkg and dvg (all S rows). */
static void rows_backward(const glob_geometry *g, const lc_attn_tensors *t, int b, int h, float *acc) {
    const lc_attn_global *G = t->global;
    const int D = g->D;
    for (long s = 0; s < g->S; s++) {
        memset(lc_view_row(&G->dkg, b, s, h, D), 0, sizeof(float) * (size_t)D);
        memset(lc_view_row(&G->dvg, b, s, h, D), 0, sizeof(float) * (size_t)D);
    }
    for (int row = 0, i = 0; row < g->T; row++) {
        if (i < G->n && G->pos[i] == row) {
            i++;
            continue;
        }
        memset(lc_view_row(&G->dqg, b, row, h, D), 0, sizeof(float) * (size_t)D);
    }
    for (int i = 0; i < G->n; i++) {
        const int row = G->pos[i];
        const long last = g->causal ? (long)g->M + row : g->S - 1;
        const float *q = lc_view_row(&G->qg, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
        const float lse = G->lse[((long)b * g->H + h) * G->n + i];
        const float delta = row_delta(dout, lc_view_row(&t->out, b, row, h, D), D);
        memset(acc, 0, sizeof(float) * (size_t)D);
        for (long s = 0; s <= last; s++) {
            pair_backward(g->scale, q, dout, lse, delta, lc_view_row(&G->kg, b, s, h, D), lc_view_row(&G->vg, b, s, h, D),
                          acc, lc_view_row(&G->dkg, b, s, h, D), lc_view_row(&G->dvg, b, s, h, D), D);
        }
        float *dq = lc_view_row(&G->dqg, b, row, h, D);
        for (int e = 0; e < D; e++) dq[e] = g->scale * acc[e];
    }
}

void lc_attn_window_global_backward(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *all,
                                    float *work) {
    lc_attn_global cut;
    const lc_attn_tensors cut_tensors = existing_globals(s, all, &cut), *t = &cut_tensors;
    const glob_geometry g = geometry_of(s, o);
    const long heads = (long)g.B * g.H, tasks = 2 * heads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(g.nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        const long head = task % heads;
        const int b = (int)(head / g.H), h = (int)(head % g.H);
        float *acc = thread_slot(&g, work) + GLOB_CHUNK;
        if (task < heads) /* the row tasks first: they are the longer ones (n S against T n extra columns) */
            rows_backward(&g, t, b, h, acc);
        else
            columns_backward(&g, t, b, h, acc);
    }
}
