/* The `window` attention kind (window.h): sliding window with per-head dilation.
 *
 * Causal: a head with dilation d splits into d independent problems, one per residue class c = position
 * mod d: keys c, c + d, c + 2d, ... are a strided view (row stride d * st), the queries of the class see
 * only keys of the class, and within it the window is an undilated causal band of w + 1 keys. Each class
 * is handed to the full kind's tiled kernels (online softmax, FlashAttention-2 backward) with B = H = 1,
 * memory M_c = the class's keys before M, and window W = w + 1; lse goes through a contiguous scratch row.
 * When no head is dilated the whole problem is one call of the full kind with window w + 1.
 * Relative positions: the full kind implements them, so an undilated problem just passes tensors.rel on.
 * In a class of dilation d, class distance j is distance j d: the class gets the rows r[0], r[d], r[2d], ...
 * of its head gathered into a contiguous H = 1 tensor (with the head's u and v), and the dr, du, dv the
 * full kind writes for the class go through a scratch and are added into the head's rows (dr of distance
 * j d), classes and batch rows in a fixed order.
 * Global tokens: window_global.c, after the band passes here.
 *
 * Bidirectional (the full kind's window is causal only): each query row streams over its visible keys
 * p + k*d (at most 2w + 1): scores into a per-thread buffer, max, exp, sum, then out = P v / sum; lse saved. Products are
 * vectorized over the head dimension (GCC vector extensions). Rows are independent tasks with a fixed
 * summation order, so the results do not depend on the thread count.
 * Backward (deterministic, no atomics), with Delta_t = dout_t . out_t computed once:
 *   pass 1, one task per query row:  dq_t = scale sum_s dS(t,s) k_s
 *   pass 2, one task per key row:    dv_s = sum_t P(t,s) dout_t,  dk_s = scale sum_t dS(t,s) q_t
 * where the queries that see key s are at positions s + j*d (j = 0..w causal, -w..w bidirectional) and
 * P = exp(scale q.k - lse), dS = P (dout.v - Delta) are recomputed. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/window.h"
#include "attn/vec.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

static void window_opts_init(void *opts, int H) {
    lc_attn_window_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->w = 64;
    for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) o->dilation[h] = 1;
    (void)H;
}

/* dil=d applies to every head of the group; dil=d0/d1/... gives one per head (a list shorter than the
 * group repeats cyclically). */
static int window_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_window_opts *o = opts;
    if (strcmp(key, "w") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->w, err, errlen);
    if (strcmp(key, "dil") == 0) {
        int list[LC_ATTN_MAX_HEADS];
        const int n = lc_attn_opt_int_list(key, value, 1, 1 << 16, list, LC_ATTN_MAX_HEADS, err, errlen);
        if (n < 0) return -1;
        for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) o->dilation[h] = list[h % n];
        (void)H;
        return 0;
    }
    return lc_attn_opt_unknown(&lc_attn_window, key, err, errlen);
}

/* The options against the shape: w and the per-head dilation list's head count. Global tokens (any
 * memory M: global rows also see the memory keys; causal or not; any dilation) are in the caps. */
static int window_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                        size_t errlen) {
    const lc_attn_window_opts *o = opts;
    if (o->w < 1) return snprintf(err, errlen, "window: w=%d must be >= 1", o->w), -1;
    if (s->H > LC_ATTN_MAX_HEADS) return snprintf(err, errlen, "window: at most %d heads", LC_ATTN_MAX_HEADS), -1;
    return 0;
}

const lc_attn_kind lc_attn_window = {
    .name = "window",
    .options_help = "w=<keys per side, default 64> dil=<dilation, or d0/d1/... per head, default 1>",
    /* no same_length window: the option w is the band */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY | LC_ATTN_CAP_RELPOS |
            LC_ATTN_CAP_GLOBAL | LC_ATTN_CAP_DECODE,
    .opts_size = sizeof(lc_attn_window_opts),
    .opts_init = window_opts_init,
    .opts_set = window_opts_set,
    .check = window_check,
    .workspace_floats = lc_attn_window_workspace,
    .forward = lc_attn_window_forward,
    .backward = lc_attn_window_backward,
};


typedef struct {
    int B, H, T, M, S, D, causal, w;
    float scale;
    const int *dil;
    long max_keys;     /* visible keys per query at most */
    size_t thread_floats;
} win_geometry;

