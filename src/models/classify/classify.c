/* The sequence classifier: configuration, the [CLS] rule on the attention spec, the tensor list (the
 * masked-LM encoder's names, then cls.*), the activation plan (one allocation for the largest batch), the
 * compute plan (the attention workspace for any packing within the limits) and lifetime. Passes:
 * models/classify/classify_forward.c; checkpoints: models/classify/checkpoint_classify.c, models/classify/classify_init.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "models/classify/classify.h"

void lc_classify_config_default(lc_classify_config *c) {
    memset(c, 0, sizeof *c);
    c->n_layer = 2, c->d_model = 128, c->n_head = 4, c->d_ff = 512;
    c->norm = LC_NORM_PRE, c->activation = LC_ACT_GELU;
    strcpy(c->attn, "full");
    c->max_len = LC_LRA_TEXT_MAX_LEN;
    c->tokens = LC_TOKENS_BYTES, c->vocab = 256;
    c->n_classes = 2;
    c->pool = LC_POOL_CLS;
}

lc_status lc_pool_parse(const char *name, lc_pool *out) {
    lc_clear_error();
    if (name && strcmp(name, "cls") == 0) *out = LC_POOL_CLS;
    else if (name && strcmp(name, "mean") == 0) *out = LC_POOL_MEAN;
    else if (name && strcmp(name, "max") == 0) *out = LC_POOL_MAX;
    else return lc_fail(LC_ERR_ARG, "--pool must be cls, mean or max, got '%s'", name ? name : "");
    return LC_OK;
}

const char *lc_pool_name(lc_pool p) { return p == LC_POOL_MEAN ? "mean" : p == LC_POOL_MAX ? "max" : "cls"; }

int lc_classify_cls_token(const lc_classify_config *c) { return c->tokens == LC_TOKENS_WORDS ? LC_WORD_CLS : 257; }
int lc_classify_emb_rows(const lc_classify_config *c) { return c->tokens == LC_TOKENS_WORDS ? c->vocab : 258; }

lc_config lc_classify_encoder_config(const lc_classify_config *h) {
    lc_hibert_stack s = {h->n_layer, h->d_model, h->n_head, h->d_ff, ""};
    memcpy(s.attn, h->attn, sizeof s.attn);
    lc_config c = lc_stack_config(&s, h->norm, h->activation, h->dropout, h->max_len + 1, LC_OBJECTIVE_MLM);
    c.attn_share = h->attn_share;
    c.precision = h->precision;
    return c;
}

/* [CLS] is position 0: a global token of every group whose kind takes global tokens. */
static void cls_global(lc_attn_group *g) {
    if (!(g->kind->caps & LC_ATTN_CAP_GLOBAL)) return;
    if (!g->global_listed) {
        if (g->n_global < 1) g->n_global = 1;
        return;
    }
    if (g->global_pos[0] == 0 || g->n_global >= LC_ATTN_MAX_GLOBAL) return; /* full list: checked by validate */
    memmove(g->global_pos + 1, g->global_pos, sizeof(int) * (size_t)g->n_global);
    g->global_pos[0] = 0;
    g->n_global++;
}

int lc_classify_layers(const lc_classify_config *h, lc_attn_layer *layers, char *err, size_t errlen) {
    const lc_config c = lc_classify_encoder_config(h);
    if (lc_attn_spec_build(c.attn, c.n_layer, c.n_head, c.d_model / c.n_head, c.seq_len, layers, err, errlen))
        return -1;
    for (int l = 0; l < c.n_layer; l++) {
        for (int i = 0; i < layers[l].n_groups; i++) {
            lc_attn_group *g = &layers[l].group[i];
            if (g->global_listed && g->global_pos[0] != 0 && g->n_global >= LC_ATTN_MAX_GLOBAL) {
                snprintf(err, errlen, "layer %d: %s lists %d global positions: no room for [CLS] at 0", l,
                         g->kind->name, g->n_global);
                return -1;
            }
            cls_global(g);
        }
        if (lc_attn_layer_check_globals(&layers[l], c.seq_len, err, errlen)) return -1;
    }
    return 0;
}

