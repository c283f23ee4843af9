/* Backward pass of full (dense) attention, FlashAttention-2 style, deterministic without atomics.
 *   Delta_t = rowsum(dout_t * out_t)                      (one parallel pass over rows)
 *   P = exp(scale q.k - lse), recomputed tile by tile; dP = dout v^T; dS = P * (dP - Delta)
 *   pass 1, one task per (batch, head, key tile):   dv = P^T dout,  dk = scale dS^T q
 *   pass 2, one task per (batch, head, query tile): dq = scale dS k
 * Every output row is owned by one task that sums in a fixed order, so results are bit-identical for
 * any thread count. Scores and dP are computed in both passes: 7 tile products where 5 would do with
 * atomics or per-thread copies of dq.
 *
 * Relative positions (full_rel.h): content scores use scale (q + u), position scores scale (q + v) . r.
 *   pass 1 computes Pos = scale (Q + v) r_range^T per tile pair (64 x 128, query-major) and adds its
 *          diagonals; dk = scale dS^T (Q + u).
 *   pass 2 scatters dS into dPos by the same diagonal map (a stride-65 gather over the dS^T of the previous
 *          and the current key tile), one block of 64 distances per key tile, and adds
 *          dq_pos = scale dPos r_block, dr_block += dPos^T scale (Q + v); du, dv are the sums of the
 *          content and position parts of dq. r, u, v are shared by the batch, so dr, du, dv sum over
 *          b: pass 2 then runs one task per head (serial over batch and query tiles), which owns
 *          dr[:, h], du[h], dv[h] and keeps dr in its workspace slice. No atomics, fixed order. */
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
    for (long r = 0; r < rows; r++) {
        const int query = (int)(r % g->T), h = (int)(r / g->T % g->H), b = (int)(r / g->T / g->H);
        const float *dout = full_row(&t->dout, b, query, h, g->D), *out = full_row(&t->out, b, query, h, g->D);
        double sum = 0;
        for (int d = 0; d < g->D; d++) sum += (double)dout[d] * out[d];
        delta[r] = (float)sum;
    }
}

/* The rows' lse and Delta for queries [t0, t0+n_q); padding lanes get 0 (their dout is 0, so dS is 0). */
static void load_row_stats(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                           int t0, int n_q, full_tiles *w) {
    const size_t row0 = ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < FULL_TILE_Q; i++) {
        w->row_a[i] = i < n_q ? t->lse[row0 + i] : 0.0f;
        w->row_b[i] = i < n_q ? delta[row0 + i] : 0.0f;
    }
}

/* Pass 1: dk and dv of the key tile [s0, s0+n_k), summed over every query tile that sees it.
 * Tiles are query-major here (row i = query t0 + i, keys along the lanes): k^T and v^T are loaded once
 * per task, and each query tile brings scale*q and dout as rows. */
