/* The tiled passes of the full kind, for any mask under which each query sees a contiguous range of keys
 * that moves forward with the query: the full kind itself (causal, window) and the block kind. A kind
 * gives the key range of a query tile and the query range of a key tile, plus two mask callbacks; these
 * always-inline bodies are instantiated with constant callbacks, so the masks compile to inline code.
 *   forward, one task per query tile: online softmax over its key tiles, out and lse saved;
 *   backward: Delta; one task per key tile (dk, dv) and one per query tile (dq), every row owned by one
 *   task that sums in a fixed order (FlashAttention-2, no atomics).
 * Relative positions add the position diagonals (full_rel.h) to the forward's score tiles. */
#ifndef LC_ATTN_FULL_PASS_H
#define LC_ATTN_FULL_PASS_H

#include <math.h>
#include <string.h>

#include "attn/full_rel.h"
#include "attn/full_tile.h"

/* Key-major tiles: lanes of the queries t0 + 16 l + lane (0..15) that see key s, -1, others 0. */
typedef lc_vi16 (*full_seeing_fn)(const void *ctx, int t0, int l, int s);
/* Query-major tiles: the keys of the tile [s0, s0 + n_k) that query t sees are [*first, *end) (tile
 * offsets; empty when *end <= *first). */
typedef void (*full_row_keys_fn)(const void *ctx, int t, int s0, int n_k, int *first, int *end);

/* Query tile [t0, t0 + 64) against the keys [key_begin, key_end), tiles of min(64, key_limit - s0) keys:
 * online softmax (FlashAttention), out = P v / sum and lse written. With prefetch, the next key tile is
 * requested while this one is computed. The tile's lanes are worked in groups of 16 queries: a tile of
 * fewer queries (the last of a sequence whose length is not a multiple of 64, e.g. an 80-byte XL
 * evaluation segment: 64 + 16) computes only the groups it has. */
static inline __attribute__((always_inline)) void full_forward_chunks(const full_geometry *g,
                                                                      const lc_attn_tensors *t, int b, int h, int t0,
                                                                      int key_begin, int key_end, int key_limit,
                                                                      int prefetch, full_seeing_fn seeing,
                                                                      const void *ctx, int chunks, full_tiles *w) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    const int n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4), dp = g->D_pad, lanes = 16 * chunks;
    float correction[FULL_TILE_Q];
    const lc_attn_relpos *rel = t->rel;
    full_forward_begin(g, t, b, h, t0, n_q, w);
    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = lc_imin(FULL_TILE_K, key_limit - s0);
        long k_ld;
        const float *k_rows = full_rows_operand(w->key_a, &t->k, g, b, h, s0, n_k, &k_ld);
        full_load_rows(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
        if (prefetch && s0 + FULL_TILE_K < key_end) {
            const int n_next = lc_imin(FULL_TILE_K, g->S - s0 - FULL_TILE_K);
            full_prefetch_rows(&t->k, g, b, h, s0 + FULL_TILE_K, n_next);
            full_prefetch_rows(&t->v, g, b, h, s0 + FULL_TILE_K, n_next);
            if (rel) /* the next tile's new block of distances: [c0 - 128, c0 - 64) for its c0 = this c0 - 64 */
                full_rel_prefetch_r(rel, g, h, g->M + t0 - s0 - 2 * FULL_TILE_K, FULL_TILE_K);
        }
        /* scores^T = k (scale q)^T: one key per row, queries along the lanes */
        full_gemm(w->scores, FULL_TILE_Q, k_rows, k_ld, 1, w->q_tile, FULL_TILE_Q, lc_round_up(n_k, 4), g->D, lanes,
                  0);
        if (rel) {
            full_rel_slide_lanes(g, rel, h, g->M + t0 - s0, s0 == key_begin, lanes, w);
            full_rel_add_positions_lanes(w->scores, w->rel_pos, n_k, chunks);
        }
        /* hidden entries to -inf, then this tile's step of the online softmax */
        lc_v16 tile_max[CHUNKS];
        for (int l = 0; l < chunks; l++) tile_max[l] = lc_vsplat(-INFINITY);
        for (int j = 0; j < n_k; j++)
            for (int l = 0; l < chunks; l++) {
                float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                const lc_v16 masked = lc_vselect(seeing(ctx, t0, l, s0 + j), lc_vload(p), lc_vsplat(-INFINITY));
                lc_vstore(p, masked);
                tile_max[l] = lc_vmax(tile_max[l], masked);
            }
        full_softmax_update_lanes(w->scores, n_k, chunks, tile_max, w->row_a, w->row_b, correction);
        full_accumulate_pv(w, correction, rows, n_k, dp);
    }
    full_store_outputs(g, t, w, b, h, t0, n_q);
}

