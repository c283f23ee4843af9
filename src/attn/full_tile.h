/* The 64 x 64 tile machinery of the attention kinds that work on score tiles (full, block, bigbird,
 * strided and window through full, the global rows of window, lsh's chunks): tile sizes, the geometry and
 * per-thread workspace layout, a register-blocked tile product, copies between strided views and padded
 * tiles, masks, and the online-softmax step. Vector types and exp come from kernels/vec.h; the full kind's
 * whole passes, built from these, are in full_pass.h. */
#ifndef LC_ATTN_FULL_TILE_H
#define LC_ATTN_FULL_TILE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn/attn.h"
#include "core/threads.h"
#include "kernels/vec.h"

/* queries x keys per tile; both are 4 vectors, and transposed tiles of either kind share one layout */
enum { FULL_TILE_Q = 64, FULL_TILE_K = 64 };

/* Register block of the tile product: 4 rows x FULL_GEMM_NV native vectors (lc_vn, LC_VW floats): 4 x 64
 * columns in 16 zmm with AVX-512 (of 32), 4 x 24 in 12 ymm with AVX2 (of 16, the other 4 for B and the
 * broadcast). */
#if LC_VW == 16
#define FULL_GEMM_NV 4
#else
#define FULL_GEMM_NV 3
#endif

/* rows (4, 8 or 16) x (LC_VW*nv) columns of C = (accumulate ? C : 0) + A * B, the block kept in registers.
 * A element (r, k) is a[r*a_rs + k*a_cs], so A may be read transposed; B is row-major. Each element of C
 * sums over k in order, whatever the block shape, so results do not depend on the vector width or on
 * the block's rows. */
static inline __attribute__((always_inline)) void full_gemm_block(float *c, long ldc, const float *a, long a_rs,
                                                                  long a_cs, const float *b, long ldb, int kdim,
                                                                  int rows, int nv, int accumulate) {
    lc_vn acc[16][FULL_GEMM_NV];
    for (int i = 0; i < rows; i++)
        for (int l = 0; l < nv; l++) acc[i][l] = accumulate ? lc_vnload(c + i * ldc + LC_VW * l) : (lc_vn){0};
    for (int k = 0; k < kdim; k++) {
        lc_vn brow[FULL_GEMM_NV];
        for (int l = 0; l < nv; l++) brow[l] = lc_vnload(b + k * ldb + LC_VW * l);
        for (int i = 0; i < rows; i++) {
            const float x = a[i * a_rs + k * a_cs]; /* x * lc_vn: one broadcast (0 + x would add) */
            for (int l = 0; l < nv; l++) acc[i][l] += x * brow[l];
        }
    }
    for (int i = 0; i < rows; i++)
        for (int l = 0; l < nv; l++) lc_vnstore(c + i * ldc + LC_VW * l, acc[i][l]);
}

/* C[rows x ncols] (=|+=) A[rows x kdim] * B[kdim x ncols]; rows a multiple of 4, ncols of 16.
 * Products one or two vectors wide (a head of 16 or 32 floats with AVX-512: P v and the gradients'
 * dS k, dS^T q, P^T dout) take 16 or 8 rows per block, 16 accumulators where 4 rows would give 4 or 8:
 * enough independent sums to hide the latency of the fused multiply-add, and each loaded row of B serves
 * more of them. */
