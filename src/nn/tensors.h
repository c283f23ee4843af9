/* The one list of a model's tensors: every learned parameter and every piece of attention-kind state,
 * with its name, shape, role, weight decay, initialisation and the model pointers it fills. Planning,
 * initialisation, weight decay, gradient mirroring and checkpoint writing and reading all derive from
 * this list; it depends on the configuration only, so a checkpoint's tensor table can be checked
 * against it before any model memory is allocated. docs/reference/checkpoint.md documents every name. */
#ifndef LC_NN_TENSORS_H
#define LC_NN_TENSORS_H

#include "attn/spec.h"
#include "core/table.h"
#include "core/rng.h"
#include "longctx.h"
#include "nn/nn.h"

typedef enum {
    LC_ROLE_MATRIX,     /* a weight matrix [out, in] (and the untied output projection) */
    LC_ROLE_BIAS,
    LC_ROLE_NORM_GAIN,  /* LayerNorm weight */
    LC_ROLE_NORM_BIAS,  /* LayerNorm bias */
    LC_ROLE_EMBEDDING,  /* byte embedding rows (mask symbol and extra tokens included) */
    LC_ROLE_POSITION,   /* learned absolute position embedding */
    LC_ROLE_POS_BIAS,   /* Transformer-XL content and position biases u, v */
    LC_ROLE_KIND_PARAM, /* learned parameters of an attention kind */
    LC_ROLE_KIND_STATE, /* non-learned state of an attention kind: no gradient, no moments, no decay */
    LC_N_ROLES
} lc_tensor_role;

typedef enum {
    LC_INIT_NORMAL,   /* N(0, 0.02^2) */
    LC_INIT_RESIDUAL, /* N(0, (0.02 / sqrt(2 n_layer))^2): projections writing into the residual stream */
    LC_INIT_ZEROS,
    LC_INIT_ONES,
    LC_INIT_UNIT,     /* N(0, 1): HIBERT's hashed word vectors (a random projection of a sentence's words) */
    LC_INIT_KIND      /* the kind's param_init / state_init, seeded by layer and head group */
} lc_tensor_init;

/* The model pointer a tensor fills. Block sites are fields of lc_block_weights (and of the gradient
 * block); the QK/V sites hold the tied Q/K parameters behind the expanded projection. */
typedef enum {
    LC_SITE_WTE, LC_SITE_WPE, LC_SITE_LNF_W, LC_SITE_LNF_B, LC_SITE_HEAD,
    LC_SITE_LN1_W, LC_SITE_LN1_B, LC_SITE_QKV_W, LC_SITE_QKV_B, LC_SITE_PROJ_W, LC_SITE_PROJ_B,
    LC_SITE_LN2_W, LC_SITE_LN2_B, LC_SITE_FC1_W, LC_SITE_FC1_B, LC_SITE_FC2_W, LC_SITE_FC2_B,
    LC_SITE_R_W, LC_SITE_U, LC_SITE_V, LC_SITE_QKVG_W, LC_SITE_QKVG_B, LC_SITE_KIND_PARAMS,
    LC_SITE_QK_W, LC_SITE_QK_B, LC_SITE_V_W, LC_SITE_V_B,
    LC_SITE_KIND_STATE,
    /* the hierarchical model's own (models/hibert/hibert.h): the head's bias, the projection between two stacks, the
     * sentence encoder's hashed word vectors, the head's feature weights */
    LC_SITE_HEAD_B, LC_SITE_IN_W, LC_SITE_IN_B, LC_SITE_WORDS, LC_SITE_HEAD_FEAT,
    /* the decoder block's cross-attention (lc_decoder_weights) */
    LC_SITE_LNC_W, LC_SITE_LNC_B, LC_SITE_CQ_W, LC_SITE_CQ_B, LC_SITE_CKV_W, LC_SITE_CKV_B, LC_SITE_CPROJ_W,
    LC_SITE_CPROJ_B,
    /* the classifier's bracket-depth embedding (models/classify/classify.h) */
    LC_SITE_WDE
} lc_tensor_site;

typedef struct {
    char name[LC_NAME_MAX];
    int ndim;
    long shape[2];
    lc_tensor_role role;
    int decay;           /* AdamW weight decay applies */
    lc_tensor_init init;
    lc_tensor_site site;
    int layer, layers;   /* block tensors: used by layers layer .. layer+layers-1 (shared modules, shared u/v) */
    int group;           /* kind tensors: the head group of `layer` */
    int slot;            /* index in the model's parameter table, or in its state table for kind state */
    int stack;           /* which stack of blocks the tensor belongs to (the LM has one: 0; the
                          * hierarchical model's are listed in models/hibert/hibert.h) */
} lc_tensor;

typedef struct {
    lc_tensor *t;
    int n, cap;
} lc_tensor_list;

/* The tensors of a model of config c whose layers parsed to layers[0 .. n_layer), in the order of the
 * parameter table (which is the order of initialisation draws and of checkpoint files). Slots are
 * numbered per table. LC_ERR_NOMEM (message set) when out of memory. */
