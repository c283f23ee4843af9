/* The byte-level decoder language model: parameter and activation planning (one allocation each),
 * initialisation, forward with cross-entropy, and backward. */
#include "model/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"

#define LC_LN_EPS 1e-5f

/* ---------------------------------------------------------------- planning helpers */

/* A slot to be patched with its address once the table is allocated. */
typedef struct {
    float **dst;
    int slot;
} lc_fixup;

typedef struct {
    lc_table *tab;
    lc_fixup *fix;
    int n, cap;
    int failed;
} lc_plan;

static void plan_add(lc_plan *p, float **dst, const char *name, int ndim, long d0, long d1) {
    long shape[2] = {d0, d1};
    if (p->failed) return;
    int slot = lc_table_add(p->tab, name, ndim, shape);
    if (slot < 0) { p->failed = 1; return; }
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        lc_fixup *f = realloc(p->fix, (size_t)p->cap * sizeof *f);
        if (!f) { p->failed = 1; return; }
        p->fix = f;
    }
    p->fix[p->n++] = (lc_fixup){dst, slot};
}

static void plan_patch(const lc_plan *p, float *base) {
    for (int i = 0; i < p->n; i++)
        if (p->fix[i].dst) *p->fix[i].dst = base + p->tab->slots[p->fix[i].slot].offset;
}

/* ---------------------------------------------------------------- parameters */

/* The layer whose attention module layer l uses (itself unless modules are shared across layers). */
static int attn_owner(const lc_config *c, int l) { return c->attn_share > 1 ? l - l % c->attn_share : l; }
/* Distinct query (and key) projections per layer with Q/K tied across groups of heads (0: not tied). */
static int qk_groups(const lc_config *c) { return c->qk_share > 1 ? c->n_head / c->qk_share : 0; }
static int is_mlm(const lc_config *c) { return c->objective == LC_OBJECTIVE_MLM; }

static void plan_params(lc_model *m, lc_plan *p) {
    const lc_config *c = &m->cfg;
    long C = c->d_model, F = c->d_ff, V = c->vocab;
    char nm[LC_NAME_MAX];
    int xl = c->model == LC_MODEL_XL;
    long H = c->n_head, D = C / H, G = qk_groups(c);
    /* MLM: one more row, the mask symbol; then one row per extra (global) token */
    plan_add(p, &m->wte, "wte", 2, V + (is_mlm(c) ? 1 : 0) + c->extra_tokens, C);
    if (!xl) plan_add(p, &m->wpe, "wpe", 2, c->seq_len + c->extra_tokens, C);
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_weights *w = &m->blk[l];
#define P(field, suffix, nd, a, b)                                                                     \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                \
    plan_add(p, &w->field, nm, nd, a, b)
        if (attn_owner(c, l) == l) { /* the attention module (shared layers point to their owner's) */
            P(ln1_w, "ln1.weight", 1, C, 0);
            P(ln1_b, "ln1.bias", 1, C, 0);
            if (G) {
                snprintf(nm, sizeof nm, "blocks.%d.attn.qk.weight", l);
                plan_add(p, &m->qk_w[l], nm, 2, 2 * G * D, C);
                snprintf(nm, sizeof nm, "blocks.%d.attn.v.weight", l);
                plan_add(p, &m->v_w[l], nm, 2, C, C);
                if (!xl) {
                    snprintf(nm, sizeof nm, "blocks.%d.attn.qk.bias", l);
                    plan_add(p, &m->qk_b[l], nm, 1, 2 * G * D, 0);
                    snprintf(nm, sizeof nm, "blocks.%d.attn.v.bias", l);
                    plan_add(p, &m->v_b[l], nm, 1, C, 0);
                }
            } else {
                P(qkv_w, "attn.qkv.weight", 2, 3 * C, C);
                if (!xl) { P(qkv_b, "attn.qkv.bias", 1, 3 * C, 0); }
            }
            if (xl) { P(r_w, "attn.r.weight", 2, C, C); }
            if (xl && !c->shared_uv) {
                P(u, "attn.u", 2, H, D);
                P(v, "attn.v", 2, H, D);
            }
            P(proj_w, "attn.proj.weight", 2, C, C);
            if (!xl) { P(proj_b, "attn.proj.bias", 1, C, 0); }
            if (lc_attn_layer_has_global(&m->layers[l])) {
                P(qkvg_w, "attn.global.qkv.weight", 2, 3 * C, C);
                if (!xl) { P(qkvg_b, "attn.global.qkv.bias", 1, 3 * C, 0); }
            }
            for (int i = 0; i < m->layers[l].n_groups; i++) {
                const lc_attn_group *g = &m->layers[l].group[i];
                size_t n = g->kind->param_floats ? g->kind->param_floats(g->opts, g->heads, (int)D, c->seq_len + c->extra_tokens) : 0;
                if (!n) continue;
                snprintf(nm, sizeof nm, "blocks.%d.attn.group%d.params", l, i);
                plan_add(p, &w->attn_params[i], nm, 1, (long)n, 0);
            }
        }
        P(ln2_w, "ln2.weight", 1, C, 0);
        P(ln2_b, "ln2.bias", 1, C, 0);
        P(fc1_w, "ffn.fc1.weight", 2, F, C);
        P(fc1_b, "ffn.fc1.bias", 1, F, 0);
        P(fc2_w, "ffn.fc2.weight", 2, C, F);
        P(fc2_b, "ffn.fc2.bias", 1, C, 0);
#undef P
    }
    if (xl && c->shared_uv) {
        plan_add(p, &m->shared_u, "u", 2, H, D);
        plan_add(p, &m->shared_v, "v", 2, H, D);
    }
    if (c->norm == LC_NORM_PRE) {
        plan_add(p, &m->lnf_w, "ln_f.weight", 1, C, 0);
        plan_add(p, &m->lnf_b, "ln_f.bias", 1, C, 0);
    }
    if (!c->tied) plan_add(p, &m->head, "lm_head.weight", 2, V, C);
}