static inline void full_gemm(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b, long ldb,
                             int rows, int kdim, int ncols, int accumulate) {
    if (LC_VW == 16 && ncols == LC_VW) {
        int r = 0;
        for (; r + 16 <= rows; r += 16)
            full_gemm_block(c + r * ldc, ldc, a + r * a_rs, a_rs, a_cs, b, ldb, kdim, 16, 1, accumulate);
        if (r + 8 <= rows) {
            full_gemm_block(c + r * ldc, ldc, a + r * a_rs, a_rs, a_cs, b, ldb, kdim, 8, 1, accumulate);
            r += 8;
        }
        if (r < rows) full_gemm_block(c + r * ldc, ldc, a + r * a_rs, a_rs, a_cs, b, ldb, kdim, 4, 1, accumulate);
        return;
    }
    if (LC_VW == 16 && ncols == 2 * LC_VW) {
        int r = 0;
        for (; r + 8 <= rows; r += 8)
            full_gemm_block(c + r * ldc, ldc, a + r * a_rs, a_rs, a_cs, b, ldb, kdim, 8, 2, accumulate);
        if (r < rows) full_gemm_block(c + r * ldc, ldc, a + r * a_rs, a_rs, a_cs, b, ldb, kdim, 4, 2, accumulate);
        return;
    }
    for (int r = 0; r < rows; r += 4) {
        float *c_rows = c + r * ldc;
        const float *a_rows = a + r * a_rs;
        int j = 0;
        for (; j + LC_VW * FULL_GEMM_NV <= ncols; j += LC_VW * FULL_GEMM_NV)
            full_gemm_block(c_rows + j, ldc, a_rows, a_rs, a_cs, b + j, ldb, kdim, 4, FULL_GEMM_NV, accumulate);
        /* the rest (fewer than FULL_GEMM_NV <= 4 vectors) as 2 + 1, each call with a constant nv so that acc
         * stays in registers; no nv = 3 block: one more copy of the loop made GCC stop inlining full_gemm */
        if (j + LC_VW * 2 <= ncols) {
            full_gemm_block(c_rows + j, ldc, a_rows, a_rs, a_cs, b + j, ldb, kdim, 4, 2, accumulate);
            j += LC_VW * 2;
        }
        if (j + LC_VW <= ncols)
            full_gemm_block(c_rows + j, ldc, a_rows, a_rs, a_cs, b + j, ldb, kdim, 4, 1, accumulate);
    }
}

/* Geometry shared by every pass: S keys, D padded to whole vectors, per-thread tile slices.
 * window is 0 when unlimited (a window >= S is stored as 0: it hides nothing). A window W hides the keys
 * more than W - 1 positions before the query and, when not causal, those more than W - 1 after it (the
 * bidirectional band of the window kind, src/attn/window.c; the public interface allows a window only
 * with causal attention, XL's same_length). */
typedef struct {
    int B, H, T, M, S, D, D_pad, causal, window, relpos;
    float scale;
    int q_tiles, k_tiles;
    size_t thread_floats; /* one thread's slice */
} full_geometry;

/* Relative positions: a (query tile t0, key tile s0) pair needs distances M+t0-s0 + i - j for i, j in
 * [0, 64): a range of 127 rows of r. The key-major passes (forward, dq pass) keep the 128 distances
 * [c0 - 64, c0 + 63], c0 = M + t0 - s0, as two blocks of 64 rows ("low" first, then "high"); moving to the
 * next key tile, the low block becomes the high one and one new block is computed. */
enum { FULL_REL_SPAN = 2 * FULL_TILE_K, FULL_REL_DR_FRONT = 2 * FULL_TILE_K, FULL_REL_DR_BACK = FULL_TILE_K };

/* One thread's tiles, carved from the workspace. Every slot of query or key size holds
 * FULL_TILE x D_pad floats, enough for either layout: rows (stride D_pad) or transposed (D x FULL_TILE). */
typedef struct {
    float *q_tile;         /* scale * q: D x FULL_TILE_Q transposed (forward, dq pass) or rows (dk/dv pass) */
    float *dout_tile;      /* dout, laid out like q_tile */
    float *q_acc;          /* FULL_TILE_Q x D_pad: output (forward) or dq (backward) accumulator */
    float *key_a, *key_b;  /* k, v: rows (forward, dq pass) or D x FULL_TILE_K transposed (dk/dv pass) */
    float *dk_acc, *dv_acc; /* FULL_TILE_K x D_pad accumulators of the dk/dv pass */
    float *scores;         /* FULL_TILE x FULL_TILE: scores, then probabilities */
    float *dscores;        /* FULL_TILE x FULL_TILE: dP, then dS */
    float *row_a, *row_b;  /* FULL_TILE_Q each: running max / sum, or lse / Delta */
    /* Relative positions only (geometry relpos = 1), else NULL. The backward (full_rel.c) is one pass per
     * head that also keeps the head's dk, dv (one batch row at a time) and dr. */
    float *rel_pos;       /* 128 x 64: Pos^T (row e = distance c0 - 64 + e, queries along the lanes) */
    float *rel_r;         /* 128 x D_pad: rows of r for those distances */
    float *rel_ds;        /* 128 x 64: dS^T of the previous key tile, then of the current one */
    float *rel_dpos;      /* 64 x 64: dPos^T of one block of 64 distances */
    float *rel_qv;        /* scale (q + v), D x 64 transposed */
    float *rel_qv_rows;   /* scale (q + v), 64 x D_pad rows */
    float *rel_qu_rows;   /* scale (q + u), 64 x D_pad rows */
    float *rel_dout_rows; /* dout, 64 x D_pad rows */
    float *rel_qpos_acc;  /* 64 x D_pad: position part of dq */
    float *rel_dr;        /* (128 + S + 64) x D_pad: dr of one head, distance d at row 128 + d */
    float *rel_dk, *rel_dv; /* round_up(S, 64) x D_pad: dk, dv of one (batch, head) */
    float *rel_duv;       /* 2 x D_pad: du and dv of one head */
} full_tiles;

