/* The one attention interface. Every attention kind is a row of lc_attn_kind: what it supports (caps),
 * a workspace size, forward, backward. Forward saves only what backward needs (the per-row log-sum-exp
 * for softmax kinds), never a T x S score matrix; backward recomputes scores.
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
#include <stdint.h>

typedef struct {
    int B, H; /* batch, heads */
    int T;    /* queries per sequence (the segment) */
    int M;    /* memory rows in front of the keys/values (0 without recurrence) */
    int D;    /* head dimension */
    int causal; /* 1: query i sees keys 0 .. M+i; 0: all S keys */
    float scale; /* multiplies q.k, usually 1/sqrt(D) */
    /* After scale, so a positional initializer of the fields above leaves these 0 (off). */
    int window; /* 0: unlimited; W > 0 (causal only): query t sees keys M+t-W+1 .. M+t */
    int relpos; /* 1: the calls will pass tensors.rel (sizes the workspace for it); 0: they will not */
    /* Threads forward and backward may use, decided with the workspace size (the model's compute
     * plan): kinds size per-thread scratch by it and open no parallel region wider than this. 0 counts
     * as 1. Matrix products a kind hands to lc_gemm split by the calling thread's count (lc_threads_use),
     * which needs no workspace and gives the same bits for any count; a model binds this same count to
     * its thread at every pass. */
    int threads;
} lc_attn_shape;

/* The thread count a call runs with (shape.threads, at least 1). */
static inline int lc_attn_threads(const lc_attn_shape *s) { return s->threads > 1 ? s->threads : 1; }

typedef struct {
    float *p;
    long sb, st; /* batch and row strides in floats; head stride is D */
} lc_view;

/* Address of row t of head h in batch b of a view (its D floats follow). */
static inline float *lc_view_row(const lc_view *v, int b, long t, int h, int D) {
    return v->p + (long)b * v->sb + t * v->st + (long)h * D;
}

typedef struct {
    double *p;
    long sb, st;
} lc_view_d;

/* Optional second copy of a view's rows in the layout a product wants, kept by the caller across calls so
 * each row is laid out once: the store of batch b, head h starts at p + b*sb + h*sh, and row t of the
 * view is the store's row row0 + t. Two layouts: keys and position rows as panels (kernels.h,
 * lc_panel_pack; the store holds whole panels, and rows past the view's last may hold anything), values
 * as rows of D floats one after another (row r at r * D). Forward kinds may read them instead of the
 * views (full_eval.c); p = NULL: none. */
typedef struct {
    const float *p;
    long sb, sh;
    int row0;
} lc_attn_store;