/* Layers sharing an attention module point at their owner's weights (gradients follow by mirroring). */
static void alias_shared_attention(lc_model *m) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const int o = attn_owner(&m->cfg, l);
        if (o == l) continue;
        lc_block_weights *w = &m->blk[l];
        const lc_block_weights *src = &m->blk[o];
        w->ln1_w = src->ln1_w, w->ln1_b = src->ln1_b, w->qkv_w = src->qkv_w, w->qkv_b = src->qkv_b;
        w->r_w = src->r_w, w->u = src->u, w->v = src->v, w->proj_w = src->proj_w, w->proj_b = src->proj_b;
        w->qkvg_w = src->qkvg_w, w->qkvg_b = src->qkvg_b;
        memcpy(w->attn_params, src->attn_params, sizeof w->attn_params);
    }
}

/* Q/K tying: the owner layers' qkv_w/qkv_b (and gradients) become rows of the expanded copies. */
static lc_status build_qk_expansion(lc_model *m) {
    const lc_config *c = &m->cfg;
    if (!qk_groups(c)) return LC_OK;
    const size_t C = (size_t)c->d_model, per = 3 * C * C + 3 * C;
    m->qk_exp = lc_alloc_aligned(sizeof(float) * per * (size_t)c->n_layer);
    m->g_qk_exp = lc_alloc_aligned(sizeof(float) * per * (size_t)c->n_layer);
    if (!m->qk_exp || !m->g_qk_exp) return lc_fail(LC_ERR_NOMEM, "out of memory for tied Q/K projections");
    for (int l = 0; l < c->n_layer; l++) {
        const int o = attn_owner(c, l);
        float *w = m->qk_exp + per * (size_t)o, *g = m->g_qk_exp + per * (size_t)o;
        m->blk[l].qkv_w = w, m->gblk[l].qkv_w = g;
        m->blk[l].qkv_b = m->qk_b[o] ? w + 3 * C * C : NULL;
        m->gblk[l].qkv_b = m->qk_b[o] ? g + 3 * C * C : NULL;
    }
    return LC_OK;
}

/* Copy the tied parameters into the expanded projections: head h's query rows are query group
 * h / qk_share's rows (keys likewise); values are copied as they are. */
