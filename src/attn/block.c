/* The `block` attention kind (64 x 64 tiles, bottom of this file), and the arithmetic-progression engine
 * (block.h) that strided uses for short residue classes. The engine works row by row, vectorized over D with 16-float GCC vectors:
 *   forward, one task per query row: stream its keys in chunks of 64 (scores, chunk max, one rescale of
 *     the accumulator, vector exp, out += p v), save lse;
 *   backward: Delta_t = rowsum(dout out); then a query pass (dq = scale sum_s dS_ts k_s) and a key pass
 *     (dv_s = sum_t P_ts dout_t, dk_s = scale sum_t dS_ts q_t), P recomputed from lse, dS = P (dP - Delta).
 * Every row is written by exactly one task that sums in a fixed order: bit-identical for any thread
 * count, no atomics. Tasks are runs of 64 rows in the pattern's order, handed out dynamically. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/block.h"
#include "attn/full_pass.h"
#include "core/threads.h"

enum { PROG_CHUNK = 64, PROG_TASK_ROWS = 64 };

/* ---------------------------------------------------------------- row kernels */

/* a . b over D floats, in a fixed order */
static inline float prog_dot(const float *a, const float *b, int D) {
    lc_v16 acc = {0};
    int d = 0;
    for (; d + 16 <= D; d += 16) acc += lc_vload(a + d) * lc_vload(b + d);
    float s = lc_hsum(acc);
    for (; d < D; d++) s += a[d] * b[d];
    return s;
}

static inline int prog_at(int (*order)(const void *, int), const void *ctx, int i) {
    return order ? order(ctx, i) : i;
}

/* One query row: out_t = softmax(scale q_t . k_s) v_s over its keys, online softmax; lse saved. */
static void forward_row(const lc_attn_shape *sh, const lc_attn_pattern *pat, const lc_attn_tensors *t, int b, int h,
                        int row, float *qs, float *acc) {
    const int D = sh->D;
    const float *q = lc_view_row(&t->q, b, row, h, D);
    for (int d = 0; d < D; d++) qs[d] = sh->scale * q[d], acc[d] = 0;
    const lc_attn_progression keys = pat->keys_of(pat->ctx, row);
    assert(keys.count > 0);
    float run_max = -INFINITY, run_sum = 0;
    float score[PROG_CHUNK] __attribute__((aligned(64)));
    for (int c0 = 0; c0 < keys.count; c0 += PROG_CHUNK) {
        const int n = lc_imin(PROG_CHUNK, keys.count - c0);
        const int key0 = keys.first + c0 * keys.step;
        float chunk_max = -INFINITY;
        for (int j = 0; j < n; j++) {
            score[j] = prog_dot(qs, lc_view_row(&t->k, b, key0 + j * keys.step, h, D), D);
            chunk_max = score[j] > chunk_max ? score[j] : chunk_max;
        }
        if (chunk_max > run_max) {
            const float correction = run_max == -INFINITY ? 0.0f : expf(run_max - chunk_max);
            run_sum *= correction;
            for (int d = 0; d < D; d++) acc[d] *= correction;
            run_max = chunk_max;
        }
        for (int j = n; j < lc_round_up(n, 16); j++) score[j] = -INFINITY;
        lc_v16 sum = {0};
        for (int j = 0; j < n; j += 16) {
            const lc_v16 p = lc_vexp(lc_vload(score + j) - lc_vbroadcast(run_max));
            lc_vstore(score + j, p);
            sum += p;
        }
        run_sum += lc_hsum(sum);
        for (int j = 0; j < n; j++) lc_vaxpy(acc, score[j], lc_view_row(&t->v, b, key0 + j * keys.step, h, D), D);
    }
    float *out = lc_view_row(&t->out, b, row, h, D);
    const float inv_sum = 1.0f / run_sum; /* the row max contributes exp(0) = 1 */
    for (int d = 0; d < D; d++) out[d] = acc[d] * inv_sum;
    t->lse[((size_t)b * sh->H + h) * sh->T + row] = run_max + logf(run_sum);
}

/* The gradients of one row, streamed over its partners (a query row's keys, or a key row's queries) with P
 * recomputed from lse and dS = P (dP - Delta):
 *   query row t: dq_t = scale sum_s dS_ts k_s (w0: scale q_t, w1: the sum);
 *   key row s: dv_s = sum_t P_ts dout_t (w0), dk_s = scale sum_t dS_ts q_t (w1).
 * The row's x and y meet each partner's X and Y rows: P from x . X, dP from y . Y, and dS weighs X. */
