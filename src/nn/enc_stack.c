/* The bidirectional encoder stack of the encoder-decoder models (nn/stacks.h): set-up from a config,
 * the block contexts of a pass over packed sequences, forward and backward with the final LayerNorm, the
 * tensor sites; and what every stack's owner shares: packed embedding rows, and the longest-first sort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "nn/stacks.h"

lc_config lc_stack_config(const lc_hibert_stack *s, lc_norm norm, lc_activation activation, float dropout,
                          int max_len, lc_objective objective) {
    lc_config c;
    lc_config_default(&c);
    c.vocab = 256, c.model = LC_MODEL_VANILLA, c.objective = objective, c.tied = 1;
    c.n_layer = s->n_layer, c.d_model = s->d_model, c.n_head = s->n_head, c.d_ff = s->d_ff;
    c.seq_len = max_len, c.norm = norm, c.activation = activation, c.dropout = dropout;
    c.mem_len = 0, c.qk_share = 0, c.attn_share = 0, c.reversible = 0, c.ffn_chunk = 0, c.extra_tokens = 0;
    memcpy(c.attn, s->attn, sizeof c.attn);
    if (!memchr(c.attn, 0, sizeof c.attn)) c.attn[0] = 0; /* refused by lc_stack_validate first */
    if (!c.attn[0]) strcpy(c.attn, "full");
    return c;
}

lc_status lc_stack_validate(const lc_hibert_stack *s, const char *what, lc_norm norm, lc_activation activation,
                            float dropout, int max_len, lc_objective objective) {
    if (!memchr(s->attn, 0, sizeof s->attn)) return lc_fail(LC_ERR_ARG, "%s: attn spec is not terminated", what);
    const lc_config c = lc_stack_config(s, norm, activation, dropout, max_len, objective);
    if (lc_config_validate(&c)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", lc_last_error());
        return lc_fail(LC_ERR_ARG, "%s: %s", what, msg);
    }
    return LC_OK;
}

lc_status lc_stack_layers(const lc_config *c, const char *what, int max_len, lc_attn_layer *layers) {
    char err[512];
    if (lc_attn_spec_build(c->attn, c->n_layer, c->n_head, c->d_model / c->n_head, max_len, layers, err, sizeof err))
        return lc_fail(LC_ERR_ARG, "%s: %s", what, err);
    for (int l = 0; l < c->n_layer; l++)
        if (lc_attn_layer_check_globals(&layers[l], max_len, err, sizeof err))
            return lc_fail(LC_ERR_ARG, "%s layer %d: %s", what, l, err);
    return LC_OK;
}

lc_status lc_enc_stack_init(lc_enc_stack *st, const lc_config *c, const char *what, int max_len, int max_rows,
                            int max_seqs) {
    st->cfg = *c, st->what = what;
    st->max_len = max_len, st->max_rows = max_rows, st->max_seqs = max_seqs;
    const int L = c->n_layer;
    st->layers = calloc((size_t)L, sizeof *st->layers);
    st->bact = calloc((size_t)L, sizeof *st->bact);
    st->res = calloc((size_t)L + 1, sizeof *st->res);
    st->blk = calloc((size_t)L, sizeof *st->blk);
    st->gblk = calloc((size_t)L, sizeof *st->gblk);
    st->group_state = calloc((size_t)L * LC_ATTN_MAX_GROUPS, sizeof *st->group_state);
    st->seq_len = malloc(sizeof(int) * (size_t)(max_seqs > 0 ? max_seqs : 1));
    if (!st->layers || !st->bact || !st->res || !st->blk || !st->gblk || !st->group_state || !st->seq_len)
        return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    return lc_stack_layers(c, what, max_len, st->layers);
}

void lc_enc_stack_free(lc_enc_stack *st) {
    free(st->layers), free(st->bact), free(st->res), free(st->blk), free(st->gblk), free(st->group_state);
    free(st->seq_len);
}