static win_geometry win_geometry_of(const lc_attn_shape *s, const void *opts) {
    const lc_attn_window_opts *o = opts;
    assert(o && o->w >= 1);
    win_geometry g = {s->B, s->H, s->T, s->M, s->M + s->T, s->D, s->causal, o->w, s->scale, o->dilation, 0, 0};
    long k = s->causal ? (long)o->w + 1 : 2L * o->w + 1;
    g.max_keys = k < g.S ? k : g.S;
    if (g.max_keys < 1) g.max_keys = 1;
    g.thread_floats = lc_round16((size_t)g.max_keys) + 2 * lc_round16((size_t)g.D);
    return g;
}

static inline int win_dilation(const win_geometry *g, int h) { return g->dil[h] > 0 ? g->dil[h] : 1; }

static inline long floordiv(long a, long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Range [*lo, *hi] of k such that position `p + k*d` is in [first, last] and k in [kmin, kmax]. */
static inline void k_range(long p, long d, long kmin, long kmax, long first, long last, long *lo, long *hi) {
    long a = -floordiv(p - first, d); /* smallest k with p + k d >= first: ceil((first - p) / d) */
    long b = floordiv(last - p, d);
    *lo = a > kmin ? a : kmin;
    *hi = b < kmax ? b : kmax;
}

/* ---- causal: one full-kind problem per (batch, head, residue class) ---- */

typedef struct {
    lc_attn_shape s; /* B = H = 1 */
    long first_key;  /* key position of the class's first row (c) */
    long first_query; /* query index t of the class's first query */
    int n;           /* rows: S_c */
} win_class;

static win_class class_of(const lc_attn_shape *s, int w, int d, int c) {
    const long S = (long)s->M + s->T;
    win_class k;
    memset(&k, 0, sizeof k);
    k.n = c < S ? (int)((S - c + d - 1) / d) : 0;
    long m = s->M > c ? (s->M - c + d - 1) / d : 0; /* class keys before M: the class's memory */
    if (m > k.n) m = k.n;
    const lc_attn_shape sub = {1, 1, (int)(k.n - m), (int)m, s->D, 1, s->scale, w + 1, s->relpos};
    k.s = sub;
    k.s.threads = s->threads;
    k.first_key = c;
    k.first_query = c + m * d - s->M;
    return k;
}

static lc_view class_view(const lc_view *v, int b, long first_row, int h, int D, int d) {
    lc_view r = {v->p + (long)b * v->sb + first_row * v->st + (long)h * D, 0, v->st * d};
    return r;
}

static lc_attn_tensors class_tensors(const lc_attn_tensors *t, const win_class *k, int b, int h, int D, int d,
                                     float *lse) {
    lc_attn_tensors r;
    memset(&r, 0, sizeof r);
    r.q = class_view(&t->q, b, k->first_query, h, D, d), r.out = class_view(&t->out, b, k->first_query, h, D, d);
    r.dout = class_view(&t->dout, b, k->first_query, h, D, d), r.dq = class_view(&t->dq, b, k->first_query, h, D, d);
    r.k = class_view(&t->k, b, k->first_key, h, D, d), r.v = class_view(&t->v, b, k->first_key, h, D, d);
    r.dk = class_view(&t->dk, b, k->first_key, h, D, d), r.dv = class_view(&t->dv, b, k->first_key, h, D, d);
    r.lse = lse;
    return r;
}

static int all_undilated(const lc_attn_shape *s, const lc_attn_window_opts *o) {
    for (int h = 0; h < s->H; h++)
        if (lc_attn_window_dilation(o, h) != 1) return 0;
    return 1;
}

/* Without dilation the whole causal problem is the full kind with window w + 1: one call. */
static lc_attn_shape undilated_shape(const lc_attn_shape *s, const lc_attn_window_opts *o) {
    lc_attn_shape r = *s;
    r.window = o->w + 1;
    return r;
}

/* The largest full-kind workspace over the classes of the dilated heads. */
static size_t class_workspace(const lc_attn_shape *s, const lc_attn_window_opts *o, int nthreads) {
    size_t most = 0;
    for (int h = 0; h < s->H; h++) {
        const int d = lc_attn_window_dilation(o, h);
        if (h > 0 && d == lc_attn_window_dilation(o, h - 1)) continue;
        for (int c = 0; c < d; c++) {
            const win_class k = class_of(s, o->w, d, c);
            const size_t need = lc_attn_full_workspace(&k.s, NULL);
            most = need > most ? need : most;
        }
    }
    return most;
}

/* Relative positions on the dilated path: per class, the rows of r at distances 0, d, 2d, ... of the head
 * (contiguous, so the class sees them as an H = 1 tensor), the class's dr, and its du, dv. */
static size_t rel_scratch(const lc_attn_shape *s) {
    return s->relpos ? 2 * lc_round16((size_t)(s->M + s->T) * s->D) + 2 * lc_round16((size_t)s->D) : 0;
}

/* Workspace of the causal path: the largest full-kind workspace over the classes, then T lse floats and
 * the relative-position scratch. */
static size_t causal_workspace(const lc_attn_shape *s, const lc_attn_window_opts *o, int nthreads) {
    if (all_undilated(s, o)) {
        const lc_attn_shape u = undilated_shape(s, o);
        return lc_attn_full_workspace(&u, NULL);
    }
    return class_workspace(s, o, nthreads) + lc_round16((size_t)s->T) + rel_scratch(s);
}

/* The classes' relative-position inputs: r_c[j] = r[j d] of head h (j < n), u and v of the head; gradients
 * into the scratch (the full kind writes them). */
static lc_attn_relpos class_rel(const lc_attn_relpos *rel, int H, int D, int h, int d, int n, float *scratch,
                                size_t S) {
    float *r = scratch, *dr = r + lc_round16(S * D), *du = dr + lc_round16(S * D), *dv = du + lc_round16((size_t)D);
    const long row = (long)H * D;
    for (int j = 0; j < n; j++) memcpy(r + (size_t)j * D, rel->r + (long)j * d * row + (long)h * D, sizeof(float) * D);
    lc_attn_relpos c = {r, rel->u + (long)h * D, rel->v + (long)h * D, dr, du, dv};
    return c;
}

/* Adds a class's dr, du, dv (c: as made by class_rel) into the head's rows (distance j of the class is
 * distance j d). */
static void add_class_rel_grads(const lc_attn_relpos *rel, const lc_attn_relpos *c, int H, int D, int h, int d,
                                int n) {
    const long row = (long)H * D;
    for (int j = 0; j < n; j++) {
        float *dst = rel->dr + (long)j * d * row + (long)h * D;
        const float *src = c->dr + (size_t)j * D;
        for (int e = 0; e < D; e++) dst[e] += src[e];
    }
    for (int e = 0; e < D; e++) rel->du[(long)h * D + e] += c->du[e], rel->dv[(long)h * D + e] += c->dv[e];
}

static void causal_pass(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *t,
                        float *work, int backward) {
    if (all_undilated(s, o)) {
        const lc_attn_shape u = undilated_shape(s, o);
        if (backward)
            lc_attn_full_backward(&u, NULL, t, work);
        else
            lc_attn_full_forward(&u, NULL, t, work);
        return;
    }
    const int nthreads = lc_attn_threads(s);
    const size_t full_floats = class_workspace(s, o, nthreads), S = (size_t)s->M + s->T;
    float *scratch = work + full_floats, *rel_work = scratch + lc_round16((size_t)s->T);
    const lc_attn_relpos *rel = t->rel;
    if (rel && backward) { /* every class adds its share; distances no class reaches stay 0 */
        memset(rel->dr, 0, sizeof(float) * S * s->H * s->D);
        memset(rel->du, 0, sizeof(float) * (size_t)s->H * s->D);
        memset(rel->dv, 0, sizeof(float) * (size_t)s->H * s->D);
    }
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++) {
            const int d = lc_attn_window_dilation(o, h);
            float *row_lse = t->lse + ((long)b * s->H + h) * s->T;
            for (int c = 0; c < d; c++) {
                const win_class k = class_of(s, o->w, d, c);
                if (k.n == 0) continue;
                lc_attn_tensors ct = class_tensors(t, &k, b, h, s->D, d, scratch);
                lc_attn_relpos crel;
                if (rel) {
                    crel = class_rel(rel, s->H, s->D, h, d, k.n, rel_work, S);
                    ct.rel = &crel;
                }
                if (backward) {
                    for (int i = 0; i < k.s.T; i++) scratch[i] = row_lse[k.first_query + (long)i * d];
                    lc_attn_full_backward(&k.s, NULL, &ct, work);
                    if (rel) add_class_rel_grads(rel, &crel, s->H, s->D, h, d, k.n);
                } else {
                    lc_attn_full_forward(&k.s, NULL, &ct, work);
                    for (int i = 0; i < k.s.T; i++) row_lse[k.first_query + (long)i * d] = scratch[i];
                }
            }
        }
}