static inline __attribute__((always_inline)) void grad_row(const lc_attn_shape *sh, const lc_attn_pattern *pat,
                                                           const lc_attn_tensors *t, const float *delta, int b, int h,
                                                           int row, int key_row, float *w0, float *w1) {
    const int D = sh->D;
    const lc_view *X = key_row ? &t->q : &t->k, *Y = key_row ? &t->dout : &t->v;
    const float *x = key_row ? lc_view_row(&t->k, b, row, h, D) : w0;
    const float *y = lc_view_row(key_row ? &t->v : &t->dout, b, row, h, D);
    const float *q = key_row ? NULL : lc_view_row(&t->q, b, row, h, D);
    for (int d = 0; d < D; d++) w0[d] = q ? sh->scale * q[d] : 0, w1[d] = 0;
    const size_t r0 = ((size_t)b * sh->H + h) * sh->T;
    const lc_attn_progression other = key_row ? pat->queries_of(pat->ctx, row) : pat->keys_of(pat->ctx, row);
    float p[PROG_CHUNK] __attribute__((aligned(64))), ds[PROG_CHUNK] __attribute__((aligned(64)));
    float lse[PROG_CHUNK] __attribute__((aligned(64))), dl[PROG_CHUNK] __attribute__((aligned(64)));
    for (int c0 = 0; c0 < other.count; c0 += PROG_CHUNK) {
        const int n = lc_imin(PROG_CHUNK, other.count - c0);
        const int first = other.first + c0 * other.step;
        for (int i = 0; i < n; i++) {
            const int o = first + i * other.step, query = key_row ? o : row;
            const float score = prog_dot(lc_view_row(X, b, o, h, D), x, D);
            p[i] = key_row ? sh->scale * score : score;
            ds[i] = prog_dot(lc_view_row(Y, b, o, h, D), y, D);
            lse[i] = t->lse[r0 + query], dl[i] = delta[r0 + query];
        }
        for (int i = n; i < lc_round_up(n, 16); i++) p[i] = -INFINITY, ds[i] = 0, lse[i] = 0, dl[i] = 0;
        for (int i = 0; i < n; i += 16) {
            const lc_v16 prob = lc_vexp(lc_vload(p + i) - lc_vload(lse + i));
            lc_vstore(p + i, prob);
            lc_vstore(ds + i, prob * (lc_vload(ds + i) - lc_vload(dl + i)));
        }
        for (int i = 0; i < n; i++) {
            const int o = first + i * other.step;
            if (key_row) lc_vaxpy(w0, p[i], lc_view_row(Y, b, o, h, D), D);
            lc_vaxpy(w1, ds[i], lc_view_row(X, b, o, h, D), D);
        }
    }
    float *dx = lc_view_row(key_row ? &t->dk : &t->dq, b, row, h, D);
    for (int d = 0; d < D; d++) dx[d] = sh->scale * w1[d];
    if (!key_row) return;
    float *dv = lc_view_row(&t->dv, b, row, h, D);
    for (int d = 0; d < D; d++) dv[d] = w0[d];
}

/* ---------------------------------------------------------------- drivers */

/* Workspace: [16 floats of alignment slack][per thread: 2 x D_pad][Delta: B*H*T]. */
size_t lc_attn_progression_workspace(const lc_attn_shape *s) {
    return 16 + (size_t)lc_attn_threads(s) * 2 * lc_round_up(s->D, 16) + (size_t)s->B * s->H * s->T;
}

static void check_shape(const lc_attn_shape *s, const lc_attn_tensors *t) {
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window == 0); /* the pattern decides what each query sees */
    assert(t->rel == NULL); /* the progression engine has no relative positions (the block tiles do) */
    (void)s, (void)t;
}

/* One pass over the rows of every (batch, head): 0 forward and 1 dq over the T query rows in the
 * pattern's query order, 2 dk/dv over the S key rows (rows no query sees get 0) in its key order. Tasks
 * are runs of 64 rows, handed out dynamically; each thread works in its 2 x D_pad slice of base. */
