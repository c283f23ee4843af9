/* The list of a model's tensors (see tensors.h): one function that walks the configuration and names
 * every parameter and every piece of kind state once, built from the stack-of-blocks pieces the
 * hierarchical model (models/hibert/hibert_params.c) lists its stacks with. */
#include "nn/tensors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* What a role implies unless an entry says otherwise: matrices and embeddings are decayed and drawn
 * from N(0, 0.02^2); biases, LayerNorm parameters, XL position biases and kind tensors are not decayed. */
static const struct {
    int decay;
    lc_tensor_init init;
} role_defaults[LC_N_ROLES] = {
    [LC_ROLE_MATRIX] = {1, LC_INIT_NORMAL},     [LC_ROLE_BIAS] = {0, LC_INIT_ZEROS},
    [LC_ROLE_NORM_GAIN] = {0, LC_INIT_ONES},    [LC_ROLE_NORM_BIAS] = {0, LC_INIT_ZEROS},
    [LC_ROLE_EMBEDDING] = {1, LC_INIT_NORMAL},  [LC_ROLE_POSITION] = {1, LC_INIT_NORMAL},
    [LC_ROLE_POS_BIAS] = {0, LC_INIT_NORMAL},   [LC_ROLE_KIND_PARAM] = {0, LC_INIT_KIND},
    [LC_ROLE_KIND_STATE] = {0, LC_INIT_KIND},
};

void lc_tensor_builder_init(lc_tensor_builder *b, lc_tensor_list *out) {
    memset(out, 0, sizeof *out);
    memset(b, 0, sizeof *b);
    b->l = out;
}

lc_tensor *lc_tensor_add(lc_tensor_builder *b, lc_tensor_role role, lc_tensor_site site, int layer, int layers,
                         long d0, long d1, const char *fmt, ...) {
    if (b->failed) return NULL;
    lc_tensor_list *l = b->l;
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        lc_tensor *t = realloc(l->t, (size_t)cap * sizeof *t);
        if (!t) { b->failed = 1; return NULL; }
        l->t = t, l->cap = cap;
    }
    lc_tensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = d1 > 0 ? 2 : 1;
    t->shape[0] = d0, t->shape[1] = d1 > 0 ? d1 : 0;
    t->role = role;
    t->decay = role_defaults[role].decay;
    t->init = role_defaults[role].init;
    t->site = site;
    t->layer = layer, t->layers = layers;
    t->stack = b->stack;
    t->slot = role == LC_ROLE_KIND_STATE ? b->n_state++ : b->n_params++;
    return t;
}

lc_status lc_tensor_list_finish(lc_tensor_builder *b) {
    if (!b->failed) return LC_OK;
    lc_tensors_free(b->l);
    return lc_fail(LC_ERR_NOMEM, "out of memory listing the model's tensors");
}

/* One layer's attention module (ln1, projections, XL position terms, global projections, kind tensors),
 * owned by layer l and used by `span` layers from l on. */
