/* The `compressed` attention kind (compressed.h): a raw local window plus average-pooled far keys.
 *
 * Workspace layout (floats): pooled keys Kbar and values Vbar, [B][H][nb][D] each (nb = ceil(S / s));
 * their gradients dKbar, dVbar (same size, backward only); Delta [B H T] (backward only); then one
 * scratch area per thread (a score row and the accumulators of 16 pooled blocks, 32 D-vectors).
 *
 * Forward, one parallel region:
 *   1. pooling, one task per (b, h, block): Kbar_j, Vbar_j = mean of the block's keys / values;
 *   2. one task per query row: scores of the visible pooled blocks and raw keys into the thread's score
 *      row, max, exp, sum, out = (sum_c P_c v_c) / sum, lse = max + log(sum).
 * Backward (deterministic: every output row is written by one task, no atomics), with
 * P = exp(scale q.k - lse) and dS = P (dout.v - Delta), Delta_t = dout_t . out_t, recomputed:
 *   1. pooling again (the workspace need not survive from forward) and Delta;
 *   2a. one task per query row:    dq_t = scale sum_c dS(t, c) k_c over its pooled and raw columns;
 *   2b. one task per group of 16 pooled blocks: dKbar_j = scale sum_t dS(t, j) q_t,
 *       dVbar_j = sum_t P(t, j) dout_t over the queries that see block j (each q, dout row read once per
 *       group);
 *   3. one task per key row s:     dk_s = scale sum_t dS(t, s) q_t + dKbar_j / n_j, and the same for dv,
 *       over the queries whose raw window holds s, with j = s / s and n_j the size of block j.
 * Dot products and axpys are vectorised over the head dimension (GCC vector extensions). */
#include "attn/compressed.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/vec.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

/* ---------------------------------------------------------------- options */

static void compressed_opts_init(void *opts, int H) {
    lc_attn_compressed_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->w = 64;
    o->s = 16;
    (void)H;
}

static int compressed_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_compressed_opts *o = opts;
    (void)H;
    if (strcmp(key, "w") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->w, err, errlen);
    if (strcmp(key, "s") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->s, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_compressed, key, err, errlen);
}

static int compressed_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                            size_t errlen) {
    const lc_attn_compressed_opts *o = opts;
    if (!o) return snprintf(err, errlen, "compressed: options missing"), -1;
    if (o->w < 1) return snprintf(err, errlen, "compressed: w=%d must be >= 1", o->w), -1;
    if (o->s < 1) return snprintf(err, errlen, "compressed: s=%d must be >= 1", o->s), -1;
    return 0;
}

const lc_attn_kind lc_attn_compressed = {
    .name = "compressed",
    .options_help = "w=<raw keys per side, default 64> s=<pooling stride, default 16>",
    /* same_length is the option w here */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY,
    .opts_size = sizeof(lc_attn_compressed_opts),
    .opts_init = compressed_opts_init,
    .opts_set = compressed_opts_set,
    .check = compressed_check,
    .workspace_floats = lc_attn_compressed_workspace,
    .forward = lc_attn_compressed_forward,
    .backward = lc_attn_compressed_backward,
};

/* ---------------------------------------------------------------- geometry */

typedef struct {
    int B, H, T, M, D, causal;
    long S, w, s, nb; /* keys, window, stride, pooled blocks */
    float scale;
    long max_cols;        /* columns of one query row at most */
    size_t pooled_floats; /* B H nb D */
    long groups;          /* groups of CMP_GROUP pooled blocks per head (backward tasks) */
    size_t thread_floats;
} cmp_geometry;

/* Pooled blocks per backward task of pass 2b. */
#define CMP_GROUP 16

