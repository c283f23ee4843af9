/* The `block` attention kind (blockwise local attention), and the engine it shares with `strided`.
 *
 * block b: key positions are grouped into blocks of b consecutive positions (block index = position / b,
 * over the S = M + T key positions; query t sits at position M + t).
 *   causal = 0: query p sees every key of its own block.
 *   causal = 1: query p sees the keys of its own block up to itself and every key of the previous block.
 * Cost O(T (b + 64) D): each 64-query tile walks the 64-key tiles of its key range (full_tile.h, as the
 * full kind). Transformer-XL relative positions (tensors.rel, shape.relpos) in causal mode, with the full
 * kind's position tiles (full_rel.h); the keys of a query reach into the memory rows as without them.
 * No window (shape.window must be 0).
 *
 * The engine (lc_attn_progression_*, used by strided for short residue classes): any pattern in which the
 * keys seen by each query, and the queries that see each key, form arithmetic progressions. Each output row (out / dq of a query, dk and dv of a
 * key) is computed by one task that streams over its progression with an online softmax (forward) or
 * recomputed probabilities (backward): deterministic for any thread count, no atomics, no T x S matrix,
 * workspace O(B H T + threads D). */
#ifndef LC_ATTN_BLOCK_H
#define LC_ATTN_BLOCK_H

#include <stddef.h>

#include "attn/attn.h"

typedef struct {
    int block; /* b >= 1; b >= S makes bidirectional attention full attention */
} lc_attn_block_opts;

extern const lc_attn_kind lc_attn_block;

/* ---- the engine shared by block and strided (not a kind by itself) ---- */

/* Elements first, first + step, ..., first + (count - 1) step. */
typedef struct {
    int first, step, count;
} lc_attn_progression;

typedef struct {
    /* keys (positions in [0, S)) seen by query t, in increasing order; never empty */
    lc_attn_progression (*keys_of)(const void *ctx, int t);
    /* queries (indices t in [0, T)) that see key position s, in increasing order; may be empty */
    lc_attn_progression (*queries_of)(const void *ctx, int s);
    /* Optional processing order (a permutation of [0, n)): rows that share keys run back to back, so
     * they meet them in cache. NULL: 0, 1, 2, ... */
    int (*query_at)(const void *ctx, int i);
    int (*key_at)(const void *ctx, int i);
    const void *ctx;
} lc_attn_pattern;

size_t lc_attn_progression_workspace(const lc_attn_shape *s); /* threads: lc_attn_threads(s) */
void lc_attn_progression_forward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                 float *work);
void lc_attn_progression_backward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                  float *work);

#endif
