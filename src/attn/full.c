/* Full (dense) attention, the `full` attention kind: workspace size and the streaming forward pass.
 * Each (batch, head, 64-query tile) is one independent task: it walks the key tiles in order, keeps a
 * running row max and row sum (online softmax, as in FlashAttention), rescales its output accumulator
 * when the max grows, and saves only the row log-sum-exp for the backward pass (full_backward.c).
 * Score tiles are computed transposed (k q^T: one key per row, queries along the vector lanes), so the
 * query tile is transposed once per task and the per-query max and sum are plain vector operations.
 * No T x S matrix exists anywhere; tiles live in a per-thread slice of the caller's workspace.
 * A window skips the key tiles before the band; relative positions (full_rel.h) add one tile product per
 * key tile and a gather. */
#include <assert.h>
#include <math.h>

#include <stdio.h>

#include "attn/attn.h"
#include "attn/full_decode.h"
#include "attn/full_rel.h"
#include "attn/full_tile.h"
#include "core/threads.h"

static int full_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                      size_t errlen) {
    (void)opts;
    if ((s->window || s->relpos) && !s->causal)
        return snprintf(err, errlen, "full: relative positions and same_length need causal attention"), -1;
    if (global) return snprintf(err, errlen, "full: global tokens are meaningless (every token is global)"), -1;
    return 0;
}

const lc_attn_kind lc_attn_full = {
    .name = "full",
    .options_help = "",
    .check = full_check,
    .workspace_floats = lc_attn_full_workspace,
    .forward = lc_attn_full_forward,
    .backward = lc_attn_full_backward,
};

/* Forward and backward run with lc_attn_threads(s) threads, so `work` must hold at least
 * lc_attn_full_workspace(s, opts, lc_attn_threads(s)) floats. It need not be aligned. Each thread takes
 * the slice of its lc_thread_id(), so the calls must not be made from inside a parallel region.
 * With s->relpos the workspace also holds, per thread, a few tiles and one head's dr: O(threads (S+T) D). */
size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    (void)opts;
    const full_geometry g = full_geometry_of(s);
    const size_t delta = (size_t)g.B * g.H * g.T; /* backward's Delta = rowsum(dout * out) */
    return 16 + (size_t)nthreads * g.thread_floats + delta;
}

/* One key tile's step of the online softmax. scores_t holds the tile transposed (row j = key s0 + j,
 * the 64 queries along the lanes); its visible entries become exp(score - new running max), and the
 * running max / sum per query are updated. Returns (in `correction`) the factor by which each query's
 * output accumulator must be scaled before this tile's probabilities are added. */
static void online_softmax_tile(const full_geometry *g, float *scores_t, int t0, int s0, int n_k,
                                float *running_max, float *running_sum, float *correction) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    lc_v16 tile_max[CHUNKS];
    for (int l = 0; l < CHUNKS; l++) tile_max[l] = lc_vsplat(-INFINITY);
    for (int j = 0; j < n_k; j++)
        for (int l = 0; l < CHUNKS; l++) {
            float *p = scores_t + (size_t)j * FULL_TILE_Q + 16 * l;
            const lc_v16 masked =
                lc_vselect(full_queries_seeing(g, t0, l, s0 + j), lc_vload(p), lc_vsplat(-INFINITY));
            lc_vstore(p, masked);
            tile_max[l] = lc_vmax(tile_max[l], masked);
        }
    full_softmax_update(scores_t, n_k, tile_max, running_max, running_sum, correction);
}

