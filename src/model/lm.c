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

static void plan_params(lc_model *m, lc_plan *p) {
    const lc_config *c = &m->cfg;
    long C = c->d_model, F = c->d_ff, V = c->vocab;
    char nm[LC_NAME_MAX];
    plan_add(p, &m->wte, "wte", 2, V, C);
    plan_add(p, &m->wpe, "wpe", 2, c->seq_len, C);
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_weights *w = &m->blk[l];
#define P(field, suffix, nd, a, b)                                                                     \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                \
    plan_add(p, &w->field, nm, nd, a, b)
        P(ln1_w, "ln1.weight", 1, C, 0);
        P(ln1_b, "ln1.bias", 1, C, 0);
        P(qkv_w, "attn.qkv.weight", 2, 3 * C, C);
        P(qkv_b, "attn.qkv.bias", 1, 3 * C, 0);
        P(proj_w, "attn.proj.weight", 2, C, C);
        P(proj_b, "attn.proj.bias", 1, C, 0);
        P(ln2_w, "ln2.weight", 1, C, 0);
        P(ln2_b, "ln2.bias", 1, C, 0);
        P(fc1_w, "ffn.fc1.weight", 2, F, C);
        P(fc1_b, "ffn.fc1.bias", 1, F, 0);
        P(fc2_w, "ffn.fc2.weight", 2, C, F);
        P(fc2_b, "ffn.fc2.bias", 1, C, 0);
#undef P
    }
    if (c->norm == LC_NORM_PRE) {
        plan_add(p, &m->lnf_w, "ln_f.weight", 1, C, 0);
        plan_add(p, &m->lnf_b, "ln_f.bias", 1, C, 0);
    }
    if (!c->tied) plan_add(p, &m->head, "lm_head.weight", 2, V, C);
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

/* ---------------------------------------------------------------- activations */

