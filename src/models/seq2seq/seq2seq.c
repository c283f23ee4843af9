/* The vanilla encoder-decoder Transformer (include/longctx/seq2seq.h): configuration, the tensor list
 * (wte or enc.wte / dec.wte / dec.head.weight, enc.*, dec.*; docs/guides/seq2seq.md), the activation and compute
 * plans for max_pairs pairs, lifetime. The passes are models/seq2seq/seq2seq_pass.c; the stacks nn/stacks.h's. */
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "models/seq2seq/seq2seq.h"

enum { OUT_ROWS = LC_SEQ2SEQ_EOS + 1, EMBED_ROWS = LC_SEQ2SEQ_BOS + 1 };

void lc_seq2seq_config_default(lc_seq2seq_config *c) {
    memset(c, 0, sizeof *c);
    c->enc = (lc_seq2seq_stack){2, 128, 4, 512, "full"};
    c->dec = c->enc;
    c->max_src_len = 64, c->max_tgt_len = 64;
    c->norm = LC_NORM_PRE, c->activation = LC_ACT_GELU, c->dropout = 0.0f, c->tied = 1;
}

lc_status lc_seq2seq_config_validate(const lc_seq2seq_config *c) {
    if (c->max_src_len < 0 || c->max_src_len > 1 << 20 || c->max_tgt_len < 1 || c->max_tgt_len > 1 << 20)
        return lc_fail(LC_ERR_ARG, "seq2seq: max source length must be 0..1048576 and max target length 1..1048576, "
                                   "got %d and %d", c->max_src_len, c->max_tgt_len);
    if (c->tied != 0 && c->tied != 1) return lc_fail(LC_ERR_ARG, "seq2seq: tied must be 0 or 1, got %d", c->tied);
    if (c->tied && c->enc.d_model != c->dec.d_model)
        return lc_fail(LC_ERR_ARG, "seq2seq: tied embeddings need equal widths, got encoder %d and decoder %d",
                       c->enc.d_model, c->dec.d_model);
    lc_status st = lc_stack_validate(&c->enc, "encoder", c->norm, c->activation, c->dropout, c->max_src_len + 1,
                                     LC_OBJECTIVE_MLM);
    return st ? st : lc_stack_validate(&c->dec, "decoder", c->norm, c->activation, c->dropout, c->max_tgt_len + 1,
                                       LC_OBJECTIVE_CLM);
}

/* ---------------------------------------------------------------- parameters */

static lc_status build_list(lc_seq2seq *m) {
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, &m->tensors);
    const int pre = m->cfg.norm == LC_NORM_PRE, tied = m->cfg.tied;
    const long Ce = m->enc.cfg.d_model, Cd = m->dec.cfg.d_model;
    b.stack = LC_S2S_SHARED;
    if (tied) lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, EMBED_ROWS, Ce, "wte"); /* bytes, EOS, BOS */
    b.stack = LC_S2S_ENC;
    if (!tied) lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, OUT_ROWS, Ce, "enc.wte"); /* bytes, EOS */
    lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, m->enc.cfg.seq_len, Ce, "enc.wpe");
    lc_tensors_add_blocks(&b, &m->enc.cfg, m->enc.layers, "enc.");
    if (pre) {
        lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, Ce, 0, "enc.ln_f.weight");
        lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, Ce, 0, "enc.ln_f.bias");
    }
    b.stack = LC_S2S_DEC;
    if (!tied) lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, EMBED_ROWS, Cd, "dec.wte");
    lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, m->dec.cfg.seq_len, Cd, "dec.wpe");
    lc_tensors_add_blocks(&b, &m->dec.cfg, m->dec.layers, "dec.");
    lc_tensors_add_cross(&b, &m->dec.cfg, Ce, "dec.");
    if (pre) {
        lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, Cd, 0, "dec.ln_f.weight");
        lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, Cd, 0, "dec.ln_f.bias");
    }
    if (!tied) lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 0, OUT_ROWS, Cd, "dec.head.weight");
    b.stack = LC_S2S_ENC;
    lc_tensors_add_kind_state(&b, &m->enc.cfg, m->enc.layers, "enc.");
    b.stack = LC_S2S_DEC;
    lc_tensors_add_kind_state(&b, &m->dec.cfg, m->dec.layers, "dec.");
    return lc_tensor_list_finish(&b);
}

