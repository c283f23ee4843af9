/* Layers of the byte-level Transformer: token+position embedding and the Transformer block
 * (attention sublayer + feed-forward sublayer, pre-LN or post-LN, residual dropout).
 * A block works on N = B*T rows of width C; weights and gradients share one pointer struct so the
 * same code addresses parameters and their gradients. Saved activations live in buffers the model
 * planned before the first step; backward uses shared scratch buffers. */
#ifndef LC_NN_H
#define LC_NN_H

#include <stdint.h>

#include "attn/attn.h"
#include "attn/spec.h"
#include "longctx.h"

/* ---- embedding: out[b,t,:] = wte[tok[b,t], :] + wpe[t, :] (wpe may be NULL) ---- */
void lc_embedding_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B, int T, int C);
/* dwte[tok] += dout rows; dwpe[t] += sum over b of dout[b,t] (either may be NULL). Deterministic. */
void lc_embedding_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int T, int C);
void lc_embedding_forward_ref(double *out, const int *tokens, const double *wte, const double *wpe, int B, int T,
                              int C);
void lc_embedding_backward_ref(double *dwte, double *dwpe, const double *dout, const int *tokens, int B, int T,
                               int C);

/* ---- Transformer block ----
 * A block attends from its T segment rows to S = M + T key rows: M memory rows (Transformer-XL: the
 * inputs this layer saw in earlier segments, no gradient) in front of the segment. Vanilla blocks
 * have M = 0 and absolute positions; XL blocks add relative-position terms (r, u, v) and no biases
 * in the attention projections (NULL bias pointers). */
typedef struct {
    float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
    float *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    float *r_w;   /* XL: [C, C] projection of the sinusoid position embeddings (NULL for vanilla) */
    float *u, *v; /* XL: [H*D] content and position biases (may be shared between layers) */
    float *qkvg_w, *qkvg_b; /* global tokens (Longformer): their own [3C, C] projection (NULL: none) */
    float *attn_params[LC_ATTN_MAX_GROUPS]; /* learned parameters of each head group's kind (or NULL) */
} lc_block_weights;

/* Activations one block saves for backward (N = B*T segment rows; B*S rows where noted). */
typedef struct {
    float *cat;          /* [B, S, C] memory rows then segment rows (used when M > 0) */
    float *norm1;        /* pre: LN1(cat) [B*S rows]; post: h1 = LN1(s1) */
    float *mean1, *rstd1;
    float *qkv;          /* [B*S, 3C] */
    float *r;            /* XL: [S, C] projected position embeddings by distance */
    float *att;          /* [N, C] attention output before the projection */
    float *lse;          /* [B*H*T] row log-sum-exp of the attention (head group g: from B*T*h0 on) */
    float *qkvg;         /* global tokens: [B*S, 3C] projection by qkvg_w */
    float *lse_g;        /* global tokens: [B*H*n_global] log-sum-exp of the global rows */
    float *s1;           /* x + drop(proj(att)) */
    float *norm2;        /* pre: LN2(s1); post: unused */
    float *mean2, *rstd2;
    float *fc1, *act;    /* [N, F] pre-activation and activation */
    float *s2;           /* post: h1 + drop(ffn(h1)); pre: unused (the output is the sum) */
} lc_block_acts;

/* Scratch for backward, shared by all blocks: [N, C]-sized d_a, d_b, d_tmp, d_att; [B*S, C]-sized
 * d_norm, d_cat; [B*S, 3C] d_qkv; [N, F] d_fc1, d_act; XL: [S, C] d_r, [C] d_u, d_v. */
typedef struct {
    float *d_a, *d_b, *d_tmp, *d_att, *d_norm, *d_cat, *d_qkv, *d_fc1, *d_act, *d_r, *d_u, *d_v;
    float *d_qkvg; /* [B*S, 3C] when some layer has global tokens */
} lc_block_scratch;