lc_status lc_classify_config_validate(const lc_classify_config *h) {
    lc_clear_error();
    lc_status st = lc_check_max_len(h->max_len, "max-len");
    if (st) return st;
    if (!memchr(h->attn, 0, sizeof h->attn)) return lc_fail(LC_ERR_ARG, "attn spec is not terminated");
    const lc_config c = lc_classify_encoder_config(h);
    if ((st = lc_config_validate(&c))) return st;
    if (h->tokens != LC_TOKENS_BYTES && h->tokens != LC_TOKENS_WORDS) return lc_fail(LC_ERR_ARG, "tokens must be bytes or words");
    if (h->tokens == LC_TOKENS_BYTES && h->vocab != 256)
        return lc_fail(LC_ERR_ARG, "a bytes classifier has vocab 256, got %d", h->vocab);
    if (h->tokens == LC_TOKENS_WORDS && (h->vocab <= LC_WORD_FIRST || h->vocab > LC_WORD_VOCAB_LIMIT))
        return lc_fail(LC_ERR_ARG, "a words classifier needs a vocabulary of %d..%d ids, got %d", LC_WORD_FIRST + 1,
                       LC_WORD_VOCAB_LIMIT, h->vocab);
    if (h->n_classes < 2 || h->n_classes > LC_MAX_LABELS)
        return lc_fail(LC_ERR_ARG, "classes must be 2..%d, got %d", LC_MAX_LABELS, h->n_classes);
    if (h->d_hidden < 0 || h->d_hidden > 65536) return lc_fail(LC_ERR_ARG, "head width must be 0..65536, got %d", h->d_hidden);
    if (h->pool != LC_POOL_CLS && h->pool != LC_POOL_MEAN && h->pool != LC_POOL_MAX)
        return lc_fail(LC_ERR_ARG, "pool must be cls, mean or max");
    if (h->objective != LC_CLASSIFY_LABELS && h->objective != LC_CLASSIFY_MLM)
        return lc_fail(LC_ERR_ARG, "objective must be labels or mlm");
    if (h->bracket_depth < 0 || h->bracket_depth > LC_BRACKET_DEPTH_LIMIT)
        return lc_fail(LC_ERR_ARG, "bracket-depth must be 0..%d, got %d", LC_BRACKET_DEPTH_LIMIT, h->bracket_depth);
    if (h->drop_parens != 0 && h->drop_parens != 1) return lc_fail(LC_ERR_ARG, "parens must be keep or drop");
    if (h->drop_parens && h->tokens != LC_TOKENS_WORDS) return lc_fail(LC_ERR_ARG, "--parens drop needs --tokens words");
    lc_attn_layer *layers = malloc(sizeof *layers * (size_t)c.n_layer);
    if (!layers) return lc_fail(LC_ERR_NOMEM, "out of memory parsing the attention spec");
    char err[512];
    const int rc = lc_classify_layers(h, layers, err, sizeof err);
    free(layers);
    return rc ? lc_fail(LC_ERR_ARG, "attn: %s", err) : LC_OK;
}

/* The list: wte, wpe, blocks, ln_f (the masked-LM encoder's names, so --init copies by name), then the
 * head cls.dense, cls.out, then the kinds' state. */
lc_status lc_classify_tensors(const lc_classify_config *h, const lc_attn_layer *layers, lc_tensor_list *out) {
    const lc_config c = lc_classify_encoder_config(h);
    const long C = c.d_model, Dh = h->d_hidden ? h->d_hidden : C, K = h->n_classes;
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, out);
    lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, lc_classify_emb_rows(h), C, "wte");
    lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, c.seq_len, C, "wpe");
    if (h->bracket_depth > 0) lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WDE, -1, 0, h->bracket_depth, C, "wde");
    lc_tensors_add_blocks(&b, &c, layers, "");
    if (c.norm == LC_NORM_PRE) {
        lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, C, 0, "ln_f.weight");
        lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, C, 0, "ln_f.bias");
    }
    lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_IN_W, -1, 0, Dh, C, "cls.dense.weight");
    lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_IN_B, -1, 0, Dh, 0, "cls.dense.bias");
    lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 0, K, Dh, "cls.out.weight");
    lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_HEAD_B, -1, 0, K, 0, "cls.out.bias");
    lc_tensors_add_kind_state(&b, &c, layers, "");
    return lc_tensor_list_finish(&b);
}

/* ---------------------------------------------------------------- parameters */

