/* The hierarchical model (HIBERT): configuration, the activation plan (one allocation for the largest
 * batch of lc_hibert_limits), the compute plan (one attention workspace for both stacks) and lifetime.
 * Parameters: models/hibert/hibert_params.c; passes: models/hibert/hibert_forward.c, models/hibert/hibert_extract.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "models/hibert/hibert.h"

static void stack_default(lc_hibert_stack *s) {
    memset(s, 0, sizeof *s);
    s->n_layer = 2, s->d_model = 128, s->n_head = 4, s->d_ff = 512;
    strcpy(s->attn, "full");
}

void lc_hibert_config_default(lc_hibert_config *c) {
    memset(c, 0, sizeof *c);
    stack_default(&c->sent);
    stack_default(&c->doc);
    stack_default(&c->dec);
    c->dec.n_layer = 1;
    c->max_sent_len = 256;
    c->max_sents = 128;
    c->norm = LC_NORM_PRE;
    c->activation = LC_ACT_GELU;
    c->dropout = 0.0f;
}

static lc_config stack_config(const lc_hibert_config *h, const lc_hibert_stack *s, int max_len) {
    lc_config c = lc_stack_config(s, h->norm, h->activation, h->dropout, max_len, LC_OBJECTIVE_MLM);
    c.precision = h->precision;
    return c;
}

lc_status lc_hibert_config_validate(const lc_hibert_config *h) {
    if (h->max_sent_len < 1 || h->max_sent_len > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max-sent-len must be 1..1048576, got %d", h->max_sent_len);
    if (h->max_sents < 1 || h->max_sents > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max-sents must be 1..1048576, got %d", h->max_sents);
    if (h->sent_words < 0 || h->sent_words > 1 << 22)
        return lc_fail(LC_ERR_ARG, "sent-words must be 0..4194304, got %d", h->sent_words);
    if (h->head_features < 0 || h->head_features > LC_HIBERT_MAX_FEATURES)
        return lc_fail(LC_ERR_ARG, "head-features must be 0..%d, got %d", LC_HIBERT_MAX_FEATURES, h->head_features);
    lc_status st = lc_precision_check(h->precision);
    if (st) return st;
    const lc_hibert_stack *s[3] = {&h->sent, &h->doc, &h->dec};
    const char *what[3] = {"sentence encoder", "document encoder", "sentence decoder"};
    const int len[3] = {h->max_sent_len + 1, h->max_sents, h->max_sent_len + 1};
    for (int i = 0; i < 3; i++) {
        st = lc_stack_validate(s[i], what[i], h->norm, h->activation, h->dropout, len[i],
                               i == 2 ? LC_OBJECTIVE_CLM : LC_OBJECTIVE_MLM);
        if (st) return st;
    }
    return LC_OK;
}

/* ---------------------------------------------------------------- activation and compute plans */

/* The attention workspace for m->threads threads: the most any layer of the three stacks needs for any
 * packing within the limits; and the decoder's cross-attention workspace. */
static lc_status plan_compute(void *owner) {
    lc_hibert *m = owner;
    size_t work = m->lim.no_decoder ? 0 : lc_dec_stack_workspace(&m->dec.s, m->threads);
    for (int s = 0; s < LC_HIBERT_STACKS; s++) {
        const size_t need = lc_enc_stack_workspace(&m->st[s], m->threads);
        work = need > work ? need : work;
    }
    lc_status st = m->lim.no_decoder ? LC_OK : lc_dec_stack_plan_cross(&m->dec.s, m->cfg.max_sents, m->threads);
    if (st) return st;
    return lc_workspace_ensure(&m->w.attn_work, &m->w.attn_work_floats, work, "the attention workspace");
}

