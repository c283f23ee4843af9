/* Backward pass of full (dense) attention, FlashAttention-2 style, deterministic without atomics.
 *   Delta_t = rowsum(dout_t * out_t)                      (one parallel pass over rows)
 *   P = exp(scale q.k - lse), recomputed tile by tile; dP = dout v^T; dS = P * (dP - Delta)
 *   pass 1, one task per (batch, head, key tile):   dv = P^T dout,  dk = scale dS^T q
 *   pass 2, one task per (batch, head, query tile): dq = scale dS k
 * Every output row is owned by one task that sums in a fixed order, so results are bit-identical for
 * any thread count. Scores and dP are computed in both passes: 7 tile products where 5 would do with
 * atomics or per-thread copies of dq. A window restricts both passes to the tiles that meet the band.
 * With relative positions the backward is full_rel.c instead (one pass per head). */
#include <assert.h>
#include <math.h>

#include "attn/attn.h"
#include "attn/full_rel.h"
#include "attn/full_tile.h"
#include "core/threads.h"

static void compute_delta(const full_geometry *g, const lc_attn_tensors *t, float *delta, int nthreads) {
    const long rows = (long)g->B * g->H * g->T;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static)
#endif
    for (long i = 0; i < rows; i++) { /* position-major (heads innermost): each [H*D] row is read once */
        const int h = (int)(i % g->H), query = (int)(i / g->H % g->T), b = (int)(i / g->H / g->T);
        const long r = ((long)b * g->H + h) * g->T + query;
        const float *dout = lc_view_row(&t->dout, b, query, h, g->D), *out = lc_view_row(&t->out, b, query, h, g->D);
        double sum = 0;
        for (int d = 0; d < g->D; d++) sum += (double)dout[d] * out[d];
        delta[r] = (float)sum;
    }
}

/* Pass 1: dk and dv of the key tile [s0, s0+n_k), summed over every query tile that sees it.
 * Tiles are query-major here (row i = query t0 + i, keys along the lanes): k^T and v^T are loaded once
 * per task, and each query tile brings scale*q and dout as rows. */
