/* The `strided` attention kind (strided.h) on the progression engine of block.c: the keys of query
 * position p are its residue class p mod s (causal: those <= p), the queries of key j the positions of
 * its class in [M, S) (causal: those >= j). Rows run class by class (query_at / key_at), so the keys of
 * one class, S / s rows, are reused from cache by the T / s queries of that class. Long classes, and
 * every class with relative positions, run the full kind on strided views (below). */
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
    c.threads = s->threads;
    return c;
}

static int uses_tiles(const lc_attn_shape *s, int stride) {
    return longest_class(s, stride).T >= STRIDED_TILE_MIN_QUERIES;
}

/* The rows of a residue class in a view: row `row` of head h of batch row b, then every stride-th row; the
 * batch stride is kept, so with b = h = 0 and a class shape of all B and H it covers every batch row and head. */
static lc_view class_view(const lc_view *v, int b, int row, int h, int D, int stride) {
    lc_view c = {v->p + (long)b * v->sb + (long)row * v->st + (long)h * D, v->sb, v->st * stride};
    return c;
}

/* Residue class r (keys r, r + stride, ... of the S = M + T rows): its shape (longest with the class's M and
 * T), the segment row t0 of its first query, and its q, k, v, out, dout and their gradients as views of t's
 * (head h of batch row b; see class_view); lse and rel are left NULL for the caller. */
typedef struct {
    lc_attn_shape shape;
    int t0;
    lc_attn_tensors t;
} strided_class;

static strided_class class_of(const lc_attn_shape *s, const lc_attn_shape *longest, int stride, int r,
                              const lc_attn_tensors *t, int b, int h) {
    const int S = s->M + s->T, D = s->D;
    const int first_query = s->M + ((r - s->M) % stride + stride) % stride; /* position */
    strided_class c;
    memset(&c, 0, sizeof c);
    c.shape = *longest;
    c.shape.M = class_length(r, s->M, stride), c.shape.T = class_length(first_query, S, stride);
    const int t0 = c.t0 = first_query - s->M;
    lc_attn_tensors *ct = &c.t;
    ct->q = class_view(&t->q, b, t0, h, D, stride), ct->out = class_view(&t->out, b, t0, h, D, stride);
    ct->dout = class_view(&t->dout, b, t0, h, D, stride), ct->dq = class_view(&t->dq, b, t0, h, D, stride);
    ct->k = class_view(&t->k, b, r, h, D, stride), ct->v = class_view(&t->v, b, r, h, D, stride);
    ct->dk = class_view(&t->dk, b, r, h, D, stride), ct->dv = class_view(&t->dv, b, r, h, D, stride);
    return c;
}

/* ---------------------------------------------------------------- relative positions
 * Query i and key j of a class (positions first_query + i s and r + j s, M' class positions in the memory)
 * are (M' + i - j) s apart: the class is full attention with relative positions whose distance row d' is
 * r[d' s]. lc_attn_relpos has no row stride, so the rows r[0], r[s], r[2s], ... are gathered once into
 * the workspace, shared by every class. One full-kind call per class covers all batch rows and heads (its
 * backward runs one task per head); it writes the class's dr, du, dv into the workspace, and they are
 * added up class by class in a fixed order: deterministic for any thread count. dr rows at distances that
 * are not multiples of s stay 0. Short classes take the tiles too (the row engine has no positions). */

/* Workspace: [full kind for the longest class, all B and H][lse B*H*T'][r rows S' x HD][dr S' x HD]
 * [du, dv: HD each]. */
static lc_attn_shape longest_rel_class(const lc_attn_shape *s, int stride) {
    lc_attn_shape c = longest_class(s, stride);
    c.B = s->B, c.H = s->H, c.relpos = 1;
    return c;
}

static size_t strided_rel_workspace(const lc_attn_shape *s, int stride) {
    const lc_attn_shape c = longest_rel_class(s, stride);
    const size_t hd = (size_t)s->H * s->D, rows = (size_t)c.M + c.T;
    return lc_attn_full_workspace_tiled(&c) + (size_t)c.B * c.H * c.T + 2 * rows * hd + 2 * hd;
}

