/* The hierarchical model (HIBERT): configuration, the activation plan (one allocation for the largest
 * batch of lc_hibert_limits), the compute plan (one attention workspace for both stacks) and lifetime.
 * Parameters: model/hier_params.c; passes: model/hier_forward.c, model/hier_extract.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "model/hier.h"

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

/* A stack's shape as a vanilla bidirectional config over sequences of up to max_len rows. */
static lc_config stack_config(const lc_hibert_config *h, const lc_hibert_stack *s, int max_len) {
    lc_config c;
    lc_config_default(&c);
    c.vocab = 256, c.model = LC_MODEL_VANILLA, c.objective = LC_OBJECTIVE_MLM, c.tied = 1;
    c.n_layer = s->n_layer, c.d_model = s->d_model, c.n_head = s->n_head, c.d_ff = s->d_ff;
    c.seq_len = max_len, c.norm = h->norm, c.activation = h->activation, c.dropout = h->dropout;
    c.mem_len = 0, c.qk_share = 0, c.attn_share = 0, c.reversible = 0, c.ffn_chunk = 0, c.extra_tokens = 0;
    memcpy(c.attn, s->attn, sizeof c.attn);
    if (!memchr(c.attn, 0, sizeof c.attn)) c.attn[0] = 0; /* refused by the caller's check first */
    if (!c.attn[0]) strcpy(c.attn, "full");
    return c;
}

lc_status lc_hibert_config_validate(const lc_hibert_config *h) {
    if (h->max_sent_len < 1 || h->max_sent_len > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max-sent-len must be 1..1048576, got %d", h->max_sent_len);
    if (h->max_sents < 1 || h->max_sents > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max-sents must be 1..1048576, got %d", h->max_sents);
    const lc_hibert_stack *s[3] = {&h->sent, &h->doc, &h->dec};
    const char *what[3] = {"sentence encoder", "document encoder", "sentence decoder"};
    const int len[3] = {h->max_sent_len + 1, h->max_sents, h->max_sent_len + 1};
    for (int i = 0; i < 3; i++) {
        if (!memchr(s[i]->attn, 0, sizeof s[i]->attn)) return lc_fail(LC_ERR_ARG, "%s: attn spec is not terminated", what[i]);
        lc_config c = stack_config(h, s[i], len[i]);
        if (i == 2) c.objective = LC_OBJECTIVE_CLM;
        if (lc_config_validate(&c)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", lc_last_error());
            return lc_fail(LC_ERR_ARG, "%s: %s", what[i], msg);
        }
    }
    return LC_OK;
}

/* ---------------------------------------------------------------- activation plan */

typedef struct {
    float **dst;
    int slot;
} fixup;

typedef struct {
    lc_table tab;
    fixup *fix;
    int n, cap, failed;
} plan;

static void plan_add(plan *p, float **dst, const char *name, long rows, long cols) {
    const long shape[2] = {rows > 0 ? rows : 1, cols};
    if (p->failed) return;
    const int slot = lc_table_add(&p->tab, name, 2, shape);
    if (slot < 0) { p->failed = 1; return; }
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 128;
        fixup *f = realloc(p->fix, (size_t)p->cap * sizeof *f);
        if (!f) { p->failed = 1; return; }
        p->fix = f;
    }
    p->fix[p->n++] = (fixup){dst, slot};
}

/* One stack's saved activations and scratch for st->max_rows rows. */
static void plan_stack(plan *p, lc_hier_stack *st, const char *pre) {
    const lc_config *c = &st->cfg;
    const long N = st->max_rows, C = c->d_model, F = c->d_ff, H = c->n_head;
    const int ln_pre = c->norm == LC_NORM_PRE;
    char nm[LC_NAME_MAX];
#define P(dst, rows, cols, ...) (snprintf(nm, sizeof nm, __VA_ARGS__), plan_add(p, dst, nm, rows, cols))
    for (int l = 0; l <= c->n_layer; l++) P(&st->res[l], N, C, "%sres.%d", pre, l);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_acts *a = &st->bact[l];
        P(&a->norm1, N, C, "%sblocks.%d.norm1", pre, l);
        P(&a->mean1, N, 1, "%sblocks.%d.mean1", pre, l);
        P(&a->rstd1, N, 1, "%sblocks.%d.rstd1", pre, l);
        P(&a->qkv, N, 3 * C, "%sblocks.%d.qkv", pre, l);
        P(&a->att, N, C, "%sblocks.%d.att", pre, l);
        P(&a->lse, N * H, 1, "%sblocks.%d.lse", pre, l);
        if (st->blk[l].qkvg_w) {
            any_global = 1;
            P(&a->qkvg, N, 3 * C, "%sblocks.%d.qkvg", pre, l);
            P(&a->lse_g, N * H, 1, "%sblocks.%d.lse_g", pre, l);
        }
        P(&a->s1, N, C, "%sblocks.%d.s1", pre, l);
        if (ln_pre) P(&a->norm2, N, C, "%sblocks.%d.norm2", pre, l);
        else P(&a->s2, N, C, "%sblocks.%d.s2", pre, l);
        P(&a->mean2, N, 1, "%sblocks.%d.mean2", pre, l);
        P(&a->rstd2, N, 1, "%sblocks.%d.rstd2", pre, l);
        P(&a->fc1, N, F, "%sblocks.%d.fc1", pre, l);
        P(&a->act, N, F, "%sblocks.%d.act", pre, l);
    }
    if (ln_pre) {
        P(&st->lnf, N, C, "%sln_f.out", pre);
        P(&st->lnf_mean, N, 1, "%sln_f.mean", pre);
        P(&st->lnf_rstd, N, 1, "%sln_f.rstd", pre);
    }
    P(&st->dres, N, C, "%sd.res", pre);
    P(&st->dh, N, C, "%sd.h", pre);
    P(&st->tmp, N, C, "%stmp", pre);
    lc_block_scratch *s = &st->scratch;
    P(&s->d_a, N, C, "%sd.a", pre);
    P(&s->d_b, N, C, "%sd.b", pre);
    P(&s->d_tmp, N, C, "%sd.tmp", pre);
    P(&s->d_att, N, C, "%sd.att", pre);
    P(&s->d_norm, N, C, "%sd.norm", pre);
    P(&s->d_qkv, N, 3 * C, "%sd.qkv", pre);
    if (any_global) P(&s->d_qkvg, N, 3 * C, "%sd.qkvg", pre);
    P(&s->d_fc1, N, F, "%sd.fc1", pre);
    P(&s->d_act, N, F, "%sd.act", pre);
#undef P
}