static void forward_query_tile(const full_geometry *g, const lc_attn_tensors *t, int b, int h, int q_tile,
                               full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4);
    const int dp = g->D_pad;
    float *running_max = w->row_a, *running_sum = w->row_b;
    float correction[FULL_TILE_Q];
    const lc_attn_relpos *rel = t->rel;
    if (rel) { /* content scores with scale (q + u), position scores with scale (q + v) */
        full_load_transposed_bias(w->q_tile, &t->q, rel->u + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
        full_load_transposed_bias(w->rel_qv, &t->q, rel->v + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
    } else {
        full_load_transposed(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
    }
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);
    for (int i = 0; i < FULL_TILE_Q; i++) running_max[i] = -INFINITY, running_sum[i] = 0;

    const int key_begin = full_key_tile_begin(g, t0), key_end = full_key_end(g, t0, n_q);
    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = lc_imin(FULL_TILE_K, g->S - s0);
        long k_ld;
        const float *k_rows = full_rows_operand(w->key_a, &t->k, g, b, h, s0, n_k, &k_ld);
        full_load_rows(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
        if (s0 + FULL_TILE_K < key_end) {
            const int n_next = lc_imin(FULL_TILE_K, g->S - s0 - FULL_TILE_K);
            full_prefetch_rows(&t->k, g, b, h, s0 + FULL_TILE_K, n_next);
            full_prefetch_rows(&t->v, g, b, h, s0 + FULL_TILE_K, n_next);
        }
        /* scores^T = k (scale q)^T: one key per row, queries along the lanes */
        full_gemm(w->scores, FULL_TILE_Q, k_rows, k_ld, 1, w->q_tile, FULL_TILE_Q, lc_round_up(n_k, 4), g->D,
                  FULL_TILE_Q, 0);
        if (rel) {
            full_rel_slide(g, rel, h, g->M + t0 - s0, s0 == key_begin, w);
            full_rel_add_positions(w->scores, w->rel_pos, n_k);
        }
        online_softmax_tile(g, w->scores, t0, s0, n_k, running_max, running_sum, correction);
        for (int i = 0; i < rows; i++) {
            if (correction[i] == 1.0f) continue;
            float *acc = w->q_acc + (size_t)i * dp;
            for (int d = 0; d < dp; d++) acc[d] *= correction[i];
        }
        /* out += P v, reading P from the transposed tile */
        full_gemm(w->q_acc, dp, w->scores, 1, FULL_TILE_Q, w->key_b, dp, rows, n_k, dp, 1);
    }

    float *lse = t->lse + ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < n_q; i++) {
        /* every query sees itself (distance 0), so the sum is positive */
        const float inv_sum = 1.0f / running_sum[i];
        float *out = lc_view_row(&t->out, b, t0 + i, h, g->D);
        const float *acc = w->q_acc + (size_t)i * dp;
        for (int d = 0; d < g->D; d++) out[d] = acc[d] * inv_sum;
        lse[i] = running_max[i] + logf(running_sum[i]);
    }
}

void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window >= 0 && (s->window == 0 || s->causal)); /* a window needs causal */
    assert(!t->rel || (s->causal && s->relpos)); /* rel needs causal, and a workspace sized for it */
    const full_geometry g = full_geometry_of(s);
    if (g.B == 0 || g.H == 0 || g.T == 0) return;
    if (lc_attn_full_decode(s, t)) return; /* a query or two: stream keys per row instead of tiles */
    const int nthreads = lc_attn_threads(s);
    (void)nthreads; /* only the OpenMP build uses it */
    float *base = full_workspace_base(work);
    const long per_head = g.q_tiles, tasks = (long)g.B * g.H * per_head;
    /* Tasks go out head by head, so the threads share one head's keys and values in cache, and within a
     * head longest first (in causal mode the last query tiles see the most keys). With a window every tile
     * costs about the same and needs only the keys just before it: tasks then go out tile by tile, all
     * heads of a tile together, so each [H*D] row fetched from memory serves every head at once (head by
     * head, a long sequence streamed H times through memory, 4 cache lines of each row at a time: 1.4x
     * slower per token at 64K than at 2K). Each output row is computed by one task in a fixed order, so
     * results do not depend on the thread count. */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        long head;
        int q_tile;
        if (g.window)
            head = task % ((long)g.B * g.H), q_tile = (int)(task / ((long)g.B * g.H));
        else
            head = task / per_head, q_tile = (int)(per_head - 1 - task % per_head);
        forward_query_tile(&g, t, (int)(head / g.H), (int)(head % g.H), q_tile, &w);
    }
}
