/* The one attention interface. Every attention kind (full now; window, bigbird, lsh, ... later) is a row
 * of lc_attn_kind: a workspace size, forward, backward. Forward saves only what backward needs (the
 * per-row log-sum-exp for softmax kinds), never a T x S score matrix; backward recomputes scores.
 *
 * Tensors are strided views: element (b, t, h, d) of a view lives at p[b*sb + t*st + h*D + d], so
 * q, k, v can point straight into a fused [B, T, 3*H*D] projection output without copies.
 * Keys and values have S = M + T rows: M memory rows first (Transformer-XL), then the segment.
 *
 * Two optional extensions (implemented by `full`; both need causal = 1):
 *  - window W > 0: query t sees keys s in [M + t - W + 1, M + t] (at most W keys, itself included):
 *    Transformer-XL's same_length mode, and the band of a sliding window. W >= S is the same as 0.
 *  - relative positions (Transformer-XL, Dai et al. 2019): with tensors.rel set,
 *      score(t, s) = scale * ((q_t + u_h) . k_s + (q_t + v_h) . r[M + t - s]_h)
 *    for visible keys, softmax as usual. r, u, v are shared across the batch, so their gradients sum
 *    over b. The workspace must be sized with shape.relpos = 1. */
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
    /* Added after scale so positional initializers of the fields above stay valid (these become 0). */
    int window; /* 0: unlimited; W > 0 (causal only): query t sees keys M+t-W+1 .. M+t */
    int relpos; /* 1: the calls will pass tensors.rel (sizes the workspace for it); 0: they will not */
} lc_attn_shape;

typedef struct {
    float *p;
    long sb, st; /* batch and row strides in floats; head stride is D */
} lc_view;

typedef struct {
    double *p;
    long sb, st;
} lc_view_d;

/* Relative-position inputs (Transformer-XL). Contiguous rows of H*D floats, head h at columns h*D. */
typedef struct {
    const float *r;      /* [S][H*D]: row d is the projected relative embedding of distance d = 0..S-1 */
    const float *u, *v;  /* [H*D]: content bias u and position bias v */
    float *dr, *du, *dv; /* gradients, WRITTEN (overwritten) by backward; dr has S rows */
} lc_attn_relpos;

typedef struct {
    const double *r;
    const double *u, *v;
    double *dr, *du, *dv;
} lc_attn_relpos_d;

/* Forward reads q, k, v and writes out and lse[B*H*T] (lse index (b*H + h)*T + t).
 * Backward reads q, k, v, out, lse, dout and WRITES dq, dk, dv (all S rows of dk, dv).
 * rel = NULL: plain attention; otherwise relative positions (see above), and backward also writes
 * rel->dr, rel->du, rel->dv. */
typedef struct {
    lc_view q, k, v, out, dout, dq, dk, dv;
    float *lse;
    const lc_attn_relpos *rel;
} lc_attn_tensors;

typedef struct {
    lc_view_d q, k, v, out, dout, dq, dk, dv;
    const lc_attn_relpos_d *rel;
} lc_attn_tensors_d;

typedef struct lc_attn_kind {
    const char *name;
    /* Scratch floats needed by forward/backward when run with `nthreads` threads. */
    size_t (*workspace_floats)(const lc_attn_shape *s, const void *opts, int nthreads);
    void (*forward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
    void (*backward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
} lc_attn_kind;

/* The table of kinds (src/attn/kinds.c): lookup by name (NULL if unknown) and enumeration. */
const lc_attn_kind *lc_attn_kind_by_name(const char *name);
int lc_attn_kind_count(void);
const lc_attn_kind *lc_attn_kind_at(int i);

/* ---- full (dense) attention: streaming online-softmax forward, FlashAttention-2 style backward ---- */
extern const lc_attn_kind lc_attn_full;
size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts, int nthreads);
void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
/* Plain reference in double that builds the dense T x S score matrix with an explicit mask (tests only).
 * forward writes out; backward WRITES dq, dk, dv, and with rel also dr, du, dv (recomputing the forward
 * internally). Window and relative positions as in the fast path. */
void lc_attn_full_forward_ref(const lc_attn_shape *s, const lc_attn_tensors_d *t);
void lc_attn_full_backward_ref(const lc_attn_shape *s, const lc_attn_tensors_d *t);

/* The same reference for any mask (every sparse kind tests against it): visible(ctx, b, h, t, s) says
 * whether query t of head h in batch b sees key s (0 <= s < M + T). A query that sees no key gets a
 * zero output and zero gradients. Relative positions as above when t->rel is set (distance M + t - s
 * must then be >= 0 for visible keys). */
typedef int (*lc_attn_visible_fn)(const void *ctx, int b, int h, int t, int s);
void lc_attn_masked_forward_ref(const lc_attn_shape *s, lc_attn_visible_fn visible, const void *ctx,
                                const lc_attn_tensors_d *t);
void lc_attn_masked_backward_ref(const lc_attn_shape *s, lc_attn_visible_fn visible, const void *ctx,
                                 const lc_attn_tensors_d *t);

#endif
