/* The `window` attention kind: a sliding window with per-head dilation (Longformer, Beltagy et al. 2020).
 * With S = M + T keys (memory rows first) and query t at key position p = M + t, head h with dilation d:
 *   causal:        query t sees keys p - k*d for k = 0..w (keys < 0 excluded; reaches into the memory);
 *   bidirectional: query t sees keys p + k*d for k = -w..w within [0, S).
 * Scores scale * q.k, softmax over the visible keys, lse saved as in the full kind. Backward writes dq, dk
 * (all S rows) and dv; keys no query sees get zero gradients. No relative positions (tensors.rel = NULL);
 * shape.window must be 0 (the band is given by the options). O(T w D) time, O(threads (w + D) + B H T)
 * workspace. */
#ifndef LC_ATTN_WINDOW_H
#define LC_ATTN_WINDOW_H

#include "attn/attn.h"

typedef struct {
    int w;                              /* keys per side, >= 1 */
    int dilation[LC_ATTN_MAX_HEADS];    /* per head; 0 is read as 1 */
} lc_attn_window_opts;

static inline int lc_attn_window_dilation(const lc_attn_window_opts *o, int h) {
    return o->dilation[h] > 0 ? o->dilation[h] : 1;
}

extern const lc_attn_kind lc_attn_window;
size_t lc_attn_window_workspace(const lc_attn_shape *s, const void *opts, int nthreads);
void lc_attn_window_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_window_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

#endif
