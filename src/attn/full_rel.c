/* Backward pass of full attention with Transformer-XL relative positions (forward: full.c, tiles of the
 * position term: full_rel.h):
 *   score(t, s) = scale ((q_t + u) . k_s + (q_t + v) . r[M + t - s]),  P, dP, dS as in full_backward.c
 *   dq_t = scale (sum_s dS k_s + sum_s dS r[M+t-s]),  dk_s = scale sum_t dS (q_t + u),  dv_s = sum_t P dout_t
 *   du = sum over b, t of dq's content part,  dv(bias) = of its position part,
 *   dr[d] = scale sum over b and (t, s) with M + t - s = d of dS (q_t + v).
 * r, u, v are shared by the batch, so dr, du, dv sum over b. One task per head owns dr[:, h], du[h], dv[h]
 * and runs serially over batch rows and query tiles: no atomics, a fixed summation order, results
 * independent of the thread count. Since the task owns the head, it also keeps the head's dk, dv (one
 * batch row at a time) in its workspace slice and does everything in one pass over the tile pairs:
 * 8 tile products per pair (scores, positions, dP, dq, dk, dv, dq's position part, dr) where two passes
 * would need 12. The price: the parallelism is the number of heads.
 * Position gradients, per query tile: walking the key tiles in increasing order, the dS^T of the previous
 * and the current key tile lie in one 128-row buffer, where dPos^T of the 64 distances [c0, c0 + 63]
 * (c0 = M + t0 - s0) is the stride-65 diagonal gather of full_rel.h. After the last key tile one more
 * block, [c0 - 64, c0 - 1], is flushed from the last tile's dS^T alone. */
#include <assert.h>
#include <math.h>

#include "attn/attn.h"
#include "attn/full_rel.h"
#include "attn/full_tile.h"
#include "core/threads.h"

/* dPos^T of the distances [c_hi, c_hi + 63] from w->rel_ds, then dq_pos += dPos r_block (the high block of
 * w->rel_r) and dr[c_hi ..] += dPos^T scale (Q + v). Entry (distance c_hi + e, query i) is key row
 * 64 + i - e of rel_ds. */
static void flush_position_grads(const full_geometry *g, full_tiles *w, int c_hi, int rows) {
    enum { BLOCK = FULL_TILE_K };
    const int dp = g->D_pad;
    const lc_vi16 diagonal = full_rel_diagonal();
    for (int e = 0; e < BLOCK; e++)
        for (int l = 0; l < FULL_TILE_Q / 16; l++)
            lc_vstore(w->rel_dpos + (size_t)e * FULL_TILE_Q + 16 * l,
                        lc_vgather(w->rel_ds + (size_t)(BLOCK - e) * FULL_TILE_Q + 16 * l * (FULL_TILE_Q + 1),
                                     diagonal));
    full_gemm(w->rel_qpos_acc, dp, w->rel_dpos, 1, FULL_TILE_Q, w->rel_r + (size_t)BLOCK * dp, dp, rows, BLOCK, dp, 1);
    full_gemm(w->rel_dr + (size_t)(FULL_REL_DR_FRONT + c_hi) * dp, dp, w->rel_dpos, FULL_TILE_Q, 1, w->rel_qv_rows, dp,
              BLOCK, rows, dp, 1);
}

/* Query tile q_tile of (b, h): writes dq, adds to the head's dk, dv (w->rel_dk, rel_dv: batch row b),
 * dr (w->rel_dr), du and dv(bias) (w->rel_duv). Tiles are key-major (row j = key s0 + j, queries along
 * the lanes) as in the forward pass; the products that need query rows (dk, dv, dr) get them as rows.
 * keys: the tile's keys (full_rel_keys), or NULL for the full kind's own (its mask, full_queries_seeing).
 * Always inlined into the two callers below, so the full kind's copy is the code it had before
 * full_rel_keys existed. */
