/* The `strided` attention kind (strided.h) on the progression engine of block.c: the keys of query
 * position p are its residue class p mod s (causal: those <= p), the queries of key j the positions of
 * its class in [M, S) (causal: those >= j). Rows run class by class (query_at / key_at), so the keys of
 * one class, S / s rows, are reused from cache by the T / s queries of that class. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/block.h"
#include "attn/strided.h"
#include "core/threads.h"

typedef struct {
    int s; /* stride */
    int M, T, S, causal;
} strided_ctx;

static lc_attn_progression strided_keys_of(const void *ctx, int t) {
    const strided_ctx *c = ctx;
    const int p = c->M + t, first = p % c->s;
    lc_attn_progression r = {first, c->s, (c->causal ? p - first : c->S - 1 - first) / c->s + 1};
    return r;
}

static lc_attn_progression strided_queries_of(const void *ctx, int j) {
    const strided_ctx *c = ctx;
    const int lo = c->causal && j > c->M ? j : c->M;
    const int first = lo + ((j - lo) % c->s + c->s) % c->s; /* the first position >= lo in j's class */
    lc_attn_progression r = {first - c->M, c->s, first < c->S ? (c->S - 1 - first) / c->s + 1 : 0};
    return r;
}

/* Index i of [0, n) in the order (class, position), classes mod s: rows c, c + s, c + 2s, ... */
static int class_order(int n, int s, int i) {
    const int per = n / s, rem = n % s; /* classes c < rem hold per + 1 rows, the others per */
    int c, k;
    if (i < rem * (per + 1)) {
        c = i / (per + 1), k = i % (per + 1);
    } else {
        const int j = i - rem * (per + 1);
        c = rem + j / per, k = j % per;
    }
    return c + k * s;
}

static int strided_query_at(const void *ctx, int i) {
    const strided_ctx *c = ctx;
    return class_order(c->T, c->s, i);
}

static int strided_key_at(const void *ctx, int i) {
    const strided_ctx *c = ctx;
    return class_order(c->S, c->s, i);
}

static strided_ctx strided_ctx_of(const lc_attn_shape *s, const void *opts) {
    const lc_attn_strided_opts *o = opts;
    assert(o && o->stride >= 1);
    strided_ctx c = {o->stride, s->M, s->T, s->M + s->T, s->causal != 0};
    return c;
}

/* ---------------------------------------------------------------- long classes: the full kind on views
 * With stride s the class of residue r is positions r, r + s, r + 2s, ...: its keys and queries are
 * rows s apart, i.e. strided views with row stride s * st, and the class is a dense attention with
 * M' = (class positions < M) memory rows and T' = (class positions >= M) queries, causal or not as the
 * pattern. When classes hold enough queries to fill the full kind's 64-query tiles, each class is one
 * call of the full kind on those views (its lse gathered through a T'-float buffer); otherwise the
 * row-streaming engine of block.c, which wastes nothing on short classes. */

enum { STRIDED_TILE_MIN_QUERIES = 32 }; /* class length from which the tiles beat rows */

static int class_length(int first, int end, int s) { return first < end ? (end - 1 - first) / s + 1 : 0; }

static lc_attn_shape longest_class(const lc_attn_shape *s, int stride) {
    lc_attn_shape c = {1, 1, class_length(0, s->T, stride), class_length(0, s->M, stride), s->D, s->causal,
                       s->scale, 0, 0};
    return c;
}

static int uses_tiles(const lc_attn_shape *s, int stride) {
    return longest_class(s, stride).T >= STRIDED_TILE_MIN_QUERIES;
}

static lc_view class_view(const lc_view *v, int b, int row, int h, int D, int stride) {
    lc_view c = {v->p + (long)b * v->sb + (long)row * v->st + (long)h * D, 0, v->st * stride};
    return c;
}

