/* Full (dense) attention, the `full` attention kind: workspace size and the streaming forward pass.
 * Each (batch, head, 64-query tile) is one independent task: it walks the key tiles in order, keeps a
 * running row max and row sum (online softmax, as in FlashAttention), rescales its output accumulator
 * when the max grows, and saves only the row log-sum-exp for the backward pass (full_backward.c).
 * Score tiles are computed transposed (k q^T: one key per row, queries along the vector lanes), so the
 * query tile is transposed once per task and the per-query max and sum are plain vector operations.
 * No T x S matrix exists in these passes; tiles live in a per-thread slice of the caller's workspace. The
 * exception is evaluation against a long memory (at most 256 queries, S >= 4T: full_eval.c), whose dense
 * products keep two T x S matrices per thread.
 * A window skips the key tiles before the band; relative positions (full_rel.h) add one tile product per
 * key tile and a gather. */
#include <assert.h>
#include <math.h>

#include <stdio.h>

#include "attn/attn.h"
#include "attn/full_decode.h"
#include "attn/full_eval.h"
#include "attn/full_pass.h"
#include "core/threads.h"


const lc_attn_kind lc_attn_full = {
    .name = "full",
    .options_help = "",
    /* no global tokens: every token already sees every key */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY | LC_ATTN_CAP_RELPOS |
            LC_ATTN_CAP_WINDOW | LC_ATTN_CAP_DECODE | LC_ATTN_CAP_PANELS,
    .workspace_floats = lc_attn_full_workspace,
    .forward = lc_attn_full_forward,
    .backward = lc_attn_full_backward,
};

/* Forward and backward run with lc_attn_threads(s) threads, so `work` must hold at least
 * lc_attn_full_workspace(s, opts, lc_attn_threads(s)) floats. It need not be aligned. Each thread takes
 * the slice of its lc_thread_id(), so the calls must not be made from inside a parallel region.
 * With s->relpos the workspace also holds, per thread, a few tiles and one head's dr: O(threads (S+T) D). */
size_t lc_attn_full_workspace_tiled(const lc_attn_shape *s) {
    const int nthreads = lc_attn_threads(s);
    const full_geometry g = full_geometry_of(s);
    const size_t delta = (size_t)g.B * g.H * g.T; /* backward's Delta = rowsum(dout * out) */
    const size_t dq_floats = full_one_pass_dq_floats(&g, nthreads); /* the one-pass backward's dq per thread */
    if (dq_floats) return 16 + (size_t)nthreads * g.thread_floats + (delta + 15) / 16 * 16 + nthreads * dq_floats;
    return 16 + (size_t)nthreads * g.thread_floats + delta;
}

/* The kind's workspace: the tiled passes', or the dense evaluation path's when the shape takes it. */
size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts) {
    (void)opts;
    const size_t tiled = lc_attn_full_workspace_tiled(s), dense = 16 + lc_attn_full_eval_floats(s, lc_attn_threads(s));
    return tiled > dense ? tiled : dense;
}

static lc_vi16 full_seeing(const void *g, int t0, int l, int s) { return full_queries_seeing(g, t0, l, s); }

static void forward_query_tile(const full_geometry *g, const lc_attn_tensors *t, int b, int h, int q_tile,
                               full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0);
    full_forward_tile(g, t, b, h, t0, full_key_tile_begin(g, t0), full_key_end(g, t0, n_q), g->S, 1, full_seeing, g,
                      w);
}

void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    if (s->B > 0 && s->H > 0 && lc_attn_full_eval(s, t, work)) return; /* <= 256 queries, long memory: products */
    lc_attn_full_forward_tiled(s, t, work);
}

void lc_attn_full_forward_tiled(const lc_attn_shape *s, const lc_attn_tensors *t, float *work) {
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window >= 0); /* bidirectional windows come from the window kind only (full_geometry) */
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