/* The decoder's saved activations, scratch and packing for d->max_rows rows, d->max_seqs sequences
 * reading N_enc encoder rows of width Cd. */
static void plan_dec(plan *p, lc_hier_dec *d, long N_enc, long Cd) {
    const lc_config *c = &d->cfg;
    const long N = d->max_rows, C = c->d_model, F = c->d_ff, H = c->n_head, S = d->max_seqs;
    char nm[LC_NAME_MAX];
#define P(dst, rows, cols, ...) (snprintf(nm, sizeof nm, __VA_ARGS__), plan_add(p, dst, nm, rows, cols))
    for (int l = 0; l <= c->n_layer; l++) P(&d->res[l], N, C, "dec.res.%d", l);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) {
        lc_decoder_acts *a = &d->dact[l];
        P(&a->self.norm1, N, C, "dec.blocks.%d.norm1", l);
        P(&a->self.mean1, N, 1, "dec.blocks.%d.mean1", l);
        P(&a->self.rstd1, N, 1, "dec.blocks.%d.rstd1", l);
        P(&a->self.qkv, N, 3 * C, "dec.blocks.%d.qkv", l);
        P(&a->self.att, N, C, "dec.blocks.%d.att", l);
        P(&a->self.lse, N * H, 1, "dec.blocks.%d.lse", l);
        if (d->blk[l].self.qkvg_w) {
            any_global = 1;
            P(&a->self.qkvg, N, 3 * C, "dec.blocks.%d.qkvg", l);
            P(&a->self.lse_g, N * H, 1, "dec.blocks.%d.lse_g", l);
        }
        P(&a->self.s1, N, C, "dec.blocks.%d.s1", l);
        P(&a->self.norm2, N, C, "dec.blocks.%d.norm2", l);
        P(&a->self.s2, N, C, "dec.blocks.%d.s2", l);
        P(&a->self.mean2, N, 1, "dec.blocks.%d.mean2", l);
        P(&a->self.rstd2, N, 1, "dec.blocks.%d.rstd2", l);
        P(&a->self.fc1, N, F, "dec.blocks.%d.fc1", l);
        P(&a->self.act, N, F, "dec.blocks.%d.act", l);
        P(&a->normc, N, C, "dec.blocks.%d.normc", l);
        P(&a->meanc, N, 1, "dec.blocks.%d.meanc", l);
        P(&a->rstdc, N, 1, "dec.blocks.%d.rstdc", l);
        P(&a->cq, N, C, "dec.blocks.%d.cq", l);
        P(&a->ckv, N_enc, 2 * C, "dec.blocks.%d.ckv", l);
        P(&a->catt, N, C, "dec.blocks.%d.catt", l);
        P(&a->clse, N * H, 1, "dec.blocks.%d.clse", l);
        P(&a->sc, N, C, "dec.blocks.%d.sc", l);
    }
    P(&d->lnf, N, C, "dec.ln_f.out");
    P(&d->lnf_mean, N, 1, "dec.ln_f.mean");
    P(&d->lnf_rstd, N, 1, "dec.ln_f.rstd");
    P(&d->dres, N, C, "dec.d.res");
    P(&d->dh, N, C, "dec.d.h");
    P(&d->tmp, N, C, "dec.tmp");
    P(&d->logits, N, 257, "dec.logits");
    P(&d->vin, S, Cd, "dec.vin");
    P(&d->dvin, S, Cd, "dec.d.vin");
    P(&d->vproj, S, C, "dec.vproj");
    P(&d->dvproj, S, C, "dec.d.vproj");
    P(&d->d_enc, N_enc, Cd, "dec.d.enc");
    lc_block_scratch *s = &d->scratch.self;
    P(&s->d_a, N, C, "dec.d.a");
    P(&s->d_b, N, C, "dec.d.b");
    P(&s->d_tmp, N, C, "dec.d.tmp");
    P(&s->d_att, N, C, "dec.d.att");
    P(&s->d_norm, N, C, "dec.d.norm");
    P(&s->d_qkv, N, 3 * C, "dec.d.qkv");
    if (any_global) P(&s->d_qkvg, N, 3 * C, "dec.d.qkvg");
    P(&s->d_fc1, N, F, "dec.d.fc1");
    P(&s->d_act, N, F, "dec.d.act");
    P(&d->scratch.d_cq, N, C, "dec.d.cq");
    P(&d->scratch.d_ckv, N_enc, 2 * C, "dec.d.ckv");
