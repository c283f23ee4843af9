/* Backward pass of full (dense) attention, FlashAttention-2 style, deterministic without atomics.
 *   Delta_t = rowsum(dout_t * out_t)                      (one parallel pass over rows)
 *   P = exp(scale q.k - lse), recomputed tile by tile; dP = dout v^T; dS = P * (dP - Delta)
 *   pass 1, one task per (batch, head, key tile):   dv = P^T dout,  dk = scale dS^T q
 *   pass 2, one task per (batch, head, query tile): dq = scale dS k
 * Every output row is owned by one task that sums in a fixed order, so results are bit-identical for
 * any thread count. Scores and dP are computed in both passes: 7 tile products per (query, key) tile.
 * With enough heads to share out (4 per thread; the training step's usual case: B*H = 64) each task
 * takes a whole (batch, head) instead, keeps the head's dq in its workspace and adds dS k to it in pass
 * 1: 5 products, and the same sums in the same order, so the same bits as the two passes.
 * A window restricts both passes to the tiles that meet the band.
 * With relative positions the backward is full_rel.c instead (one pass per head). */
#include <assert.h>
#include <math.h>

#include "attn/attn.h"
#include "attn/full_pass.h"
#include "core/threads.h"

static lc_vi16 full_seeing(const void *g, int t0, int l, int s) { return full_queries_seeing(g, t0, l, s); }

static void full_row_keys(const void *g, int t, int s0, int n_k, int *first, int *end) {
    *first = full_first_visible_key(g, t, s0);
    *end = full_visible_keys(g, t, s0, n_k);
}

/* Pass 1: dk and dv of a key tile, over every query tile that sees it (causal: query t sees key s0 once
 * M + t >= s0; window W: until M + t - W + 1 > s0 + n_k - 1); with dq_acc (one pass per head) dq too. */
static void key_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                           int k_tile, full_tiles *w, float *dq_acc) {
    const int s0 = k_tile * FULL_TILE_K, n_k = lc_imin(FULL_TILE_K, g->S - s0);
    const int first_query = full_query_begin(g, s0), query_end = full_query_end(g, s0, n_k);
    full_key_tile_grads(g, t, delta, b, h, s0, first_query / FULL_TILE_Q * FULL_TILE_Q, query_end, g->T, 1,
                        full_row_keys, g, w, dq_acc);
}

/* The one-pass backward's keys of a (batch, head): every key tile in order (full_one_pass_backward). */
static void head_keys(const void *ctx, const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b,
                      int h, full_tiles *w, float *dq_acc) {
    (void)ctx;
    for (int k_tile = 0; k_tile < g->k_tiles; k_tile++) key_tile_grads(g, t, delta, b, h, k_tile, w, dq_acc);
}

/* Pass 2: dq of a query tile, over the key tiles it sees. */
static void query_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                             int q_tile, full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0);
    full_query_tile_grads(g, t, delta, b, h, t0, full_key_tile_begin(g, t0), full_key_end(g, t0, n_q), g->S, 1,
                          full_seeing, g, w);
}

void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window >= 0); /* bidirectional windows come from the window kind only (full_geometry) */
    assert(!t->rel || (s->causal && s->relpos)); /* rel needs causal, and a workspace sized for it */
    const full_geometry g = full_geometry_of(s);
    const int nthreads = lc_attn_threads(s);
    float *base = full_workspace_base(work);
    float *delta = full_backward_begin(&g, t, base, nthreads);
    if (!delta) return;
    if (t->rel) {
        full_rel_backward(&g, t, delta, base, nthreads);
        return;
    }

    /* Tasks go out head by head (the threads share one head's tensors in cache); with a window, tile by
     * tile with all heads of a tile together, as in the forward pass (full.c). Pass 0 (dk, dv): key tiles
     * in increasing order, as in causal mode the first ones see the most queries; pass 1 (dq): query tiles
     * in decreasing order, as the last ones see the most keys. */
    if (full_one_pass_backward(&g, t, delta, base, nthreads, head_keys, NULL)) return;
    const long heads = (long)g.B * g.H;
    for (int pass = 0; pass < 2; pass++) {
        const long per_head = pass ? g.q_tiles : g.k_tiles, tasks = heads * per_head;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
        for (long task = 0; task < tasks; task++) {
            full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
            const long head = g.window ? task % heads : task / per_head;
            const long i = g.window ? task / heads : (pass ? per_head - 1 - task % per_head : task % per_head);
            if (pass)
                query_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)i, &w);
            else
                key_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)i, &w, NULL);
        }
    }
}