static inline size_t full_rel_key_rows(const full_geometry *g) { return (size_t)g->k_tiles * FULL_TILE_K; }

static inline size_t full_rel_floats(const full_geometry *g) {
    const size_t q_tile = (size_t)FULL_TILE_Q * g->D_pad;
    return 2 * (size_t)FULL_REL_SPAN * FULL_TILE_Q + (size_t)FULL_REL_SPAN * g->D_pad + FULL_TILE_Q * FULL_TILE_K +
           5 * q_tile + ((size_t)FULL_REL_DR_FRONT + g->S + FULL_REL_DR_BACK) * g->D_pad +
           2 * full_rel_key_rows(g) * g->D_pad + 2 * (size_t)g->D_pad;
}

static inline full_geometry full_geometry_of(const lc_attn_shape *s) {
    full_geometry g;
    g.B = s->B, g.H = s->H, g.T = s->T, g.M = s->M, g.S = s->M + s->T, g.D = s->D, g.causal = s->causal;
    g.window = s->window > 0 && s->window < g.S ? s->window : 0;
    g.relpos = s->relpos != 0;
    g.scale = s->scale;
    g.D_pad = lc_round_up(g.D, 16);
    g.q_tiles = (g.T + FULL_TILE_Q - 1) / FULL_TILE_Q;
    g.k_tiles = (g.S + FULL_TILE_K - 1) / FULL_TILE_K;
    const size_t q_tile = (size_t)FULL_TILE_Q * g.D_pad, k_tile = (size_t)FULL_TILE_K * g.D_pad;
    g.thread_floats = 3 * q_tile + 4 * k_tile + 2 * FULL_TILE_Q * FULL_TILE_K + 2 * FULL_TILE_Q;
    if (g.relpos) g.thread_floats += full_rel_floats(&g);
    return g;
}

/* Workspace: [16 floats of alignment slack][thread 0 tiles]...[thread n-1 tiles][Delta: B*H*T]. */
static inline float *full_workspace_base(float *work) {
    uintptr_t p = (uintptr_t)work;
    return (float *)((p + 63) & ~(uintptr_t)63);
}

/* task(ctx, b, h) for every (batch, head) of B x H: one task each, handed out one at a time to nthreads threads;
 * a task finds its thread's slice of the workspace by lc_thread_id(). */
static inline void full_each_head(int B, int H, int nthreads, void (*task)(const void *ctx, int b, int h),
                                  const void *ctx) {
    const long heads = (long)B * H;
    (void)nthreads; /* only the OpenMP build uses it */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long head = 0; head < heads; head++) task(ctx, (int)(head / H), (int)(head % H));
}