#undef P
}

/* A block context of stack st's layer l for the workspace plan (shape fields only). */
static lc_block_ctx plan_ctx(const lc_hibert *m, const lc_hier_stack *st, int l) {
    lc_block_ctx c;
    memset(&c, 0, sizeof c);
    c.B = 1, c.T = st->max_rows, c.C = st->cfg.d_model, c.H = st->cfg.n_head, c.F = st->cfg.d_ff;
    c.layer = &st->layers[l], c.causal = 0, c.threads = m->threads;
    return c;
}

/* The attention workspace for m->threads threads: the most any layer of either stack needs for any
 * packing within the limits. */
static lc_status plan_compute(lc_hibert *m) {
    size_t work = 1;
    for (int s = 0; s < LC_HIER_STACKS; s++)
        for (int l = 0; l < m->st[s].cfg.n_layer; l++) {
            const lc_block_ctx c = plan_ctx(m, &m->st[s], l);
            const size_t need = lc_block_packed_workspace(&c, m->st[s].max_rows, m->st[s].max_len);
            work = need > work ? need : work;
        }
    const lc_hier_dec *d = &m->dec;
    for (int l = 0; l < d->cfg.n_layer; l++) {
        lc_block_ctx c;
        memset(&c, 0, sizeof c);
        c.B = 1, c.T = d->max_rows, c.C = d->cfg.d_model, c.H = d->cfg.n_head, c.F = d->cfg.d_ff;
        c.layer = &d->layers[l], c.causal = 1, c.threads = m->threads;
        const size_t need = lc_block_packed_workspace(&c, d->max_rows, d->max_len);
        work = need > work ? need : work;
    }
    const size_t cross = lc_decoder_cross_workspace(m->cfg.max_sents, m->threads);
    if (!m->dec.cross_work || cross > m->dec.cross_work_floats) {
        lc_status st = lc_check_fits(cross * sizeof(float), "the cross-attention workspace");
        if (st) return st;
        float *p = lc_alloc_aligned(cross * sizeof(float));
        if (!p) return lc_fail(LC_ERR_NOMEM, "out of memory for the cross-attention workspace");
        lc_free(m->dec.cross_work);
        m->dec.cross_work = p, m->dec.cross_work_floats = cross;
    }
    if (m->attn_work && work <= m->attn_work_floats) return LC_OK;
    lc_status st = lc_check_fits(work * sizeof(float), "the attention workspace");
    if (st) return st;
    float *p = lc_alloc_aligned(work * sizeof(float));
    if (!p) return lc_fail(LC_ERR_NOMEM, "out of memory for the attention workspace (%zu MB)", work * 4 >> 20);
    lc_free(m->attn_work);
    m->attn_work = p, m->attn_work_floats = work;
    return LC_OK;
}