static void plan_acts(lc_model *m, lc_plan *p) {
    const lc_config *c = &m->cfg;
    long N = (long)m->max_B * c->seq_len, C = c->d_model, F = c->d_ff, H = c->n_head;
    long BHT = (long)m->max_B * H * c->seq_len;
    char nm[LC_NAME_MAX];
    for (int l = 0; l <= c->n_layer; l++) {
        snprintf(nm, sizeof nm, "res.%d", l);
        plan_add(p, &m->res[l], nm, 2, N, C);
    }
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_acts *a = &m->bact[l];
#define A(field, suffix, rows, cols)                                                                   \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                \
    plan_add(p, &a->field, nm, 2, rows, cols)
        A(norm1, "norm1", N, C);
        A(mean1, "mean1", N, 1);
        A(rstd1, "rstd1", N, 1);
        A(qkv, "qkv", N, 3 * C);
        A(att, "att", N, C);
        A(lse, "lse", BHT, 1);
        A(s1, "s1", N, C);
        if (c->norm == LC_NORM_PRE) { A(norm2, "norm2", N, C); }
        else { A(s2, "s2", N, C); }
        A(mean2, "mean2", N, 1);
        A(rstd2, "rstd2", N, 1);
        A(fc1, "fc1", N, F);
        A(act, "act", N, F);
#undef A
    }
    if (c->norm == LC_NORM_PRE) {
        plan_add(p, &m->lnf, "ln_f.out", 2, N, C);
        plan_add(p, &m->lnf_mean, "ln_f.mean", 2, N, 1);
        plan_add(p, &m->lnf_rstd, "ln_f.rstd", 2, N, 1);
    }
    plan_add(p, &m->logits, "logits", 2, N, c->vocab);
    plan_add(p, &m->dlogits, "dlogits", 2, N, c->vocab);
    plan_add(p, &m->losses, "losses", 2, N, 1);
    plan_add(p, &m->lse, "logits.lse", 2, N, 1);
    plan_add(p, &m->dres, "d.res", 2, N, C);
    plan_add(p, &m->tmp, "tmp", 2, N, C);
    lc_block_scratch *s = &m->scratch;
    plan_add(p, &s->d_a, "d.a", 2, N, C);
    plan_add(p, &s->d_b, "d.b", 2, N, C);
    plan_add(p, &s->d_tmp, "d.tmp", 2, N, C);
    plan_add(p, &s->d_att, "d.att", 2, N, C);
    plan_add(p, &s->d_norm, "d.norm", 2, N, C);
    plan_add(p, &s->d_qkv, "d.qkv", 2, N, 3 * C);
    plan_add(p, &s->d_fc1, "d.fc1", 2, N, F);
    plan_add(p, &s->d_act, "d.act", 2, N, F);
    lc_attn_shape sh = {m->max_B, (int)H, c->seq_len, 0, (int)(C / H), 1, 1.0f};
    size_t work = m->attn->workspace_floats(&sh, NULL, lc_get_threads());
    plan_add(p, &m->attn_work, "attn.workspace", 1, work ? (long)work : 1, 0);
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
    m->max_B = max_batch;
    m->seed = seed;
    m->attn = &lc_attn_full;
    int L = cfg->n_layer;
    long N = (long)max_batch * cfg->seq_len;
    m->blk = calloc((size_t)L, sizeof *m->blk);
    m->gblk = calloc((size_t)L, sizeof *m->gblk);
    m->bact = calloc((size_t)L, sizeof *m->bact);
    m->res = calloc((size_t)L + 1, sizeof *m->res);
    m->tokens = calloc((size_t)N, sizeof *m->tokens);
    m->targets = calloc((size_t)N, sizeof *m->targets);
    if (!m->blk || !m->gblk || !m->bact || !m->res || !m->tokens || !m->targets) goto nomem;

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
    if (cfg->tied) m->head = m->wte;
    m->g_wte = mirror(m, m->wte);
    m->g_wpe = mirror(m, m->wpe);
    m->g_lnf_w = mirror(m, m->lnf_w);
    m->g_lnf_b = mirror(m, m->lnf_b);
    m->g_head = mirror(m, m->head);
    for (int l = 0; l < L; l++) mirror_block(m, &m->blk[l], &m->gblk[l]);
    init_params(m, seed);

    lc_plan ap = {&m->atab, NULL, 0, 0, 0};
    lc_table_init(&m->atab);
    plan_acts(m, &ap);
    if (ap.failed) { free(ap.fix); lc_model_free(m); return LC_ERR_NOMEM; }
    m->acts = lc_table_alloc(&m->atab);
    if (!m->acts) { free(ap.fix); goto nomem; }
    plan_patch(&ap, m->acts);
    free(ap.fix);
    *out = m;
    return LC_OK;
nomem:
    lc_model_free(m);
    return lc_fail(LC_ERR_NOMEM, "out of memory allocating the model (%ld rows)", N);
}

