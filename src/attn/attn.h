/* The one attention interface. Every attention kind (full now; window, bigbird, lsh, ... later) is a row
 * of lc_attn_kind: a workspace size, forward, backward. Forward saves only what backward needs (the
 * per-row log-sum-exp for softmax kinds), never a T x S score matrix; backward recomputes scores.
 *
 * Tensors are strided views: element (b, t, h, d) of a view lives at p[b*sb + t*st + h*D + d], so
 * q, k, v can point straight into a fused [B, T, 3*H*D] projection output without copies.
 * Keys and values have S = M + T rows: M memory rows first (Transformer-XL), then the segment. */
#ifndef LC_ATTN_H
#define LC_ATTN_H

#include <stddef.h>

typedef struct {
    int B, H; /* batch, heads */
    int T;    /* queries per sequence (the segment) */
    int M;    /* memory rows in front of the keys/values (0 without recurrence) */
    int D;    /* head dimension */
    int causal; /* 1: query i sees keys 0 .. M+i; 0: all S keys */
    float scale; /* multiplies q.k, usually 1/sqrt(D) */
} lc_attn_shape;

typedef struct {
    float *p;
    long sb, st; /* batch and row strides in floats; head stride is D */
} lc_view;

typedef struct {
    double *p;
    long sb, st;
} lc_view_d;

/* Forward reads q, k, v and writes out and lse[B*H*T] (lse index (b*H + h)*T + t).
 * Backward reads q, k, v, out, lse, dout and WRITES dq, dk, dv (all S rows of dk, dv). */
typedef struct {
    lc_view q, k, v, out, dout, dq, dk, dv;
    float *lse;
} lc_attn_tensors;

typedef struct {
    lc_view_d q, k, v, out, dout, dq, dk, dv;
} lc_attn_tensors_d;

typedef struct lc_attn_kind {
    const char *name;
    /* Scratch floats needed by forward/backward when run with `nthreads` threads. */
    size_t (*workspace_floats)(const lc_attn_shape *s, const void *opts, int nthreads);
    void (*forward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
    void (*backward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
} lc_attn_kind;

/* ---- full (dense) attention: streaming online-softmax forward, FlashAttention-2 style backward ---- */
extern const lc_attn_kind lc_attn_full;
size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts, int nthreads);
void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
/* Plain reference in double that builds the dense T x S score matrix with an explicit mask (tests only).
 * forward writes out; backward WRITES dq, dk, dv (recomputing the forward internally). */
void lc_attn_full_forward_ref(const lc_attn_shape *s, const lc_attn_tensors_d *t);
void lc_attn_full_backward_ref(const lc_attn_shape *s, const lc_attn_tensors_d *t);

#endif