static lc_status build_acts(lc_hibert *m) {
    const long S = m->lim.max_sents, Cs = m->cfg.sent.d_model;
    const long sent_rows = m->st[LC_HIER_SENT].max_rows;
    plan p;
    memset(&p, 0, sizeof p);
    lc_table_init(&p.tab);
    plan_stack(&p, &m->st[LC_HIER_SENT], "sent.");
    plan_stack(&p, &m->st[LC_HIER_DOC], "doc.");
    plan_dec(&p, &m->dec, S, m->cfg.doc.d_model);
    plan_add(&p, &m->doc_in, "doc.in", S, Cs);
    plan_add(&p, &m->d_doc_in, "d.doc.in", S, Cs);
    plan_add(&p, &m->logit_rows, "head.logits", S, 1);
    plan_add(&p, &m->dlogit_rows, "d.head.logits", S, 1);
    plan_add(&p, &m->scores, "scores", S, 1);
    const int longest = m->cfg.max_sent_len + 1 > m->cfg.max_sents ? m->cfg.max_sent_len + 1 : m->cfg.max_sents;
    const size_t dec_rows = (size_t)m->dec.max_rows;
    const size_t ints = 2 * (size_t)sent_rows + 6 * (size_t)S + 3 * (size_t)m->lim.max_docs + (size_t)longest +
                        4 * dec_rows + 13 * (size_t)S;
    lc_status st = p.failed ? lc_fail(LC_ERR_NOMEM, "out of memory planning the activations")
                            : lc_check_fits(p.tab.total * sizeof(float) + ints * sizeof(int) + (size_t)S,
                                            "the activations (documents, sentences and bytes of a batch)");
    if (!st && !(m->acts = lc_table_alloc(&p.tab))) st = LC_ERR_NOMEM;
    if (!st) {
        m->tok = malloc(sizeof(int) * (size_t)sent_rows), m->pos = malloc(sizeof(int) * (size_t)sent_rows);
        m->s_row = malloc(sizeof(int) * (size_t)S), m->d_row = malloc(sizeof(int) * (size_t)S);
        m->d_pos = malloc(sizeof(int) * (size_t)S), m->keys = malloc(sizeof(long) * (size_t)(S > m->lim.max_docs ? S : m->lim.max_docs));
        m->st[0].seq_len = malloc(sizeof(int) * (size_t)S);
        m->st[1].seq_len = malloc(sizeof(int) * (size_t)m->lim.max_docs);
        m->global_pos = malloc(sizeof(int) * (size_t)longest);
        m->doc_first = malloc(sizeof(int) * (size_t)m->lim.max_docs);
        m->labels = malloc((size_t)S);
        lc_hier_dec *d = &m->dec;
        int **ints_dec[] = {&d->tok, &d->pos, &d->target, &d->row_seq};
        for (size_t i = 0; i < sizeof ints_dec / sizeof *ints_dec; i++) *ints_dec[i] = malloc(sizeof(int) * dec_rows);
        int **seqs[] = {&d->sent, &d->doc_of, &d->q_start, &d->q_len, &d->kv_start, &d->kv_len, &d->seq_len, &m->source, &m->enc_len};
        for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) *seqs[i] = malloc(sizeof(int) * (size_t)S);
        m->action = malloc((size_t)S), m->enc_mask = malloc((size_t)S);
        m->enc_sent = malloc(sizeof(*m->enc_sent) * (size_t)S);
        int bad = !d->tok || !d->pos || !d->target || !d->row_seq || !m->action || !m->enc_mask || !m->enc_sent;
        for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) bad |= !*seqs[i];
        if (bad) st = lc_fail(LC_ERR_NOMEM, "out of memory for the batch's packing");
        if (!st && (!m->tok || !m->pos || !m->s_row || !m->d_row || !m->d_pos || !m->keys || !m->st[0].seq_len ||
            !m->st[1].seq_len || !m->global_pos || !m->doc_first || !m->labels))
            st = lc_fail(LC_ERR_NOMEM, "out of memory for the batch's packing");
    }
    if (!st) {
        m->atab = p.tab;
        for (int i = 0; i < p.n; i++)
            if (p.fix[i].dst) *p.fix[i].dst = m->acts + m->atab.slots[p.fix[i].slot].offset;
        for (int t = 0; t < longest; t++) m->global_pos[t] = t;
    } else {
        lc_table_free(&p.tab);
    }
    free(p.fix);
    return st ? st : plan_compute(m);
}