static void attention_module(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layer, int l, int span,
                             const char *pre) {
    const int xl = c->model == LC_MODEL_XL;
    const long C = c->d_model, H = c->n_head, D = C / H;
    const long G = c->qk_share > 1 ? H / c->qk_share : 0; /* distinct query/key projections when tied */
    lc_tensor_add(b, LC_ROLE_NORM_GAIN, LC_SITE_LN1_W, l, span, C, 0, "%sblocks.%d.ln1.weight", pre, l);
    lc_tensor_add(b, LC_ROLE_NORM_BIAS, LC_SITE_LN1_B, l, span, C, 0, "%sblocks.%d.ln1.bias", pre, l);
    if (G) {
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_QK_W, l, 1, 2 * G * D, C, "%sblocks.%d.attn.qk.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_V_W, l, 1, C, C, "%sblocks.%d.attn.v.weight", pre, l);
        if (!xl) {
            lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_QK_B, l, 1, 2 * G * D, 0, "%sblocks.%d.attn.qk.bias", pre, l);
            lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_V_B, l, 1, C, 0, "%sblocks.%d.attn.v.bias", pre, l);
        }
    } else {
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_QKV_W, l, span, 3 * C, C, "%sblocks.%d.attn.qkv.weight", pre, l);
        if (!xl) lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_QKV_B, l, span, 3 * C, 0, "%sblocks.%d.attn.qkv.bias", pre, l);
    }
    if (xl) lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_R_W, l, span, C, C, "%sblocks.%d.attn.r.weight", pre, l);
    if (xl && !c->shared_uv) {
        lc_tensor_add(b, LC_ROLE_POS_BIAS, LC_SITE_U, l, span, H, D, "%sblocks.%d.attn.u", pre, l);
        lc_tensor_add(b, LC_ROLE_POS_BIAS, LC_SITE_V, l, span, H, D, "%sblocks.%d.attn.v", pre, l);
    }
    lc_tensor *proj =
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_PROJ_W, l, span, C, C, "%sblocks.%d.attn.proj.weight", pre, l);
    if (proj) proj->init = LC_INIT_RESIDUAL;
    if (!xl) lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_PROJ_B, l, span, C, 0, "%sblocks.%d.attn.proj.bias", pre, l);
    if (lc_attn_layer_has_global(layer)) {
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_QKVG_W, l, span, 3 * C, C, "%sblocks.%d.attn.global.qkv.weight",
                      pre, l);
        if (!xl)
            lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_QKVG_B, l, span, 3 * C, 0, "%sblocks.%d.attn.global.qkv.bias",
                          pre, l);
    }
    for (int i = 0; i < layer->n_groups; i++) {
        const lc_attn_group *g = &layer->group[i];
        const size_t n = g->kind->param_floats
                             ? g->kind->param_floats(g->opts, g->heads, (int)D, c->seq_len + c->extra_tokens)
                             : 0;
        if (!n) continue;
        lc_tensor *t = lc_tensor_add(b, LC_ROLE_KIND_PARAM, LC_SITE_KIND_PARAMS, l, span, (long)n, 0,
                                     "%sblocks.%d.attn.group%d.params", pre, l, i);
        if (t) t->group = i, t->init = g->kind->param_init ? LC_INIT_KIND : LC_INIT_ZEROS;
    }
}

/* Kind state comes after every parameter in its own table; listing it here keeps one list. */
static void kind_state(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layer, int l, int span,
                       const char *pre) {
    const int D = c->d_model / c->n_head;
    for (int i = 0; i < layer->n_groups; i++) {
        const lc_attn_group *g = &layer->group[i];
        const size_t n = g->kind->state_floats ? g->kind->state_floats(g->opts, g->heads, D) : 0;
        if (!n) continue;
        lc_tensor *t = lc_tensor_add(b, LC_ROLE_KIND_STATE, LC_SITE_KIND_STATE, l, span, (long)n, 0,
                                     "%sblocks.%d.attn.group%d.state", pre, l, i);
        if (t) t->group = i, t->init = g->kind->state_init ? LC_INIT_KIND : LC_INIT_ZEROS;
    }
}

void lc_tensors_add_blocks(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layers, const char *pre) {
    const int L = c->n_layer, share = c->attn_share > 1 ? c->attn_share : 1;
    const long C = c->d_model, F = c->d_ff;
    for (int l = 0; l < L; l++) {
        if (l % share == 0) attention_module(b, c, &layers[l], l, l + share <= L ? share : L - l, pre);
        lc_tensor_add(b, LC_ROLE_NORM_GAIN, LC_SITE_LN2_W, l, 1, C, 0, "%sblocks.%d.ln2.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_NORM_BIAS, LC_SITE_LN2_B, l, 1, C, 0, "%sblocks.%d.ln2.bias", pre, l);
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_FC1_W, l, 1, F, C, "%sblocks.%d.ffn.fc1.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_FC1_B, l, 1, F, 0, "%sblocks.%d.ffn.fc1.bias", pre, l);
        lc_tensor *fc2 =
            lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_FC2_W, l, 1, C, F, "%sblocks.%d.ffn.fc2.weight", pre, l);
        if (fc2) fc2->init = LC_INIT_RESIDUAL;
        lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_FC2_B, l, 1, C, 0, "%sblocks.%d.ffn.fc2.bias", pre, l);
    }
}

