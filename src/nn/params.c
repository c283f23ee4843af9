/* A model's parameters and attention-kind state, laid out from its tensor list (nn/tensors.h): the
 * parameter table and its four allocations (values, gradients, AdamW moments), every pointer the
 * blocks read, the initialisation, the tied Q/K expansion and the kinds' state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "models/lm/lm.h"

/* Distinct query (and key) projections per layer with Q/K tied across groups of heads (0: not tied). */
static int qk_groups(const lc_config *c) { return c->qk_share > 1 ? c->n_head / c->qk_share : 0; }
/* Whether layer l owns its attention module (else it uses the module of the layer sharing starts at). */
static int owns_attention(const lc_config *c, int l) { return c->attn_share <= 1 || l % c->attn_share == 0; }

/* The model pointer tensor t fills for layer l (value when grad == 0, gradient otherwise), or NULL when
 * that side has no pointer (the tied Q/K parameters' gradients are reached by offset; state has none). */
static float **site(lc_model *m, const lc_tensor *t, int l, int grad) {
    switch (t->site) {
    case LC_SITE_WTE: return grad ? &m->g_wte : &m->wte;
    case LC_SITE_WPE: return grad ? &m->g_wpe : &m->wpe;
    case LC_SITE_LNF_W: return grad ? &m->g_lnf_w : &m->lnf_w;
    case LC_SITE_LNF_B: return grad ? &m->g_lnf_b : &m->lnf_b;
    case LC_SITE_HEAD: return grad ? &m->g_head : &m->head;
    case LC_SITE_QK_W: return grad ? NULL : &m->qk_w[l];
    case LC_SITE_QK_B: return grad ? NULL : &m->qk_b[l];
    case LC_SITE_V_W: return grad ? NULL : &m->v_w[l];
    case LC_SITE_V_B: return grad ? NULL : &m->v_b[l];
    case LC_SITE_KIND_STATE: return grad ? NULL : &m->group_state[l * LC_ATTN_MAX_GROUPS + t->group];
    default: return lc_tensor_block_field(grad ? &m->gblk[l] : &m->blk[l], t);
    }
}

/* Point every user of every tensor at its slice of the allocations: each layer of a shared module or
 * of the shared u/v pair gets the same slice, and gradients mirror values at the same offsets. */
static void bind(lc_model *m) {
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        const int param = lc_tensor_is_param(t);
        const size_t off = (param ? m->ptab.slots : m->stab.slots)[t->slot].offset;
        float *value = (param ? m->params : m->state) + off, *grad = param ? m->grads + off : NULL;
        const int first = t->layer < 0 ? -1 : t->layer, last = t->layer < 0 ? -1 : t->layer + t->layers - 1;
        for (int l = first; l <= last; l++) {
            float **dst = site(m, t, l, 0);
            if (dst) *dst = value;
            if (grad && (dst = site(m, t, l, 1))) *dst = grad;
        }
    }
    if (m->cfg.tied) m->head = m->wte, m->g_head = m->g_wte;
}

/* Tensors in list order: the normal draws come from one stream seeded by `seed` in that order; kinds
 * draw from their own streams keyed by layer and head group. */
static void init_tensors(lc_model *m, uint64_t seed) {
    const lc_config *c = &m->cfg;
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        const int param = lc_tensor_is_param(t);
        float *x = (param ? m->params : m->state) + (param ? m->ptab.slots : m->stab.slots)[t->slot].offset;
        const lc_tensor_init_ctx ctx = {&rng, c->n_layer,
                                        t->init == LC_INIT_KIND ? &m->layers[t->layer].group[t->group] : NULL,
                                        c->d_model / c->n_head, c->seq_len + c->extra_tokens, seed,
                                        (uint64_t)(t->layer * LC_ATTN_MAX_GROUPS + t->group)};
        lc_tensor_init_values(t, x, &ctx);
    }
}

/* Q/K tying: every layer's qkv_w/qkv_b (and gradients) become rows of its module owner's expanded copy. */
static lc_status build_qk_expansion(lc_model *m) {
    const lc_config *c = &m->cfg;
    if (!qk_groups(c)) return LC_OK;
    const size_t C = (size_t)c->d_model, per = 3 * C * C + 3 * C;
    m->qk_exp = lc_alloc_aligned(sizeof(float) * per * (size_t)c->n_layer);
    m->g_qk_exp = lc_alloc_aligned(sizeof(float) * per * (size_t)c->n_layer);
    if (!m->qk_exp || !m->g_qk_exp) return lc_fail(LC_ERR_NOMEM, "out of memory for tied Q/K projections");
    for (int l = 0, o = 0; l < c->n_layer; l++) {
        if (owns_attention(c, l)) o = l;
        float *w = m->qk_exp + per * (size_t)o, *g = m->g_qk_exp + per * (size_t)o;
        m->blk[l].qkv_w = w, m->gblk[l].qkv_w = g;
        m->blk[l].qkv_b = m->qk_b[o] ? w + 3 * C * C : NULL;
        m->gblk[l].qkv_b = m->qk_b[o] ? g + 3 * C * C : NULL;
    }
    return LC_OK;
}

/* Sizes of Q/K tying: C = d_model, D = head size, GD = rows of one projection in the tied parameters. */
typedef struct {
    size_t C, D, GD;
} qk_dims;