static float **site(void *user, const lc_tensor *t, int l, int grad) {
    lc_seq2seq *m = user;
    if (t->stack == LC_S2S_DEC) return lc_dec_stack_site(&m->dec, t, l, grad);
    if (t->site == LC_SITE_WTE) return grad ? &m->g_src_wte : &m->src_wte;
    return lc_enc_stack_site(&m->enc, t, l, grad);
}

static const lc_config *stack_of(void *user, const lc_tensor *t, const lc_attn_layer **layers) {
    lc_seq2seq *m = user;
    if (t->stack == LC_S2S_ENC) return *layers = m->enc.layers, &m->enc.cfg;
    if (t->stack == LC_S2S_DEC) return *layers = m->dec.layers, &m->dec.cfg;
    return NULL;
}

static lc_tensor_buffers buffers_of(lc_seq2seq *m) {
    return (lc_tensor_buffers){&m->ptab, &m->stab, &m->params, &m->grads, &m->adam_m, &m->adam_v, &m->state};
}

static lc_status build_params(lc_seq2seq *m) {
    lc_status st = build_list(m);
    const lc_tensor_buffers buf = buffers_of(m);
    if (st || (st = lc_tensors_allocate(&m->tensors, &buf))) return st;
    lc_tensors_bind(&m->tensors, &buf, site, m);
    if (m->cfg.tied) m->dec.wte = m->src_wte, m->dec.g_wte = m->g_src_wte;
    if (m->cfg.tied) m->dec.out_w = m->src_wte, m->dec.g_out_w = m->g_src_wte;
    lc_tensors_init_stacks(&m->tensors, &buf, m->seed, stack_of, m);
    return LC_OK;
}

/* ---------------------------------------------------------------- plans */

static lc_status plan_compute(void *owner) {
    lc_seq2seq *m = owner;
    size_t work = lc_dec_stack_workspace(&m->dec, m->threads);
    const size_t need = lc_enc_stack_workspace(&m->enc, m->threads);
    work = need > work ? need : work;
    lc_status st = lc_dec_stack_plan_cross(&m->dec, m->enc.max_len, m->threads);
    return st ? st : lc_workspace_ensure(&m->w.attn_work, &m->w.attn_work_floats, work, "the attention workspace");
}

static lc_status build_acts(lc_seq2seq *m) {
    lc_act_plan p;
    lc_act_plan_init(&p);
    lc_act_plan_enc(&p, &m->enc, "enc.");
    lc_act_plan_dec(&p, &m->dec, m->enc.cfg.d_model, "dec.");
    const size_t rows = (size_t)m->enc.max_rows, pairs = (size_t)m->max_pairs;
    const int longest = m->enc.max_len > m->dec.max_len ? m->enc.max_len : m->dec.max_len;
    lc_status st = p.failed ? lc_fail(LC_ERR_NOMEM, "out of memory planning the activations")
                            : lc_check_fits(p.tab.total * sizeof(float) + (2 * rows + 3 * pairs + longest) * sizeof(int),
                                            "the activations (pairs and bytes of a batch)");
    if (!st && !(m->w.acts = lc_table_alloc(&p.tab))) st = lc_fail(LC_ERR_NOMEM, "out of memory for the activations");
    if (!st) {
        m->tok = malloc(sizeof(int) * rows), m->pos = malloc(sizeof(int) * rows);
        m->src_row = malloc(sizeof(int) * pairs), m->keys = malloc(sizeof(long) * pairs);
        m->w.global_pos = malloc(sizeof(int) * (size_t)longest);
        if (!m->tok || !m->pos || !m->src_row || !m->keys || !m->w.global_pos)
            st = lc_fail(LC_ERR_NOMEM, "out of memory for the batch's packing");
    }
    if (st) {
        lc_act_plan_discard(&p);
        return st;
    }
    lc_act_plan_bind(&p, m->w.acts);
    m->w.atab = p.tab;
    for (int t = 0; t < longest; t++) m->w.global_pos[t] = t;
    return plan_compute(m);
}