static void key_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                           int k_tile, full_tiles *w) {
    const int s0 = k_tile * FULL_TILE_K, n_k = full_min(FULL_TILE_K, g->S - s0), key_rows = full_round_up(n_k, 4);
    const int dp = g->D_pad;
    const lc_attn_relpos *rel = t->rel;
    full_load_transposed(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f);
    full_load_transposed(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
    memset(w->dk_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    memset(w->dv_acc, 0, sizeof(float) * (size_t)key_rows * dp);

    /* causal: query t sees key s0 once M + t >= s0; window W: until M + t - W + 1 > s0 + n_k - 1 */
    const int first_query = full_query_begin(g, s0), query_end = full_query_end(g, s0, n_k);
    for (int t0 = first_query / FULL_TILE_Q * FULL_TILE_Q; t0 < query_end; t0 += FULL_TILE_Q) {
        const int n_q = full_min(FULL_TILE_Q, g->T - t0), rows = full_round_up(n_q, 4);
        if (rel) {
            full_load_rows_bias(w->q_tile, &t->q, rel->u + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
            full_load_rows_bias(w->rel_qv, &t->q, rel->v + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
        } else {
            full_load_rows(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
        }
        full_load_rows(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
        load_row_stats(g, t, delta, b, h, t0, n_q, w);
        if (t0 + FULL_TILE_Q < query_end) {
            const int n_next = full_min(FULL_TILE_Q, g->T - t0 - FULL_TILE_Q);
            full_prefetch_rows(&t->q, g, b, h, t0 + FULL_TILE_Q, n_next);
            full_prefetch_rows(&t->dout, g, b, h, t0 + FULL_TILE_Q, n_next);
        }
        full_gemm(w->scores, FULL_TILE_K, w->q_tile, dp, 1, w->key_a, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        full_gemm(w->dscores, FULL_TILE_K, w->dout_tile, dp, 1, w->key_b, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        if (rel) {
            full_rel_load_r_reversed_t(w->rel_r, rel, g, h, g->M + t0 - s0);
            full_gemm(w->rel_pos, FULL_REL_SPAN, w->rel_qv, dp, 1, w->rel_r, FULL_REL_SPAN, rows, g->D, FULL_REL_SPAN,
                      0);
        }
        for (int i = 0; i < n_q; i++) { /* P = exp(s - lse), dS = P (dP - Delta); rows >= n_q are not read */
            float *p = w->scores + (size_t)i * FULL_TILE_K, *ds = w->dscores + (size_t)i * FULL_TILE_K;
            const int first_visible = full_first_visible_key(g, t0 + i, s0);
            const int n_visible = full_visible_keys(g, t0 + i, s0, n_k);
            const float lse = w->row_a[i], row_delta = w->row_b[i];
            if (rel) { /* + the position scores: row i of Pos from column 63 - i on */
                const float *pos = w->rel_pos + (size_t)i * FULL_REL_SPAN + (FULL_TILE_Q - 1 - i);
                for (int l = 0; l < FULL_TILE_K / 16; l++)
                    full_vstore(p + 16 * l, full_vload(p + 16 * l) + full_vload(pos + 16 * l));
            }
            for (int l = 0; l < FULL_TILE_K / 16; l++) {
                const full_v16 prob = full_vselect(full_band_mask(16 * l, first_visible, n_visible),
                                                   full_vexp(full_vload(p + 16 * l) - lse), (full_v16){0});
                full_vstore(p + 16 * l, prob);
                full_vstore(ds + 16 * l, prob * (full_vload(ds + 16 * l) - row_delta));
            }
        }
        /* dv += P^T dout, dk += dS^T (scale q): A read transposed from the query-major tiles */
        full_gemm(w->dv_acc, dp, w->scores, 1, FULL_TILE_K, w->dout_tile, dp, key_rows, n_q, dp, 1);
        full_gemm(w->dk_acc, dp, w->dscores, 1, FULL_TILE_K, w->q_tile, dp, key_rows, n_q, dp, 1);
    }
    for (int j = 0; j < n_k; j++) {
        float *dk_row = full_row(&t->dk, b, s0 + j, h, g->D), *dv_row = full_row(&t->dv, b, s0 + j, h, g->D);
        const float *dk = w->dk_acc + (size_t)j * dp, *dv = w->dv_acc + (size_t)j * dp;
        for (int d = 0; d < g->D; d++) dk_row[d] = dk[d], dv_row[d] = dv[d];
    }
}

/* Pass 2, relative positions: dPos^T of the 64 distances [c_hi, c_hi + 63] (rows) from the dS^T of the previous
 * and the current key tile (w->rel_ds), then dq_pos += dPos r_block (r_block: the high block of w->rel_r) and
 * dr[c_hi ..] += dPos^T scale (Q + v). Entry (distance c_hi + e, query i) is key row 64 + i - e of rel_ds. */
static void flush_position_grads(const full_geometry *g, full_tiles *w, int c_hi, int rows) {
    enum { BLOCK = FULL_TILE_K };
    const int dp = g->D_pad;
    const full_vi16 diagonal = full_rel_diagonal();
    for (int e = 0; e < BLOCK; e++)
        for (int l = 0; l < FULL_TILE_Q / 16; l++)
            full_vstore(w->rel_dpos + (size_t)e * FULL_TILE_Q + 16 * l,
                        full_vgather(w->rel_ds + (size_t)(BLOCK - e) * FULL_TILE_Q + 16 * l * (FULL_TILE_Q + 1),
                                     diagonal));
    full_gemm(w->rel_qpos_acc, dp, w->rel_dpos, 1, FULL_TILE_Q, w->rel_r + (size_t)BLOCK * dp, dp, rows, BLOCK, dp, 1);
    full_gemm(w->rel_dr + (size_t)(FULL_REL_DR_FRONT + c_hi) * dp, dp, w->rel_dpos, FULL_TILE_Q, 1, w->rel_qv_rows, dp,
              BLOCK, rows, dp, 1);
}

/* Pass 2: dq of the query tile [t0, t0+n_q), summed over the key tiles it sees. Tiles are key-major
 * (row j = key s0 + j, queries along the lanes), as in the forward pass: (scale q)^T and dout^T are
 * loaded once per task, and each key tile brings k and v as rows. With relative positions it also adds
 * this tile's share of dr, du, dv to the head's accumulators in w (rel_dr, rel_duv). */
static void query_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                             int q_tile, full_tiles *w) {
    enum { CHUNKS = FULL_TILE_Q / 16, BLOCK = FULL_TILE_K };
    const int t0 = q_tile * FULL_TILE_Q, n_q = full_min(FULL_TILE_Q, g->T - t0), rows = full_round_up(n_q, 4);
    const int dp = g->D_pad;
    const lc_attn_relpos *rel = t->rel;
    float *dscores = w->dscores;
    if (rel) {
        const float *u = rel->u + (size_t)h * g->D, *v = rel->v + (size_t)h * g->D;
        full_load_transposed_bias(w->q_tile, &t->q, u, g, b, h, t0, n_q, g->scale);
        full_load_transposed_bias(w->rel_qv, &t->q, v, g, b, h, t0, n_q, g->scale);
        full_load_rows_bias(w->rel_qv_rows, &t->q, v, g, b, h, t0, n_q, g->scale);
        memset(w->rel_qpos_acc, 0, sizeof(float) * (size_t)rows * dp);
        /* dS^T of the key tile before the first one: its keys are hidden from every query here */
        memset(w->rel_ds, 0, sizeof(float) * BLOCK * FULL_TILE_Q);
        dscores = w->rel_ds + BLOCK * FULL_TILE_Q;
    } else {
        full_load_transposed(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
    }
    full_load_transposed(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
    load_row_stats(g, t, delta, b, h, t0, n_q, w);
    full_v16 lse[CHUNKS], row_delta[CHUNKS];
    for (int l = 0; l < CHUNKS; l++)
        lse[l] = full_vload(w->row_a + 16 * l), row_delta[l] = full_vload(w->row_b + 16 * l);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);

    const int key_begin = full_key_tile_begin(g, t0), key_end = full_key_end(g, t0, n_q);
    int c0 = 0; /* M + t0 - s0 of the current key tile */
    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        const int n_k = full_min(FULL_TILE_K, g->S - s0), key_rows = full_round_up(n_k, 4);
        long v_ld;
        full_load_rows(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f); /* k is also the B operand of dq += dS k */
        const float *v_rows = full_rows_operand(w->key_b, &t->v, g, b, h, s0, n_k, &v_ld);
        if (s0 + FULL_TILE_K < key_end) {
            const int n_next = full_min(FULL_TILE_K, g->S - s0 - FULL_TILE_K);
            full_prefetch_rows(&t->k, g, b, h, s0 + FULL_TILE_K, n_next);
            full_prefetch_rows(&t->v, g, b, h, s0 + FULL_TILE_K, n_next);
        }
        full_gemm(w->scores, FULL_TILE_Q, w->key_a, dp, 1, w->q_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        if (rel) {
            c0 = g->M + t0 - s0;
            full_rel_slide(g, rel, h, c0, s0 == key_begin, w);
            full_rel_add_positions(w->scores, w->rel_pos, n_k);
        }
        full_gemm(dscores, FULL_TILE_Q, v_rows, v_ld, 1, w->dout_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        for (int j = 0; j < n_k; j++) /* dS^T = P^T (dP^T - Delta); rows >= n_k are not read */
            for (int l = 0; l < CHUNKS; l++) {
                const float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                float *ds = dscores + (size_t)j * FULL_TILE_Q + 16 * l;
                const full_v16 prob = full_vselect(full_queries_seeing(g, t0, l, s0 + j),
                                                   full_vexp(full_vload(p) - lse[l]), (full_v16){0});
                full_vstore(ds, prob * (full_vload(ds) - row_delta[l]));
            }
        /* dq += dS k, reading dS from the transposed tile */
        full_gemm(w->q_acc, dp, dscores, 1, FULL_TILE_Q, w->key_a, dp, rows, n_k, dp, 1);
        if (rel) { /* the diagonal gathers read every key row: the ones past n_k are hidden keys */
            memset(dscores + (size_t)n_k * FULL_TILE_Q, 0, sizeof(float) * (size_t)(BLOCK - n_k) * FULL_TILE_Q);
            flush_position_grads(g, w, c0, rows);
            memmove(w->rel_ds, dscores, sizeof(float) * BLOCK * FULL_TILE_Q);
        }
    }
    if (rel && c0 > 0) { /* distances [c0 - 64, c0 - 1] still hold the last key tile's part */
        memset(dscores, 0, sizeof(float) * BLOCK * FULL_TILE_Q);
        memmove(w->rel_r + (size_t)BLOCK * dp, w->rel_r, sizeof(float) * BLOCK * dp);
        flush_position_grads(g, w, c0 - BLOCK, rows);
    }
    for (int i = 0; i < n_q; i++) {
        float *dq = full_row(&t->dq, b, t0 + i, h, g->D);
        const float *content = w->q_acc + (size_t)i * dp;
        if (!rel) {
            for (int d = 0; d < g->D; d++) dq[d] = g->scale * content[d];
            continue;
        }
        const float *position = w->rel_qpos_acc + (size_t)i * dp;
        float *du = w->rel_duv, *dv = w->rel_duv + dp;
        for (int d = 0; d < g->D; d++) {
            const float c = g->scale * content[d], p = g->scale * position[d];
            dq[d] = c + p;
            du[d] += c, dv[d] += p;
        }
    }
}

/* dr, du, dv of head h from the accumulators of the pass-2 task that owned the head. */
static void store_position_grads(const full_geometry *g, const lc_attn_relpos *rel, int h, const full_tiles *w) {
    const long row = (long)g->H * g->D;
    for (int d = 0; d < g->S; d++) {
        const float *src = w->rel_dr + (size_t)(FULL_REL_DR_FRONT + d) * g->D_pad;
        float *dst = rel->dr + d * row + (long)h * g->D;
        for (int k = 0; k < g->D; k++) dst[k] = src[k];
    }
    for (int k = 0; k < g->D; k++)
        rel->du[(size_t)h * g->D + k] = w->rel_duv[k], rel->dv[(size_t)h * g->D + k] = w->rel_duv[g->D_pad + k];
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
    /* Tasks go out head by head (the threads share one head's tensors in cache). Pass 1: key tiles in
     * increasing order, as in causal mode the first ones see the most queries. */
    const long key_tasks = heads * g.k_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < key_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = task / g.k_tiles;
        key_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)(task % g.k_tiles), &w);
    }
    if (rel) { /* Pass 2 with relative positions: one task per head owns dr[:, h], du[h], dv[h] */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
        for (int h = 0; h < g.H; h++) {
            full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
            memset(w.rel_dr, 0, sizeof(float) * ((size_t)FULL_REL_DR_FRONT + g.S + FULL_REL_DR_BACK) * g.D_pad);
            memset(w.rel_duv, 0, sizeof(float) * 2 * (size_t)g.D_pad);
            for (int b = 0; b < g.B; b++)
                for (int q_tile = g.q_tiles - 1; q_tile >= 0; q_tile--) query_tile_grads(&g, t, delta, b, h, q_tile, &w);
            store_position_grads(&g, rel, h, &w);
        }
        return;
    }
    /* Pass 2, query tiles in decreasing order: in causal mode the last ones see the most keys. */
    const long query_tasks = heads * g.q_tiles;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < query_tasks; task++) {
        full_tiles w = full_tiles_for_thread(base, &g, lc_thread_id());
        const long head = task / g.q_tiles;
        query_tile_grads(&g, t, delta, (int)(head / g.H), (int)(head % g.H), (int)(g.q_tiles - 1 - task % g.q_tiles),
                         &w);
    }
}