static cmp_geometry geometry_of(const lc_attn_shape *s, const void *opts) {
    const lc_attn_compressed_opts *o = opts;
    assert(o && o->w >= 1 && o->s >= 1);
    cmp_geometry g;
    memset(&g, 0, sizeof g);
    g.B = s->B, g.H = s->H, g.T = s->T, g.M = s->M, g.D = s->D, g.causal = s->causal, g.scale = s->scale;
    g.S = (long)s->M + s->T, g.w = o->w, g.s = o->s;
    g.nb = (g.S + g.s - 1) / g.s;
    long raw = g.causal ? g.w + 1 : 2 * g.w + 1;
    if (raw > g.S) raw = g.S;
    g.max_cols = raw + g.nb;
    if (g.max_cols < 1) g.max_cols = 1;
    g.pooled_floats = lc_round16((size_t)g.B * g.H * (size_t)g.nb * g.D);
    g.groups = (g.nb + CMP_GROUP - 1) / CMP_GROUP;
    g.thread_floats = lc_round16((size_t)g.max_cols) + 2 * CMP_GROUP * lc_round16((size_t)g.D);
    return g;
}

/* The columns of the query at key position p: pooled blocks [0, left) and [right0, nb), raw keys [lo, hi]. */
typedef struct {
    long left, right0, lo, hi;
} cmp_cols;

static inline cmp_cols cols_of(const cmp_geometry *g, long p) {
    cmp_cols c;
    c.lo = p - g->w > 0 ? p - g->w : 0;
    c.hi = g->causal ? p : (p + g->w < g->S - 1 ? p + g->w : g->S - 1);
    c.left = p - g->w > 0 ? (p - g->w) / g->s : 0; /* (j+1) s <= p - w */
    if (g->causal) {
        c.right0 = g->nb;
    } else {
        const long r = (p + g->w) / g->s + 1; /* j s > p + w */
        c.right0 = r < g->nb ? r : g->nb;
    }
    return c;
}

static inline long block_size(const cmp_geometry *g, long j) {
    const long end = (j + 1) * g->s < g->S ? (j + 1) * g->s : g->S;
    return end - j * g->s;
}

typedef struct {
    float *kbar, *vbar, *dkbar, *dvbar, *delta, *threads;
} cmp_work;

static cmp_work work_of(const cmp_geometry *g, float *work) {
    cmp_work w;
    w.kbar = work;
    w.vbar = w.kbar + g->pooled_floats;
    w.dkbar = w.vbar + g->pooled_floats;
    w.dvbar = w.dkbar + g->pooled_floats;
    w.delta = w.dvbar + g->pooled_floats;
    w.threads = w.delta + lc_round16((size_t)g->B * g->H * g->T);
    return w;
}

size_t lc_attn_compressed_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    const cmp_geometry g = geometry_of(s, opts);
    return 4 * g.pooled_floats + lc_round16((size_t)g.B * g.H * g.T) + (size_t)nthreads * g.thread_floats;
}

static void check_args(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t) {
    const lc_attn_compressed_opts *o = opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(o && o->w >= 1 && o->s >= 1);
    assert(s->window == 0 && !s->relpos);
    assert(t->rel == NULL && t->global == NULL);
    (void)o, (void)t, (void)s;
}

/* Pooled key and value of block j of head (b, h). */
static void pool_block(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, int b, int h, long j) {
    const int D = g->D;
    const size_t at = (((size_t)b * g->H + h) * g->nb + j) * D;
    float *kb = w->kbar + at, *vb = w->vbar + at;
    memset(kb, 0, sizeof(float) * (size_t)D);
    memset(vb, 0, sizeof(float) * (size_t)D);
    const long n = block_size(g, j);
    for (long r = j * g->s; r < j * g->s + n; r++) {
        lc_vaxpy(kb, 1.0f, lc_view_row(&t->k, b, r, h, D), D);
        lc_vaxpy(vb, 1.0f, lc_view_row(&t->v, b, r, h, D), D);
    }
    const float inv = 1.0f / (float)n;
    for (int e = 0; e < D; e++) kb[e] *= inv, vb[e] *= inv;
}

/* ---------------------------------------------------------------- forward */