/* Runs fn on every layer that owns its attention module (tied parameters exist only there). */
static void for_each_tied_layer(lc_model *m, void (*fn)(lc_model *m, int l, const qk_dims *d)) {
    const lc_config *c = &m->cfg;
    const int G = qk_groups(c);
    if (!G) return;
    const size_t C = (size_t)c->d_model, D = C / (size_t)c->n_head;
    const qk_dims d = {C, D, (size_t)G * D};
    for (int l = 0; l < c->n_layer; l++)
        if (owns_attention(c, l)) fn(m, l, &d);
}

/* Layer l's expanded projection from its tied parameters: head h's query rows are query group
 * h / qk_share's rows (keys likewise); values are copied as they are. */
static void expand_layer(lc_model *m, int l, const qk_dims *d) {
    const size_t C = d->C, D = d->D, GD = d->GD;
    float *w = m->blk[l].qkv_w, *b = m->blk[l].qkv_b;
    for (int h = 0; h < m->cfg.n_head; h++) {
        const size_t src = (size_t)(h / m->cfg.qk_share) * D;
        memcpy(w + h * D * C, m->qk_w[l] + src * C, sizeof(float) * D * C);
        memcpy(w + (C + h * D) * C, m->qk_w[l] + (GD + src) * C, sizeof(float) * D * C);
        if (b) {
            memcpy(b + h * D, m->qk_b[l] + src, sizeof(float) * D);
            memcpy(b + C + h * D, m->qk_b[l] + GD + src, sizeof(float) * D);
        }
    }
    memcpy(w + 2 * C * C, m->v_w[l], sizeof(float) * C * C);
    if (b) memcpy(b + 2 * C, m->v_b[l], sizeof(float) * C);
}

/* Layer l: adds the expanded projection's gradients into the tied parameters' gradients and clears them. */
static void fold_layer(lc_model *m, int l, const qk_dims *d) {
    const size_t C = d->C, D = d->D, GD = d->GD;
    float *gw = m->gblk[l].qkv_w, *gb = m->gblk[l].qkv_b;
    float *gqk = m->grads + (m->qk_w[l] - m->params), *gv = m->grads + (m->v_w[l] - m->params);
    for (int h = 0; h < m->cfg.n_head; h++) {
        const size_t dst = (size_t)(h / m->cfg.qk_share) * D;
        for (size_t i = 0; i < D * C; i++) {
            gqk[dst * C + i] += gw[h * D * C + i];
            gqk[(GD + dst) * C + i] += gw[(C + h * D) * C + i];
        }
        if (gb) {
            float *gqkb = m->grads + (m->qk_b[l] - m->params);
            for (size_t i = 0; i < D; i++) {
                gqkb[dst + i] += gb[h * D + i];
                gqkb[GD + dst + i] += gb[C + h * D + i];
            }
        }
    }
    for (size_t i = 0; i < C * C; i++) gv[i] += gw[2 * C * C + i];
    if (gb) {
        float *gvb = m->grads + (m->v_b[l] - m->params);
        for (size_t i = 0; i < C; i++) gvb[i] += gb[2 * C + i];
    }
    memset(gw, 0, sizeof(float) * (3 * C * C + (gb ? 3 * C : 0)));
}

/* Copy the tied parameters into the expanded projections (before a forward). */
void lc_model_expand_shared(lc_model *m) { for_each_tied_layer(m, expand_layer); }

/* Add the expanded projections' gradients into the tied parameters' gradients and clear them (after a backward). */
void lc_model_fold_shared(lc_model *m) { for_each_tied_layer(m, fold_layer); }

/* Where this model keeps the numbers of its tensor list. */
static lc_tensor_buffers buffers_of(lc_model *m) {
    return (lc_tensor_buffers){&m->ptab, &m->stab, &m->params, &m->grads, &m->adam_m, &m->adam_v, &m->state};
}

lc_status lc_model_build_params(lc_model *m, uint64_t seed) {
    const int L = m->cfg.n_layer;
    m->blk = calloc((size_t)L, sizeof *m->blk);
    m->gblk = calloc((size_t)L, sizeof *m->gblk);
    m->qk_w = calloc((size_t)L, sizeof *m->qk_w);
    m->qk_b = calloc((size_t)L, sizeof *m->qk_b);
    m->v_w = calloc((size_t)L, sizeof *m->v_w);
    m->v_b = calloc((size_t)L, sizeof *m->v_b);
    m->group_state = calloc((size_t)L * LC_ATTN_MAX_GROUPS, sizeof *m->group_state);
    if (!m->blk || !m->gblk || !m->qk_w || !m->qk_b || !m->v_w || !m->v_b || !m->group_state)
        return lc_fail(LC_ERR_NOMEM, "out of memory allocating the model");
    lc_status st = lc_tensors_build(&m->cfg, m->layers, &m->tensors);
    if (st) return st;
    const lc_tensor_buffers buf = buffers_of(m);
    if ((st = lc_tensors_allocate(&m->tensors, &buf))) return st;
    bind(m);
    if ((st = build_qk_expansion(m))) return st;
    init_tensors(m, seed);
    return LC_OK;
}

void lc_model_free_params(lc_model *m) {
    const lc_tensor_buffers buf = buffers_of(m);
    lc_tensors_release(&m->tensors, &buf);
    lc_free(m->qk_exp);
    lc_free(m->g_qk_exp);
    free(m->blk);
    free(m->gblk);
    free(m->qk_w);
    free(m->qk_b);
    free(m->v_w);
    free(m->v_b);
    free(m->group_state);
}