static void prog_pass(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                      const float *delta, float *base, int pass) {
    const int nthreads = lc_attn_threads(s), D_pad = lc_round_up(s->D, 16), n = pass == 2 ? s->M + s->T : s->T;
    (void)nthreads; /* only the OpenMP build uses it */
    const long per_head = (n + PROG_TASK_ROWS - 1) / PROG_TASK_ROWS, tasks = (long)s->B * s->H * per_head;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        float *w = base + (size_t)lc_thread_id() * 2 * D_pad;
        const long head = task / per_head;
        const int b = (int)(head / s->H), h = (int)(head % s->H), i0 = (int)(task % per_head) * PROG_TASK_ROWS;
        for (int i = i0; i < lc_imin(n, i0 + PROG_TASK_ROWS); i++) {
            if (pass == 0)
                forward_row(s, pat, t, b, h, prog_at(pat->query_at, pat->ctx, i), w, w + D_pad);
            else if (pass == 1)
                grad_row(s, pat, t, delta, b, h, prog_at(pat->query_at, pat->ctx, i), 0, w, w + D_pad);
            else
                grad_row(s, pat, t, delta, b, h, prog_at(pat->key_at, pat->ctx, i), 1, w, w + D_pad);
        }
    }
}

void lc_attn_progression_forward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                 float *work) {
    check_shape(s, t);
    if (s->B == 0 || s->H == 0 || s->T == 0) return;
    prog_pass(s, pat, t, NULL, full_workspace_base(work), 0);
}

void lc_attn_progression_backward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                  float *work) {
    check_shape(s, t);
    if (s->B == 0 || s->H == 0) return;
    if (s->T == 0) { /* no queries: nothing flows back, but every row of dk and dv is written */
        full_zero_key_grads(t, s->B, s->M, s->H, s->D);
        return;
    }
    const full_geometry g = full_geometry_of(s);
    float *base = full_workspace_base(work);
    float *delta = base + (size_t)lc_attn_threads(s) * 2 * g.D_pad;
    full_compute_delta(&g, t, delta, lc_attn_threads(s));
    prog_pass(s, pat, t, delta, base, 1);
    prog_pass(s, pat, t, delta, base, 2);
}

/* ---------------------------------------------------------------- the block pattern */

typedef struct {
    long b; /* block size */
    int M, S, causal;
} block_ctx;

static lc_attn_progression block_keys_of(const void *ctx, int t) {
    const block_ctx *c = ctx;
    const long p = c->M + t, start = p / c->b * c->b;
    lc_attn_progression r = {0, 1, 0};
    if (c->causal) {
        r.first = (int)(start - c->b > 0 ? start - c->b : 0);
        r.count = (int)(p - r.first + 1);
    } else {
        r.first = (int)start;
        r.count = (int)((start + c->b < c->S ? start + c->b : c->S) - start);
    }
    return r;
}

static lc_attn_progression block_queries_of(const void *ctx, int s) {
    const block_ctx *c = ctx;
    const long start = s / c->b * c->b;
    /* positions [lo, hi) that see key s: its block (causal: from s on) and, causal, the next block */
    long lo = c->causal ? s : start, hi = start + (c->causal ? 2 : 1) * c->b;
    lo = lo > c->M ? lo : c->M;
    hi = hi < c->S ? hi : c->S;
    lc_attn_progression r = {(int)(lo - c->M), 1, hi > lo ? (int)(hi - lo) : 0};
    return r;
}

static block_ctx block_ctx_of(const lc_attn_shape *s, const void *opts) {
    const lc_attn_block_opts *o = opts;
    assert(o && o->block >= 1);
    block_ctx c = {o->block, s->M, s->M + s->T, s->causal != 0};
    return c;
}

/* ---------------------------------------------------------------- block: 64 x 64 tiles (full_tile.h)
 * Keys of query position p form the range block_keys_of(p), non-decreasing at both ends in p, so a
 * tile of 64 queries walks the key tiles from the first key of its first query to the last key of its
 * last query: O(T (b + 64) D) in all. Within a tile, a (query, key) pair is masked by the key's query
 * range (key-major tiles) or the query's key range (query-major tiles). The passes are those of the full
 * kind (full.c, full_backward.c) with this mask: forward with an online softmax per query tile; backward
 * with dk, dv per key tile and dq per query tile, every row owned by one task.
 * Relative positions (causal only): a query's keys are the interval [first key of its range, itself], so
 * the tiles are the full kind's with its position code (full_rel.h): the forward adds the position
 * diagonals to each score tile (full_rel_slide, full_rel_add_positions: the key tiles of a query tile are
 * 64 apart, as there, though not aligned to 64), and the backward is full_rel_backward_keys with the block
 * key ranges (one pass per head writing dq, dk, dv, dr, du, dv). */

