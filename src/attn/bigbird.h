/* The `bigbird` attention kind (Zaheer et al. 2020): block-sparse attention with a window of blocks,
 * random blocks and global attention, in its two variants.
 *
 * Positions are grouped in blocks of b (the last block of a sequence may be short; nothing is padded in
 * memory). n is the number of blocks.
 *   variant=itc (default): blocks of positions 0.., n = ceil(T / b). The first and the last block are
 *     global: their queries see every key and every query sees their keys. Any other query block i sees
 *     the window blocks i-1, i, i+1, its r random blocks and the two global blocks.
 *   variant=etc: the first G positions are global tokens (they see every key, every query sees them);
 *     positions G.. form blocks of b, n = ceil((T - G) / b); query block i sees the window blocks i-1,
 *     i, i+1, its r random blocks (default r = 0, as in the paper) and the G global tokens. G >= T (a
 *     short last segment) makes every position global: full attention, as Longformer's global=G.
 *   causal = 1: the same pattern intersected with key <= query.
 * Random blocks of query block i: min(r, m) distinct blocks drawn uniformly from the m candidates, the
 * blocks that are neither window nor global (itc: 1..n-2 without i-1..i+1; etc: 0..n-1 without
 * i-1..i+1); global query blocks have none. The draw is a pure function of (tensors.seed, opts seed, n,
 * head h, block i) through counter-based hashes (core/rng.h), so forward, backward and a reloaded model
 * see the same plan without storing it. lc_attn_bigbird_plan writes it out for tests and fixtures, and
 * the *_plan entry points run the kind with an explicit plan instead (PyTorch parity).
 *
 * Cost O(T (3b + 2b + r b) D) for itc (global rows: O(2 b T D) in all), O(T (3b + r b + G) D) for etc;
 * no n x n or T x T array. Workspace O(threads (tiles + n r) + B H T + H n r). Forward saves lse;
 * backward recomputes scores (FlashAttention-2) in a query pass (dq) and a key pass (dk, dv), every
 * output row written by one task in a fixed order: bit-identical for any thread count, no atomics.
 * Not supported (the caps refuse them): memory (M > 0), relative positions, same_length, Longformer global
 * tokens (tensors.global; use variant=etc). */
#ifndef LC_ATTN_BIGBIRD_H
#define LC_ATTN_BIGBIRD_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn.h"

enum { LC_BIGBIRD_ITC = 0, LC_BIGBIRD_ETC = 1 };
#define LC_BIGBIRD_MAX_RANDOM 1024 /* upper bound of the r option */

typedef struct {
    int b;       /* block size, >= 1 (default 64) */
    int r;       /* random blocks per query block; -1: the variant's default (itc 3, etc 0) */
    int variant; /* LC_BIGBIRD_ITC or LC_BIGBIRD_ETC */
    int g;       /* etc: global tokens at the front; -1: the default, b */
    int seed;    /* mixed into tensors.seed for the random blocks (default 0) */
} lc_attn_bigbird_opts;

extern const lc_attn_kind lc_attn_bigbird;

/* Effective option values: random blocks per query block, global tokens (0 for itc; clamped to T),
 * and the number of blocks n for a sequence of T positions. */
int lc_attn_bigbird_random(const lc_attn_bigbird_opts *o);
int lc_attn_bigbird_globals(const lc_attn_bigbird_opts *o, int T);
int lc_attn_bigbird_blocks(const lc_attn_bigbird_opts *o, int T);

/* The random blocks the kind uses for H heads at length T with tensors.seed = seed: plan[(h*n + i)*r + j],
 * j < r = lc_attn_bigbird_random(o), n = lc_attn_bigbird_blocks(o, T); each row sorted ascending,
 * -1 after the last drawn block (fewer candidates than r, or a global query block). */
void lc_attn_bigbird_plan(const lc_attn_bigbird_opts *o, int H, int T, uint64_t seed, int *plan);

size_t lc_attn_bigbird_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_bigbird_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_bigbird_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
/* The same with an explicit plan laid out as lc_attn_bigbird_plan's (entries -1 or block indices in
 * [0, n); entries of global query blocks are ignored; NULL: the seeded plan). Forward and backward
 * must be given the same plan. */
void lc_attn_bigbird_forward_plan(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work,
                                  const int *plan);
void lc_attn_bigbird_backward_plan(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work,
                                   const int *plan);

#endif
