/* The `compressed` attention kind: a local window of raw keys plus average-pooled keys and values for
 * the far context (memory-compressed attention, Liu et al. 2018; the compressed memory of the
 * Compressive Transformer), so distant positions are seen at a resolution of one column per s keys.
 *
 * With S = M + T keys (memory rows first), pooled block j covers key positions j*s .. min((j+1)*s, S) - 1
 * (the last block may be partial) and its pooled key/value is the mean of those keys/values. Query t at
 * key position p = M + t sees
 *   causal:        raw keys max(0, p - w) .. p, and pooled blocks j that end before the window:
 *                  (j+1)*s - 1 < p - w;
 *   bidirectional: raw keys p - w .. p + w within [0, S), and pooled blocks that do not overlap
 *                  [p - w, p + w] (left of it or right of it).
 * One softmax over [pooled columns | raw window], scores scale * q.k, lse saved as in the full kind.
 * Backward writes dq and all S rows of dk, dv: a key's gradient is its raw-window share plus
 * dKbar_j / |block j| of its pooled block j. Average pooling only (no learned pooling).
 * No relative positions (shape.relpos = 0), no same_length window (shape.window = 0), no global tokens.
 * Cost O(T (w + S/s) D); workspace O(B H (S/s) D + B H T + threads (w + S/s + 32 D)); deterministic for any
 * thread count. */
#ifndef LC_ATTN_COMPRESSED_H
#define LC_ATTN_COMPRESSED_H

#include <stddef.h>

#include "attn/attn.h"

typedef struct {
    int w; /* raw keys per side, >= 1 (default 64) */
    int s; /* pooling stride, >= 1 (default 16); s = 1 makes the kind full attention */
} lc_attn_compressed_opts;

extern const lc_attn_kind lc_attn_compressed;
size_t lc_attn_compressed_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_compressed_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_compressed_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

#endif