static inline full_tiles full_tiles_for_thread(float *base, const full_geometry *g, int thread) {
    float *p = base + (size_t)thread * g->thread_floats;
    const size_t q_tile = (size_t)FULL_TILE_Q * g->D_pad, k_tile = (size_t)FULL_TILE_K * g->D_pad;
    full_tiles w;
    w.q_tile = p, p += q_tile;
    w.dout_tile = p, p += q_tile;
    w.q_acc = p, p += q_tile;
    w.key_a = p, p += k_tile;
    w.key_b = p, p += k_tile;
    w.dk_acc = p, p += k_tile;
    w.dv_acc = p, p += k_tile;
    w.scores = p, p += FULL_TILE_Q * FULL_TILE_K;
    w.dscores = p, p += FULL_TILE_Q * FULL_TILE_K;
    w.row_a = p, p += FULL_TILE_Q;
    w.row_b = p, p += FULL_TILE_Q;
    w.rel_pos = w.rel_r = w.rel_ds = w.rel_dpos = w.rel_qv = w.rel_qv_rows = w.rel_qu_rows = w.rel_dout_rows =
        w.rel_qpos_acc = w.rel_dr = w.rel_dk = w.rel_dv = w.rel_duv = NULL;
    if (g->relpos) {
        w.rel_pos = p, p += (size_t)FULL_REL_SPAN * FULL_TILE_Q;
        w.rel_r = p, p += (size_t)FULL_REL_SPAN * g->D_pad;
        w.rel_ds = p, p += (size_t)FULL_REL_SPAN * FULL_TILE_Q;
        w.rel_dpos = p, p += FULL_TILE_Q * FULL_TILE_K;
        w.rel_qv = p, p += q_tile;
        w.rel_qv_rows = p, p += q_tile;
        w.rel_qu_rows = p, p += q_tile;
        w.rel_dout_rows = p, p += q_tile;
        w.rel_qpos_acc = p, p += q_tile;
        w.rel_dr = p, p += ((size_t)FULL_REL_DR_FRONT + g->S + FULL_REL_DR_BACK) * g->D_pad;
        w.rel_dk = p, p += full_rel_key_rows(g) * g->D_pad;
        w.rel_dv = p, p += full_rel_key_rows(g) * g->D_pad;
        w.rel_duv = p;
    }
    return w;
}

static inline float *full_delta_of(float *base, const full_geometry *g, int nthreads) {
    return base + (size_t)nthreads * g->thread_floats;
}

/* The full kind's backward runs one task per (batch, head) when there are enough heads to keep the
 * threads busy (4 per thread) and the head's dq fits in FULL_ONE_PASS_MAX_FLOATS (256 KiB: T <= 4,096 at
 * D = 16, LRA's longest inputs; 2,048 at D = 32; 1,024 at D = 64); each thread then needs one head's dq
 * (q_tiles x 64 + 4 rows of D_pad), returned here; 0: the two passes (full_backward.c), whose workspace does
 * not grow with T. Relative positions have their own backward (full_rel.c). */
enum { FULL_ONE_PASS_MAX_FLOATS = 65536 + 4 * 64 };
static inline size_t full_one_pass_dq_floats(const full_geometry *g, int nthreads) {
    /* 4 rows more: the block kind's query tiles start anywhere, and a product writes up to 3 rows past T */
    const size_t floats = ((size_t)g->q_tiles * FULL_TILE_Q + 4) * g->D_pad;
    if (g->relpos || (long)g->B * g->H < 4L * nthreads || floats > FULL_ONE_PASS_MAX_FLOATS) return 0;
    return floats;
}

/* The one-pass backward's end for a (batch, head): dq = scale * the accumulator's first T rows. */
static inline void full_store_dq(const full_geometry *g, const lc_attn_tensors *t, int b, int h, const float *dq_acc) {
    for (int i = 0; i < g->T; i++) {
        float *dq = lc_view_row(&t->dq, b, i, h, g->D);
        for (int d = 0; d < g->D; d++) dq[d] = g->scale * dq_acc[(size_t)i * g->D_pad + d];
    }
}

/* The threads' dq accumulators of the one-pass backward: after Delta, from a multiple of 16 floats. */
static inline float *full_one_pass_dq_base(float *base, const full_geometry *g, int nthreads) {
    const size_t delta = (size_t)g->B * g->H * g->T;
    return full_delta_of(base, g, nthreads) + (delta + 15) / 16 * 16;
}

/* Backward: the rows' lse and Delta (backward's rowsum(dout * out), [B*H*T]) for queries [t0, t0+n_q) into
 * w->row_a, w->row_b; padding lanes get 0 (their dout is 0, so dS is 0). */
