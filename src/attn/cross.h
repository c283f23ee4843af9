/* Cross-attention (the encoder-decoder attention of Vaswani et al. 2017, and HIBERT's sentence decoder):
 * the query rows of a decoder sequence attend to every key/value row of an encoder sequence, with one
 * softmax over those keys and no mask. Sequences are packed, not padded: a call covers n pairs, pair i
 * being the query rows q_start[i] .. q_start[i] + q_len[i] - 1 and the key/value rows
 * kv_start[i] .. kv_start[i] + kv_len[i] - 1 of row-major tensors (head h at columns h*D .. h*D + D-1).
 * Query ranges must not overlap; key ranges may (several decoder sequences reading one encoder output).
 *
 *   out[r, h] = sum_j softmax_j(scale * q[r, h] . k[j, h]) v[j, h]     over the pair's keys j
 *
 * Forward saves the row log-sum-exp; backward recomputes the probabilities from it. Work is split over
 * (pair, head) tasks for out and dq, and over heads for dk and dv (each head's key gradients summed over
 * the pairs in order), so results do not depend on the thread count. */
#ifndef LC_ATTN_CROSS_H
#define LC_ATTN_CROSS_H

#include <stddef.h>

#include "attn/attn.h"

typedef struct {
    int H, D;        /* heads, head dimension */
    float scale;     /* multiplies q.k, usually 1/sqrt(D) */
    int n;           /* pairs */
    const int *q_start, *q_len;   /* [n] query rows of each pair (q_len may be 0) */
    const int *kv_start, *kv_len; /* [n] key/value rows of each pair (kv_len >= 1 when q_len > 0) */
    int threads;     /* threads the calls may use (0 counts as 1); the workspace is sized for them */
} lc_cross_shape;

/* Row-strided tensors: element (row r, head h, d) at p[r * st + h * D + d] (the views' sb is unused). */
typedef struct {
    lc_view q, k, v, out, dout, dq, dk, dv;
    float *lse; /* [query rows][H]: lse[r * H + h], for the rows of the pairs */
} lc_cross_tensors;

typedef struct {
    lc_view_d q, k, v, out, dout, dq, dk, dv;
} lc_cross_tensors_d;

/* Returns 0, or -1 with a one-line message in err (bad counts, overlapping query ranges, empty keys). */
int lc_cross_check(const lc_cross_shape *s, char *err, size_t errlen);
/* Scratch floats the calls need. */
size_t lc_cross_workspace(const lc_cross_shape *s);
/* Writes out and lse at the pairs' query rows. */
void lc_cross_forward(const lc_cross_shape *s, const lc_cross_tensors *t, float *work);
/* Reads q, k, v, out, lse, dout; WRITES dq at the pairs' query rows and dk, dv at every key row some
 * pair reads (other rows are not touched). */
void lc_cross_backward(const lc_cross_shape *s, const lc_cross_tensors *t, float *work);

/* Plain double-precision references (tests): the same contract, dense scores per pair. */
void lc_cross_forward_ref(const lc_cross_shape *s, const lc_cross_tensors_d *t);
void lc_cross_backward_ref(const lc_cross_shape *s, const lc_cross_tensors_d *t);

#endif
