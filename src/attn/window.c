/* The `window` attention kind (window.h): sliding window with per-head dilation, causal or bidirectional.
 *
 * A head with dilation d splits into d independent problems, one per residue class c = position mod d:
 * keys c, c + d, c + 2d, ... are a strided view (row stride d * st), the queries of the class see only keys
 * of the class, and within it the window is an undilated band of w keys on each side (causal: before the
 * query only). Each class is handed to the full kind's tiled kernels (online softmax, FlashAttention-2
 * backward: forward and backward tiled and vectorized, every row summed by one task in a fixed order)
 * with B = H = 1, memory M_c = the class's keys before M, and window W = w + 1 (the full kind's tiles
 * treat a window without causal as the band |query - key| <= W - 1); lse goes through a contiguous
 * scratch row. When no head is dilated the whole problem is one call of the full kind with window w + 1.
 * Relative positions (causal only): the full kind implements them, so an undilated problem just passes
 * tensors.rel on. In a class of dilation d, class distance j is distance j d: the class gets the rows
 * r[0], r[d], r[2d], ... of its head gathered into a contiguous H = 1 tensor (with the head's u and v),
 * and the dr, du, dv the full kind writes for the class go through a scratch and are added into the
 * head's rows (dr of distance j d), classes and batch rows in a fixed order.
 * Global tokens: window_global.c, after the band pass here. */
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


/* ---- the band: one full-kind problem per (batch, head, residue class) ---- */

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
    const lc_attn_shape sub = {1, 1, (int)(k.n - m), (int)m, s->D, s->causal, s->scale, w + 1, s->relpos};
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

/* Without dilation the whole problem is the full kind with window w + 1: one call. */
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
            const size_t need = lc_attn_full_workspace_tiled(&k.s);
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

/* Workspace of the band: the largest full-kind workspace over the classes, then T lse floats and the
 * relative-position scratch. */
static size_t band_workspace(const lc_attn_shape *s, const lc_attn_window_opts *o, int nthreads) {
    if (all_undilated(s, o)) {
        const lc_attn_shape u = undilated_shape(s, o);
        return lc_attn_full_workspace_tiled(&u);
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

static void band_pass(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *t,
                        float *work, int backward) {
    if (all_undilated(s, o)) {
        const lc_attn_shape u = undilated_shape(s, o);
        if (backward)
            lc_attn_full_backward(&u, NULL, t, work);
        else
            lc_attn_full_forward_tiled(&u, t, work);
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
                    lc_attn_full_forward_tiled(&k.s, &ct, work);
                    for (int i = 0; i < k.s.T; i++) row_lse[k.first_query + (long)i * d] = scratch[i];
                }
            }
        }
}

/* The band passes and the global-token passes run one after the other, so they share the workspace. */
size_t lc_attn_window_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    const size_t band = band_workspace(s, opts, nthreads);
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

/* The band (by residue classes through the full kind), then the global rows (window_global.c). */
static void window_run(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work, int backward) {
    check_args(s, opts, t);
    band_pass(s, opts, t, work, backward);
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
