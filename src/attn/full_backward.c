/* Backward pass of full (dense) attention, FlashAttention-2 style, deterministic without atomics.
 *   Delta_t = rowsum(dout_t * out_t)                      (one parallel pass over rows)
 *   P = exp(scale q.k - lse), recomputed tile by tile; dP = dout v^T; dS = P * (dP - Delta)
 *   pass 1, one task per (batch, head, key tile):   dv = P^T dout,  dk = scale dS^T q
 *   pass 2, one task per (batch, head, query tile): dq = scale dS k
 * Every output row is owned by one task that sums in a fixed order, so results are bit-identical for
 * any thread count. P and dS are computed twice (once per pass); that costs 3 of the 7 tile products. */
#include <assert.h>
#include <math.h>

#include "attn/attn.h"
#include "attn/full_tile.h"
#include "core/threads.h"

static void compute_delta(const full_geometry *g, const lc_attn_tensors *t, float *delta, int nthreads) {
    const long rows = (long)g->B * g->H * g->T;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static)
#endif
    for (long r = 0; r < rows; r++) {
        const int q = (int)(r % g->T), h = (int)(r / g->T % g->H), b = (int)(r / g->T / g->H);
        const float *dout = full_row(&t->dout, b, q, h, g->D), *out = full_row(&t->out, b, q, h, g->D);
        double sum = 0;
        for (int d = 0; d < g->D; d++) sum += (double)dout[d] * out[d];
        delta[r] = (float)sum;
    }
}

/* Loads what a query tile needs: scale*q, dout, and the rows' lse and Delta. */
static void load_query_tile(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                            int t0, int n_q, full_tiles *w) {
    full_load_rows(w->q_scaled, &t->q, g, b, h, t0, n_q, g->scale);
    full_load_rows(w->dout, &t->dout, g, b, h, t0, n_q, 1.0f);
    const size_t row0 = ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < n_q; i++) w->row_a[i] = t->lse[row0 + i], w->row_b[i] = delta[row0 + i];
}

/* For the loaded query tile [t0, t0+n_q) and key tile [s0, s0+n_k) (k_t, v_t loaded): leaves
 * P in w->scores and dS = P * (dP - Delta) in w->dscores; rows past n_q and masked keys are 0. */