static void forward_row(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, int b, int h, int row,
                        float *scratch) {
    const int D = g->D;
    const long p = (long)g->M + row;
    const cmp_cols c = cols_of(g, p);
    const float *kb = w->kbar + ((size_t)b * g->H + h) * g->nb * D, *vb = w->vbar + ((size_t)b * g->H + h) * g->nb * D;
    const float *q = lc_view_row(&t->q, b, row, h, D);
    float *scores = scratch, *acc = scratch + lc_round16((size_t)g->max_cols);
    long n = 0;
    float max = -INFINITY;
    for (long j = 0; j < c.left; j++) {
        const float sc = g->scale * lc_vdot(q, kb + j * D, D);
        scores[n++] = sc;
        max = sc > max ? sc : max;
    }
    for (long j = c.right0; j < g->nb; j++) {
        const float sc = g->scale * lc_vdot(q, kb + j * D, D);
        scores[n++] = sc;
        max = sc > max ? sc : max;
    }
    for (long k = c.lo; k <= c.hi; k++) {
        const float sc = g->scale * lc_vdot(q, lc_view_row(&t->k, b, k, h, D), D);
        scores[n++] = sc;
        max = sc > max ? sc : max;
    }
    for (long i = 0; i < n; i++) scores[i] = lc_expf(scores[i] - max);
    float sum = 0;
    for (long i = 0; i < n; i++) sum += scores[i];
    memset(acc, 0, sizeof(float) * (size_t)D);
    n = 0;
    for (long j = 0; j < c.left; j++) lc_vaxpy(acc, scores[n++], vb + j * D, D);
    for (long j = c.right0; j < g->nb; j++) lc_vaxpy(acc, scores[n++], vb + j * D, D);
    for (long k = c.lo; k <= c.hi; k++) lc_vaxpy(acc, scores[n++], lc_view_row(&t->v, b, k, h, D), D);
    float *out = lc_view_row(&t->out, b, row, h, D);
    const float inv = 1.0f / sum; /* every query sees itself */
    for (int e = 0; e < D; e++) out[e] = acc[e] * inv;
    t->lse[((long)b * g->H + h) * g->T + row] = max + logf(sum);
}

/* Inside the parallel region of a pass: the pooled keys and values of every block, shared among the team,
 * with no barrier at the end (the pass waits where it needs them). */
static void pool_blocks(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w) {
    const long blocks = (long)g->B * g->H * g->nb;
#ifdef _OPENMP
#pragma omp for schedule(static) nowait
#endif
    for (long i = 0; i < blocks; i++) pool_block(g, t, w, (int)(i / g->nb / g->H), (int)(i / g->nb % g->H), i % g->nb);
}

typedef void cmp_pass_fn(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, float *scratch);

/* Both passes: one parallel region in which every thread, with its scratch, pools the blocks and then runs
 * pass (whose worksharing loops divide the rows among the team). Inlined, so the call of pass is direct. */
static inline __attribute__((always_inline)) void run_pass(const lc_attn_shape *s, const void *opts,
                                                           const lc_attn_tensors *t, float *work, cmp_pass_fn *pass) {
    check_args(s, opts, t);
    const cmp_geometry g = geometry_of(s, opts);
    const cmp_work w = work_of(&g, work);
    const int nthreads = lc_attn_threads(s);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        float *scratch = w.threads + (size_t)lc_thread_id() * g.thread_floats;
        pool_blocks(&g, t, &w);
        pass(&g, t, &w, scratch);
    }
}

static void forward_pass(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, float *scratch) {
    const long rows = (long)g->B * g->H * g->T;
#ifdef _OPENMP
#pragma omp barrier /* the pooled keys and values are complete */
#pragma omp for schedule(dynamic, 16)
#endif
    for (long i = 0; i < rows; i++)
        forward_row(g, t, w, (int)(i / g->T / g->H), (int)(i / g->T % g->H), (int)(i % g->T), scratch);
}

void lc_attn_compressed_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    if ((long)s->B * s->H * s->T == 0) return;
    run_pass(s, opts, t, work, forward_pass);
}

/* ---------------------------------------------------------------- backward */