static void key_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                           int k_tile, full_tiles *w) {
    const int s0 = k_tile * FULL_TILE_K, n_k = lc_imin(FULL_TILE_K, g->S - s0), key_rows = lc_round_up(n_k, 4);
    const int dp = g->D_pad;
    full_load_transposed(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f);
    full_load_transposed(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
    memset(w->dk_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    memset(w->dv_acc, 0, sizeof(float) * (size_t)key_rows * dp);

    /* causal: query t sees key s0 once M + t >= s0; window W: until M + t - W + 1 > s0 + n_k - 1 */
    const int first_query = full_query_begin(g, s0), query_end = full_query_end(g, s0, n_k);
    for (int t0 = first_query / FULL_TILE_Q * FULL_TILE_Q; t0 < query_end; t0 += FULL_TILE_Q) {
        const int n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4);
        full_load_rows(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
        full_load_rows(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
        full_load_row_stats(g, t->lse, delta, b, h, t0, n_q, w);
        if (t0 + FULL_TILE_Q < query_end) {
            const int n_next = lc_imin(FULL_TILE_Q, g->T - t0 - FULL_TILE_Q);
            full_prefetch_rows(&t->q, g, b, h, t0 + FULL_TILE_Q, n_next);
            full_prefetch_rows(&t->dout, g, b, h, t0 + FULL_TILE_Q, n_next);
        }
        full_gemm(w->scores, FULL_TILE_K, w->q_tile, dp, 1, w->key_a, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        full_gemm(w->dscores, FULL_TILE_K, w->dout_tile, dp, 1, w->key_b, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        for (int i = 0; i < n_q; i++) { /* P = exp(s - lse), dS = P (dP - Delta); rows >= n_q are not read */
            float *p = w->scores + (size_t)i * FULL_TILE_K, *ds = w->dscores + (size_t)i * FULL_TILE_K;
            const int first_visible = full_first_visible_key(g, t0 + i, s0);
            const int n_visible = full_visible_keys(g, t0 + i, s0, n_k);
            full_row_probs_and_dscores(p, ds, first_visible, n_visible, w->row_a[i], w->row_b[i]);
        }
        /* dv += P^T dout, dk += dS^T (scale q): A read transposed from the query-major tiles */
        full_gemm(w->dv_acc, dp, w->scores, 1, FULL_TILE_K, w->dout_tile, dp, key_rows, n_q, dp, 1);
        full_gemm(w->dk_acc, dp, w->dscores, 1, FULL_TILE_K, w->q_tile, dp, key_rows, n_q, dp, 1);
    }
    full_store_key_grads(t, g, w, b, h, s0, n_k);
}

/* Pass 2: dq of the query tile [t0, t0+n_q), summed over the key tiles it sees. Tiles are key-major
 * (row j = key s0 + j, queries along the lanes), as in the forward pass: (scale q)^T and dout^T are
 * loaded once per task, and each key tile brings k and v as rows. */
static void query_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                             int q_tile, full_tiles *w) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4);
    const int dp = g->D_pad;
    full_load_transposed(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
    full_load_transposed(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
    full_load_row_stats(g, t->lse, delta, b, h, t0, n_q, w);
    lc_v16 lse[CHUNKS], row_delta[CHUNKS];
    for (int l = 0; l < CHUNKS; l++)
        lse[l] = lc_vload(w->row_a + 16 * l), row_delta[l] = lc_vload(w->row_b + 16 * l);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);

    const int key_begin = full_key_tile_begin(g, t0), key_end = full_key_end(g, t0, n_q);
    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = lc_imin(FULL_TILE_K, g->S - s0), key_rows = lc_round_up(n_k, 4);
        long v_ld;
        full_load_rows(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f); /* k is also the B operand of dq += dS k */
        const float *v_rows = full_rows_operand(w->key_b, &t->v, g, b, h, s0, n_k, &v_ld);
        if (s0 + FULL_TILE_K < key_end) {
            const int n_next = lc_imin(FULL_TILE_K, g->S - s0 - FULL_TILE_K);
            full_prefetch_rows(&t->k, g, b, h, s0 + FULL_TILE_K, n_next);
            full_prefetch_rows(&t->v, g, b, h, s0 + FULL_TILE_K, n_next);
        }
        full_gemm(w->scores, FULL_TILE_Q, w->key_a, dp, 1, w->q_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        full_gemm(w->dscores, FULL_TILE_Q, v_rows, v_ld, 1, w->dout_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        for (int j = 0; j < n_k; j++) /* dS^T = P^T (dP^T - Delta); rows >= n_k are not read */
            for (int l = 0; l < CHUNKS; l++) {
                const float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                float *ds = w->dscores + (size_t)j * FULL_TILE_Q + 16 * l;
                const lc_v16 prob = lc_vselect(full_queries_seeing(g, t0, l, s0 + j),
                                                   lc_vexp(lc_vload(p) - lse[l]), (lc_v16){0});
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

void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window >= 0 && (s->window == 0 || s->causal)); /* a window needs causal */
    assert(!t->rel || (s->causal && s->relpos)); /* rel needs causal, and a workspace sized for it */
    const full_geometry g = full_geometry_of(s);
    const lc_attn_relpos *rel = t->rel;
    if (g.H == 0) return;
    if (rel && (g.B == 0 || g.T == 0)) { /* nothing flows back to r, u, v */
        memset(rel->dr, 0, sizeof(float) * (size_t)g.S * g.H * g.D);
        memset(rel->du, 0, sizeof(float) * (size_t)g.H * g.D);
        memset(rel->dv, 0, sizeof(float) * (size_t)g.H * g.D);
    }
    if (g.B == 0) return;
    if (g.T == 0) { /* no queries: nothing flows back, but dk and dv of the memory rows are still written */
        for (int b = 0; b < g.B; b++)
            for (int j = 0; j < g.S; j++)
                for (int h = 0; h < g.H; h++) {
                    memset(lc_view_row(&t->dk, b, j, h, g.D), 0, sizeof(float) * g.D);
                    memset(lc_view_row(&t->dv, b, j, h, g.D), 0, sizeof(float) * g.D);
                }
        return;
    }
    const int nthreads = lc_attn_threads(s);
    float *base = full_workspace_base(work);
    float *delta = full_delta_of(base, &g, nthreads);
    compute_delta(&g, t, delta, nthreads);
    if (rel) {
        full_rel_backward(&g, t, delta, base, nthreads);
        return;
    }

    const long heads = (long)g.B * g.H;
    /* Tasks go out head by head (the threads share one head's tensors in cache); with a window, tile by
     * tile with all heads of a tile together, as in the forward pass (full.c). Pass 1: key tiles in
     * increasing order, as in causal mode the first ones see the most queries. */
    const long key_tasks = heads * g.k_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < key_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = g.window ? task % heads : task / g.k_tiles;
        const int k_tile = (int)(g.window ? task / heads : task % g.k_tiles);
        key_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), k_tile, &w);
    }
    /* Pass 2, query tiles in decreasing order: in causal mode the last ones see the most keys. */
    const long query_tasks = heads * g.q_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < query_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = g.window ? task % heads : task / g.q_tiles;
        const int q_tile = (int)(g.window ? task / heads : g.q_tiles - 1 - task % g.q_tiles);
        query_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), q_tile, &w);
    }
}