/* Relative-position inputs (Transformer-XL). Contiguous rows of H*D floats, head h at columns h*D. */
typedef struct {
    const float *r;      /* [S][H*D]: row d is the projected relative embedding of distance d = 0..S-1 */
    const float *u, *v;  /* [H*D]: content bias u and position bias v */
    float *dr, *du, *dv; /* gradients, WRITTEN (overwritten) by backward; dr has S rows */
    lc_attn_store r_panels; /* optional: r as panels, row0 = 0 (distance d at row d) */
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
/* Global tokens (Longformer): the query positions pos[0..n) (increasing, >= 0; key position M + pos) that
 * every query sees and that see every key (causal: every key up to themselves). As in Longformer, the
 * global positions of a call are those of the list that exist in its sequence: positions >= T are not
 * global in that call (a short last segment, a short prompt), so one list serves every length; n_T
 * below is the number of listed positions < T.
 * Ordinary rows score the global keys with the ordinary q and k (one softmax over the global columns and
 * the kind's own keys, global keys counted once); the global rows themselves are computed with their own
 * projections qg (read at the global rows only), kg, vg over all S keys and overwrite out there.
 * Only kinds with LC_ATTN_CAP_GLOBAL are given global tokens (lc_attn_kind_check), never together with
 * relative positions (the global rows have no position terms). */
typedef struct {
    int n;
    const int *pos;
    lc_view qg, kg, vg;     /* like q, k, v */
    lc_view dqg, dkg, dvg;  /* WRITTEN by backward (dqg at the global rows only, dkg/dvg all S rows) */
    float *lse;             /* [B*H*n_T] log-sum-exp of the global rows that exist, (b*H + h)*n_T + i */
} lc_attn_global;

typedef struct {
    lc_view q, k, v, out, dout, dq, dk, dv;
    lc_attn_store k_panels, v_rows; /* optional: k as panels, v as rows (inference against a key/value cache) */
    float *lse;
    const lc_attn_relpos *rel;
    const lc_attn_global *global; /* NULL: no global tokens */
    /* Learned parameters of the kind (param_floats > 0, e.g. Linformer's projections): read by forward;
     * backward ACCUMULATES their gradients into dparams. NULL for kinds without parameters. */
    const float *params;
    float *dparams;
    /* Fixed per layer by the model (the same in training, evaluation and after a reload): the source
     * of a kind's random choices (BigBird's random blocks, LSH rotations), so backward and reloads
     * reproduce them exactly. */
    uint64_t seed;
    /* Non-learned state a kind keeps across calls (state_floats > 0, e.g. routing centroids), updated
     * by forward only when train != 0. */
    float *state;
    int train;
} lc_attn_tensors;

typedef struct {
    lc_view_d q, k, v, out, dout, dq, dk, dv;
    const lc_attn_relpos_d *rel;
} lc_attn_tensors_d;

/* Room for any kind's options (parsed from the spec string): opts_size must not exceed it. */
#define LC_ATTN_OPTS_BYTES 1024
/* Per-head option lists hold at most this many entries. */
#define LC_ATTN_MAX_HEADS 64

/* What a kind supports: lc_attn_kind.caps, a mask of these. lc_attn_kind_check refuses a shape that asks
 * for anything outside it, so a kind's forward and backward never see such a shape. */
enum {
    LC_ATTN_CAP_CAUSAL = 1u << 0,        /* shape.causal = 1 (the decoder) */
    LC_ATTN_CAP_BIDIRECTIONAL = 1u << 1, /* shape.causal = 0 (the masked-LM encoder) */
    LC_ATTN_CAP_MEMORY = 1u << 2,        /* M > 0 memory rows in front of the keys (Transformer-XL) */
    LC_ATTN_CAP_RELPOS = 1u << 3,        /* shape.relpos, tensors.rel: XL relative positions (causal only) */
    LC_ATTN_CAP_WINDOW = 1u << 4,        /* shape.window > 0: XL same_length (causal only) */
    LC_ATTN_CAP_GLOBAL = 1u << 5,        /* tensors.global: Longformer global tokens (not with relpos) */
    LC_ATTN_CAP_DECODE = 1u << 6,        /* runs against the model's key/value cache at inference: k, v views
                                          * into the cache, a few queries against up to M memory rows; the
                                          * model recomputes keys from the memory for kinds without it */
    LC_ATTN_CAP_PANELS = 1u << 7,        /* with DECODE: forward reads tensors.k_panels, v_rows and
                                          * rel->r_panels when given, so the model keeps its cached keys,
                                          * values and r in those layouts too */
    LC_ATTN_CAP_ALL = (1u << 8) - 1
};

/* One attention kind. Designated initializers, please: optional members stay NULL (or 0).
 * Options: a kind's options are a plain struct of opts_size bytes (no pointers into other memory);
 * opts_init fills the defaults for a group of H heads, opts_set takes one key=value of the spec string
 * (docs/guides/attention.md). Kinds without options leave the three NULL.
 * Shapes: caps (and the length rule min_T, T_multiple) say which shapes the kind runs; lc_attn_kind_check
 * tests them, then calls check, which validates only what depends on the options (e.g. a block size
 * against T). check = NULL: the options constrain nothing. opts_set and check return 0, or -1 after
 * writing a one-line message to err. */
typedef struct lc_attn_kind {
    const char *name;         /* letters, digits, '_' and '-'; starts with a letter */
    const char *options_help; /* e.g. "w=<keys per side> dil=<d0/d1/...>"; "" when none */
    unsigned caps;            /* LC_ATTN_CAP_* */
    int min_T;                /* run-time length rule: T >= min_T queries (0: none) */
    int T_multiple;           /* and T a multiple of T_multiple (0 or 1: none) */
    size_t opts_size;
    void (*opts_init)(void *opts, int H);
    int (*opts_set)(void *opts, int H, const char *key, const char *value, char *err, size_t errlen);
    int (*check)(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                 size_t errlen);
    /* Scratch floats needed by forward/backward for this shape (run with s->threads threads). */
    size_t (*workspace_floats)(const lc_attn_shape *s, const void *opts);
    void (*forward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
    void (*backward)(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
    /* Optional learned parameters for a group of H heads of dimension D at sequence length up to
     * max_len, and their initialisation from a seed. */
    size_t (*param_floats)(const void *opts, int H, int D, int max_len);
    void (*param_init)(float *params, const void *opts, int H, int D, int max_len, uint64_t seed);
    /* Optional state (saved in checkpoints, never trained by gradient) and its initialisation. */
    size_t (*state_floats)(const void *opts, int H, int D);
    void (*state_init)(float *state, const void *opts, int H, int D, uint64_t seed);
    /* Optional: fixes the options that depend on the planned length (max_len keys per sequence, memory
     * and extra tokens included) once, before anything is sized: e.g. routing's clusters=auto. A model
     * keeps them for its lifetime (shorter or longer run-time segments do not change them). */
    void (*opts_plan)(void *opts, int H, int D, int max_len);
} lc_attn_kind;

/* Helpers for opts_set (src/attn/opts.c): parse an integer in [lo, hi] / a '/'-separated list of at
 * most max such integers (returns the count) / a float; -1 with a message naming key on error. */
int lc_attn_opt_int(const char *key, const char *value, long lo, long hi, int *out, char *err, size_t errlen);
int lc_attn_opt_int_list(const char *key, const char *value, long lo, long hi, int *out, int max, char *err,
                         size_t errlen);
int lc_attn_opt_float(const char *key, const char *value, double lo, double hi, float *out, char *err,
                      size_t errlen);
/* The message for an unknown key of `kind` (lists its options); always returns -1. */
int lc_attn_opt_unknown(const lc_attn_kind *kind, const char *key, char *err, size_t errlen);

/* The table of kinds (src/attn/kinds.c): lookup by name (NULL if unknown) and enumeration. */
const lc_attn_kind *lc_attn_kind_by_name(const char *name);
int lc_attn_kind_count(void);
const lc_attn_kind *lc_attn_kind_at(int i);

/* Append a kind defined outside the built-in table (a test's, a user's) so that spec strings, models and
 * checkpoints find it by name. The row must stay valid while it is registered (a static object). Checks
 * the row (name syntax, forward, backward and workspace_floats set, opts_size within LC_ATTN_OPTS_BYTES,
 * caps with a direction and no unknown bits, a sane length rule) and refuses a name already taken.
 * Returns 0, or -1 with the one-line reason in lc_last_error(). Safe from any thread, also while other
 * threads parse specs or run models (a row, once registered, stays). At most LC_ATTN_MAX_REGISTERED kinds. */
#define LC_ATTN_MAX_REGISTERED 32
int lc_attn_kind_register(const lc_attn_kind *kind);

/* Whether `kind` runs shape s (with these options and global tokens, NULL: none): the one check, at
 * planning time and before every run. In order: the shape's own rules (window and relpos need causal;
 * global positions increasing and >= 0, never with relpos), the caps (causal or bidirectional, memory,
 * relpos, window, global), the length rule (min_T, T_multiple), then the kind's check for its options.
 * global->pos = NULL checks the count only. Returns 0, or -1 with one line "<kind>: <what> ..." in err. */
int lc_attn_kind_check(const lc_attn_kind *kind, const lc_attn_shape *s, const void *opts,
                       const lc_attn_global *global, char *err, size_t errlen);

/* The number of global positions of a call at length T: the leading entries of pos[0..n) (increasing)
 * that are < T; with pos = NULL the first n positions, min(n, T). */
static inline int lc_attn_global_count(const lc_attn_global *g, int T) {
    if (!g->pos) return g->n < T ? g->n : T;
    int n = g->n;
    while (n > 0 && g->pos[n - 1] >= T) n--;
    return n;
}

/* ---- full (dense) attention: streaming online-softmax forward, FlashAttention-2 style backward ---- */
extern const lc_attn_kind lc_attn_full;
size_t lc_attn_full_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_full_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_full_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
/* The tiled forward alone, without the dense path for short query blocks against a long memory
 * (full_eval.h) and its T x S buffers: what kinds built on the full kind (strided classes, dilated
 * windows) call, so that their workspace keeps the tiled bound (row statistics and per-thread tiles). */
size_t lc_attn_full_workspace_tiled(const lc_attn_shape *s);
void lc_attn_full_forward_tiled(const lc_attn_shape *s, const lc_attn_tensors *t, float *work);
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