/* pass 2a: dq of one query row */
static void dq_row(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, int b, int h, int row,
                   float *acc) {
    const int D = g->D;
    const long p = (long)g->M + row, r = ((long)b * g->H + h) * g->T + row;
    const cmp_cols c = cols_of(g, p);
    const float *kb = w->kbar + ((size_t)b * g->H + h) * g->nb * D, *vb = w->vbar + ((size_t)b * g->H + h) * g->nb * D;
    const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
    const float lse = t->lse[r], dl = w->delta[r];
    memset(acc, 0, sizeof(float) * (size_t)D);
    for (int side = 0; side < 2; side++) {
        const long j0 = side ? c.right0 : 0, j1 = side ? g->nb : c.left;
        for (long j = j0; j < j1; j++) {
            const float *kr = kb + j * D;
            const float prob = lc_expf(g->scale * lc_vdot(q, kr, D) - lse);
            lc_vaxpy(acc, prob * (lc_vdot(dout, vb + j * D, D) - dl), kr, D);
        }
    }
    for (long k = c.lo; k <= c.hi; k++) {
        const float *kr = lc_view_row(&t->k, b, k, h, D);
        const float prob = lc_expf(g->scale * lc_vdot(q, kr, D) - lse);
        lc_vaxpy(acc, prob * (lc_vdot(dout, lc_view_row(&t->v, b, k, h, D), D) - dl), kr, D);
    }
    float *dq = lc_view_row(&t->dq, b, row, h, D);
    for (int e = 0; e < D; e++) dq[e] = g->scale * acc[e];
}

/* pass 2b: dKbar, dVbar of the pooled blocks [j0, j1) of one head, zero for blocks no query sees. The
 * task walks the queries that see any block of the group once, in increasing order, so each q and dout
 * row is read once per group rather than once per block. */
static void dpooled_group(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, int b, int h, long j0,
                          long j1, float *acc_k, float *acc_v) {
    const int D = g->D;
    const size_t head = ((size_t)b * g->H + h) * g->nb, dstride = lc_round16((size_t)D);
    const float *kb = w->kbar + head * D, *vb = w->vbar + head * D;
    const long r0 = ((long)b * g->H + h) * g->T, last = g->S - 1;
    memset(acc_k, 0, sizeof(float) * dstride * (size_t)(j1 - j0));
    memset(acc_v, 0, sizeof(float) * dstride * (size_t)(j1 - j0));
    /* block j is seen by the queries p >= (j+1) s + w (it ends before their window) and, bidirectional,
     * p <= j s - w - 1 (it starts after it): the group by p >= pa or p <= pb */
    const long pa = (j0 + 1) * g->s + g->w, pb = g->causal ? g->M - 1 : (j1 - 1) * g->s - g->w - 1;
    long ranges[2][2] = {{g->M, pb}, {pa, last}};
    if (pb >= pa - 1) ranges[0][1] = g->M - 1, ranges[1][0] = g->M; /* the two ranges meet: every query */
    for (int k = 0; k < 2; k++) {
        const long p0 = ranges[k][0] > g->M ? ranges[k][0] : g->M, p1 = ranges[k][1] < last ? ranges[k][1] : last;
        for (long p = p0; p <= p1; p++) {
            const long row = p - g->M;
            const cmp_cols c = cols_of(g, p);
            const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
            const float lse = t->lse[r0 + row], dl = w->delta[r0 + row];
            for (int side = 0; side < 2; side++) {
                long a = side ? c.right0 : 0, e = side ? g->nb : c.left;
                a = a > j0 ? a : j0, e = e < j1 ? e : j1;
                for (long j = a; j < e; j++) {
                    const float prob = lc_expf(g->scale * lc_vdot(q, kb + j * D, D) - lse);
                    const float ds = prob * (lc_vdot(dout, vb + j * D, D) - dl);
                    lc_vaxpy(acc_v + (j - j0) * dstride, prob, dout, D);
                    lc_vaxpy(acc_k + (j - j0) * dstride, ds, q, D);
                }
            }
        }
    }
    for (long j = j0; j < j1; j++) {
        float *dk = w->dkbar + (head + j) * D, *dv = w->dvbar + (head + j) * D;
        const float *ak = acc_k + (j - j0) * dstride, *av = acc_v + (j - j0) * dstride;
        for (int e = 0; e < D; e++) dk[e] = g->scale * ak[e], dv[e] = av[e];
    }
}