static inline __attribute__((always_inline)) void full_forward_tile(const full_geometry *g, const lc_attn_tensors *t,
                                                                    int b, int h, int t0, int key_begin, int key_end,
                                                                    int key_limit, int prefetch,
                                                                    full_seeing_fn seeing, const void *ctx,
                                                                    full_tiles *w) {
    const int chunks = (lc_imin(FULL_TILE_Q, g->T - t0) + 15) / 16;
    if (chunks == FULL_TILE_Q / 16) /* a whole tile: the lane loops with a constant count */
        full_forward_chunks(g, t, b, h, t0, key_begin, key_end, key_limit, prefetch, seeing, ctx, FULL_TILE_Q / 16,
                            w);
    else
        full_forward_chunks(g, t, b, h, t0, key_begin, key_end, key_limit, prefetch, seeing, ctx, chunks, w);
}

/* dk and dv of the key tile [s0, s0 + n_k), summed over the query tiles [query_begin, query_end) (tiles of
 * min(64, query_limit - t0) queries). Tiles are query-major here (row i = query t0 + i, keys along the
 * lanes): k^T and v^T are loaded once per task, and each query tile brings scale*q and dout as rows.
 * With dq_acc (the head's one-pass backward, full_backward.c), dq_acc rows t0 .. also get dS k: k is
 * loaded as rows too (into w->q_acc, which this pass does not otherwise use). */