/* ---------------------------------------------------------------- lifetime */

/* The model without parameters or activations: the config and both stacks planned for max_pairs pairs. */
static lc_status create_shell(const lc_seq2seq_config *cfg, int max_pairs, uint64_t seed, lc_seq2seq **out) {
    *out = NULL;
    lc_status st = lc_seq2seq_config_validate(cfg);
    if (st) return st;
    if (max_pairs < 1 || max_pairs > 1 << 20) return lc_fail(LC_ERR_ARG, "seq2seq: max pairs must be 1..1048576, got %d", max_pairs);
    lc_seq2seq *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *cfg, m->max_pairs = max_pairs, m->seed = seed;
    m->threads = lc_threads_default(); /* its own count from now on (lc_threads_set_default) */
    const int Ls = cfg->max_src_len + 1, Lt = cfg->max_tgt_len + 1;
    const lc_config ce = lc_stack_config(&cfg->enc, cfg->norm, cfg->activation, cfg->dropout, Ls, LC_OBJECTIVE_MLM);
    const lc_config cd = lc_stack_config(&cfg->dec, cfg->norm, cfg->activation, cfg->dropout, Lt, LC_OBJECTIVE_CLM);
    m->enc.block_stream = LC_S2S_BLOCK_STREAM, m->enc.attn_stream = LC_S2S_ATTN_STREAM;
    m->dec.block_stream = LC_S2S_DEC_BLOCK_STREAM, m->dec.attn_stream = LC_S2S_ATTN_STREAM + 1;
    m->dec.embed_stream = LC_S2S_DEC_EMBED_STREAM;
    st = lc_enc_stack_init(&m->enc, &ce, "encoder", Ls, max_pairs * Ls, max_pairs);
    if (!st) st = lc_dec_stack_init(&m->dec, &cd, "decoder", OUT_ROWS, Lt, max_pairs * Lt, max_pairs, max_pairs * Ls);
    if (st) {
        lc_seq2seq_free(m);
        return st;
    }
    *out = m;
    return LC_OK;
}

lc_status lc_seq2seq_tensor_list(const lc_seq2seq_config *cfg, lc_tensor_list *out) {
    memset(out, 0, sizeof *out);
    lc_seq2seq *m;
    lc_status st = create_shell(cfg, 1, 0, &m);
    if (!st && !(st = build_list(m))) {
        *out = m->tensors;
        memset(&m->tensors, 0, sizeof m->tensors);
    }
    lc_seq2seq_free(m);
    return st;
}

lc_status lc_seq2seq_create(const lc_seq2seq_config *cfg, int max_pairs, uint64_t seed, lc_seq2seq **out) {
    lc_clear_error();
    lc_seq2seq *m;
    lc_status st = create_shell(cfg, max_pairs, seed, &m);
    if (st) return st;
    if (!st) st = build_params(m);
    if (!st) st = build_acts(m);
    if (st) {
        lc_seq2seq_free(m);
        return st;
    }
    *out = m;
    return LC_OK;
}

void lc_seq2seq_free(lc_seq2seq *m) {
    if (!m) return;
    const lc_tensor_buffers buf = buffers_of(m);
    lc_tensors_release(&m->tensors, &buf);
    lc_enc_stack_free(&m->enc);
    lc_dec_stack_free(&m->dec);
    lc_pass_work_free(&m->w);
    free(m->tok), free(m->pos), free(m->src_row), free(m->keys);
    free(m);
}

const lc_seq2seq_config *lc_seq2seq_get_config(const lc_seq2seq *m) { return &m->cfg; }
long lc_seq2seq_steps_done(const lc_seq2seq *m) { return m->step; }
void lc_seq2seq_zero_grad(lc_seq2seq *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }

size_t lc_seq2seq_num_params(const lc_seq2seq *m) { return lc_slots_count(&m->ptab); }

lc_status lc_seq2seq_set_threads(lc_seq2seq *m, int threads) {
    return lc_replan_threads(&m->threads, threads, plan_compute, m);
}
