/* The relative-position (Transformer-XL) term of the tiled kinds (full, block), computed tile by tile.
 * score(t, s) gets scale * (q_t + v) . r[M + t - s]. For a (query tile t0, key tile s0) pair with
 * c0 = M + t0 - s0, entry (query i, key j) needs distance c0 + i - j. The key-major passes keep
 *   Pos^T[e][i] = r[c0 - 64 + e] . scale (q_i + v),   e in [0, 128)  (rows: distances, lanes: queries)
 * and read entry (i, j) at row 64 + i - j: element (64 - j) * 64 + 65 i, a stride-65 gather along the
 * lanes. This is the paper's shift trick (pad a column, reshape, drop a row) done tile by tile: the
 * padded row length 65 is what turns the diagonal into a constant stride. Walking the key tiles in
 * increasing order slides the distance range down by 64, so the low block of 64 rows becomes the high
 * one and only one new block is computed per key tile. */
#ifndef LC_ATTN_FULL_REL_H
#define LC_ATTN_FULL_REL_H

#include <stdint.h>
#include <string.h>

#include "attn/full_tile.h"

/* Lane offsets 65 * lane: the diagonal of a 64-lane tile whose rows are 64 floats apart. */
static inline lc_vi16 full_rel_diagonal(void) {
    const lc_vi16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return lane * (FULL_TILE_Q + 1);
}

/* Head h of r for distances [d0, d0 + n) into n rows (stride D_pad); rows outside [0, S) are zero. */
static inline void full_rel_load_r(float *dst, const lc_attn_relpos *rel, const full_geometry *g, int h, int d0,
                                   int n) {
    const long row = (long)g->H * g->D;
    for (int e = 0; e < n; e++) {
        float *out = dst + (size_t)e * g->D_pad;
        const int d = d0 + e;
        if (d < 0 || d >= g->S) {
            memset(out, 0, sizeof(float) * g->D_pad);
            continue;
        }
        const float *src = rel->r + d * row + (long)h * g->D;
        for (int k = 0; k < g->D; k++) out[k] = src[k];
        for (int k = g->D; k < g->D_pad; k++) out[k] = 0;
    }
}

/* Asks for head h's rows of r at distances [d0, d0 + n) (those inside [0, S)) to be brought into cache: the
 * next key tile's block, while this one is computed. r is read 64 rows at a time, rows H * D apart, once
 * per query tile and head: without this the forward waits on each row (19% of XL evaluation's samples
 * at attention length 3,800 on Zen 4 were the copy in full_rel_load_r). */
static inline void full_rel_prefetch_r(const lc_attn_relpos *rel, const full_geometry *g, int h, int d0, int n) {
    const long row = (long)g->H * g->D;
    for (int d = d0 < 0 ? 0 : d0; d < d0 + n && d < g->S; d++) {
        const char *p = (const char *)(rel->r + d * row + (long)h * g->D);
        for (int offset = 0; offset < g->D * (int)sizeof(float); offset += 64) __builtin_prefetch(p + offset, 0, 2);
    }
}

/* Brings w->rel_pos / w->rel_r to the distances [c0 - 64, c0 + 63] of the key tile with c0 = M + t0 - s0.
 * `first`: nothing is kept from a previous key tile (else it was the tile s0 - 64). Needs w->rel_qv
 * (scale (q + v), D x 64 transposed). Positions are computed for the first `lanes` queries of the tile
 * (a multiple of 16; the other columns of rel_pos are left as they are and must not be read). */
static inline __attribute__((always_inline)) void full_rel_slide_lanes(const full_geometry *g,
                                                                       const lc_attn_relpos *rel, int h, int c0,
                                                                       int first, int lanes, full_tiles *w) {
    enum { BLOCK = FULL_TILE_K };
    const int dp = g->D_pad, rows = first ? 2 * BLOCK : BLOCK;
    if (!first) {
        memmove(w->rel_pos + BLOCK * FULL_TILE_Q, w->rel_pos, sizeof(float) * BLOCK * FULL_TILE_Q);
        memmove(w->rel_r + (size_t)BLOCK * dp, w->rel_r, sizeof(float) * BLOCK * dp);
    }
    full_rel_load_r(w->rel_r, rel, g, h, c0 - BLOCK, rows);
    full_gemm(w->rel_pos, FULL_TILE_Q, w->rel_r, dp, 1, w->rel_qv, FULL_TILE_Q, rows, g->D, lanes, 0);
}

static inline void full_rel_slide(const full_geometry *g, const lc_attn_relpos *rel, int h, int c0, int first,
                                  full_tiles *w) {
    full_rel_slide_lanes(g, rel, h, c0, first, FULL_TILE_Q, w);
}

/* scores^T[j][i] += Pos^T[64 + i - j][i] for the key rows j < n_k and the first 16 * chunks lanes. */
static inline __attribute__((always_inline)) void full_rel_add_positions_lanes(float *scores_t, const float *pos,
                                                                               int n_k, int chunks) {
    const lc_vi16 diagonal = full_rel_diagonal();
    for (int j = 0; j < n_k; j++)
        for (int l = 0; l < chunks; l++) {
            float *p = scores_t + (size_t)j * FULL_TILE_Q + 16 * l;
            const float *diag = pos + (size_t)(FULL_TILE_K - j) * FULL_TILE_Q + 16 * l * (FULL_TILE_Q + 1);
            lc_vstore(p, lc_vload(p) + lc_vgather(diag, diagonal));
        }
}

static inline void full_rel_add_positions(float *scores_t, const float *pos, int n_k) {
    full_rel_add_positions_lanes(scores_t, pos, n_k, FULL_TILE_Q / 16);
}

/* Backward with relative positions (full_rel.c): one pass, one task per head, after Delta is computed.
 * base: the aligned workspace (full_workspace_base). */
void full_rel_backward(const full_geometry *g, const lc_attn_tensors *t, const float *delta, float *base,
                       int nthreads);

/* The same backward for any causal pattern in which each query sees an interval of keys ending at itself
 * (full with or without a window, block): query t0 + i of a tile of 64 sees the keys [first[i], M + t0 + i],
 * and the tile walks the key tiles [begin, end) in steps of 64 (begin need not be a multiple of 64; keys
 * before begin are hidden from every query of the tile, end <= S). keys_of fills them for the tile at t0
 * (n_q queries; first[] for all 64 lanes). */
typedef struct {
    int begin, end;
    int32_t first[FULL_TILE_Q];
} full_rel_keys;

typedef void (*full_rel_keys_fn)(const void *ctx, const full_geometry *g, int t0, int n_q, full_rel_keys *keys);

void full_rel_backward_keys(const full_geometry *g, const lc_attn_tensors *t, const float *delta, float *base,
                            int nthreads, full_rel_keys_fn keys_of, const void *ctx);

#endif
