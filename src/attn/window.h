/* The `window` attention kind: a sliding window with per-head dilation (Longformer, Beltagy et al. 2020).
 * With S = M + T keys (memory rows first) and query t at key position p = M + t, head h with dilation d:
 *   causal:        query t sees keys p - k*d for k = 0..w (keys < 0 excluded; reaches into the memory);
 *   bidirectional: query t sees keys p + k*d for k = -w..w within [0, S).
 * Scores scale * q.k, softmax over the visible keys, lse saved as in the full kind. Backward writes dq, dk
 * (all S rows) and dv; keys no query sees get zero gradients. shape.window must be 0 (the band is given by
 * the options). O(T w D) time, O(threads (w + D) + B H T) workspace.
 *
 * Relative positions (tensors.rel, Transformer-XL; causal only, any dilation): score(t, s) gets
 * scale ((q_t + u) . k_s + (q_t + v) . r[p - s]) as in the full kind; dr, du, dv are written (rows of dr at
 * distances no query uses are 0). The dilated path needs O(S D) more workspace (shape.relpos = 1).
 *
 * Global tokens (tensors.global, Longformer; causal or bidirectional, any dilation, any M; not together
 * with rel). G = the key positions M + pos[i] of the global tokens: the listed positions < T (a longer
 * list serves shorter sequences, whose missing positions are simply not global; attn.h).
 *   Ordinary rows (t not in pos): one softmax over their band plus the global keys (causal: those <= p),
 *     all scored with the ordinary q and k and read from the ordinary v; a global key inside the band is
 *     counted once. lse[] holds this merged log-sum-exp.
 *   Global rows (t = pos[i]): softmax of scale qg_t . kg_s over every key s (causal: s <= p; memory keys
 *     included), out_t = sum P vg_s, overwriting the band result. global->lse[(b*H + h)*n + i] gets its
 *     log-sum-exp, and lse[] of the row is set to +inf (the marker the band backward relies on: it gives
 *     the row probability 0 everywhere, so the ordinary q of a global token gets no gradient).
 *   Backward writes dq (zero on global rows), dk, dv (all S rows: band plus global columns), and in the
 *     global tensors dqg on all T rows (zero on ordinary rows), dkg and dvg on all S rows.
 * Extra cost O(B H (n S + n T) D); workspace O(threads (64 + D)), shared with the band passes. */
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
size_t lc_attn_window_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_window_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_window_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

/* Internal (window_global.c): the global-token passes, run after the band passes of window.c. */
size_t lc_attn_window_global_workspace(const lc_attn_shape *s); /* threads: lc_attn_threads(s) */
void lc_attn_window_global_forward(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *t,
                                   float *work);
void lc_attn_window_global_backward(const lc_attn_shape *s, const lc_attn_window_opts *o, const lc_attn_tensors *t,
                                    float *work);

#endif