/* The band passes and the global-token passes run one after the other, so they share the workspace. */
size_t lc_attn_window_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    size_t band;
    if (s->causal) {
        band = causal_workspace(s, opts, nthreads);
    } else {
        const win_geometry g = win_geometry_of(s, opts);
        band = 16 + (size_t)nthreads * g.thread_floats + (size_t)g.B * g.H * g.T;
    }
    const size_t global = lc_attn_window_global_workspace(s);
    return band > global ? band : global;
}

static void check_args(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t) {
    const lc_attn_window_opts *o = opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(o && o->w >= 1);
    assert(s->window == 0);
    assert(t->rel == NULL || (s->causal && s->relpos));
    assert(s->H <= LC_ATTN_MAX_HEADS);
    (void)o, (void)t, (void)s;
}

static void forward_row(const win_geometry *g, const lc_attn_tensors *t, int b, int h, int row, float *work) {
    const int D = g->D;
    const long d = win_dilation(g, h), p = (long)g->M + row;
    long lo, hi;
    k_range(p, d, -g->w, g->causal ? 0 : g->w, 0, g->S - 1, &lo, &hi);
    float *scores = work, *acc = work + lc_round16((size_t)g->max_keys);
    const float *q = lc_view_row(&t->q, b, row, h, D);
    float max = -INFINITY;
    for (long k = lo; k <= hi; k++) {
        const float sc = g->scale * lc_vdot(q, lc_view_row(&t->k, b, (int)(p + k * d), h, D), D);
        scores[k - lo] = sc;
        max = sc > max ? sc : max;
    }
    const int n = (int)(hi - lo + 1);
    float sum = 0;
    for (int j = 0; j < n; j++) scores[j] = lc_expf(scores[j] - max);
    for (int j = 0; j < n; j++) sum += scores[j];
    memset(acc, 0, sizeof(float) * (size_t)D);
    for (int j = 0; j < n; j++) lc_vaxpy(acc, scores[j], lc_view_row(&t->v, b, (int)(p + (lo + j) * d), h, D), D);
    float *out = lc_view_row(&t->out, b, row, h, D);
    const float inv = 1.0f / sum; /* every query sees itself */
    for (int e = 0; e < D; e++) out[e] = acc[e] * inv;
    t->lse[((long)b * g->H + h) * g->T + row] = max + logf(sum);
}

