/* longctx public API, part of longctx.h (include that one): Status codes, the model configuration and the model itself: lifetime, threads, forward and backward, XL memory. */
#ifndef LONGCTX_MODEL_H
#define LONGCTX_MODEL_H

#include <stddef.h>
#include <stdint.h>


#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible call returns one of these; lc_last_error() holds a one-line message. */
typedef enum {
    LC_OK = 0,
    LC_ERR_ARG,    /* invalid argument or configuration (a usage error at the CLI) */
    LC_ERR_IO,     /* a file could not be opened, read, written or renamed */
    LC_ERR_FORMAT, /* a file exists but its contents are not what was expected */
    LC_ERR_NOMEM,  /* an allocation failed */
    LC_ERR_NUMERIC /* a value became NaN or infinite (training diverged; a model with such weights) */
} lc_status;

/* The one-line message of the failed call that returned a status other than LC_OK, on this thread.
 * Every call that returns an lc_status clears it first, so after a successful call it is "". */
const char *lc_last_error(void);
/* A short name for a status code. */
const char *lc_status_name(lc_status s);

/* ---------------------------------------------------------------- configuration */
typedef enum { LC_NORM_PRE = 0, LC_NORM_POST = 1 } lc_norm;
typedef enum { LC_ACT_GELU = 0, LC_ACT_RELU = 1 } lc_activation;
typedef enum {
    LC_MODEL_VANILLA = 0, /* learned absolute positions, each segment on its own */
    LC_MODEL_XL = 1       /* Transformer-XL: segment recurrence + relative positions */
} lc_model_kind;

typedef enum {
    LC_OBJECTIVE_CLM = 0, /* causal language model (decoder): predict the next byte */
    LC_OBJECTIVE_MLM = 1  /* masked language model (bidirectional encoder): BERT-style byte masking */
} lc_objective;

/* How the matrix products of the linear layers and the output projection run. Weights, gradients,
 * optimizer state and every other op stay fp32 either way. */
typedef enum {
    LC_PRECISION_FP32 = 0, /* fp32 inputs, fp32 sums */
    LC_PRECISION_BF16 = 1  /* inputs rounded to bf16, fp32 sums: AVX512_BF16 kernels where the CPU has them,
                              fp32 products elsewhere (LC_BF16=portable emulates them: slow, for tests) */
} lc_precision;

/* Characters of an attention spec string, terminator included. */
#define LC_ATTN_SPEC_CHARS 512
/* The masked-LM mask symbol: the byte embedding has one extra row for it (tokens 0..256). */
#define LC_MASK_TOKEN 256

/* Shape and behaviour of a byte-level language model (a decoder, or an encoder with the MLM objective). */
typedef struct {
    int vocab;          /* always 256: bytes */
    int n_layer;        /* Transformer blocks */
    int d_model;        /* residual width C */
    int n_head;         /* attention heads; d_model % n_head == 0 */
    int d_ff;           /* feed-forward inner width */
    int seq_len;        /* tokens per segment (and learned positions) */
    lc_norm norm;       /* pre-LN or post-LN blocks */
    lc_activation activation;
    int tied;           /* output projection shares the byte embedding */
    float dropout;      /* on embeddings, attention and feed-forward outputs (training only) */
    lc_model_kind model;
    /* Transformer-XL only: */
    int mem_len;        /* hidden states kept per layer from earlier segments (0: none) */
    int clamp_len;      /* relative distances beyond this use this one (0: no clamp) */
    int same_length;    /* every query sees exactly mem_len keys (needs mem_len > 0) */
    int shared_uv;      /* one pair of position biases u, v for all layers (else one per layer) */
    /* Attention (docs/guides/attention.md): */
    char attn[LC_ATTN_SPEC_CHARS]; /* kind per layer and head group, e.g. "window:w=128" ("": full) */
    int qk_share;       /* consecutive heads sharing one query and one key projection (0 or 1: none) */
    int attn_share;     /* consecutive layers sharing one attention module (0 or 1: none) */
    lc_objective objective; /* MLM needs model vanilla: bidirectional, absolute positions */
    /* Memory savers (Reformer): */
    int reversible;     /* reversible residual layers: backward rebuilds each layer's inputs from its outputs,
                           so activations do not grow with depth (needs pre-LN, model vanilla) */
    int ffn_chunk;      /* feed-forward over chunks of this many rows (0: all at once) */
    int extra_tokens;   /* learned tokens put in front of every sequence (BigBird ETC's global tokens; with
                           global=G or bigbird:variant=etc,g=G they are the global positions); never scored.
                           Needs model vanilla */
    lc_precision precision; /* of the linear layers' products (a run setting: changes no tensor) */
} lc_config;