static full_geometry block_geometry(const lc_attn_shape *s) {
    lc_attn_shape plain = *s;
    plain.window = 0; /* relpos kept: it sizes the position tiles */
    return full_geometry_of(&plain);
}

/* Lanes of queries t0 + 16 l + lane (0..15) that see key `key` (key-major tiles), -1, others 0. */
static inline lc_vi16 block_queries_seeing(const block_ctx *c, int t0, int l, int key) {
    const lc_attn_progression r = block_queries_of(c, key);
    return full_band_mask(t0 + 16 * l, r.first, r.first + r.count);
}

static lc_vi16 block_seeing(const void *c, int t0, int l, int key) { return block_queries_seeing(c, t0, l, key); }

/* Keys of query t within the key tile [s0, s0 + n_k), as tile offsets. */
static void block_row_keys(const void *c, int t, int s0, int n_k, int *first, int *end) {
    const lc_attn_progression keys = block_keys_of(c, t);
    *first = keys.first - s0, *end = lc_imin(n_k, keys.first + keys.count - s0);
}

/* Keys [begin, end) seen by some query of [t0, t0 + n_q). */
static void block_tile_keys(const block_ctx *c, int t0, int n_q, int *begin, int *end) {
    const lc_attn_progression first = block_keys_of(c, t0), last = block_keys_of(c, t0 + n_q - 1);
    *begin = first.first, *end = last.first + last.count;
}

static void block_forward_tile(const block_ctx *c, const full_geometry *g, const lc_attn_tensors *t, int b, int h,
                               int q_tile, full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0);
    int key_begin, key_end;
    block_tile_keys(c, t0, n_q, &key_begin, &key_end);
    full_forward_tile(g, t, b, h, t0, key_begin, key_end, key_end, 0, block_seeing, c, w);
}

/* dk, dv of a key tile, over the queries that see some key of it; with dq_acc (one pass per head) the
 * queries' dS k too. */
static void block_key_tile_grads(const block_ctx *c, const full_geometry *g, const lc_attn_tensors *t,
                                 const float *delta, int b, int h, int k_tile, full_tiles *w, float *dq_acc) {
    const int s0 = k_tile * FULL_TILE_K, n_k = lc_imin(FULL_TILE_K, g->S - s0);
    const lc_attn_progression first = block_queries_of(c, s0), last = block_queries_of(c, s0 + n_k - 1);
    const int query_begin = first.first, query_end = last.count ? last.first + last.count : first.first;
    full_key_tile_grads(g, t, delta, b, h, s0, query_begin, query_end, query_end, 0, block_row_keys, c, w, dq_acc);
}

/* The one-pass backward's keys of a (batch, head), as the full kind's (full_one_pass_backward): the key
 * tiles in order, dq summed in the order of block_query_tile_grads, so the same bits as the two passes. */
static void block_head_keys(const void *c, const full_geometry *g, const lc_attn_tensors *t, const float *delta,
                            int b, int h, full_tiles *w, float *dq_acc) {
    for (int k_tile = 0; k_tile < g->k_tiles; k_tile++) block_key_tile_grads(c, g, t, delta, b, h, k_tile, w, dq_acc);
}

/* dq of a query tile, over the keys its queries see. */
static void block_query_tile_grads(const block_ctx *c, const full_geometry *g, const lc_attn_tensors *t,
                                   const float *delta, int b, int h, int q_tile, full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0);
    int key_begin, key_end;
    block_tile_keys(c, t0, n_q, &key_begin, &key_end);
    full_query_tile_grads(g, t, delta, b, h, t0, key_begin, key_end, key_end, 0, block_seeing, c, w);
}

static size_t block_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    (void)opts;
    const full_geometry g = block_geometry(s);
    const size_t delta = (size_t)g.B * g.H * g.T, dq_floats = full_one_pass_dq_floats(&g, nthreads);
    if (dq_floats) return 16 + (size_t)nthreads * g.thread_floats + (delta + 15) / 16 * 16 + nthreads * dq_floats;
    return 16 + (size_t)nthreads * g.thread_floats + delta;
}