/* pass 3: dk, dv of key row `key` (every S row is written) */
static void dkv_row(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, int b, int h, long key,
                    float *acc_k, float *acc_v) {
    const int D = g->D;
    const float *kr = lc_view_row(&t->k, b, key, h, D), *vr = lc_view_row(&t->v, b, key, h, D);
    const long r0 = ((long)b * g->H + h) * g->T, last = g->S - 1;
    memset(acc_k, 0, sizeof(float) * (size_t)D);
    memset(acc_v, 0, sizeof(float) * (size_t)D);
    /* queries whose raw window holds the key: p - w <= key <= p (causal) or |p - key| <= w */
    long p0 = g->causal ? key : key - g->w, p1 = key + g->w;
    p0 = p0 > g->M ? p0 : g->M;
    p1 = p1 < last ? p1 : last;
    for (long p = p0; p <= p1; p++) {
        const long row = p - g->M;
        const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
        const float prob = lc_expf(g->scale * lc_vdot(q, kr, D) - t->lse[r0 + row]);
        const float ds = prob * (lc_vdot(dout, vr, D) - w->delta[r0 + row]);
        lc_vaxpy(acc_v, prob, dout, D);
        lc_vaxpy(acc_k, ds, q, D);
    }
    const long j = key / g->s;
    const size_t at = (((size_t)b * g->H + h) * g->nb + j) * D;
    const float inv = 1.0f / (float)block_size(g, j);
    const float *dkb = w->dkbar + at, *dvb = w->dvbar + at;
    float *dk = lc_view_row(&t->dk, b, key, h, D), *dv = lc_view_row(&t->dv, b, key, h, D);
    for (int e = 0; e < D; e++) dk[e] = g->scale * acc_k[e] + inv * dkb[e], dv[e] = acc_v[e] + inv * dvb[e];
}

static void backward_pass(const cmp_geometry *g, const lc_attn_tensors *t, const cmp_work *w, float *scratch) {
    const long rows = (long)g->B * g->H * g->T, keys = (long)g->B * g->H * g->S;
    const long groups = (long)g->B * g->H * g->groups;
    float *acc_a = scratch + lc_round16((size_t)g->max_cols), *acc_b = acc_a + CMP_GROUP * lc_round16((size_t)g->D);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (long i = 0; i < rows; i++) {
        const int row = (int)(i % g->T), h = (int)(i / g->T % g->H), b = (int)(i / g->T / g->H);
        const float *dout = lc_view_row(&t->dout, b, row, h, g->D), *out = lc_view_row(&t->out, b, row, h, g->D);
        double sum = 0;
        for (int e = 0; e < g->D; e++) sum += (double)dout[e] * out[e];
        w->delta[i] = (float)sum;
    }
    /* implicit barrier: pooled keys/values and Delta are complete */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16) nowait
#endif
    for (long i = 0; i < rows; i++)
        dq_row(g, t, w, (int)(i / g->T / g->H), (int)(i / g->T % g->H), (int)(i % g->T), acc_a);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (long i = 0; i < groups; i++) {
        const long j0 = i % g->groups * CMP_GROUP, j1 = j0 + CMP_GROUP < g->nb ? j0 + CMP_GROUP : g->nb;
        dpooled_group(g, t, w, (int)(i / g->groups / g->H), (int)(i / g->groups % g->H), j0, j1, acc_a, acc_b);
    }
    /* implicit barrier: dKbar, dVbar are complete */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
    for (long i = 0; i < keys; i++)
        dkv_row(g, t, w, (int)(i / g->S / g->H), (int)(i / g->S % g->H), i % g->S, acc_a, acc_b);
}

void lc_attn_compressed_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    run_pass(s, opts, t, work, backward_pass);
}