static inline void full_load_row_stats(const full_geometry *g, const float *lse, const float *delta, int b, int h,
                                       int t0, int n_q, full_tiles *w) {
    const size_t row0 = ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < FULL_TILE_Q; i++) {
        w->row_a[i] = i < n_q ? lse[row0 + i] : 0.0f;
        w->row_b[i] = i < n_q ? delta[row0 + i] : 0.0f;
    }
}

/* rows [t0, t0+n) of a view into a row-major tile (stride D_pad) times `mul`; pad columns and the rows
 * up to a multiple of 4 are zeroed so products over the padding stay finite. */
static inline void full_load_rows(float *tile, const lc_view *v, const full_geometry *g, int b, int h, int t0,
                                  int n, float mul) {
    const int rows = lc_round_up(n, 4);
    for (int i = 0; i < rows; i++) {
        float *dst = tile + (size_t)i * g->D_pad;
        if (i < n) {
            const float *src = lc_view_row(v, b, t0 + i, h, g->D);
            for (int d = 0; d < g->D; d++) dst[d] = mul * src[d];
            for (int d = g->D; d < g->D_pad; d++) dst[d] = 0;
        } else {
            memset(dst, 0, sizeof(float) * g->D_pad);
        }
    }
}

/* As full_load_rows, with mul * (row + bias) (bias: D floats, the head's slice). */
static inline void full_load_rows_bias(float *tile, const lc_view *v, const float *bias, const full_geometry *g, int b,
                                       int h, int t0, int n, float mul) {
    const int rows = lc_round_up(n, 4);
    for (int i = 0; i < rows; i++) {
        float *dst = tile + (size_t)i * g->D_pad;
        if (i < n) {
            const float *src = lc_view_row(v, b, t0 + i, h, g->D);
            for (int d = 0; d < g->D; d++) dst[d] = mul * (src[d] + bias[d]);
            for (int d = g->D; d < g->D_pad; d++) dst[d] = 0;
        } else {
            memset(dst, 0, sizeof(float) * g->D_pad);
        }
    }
}

/* Asks for rows [s0, s0+n) of a view to be brought into cache while the current tile is computed: the
 * rows are H*D floats apart, a stride the hardware prefetcher does not follow across pages. */
static inline void full_prefetch_rows(const lc_view *v, const full_geometry *g, int b, int h, int s0, int n) {
    for (int j = 0; j < n; j++) {
        const char *p = (const char *)lc_view_row(v, b, s0 + j, h, g->D);
        for (int offset = 0; offset < g->D * (int)sizeof(float); offset += 64) __builtin_prefetch(p + offset, 0, 2);
    }
}

/* Rows [s0, s0+n) of a view as the A operand of full_gemm (read once, by broadcasts): straight from the
 * view when possible (D a whole number of vectors, a full tile), else copied into `tile`. *ld gets the
 * row stride. B operands are always copied: a 64-row tile read in place, rows H*D apart, maps onto a few
 * L1 sets and is evicted between its 16 reuses. */
static inline const float *full_rows_operand(float *tile, const lc_view *v, const full_geometry *g, int b, int h,
                                             int s0, int n, long *ld) {
    if (g->D == g->D_pad && n == FULL_TILE_K) {
        *ld = v->st;
        return lc_view_row(v, b, s0, h, g->D);
    }
    full_load_rows(tile, v, g, b, h, s0, n, 1.0f);
    *ld = g->D_pad;
    return tile;
}

/* rows [t0, t0+n) of a view times `mul`, transposed into D x 64 (FULL_TILE_Q = FULL_TILE_K), zero
 * beyond column n. */
static inline void full_load_transposed(float *tile, const lc_view *v, const full_geometry *g, int b, int h, int t0,
                                        int n, float mul) {
    for (int j = 0; j < n; j++) {
        const float *src = lc_view_row(v, b, t0 + j, h, g->D);
        for (int d = 0; d < g->D; d++) tile[d * FULL_TILE_K + j] = mul * src[d];
    }
    for (int d = 0; d < g->D; d++)
        for (int j = n; j < FULL_TILE_K; j++) tile[d * FULL_TILE_K + j] = 0;
}