static void probs_and_dscores(const full_geometry *g, int t0, int n_q, int s0, int n_k, full_tiles *w) {
    const int rows = full_round_up(n_q, 4);
    full_gemm(w->scores, FULL_TILE_K, w->q_scaled, g->D_pad, 1, w->k_t, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
    full_gemm(w->dscores, FULL_TILE_K, w->dout, g->D_pad, 1, w->v_t, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
    for (int i = 0; i < rows; i++) {
        float *p = w->scores + (size_t)i * FULL_TILE_K, *ds = w->dscores + (size_t)i * FULL_TILE_K;
        if (i >= n_q) {
            memset(p, 0, sizeof(float) * FULL_TILE_K);
            memset(ds, 0, sizeof(float) * FULL_TILE_K);
            continue;
        }
        const int n_visible = full_visible_keys(g, t0 + i, s0, n_k);
        const float lse = w->row_a[i], delta = w->row_b[i];
        for (int l = 0; l < FULL_TILE_K / 16; l++) {
            const full_v16 prob = full_vselect(full_visible_mask(16 * l, n_visible),
                                               full_vexp(full_vload(p + 16 * l) - lse), (full_v16){0});
            full_vstore(p + 16 * l, prob);
            full_vstore(ds + 16 * l, prob * (full_vload(ds + 16 * l) - delta));
        }
    }
}

/* Pass 1: dk and dv of the key tile [s0, s0+n_k), summed over every query tile that sees it. */
static void key_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                           int k_tile, full_tiles *w) {
    const int s0 = k_tile * FULL_TILE_K, n_k = full_min(FULL_TILE_K, g->S - s0), key_rows = full_round_up(n_k, 4);
    const int dp = g->D_pad;
    float *dk = w->key_rows, *dv = w->key_rows2;
    full_load_transposed(w->k_t, &t->k, g, b, h, s0, n_k);
    full_load_transposed(w->v_t, &t->v, g, b, h, s0, n_k);
    memset(dk, 0, sizeof(float) * (size_t)key_rows * dp);
    memset(dv, 0, sizeof(float) * (size_t)key_rows * dp);

    /* causal: query t sees key s0 once M + t >= s0 */
    const int first_query = g->causal ? full_max(0, s0 - g->M) : 0;
    for (int t0 = first_query / FULL_TILE_Q * FULL_TILE_Q; t0 < g->T; t0 += FULL_TILE_Q) {
        const int n_q = full_min(FULL_TILE_Q, g->T - t0);
        load_query_tile(g, t, delta, b, h, t0, n_q, w);
        probs_and_dscores(g, t0, n_q, s0, n_k, w);
        /* dv += P^T dout, dk += dS^T (scale q): A read transposed from the row-major P, dS tiles */
        full_gemm(dv, dp, w->scores, 1, FULL_TILE_K, w->dout, dp, key_rows, n_q, dp, 1);
        full_gemm(dk, dp, w->dscores, 1, FULL_TILE_K, w->q_scaled, dp, key_rows, n_q, dp, 1);
    }
    for (int j = 0; j < n_k; j++) {
        float *dk_row = full_row(&t->dk, b, s0 + j, h, g->D), *dv_row = full_row(&t->dv, b, s0 + j, h, g->D);
        for (int d = 0; d < g->D; d++) dk_row[d] = dk[(size_t)j * dp + d], dv_row[d] = dv[(size_t)j * dp + d];
    }
}

/* Pass 2: dq of the query tile [t0, t0+n_q), summed over the key tiles it sees. */
static void query_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                             int q_tile, full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = full_min(FULL_TILE_Q, g->T - t0), rows = full_round_up(n_q, 4);
    const int dp = g->D_pad;
    load_query_tile(g, t, delta, b, h, t0, n_q, w);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);
    const int key_end = full_key_end(g, t0, n_q);
    for (int s0 = 0; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = full_min(FULL_TILE_K, g->S - s0);
        full_load_transposed(w->k_t, &t->k, g, b, h, s0, n_k);
        full_load_transposed(w->v_t, &t->v, g, b, h, s0, n_k);
        full_load_rows(w->key_rows, &t->k, g, b, h, s0, n_k, 1.0f);
        probs_and_dscores(g, t0, n_q, s0, n_k, w);
        full_gemm(w->q_acc, dp, w->dscores, FULL_TILE_K, 1, w->key_rows, dp, rows, n_k, dp, 1);
    }
    for (int i = 0; i < n_q; i++) {
        float *dq = full_row(&t->dq, b, t0 + i, h, g->D);
        for (int d = 0; d < g->D; d++) dq[d] = g->scale * w->q_acc[(size_t)i * dp + d];
    }
}

void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    const full_geometry g = full_geometry_of(s);
    if (g.B == 0 || g.H == 0) return;
    if (g.T == 0) { /* no queries: nothing flows back, but dk and dv of the memory rows are still written */
        for (int b = 0; b < g.B; b++)
            for (int j = 0; j < g.S; j++)
                for (int h = 0; h < g.H; h++) {
                    memset(full_row(&t->dk, b, j, h, g.D), 0, sizeof(float) * g.D);
                    memset(full_row(&t->dv, b, j, h, g.D), 0, sizeof(float) * g.D);
                }
        return;
    }
    const int nthreads = lc_get_threads();
    float *base = full_workspace_base(work);
    float *delta = full_delta_of(base, &g, nthreads);
    compute_delta(&g, t, delta, nthreads);

    const long heads = (long)g.B * g.H;
    /* Pass 1, key tiles in increasing order: in causal mode the first ones see the most queries. */
    const long key_tasks = heads * g.k_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < key_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = task % heads;
        key_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)(task / heads), &w);
    }
    /* Pass 2, query tiles in decreasing order: in causal mode the last ones see the most keys. */
    const long query_tasks = heads * g.q_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < query_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = task % heads;
        query_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)(g.q_tiles - 1 - task / heads),
                         &w);
    }
}