static float **site(void *user, const lc_tensor *t, int l, int grad) {
    lc_classifier *m = user;
    switch (t->site) {
    case LC_SITE_WTE: return grad ? &m->g_wte : &m->wte;
    case LC_SITE_WDE: return grad ? &m->g_wde : &m->wde;
    case LC_SITE_IN_W: return grad ? &m->g_w1 : &m->w1;
    case LC_SITE_IN_B: return grad ? &m->g_b1 : &m->b1;
    case LC_SITE_HEAD: return grad ? &m->g_w2 : &m->w2;
    case LC_SITE_HEAD_B: return grad ? &m->g_b2 : &m->b2;
    default: return lc_enc_stack_site(&m->st, t, l, grad);
    }
}

static lc_tensor_buffers buffers_of(lc_classifier *m) {
    return (lc_tensor_buffers){&m->ptab, &m->stab, &m->params, &m->grads, &m->adam_m, &m->adam_v, &m->state};
}

static lc_status build_params(lc_classifier *m) {
    const lc_enc_stack *st = &m->st;
    lc_status s = lc_classify_tensors(&m->cfg, st->layers, &m->tensors);
    if (s) return s;
    const lc_tensor_buffers buf = buffers_of(m);
    if ((s = lc_tensors_allocate(&m->tensors, &buf))) return s;
    lc_tensors_bind(&m->tensors, &buf, site, m);
    lc_rng rng;
    lc_rng_seed(&rng, m->seed);
    for (int i = 0; i < m->tensors.n; i++) { /* normal draws in list order; kinds from their own streams */
        const lc_tensor *t = &m->tensors.t[i];
        const lc_tensor_init_ctx ctx = {&rng, st->cfg.n_layer,
                                        t->init == LC_INIT_KIND ? &st->layers[t->layer].group[t->group] : NULL,
                                        st->cfg.d_model / st->cfg.n_head, st->cfg.seq_len, m->seed,
                                        (uint64_t)(t->layer * LC_ATTN_MAX_GROUPS + t->group)};
        lc_tensor_init_values(t, lc_tensor_values(&m->tensors, &buf, i), &ctx);
    }
    return LC_OK;
}

/* ---------------------------------------------------------------- activations and compute plan */

static lc_status plan_compute(void *owner) {
    lc_classifier *m = owner;
    return lc_workspace_ensure(&m->attn_work, &m->attn_work_floats, lc_enc_stack_workspace(&m->st, m->threads),
                               "the attention workspace");
}

static lc_status build_acts(lc_classifier *m) {
    lc_enc_stack *st = &m->st;
    const long B = m->max_batch, C = st->cfg.d_model, K = m->cfg.n_classes;
    const long Dh = m->cfg.d_hidden ? m->cfg.d_hidden : C;
    lc_act_plan p;
    lc_act_plan_init(&p);
    lc_act_plan_enc(&p, st, "enc.");
    float **head[] = {&m->pooled, &m->d_pooled, &m->hpre, &m->d_hpre, &m->hid, &m->d_hid, &m->logits, &m->d_logits,
                      &m->lse, &m->losses};
    const char *names[] = {"head.pooled", "d.head.pooled", "head.pre", "d.head.pre", "head.hidden", "d.head.hidden",
                           "head.logits", "d.head.logits", "head.lse", "head.losses"};
    const long cols[] = {C, C, Dh, Dh, Dh, Dh, K, K, 1, 1};
    for (int i = 0; i < 10; i++) lc_act_plan_add(&p, head[i], names[i], B, cols[i]);
    const size_t ints = 3 * (size_t)st->max_rows + 3 * (size_t)B + (size_t)st->max_len + (size_t)B * C;
    lc_status s = p.failed ? lc_fail(LC_ERR_NOMEM, "out of memory planning the activations")
                           : lc_check_fits(p.tab.total * sizeof(float) + ints * sizeof(int),
                                           "the activations (examples and rows of a batch)");
    if (!s && !(m->acts = lc_table_alloc(&p.tab))) s = lc_fail(LC_ERR_NOMEM, "out of memory for the activations");
    if (!s) {
        m->tok = malloc(sizeof(int) * (size_t)st->max_rows), m->pos = malloc(sizeof(int) * (size_t)st->max_rows);
        m->depth = calloc((size_t)st->max_rows, sizeof(int));
        m->order = malloc(sizeof(int) * (size_t)B), m->row0 = malloc(sizeof(int) * (size_t)B);
        m->labels = malloc(sizeof(int) * (size_t)B), m->global_pos = malloc(sizeof(int) * (size_t)st->max_len);
        m->pool_arg = malloc(sizeof(int) * (size_t)B * C);
        if (!m->tok || !m->pos || !m->depth || !m->order || !m->row0 || !m->labels || !m->global_pos || !m->pool_arg)
            s = lc_fail(LC_ERR_NOMEM, "out of memory for the batch's packing");
    }
    if (s) {
        lc_act_plan_discard(&p);
        return s;
    }
    lc_act_plan_bind(&p, m->acts);
    m->atab = p.tab;
    for (int t = 0; t < st->max_len; t++) m->global_pos[t] = t;
    return plan_compute(m);
}