/* As full_load_transposed, with mul * (row + bias) (bias: D floats, the head's slice). */
static inline void full_load_transposed_bias(float *tile, const lc_view *v, const float *bias, const full_geometry *g,
                                             int b, int h, int t0, int n, float mul) {
    for (int j = 0; j < n; j++) {
        const float *src = lc_view_row(v, b, t0 + j, h, g->D);
        for (int d = 0; d < g->D; d++) tile[d * FULL_TILE_K + j] = mul * (src[d] + bias[d]);
    }
    for (int d = 0; d < g->D; d++)
        for (int j = n; j < FULL_TILE_K; j++) tile[d * FULL_TILE_K + j] = 0;
}

/* How many keys of the tile starting at key s0 (n_keys of them) query t sees, counting from the tile start:
 * the visible ones are [full_first_visible_key, full_visible_keys). */
static inline int full_visible_keys(const full_geometry *g, int t, int s0, int n_keys) {
    if (!g->causal) return g->window ? lc_imax(0, lc_imin(n_keys, g->M + t + g->window - s0)) : n_keys;
    return lc_imax(0, lc_imin(n_keys, g->M + t - s0 + 1));
}

/* First key of the tile starting at s0 that query t sees (window: keys before M + t - W + 1 are hidden). */
static inline int full_first_visible_key(const full_geometry *g, int t, int s0) {
    return g->window ? lc_imax(0, g->M + t - g->window + 1 - s0) : 0;
}

/* Start of the key tiles any query of [t0, ...) sees: 0, or with a window the tile of key M + t0 - W + 1. */
static inline int full_key_tile_begin(const full_geometry *g, int t0) {
    return g->window ? lc_imax(0, g->M + t0 - g->window + 1) / FULL_TILE_K * FULL_TILE_K : 0;
}

/* End (exclusive) of the keys any query of [t0, t0+n) sees. */
static inline int full_key_end(const full_geometry *g, int t0, int n) {
    if (g->causal) return lc_imin(g->S, g->M + t0 + n);
    return g->window ? lc_imin(g->S, g->M + t0 + n - 1 + g->window) : g->S;
}

/* Queries [begin, end) that see some key of [s0, s0 + n_k). */
static inline int full_query_begin(const full_geometry *g, int s0) {
    if (g->causal) return lc_imax(0, s0 - g->M);
    return g->window ? lc_imax(0, s0 - g->M - g->window + 1) : 0;
}
static inline int full_query_end(const full_geometry *g, int s0, int n_k) {
    return g->window ? lc_imax(0, lc_imin(g->T, s0 + n_k - 1 + g->window - g->M)) : g->T;
}

/* Lanes of a 16-column chunk starting at column j0 in [first, end): -1, others 0. */
static inline lc_vi16 full_band_mask(int j0, int first, int end) { return lc_vlanes_in(j0, first, end); }

/* Transposed tiles (one key per row, 64 queries along the lanes): lanes of the chunk of queries
 * t0 + 16*l .. that see key s (causal: M + t >= s; window W: also M + t <= s + W - 1; a bidirectional
 * window W: |M + t - s| <= W - 1), -1, others 0. */
static inline lc_vi16 full_queries_seeing(const full_geometry *g, int t0, int l, int s) {
    const int position = g->M + t0 + 16 * l;
    if (!g->causal) return g->window ? lc_vlanes_in(position, s - g->window + 1, s + g->window) : lc_vibroadcast(-1);
    if (!g->window) return lc_vlanes_in(position, s, INT32_MAX);
    return lc_vlanes_in(position, s, s + g->window);
}

/* One row of a (query, key) tile in backward: P = exp(score - lse) on keys [first, end) (0 elsewhere),
 * stored over the scores; dS = P (dP - Delta) stored over dP. */
static inline void full_row_probs_and_dscores(float *p, float *ds, int first, int end, float lse, float delta) {
    for (int l = 0; l < FULL_TILE_K / 16; l++) {
        const lc_v16 prob = lc_vselect(full_band_mask(16 * l, first, end),
                                       lc_vexp(lc_vload(p + 16 * l) - lc_vbroadcast(lse)), (lc_v16){0});
        lc_vstore(p + 16 * l, prob);
        lc_vstore(ds + 16 * l, prob * (lc_vload(ds + 16 * l) - lc_vbroadcast(delta)));
    }
}