lc_status lc_tensors_build(const lc_config *c, const lc_attn_layer *layers, lc_tensor_list *out);
void lc_tensors_free(lc_tensor_list *l);

/* Building a list (the LM's above, the hierarchical model's in models/hibert/hibert_params.c): tensors are appended
 * in order, each taking its role's decay and initialisation and the next slot of its table; `stack` is
 * stamped on every tensor added. A failed allocation is remembered and reported by lc_tensor_list_finish. */
typedef struct {
    lc_tensor_list *l;
    int failed;
    int n_params, n_state; /* slots handed out in each table */
    int stack;
} lc_tensor_builder;

void lc_tensor_builder_init(lc_tensor_builder *b, lc_tensor_list *out);
/* Append a tensor of shape [d0] (d1 <= 0) or [d0, d1] named from fmt; the entry, or NULL after a failure. */
lc_tensor *lc_tensor_add(lc_tensor_builder *b, lc_tensor_role role, lc_tensor_site site, int layer, int layers,
                         long d0, long d1, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
/* The blocks of a stack of c->n_layer layers (attention modules with their sharing, feed-forward
 * sublayers) named prefix + "blocks.{i}....", and separately their kinds' state (listed after every
 * parameter). c gives the stack's shape, model kind and sharing; kind parameters are sized for
 * c->seq_len + c->extra_tokens keys. */
void lc_tensors_add_blocks(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layers, const char *prefix);
void lc_tensors_add_kind_state(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layers,
                               const char *prefix);
/* LC_OK, or LC_ERR_NOMEM (message set, list freed) when an append failed. */
lc_status lc_tensor_list_finish(lc_tensor_builder *b);

/* Whether the tensor is a trained parameter (has a gradient and AdamW moments). */
static inline int lc_tensor_is_param(const lc_tensor *t) { return t->role != LC_ROLE_KIND_STATE; }
/* Elements of the tensor. */
size_t lc_tensor_count(const lc_tensor *t);

/* Where a model keeps the numbers its tensor list describes: parameters, gradients and the two AdamW
 * moments laid out by the parameter table (one allocation each), kind state by the state table. */
typedef struct {
    lc_table *ptab, *stab;
    float **params, **grads, **adam_m, **adam_v, **state;
} lc_tensor_buffers;
/* The buffers of a model whose members have these names (the classifier's, HIBERT's, seq2seq's). */
#define LC_TENSOR_BUFFERS_OF(m) {&(m)->ptab, &(m)->stab, &(m)->params, &(m)->grads, &(m)->adam_m, &(m)->adam_v, &(m)->state}
/* Lays out the list in the two tables and allocates the buffers (zeroed), after checking that they fit
 * in the machine's memory; LC_OK or an error with its message. */
lc_status lc_tensors_allocate(const lc_tensor_list *l, const lc_tensor_buffers *b);
/* Frees the buffers and the tables (and the list). */
void lc_tensors_release(lc_tensor_list *l, const lc_tensor_buffers *b);

/* nn/tensor_ops.c: the values of tensor i of the list (parameter or kind state); binding: for every
 * tensor and every layer it serves (layer 0 for tensors of no layer), site(user, t, layer, grad) names the
 * pointer to fill with its values (grad 0) or its gradient (grad 1), or NULL for none. */
float *lc_tensor_values(const lc_tensor_list *l, const lc_tensor_buffers *b, int i);
typedef float **(*lc_tensor_site_fn)(void *user, const lc_tensor *t, int layer, int grad);
void lc_tensors_bind(const lc_tensor_list *l, const lc_tensor_buffers *b, lc_tensor_site_fn site, void *user);
/* The cross-attention tensors of the decoder blocks of config c (layer i: prefix + "blocks.{i}.ln_cross",
 * ".cross.q", ".cross.kv" reading encoder rows of width C_enc, ".cross.proj"), layer by layer. */
void lc_tensors_add_cross(lc_tensor_builder *b, const lc_config *c, long C_enc, const char *prefix);
/* The field of a decoder block's weights (or gradients) that tensor t fills: its cross-attention sites,
 * else the self part's (lc_tensor_block_field). */
float **lc_tensor_decoder_field(lc_decoder_weights *w, const lc_tensor *t);

/* The field of a Transformer block's weights (or gradients) that tensor t fills; NULL for sites that are
 * not a block's. */
float **lc_tensor_block_field(lc_block_weights *w, const lc_tensor *t);

/* Fills x with tensor t's initialisation: ones, zeros, N(0, 0.02^2) drawn from rng (residual
 * projections: std 0.02 / sqrt(2 n_layer)), or the kind's param_init / state_init for group g (heads of
 * dimension D, kind parameters sized for max_len keys) seeded from seed and the tensor's stream. */
typedef struct {
    lc_rng *rng;
    int n_layer;               /* layers of the tensor's stack */
    const lc_attn_group *group; /* LC_INIT_KIND: the tensor's head group */
    int D, max_len;
    uint64_t seed, stream;     /* LC_INIT_KIND: the kind's own random stream */
} lc_tensor_init_ctx;
void lc_tensor_init_values(const lc_tensor *t, float *x, const lc_tensor_init_ctx *c);

#endif
