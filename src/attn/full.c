/* Full (dense) attention, the `full` attention kind: workspace size and the streaming forward pass.
 * Each (batch, head, 64-query tile) is one independent task: it walks the key tiles in order, keeps a
 * running row max and row sum (online softmax, as in FlashAttention), rescales its output accumulator
 * when the max grows, and saves only the row log-sum-exp for the backward pass (full_backward.c).
 * No T x S matrix exists anywhere; tiles live in a per-thread slice of the caller's workspace. */
#include <assert.h>
#include <math.h>

#include "attn/attn.h"
#include "attn/full_tile.h"
#include "core/threads.h"

const lc_attn_kind lc_attn_full = {"full", lc_attn_full_workspace, lc_attn_full_forward, lc_attn_full_backward};

size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts, int nthreads) {
    (void)opts;
    if (nthreads < 1) nthreads = 1;
    const full_geometry g = full_geometry_of(s);
    const size_t delta = (size_t)g.B * g.H * g.T; /* backward's Delta = rowsum(dout * out) */
    return 16 + (size_t)nthreads * g.thread_floats + delta;
}

/* Online-softmax update of one query row with the scores of one key tile (n_visible keys visible):
 * turns the scores into exp(score - new max) in place, updates running max and sum, and returns the
 * factor the row's output accumulator must be multiplied by. */
static float online_softmax_row(float *scores, int n_visible, float *running_max, float *running_sum) {
    if (n_visible == 0) {
        memset(scores, 0, sizeof(float) * FULL_TILE_K);
        return 1.0f;
    }
    full_v16 chunk[FULL_TILE_K / 16];
    full_v16 chunk_max = full_vsplat(-INFINITY);
    for (int l = 0; l < FULL_TILE_K / 16; l++) {
        chunk[l] = full_vselect(full_visible_mask(16 * l, n_visible), full_vload(scores + 16 * l),
                                full_vsplat(-INFINITY));
        chunk_max = full_vmax(chunk_max, chunk[l]);
    }
    const float tile_max = full_hmax(chunk_max);
    const float old_max = *running_max;
    const float new_max = tile_max > old_max ? tile_max : old_max;
    const float correction = old_max == -INFINITY ? 0.0f : expf(old_max - new_max);
    full_v16 sum = {0};
    for (int l = 0; l < FULL_TILE_K / 16; l++) {
        const full_v16 p = full_vexp(chunk[l] - new_max);
        full_vstore(scores + 16 * l, p);
        sum += p;
    }
    *running_max = new_max;
    *running_sum = *running_sum * correction + full_hsum(sum);
    return correction;
}

static void forward_query_tile(const full_geometry *g, const lc_attn_tensors *t, int b, int h, int q_tile,
                               full_tiles *w) {
    const int t0 = q_tile * FULL_TILE_Q, n_q = full_min(FULL_TILE_Q, g->T - t0), rows = full_round_up(n_q, 4);
    const int dp = g->D_pad;
    float *running_max = w->row_a, *running_sum = w->row_b;
    full_load_rows(w->q_scaled, &t->q, g, b, h, t0, n_q, g->scale);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);
    for (int i = 0; i < n_q; i++) running_max[i] = -INFINITY, running_sum[i] = 0;

    const int key_end = full_key_end(g, t0, n_q);
    for (int s0 = 0; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = full_min(FULL_TILE_K, g->S - s0);
        full_load_transposed(w->k_t, &t->k, g, b, h, s0, n_k);
        full_load_rows(w->key_rows, &t->v, g, b, h, s0, n_k, 1.0f);
        full_gemm(w->scores, FULL_TILE_K, w->q_scaled, dp, 1, w->k_t, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        for (int i = 0; i < rows; i++) {
            float *p_row = w->scores + (size_t)i * FULL_TILE_K;
            if (i >= n_q) { /* padding rows: keep the product below finite */
                memset(p_row, 0, sizeof(float) * FULL_TILE_K);
                continue;
            }
            const int n_visible = full_visible_keys(g, t0 + i, s0, n_k);
            const float correction = online_softmax_row(p_row, n_visible, &running_max[i], &running_sum[i]);
            if (correction != 1.0f) {
                float *acc = w->q_acc + (size_t)i * dp;
                for (int d = 0; d < dp; d++) acc[d] *= correction;
            }
        }
        full_gemm(w->q_acc, dp, w->scores, FULL_TILE_K, 1, w->key_rows, dp, rows, n_k, dp, 1);
    }

    float *lse = t->lse + ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < n_q; i++) {
        /* every query sees key 0, so the sum is positive */
        const float inv_sum = 1.0f / running_sum[i];
        float *out = full_row(&t->out, b, t0 + i, h, g->D);
        const float *acc = w->q_acc + (size_t)i * dp;
        for (int d = 0; d < g->D; d++) out[d] = acc[d] * inv_sum;
        lse[i] = running_max[i] + logf(running_sum[i]);
    }
}

void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    (void)opts;
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    const full_geometry g = full_geometry_of(s);
    if (g.B == 0 || g.H == 0 || g.T == 0) return;
    const int nthreads = lc_get_threads();
    (void)nthreads; /* only the OpenMP build uses it */
    float *base = full_workspace_base(work);
    const long per_head = g.q_tiles, tasks = (long)g.B * g.H * per_head;
    /* Tasks go out longest first (in causal mode the last query tiles see the most keys). Each output
     * row is computed by one task in a fixed order, so results do not depend on the thread count. */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = task % (g.B * g.H);
        const int q_tile = (int)(per_head - 1 - task / (g.B * g.H));
        forward_query_tile(&g, t, (int)(head / g.H), (int)(head % g.H), q_tile, &w);
    }
}
