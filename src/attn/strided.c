/* The `strided` attention kind (strided.h) on the progression engine of block.c: the keys of query
 * position p are its residue class p mod s (causal: those <= p), the queries of key j the positions of
 * its class in [M, S) (causal: those >= j). Rows run class by class (query_at / key_at), so the keys of
 * one class, S / s rows, are reused from cache by the T / s queries of that class. */
#include <assert.h>

#include "attn/attn.h"
#include "attn/block.h"
#include "attn/strided.h"

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

static size_t strided_workspace(const lc_attn_shape *s, const void *opts, int nthreads) {
    (void)opts;
    return lc_attn_progression_workspace(s, nthreads);
}

static void strided_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const lc_attn_pattern pat = {strided_keys_of, strided_queries_of, strided_query_at, strided_key_at, &c};
    lc_attn_progression_forward(s, &pat, t, work);
}

static void strided_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const strided_ctx c = strided_ctx_of(s, opts);
    const lc_attn_pattern pat = {strided_keys_of, strided_queries_of, strided_query_at, strided_key_at, &c};
    lc_attn_progression_backward(s, &pat, t, work);
}

const lc_attn_kind lc_attn_strided = {"strided", strided_workspace, strided_forward, strided_backward};