/* ---------------------------------------------------------------- lifetime */

static lc_status resolve_limits(const lc_hibert_config *c, const lc_hibert_limits *in, lc_hibert_limits *out) {
    if (!in) return lc_fail(LC_ERR_ARG, "hibert: limits are required");
    *out = *in;
    if (out->max_docs < 1 || out->max_docs > 1 << 20)
        return lc_fail(LC_ERR_ARG, "max documents per batch must be 1..1048576, got %d", out->max_docs);
    if (out->max_sents < 0 || out->max_bytes < 0) return lc_fail(LC_ERR_ARG, "batch limits must be >= 0");
    if (!out->max_sents) {
        const long s = (long)out->max_docs * c->max_sents;
        out->max_sents = s > 1 << 24 ? 1 << 24 : (int)s;
    }
    if (!out->max_bytes) out->max_bytes = (long)out->max_sents * c->max_sent_len;
    if (out->max_sents > 1 << 24 || out->max_bytes > 1L << 30)
        return lc_fail(LC_ERR_ARG, "batch limits too large: %d sentences, %ld bytes", out->max_sents, out->max_bytes);
    return LC_OK;
}

lc_status lc_hibert_create(const lc_hibert_config *cfg, const lc_hibert_limits *limits, uint64_t seed,
                           lc_hibert **out) {
    lc_clear_error();
    *out = NULL;
    lc_status st = lc_hibert_config_validate(cfg);
    lc_hibert_limits lim;
    if (st || (st = resolve_limits(cfg, limits, &lim))) return st;
    lc_hibert *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *cfg, m->lim = lim, m->seed = seed;
    {
        const int avail = lc_threads_available(), want = lc_get_threads();
        m->threads = want > avail ? avail : want;
    }
    const lc_hibert_stack *spec[LC_HIER_STACKS] = {&cfg->sent, &cfg->doc};
    const int max_len[LC_HIER_STACKS] = {cfg->max_sent_len + 1, cfg->max_sents};
    const long max_rows[LC_HIER_STACKS] = {lim.max_bytes + lim.max_sents, lim.max_sents};
    for (int s = 0; s < LC_HIER_STACKS && !st; s++) {
        lc_hier_stack *h = &m->st[s];
        h->cfg = stack_config(cfg, spec[s], max_len[s]);
        h->max_len = max_len[s];
        h->max_rows = (int)max_rows[s];
        const int L = h->cfg.n_layer;
        h->layers = calloc((size_t)L, sizeof *h->layers);
        h->bact = calloc((size_t)L, sizeof *h->bact);
        h->res = calloc((size_t)L + 1, sizeof *h->res);
        if (!h->layers || !h->bact || !h->res) { st = lc_fail(LC_ERR_NOMEM, "out of memory creating the model"); break; }
        char err[512];
        if (lc_attn_spec_build(h->cfg.attn, L, h->cfg.n_head, h->cfg.d_model / h->cfg.n_head, max_len[s], h->layers,
                               err, sizeof err)) {
            st = lc_fail(LC_ERR_ARG, "%s: %s", s ? "document encoder" : "sentence encoder", err);
            break;
        }
        for (int l = 0; l < L && !st; l++)
            if (lc_attn_layer_check_globals(&h->layers[l], max_len[s], err, sizeof err))
                st = lc_fail(LC_ERR_ARG, "%s layer %d: %s", s ? "document encoder" : "sentence encoder", l, err);
    }
    if (!st) {
        lc_hier_dec *d = &m->dec;
        d->cfg = stack_config(cfg, &cfg->dec, cfg->max_sent_len + 1);
        d->cfg.objective = LC_OBJECTIVE_CLM;
        d->max_len = cfg->max_sent_len + 1;
        d->max_rows = (int)(lim.max_bytes + lim.max_sents);
        d->max_seqs = lim.max_sents;
        const int L = d->cfg.n_layer;
        d->layers = calloc((size_t)L, sizeof *d->layers);
        d->dact = calloc((size_t)L, sizeof *d->dact);
        d->res = calloc((size_t)L + 1, sizeof *d->res);
        d->blk = calloc((size_t)L, sizeof *d->blk);
        d->gblk = calloc((size_t)L, sizeof *d->gblk);
        d->group_state = calloc((size_t)L * LC_ATTN_MAX_GROUPS, sizeof *d->group_state);
        char err[512];
        if (!d->layers || !d->dact || !d->res || !d->blk || !d->gblk || !d->group_state)
            st = lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
        else if (lc_attn_spec_build(d->cfg.attn, L, d->cfg.n_head, d->cfg.d_model / d->cfg.n_head, d->max_len,
                                    d->layers, err, sizeof err))
            st = lc_fail(LC_ERR_ARG, "sentence decoder: %s", err);
        for (int l = 0; l < L && !st; l++)
            if (lc_attn_layer_check_globals(&d->layers[l], d->max_len, err, sizeof err))
                st = lc_fail(LC_ERR_ARG, "sentence decoder layer %d: %s", l, err);
    }
    if (!st) st = lc_hier_build_params(m);
    if (!st) st = build_acts(m);
    if (st) {
        lc_hibert_free(m);
        return st;
    }
    *out = m;
    return LC_OK;
}