/* Copies the dk/dv accumulators of key rows s0 .. s0+n_k-1 (head h, batch b) out to the gradient views. */
static inline void full_store_key_grads(const lc_attn_tensors *t, const full_geometry *g, const full_tiles *w, int b,
                                        int h, int s0, int n_k) {
    for (int j = 0; j < n_k; j++) {
        float *dk_row = lc_view_row(&t->dk, b, s0 + j, h, g->D), *dv_row = lc_view_row(&t->dv, b, s0 + j, h, g->D);
        const float *dk = w->dk_acc + (size_t)j * g->D_pad, *dv = w->dv_acc + (size_t)j * g->D_pad;
        for (int d = 0; d < g->D; d++) dk_row[d] = dk[d], dv_row[d] = dv[d];
    }
}

/* Rows [s0, s0 + n_k) of k into w->key_a (the B operand of dq += dS k) and of v as an A operand (returned,
 * *v_ld its row stride), for the passes that walk key tiles in backward; while s0 + 64 < prefetch_end
 * the next tile's rows are requested too. */
static inline const float *full_load_key_tile(const full_geometry *g, const lc_attn_tensors *t, int b, int h, int s0,
                                              int n_k, int prefetch_end, full_tiles *w, long *v_ld) {
    full_load_rows(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f);
    const float *v_rows = full_rows_operand(w->key_b, &t->v, g, b, h, s0, n_k, v_ld);
    if (s0 + FULL_TILE_K < prefetch_end) {
        const int n_next = lc_imin(FULL_TILE_K, g->S - s0 - FULL_TILE_K);
        full_prefetch_rows(&t->k, g, b, h, s0 + FULL_TILE_K, n_next);
        full_prefetch_rows(&t->v, g, b, h, s0 + FULL_TILE_K, n_next);
    }
    return v_rows;
}

/* dk and dv of all S rows of every (batch, head) set to 0: a call without queries still writes them. */
static inline void full_zero_key_grads(const lc_attn_tensors *t, int B, int S, int H, int D) {
    for (int b = 0; b < B; b++)
        for (int j = 0; j < S; j++)
            for (int h = 0; h < H; h++) {
                memset(lc_view_row(&t->dk, b, j, h, D), 0, sizeof(float) * D);
                memset(lc_view_row(&t->dv, b, j, h, D), 0, sizeof(float) * D);
            }
}

/* Backward's Delta = rowsum(dout * out) in double, [B*H*T] indexed (b, h, t); rows are visited
 * position-major (heads innermost), so each [H*D] row of dout and out is read once. */
static inline void full_compute_delta(const full_geometry *g, const lc_attn_tensors *t, float *delta, int nthreads) {
    const long rows = (long)g->B * g->H * g->T;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 4 * LC_CHUNK_ROWS)
#endif
    for (long i = 0; i < rows; i++) {
        const int h = (int)(i % g->H), query = (int)(i / g->H % g->T), b = (int)(i / g->H / g->T);
        const float *dout = lc_view_row(&t->dout, b, query, h, g->D), *out = lc_view_row(&t->out, b, query, h, g->D);
        double sum = 0;
        for (int d = 0; d < g->D; d++) sum += (double)dout[d] * out[d];
        delta[((long)b * g->H + h) * g->T + query] = (float)sum;
    }
}

/* The online-softmax step shared by the tiled kinds, after a kind has masked its key tile: scores_t
 * (key-major, queries along the lanes; hidden entries -inf) has per-query maxima tile_max. Its entries
 * become exp(score - new running max); running max and sum are updated, and `correction` receives the
 * factor by which each query's output accumulator must be scaled before this tile is added. Only the
 * first `chunks` groups of 16 lanes (<= FULL_TILE_Q / 16) are touched: a tile of fewer queries does less. */