void lc_model_expand_shared(lc_model *m) {
    const lc_config *c = &m->cfg;
    const int G = qk_groups(c);
    if (!G) return;
    const size_t C = (size_t)c->d_model, D = C / (size_t)c->n_head, GD = (size_t)G * D;
    for (int l = 0; l < c->n_layer; l++) {
        if (attn_owner(c, l) != l) continue;
        float *w = m->blk[l].qkv_w, *b = m->blk[l].qkv_b;
        for (int h = 0; h < c->n_head; h++) {
            const size_t src = (size_t)(h / c->qk_share) * D;
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
}

/* Add the expanded projections' gradients into the tied parameters' gradients and clear them. */
void lc_model_fold_shared(lc_model *m) {
    const lc_config *c = &m->cfg;
    const int G = qk_groups(c);
    if (!G) return;
    const size_t C = (size_t)c->d_model, D = C / (size_t)c->n_head, GD = (size_t)G * D;
    for (int l = 0; l < c->n_layer; l++) {
        if (attn_owner(c, l) != l) continue;
        float *gw = m->gblk[l].qkv_w, *gb = m->gblk[l].qkv_b;
        float *gqk = m->grads + (m->qk_w[l] - m->params), *gv = m->grads + (m->v_w[l] - m->params);
        for (int h = 0; h < c->n_head; h++) {
            const size_t dst = (size_t)(h / c->qk_share) * D;
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
}

/* Gradient pointers mirror parameter pointers at the same offsets in the gradient allocation. */
static float *mirror(const lc_model *m, const float *param) {
    return param ? m->grads + (param - m->params) : NULL;
}

static void mirror_block(const lc_model *m, const lc_block_weights *w, lc_block_weights *g) {
    float *const *src = (float *const *)w;
    float **dst = (float **)g;
    for (size_t i = 0; i < sizeof *w / sizeof(float *); i++) dst[i] = mirror(m, src[i]);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* GPT-2 style: N(0, 0.02) for matrices, residual output projections scaled by 1/sqrt(2 L),
 * zero biases, unit LayerNorm gains. */
static void init_params(lc_model *m, uint64_t seed) {
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    float resid_scale = 1.0f / sqrtf(2.0f * (float)m->cfg.n_layer);
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        float *x = m->params + s->offset;
        int is_ln = strstr(s->name, "ln") != NULL && s->ndim == 1;
        if (is_ln && ends_with(s->name, ".weight")) {
            for (size_t j = 0; j < s->count; j++) x[j] = 1.0f;
        } else if (s->ndim == 1) {
            memset(x, 0, s->count * sizeof *x);
        } else {
            float std = 0.02f;
            if (ends_with(s->name, "attn.proj.weight") || ends_with(s->name, "ffn.fc2.weight")) std *= resid_scale;
            for (size_t j = 0; j < s->count; j++) x[j] = std * lc_rng_normal(&rng);
        }
    }
}

/* Kinds' own learned parameters start from the kind's initialisation; their non-learned state (one
 * table, saved in checkpoints) from state_init. Layers sharing a module share both. */
static lc_status build_kind_state(lc_model *m, uint64_t seed) {
    const lc_config *c = &m->cfg;
    const int D = c->d_model / c->n_head;
    char nm[LC_NAME_MAX];
    lc_table_init(&m->stab);
    lc_plan sp = {&m->stab, NULL, 0, 0, 0};
    for (int l = 0; l < c->n_layer; l++) {
        if (attn_owner(c, l) != l) continue;
        for (int i = 0; i < m->layers[l].n_groups; i++) {
            const lc_attn_group *g = &m->layers[l].group[i];
            if (g->kind->param_init && m->blk[l].attn_params[i])
                g->kind->param_init(m->blk[l].attn_params[i], g->opts, g->heads, D, c->seq_len + c->extra_tokens,
                                    lc_seed_mix(seed, 0x70617261ULL + (uint64_t)(l * LC_ATTN_MAX_GROUPS + i)));
            const size_t n = g->kind->state_floats ? g->kind->state_floats(g->opts, g->heads, D) : 0;
            if (!n) continue;
            snprintf(nm, sizeof nm, "blocks.%d.attn.group%d.state", l, i);
            plan_add(&sp, &m->group_state[l * LC_ATTN_MAX_GROUPS + i], nm, 1, (long)n, 0);
        }
    }
    if (sp.failed) { free(sp.fix); return LC_ERR_NOMEM; }
    if (m->stab.n > 0) {
        m->state = lc_table_alloc(&m->stab);
        if (!m->state) { free(sp.fix); return LC_ERR_NOMEM; }
        plan_patch(&sp, m->state);
    }
    free(sp.fix);
    for (int l = 0; l < c->n_layer; l++) {
        const int o = attn_owner(c, l);
        for (int i = 0; i < m->layers[l].n_groups; i++) {
            float **dst = &m->group_state[l * LC_ATTN_MAX_GROUPS + i];
            if (o != l) *dst = m->group_state[o * LC_ATTN_MAX_GROUPS + i];
            else if (*dst) {
                const lc_attn_group *g = &m->layers[l].group[i];
                g->kind->state_init(*dst, g->opts, g->heads, D,
                                    lc_seed_mix(seed, 0x73746174ULL + (uint64_t)(l * LC_ATTN_MAX_GROUPS + i)));
            }
        }
    }
    return LC_OK;
}

/* ---------------------------------------------------------------- activations */

/* The attention shape of every layer at the model's capacity. */
static lc_attn_shape layer_shape(const lc_model *m) {
    const lc_config *c = &m->cfg;
    const int xl = c->model == LC_MODEL_XL;
    lc_attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.B = m->max_B, sh.H = c->n_head, sh.T = m->cap_T + c->extra_tokens, sh.M = m->cap_M, sh.D = c->d_model / c->n_head;
    sh.causal = !is_mlm(c), sh.scale = 1;
    sh.relpos = xl;
    sh.window = xl && c->same_length ? c->mem_len : 0;
    sh.threads = m->threads;
    return sh;
}

static void plan_acts(lc_model *m, lc_plan *p) {
    const lc_config *c = &m->cfg;
    int xl = c->model == LC_MODEL_XL, pre = c->norm == LC_NORM_PRE;
    long T = m->cap_T + c->extra_tokens, Mc = m->cap_M, S = T + Mc, B = m->max_B; /* rows inside the model */
    long N_out = B * m->cap_T; /* scored rows (without the extra tokens) */
    long N = B * T, NS = B * S, C = c->d_model, F = c->d_ff, H = c->n_head;
    char nm[LC_NAME_MAX];
    /* Reversible layers keep two streams instead of every layer's input, and one set of activations
     * that every layer reuses (backward recomputes them); rev_store keeps them all (a reference). */
    const int rev = c->reversible, shared_acts = rev && !m->rev_store;
    const long K = c->ffn_chunk > 0 && c->ffn_chunk < N ? c->ffn_chunk : N; /* feed-forward rows at once */
    for (int l = 0; l <= c->n_layer; l++) {
        if (rev && l > 0 && l < c->n_layer) continue;
        snprintf(nm, sizeof nm, "res.%d", l);
        plan_add(p, &m->res[l], nm, 2, N, C);
    }
    if (rev) {
        plan_add(p, &m->rev_y1, "rev.y1", 2, N, C);
        plan_add(p, &m->rev_y2, "rev.y2", 2, N, C);
        plan_add(p, &m->rev_d1, "rev.d1", 2, N, C);
        plan_add(p, &m->rev_d2, "rev.d2", 2, N, C);
        for (int l = 0; m->rev_store && l <= c->n_layer; l++) {
            snprintf(nm, sizeof nm, "rev.x1.%d", l);
            plan_add(p, &m->rev_x1[l], nm, 2, N, C);
            snprintf(nm, sizeof nm, "rev.x2.%d", l);
            plan_add(p, &m->rev_x2[l], nm, 2, N, C);
        }
    }
    for (int l = 0; l < (shared_acts ? 1 : c->n_layer); l++) {
        lc_block_acts *a = &m->bact[l];
#define A(field, suffix, rows, cols)                                                                   \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                \
    plan_add(p, &a->field, nm, 2, rows, cols)
        if (Mc > 0) {
            A(cat, "cat", NS, C);
            snprintf(nm, sizeof nm, "blocks.%d.memory", l);
            plan_add(p, &m->mem[l], nm, 2, B * Mc, C);
            snprintf(nm, sizeof nm, "blocks.%d.kv_cache", l);
            plan_add(p, &m->kv[l], nm, 2, B * m->kv_rows, 2 * C);
        }
        A(norm1, "norm1", pre ? NS : N, C);
        A(mean1, "mean1", pre ? NS : N, 1);
        A(rstd1, "rstd1", pre ? NS : N, 1);
        A(qkv, "qkv", NS, 3 * C);
        if (xl) { A(r, "r", S, C); }
        A(att, "att", N, C);
        A(lse, "lse", B * H * T, 1);
        if (m->blk[l].qkvg_w) {
            A(qkvg, "qkvg", NS, 3 * C);
            A(lse_g, "lse_g", B * H * T, 1);
        }
        A(s1, "s1", N, C);
        if (pre) { A(norm2, "norm2", N, C); }
        else { A(s2, "s2", N, C); }
        A(mean2, "mean2", N, 1);
        A(rstd2, "rstd2", N, 1);
        A(fc1, "fc1", K, F);
        A(act, "act", K, F);
#undef A
    }
    if (pre) {
        plan_add(p, &m->lnf, "ln_f.out", 2, N, C);
        plan_add(p, &m->lnf_mean, "ln_f.mean", 2, N, 1);
        plan_add(p, &m->lnf_rstd, "ln_f.rstd", 2, N, 1);
    }
    if (xl) plan_add(p, &m->sinus, "sinusoids", 2, S, C);
    int any_groups = 0;
    for (int l = 0; l < c->n_layer; l++) any_groups |= m->layers[l].n_groups > 1;
    if (xl && any_groups) plan_add(p, &m->rel_scratch, "rel.group", 2, 2 * S, C);
    plan_add(p, &m->logits, "logits", 2, N_out, c->vocab);
    plan_add(p, &m->dlogits, "dlogits", 2, N_out, c->vocab);
    plan_add(p, &m->losses, "losses", 2, N_out, 1);
    plan_add(p, &m->lse, "logits.lse", 2, N_out, 1);
    if (c->extra_tokens) {
        plan_add(p, &m->head_in, "head.in", 2, N_out, C);
        plan_add(p, &m->d_head_in, "d.head.in", 2, N_out, C);
    }
    plan_add(p, &m->dres, "d.res", 2, N, C);
    plan_add(p, &m->tmp, "tmp", 2, N, C);
    lc_block_scratch *s = &m->scratch;
    plan_add(p, &s->d_a, "d.a", 2, N, C);
    plan_add(p, &s->d_b, "d.b", 2, N, C);
    plan_add(p, &s->d_tmp, "d.tmp", 2, N, C);
    plan_add(p, &s->d_att, "d.att", 2, N, C);
    plan_add(p, &s->d_norm, "d.norm", 2, NS, C);
    if (Mc > 0) plan_add(p, &s->d_cat, "d.cat", 2, NS, C);
    plan_add(p, &s->d_qkv, "d.qkv", 2, NS, 3 * C);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) any_global |= m->blk[l].qkvg_w != NULL;
    if (any_global) plan_add(p, &s->d_qkvg, "d.qkvg", 2, NS, 3 * C);
    plan_add(p, &s->d_fc1, "d.fc1", 2, K, F);
    plan_add(p, &s->d_act, "d.act", 2, K, F);
    if (xl) {
        plan_add(p, &s->d_r, "d.r", 2, S, C);
        plan_add(p, &s->d_u, "d.u", 1, C, 0);
        plan_add(p, &s->d_v, "d.v", 1, C, 0);
    }
}

/* The compute plan: the attention workspace for m->threads threads at the model's capacity (the largest
 * over the layers; they run one after another). */
static lc_status plan_compute(lc_model *m) {
    const lc_attn_shape sh = layer_shape(m);
    size_t work = 1;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const size_t need = lc_attn_layer_workspace(&m->layers[l], &sh);
        work = need > work ? need : work;
    }
    if (m->attn_work && work <= m->attn_work_floats) return LC_OK;
    float *p = lc_alloc_aligned(work * sizeof(float));
    if (!p) return lc_fail(LC_ERR_NOMEM, "out of memory for the attention workspace (%zu MB)", work * 4 >> 20);
    lc_free(m->attn_work);
    m->attn_work = p;
    m->attn_work_floats = work;
    return LC_OK;
}

lc_status lc_model_set_threads(lc_model *m, int threads) {
    const int avail = lc_threads_available();
    const int n = threads <= 0 || threads > avail ? avail : threads;
    const int old = m->threads;
    m->threads = n;
    lc_status st = plan_compute(m);
    if (st) m->threads = old;
    return st;
}

int lc_model_threads(const lc_model *m) { return m->threads; }

/* Every layer's head groups must accept the shapes the model will run (lengths, memory, positions). */
static lc_status check_attention(const lc_model *m) {
    const lc_config *c = &m->cfg;
    const lc_attn_shape sh = layer_shape(m);
    char err[512];
    for (int l = 0; l < c->n_layer; l++) {
        const lc_attn_layer *layer = &m->layers[l];
        if (lc_attn_layer_has_global(layer) && sh.M > 0)
            return lc_fail(LC_ERR_ARG, "attn layer %d: global tokens need a model without memory (--model vanilla)",
                           l);
        if (lc_attn_layer_check(layer, &sh, err, sizeof err))
            return lc_fail(LC_ERR_ARG, "attn layer %d: %s", l, err);
    }
    return LC_OK;
}

/* (Re)build the activation table for the model's capacity (max_B, cap_T, cap_M). */
static lc_status build_acts(lc_model *m) {
    lc_status st = check_attention(m);
    if (st) return st;
    lc_free(m->acts);
    m->acts = NULL;
    lc_table_free(&m->atab);
    lc_table_init(&m->atab);
    free(m->tokens);
    free(m->targets);
    free(m->global_pos);
    const int rows = m->cap_T + m->cfg.extra_tokens; /* per sequence inside the model */
    size_t N = (size_t)m->max_B * (size_t)rows;
    m->global_pos = malloc(sizeof(int) * (size_t)rows);
    if (!m->global_pos) return lc_fail(LC_ERR_NOMEM, "out of memory for %d positions", rows);
    for (int t = 0; t < rows; t++) m->global_pos[t] = t;
    m->tokens = calloc(N, sizeof *m->tokens);
    m->targets = calloc(N, sizeof *m->targets);
    if (!m->tokens || !m->targets) return lc_fail(LC_ERR_NOMEM, "out of memory for %zu token rows", N);
    memset(m->bact, 0, (size_t)m->cfg.n_layer * sizeof *m->bact);
    memset(m->mem, 0, (size_t)m->cfg.n_layer * sizeof *m->mem);
    memset(m->kv, 0, (size_t)m->cfg.n_layer * sizeof *m->kv);
    m->kv_rows = 2 * m->cap_M + m->cap_T; /* room to append for cap_M tokens between compactions */
    lc_plan ap = {&m->atab, NULL, 0, 0, 0};
    plan_acts(m, &ap);
    if (ap.failed) { free(ap.fix); return LC_ERR_NOMEM; }
    m->acts = lc_table_alloc(&m->atab);
    if (!m->acts) { free(ap.fix); return LC_ERR_NOMEM; }
    plan_patch(&ap, m->acts);
    free(ap.fix);
    lc_status st_plan = plan_compute(m);
    if (st_plan) return st_plan;
    if (m->cfg.reversible && !m->rev_store) /* one set of activations for every layer */
        for (int l = 1; l < m->cfg.n_layer; l++) m->bact[l] = m->bact[0];
    m->mem_rows = 0;
    m->kv_mode = 0;
    m->kv_start = 0;
    m->r_ready = 0;
    m->sinus_rows = -1;
    return LC_OK;
}

/* ---------------------------------------------------------------- lifetime */

lc_status lc_model_create(const lc_config *cfg, int max_batch, uint64_t seed, lc_model **out) {
    *out = NULL;
    lc_status st = lc_config_validate(cfg);
    if (st) return st;
    if (max_batch < 1) return lc_fail(LC_ERR_ARG, "batch must be at least 1, got %d", max_batch);
    lc_model *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *cfg;
    if (!m->cfg.attn[0]) strcpy(m->cfg.attn, "full"); /* the default, spelled out (checkpoints record it) */
    m->max_B = max_batch;
    m->seed = seed;
    { /* the process's thread count, capped at the cores it may use */
        const int avail = lc_threads_available(), want = lc_get_threads();
        m->threads = want > avail ? avail : want;
    }
    int L = cfg->n_layer;
    m->layers = calloc((size_t)L, sizeof *m->layers);
    m->qk_w = calloc((size_t)L, sizeof *m->qk_w);
    m->qk_b = calloc((size_t)L, sizeof *m->qk_b);
    m->v_w = calloc((size_t)L, sizeof *m->v_w);
    m->v_b = calloc((size_t)L, sizeof *m->v_b);
    m->group_state = calloc((size_t)L * LC_ATTN_MAX_GROUPS, sizeof *m->group_state);
    if (!m->layers || !m->qk_w || !m->qk_b || !m->v_w || !m->v_b || !m->group_state) goto nomem;
    {
        char err[512];
        if (lc_attn_spec_parse(cfg->attn, L, cfg->n_head, m->layers, err, sizeof err)) {
            lc_model_free(m);
            return lc_fail(LC_ERR_ARG, "%s", err);
        }
    }
    m->blk = calloc((size_t)L, sizeof *m->blk);
    m->gblk = calloc((size_t)L, sizeof *m->gblk);
    m->bact = calloc((size_t)L, sizeof *m->bact);
    m->res = calloc((size_t)L + 1, sizeof *m->res);
    m->mem = calloc((size_t)L, sizeof *m->mem);
    m->kv = calloc((size_t)L, sizeof *m->kv);
    m->rev_x1 = calloc((size_t)L + 1, sizeof *m->rev_x1);
    m->rev_x2 = calloc((size_t)L + 1, sizeof *m->rev_x2);
    if (!m->rev_x1 || !m->rev_x2) goto nomem;
    if (!m->blk || !m->gblk || !m->bact || !m->res || !m->mem || !m->kv) goto nomem;

    lc_plan pp = {&m->ptab, NULL, 0, 0, 0};
    lc_table_init(&m->ptab);
    plan_params(m, &pp);
    if (pp.failed) { free(pp.fix); lc_model_free(m); return LC_ERR_NOMEM; }
    m->params = lc_table_alloc(&m->ptab);
    m->grads = lc_table_alloc(&m->ptab);
    m->adam_m = lc_table_alloc(&m->ptab);
    m->adam_v = lc_table_alloc(&m->ptab);
    if (!m->params || !m->grads || !m->adam_m || !m->adam_v) { free(pp.fix); goto nomem; }
    plan_patch(&pp, m->params);
    free(pp.fix);
    alias_shared_attention(m);
    if (cfg->tied) m->head = m->wte;
    for (int l = 0; l < L && m->shared_u; l++) {
        m->blk[l].u = m->shared_u;
        m->blk[l].v = m->shared_v;
    }
    m->g_wte = mirror(m, m->wte);
    m->g_wpe = mirror(m, m->wpe);
    m->g_lnf_w = mirror(m, m->lnf_w);
    m->g_lnf_b = mirror(m, m->lnf_b);
    m->g_head = mirror(m, m->head);
    for (int l = 0; l < L; l++) mirror_block(m, &m->blk[l], &m->gblk[l]);
    if ((st = build_qk_expansion(m))) { lc_model_free(m); return st; }
    init_params(m, seed);
    if ((st = build_kind_state(m, seed))) { lc_model_free(m); return st; }

    m->cap_T = cfg->seq_len;
    m->cap_M = cfg->model == LC_MODEL_XL ? cfg->mem_len : 0;
    if ((st = build_acts(m))) { lc_model_free(m); return st; }
    *out = m;
    return LC_OK;
nomem:
    lc_model_free(m);
    return lc_fail(LC_ERR_NOMEM, "out of memory allocating the model");
}

void lc_model_free(lc_model *m) {
    if (!m) return;
    lc_free(m->params);
    lc_free(m->grads);
    lc_free(m->adam_m);
    lc_free(m->adam_v);
    lc_free(m->acts);
    lc_free(m->attn_work);
    lc_table_free(&m->ptab);
    lc_table_free(&m->atab);
    lc_table_free(&m->stab);
    lc_free(m->state);
    lc_free(m->qk_exp);
    lc_free(m->g_qk_exp);
    free(m->layers);
    free(m->qk_w);
    free(m->qk_b);
    free(m->v_w);
    free(m->v_b);
    free(m->group_state);
    free(m->global_pos);
    free(m->blk);
    free(m->gblk);
    free(m->bact);
    free(m->res);
    free(m->mem);
    free(m->kv);
    free(m->rev_x1);
    free(m->rev_x2);
    free(m->tokens);
    free(m->targets);
    free(m);
}

const lc_config *lc_model_config(const lc_model *m) { return &m->cfg; }

size_t lc_model_num_params(const lc_model *m) {
    size_t n = 0;
    for (int i = 0; i < m->ptab.n; i++) n += m->ptab.slots[i].count;
    return n;
}

size_t lc_model_param_bytes(const lc_model *m) { return 4 * m->ptab.total * sizeof(float); }
size_t lc_model_activation_bytes(const lc_model *m) { return (m->atab.total + m->attn_work_floats) * sizeof(float); }

void lc_model_zero_grad(lc_model *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_model_logits(const lc_model *m) { return m->logits; }
void lc_model_set_noise_key(lc_model *m, long key) { m->noise_key = key; }
long lc_model_step(const lc_model *m) { return m->step; }

uint64_t lc_model_step_seed(const lc_model *m, uint64_t what) {
    return lc_seed_mix(lc_seed_mix(m->seed, (uint64_t)m->noise_key), what);
}

lc_status lc_model_resize(lc_model *m, int max_batch, int seq_len, int mem_len) {
    const lc_config *c = &m->cfg;
    if (max_batch < 1) return lc_fail(LC_ERR_ARG, "batch must be at least 1, got %d", max_batch);
    int limit = c->model == LC_MODEL_XL ? 1 << 24 : c->seq_len;
    if (seq_len < 1 || seq_len > limit)
        return lc_fail(LC_ERR_ARG, "seg-len must be 1..%d for this model, got %d", limit, seq_len);
    if (mem_len < 0 || mem_len > 1 << 24) return lc_fail(LC_ERR_ARG, "mem-len must be 0..16777216, got %d", mem_len);
    if (c->model != LC_MODEL_XL && mem_len > 0) return lc_fail(LC_ERR_ARG, "mem-len needs an xl model");
    if (c->model == LC_MODEL_XL && c->same_length && mem_len < 1)
        return lc_fail(LC_ERR_ARG, "same-length needs mem-len >= 1");
    const int old_B = m->max_B, old_T = m->cap_T, old_M = m->cap_M, old_mem = m->cfg.mem_len;
    m->max_B = max_batch;
    m->cap_T = seq_len;
    m->cap_M = mem_len;
    if (c->model == LC_MODEL_XL) m->cfg.mem_len = mem_len;
    lc_status st = check_attention(m);
    if (st) { /* keep the model as it was */
        m->max_B = old_B, m->cap_T = old_T, m->cap_M = old_M, m->cfg.mem_len = old_mem;
        return st;
    }
    return build_acts(m);
}

lc_status lc_model_set_reversible_store(lc_model *m, int on) {
    if (!m->cfg.reversible) return lc_fail(LC_ERR_ARG, "not a reversible model");
    m->rev_store = on != 0;
    return build_acts(m);
}

lc_status lc_model_set_xl_options(lc_model *m, int clamp_len, int same_length) {
    if (m->cfg.model != LC_MODEL_XL) return lc_fail(LC_ERR_ARG, "clamp-len and same-length need an xl model");
    if (clamp_len < 0) return lc_fail(LC_ERR_ARG, "clamp-len must be >= 0, got %d", clamp_len);
    if (same_length && m->cfg.mem_len < 1) return lc_fail(LC_ERR_ARG, "same-length needs mem-len >= 1");
    int replan = (same_length != 0) != (m->cfg.same_length != 0);
    m->cfg.clamp_len = clamp_len;
    m->cfg.same_length = same_length != 0;
    m->sinus_rows = -1;
    m->r_ready = 0;
    return replan ? build_acts(m) : LC_OK; /* the attention workspace depends on the window */
}