lc_block_ctx lc_stack_block_ctx(const lc_stack_view *v, const lc_pass_env *e, int l, int train) {
    const lc_config *c = v->cfg;
    lc_block_ctx x;
    memset(&x, 0, sizeof x);
    x.B = 1, x.T = v->rows, x.C = c->d_model, x.H = c->n_head, x.F = c->d_ff;
    x.norm = c->norm, x.activation = c->activation, x.dropout = c->dropout, x.train = train;
    x.precision = c->precision;
    x.seed = lc_seed_mix(e->step_seed, v->block_stream + (uint64_t)l);
    x.layer = &v->layers[l], x.causal = v->causal;
    x.attn_seed = lc_seed_mix(v->attn_stream, (uint64_t)l); /* fixed per layer */
    for (int i = 0; i < LC_ATTN_MAX_GROUPS; i++) x.attn_state[i] = v->group_state[l * LC_ATTN_MAX_GROUPS + i];
    x.global_pos = e->global_pos;
    x.attn_work = e->attn_work, x.attn_work_floats = e->attn_work_floats;
    x.threads = e->threads, x.tmp = v->tmp;
    x.n_seq = v->n_seq, x.seq_len = v->seq_len;
    return x;
}

static lc_block_ctx stack_ctx(const lc_enc_stack *st, const lc_pass_env *e, int l, int train) {
    const lc_stack_view v = {&st->cfg, st->layers, st->group_state, st->tmp, st->rows, st->n_seq, st->seq_len,
                             st->block_stream, st->attn_stream, 0};
    return lc_stack_block_ctx(&v, e, l, train);
}

size_t lc_stack_workspace(const lc_config *c, const lc_attn_layer *layers, int max_rows, int max_len, int max_seqs,
                          int causal, int threads) {
    size_t work = 1;
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_ctx x;
        memset(&x, 0, sizeof x);
        x.B = 1, x.T = max_rows, x.C = c->d_model, x.H = c->n_head, x.F = c->d_ff;
        x.layer = &layers[l], x.causal = causal, x.threads = threads;
        const size_t need = lc_block_packed_workspace(&x, max_rows, max_len, max_seqs);
        work = need > work ? need : work;
    }
    return work;
}

size_t lc_enc_stack_workspace(const lc_enc_stack *st, int threads) {
    return lc_stack_workspace(&st->cfg, st->layers, st->max_rows, st->max_len, st->max_seqs, 0, threads);
}

lc_status lc_enc_stack_check(const lc_enc_stack *st, const lc_pass_env *e) {
    char err[512];
    for (int l = 0; l < st->cfg.n_layer; l++) {
        const lc_block_ctx x = stack_ctx(st, e, l, 0);
        if (lc_block_check_attention(&x, err, sizeof err)) return lc_fail(LC_ERR_ARG, "%s layer %d: %s", st->what, l, err);
    }
    return LC_OK;
}

const float *lc_enc_stack_forward(lc_enc_stack *st, const lc_pass_env *e, int train) {
    const lc_config *c = &st->cfg;
    for (int l = 0; l < c->n_layer; l++) {
        const lc_block_ctx x = stack_ctx(st, e, l, train);
        lc_block_forward(&x, &st->blk[l], &st->bact[l], st->res[l], st->res[l + 1]);
    }
    if (c->norm != LC_NORM_PRE) return st->res[c->n_layer];
    lc_layernorm_forward(st->lnf, st->lnf_mean, st->lnf_rstd, st->res[c->n_layer], st->lnf_w, st->lnf_b, st->rows,
                         c->d_model, LC_LN_EPS);
    return st->lnf;
}

void lc_enc_stack_backward(lc_enc_stack *st, const lc_pass_env *e, int train) {
    const lc_config *c = &st->cfg;
    const size_t NC = (size_t)st->rows * c->d_model;
    if (c->norm == LC_NORM_PRE) {
        memset(st->dres, 0, NC * sizeof(float));
        lc_layernorm_backward(st->dres, st->g_lnf_w, st->g_lnf_b, st->dh, st->res[c->n_layer], st->lnf_w,
                              st->lnf_mean, st->lnf_rstd, st->rows, c->d_model);
    } else {
        memcpy(st->dres, st->dh, NC * sizeof(float));
    }
    for (int l = c->n_layer - 1; l >= 0; l--) {
        const lc_block_ctx x = stack_ctx(st, e, l, train);
        lc_block_backward(&x, &st->blk[l], &st->gblk[l], &st->bact[l], st->res[l], st->dres, &st->scratch);
    }
}

