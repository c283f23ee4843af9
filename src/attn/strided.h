/* The `strided` attention kind: the strided pattern of the Sparse Transformer (Child et al. 2019), meant
 * to be combined with local heads (e.g. `block`). With stride s, query position p = M + t sees
 *   causal = 1: keys p - k s for k = 0, 1, 2, ... (every key at a distance that is a multiple of s);
 *   causal = 0: keys p + k s for every integer k with 0 <= p + k s < S.
 * The keys of a query form its residue class p mod s, so each class is a dense attention over the
 * subsequence of positions with that residue: long classes run the full kind on strided views (row stride
 * s rows), short ones the row engine of block.h, class by class so a class's keys stay in cache.
 * Cost O(T S D / s). Transformer-XL relative positions (tensors.rel) in causal mode: every class runs the
 * full kind's relative-position tiles, its r rows (distances 0, s, 2s, ...) gathered into the workspace;
 * no window. */
#ifndef LC_ATTN_STRIDED_H
#define LC_ATTN_STRIDED_H

#include "attn/attn.h"

typedef struct {
    int stride; /* s >= 1; 1 is full attention */
} lc_attn_strided_opts;

extern const lc_attn_kind lc_attn_strided;

#endif