static lc_status build_acts(lc_hibert *m) {
    const long S = m->lim.max_sents, Cs = m->cfg.sent.d_model, Cd = m->cfg.doc.d_model, Cx = m->cfg.dec.d_model;
    const long sent_rows = m->st[LC_HIBERT_SENT].max_rows, E = m->st[LC_HIBERT_SENT].max_seqs; /* E >= S */
    lc_act_plan p;
    lc_act_plan_init(&p);
    lc_act_plan_enc(&p, &m->st[LC_HIBERT_SENT], "sent.");
    lc_act_plan_enc(&p, &m->st[LC_HIBERT_DOC], "doc.");
    if (!m->lim.no_decoder) { /* the selected sentences' rows and document vectors */
        const long D = m->dec.s.max_seqs;
        lc_act_plan_dec(&p, &m->dec.s, Cd, "dec.");
        lc_act_plan_add(&p, &m->dec.vin, "dec.vin", D, Cd);
        lc_act_plan_add(&p, &m->dec.dvin, "dec.d.vin", D, Cd);
        lc_act_plan_add(&p, &m->dec.vproj, "dec.vproj", D, Cx);
        lc_act_plan_add(&p, &m->dec.dvproj, "dec.d.vproj", D, Cx);
    }
    lc_act_plan_add(&p, &m->doc_in, "doc.in", S, Cs);
    lc_act_plan_add(&p, &m->d_doc_in, "d.doc.in", S, Cs);
    lc_act_plan_add(&p, &m->logit_rows, "head.logits", S, 1);
    lc_act_plan_add(&p, &m->dlogit_rows, "d.head.logits", S, 1);
    lc_act_plan_add(&p, &m->scores, "scores", S, 1);
    if (m->cfg.head_features) lc_act_plan_add(&p, &m->feats, "head.features.in", S, m->cfg.head_features);
    const int longest = m->cfg.max_sent_len + 1 > m->cfg.max_sents ? m->cfg.max_sent_len + 1 : m->cfg.max_sents;
    const size_t ints = (m->cfg.sent_words ? 3 : 2) * (size_t)sent_rows + 9 * (size_t)E +
                        3 * (size_t)m->lim.max_docs + (size_t)longest + 4 * (size_t)S;
    lc_status st = p.failed ? lc_fail(LC_ERR_NOMEM, "out of memory planning the activations")
                            : lc_check_fits(p.tab.total * sizeof(float) + ints * sizeof(int) + (size_t)S,
                                            "the activations (documents, sentences and bytes of a batch)");
    if (!st && !(m->w.acts = lc_table_alloc(&p.tab))) st = LC_ERR_NOMEM;
    if (!st) {
        m->tok = malloc(sizeof(int) * (size_t)sent_rows), m->pos = malloc(sizeof(int) * (size_t)sent_rows);
        m->s_row = malloc(sizeof(int) * (size_t)E), m->d_row = malloc(sizeof(int) * (size_t)S);
        m->d_pos = malloc(sizeof(int) * (size_t)S), m->keys = malloc(sizeof(long) * (size_t)(E > m->lim.max_docs ? E : m->lim.max_docs));
        m->w.global_pos = malloc(sizeof(int) * (size_t)longest);
        m->doc_first = malloc(sizeof(int) * (size_t)m->lim.max_docs);
        m->labels = malloc((size_t)S);
        int **seqs[] = {&m->doc_of, &m->source, &m->vec_row};
        for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) *seqs[i] = malloc(sizeof(int) * (size_t)S);
        m->enc_len = malloc(sizeof(int) * (size_t)E);
        if (m->cfg.sent_words) /* each word is at least one of the sentence rows */
            m->word_id = malloc(sizeof(int) * (size_t)sent_rows), m->word_start = malloc(sizeof(int) * (size_t)(E + 1));
        m->action = malloc((size_t)S), m->enc_mask = malloc((size_t)E);
        m->enc_sent = malloc(sizeof(*m->enc_sent) * (size_t)E);
        int bad = !m->action || !m->enc_mask || !m->enc_sent || !m->enc_len ||
                  (m->cfg.sent_words && (!m->word_id || !m->word_start));
        for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) bad |= !*seqs[i];
        if (bad || !m->tok || !m->pos || !m->s_row || !m->d_row || !m->d_pos || !m->keys || !m->w.global_pos ||
            !m->doc_first || !m->labels)
            st = lc_fail(LC_ERR_NOMEM, "out of memory for the batch's packing");
    }
    if (!st) {
        lc_act_plan_bind(&p, m->w.acts);
        m->w.atab = p.tab;
        for (int t = 0; t < longest; t++) m->w.global_pos[t] = t;
    } else {
        lc_act_plan_discard(&p);
    }
    return st ? st : plan_compute(m);
}