float **lc_enc_stack_site(lc_enc_stack *st, const lc_tensor *t, int l, int grad) {
    switch (t->site) {
    case LC_SITE_WPE: return grad ? &st->g_wpe : &st->wpe;
    case LC_SITE_LNF_W: return grad ? &st->g_lnf_w : &st->lnf_w;
    case LC_SITE_LNF_B: return grad ? &st->g_lnf_b : &st->lnf_b;
    case LC_SITE_KIND_STATE: return grad ? NULL : &st->group_state[l * LC_ATTN_MAX_GROUPS + t->group];
    default: return lc_tensor_block_field(grad ? &st->gblk[l] : &st->blk[l], t);
    }
}

/* ---------------------------------------------------------------- shared by the owners */

void lc_embed_rows(float *out, const float *wte, const float *wpe, const int *tok, const int *pos, int rows, int C) {
    for (int r = 0; r < rows; r++) {
        const float *a = wte + (size_t)tok[r] * C, *p = wpe + (size_t)pos[r] * C;
        float *x = out + (size_t)r * C;
        for (int k = 0; k < C; k++) x[k] = a[k] + p[k];
    }
}

void lc_embed_rows_backward(float *g_wte, float *g_wpe, const float *d, const int *tok, const int *pos, int rows,
                            int C) {
    for (int r = 0; r < rows; r++) {
        const float *g = d + (size_t)r * C;
        float *ge = g_wte + (size_t)tok[r] * C, *gp = g_wpe + (size_t)pos[r] * C;
        for (int k = 0; k < C; k++) ge[k] += g[k], gp[k] += g[k];
    }
}

void lc_embed_add_rows(float *out, const float *table, const int *idx, int rows, int C) {
    for (int r = 0; r < rows; r++) {
        const float *a = table + (size_t)idx[r] * C;
        float *x = out + (size_t)r * C;
        for (int k = 0; k < C; k++) x[k] += a[k];
    }
}

void lc_embed_add_rows_backward(float *g_table, const float *d, const int *idx, int rows, int C) {
    for (int r = 0; r < rows; r++) {
        const float *g = d + (size_t)r * C;
        float *gt = g_table + (size_t)idx[r] * C;
        for (int k = 0; k < C; k++) gt[k] += g[k];
    }
}

static int cmp_long(const void *a, const void *b) {
    const long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

void lc_sort_keys(long *keys, int n) { qsort(keys, (size_t)n, sizeof *keys, cmp_long); }

void lc_tensors_init_stacks(const lc_tensor_list *l, const lc_tensor_buffers *b, uint64_t seed, lc_stack_of_fn stack_of,
                            void *user) {
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < l->n; i++) {
        const lc_tensor *t = &l->t[i];
        const lc_attn_layer *layers = NULL;
        const lc_config *c = stack_of(user, t, &layers);
        const lc_tensor_init_ctx ctx = {&rng, c ? c->n_layer : 1,
                                        t->init == LC_INIT_KIND ? &layers[t->layer].group[t->group] : NULL,
                                        c ? c->d_model / c->n_head : 0, c ? c->seq_len : 0, seed,
                                        (uint64_t)((t->stack * 4096 + t->layer) * LC_ATTN_MAX_GROUPS + t->group)};
        lc_tensor_init_values(t, lc_tensor_values(l, b, i), &ctx);
    }
}

lc_status lc_workspace_ensure(float **work, size_t *floats, size_t need, const char *what) {
    if (*work && need <= *floats) return LC_OK;
    lc_status st = lc_check_fits(need * sizeof(float), what);
    if (st) return st;
    float *p = lc_alloc_aligned(need * sizeof(float));
    if (!p) return lc_fail(LC_ERR_NOMEM, "out of memory for %s (%zu MB)", what, need * 4 >> 20);
    lc_free(*work);
    *work = p, *floats = need;
    return LC_OK;
}

lc_status lc_replan_threads(int *threads, int want, lc_status (*plan)(void *), void *owner) {
    lc_clear_error();
    const int avail = lc_threads_available(), old = *threads;
    *threads = want <= 0 || want > avail ? avail : want;
    lc_status st = plan(owner);
    if (st) *threads = old;
    return st;
}

size_t lc_slots_count(const lc_table *t) {
    size_t n = 0;
    for (int i = 0; i < t->n; i++) n += t->slots[i].count;
    return n;
}