static inline __attribute__((always_inline)) void tile_grads(const full_geometry *g, const lc_attn_tensors *t,
                                                             const float *delta, int b, int h, int q_tile,
                                                             const full_rel_keys *keys, full_tiles *w) {
    enum { CHUNKS = FULL_TILE_Q / 16, BLOCK = FULL_TILE_K };
    const int t0 = q_tile * FULL_TILE_Q, n_q = lc_imin(FULL_TILE_Q, g->T - t0), rows = lc_round_up(n_q, 4);
    const int dp = g->D_pad;
    const lc_attn_relpos *rel = t->rel;
    const float *u = rel->u + (size_t)h * g->D, *v = rel->v + (size_t)h * g->D;
    full_load_transposed_bias(w->q_tile, &t->q, u, g, b, h, t0, n_q, g->scale);
    full_load_rows_bias(w->rel_qu_rows, &t->q, u, g, b, h, t0, n_q, g->scale);
    full_load_transposed_bias(w->rel_qv, &t->q, v, g, b, h, t0, n_q, g->scale);
    full_load_rows_bias(w->rel_qv_rows, &t->q, v, g, b, h, t0, n_q, g->scale);
    full_load_transposed(w->dout_tile, &t->dout, g, b, h, t0, n_q, 1.0f);
    full_load_rows(w->rel_dout_rows, &t->dout, g, b, h, t0, n_q, 1.0f);
    full_load_row_stats(g, t->lse, delta, b, h, t0, n_q, w);
    lc_v16 lse[CHUNKS], row_delta[CHUNKS];
    lc_vi16 query_pos[CHUNKS], first[CHUNKS]; /* with keys: query t0 + i sees [first[i], query_pos[i]] */
    const lc_vi16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int l = 0; l < CHUNKS; l++) {
        lse[l] = lc_vload(w->row_a + 16 * l), row_delta[l] = lc_vload(w->row_b + 16 * l);
        query_pos[l] = lane + (g->M + t0 + 16 * l);
        if (keys) memcpy(&first[l], keys->first + 16 * l, sizeof first[l]);
    }
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);
    memset(w->rel_qpos_acc, 0, sizeof(float) * (size_t)rows * dp);
    /* dS^T of the key tile before the first one: its keys are hidden from every query here */
    memset(w->rel_ds, 0, sizeof(float) * BLOCK * FULL_TILE_Q);
    float *probs = w->scores, *dscores = w->rel_ds + BLOCK * FULL_TILE_Q;

    const int key_begin = keys ? keys->begin : full_key_tile_begin(g, t0);
    const int key_end = keys ? keys->end : full_key_end(g, t0, n_q);
    int c0 = 0; /* M + t0 - s0 of the current key tile */
    for (int s0 = key_begin; s0 < key_end; s0 += FULL_TILE_K) {
        /* the full kind's key tiles are aligned and end at S or at the tile's last visible key */
        const int n_k = lc_imin(FULL_TILE_K, (keys ? key_end : g->S) - s0), key_rows = lc_round_up(n_k, 4);
        long v_ld;
        const float *v_rows = full_load_key_tile(g, t, b, h, s0, n_k, key_end, w, &v_ld);
        /* scores^T = k (scale (q + u))^T + the position diagonals */
        full_gemm(probs, FULL_TILE_Q, w->key_a, dp, 1, w->q_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        c0 = g->M + t0 - s0;
        full_rel_slide(g, rel, h, c0, s0 == key_begin, w);
        full_rel_add_positions(probs, w->rel_pos, n_k);
        full_gemm(dscores, FULL_TILE_Q, v_rows, v_ld, 1, w->dout_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        for (int j = 0; j < n_k; j++) /* P^T = exp(scores^T - lse), dS^T = P^T (dP^T - Delta) */
            for (int l = 0; l < CHUNKS; l++) {
                float *p = probs + (size_t)j * FULL_TILE_Q + 16 * l, *ds = dscores + (size_t)j * FULL_TILE_Q + 16 * l;
                const int key = s0 + j;
                const lc_vi16 seen = keys ? lc_vige(query_pos[l], lc_vibroadcast(key)) & lc_vile(first[l], lc_vibroadcast(key))
                                            : full_queries_seeing(g, t0, l, key);
                const lc_v16 prob = lc_vselect(seen, lc_vexp(lc_vload(p) - lse[l]), (lc_v16){0});
                lc_vstore(p, prob);
                lc_vstore(ds, prob * (lc_vload(ds) - row_delta[l]));
            }
        /* key rows past n_k: read by the dk/dv products (up to key_rows) and the diagonal gathers */
        memset(probs + (size_t)n_k * FULL_TILE_Q, 0, sizeof(float) * (size_t)(BLOCK - n_k) * FULL_TILE_Q);
        memset(dscores + (size_t)n_k * FULL_TILE_Q, 0, sizeof(float) * (size_t)(BLOCK - n_k) * FULL_TILE_Q);
        /* dq += dS k (dS read from the transposed tile); dv += P^T dout, dk += dS^T scale (q + u) */
        full_gemm(w->q_acc, dp, dscores, 1, FULL_TILE_Q, w->key_a, dp, rows, n_k, dp, 1);
        full_gemm(w->rel_dv + (size_t)s0 * dp, dp, probs, FULL_TILE_Q, 1, w->rel_dout_rows, dp, key_rows, rows, dp, 1);
        full_gemm(w->rel_dk + (size_t)s0 * dp, dp, dscores, FULL_TILE_Q, 1, w->rel_qu_rows, dp, key_rows, rows, dp, 1);
        flush_position_grads(g, w, c0, rows);
        memmove(w->rel_ds, dscores, sizeof(float) * BLOCK * FULL_TILE_Q);
    }
    if (c0 > 0) { /* distances [c0 - 64, c0 - 1] still hold the last key tile's part */
        memset(dscores, 0, sizeof(float) * BLOCK * FULL_TILE_Q);
        memmove(w->rel_r + (size_t)BLOCK * dp, w->rel_r, sizeof(float) * BLOCK * dp);
        flush_position_grads(g, w, c0 - BLOCK, rows);
    }
    float *du = w->rel_duv, *dv = w->rel_duv + dp;
    for (int i = 0; i < n_q; i++) {
        float *dq = lc_view_row(&t->dq, b, t0 + i, h, g->D);
        const float *content = w->q_acc + (size_t)i * dp, *position = w->rel_qpos_acc + (size_t)i * dp;
        for (int d = 0; d < g->D; d++) {
            const float c = g->scale * content[d], p = g->scale * position[d];
            dq[d] = c + p;
            du[d] += c, dv[d] += p;
        }
    }
}

static void query_tile_grads(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b, int h,
                             int q_tile, full_tiles *w) {
    tile_grads(g, t, delta, b, h, q_tile, NULL, w);
}

static void query_tile_grads_keys(const full_geometry *g, const lc_attn_tensors *t, const float *delta, int b,
                                  int h, int q_tile, const full_rel_keys *keys, full_tiles *w) {
    tile_grads(g, t, delta, b, h, q_tile, keys, w);
}

void full_rel_backward(const full_geometry *g, const lc_attn_tensors *t, const float *delta, float *base,
                       int nthreads) {
    full_rel_backward_keys(g, t, delta, base, nthreads, NULL, NULL);
}

/* keys_of NULL: the full kind's keys (full_rel_backward). */
void full_rel_backward_keys(const full_geometry *g, const lc_attn_tensors *t, const float *delta, float *base,
                            int nthreads, full_rel_keys_fn keys_of, const void *ctx) {
    const lc_attn_relpos *rel = t->rel;
    assert(rel && g->relpos && g->causal);
    (void)nthreads; /* only the OpenMP build uses it */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (int h = 0; h < g->H; h++) {
        full_tiles w = full_tiles_for_thread(base, g, lc_thread_id());
        const int dp = g->D_pad;
        const size_t key_floats = full_rel_key_rows(g) * dp;
        memset(w.rel_dr, 0, sizeof(float) * ((size_t)FULL_REL_DR_FRONT + g->S + FULL_REL_DR_BACK) * dp);
        memset(w.rel_duv, 0, sizeof(float) * 2 * (size_t)dp);
        for (int b = 0; b < g->B; b++) {
            memset(w.rel_dk, 0, sizeof(float) * key_floats);
            memset(w.rel_dv, 0, sizeof(float) * key_floats);
            for (int q_tile = 0; q_tile < g->q_tiles; q_tile++) {
                if (!keys_of) {
                    query_tile_grads(g, t, delta, b, h, q_tile, &w);
                    continue;
                }
                const int t0 = q_tile * FULL_TILE_Q;
                full_rel_keys keys;
                keys_of(ctx, g, t0, lc_imin(FULL_TILE_Q, g->T - t0), &keys);
                query_tile_grads_keys(g, t, delta, b, h, q_tile, &keys, &w);
            }
            for (int s = 0; s < g->S; s++) {
                float *dk = lc_view_row(&t->dk, b, s, h, g->D), *dv = lc_view_row(&t->dv, b, s, h, g->D);
                const float *dk_acc = w.rel_dk + (size_t)s * dp, *dv_acc = w.rel_dv + (size_t)s * dp;
                for (int d = 0; d < g->D; d++) dk[d] = dk_acc[d], dv[d] = dv_acc[d];
            }
        }
        const long row = (long)g->H * g->D;
        for (int d = 0; d < g->S; d++) {
            const float *src = w.rel_dr + (size_t)(FULL_REL_DR_FRONT + d) * dp;
            float *dst = rel->dr + d * row + (long)h * g->D;
            for (int k = 0; k < g->D; k++) dst[k] = src[k];
        }
        for (int k = 0; k < g->D; k++)
            rel->du[(size_t)h * g->D + k] = w.rel_duv[k], rel->dv[(size_t)h * g->D + k] = w.rel_duv[dp + k];
    }
}