void lc_hibert_free(lc_hibert *m) {
    if (!m) return;
    lc_hier_free_params(m);
    lc_free(m->acts);
    lc_free(m->attn_work);
    lc_table_free(&m->atab);
    for (int s = 0; s < LC_HIER_STACKS; s++) {
        free(m->st[s].layers);
        free(m->st[s].bact);
        free(m->st[s].res);
        free(m->st[s].seq_len);
    }
    free(m->tok), free(m->pos), free(m->s_row), free(m->d_row), free(m->d_pos), free(m->keys);
    free(m->global_pos), free(m->labels), free(m->doc_first);
    lc_hier_dec *d = &m->dec;
    lc_free(d->cross_work);
    free(d->layers), free(d->dact), free(d->res), free(d->blk), free(d->gblk), free(d->group_state);
    free(d->tok), free(d->pos), free(d->target), free(d->row_seq), free(d->sent), free(d->doc_of), free(d->q_start), free(d->q_len);
    free(d->kv_start), free(d->kv_len), free(d->seq_len);
    free(m->action), free(m->enc_mask), free(m->enc_sent), free(m->source), free(m->enc_len);
    free(m);
}

const lc_hibert_config *lc_hibert_get_config(const lc_hibert *m) { return &m->cfg; }
long lc_hibert_steps_done(const lc_hibert *m) { return m->step; }
size_t lc_hibert_param_bytes(const lc_hibert *m) { return 4 * m->ptab.total * sizeof(float); }
size_t lc_hibert_activation_bytes(const lc_hibert *m) { return (m->atab.total + m->attn_work_floats) * sizeof(float); }
void lc_hibert_zero_grad(lc_hibert *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_hibert_scores(const lc_hibert *m) { return m->scores; }

size_t lc_hibert_num_params(const lc_hibert *m) {
    size_t n = 0;
    for (int i = 0; i < m->ptab.n; i++) n += m->ptab.slots[i].count;
    return n;
}

lc_status lc_hibert_set_threads(lc_hibert *m, int threads) {
    lc_clear_error();
    const int avail = lc_threads_available(), old = m->threads;
    m->threads = threads <= 0 || threads > avail ? avail : threads;
    lc_status st = plan_compute(m);
    if (st) m->threads = old;
    return st;
}
