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
    lc_precision precision; /* of the linear layers' products (lc_linear_forward_at) */
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
    /* Optional with kv (for full attention's evaluation products, attn.h lc_attn_store): the keys of kv
     * again as panels (kernels.h), store (b, h) at k_panels + (b * H + h) * k_panel_floats, cache row r
     * at store row r, and its values as rows, store (b, h) at v_rows + (b * H + h) * kv_rows * D (the
     * block writes the rows it appends); r as panels, head h at r_panels + h * r_panel_floats (packed
     * with a->r). */
    float *k_panels, *v_rows, *r_panels;
    long k_panel_floats, r_panel_floats;
    int kv_rows;
    /* Packed sequences of different lengths (vanilla blocks only: M = 0, no relpos, window or cache).
     * n_seq > 0: the N = B*T rows (any B, T with that product, e.g. B = 1, T = N) are n_seq sequences
     * laid end to end, sequence i having seq_len[i] >= 1 rows (the lengths sum to N). Row-wise work runs
     * on all N rows at once; attention runs once per group of consecutive sequences of equal length, as
     * a (B_g = their count, T_g = their length) problem on views into the packed buffers (no padding, no
     * masks), so order the sequences with equal lengths adjacent (e.g. sorted by length). Global
     * positions are positions inside each sequence. lse and lse_g stay [N*H]: head group g from N*h0
     * on, in it sequence group j from its first row r0 times the group's heads on. n_seq = 0: B
     * sequences of T rows, as always. */
    int n_seq;
    const int *seq_len;
    /* Floats of attn_work, checked by lc_block_check_attention against every sequence group's need
     * (required when packed: size it with lc_block_packed_workspace); 0: not checked (unpacked only). */
    size_t attn_work_floats;
} lc_block_ctx;

/* Attention workspace floats (for c->threads threads) that every packing of at most max_rows rows into
 * sequences of at most max_len rows needs with c's layer, heads, width and direction: the most any
 * sequence group (B_g, T_g) with B_g T_g <= max_rows and T_g <= max_len the layer's kinds accept can
 * ask for. What a planner that knows only its limits allocates for c->attn_work. */
size_t lc_block_packed_workspace(const lc_block_ctx *c, int max_rows, int max_len, int max_seqs);

/* Whether every head group of the layer runs the attention shape of this context (its B, T, M, causal,
 * window, relpos; global positions cut to those < T; the key/value cache needs LC_ATTN_CAP_DECODE):
 * lc_attn_kind_check per group. Packed contexts: the packing itself (lengths, a vanilla block), then
 * every sequence group's shape, and that each group's workspace fits attn_work_floats. 0, or -1 with a
 * one-line message. Call it before lc_block_forward. */
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
typedef enum { LC_REV_ATTN, LC_REV_FFN } lc_rev_half; /* f (LN1, attention) or g (LN2, feed-forward) */
void lc_block_half_forward(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, lc_rev_half half,
                           const float *x);
void lc_block_half_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                            const lc_block_acts *a, lc_rev_half half, const float *x, const float *dy, float *dx,
                            const lc_block_scratch *s);

/* A sublayer between the block's attention and its feed-forward, with its own LayerNorm, residual and
 * dropout (the decoder block's cross-attention), h the stream it reads:
 *   pre-LN: sum = h + drop(f(LN(h))), the feed-forward reads sum; post-LN: norm = LN(sum = h + drop(f(h))).
 * forward writes ctx->tmp = drop(f(in)); backward, given dsum = d loss / d (residual + drop(f(in))),
 * accumulates d loss / d in into din (din may be dsum), its weight gradients where user keeps them. */
typedef struct {
    void (*forward)(const void *user, const float *in);
    void (*backward)(const void *user, const float *in, const float *dsum, float *din);
    const void *user;
    const float *ln_w, *ln_b;  /* [C] its LayerNorm */
    float *g_ln_w, *g_ln_b;    /* [C] their gradients (backward) */
    float *norm, *mean, *rstd; /* [N, C], [N], [N] pre: LN(h); post: LN(sum) */
    float *sum;                /* [N, C] */
} lc_block_mid;

/* lc_block_forward and lc_block_backward with the sublayer mid after the attention (NULL: none); a
 * context with a mid has no memory rows and no key/value cache. */
void lc_block_forward_mid(const lc_block_ctx *ctx, const lc_block_weights *w, const lc_block_acts *a, const float *x,
                          float *out, const lc_block_mid *mid);
void lc_block_backward_mid(const lc_block_ctx *ctx, const lc_block_weights *w, lc_block_weights *g,
                           const lc_block_acts *a, const float *x, float *dx, const lc_block_scratch *s,
                           const lc_block_mid *mid);

/* The attention weights of head `head` of this block over its input rows x[T, C], one sequence from the
 * start (c's B and memory are ignored: B = 1, no memory, no key/value cache, not packed; no dropout):
 * p[t * T + s] (T x T floats) is the weight query t gives key s, as the layer's kinds compute it, with
 * their own visibility (windows, dilation, random blocks, LSH buckets, routing clusters, global rows).
 * Read off the kinds' forward itself: attention is linear in the values, so one-hot values (key s: e_s)
 * turn each output row into weights, D keys per pass. Kinds that mix values (Linformer's projections,
 * compressed attention's pooled blocks) give each key its effective share. For inspection only: it
 * allocates its buffers (LC_ERR_NOMEM when it cannot). Check the context first (lc_block_check_attention). */