typedef struct {
    int B, T, C, H, F;
    lc_norm norm;
    lc_activation activation;
    float dropout;   /* applied when train != 0 */
    int train;
    uint64_t seed;   /* dropout stream of this block for this step */
    const lc_attn_layer *layer; /* the kinds of this layer's head groups, with their options */
    int causal;       /* 1: decoder; 0: bidirectional encoder */
    uint64_t attn_seed; /* fixed per layer: the kinds' random choices (BigBird plans, LSH rotations) */
    float *attn_state[LC_ATTN_MAX_GROUPS]; /* per group: the kind's non-learned state (or NULL) */
    const int *global_pos; /* 0, 1, 2, ...: global token positions (the first n_global of a group) */
    float *attn_work; /* workspace of lc_attn_layer_workspace() for `threads` threads */
    int threads;      /* the model's compute plan: threads of the attention kinds (and of every region) */
    float *rel_scratch; /* XL with several head groups: [2 S C] for a group's r and dr columns */
    int ffn_chunk;    /* rows per feed-forward chunk (0: all N rows at once); fc1/act/d_fc1/d_act hold one chunk */
    float *tmp;       /* [N, C] forward scratch */
    int M;            /* memory rows in front of the segment (0: none) */
    const float *mem; /* [B, M, C] memory of this layer when M > 0 */
    long mem_stride;  /* floats between batch rows of mem */
    int relpos;       /* XL relative positions: sinus, r_w, u, v */
    int window;       /* keys per query (XL same_length); 0: all */
    const float *sinus; /* [S, C] sinusoid embeddings of distances 0..S-1 */
    /* Inference with a key/value cache (no backward): keys and values of the memory rows were kept
     * from earlier segments, so only the segment's own rows are projected. */
    float *kv;          /* [B][kv_stride]: rows of 2C (key then value); NULL: recompute from memory */
    long kv_stride;     /* floats between batch rows of kv */
    int kv_start;       /* row of the first memory key */
    int r_rows;         /* rows of a->r to compute; 0: a->r is already valid (cached) */
} lc_block_ctx;

/* Whether every head group of the layer runs the attention shape of this context (its B, T, M, causal,
 * window, relpos; global positions cut to those < T; the key/value cache needs LC_ATTN_CAP_DECODE):
 * lc_attn_kind_check per group. 0, or -1 with a one-line message. Call it before lc_block_forward. */
int lc_block_check_attention(const lc_block_ctx *ctx, char *err, size_t errlen);

/* out[N, C] = block(x[N, C]); out must not alias x. */
void lc_block_forward(const lc_block_ctx *ctx, const lc_block_weights *w, const lc_block_acts *a, const float *x,
                      float *out);
/* On entry dx holds d loss / d out; on return d loss / d x (memory rows get no gradient). Weight
 * gradients accumulate into g. */
void lc_block_backward(const lc_block_ctx *ctx, const lc_block_weights *w, lc_block_weights *g,
                       const lc_block_acts *a, const float *x, float *dx, const lc_block_scratch *s);

/* Reversible residual halves (Reformer; pre-LN blocks without memory): f(x) = drop(attn(LN1(x))) and
 * g(y) = drop(ffn(LN2(y))) written to ctx->tmp; the activations go to a (which may be shared by every
 * layer, since backward recomputes them). Backward: dx += (d half / d input)^T dy; weight gradients
 * accumulate into g. */
void lc_block_attn_half(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *x);
void lc_block_attn_half_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                                 const lc_block_acts *a, const float *x, const float *dy, float *dx,
                                 const lc_block_scratch *s);
void lc_block_ffn_half(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *y);
void lc_block_ffn_half_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                                const lc_block_acts *a, const float *y, const float *dy, float *dx,
                                const lc_block_scratch *s);

/* Sinusoid embeddings of distances 0..S-1 ([sin | cos] halves, inv_freq_k = 10000^(-2k/C)), distances
 * beyond clamp_len (when > 0) using clamp_len, as Transformer-XL. out is [S, C], C even. */
void lc_sinusoid_positions(float *out, int S, int C, int clamp_len);

#endif