/* ---------------------------------------------------------------- lifetime */

static lc_status resolve_limits(const lc_hibert_config *c, const lc_hibert_limits *in, lc_hibert_limits *out) {
    if (!in) return lc_fail(LC_ERR_ARG, "hibert: limits are required");
    *out = *in;
    if (out->max_docs < 1 || out->max_docs > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max documents per batch must be 1..1048576, got %d", out->max_docs);
    if (out->max_sents < 0 || out->max_bytes < 0 || out->max_dec_rows < 0)
        return lc_fail(LC_ERR_ARG, "batch limits must be >= 0");
    if (!out->max_sents) {
        const long s = (long)out->max_docs * c->max_sents;
        out->max_sents = s > 1 << 24 ? 1 << 24 : (int)s;
    }
    if (!out->max_bytes) out->max_bytes = (long)out->max_sents * c->max_sent_len;
    if (out->max_sents > 1 << 24 || out->max_bytes > 1L << 30)
        return lc_fail(LC_ERR_ARG, "batch limits too large: %d sentences, %ld bytes", out->max_sents, out->max_bytes);
    /* the decoder regenerates selected original sentences: at most every sentence's bytes and EOS */
    const long all_rows = out->max_bytes + out->max_sents;
    if (!out->max_dec_rows || out->max_dec_rows > all_rows) out->max_dec_rows = all_rows;
    out->no_decoder = out->no_decoder != 0;
    return LC_OK;
}

/* The model's configuration, limits and stacks (layers parsed, nothing planned or allocated yet). */
static lc_status create_shell(const lc_hibert_config *cfg, const lc_hibert_limits *limits, uint64_t seed,
                              lc_hibert **out) {
    *out = NULL;
    lc_status st = lc_hibert_config_validate(cfg);
    lc_hibert_limits lim;
    if (st || (st = resolve_limits(cfg, limits, &lim))) return st;
    lc_hibert *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *cfg, m->lim = lim, m->seed = seed;
    m->threads = lc_threads_default(); /* its own count from now on (lc_threads_set_default) */
    const lc_hibert_stack *spec[LC_HIBERT_STACKS] = {&cfg->sent, &cfg->doc};
    static const char *what[LC_HIBERT_STACKS] = {"sentence encoder", "document encoder"};
    const int max_len[LC_HIBERT_STACKS] = {cfg->max_sent_len + 1, cfg->max_sents};
    /* a pre-training model's sentence encoder also reads the originals of the sentences the masking rule
     * changed (models/hibert/hibert_intruder.c): at most the decoder's rows and sequences more */
    const long dec_rows = lim.no_decoder ? 0 : lim.max_dec_rows;
    const int dec_seqs = dec_rows < lim.max_sents ? (int)dec_rows : lim.max_sents;
    const long max_rows[LC_HIBERT_STACKS] = {lim.max_bytes + lim.max_sents + dec_rows, lim.max_sents};
    const int max_seqs[LC_HIBERT_STACKS] = {lim.max_sents + dec_seqs, lim.max_docs};
    for (int s = 0; s < LC_HIBERT_STACKS && !st; s++) {
        lc_enc_stack *h = &m->st[s];
        h->block_stream = LC_HIBERT_BLOCK_STREAM * (uint64_t)(s + 1), h->attn_stream = LC_HIBERT_ATTN_STREAM + (uint64_t)s;
        const lc_config c = stack_config(cfg, spec[s], max_len[s]);
        st = lc_enc_stack_init(h, &c, what[s], max_len[s], (int)max_rows[s], max_seqs[s]);
    }
    if (!st) {
        lc_dec_stack *d = &m->dec.s;
        lc_config c = stack_config(cfg, &cfg->dec, cfg->max_sent_len + 1);
        c.objective = LC_OBJECTIVE_CLM;
        d->block_stream = LC_HIBERT_DEC_BLOCK_STREAM, d->attn_stream = LC_HIBERT_ATTN_STREAM + LC_HIBERT_DEC;
        d->embed_stream = LC_HIBERT_DEC_EMBED_STREAM;
        const int rows = lim.no_decoder ? 0 : (int)lim.max_dec_rows; /* each sequence at least one row */
        st = lc_dec_stack_init(d, &c, "sentence decoder", LC_HIBERT_EOS + 1, cfg->max_sent_len + 1, rows,
                               rows < lim.max_sents ? rows : lim.max_sents, lim.no_decoder ? 0 : lim.max_sents);
    }
    if (st) {
        lc_hibert_free(m);
        return st;
    }
    *out = m;
    return LC_OK;
}

lc_status lc_hibert_create(const lc_hibert_config *cfg, const lc_hibert_limits *limits, uint64_t seed,
                           lc_hibert **out) {
    lc_clear_error();
    lc_hibert *m;
    lc_status st = create_shell(cfg, limits, seed, &m);
    if (!st) st = lc_hibert_build_params(m);
    if (!st) st = build_acts(m);
    if (st) {
        lc_hibert_free(m);
        m = NULL;
    }
    *out = m;
    return st;
}

lc_status lc_hibert_tensor_list(const lc_hibert_config *cfg, lc_tensor_list *out) {
    memset(out, 0, sizeof *out);
    const lc_hibert_limits tiny = {1, 1, 1, 0, 1};
    lc_hibert *m;
    lc_status st = create_shell(cfg, &tiny, 0, &m);
    if (!st && !(st = lc_hibert_list_tensors(m))) {
        *out = m->tensors;
        memset(&m->tensors, 0, sizeof m->tensors);
    }
    lc_hibert_free(m);
    return st;
}

void lc_hibert_free(lc_hibert *m) {
    if (!m) return;
    lc_hibert_free_params(m);
    lc_pass_work_free(&m->w);
    for (int s = 0; s < LC_HIBERT_STACKS; s++) lc_enc_stack_free(&m->st[s]);
    free(m->tok), free(m->pos), free(m->s_row), free(m->d_row), free(m->d_pos), free(m->keys);
    free(m->labels), free(m->doc_first), free(m->doc_of);
    lc_dec_stack_free(&m->dec.s);
    free(m->action), free(m->enc_mask), free(m->enc_sent), free(m->source), free(m->enc_len), free(m->vec_row);
    free(m->word_id), free(m->word_start);
    free(m);
}

const lc_hibert_config *lc_hibert_get_config(const lc_hibert *m) { return &m->cfg; }

lc_status lc_hibert_set_precision(lc_hibert *m, lc_precision p) {
    lc_clear_error();
    lc_status st = lc_precision_check(p);
    if (st) return st;
    m->cfg.precision = m->st[LC_HIBERT_SENT].cfg.precision = m->st[LC_HIBERT_DOC].cfg.precision = p;
    m->dec.s.cfg.precision = p;
    return LC_OK;
}
long lc_hibert_steps_done(const lc_hibert *m) { return m->step; }
size_t lc_hibert_param_bytes(const lc_hibert *m) { return 4 * m->ptab.total * sizeof(float); }
size_t lc_hibert_activation_bytes(const lc_hibert *m) { return (m->w.atab.total + m->w.attn_work_floats) * sizeof(float); }
void lc_hibert_zero_grad(lc_hibert *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_hibert_scores(const lc_hibert *m) { return m->scores; }

size_t lc_hibert_num_params(const lc_hibert *m) { return lc_slots_count(&m->ptab); }

lc_status lc_hibert_set_threads(lc_hibert *m, int threads) {
    return lc_replan_threads(&m->threads, threads, plan_compute, m);
}