/* The defaults of the "small" preset. */
void lc_config_default(lc_config *cfg);
/* Fill cfg from a named preset ("tiny", "small", "base"); LC_ERR_ARG for an unknown name. */
lc_status lc_config_preset(lc_config *cfg, const char *name);
/* LC_ERR_ARG with a message naming the offending field when cfg is not buildable. */
lc_status lc_config_validate(const lc_config *cfg);

/* ---------------------------------------------------------------- model */
typedef struct lc_model lc_model;

/* Build a model whose parameters, gradients, optimizer state and activations are planned and
 * allocated once, for batches of up to max_batch sequences of up to cfg->seq_len tokens.
 * Parameters start at the training initialisation drawn from `seed`. */
lc_status lc_model_create(const lc_config *cfg, int max_batch, uint64_t seed, lc_model **out);
void lc_model_free(lc_model *m);
const lc_config *lc_model_config(const lc_model *m);
size_t lc_model_num_params(const lc_model *m);
/* The compute plan's thread count: every pass of the model runs with this many threads, and its
 * attention workspace is sized for them. A new model takes the count the process was given (the CLI's
 * --threads) or else the cores it may run on (its CPU affinity). threads <= 0 means those cores; more
 * than those is capped to them. Re-plans the workspace (the XL memory is kept). Results do not depend
 * on the thread count: every sum is taken in one fixed order. Each model keeps its own count: models
 * with different counts may run at the same time in different threads (one model, one thread at a time). */
lc_status lc_model_set_threads(lc_model *m, int threads);
int lc_model_threads(const lc_model *m);
/* The precision of the linear layers' products from now on (cfg.precision; a checkpoint saved later records
 * it). Changes no tensor: a model trained in one precision runs in the other. */
lc_status lc_model_set_precision(lc_model *m, lc_precision p);
/* Bytes held by parameters+gradients+optimizer state, and by activations and workspaces. */
size_t lc_model_param_bytes(const lc_model *m);
size_t lc_model_activation_bytes(const lc_model *m);

/* Forward pass over tokens[B*T] (row-major [B][T]). A Transformer-XL model attends to its memory of
 * earlier segments of the same B streams and then appends this segment's hidden states to it (so
 * consecutive calls must continue the same streams; a different B needs lc_model_reset_memory). With targets (may be NULL) it returns the summed
 * cross-entropy in nats through loss_sum and the number of scored positions (targets >= 0) through
 * count. `train` enables dropout (seeded by lc_model_set_step). Logits are kept for lc_model_logits. */
lc_status lc_model_forward(lc_model *m, const int *tokens, const int *targets, int B, int T, int train,
                           double *loss_sum, long *count);
/* Backward of the last forward, for the loss sum(losses) * loss_scale; gradients ACCUMULATE into the
 * model's gradient buffer. LC_ERR_ARG (nothing changes) when there is nothing to differentiate: no
 * forward yet, or the last forward had no targets. */
lc_status lc_model_backward(lc_model *m, float loss_scale);
void lc_model_zero_grad(lc_model *m);
/* Re-plan the activation buffers for batches of up to max_batch segments of up to seq_len tokens and,
 * for Transformer-XL, memories of mem_len rows (evaluation and generation may use other lengths than
 * training). Vanilla models need seq_len <= their trained length. Resets the XL memory. */
lc_status lc_model_resize(lc_model *m, int max_batch, int seq_len, int mem_len);
/* Transformer-XL evaluation options: clamp_len (0: off) and same_length. */
lc_status lc_model_set_xl_options(lc_model *m, int clamp_len, int same_length);
/* Forget the XL memory (the next segment starts without context). No-op for vanilla models. */
void lc_model_reset_memory(lc_model *m);
/* The attention weights of head `head` of layer `layer` over one sequence tokens[T] from an empty memory
 * (no dropout): weights[t * TT + s], TT = T plus the model's extra tokens (in front), is the weight query t
 * gives key s, as the layer's attention kinds compute it from the real queries and keys (their windows,
 * dilation, random blocks, global tokens, LSH buckets, routing clusters; Linformer and compressed
 * attention: each token's effective share through the projections or pooled blocks). Runs one forward
 * (T <= the planned segment length) and leaves the XL memory empty. Reversible models are refused. */
lc_status lc_model_attention_map(lc_model *m, const int *tokens, int T, int layer, int head, float *weights);
/* Rows currently held in each layer's XL memory. */
int lc_model_memory_rows(const lc_model *m);
/* Logits [B*T][256] of the last forward. */
const float *lc_model_logits(const lc_model *m);
/* Keys the dropout masks of the next forward/backward pair: masks are a pure function of the model's
 * seed and this counter (the trainer sets it to the micro-batch number). */
void lc_model_set_noise_key(lc_model *m, long key);

#ifdef __cplusplus
}
#endif
#endif