static void bidirectional_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const win_geometry g = win_geometry_of(s, opts);
    const long rows = (long)g.B * g.H * g.T;
    if (rows == 0) return;
    const int nthreads = lc_attn_threads(s);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static, 64)
#endif
    for (long i = 0; i < rows; i++) {
        const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
        forward_row(&g, t, b, h, row, work + 16 + (size_t)lc_thread_id() * g.thread_floats);
    }
}

/* pass 1: dq of one query row */
static void dq_row(const win_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h, int row,
                   float *acc) {
    const int D = g->D;
    const long d = win_dilation(g, h), p = (long)g->M + row, r = ((long)b * g->H + h) * g->T + row;
    long lo, hi;
    k_range(p, d, -g->w, g->causal ? 0 : g->w, 0, g->S - 1, &lo, &hi);
    const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
    const float lse = t->lse[r], dl = delta[r];
    memset(acc, 0, sizeof(float) * (size_t)D);
    for (long k = lo; k <= hi; k++) {
        const int key = (int)(p + k * d);
        const float *kr = lc_view_row(&t->k, b, key, h, D);
        const float prob = lc_expf(g->scale * lc_vdot(q, kr, D) - lse);
        const float ds = prob * (lc_vdot(dout, lc_view_row(&t->v, b, key, h, D), D) - dl);
        lc_vaxpy(acc, ds, kr, D);
    }
    float *dq = lc_view_row(&t->dq, b, row, h, D);
    for (int e = 0; e < D; e++) dq[e] = g->scale * acc[e];
}