static void strided_rel_by_classes(const lc_attn_shape *s, int stride, const lc_attn_tensors *t, float *work,
                                   int backward) {
    const int S = s->M + s->T, HD = s->H * s->D;
    const lc_attn_relpos *rel = t->rel;
    const lc_attn_shape longest = longest_rel_class(s, stride);
    const int rows = longest.M + longest.T; /* >= every class's key count */
    float *class_lse = work + lc_attn_full_workspace_tiled(&longest);
    float *r_rows = class_lse + (size_t)longest.B * longest.H * longest.T, *dr_rows = r_rows + (size_t)rows * HD;
    float *du = dr_rows + (size_t)rows * HD, *dv = du + HD;
    if (backward) {
        memset(rel->dr, 0, sizeof(float) * (size_t)S * HD);
        memset(rel->du, 0, sizeof(float) * (size_t)HD);
        memset(rel->dv, 0, sizeof(float) * (size_t)HD);
    }
    if (s->B == 0 || s->H == 0) return;
    for (int d = 0; d < rows; d++) { /* class distance d is distance d s; rows past S - 1 are never read */
        if ((long)d * stride < S)
            memcpy(r_rows + (size_t)d * HD, rel->r + (size_t)d * stride * HD, sizeof(float) * (size_t)HD);
        else
            memset(r_rows + (size_t)d * HD, 0, sizeof(float) * (size_t)HD);
    }
    const lc_attn_relpos class_rel = {.r = r_rows, .u = rel->u, .v = rel->v, .dr = dr_rows, .du = du, .dv = dv};
    for (int r = 0; r < stride && r < S; r++) {
        strided_class cl = class_of(s, &longest, stride, r, t, 0, 0); /* every batch row and head at once */
        const lc_attn_shape c = cl.shape;
        const int t0 = cl.t0;
        lc_attn_tensors ct = cl.t;
        ct.lse = class_lse, ct.rel = &class_rel;
        for (int bh = 0; bh < s->B * s->H && backward; bh++) {
            const float *lse = t->lse + (size_t)bh * s->T + t0;
            for (int i = 0; i < c.T; i++) class_lse[(size_t)bh * c.T + i] = lse[(long)i * stride];
        }
        if (backward) {
            lc_attn_full_backward(&c, NULL, &ct, work);
            for (int d = 0; d < c.M + c.T; d++) {
                float *dst = rel->dr + (size_t)d * stride * HD;
                const float *src = dr_rows + (size_t)d * HD;
                for (int i = 0; i < HD; i++) dst[i] += src[i];
            }
            for (int i = 0; i < HD; i++) rel->du[i] += du[i], rel->dv[i] += dv[i];
        } else {
            lc_attn_full_forward_tiled(&c, &ct, work);
            for (int bh = 0; bh < s->B * s->H; bh++) {
                float *lse = t->lse + (size_t)bh * s->T + t0;
                for (int i = 0; i < c.T; i++) lse[(long)i * stride] = class_lse[(size_t)bh * c.T + i];
            }
        }
    }
}

/* Runs the full kind on every (batch, head, class); backward = 0: forward. */
static void strided_by_classes(const lc_attn_shape *s, int stride, const lc_attn_tensors *t, float *work,
                               int backward) {
    const int S = s->M + s->T;
    const lc_attn_shape longest = longest_class(s, stride);
    float *class_lse = work + lc_attn_full_workspace_tiled(&longest);
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int r = 0; r < stride && r < S; r++) {
                strided_class cl = class_of(s, &longest, stride, r, t, b, h);
                const lc_attn_shape c = cl.shape;
                lc_attn_tensors ct = cl.t;
                ct.lse = class_lse;
                float *lse = t->lse + ((size_t)b * s->H + h) * s->T + cl.t0;
                if (backward) {
                    for (int i = 0; i < c.T; i++) class_lse[i] = lse[(long)i * stride];
                    lc_attn_full_backward(&c, NULL, &ct, work);
                } else {
                    lc_attn_full_forward_tiled(&c, &ct, work);
                    for (int i = 0; i < c.T; i++) lse[(long)i * stride] = class_lse[i];
                }
            }
}

/* ---------------------------------------------------------------- the kind */

static size_t strided_plain_workspace(const lc_attn_shape *s, int stride) {
    if (!uses_tiles(s, stride)) return lc_attn_progression_workspace(s);
    const lc_attn_shape longest = longest_class(s, stride);
    return lc_attn_full_workspace_tiled(&longest) + (size_t)longest.T;
}

/* With shape.relpos the calls may still pass rel = NULL (plain passes), so the workspace covers both. */
static size_t strided_workspace(const lc_attn_shape *s, const void *opts) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const size_t plain = strided_plain_workspace(s, c.s);
    if (!s->relpos) return plain;
    const size_t rel = strided_rel_workspace(s, c.s);
    return rel > plain ? rel : plain;
}

/* Relative positions and long classes: residue classes through the full kind's tiles; short classes
 * (few keys each): the arithmetic-progression engine. */
static void strided_run(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work,
                        int backward) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const lc_attn_pattern pat = {strided_keys_of, strided_queries_of, strided_query_at, strided_key_at, &c};
    assert(s->window == 0 && (!t->rel || (s->causal && s->relpos)));
    if (t->rel)
        strided_rel_by_classes(s, c.s, t, work, backward);
    else if (uses_tiles(s, c.s))
        strided_by_classes(s, c.s, t, work, backward);
    else if (backward)
        lc_attn_progression_backward(s, &pat, t, work);
    else
        lc_attn_progression_forward(s, &pat, t, work);
}

static void strided_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    strided_run(s, opts, t, work, 0);
}

static void strided_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    strided_run(s, opts, t, work, 1);
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
    return 0;
}

const lc_attn_kind lc_attn_strided = {
    .name = "strided",
    .options_help = "s=<stride, default 64>",
    /* no same_length window: the stride decides what a query sees */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY | LC_ATTN_CAP_RELPOS |
            LC_ATTN_CAP_DECODE,
    .opts_size = sizeof(lc_attn_strided_opts),
    .opts_init = strided_opts_init,
    .opts_set = strided_opts_set,
    .check = strided_check,
    .workspace_floats = strided_workspace,
    .forward = strided_forward,
    .backward = strided_backward,
};