/* Runs the full kind on every (batch, head, class); backward = 0: forward. */
static void strided_by_classes(const lc_attn_shape *s, int stride, const lc_attn_tensors *t, float *work,
                               int backward) {
    const int S = s->M + s->T, D = s->D;
    const lc_attn_shape longest = longest_class(s, stride);
    float *class_lse = work + lc_attn_full_workspace(&longest, NULL, lc_get_threads());
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int r = 0; r < stride && r < S; r++) {
                const int first_query = s->M + ((r - s->M) % stride + stride) % stride; /* position */
                lc_attn_shape c = longest;
                c.M = class_length(r, s->M, stride), c.T = class_length(first_query, S, stride);
                const int t0 = first_query - s->M;
                lc_attn_tensors ct;
                ct.q = class_view(&t->q, b, t0, h, D, stride), ct.out = class_view(&t->out, b, t0, h, D, stride);
                ct.dout = class_view(&t->dout, b, t0, h, D, stride), ct.dq = class_view(&t->dq, b, t0, h, D, stride);
                ct.k = class_view(&t->k, b, r, h, D, stride), ct.v = class_view(&t->v, b, r, h, D, stride);
                ct.dk = class_view(&t->dk, b, r, h, D, stride), ct.dv = class_view(&t->dv, b, r, h, D, stride);
                ct.lse = class_lse, ct.rel = NULL;
                float *lse = t->lse + ((size_t)b * s->H + h) * s->T + t0;
                if (backward) {
                    for (int i = 0; i < c.T; i++) class_lse[i] = lse[(long)i * stride];
                    lc_attn_full_backward(&c, NULL, &ct, work);
                } else {
                    lc_attn_full_forward(&c, NULL, &ct, work);
                    for (int i = 0; i < c.T; i++) lse[(long)i * stride] = class_lse[i];
                }
            }
}

/* ---------------------------------------------------------------- the kind */

static size_t strided_workspace(const lc_attn_shape *s, const void *opts, int nthreads) {
    const strided_ctx c = strided_ctx_of(s, opts);
    if (!uses_tiles(s, c.s)) return lc_attn_progression_workspace(s, nthreads);
    const lc_attn_shape longest = longest_class(s, c.s);
    return lc_attn_full_workspace(&longest, NULL, nthreads) + (size_t)longest.T;
}

static void strided_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const lc_attn_pattern pat = {strided_keys_of, strided_queries_of, strided_query_at, strided_key_at, &c};
    assert(s->window == 0 && t->rel == NULL);
    if (uses_tiles(s, c.s))
        strided_by_classes(s, c.s, t, work, 0);
    else
        lc_attn_progression_forward(s, &pat, t, work);
}

static void strided_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const lc_attn_pattern pat = {strided_keys_of, strided_queries_of, strided_query_at, strided_key_at, &c};
    assert(s->window == 0 && t->rel == NULL);
    if (uses_tiles(s, c.s))
        strided_by_classes(s, c.s, t, work, 1);
    else
        lc_attn_progression_backward(s, &pat, t, work);
}

static void strided_opts_init(void *opts, int H) {
    ((lc_attn_strided_opts *)opts)->stride = 64;
    (void)H;
}

static int strided_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    (void)H;
    if (strcmp(key, "s") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &((lc_attn_strided_opts *)opts)->stride, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_strided, key, err, errlen);
}

static int strided_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                        size_t errlen) {
    if (((const lc_attn_strided_opts *)opts)->stride < 1) return snprintf(err, errlen, "strided: s must be >= 1"), -1;
    if (s->relpos || s->window)
        return snprintf(err, errlen, "strided: no relative positions or same_length (use --model vanilla)"), -1;
    if (global) return snprintf(err, errlen, "strided: global tokens are not supported"), -1;
    return 0;
}

const lc_attn_kind lc_attn_strided = {
    .name = "strided",
    .options_help = "s=<stride, default 64>",
    .opts_size = sizeof(lc_attn_strided_opts),
    .opts_init = strided_opts_init,
    .opts_set = strided_opts_set,
    .check = strided_check,
    .workspace_floats = strided_workspace,
    .forward = strided_forward,
    .backward = strided_backward,
};