/* Checks for the tiled passes: the progression engine's, with relative positions allowed when causal. */
static void block_check_shape(const lc_attn_shape *s, const lc_attn_tensors *t) {
    lc_attn_tensors plain = *t;
    plain.rel = NULL;
    check_shape(s, &plain);
    assert(!t->rel || (s->causal && s->relpos)); /* rel needs causal, and a workspace sized for it */
}

/* full_rel_keys of a query tile: the keys of query t are [block_keys_of(t).first, M + t]. */
static void block_rel_keys_of(const void *ctx, const full_geometry *g, int t0, int n_q, full_rel_keys *keys) {
    const block_ctx *c = ctx;
    (void)g;
    block_tile_keys(c, t0, n_q, &keys->begin, &keys->end);
    for (int i = 0; i < FULL_TILE_Q; i++) keys->first[i] = block_keys_of(c, t0 + i).first;
}

/* One pass over the tiles: 0 forward and 2 dq over the query tiles, 1 dk/dv over the key tiles. Tasks go out
 * tile by tile, all heads of a tile together: a tile needs only the keys of its own and the previous block,
 * so each [H*D] row fetched from memory serves every head while it is in cache (head by head, a long
 * sequence streamed H times through memory). Every output row is computed by one task in a fixed order, so
 * results do not depend on the order or the thread count. */
static void block_tile_pass(const block_ctx *c, const full_geometry *g, const lc_attn_tensors *t, const float *delta,
                            float *base, int nthreads, int pass) {
    const long heads = (long)g->B * g->H, tasks = heads * (pass == 1 ? g->k_tiles : g->q_tiles);
    (void)nthreads; /* only the OpenMP build uses it */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, g, lc_thread_id());
        const long head = task % heads;
        const int b = (int)(head / g->H), h = (int)(head % g->H), tile = (int)(task / heads);
        if (pass == 0) block_forward_tile(c, g, t, b, h, tile, &w);
        else if (pass == 1) block_key_tile_grads(c, g, t, delta, b, h, tile, &w, NULL);
        else block_query_tile_grads(c, g, t, delta, b, h, tile, &w);
    }
}

static void block_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    block_check_shape(s, t);
    const block_ctx c = block_ctx_of(s, opts);
    const full_geometry g = block_geometry(s);
    if (g.B == 0 || g.H == 0 || g.T == 0) return;
    block_tile_pass(&c, &g, t, NULL, full_workspace_base(work), lc_attn_threads(s), 0);
}

static void block_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    block_check_shape(s, t);
    const block_ctx c = block_ctx_of(s, opts);
    const full_geometry g = block_geometry(s);
    const int nthreads = lc_attn_threads(s);
    float *base = full_workspace_base(work);
    float *delta = full_backward_begin(&g, t, base, nthreads);
    if (!delta) return;
    if (t->rel) {
        full_rel_backward_keys(&g, t, delta, base, nthreads, block_rel_keys_of, &c);
        return;
    }
    /* enough heads to share out: one task per head, 5 tile products instead of 7 */
    if (full_one_pass_backward(&g, t, delta, base, nthreads, block_head_keys, &c)) return;
    block_tile_pass(&c, &g, t, delta, base, nthreads, 1);
    block_tile_pass(&c, &g, t, delta, base, nthreads, 2);
}

static void block_opts_init(void *opts, int H) {
    ((lc_attn_block_opts *)opts)->block = 64;
    (void)H;
}

static int block_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    (void)H;
    if (strcmp(key, "b") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &((lc_attn_block_opts *)opts)->block, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_block, key, err, errlen);
}

static int block_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                        size_t errlen) {
    if (((const lc_attn_block_opts *)opts)->block < 1) return snprintf(err, errlen, "block: b must be >= 1"), -1;
    return 0;
}

const lc_attn_kind lc_attn_block = {
    .name = "block",
    .options_help = "b=<block size, default 64>",
    /* no same_length window: the blocks decide what a query sees */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY | LC_ATTN_CAP_RELPOS |
            LC_ATTN_CAP_DECODE,
    .opts_size = sizeof(lc_attn_block_opts),
    .opts_init = block_opts_init,
    .opts_set = block_opts_set,
    .check = block_check,
    .workspace_floats = block_workspace,
    .forward = block_forward,
    .backward = block_backward,
};