void lc_tensors_add_cross(lc_tensor_builder *b, const lc_config *c, long C_enc, const char *pre) {
    const long C = c->d_model;
    for (int l = 0; l < c->n_layer; l++) {
        lc_tensor_add(b, LC_ROLE_NORM_GAIN, LC_SITE_LNC_W, l, 1, C, 0, "%sblocks.%d.ln_cross.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_NORM_BIAS, LC_SITE_LNC_B, l, 1, C, 0, "%sblocks.%d.ln_cross.bias", pre, l);
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_CQ_W, l, 1, C, C, "%sblocks.%d.cross.q.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_CQ_B, l, 1, C, 0, "%sblocks.%d.cross.q.bias", pre, l);
        lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_CKV_W, l, 1, 2 * C, C_enc, "%sblocks.%d.cross.kv.weight", pre, l);
        lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_CKV_B, l, 1, 2 * C, 0, "%sblocks.%d.cross.kv.bias", pre, l);
        lc_tensor *proj =
            lc_tensor_add(b, LC_ROLE_MATRIX, LC_SITE_CPROJ_W, l, 1, C, C, "%sblocks.%d.cross.proj.weight", pre, l);
        if (proj) proj->init = LC_INIT_RESIDUAL;
        lc_tensor_add(b, LC_ROLE_BIAS, LC_SITE_CPROJ_B, l, 1, C, 0, "%sblocks.%d.cross.proj.bias", pre, l);
    }
}

float **lc_tensor_decoder_field(lc_decoder_weights *w, const lc_tensor *t) {
    switch (t->site) {
    case LC_SITE_LNC_W: return &w->lnc_w;
    case LC_SITE_LNC_B: return &w->lnc_b;
    case LC_SITE_CQ_W: return &w->cq_w;
    case LC_SITE_CQ_B: return &w->cq_b;
    case LC_SITE_CKV_W: return &w->ckv_w;
    case LC_SITE_CKV_B: return &w->ckv_b;
    case LC_SITE_CPROJ_W: return &w->cproj_w;
    case LC_SITE_CPROJ_B: return &w->cproj_b;
    default: return lc_tensor_block_field(&w->self, t);
    }
}

void lc_tensors_add_kind_state(lc_tensor_builder *b, const lc_config *c, const lc_attn_layer *layers, const char *pre) {
    const int L = c->n_layer, share = c->attn_share > 1 ? c->attn_share : 1;
    for (int l = 0; l < L; l += share) kind_state(b, c, &layers[l], l, l + share <= L ? share : L - l, pre);
}

lc_status lc_tensors_build(const lc_config *c, const lc_attn_layer *layers, lc_tensor_list *out) {
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, out);
    const int xl = c->model == LC_MODEL_XL, L = c->n_layer;
    const long C = c->d_model, V = c->vocab, H = c->n_head, D = C / H;
    /* MLM: one more row, the mask symbol; then one row per extra (global) token */
    const long rows = V + (c->objective == LC_OBJECTIVE_MLM ? 1 : 0) + c->extra_tokens;
    lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, rows, C, "wte");
    if (!xl) lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, (long)c->seq_len + c->extra_tokens, C, "wpe");
    lc_tensors_add_blocks(&b, c, layers, "");
    if (xl && c->shared_uv) {
        lc_tensor_add(&b, LC_ROLE_POS_BIAS, LC_SITE_U, 0, L, H, D, "u");
        lc_tensor_add(&b, LC_ROLE_POS_BIAS, LC_SITE_V, 0, L, H, D, "v");
    }
    if (c->norm == LC_NORM_PRE) {
        lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, C, 0, "ln_f.weight");
        lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, C, 0, "ln_f.bias");
    }
    if (!c->tied) lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 0, V, C, "lm_head.weight");
    lc_tensors_add_kind_state(&b, c, layers, "");
    return lc_tensor_list_finish(&b);
}

void lc_tensors_free(lc_tensor_list *l) {
    free(l->t);
    memset(l, 0, sizeof *l);
}

size_t lc_tensor_count(const lc_tensor *t) { return (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1); }