static inline __attribute__((always_inline)) void full_key_tile_grads(const full_geometry *g,
                                                                      const lc_attn_tensors *t, const float *delta,
                                                                      int b, int h, int s0, int query_begin,
                                                                      int query_end, int query_limit, int prefetch,
                                                                      full_row_keys_fn row_keys, const void *ctx,
                                                                      full_tiles *w, float *dq_acc) {
    const int n_k = lc_imin(FULL_TILE_K, g->S - s0), key_rows = lc_round_up(n_k, 4), dp = g->D_pad;
    full_load_transposed(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f);
    full_load_transposed(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
    if (dq_acc) full_load_rows(w->q_acc, &t->k, g, b, h, s0, n_k, 1.0f);
    memset(w->dk_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    memset(w->dv_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    for (int t0 = query_begin; t0 < query_end; t0 += FULL_TILE_Q) {
        const int n_q = lc_imin(FULL_TILE_Q, query_limit - t0), rows = lc_round_up(n_q, 4);
        full_load_rows(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
        full_load_rows(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
        full_load_row_stats(g, t->lse, delta, b, h, t0, n_q, w);
        if (prefetch && t0 + FULL_TILE_Q < query_end) {
            const int n_next = lc_imin(FULL_TILE_Q, g->T - t0 - FULL_TILE_Q);
            full_prefetch_rows(&t->q, g, b, h, t0 + FULL_TILE_Q, n_next);
            full_prefetch_rows(&t->dout, g, b, h, t0 + FULL_TILE_Q, n_next);
        }
        full_gemm(w->scores, FULL_TILE_K, w->q_tile, dp, 1, w->key_a, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        full_gemm(w->dscores, FULL_TILE_K, w->dout_tile, dp, 1, w->key_b, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        for (int i = 0; i < n_q; i++) { /* P = exp(s - lse), dS = P (dP - Delta); rows >= n_q are not read */
            float *p = w->scores + (size_t)i * FULL_TILE_K, *ds = w->dscores + (size_t)i * FULL_TILE_K;
            int first, end;
            row_keys(ctx, t0 + i, s0, n_k, &first, &end);
            full_row_probs_and_dscores(p, ds, first, end, w->row_a[i], w->row_b[i]);
        }
        /* dv += P^T dout, dk += dS^T (scale q): A read transposed from the query-major tiles */
        full_gemm(w->dv_acc, dp, w->scores, 1, FULL_TILE_K, w->dout_tile, dp, key_rows, n_q, dp, 1);
        full_gemm(w->dk_acc, dp, w->dscores, 1, FULL_TILE_K, w->q_tile, dp, key_rows, n_q, dp, 1);
        /* dq += dS k, in the key-tile order of full_query_tile_grads, so the sums are the same */
        if (dq_acc)
            full_gemm(dq_acc + (size_t)t0 * dp, dp, w->dscores, FULL_TILE_K, 1, w->q_acc, dp, rows, n_k, dp, 1);
    }
    full_store_key_grads(t, g, w, b, h, s0, n_k);
}

/* dq of the query tile [t0, t0 + 64), summed over the key tiles [key_begin, key_end) (tiles of
 * min(64, key_limit - s0) keys). Tiles are key-major (row j = key s0 + j, queries along the lanes), as
 * in the forward pass: (scale q)^T and dout^T are loaded once per task, each key tile brings k and v. */
static inline __attribute__((always_inline)) void full_query_tile_grads(const full_geometry *g,
                                                                        const lc_attn_tensors *t, const float *delta,
                                                                        int b, int h, int t0, int key_begin,
                                                                        int key_end, int key_limit, int prefetch,
                                                                        full_seeing_fn seeing, const void *ctx,
                                                                        full_tiles *w) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    const int n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4), dp = g->D_pad;
    full_load_transposed(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
    full_load_transposed(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
    full_load_row_stats(g, t->lse, delta, b, h, t0, n_q, w);
    lc_v16 lse[CHUNKS], row_delta[CHUNKS];
    for (int l = 0; l < CHUNKS; l++) lse[l] = lc_vload(w->row_a + 16 * l), row_delta[l] = lc_vload(w->row_b + 16 * l);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);

    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = lc_imin(FULL_TILE_K, key_limit - s0), key_rows = lc_round_up(n_k, 4);
        long v_ld;
        const float *v_rows = full_load_key_tile(g, t, b, h, s0, n_k, prefetch ? key_end : 0, w, &v_ld);
        full_gemm(w->scores, FULL_TILE_Q, w->key_a, dp, 1, w->q_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        full_gemm(w->dscores, FULL_TILE_Q, v_rows, v_ld, 1, w->dout_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        for (int j = 0; j < n_k; j++) /* dS^T = P^T (dP^T - Delta); rows >= n_k are not read */
            for (int l = 0; l < CHUNKS; l++) {
                const float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                float *ds = w->dscores + (size_t)j * FULL_TILE_Q + 16 * l;
                const lc_v16 prob = lc_vselect(seeing(ctx, t0, l, s0 + j), lc_vexp(lc_vload(p) - lse[l]), (lc_v16){0});
                lc_vstore(ds, prob * (lc_vload(ds) - row_delta[l]));
            }
        /* dq += dS k, reading dS from the transposed tile */
        full_gemm(w->q_acc, dp, w->dscores, 1, FULL_TILE_Q, w->key_a, dp, rows, n_k, dp, 1);
    }
    for (int i = 0; i < n_q; i++) {
        float *dq = lc_view_row(&t->dq, b, t0 + i, h, g->D);
        for (int d = 0; d < g->D; d++) dq[d] = g->scale * w->q_acc[(size_t)i * dp + d];
    }
}

/* The keys' part of one (batch, head) of the one-pass backward: every key tile in order through
 * full_key_tile_grads with dq_acc, under the kind's mask. */
typedef void (*full_head_keys_fn)(const void *ctx, const full_geometry *g, const lc_attn_tensors *t,
                                  const float *delta, int b, int h, full_tiles *w, float *dq_acc);

/* What each (batch, head) of the one-pass backward reads. */
typedef struct {
    const full_geometry *g;
    const lc_attn_tensors *t;
    const float *delta;
    float *base, *dq_base;
    size_t dq_floats;
    full_head_keys_fn head_keys;
    const void *ctx;
} full_one_pass;

static inline void full_one_pass_head(const void *job, int b, int h) {
    const full_one_pass *j = job;
    full_tiles w = full_tiles_for_thread(j->base, j->g, lc_thread_id());
    float *dq_acc = j->dq_base + (size_t)lc_thread_id() * j->dq_floats;
    memset(dq_acc, 0, sizeof(float) * j->dq_floats);
    j->head_keys(j->ctx, j->g, j->t, j->delta, b, h, &w, dq_acc);
    full_store_dq(j->g, j->t, b, h, dq_acc);
}

/* The one-pass backward of the full and block kinds, when full_one_pass_dq_floats allows it: one task per
 * (batch, head) with the thread's dq accumulator zeroed, the kind's key tiles, then dq = scale * the
 * accumulator. Returns 0, having done nothing, when the shape takes the two passes. */
static inline int full_one_pass_backward(const full_geometry *g, const lc_attn_tensors *t, const float *delta,
                                         float *base, int nthreads, full_head_keys_fn head_keys, const void *ctx) {
    const size_t dq_floats = full_one_pass_dq_floats(g, nthreads);
    if (!dq_floats) return 0;
    const full_one_pass job = {g, t, delta, base, full_one_pass_dq_base(base, g, nthreads), dq_floats, head_keys, ctx};
    full_each_head(g->B, g->H, nthreads, full_one_pass_head, &job);
    return 1;
}

/* Backward's start. Without queries nothing flows back, but dk and dv of every key row (and dr, du, dv
 * with relative positions) are still written, as zeros: returns NULL. Otherwise Delta goes into the
 * workspace after the threads' tiles and is returned. */
static inline float *full_backward_begin(const full_geometry *g, const lc_attn_tensors *t, float *base, int nthreads) {
    const lc_attn_relpos *rel = t->rel;
    if (g->H == 0) return NULL;
    if (rel && (g->B == 0 || g->T == 0)) {
        memset(rel->dr, 0, sizeof(float) * (size_t)g->S * g->H * g->D);
        memset(rel->du, 0, sizeof(float) * (size_t)g->H * g->D);
        memset(rel->dv, 0, sizeof(float) * (size_t)g->H * g->D);
    }
    if (g->B == 0) return NULL;
    if (g->T == 0) {
        full_zero_key_grads(t, g->B, g->S, g->H, g->D);
        return NULL;
    }
    float *delta = full_delta_of(base, g, nthreads);
    full_compute_delta(g, t, delta, nthreads);
    return delta;
}

#endif