void lc_model_free(lc_model *m) {
    if (!m) return;
    lc_free(m->params);
    lc_free(m->grads);
    lc_free(m->adam_m);
    lc_free(m->adam_v);
    lc_free(m->acts);
    lc_table_free(&m->ptab);
    lc_table_free(&m->atab);
    free(m->blk);
    free(m->gblk);
    free(m->bact);
    free(m->res);
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
size_t lc_model_activation_bytes(const lc_model *m) { return m->atab.total * sizeof(float); }

void lc_model_zero_grad(lc_model *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_model_logits(const lc_model *m) { return m->logits; }
void lc_model_set_noise_key(lc_model *m, long key) { m->noise_key = key; }
long lc_model_step(const lc_model *m) { return m->step; }

uint64_t lc_model_step_seed(const lc_model *m, uint64_t what) {
    return lc_seed_mix(lc_seed_mix(m->seed, (uint64_t)m->noise_key), what);
}

/* ---------------------------------------------------------------- forward / backward */

enum { SEED_EMBED = 1, SEED_BLOCK = 1000 };

static lc_block_ctx block_ctx(const lc_model *m, int layer, int train) {
    const lc_config *c = &m->cfg;
    lc_block_ctx ctx = {m->B, m->T, c->d_model, c->n_head, c->d_ff, c->norm, c->activation, c->dropout, train,
                        lc_model_step_seed(m, SEED_BLOCK + (uint64_t)layer), m->attn, NULL, m->attn_work, m->tmp};
    return ctx;
}

/* The hidden state the output projection reads. */
static const float *final_hidden(const lc_model *m) {
    return m->cfg.norm == LC_NORM_PRE ? m->lnf : m->res[m->cfg.n_layer];
}

lc_status lc_model_forward(lc_model *m, const int *tokens, const int *targets, int B, int T, int train,
                           double *loss_sum, long *count) {
    const lc_config *c = &m->cfg;
    if (B < 1 || B > m->max_B) return lc_fail(LC_ERR_ARG, "batch %d outside 1..%d", B, m->max_B);
    if (T < 1 || T > c->seq_len) return lc_fail(LC_ERR_ARG, "segment length %d outside 1..%d", T, c->seq_len);
    long N = (long)B * T;
    int C = c->d_model, V = c->vocab;
    for (long i = 0; i < N; i++) {
        if (tokens[i] < 0 || tokens[i] >= V) return lc_fail(LC_ERR_ARG, "token %d outside 0..%d", tokens[i], V - 1);
        if (targets && targets[i] >= V) return lc_fail(LC_ERR_ARG, "target %d outside 0..%d", targets[i], V - 1);
    }
    m->B = B;
    m->T = T;
    m->have_targets = targets != NULL;
    memcpy(m->tokens, tokens, (size_t)N * sizeof *tokens);
    if (targets) memcpy(m->targets, targets, (size_t)N * sizeof *targets);

    lc_embedding_forward(m->res[0], tokens, m->wte, m->wpe, B, T, C);
    lc_dropout_forward(m->res[0], m->res[0], (size_t)N * C, train ? c->dropout : 0.0f,
                       lc_model_step_seed(m, SEED_EMBED));
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_ctx ctx = block_ctx(m, l, train);
        lc_block_forward(&ctx, &m->blk[l], &m->bact[l], m->res[l], m->res[l + 1]);
    }
    if (c->norm == LC_NORM_PRE)
        lc_layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->res[c->n_layer], m->lnf_w, m->lnf_b, (int)N, C,
                             LC_LN_EPS);
    lc_linear_forward(m->logits, final_hidden(m), m->head, NULL, (int)N, C, V);
    if (targets) {
        double sum = lc_xent_forward(m->losses, m->lse, m->logits, targets, (int)N, V);
        long n = 0;
        for (long i = 0; i < N; i++) n += targets[i] >= 0;
        if (loss_sum) *loss_sum = sum;
        if (count) *count = n;
    }
    m->cur_train = train;
    return LC_OK;
}

void lc_model_backward(lc_model *m, float loss_scale) {
    const lc_config *c = &m->cfg;
    int B = m->B, T = m->T, C = c->d_model, V = c->vocab, L = c->n_layer;
    int N = B * T;
    size_t NC = (size_t)N * C;
    lc_xent_backward(m->dlogits, m->logits, m->lse, m->targets, N, V, loss_scale);
    if (c->norm == LC_NORM_PRE) {
        float *dh = m->scratch.d_norm;
        memset(dh, 0, NC * sizeof *dh);
        lc_linear_backward(dh, m->g_head, NULL, m->dlogits, m->lnf, m->head, N, C, V);
        memset(m->dres, 0, NC * sizeof *m->dres);
        lc_layernorm_backward(m->dres, m->g_lnf_w, m->g_lnf_b, dh, m->res[L], m->lnf_w, m->lnf_mean, m->lnf_rstd, N,
                              C);
    } else {
        memset(m->dres, 0, NC * sizeof *m->dres);
        lc_linear_backward(m->dres, m->g_head, NULL, m->dlogits, m->res[L], m->head, N, C, V);
    }
    for (int l = L - 1; l >= 0; l--) {
        lc_block_ctx ctx = block_ctx(m, l, m->cur_train);
        lc_block_backward(&ctx, &m->blk[l], &m->gblk[l], &m->bact[l], m->res[l], m->dres, &m->scratch);
    }
    lc_dropout_backward(m->dres, m->dres, NC, m->cur_train ? c->dropout : 0.0f, lc_model_step_seed(m, SEED_EMBED));
    lc_embedding_backward(m->g_wte, m->g_wpe, m->dres, m->tokens, B, T, C);
}