float **lc_tensor_block_field(lc_block_weights *w, const lc_tensor *t) {
    switch (t->site) {
    case LC_SITE_LN1_W: return &w->ln1_w;
    case LC_SITE_LN1_B: return &w->ln1_b;
    case LC_SITE_QKV_W: return &w->qkv_w;
    case LC_SITE_QKV_B: return &w->qkv_b;
    case LC_SITE_PROJ_W: return &w->proj_w;
    case LC_SITE_PROJ_B: return &w->proj_b;
    case LC_SITE_LN2_W: return &w->ln2_w;
    case LC_SITE_LN2_B: return &w->ln2_b;
    case LC_SITE_FC1_W: return &w->fc1_w;
    case LC_SITE_FC1_B: return &w->fc1_b;
    case LC_SITE_FC2_W: return &w->fc2_w;
    case LC_SITE_FC2_B: return &w->fc2_b;
    case LC_SITE_R_W: return &w->r_w;
    case LC_SITE_U: return &w->u;
    case LC_SITE_V: return &w->v;
    case LC_SITE_QKVG_W: return &w->qkvg_w;
    case LC_SITE_QKVG_B: return &w->qkvg_b;
    case LC_SITE_KIND_PARAMS: return &w->attn_params[t->group];
    default: return NULL;
    }
}

void lc_tensor_init_values(const lc_tensor *t, float *x, const lc_tensor_init_ctx *c) {
    const size_t n = lc_tensor_count(t);
    switch (t->init) {
    case LC_INIT_ONES:
        for (size_t j = 0; j < n; j++) x[j] = 1.0f;
        break;
    case LC_INIT_ZEROS: memset(x, 0, n * sizeof *x); break;
    case LC_INIT_UNIT:
        for (size_t j = 0; j < n; j++) x[j] = lc_rng_normal(c->rng);
        break;
    case LC_INIT_NORMAL:
    case LC_INIT_RESIDUAL: {
        float std = 0.02f;
        if (t->init == LC_INIT_RESIDUAL) std *= 1.0f / sqrtf(2.0f * (float)c->n_layer);
        for (size_t j = 0; j < n; j++) x[j] = std * lc_rng_normal(c->rng);
        break;
    }
    case LC_INIT_KIND: {
        const lc_attn_group *g = c->group;
        if (lc_tensor_is_param(t))
            g->kind->param_init(x, g->opts, g->heads, c->D, c->max_len, lc_seed_mix(c->seed, 0x70617261ULL + c->stream));
        else
            g->kind->state_init(x, g->opts, g->heads, c->D, lc_seed_mix(c->seed, 0x73746174ULL + c->stream));
        break;
    }
    }
}

lc_status lc_tensors_allocate(const lc_tensor_list *l, const lc_tensor_buffers *b) {
    lc_table_init(b->ptab);
    lc_table_init(b->stab);
    for (int i = 0; i < l->n; i++) {
        const lc_tensor *t = &l->t[i];
        lc_table *tab = lc_tensor_is_param(t) ? b->ptab : b->stab;
        if (lc_table_add(tab, t->name, t->ndim, t->shape) != t->slot) return LC_ERR_NOMEM; /* message set */
    }
    const lc_status fits = lc_check_fits((4 * b->ptab->total + b->stab->total) * sizeof(float),
                                         "the parameters, gradients and optimizer moments");
    if (fits) return fits;
    float **param_side[4] = {b->params, b->grads, b->adam_m, b->adam_v};
    for (int i = 0; i < 4; i++)
        if (!(*param_side[i] = lc_table_alloc(b->ptab))) return LC_ERR_NOMEM; /* message set */
    if (b->stab->n > 0 && !(*b->state = lc_table_alloc(b->stab))) return LC_ERR_NOMEM;
    return LC_OK;
}

void lc_tensors_release(lc_tensor_list *l, const lc_tensor_buffers *b) {
    float **all[5] = {b->params, b->grads, b->adam_m, b->adam_v, b->state};
    for (int i = 0; i < 5; i++) {
        lc_free(*all[i]);
        *all[i] = NULL;
    }
    lc_table_free(b->ptab);
    lc_table_free(b->stab);
    lc_tensors_free(l);
}