lc_status lc_block_attention_weights(const lc_block_ctx *c, const lc_block_weights *w, const float *x, int head,
                                     float *p);

/* Sinusoid embeddings of distances 0..S-1 ([sin | cos] halves, inv_freq_k = 10000^(-2k/C)), distances
 * beyond clamp_len (when > 0) using clamp_len, as Transformer-XL. out is [S, C], C even. */
void lc_sinusoid_positions(float *out, int S, int C, int clamp_len);

/* ---- decoder block (src/nn/decoder.c): the encoder-decoder Transformer's decoder layer, HIBERT's
 * sentence decoder. Three sublayers, each with its residual and dropout, pre-LN or post-LN like the block:
 *   causal self-attention over the decoder rows (any kind; packed sequences as lc_block_ctx),
 *   cross-attention: queries from the decoder stream, keys/values projected from encoder output rows
 *     (width C_enc, may differ from C) over packed (query range, key range) pairs (src/attn/cross.h),
 *   feed-forward.
 * pre-LN:  s1 = x + drop(attn(LN1(x)));  sc = s1 + drop(cross(LNc(s1), enc));  out = sc + drop(ffn(LN2(sc)))
 * post-LN: h1 = LN1(x + drop(attn(x)));  hc = LNc(h1 + drop(cross(h1, enc)));  out = LN2(hc + drop(ffn(hc))) */
typedef struct {
    lc_block_weights self;    /* ln1, attention (qkv, proj, global projections, kind parameters), ln2, ffn */
    float *lnc_w, *lnc_b;     /* [C] the cross-attention's LayerNorm */
    float *cq_w, *cq_b;       /* [C, C], [C] queries from the decoder stream */
    float *ckv_w, *ckv_b;     /* [2C, C_enc], [2C] keys (rows 0..C-1) and values (rows C..2C-1) of the encoder rows */
    float *cproj_w, *cproj_b; /* [C, C], [C] output projection */
} lc_decoder_weights;

/* Saved activations (N = the decoder rows, N_enc the encoder rows). */
typedef struct {
    lc_block_acts self; /* norm1, mean1, rstd1 (pre: LN1(x); post: h1), qkv, att, lse, qkvg, lse_g, s1,
                         * norm2, mean2, rstd2 (pre: LN2(sc); post: the output's statistics), fc1, act, s2 (post) */
    float *normc, *meanc, *rstdc; /* [N, C], [N], [N] pre: LNc(s1); post: hc = LNc(sc) */
    float *cq;   /* [N, C] cross-attention queries */
    float *ckv;  /* [N_enc, 2C] keys then values of every encoder row */
    float *catt; /* [N, C] cross-attention output before the projection */
    float *clse; /* [N, H] its row log-sum-exp */
    float *sc;   /* [N, C] pre: s1 + drop(cross); post: h1 + drop(cross) */
} lc_decoder_acts;

/* Backward scratch: the block's (its [N, C] and [N, 3C] buffers and d_fc1/d_act; no memory rows) and
 * the cross-attention's. */
typedef struct {
    lc_block_scratch self;
    float *d_cq;  /* [N, C] */
    float *d_ckv; /* [N_enc, 2C] */
} lc_decoder_scratch;

typedef struct {
    lc_block_ctx self;  /* the decoder rows: B*T (packed or not), C, H, F, norm, dropout, causal = 1, the self-
                         * attention's layer and workspace, tmp. Vanilla only: no memory, relpos, cache. */
    const float *enc;   /* [N_enc, C_enc] encoder output rows */
    int N_enc, C_enc;
    /* Cross-attention pairs: decoder rows q_start[i] .. + q_len[i] read encoder rows kv_start[i] .. +
     * kv_len[i]. The query ranges cover every decoder row exactly once; key ranges may overlap (several
     * decoder sequences reading one encoder sequence). */
    int n_pairs;
    const int *q_start, *q_len, *kv_start, *kv_len;
    float *cross_work;        /* lc_decoder_cross_workspace floats */
    size_t cross_work_floats; /* its size, checked by lc_decoder_check */
} lc_decoder_ctx;

/* Cross-attention workspace floats for pairs of at most max_kv_len encoder rows, with `threads` threads. */
size_t lc_decoder_cross_workspace(int max_kv_len, int threads);
/* The context's checks: the self-attention's (lc_block_check_attention, causal), the pairs (valid,
 * inside the rows, query ranges covering every decoder row once), the widths, the cross workspace.
 * 0, or -1 with a one-line message. Call it before lc_decoder_forward. */
int lc_decoder_check(const lc_decoder_ctx *c, char *err, size_t errlen);
/* out[N, C] = decoder(x[N, C], enc); out must not alias x. */
void lc_decoder_forward(const lc_decoder_ctx *c, const lc_decoder_weights *w, const lc_decoder_acts *a,
                        const float *x, float *out);
/* On entry dx holds d loss / d out; on return d loss / d x. d loss / d enc ACCUMULATES into d_enc
 * [N_enc, C_enc] (NULL: not wanted; the encoder rows no pair reads get nothing); weight gradients
 * accumulate into g. */
void lc_decoder_backward(const lc_decoder_ctx *c, const lc_decoder_weights *w, lc_decoder_weights *g,
                         const lc_decoder_acts *a, const float *x, float *dx, float *d_enc,
                         const lc_decoder_scratch *s);

#endif