/* ---------------------------------------------------------------- lifetime */

lc_status lc_classifier_create(const lc_classify_config *c, int max_batch, long max_rows, uint64_t seed,
                               lc_classifier **out) {
    *out = NULL;
    lc_status s = lc_classify_config_validate(c);
    if (s) return s;
    if (max_batch < 1 || max_batch > 1 << 20) return lc_fail(LC_ERR_ARG, "batch must be 1..1048576, got %d", max_batch);
    const long full = (long)max_batch * (c->max_len + 1);
    if (max_rows <= 0 || max_rows > full) max_rows = full;
    if (max_rows > 1L << 30) return lc_fail(LC_ERR_ARG, "a batch of %ld rows is too large", max_rows);
    lc_classifier *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the classifier");
    m->cfg = *c;
    if (!m->cfg.attn[0]) strcpy(m->cfg.attn, "full");
    m->max_batch = max_batch, m->seed = seed;
    m->threads = lc_threads_default(); /* its own count from now on (lc_threads_set_default) */
    lc_enc_stack *st = &m->st;
    const lc_config enc = lc_classify_encoder_config(c);
    s = lc_enc_stack_init(st, &enc, "encoder", c->max_len + 1, (int)max_rows, max_batch);
    st->block_stream = 1000, st->attn_stream = 0x636c617373696679ULL;
    char err[512];
    if (!s && lc_classify_layers(c, st->layers, err, sizeof err)) s = lc_fail(LC_ERR_ARG, "attn: %s", err);
    if (!s) s = build_params(m);
    if (!s) s = build_acts(m);
    if (s) {
        lc_classifier_free(m);
        return s;
    }
    *out = m;
    return LC_OK;
}

void lc_classifier_free(lc_classifier *m) {
    if (!m) return;
    const lc_tensor_buffers buf = buffers_of(m);
    lc_tensors_release(&m->tensors, &buf);
    lc_free(m->acts);
    lc_free(m->attn_work);
    lc_table_free(&m->atab);
    lc_enc_stack_free(&m->st);
    lc_classify_mlm_free(m);
    free(m->tok), free(m->pos), free(m->depth), free(m->order), free(m->row0), free(m->labels), free(m->global_pos);
    free(m->pool_arg);
    free(m);
}

const lc_classify_config *lc_classifier_config(const lc_classifier *m) { return &m->cfg; }

lc_status lc_classifier_set_precision(lc_classifier *m, lc_precision p) {
    lc_clear_error();
    lc_status st = lc_precision_check(p);
    if (st) return st;
    m->cfg.precision = m->st.cfg.precision = p;
    return LC_OK;
}
size_t lc_classifier_param_bytes(const lc_classifier *m) { return 4 * m->ptab.total * sizeof(float); }
size_t lc_classifier_activation_bytes(const lc_classifier *m) { return (m->atab.total + m->attn_work_floats) * sizeof(float); }
long lc_classifier_steps_done(const lc_classifier *m) { return m->step; }
void lc_classifier_zero_grad(lc_classifier *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_classifier_logits(const lc_classifier *m) { return m->logits; }

size_t lc_classifier_num_params(const lc_classifier *m) { return lc_slots_count(&m->ptab); }

lc_status lc_classifier_set_threads(lc_classifier *m, int threads) {
    return lc_replan_threads(&m->threads, threads, plan_compute, m);
}