static inline __attribute__((always_inline)) void full_softmax_update_lanes(float *scores_t, int n_k, int chunks,
                                                                            const lc_v16 *tile_max, float *running_max,
                                                                            float *running_sum, float *correction) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    lc_v16 shift[CHUNKS], sum[CHUNKS];
    for (int l = 0; l < chunks; l++) {
        const lc_v16 old_max = lc_vload(running_max + 16 * l), new_max = lc_vmax(old_max, tile_max[l]);
        /* A query that has seen no key yet (a window, or a padding lane) keeps max -inf; it is shifted by 0
         * instead, so its probabilities and correction are exp(-inf) = 0, not NaN. */
        shift[l] = lc_vselect(lc_vfeq(new_max, lc_vsplat(-INFINITY)), lc_vsplat(0.0f), new_max);
        lc_vstore(correction + 16 * l, lc_vexp(old_max - shift[l]));
        lc_vstore(running_max + 16 * l, new_max);
        sum[l] = (lc_v16){0};
    }
    for (int j = 0; j < n_k; j++)
        for (int l = 0; l < chunks; l++) {
            float *p = scores_t + (size_t)j * FULL_TILE_Q + 16 * l;
            const lc_v16 prob = lc_vexp(lc_vload(p) - shift[l]);
            lc_vstore(p, prob);
            sum[l] += prob;
        }
    for (int l = 0; l < chunks; l++)
        lc_vstore(running_sum + 16 * l,
                    lc_vload(running_sum + 16 * l) * lc_vload(correction + 16 * l) + sum[l]);
}

/* full_softmax_update_lanes over all FULL_TILE_Q lanes. */
static inline void full_softmax_update(float *scores_t, int n_k, const lc_v16 *tile_max, float *running_max,
                                       float *running_sum, float *correction) {
    full_softmax_update_lanes(scores_t, n_k, FULL_TILE_Q / 16, tile_max, running_max, running_sum, correction);
}

/* Start of a forward query tile [t0, t0 + n_q): scale q (with relative positions scale (q + u) for the
 * content scores and scale (q + v) for the positions) transposed into the tile, accumulator zeroed,
 * running max -inf and running sum 0. */
static inline void full_forward_begin(const full_geometry *g, const lc_attn_tensors *t, int b, int h, int t0, int n_q,
                                      full_tiles *w) {
    const lc_attn_relpos *rel = t->rel;
    if (rel) {
        full_load_transposed_bias(w->q_tile, &t->q, rel->u + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
        full_load_transposed_bias(w->rel_qv, &t->q, rel->v + (size_t)h * g->D, g, b, h, t0, n_q, g->scale);
    } else {
        full_load_transposed(w->q_tile, &t->q, g, b, h, t0, n_q, g->scale);
    }
    memset(w->q_acc, 0, sizeof(float) * (size_t)lc_round_up(n_q, 4) * g->D_pad);
    for (int i = 0; i < FULL_TILE_Q; i++) w->row_a[i] = -INFINITY, w->row_b[i] = 0;
}

/* After full_softmax_update: each query's accumulator scaled by its correction, then out += P v (P read
 * from the key-major tile w->scores, v rows in w->key_b). */
static inline void full_accumulate_pv(full_tiles *w, const float *correction, int rows, int n_k, int dp) {
    for (int i = 0; i < rows; i++) {
        if (correction[i] == 1.0f) continue;
        float *acc = w->q_acc + (size_t)i * dp;
        for (int d = 0; d < dp; d++) acc[d] *= correction[i];
    }
    full_gemm(w->q_acc, dp, w->scores, 1, FULL_TILE_Q, w->key_b, dp, rows, n_k, dp, 1);
}

/* Queries [t0, t0 + n_q) of head h, batch b: out = accumulator / running sum, lse = running max + log(sum).
 * Every query sees at least itself, so the sum is positive. */
static inline void full_store_outputs(const full_geometry *g, const lc_attn_tensors *t, const full_tiles *w, int b,
                                      int h, int t0, int n_q) {
    float *lse = t->lse + ((size_t)b * g->H + h) * g->T + t0;
    for (int i = 0; i < n_q; i++) {
        const float inv_sum = 1.0f / w->row_b[i];
        float *out = lc_view_row(&t->out, b, t0 + i, h, g->D);
        const float *acc = w->q_acc + (size_t)i * g->D_pad;
        for (int d = 0; d < g->D; d++) out[d] = acc[d] * inv_sum;
        lse[i] = w->row_a[i] + logf(w->row_b[i]);
    }
}

#endif