/* pass 2: dk and dv of one key row (all S rows, zero when no query sees the key) */
static void dkv_row(const win_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h, int key,
                    float *acc_k, float *acc_v) {
    const int D = g->D;
    const long d = win_dilation(g, h);
    long lo, hi; /* query positions key + j d, j in [0, w] causal or [-w, w], within [M, S) */
    k_range(key, d, g->causal ? 0 : -g->w, g->w, g->M, g->S - 1, &lo, &hi);
    const float *kr = lc_view_row(&t->k, b, key, h, D), *vr = lc_view_row(&t->v, b, key, h, D);
    memset(acc_k, 0, sizeof(float) * (size_t)D);
    memset(acc_v, 0, sizeof(float) * (size_t)D);
    const long r0 = ((long)b * g->H + h) * g->T;
    for (long j = lo; j <= hi; j++) {
        const int row = (int)(key + j * d - g->M);
        const float *q = lc_view_row(&t->q, b, row, h, D), *dout = lc_view_row(&t->dout, b, row, h, D);
        const float prob = lc_expf(g->scale * lc_vdot(q, kr, D) - t->lse[r0 + row]);
        const float ds = prob * (lc_vdot(dout, vr, D) - delta[r0 + row]);
        lc_vaxpy(acc_v, prob, dout, D);
        lc_vaxpy(acc_k, ds, q, D);
    }
    float *dk = lc_view_row(&t->dk, b, key, h, D), *dv = lc_view_row(&t->dv, b, key, h, D);
    for (int e = 0; e < D; e++) dk[e] = g->scale * acc_k[e], dv[e] = acc_v[e];
}

static void bidirectional_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t,
                                   float *work) {
    const win_geometry g = win_geometry_of(s, opts);
    const int nthreads = lc_attn_threads(s);
    (void)nthreads;
    float *base = work + 16, *delta = base + (size_t)nthreads * g.thread_floats;
    const long rows = (long)g.B * g.H * g.T, keys = (long)g.B * g.H * g.S;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        float *mine = base + (size_t)lc_thread_id() * g.thread_floats;
        float *acc_a = mine + lc_round16((size_t)g.max_keys), *acc_b = acc_a + lc_round16((size_t)g.D);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long i = 0; i < rows; i++) {
            const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
            const float *dout = lc_view_row(&t->dout, b, row, h, g.D), *out = lc_view_row(&t->out, b, row, h, g.D);
            double sum = 0;
            for (int e = 0; e < g.D; e++) sum += (double)dout[e] * out[e];
            delta[i] = (float)sum;
        }
        /* the implicit barrier of omp for: delta is complete */
#ifdef _OPENMP
#pragma omp for schedule(static, 64)
#endif
        for (long i = 0; i < rows; i++) {
            const int row = (int)(i % g.T), h = (int)(i / g.T % g.H), b = (int)(i / g.T / g.H);
            dq_row(&g, t, delta, b, h, row, acc_a);
        }
#ifdef _OPENMP
#pragma omp for schedule(static, 64)
#endif
        for (long i = 0; i < keys; i++) {
            const int key = (int)(i % g.S), h = (int)(i / g.S % g.H), b = (int)(i / g.S / g.H);
            dkv_row(&g, t, delta, b, h, key, acc_a, acc_b);
        }
    }
}

/* The band (causal: by residue classes through the full kind; bidirectional: row by row), then the
 * global rows (window_global.c). */
static void window_run(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work, int backward) {
    check_args(s, opts, t);
    if (s->causal)
        causal_pass(s, opts, t, work, backward);
    else if (backward)
        bidirectional_backward(s, opts, t, work);
    else
        bidirectional_forward(s, opts, t, work);
    if (t->global && backward)
        lc_attn_window_global_backward(s, opts, t, work);
    else if (t->global)
        lc_attn_window_global_forward(s, opts, t, work);
}

void lc_attn_window_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    window_run(s, opts, t, work, 0);
}

void lc_attn_window_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    window_run(s, opts, t, work, 1);
}
