/* HIBERT's masked-sentence pre-training: the encoders' view of a batch (lc_hibert_mask_sentences per
 * document), the sentence decoder (decoder blocks over the selected sentences packed longest first, each
 * input row = dec.wte[BOS or byte] + dec.wpe[position] + its sentence's document vector (projected when
 * the widths differ), cross-attention pairs to the document's rows of the document encoder), the output
 * projection tied to dec.wte's byte and EOS rows, the NLL of the original bytes then EOS, and the backward
 * of it all into the decoder and both encoders. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "model/hier.h"

enum { SEED_DEC_EMBED = 3, SEED_DEC_BLOCK = 3000, OUT_ROWS = 257 /* bytes and EOS */ };

static float dec_dropout(const lc_hibert *m, int train) { return train ? m->cfg.dropout : 0.0f; }

static lc_decoder_ctx dec_ctx(lc_hibert *m, int l, int train) {
    lc_hier_dec *d = &m->dec;
    const lc_config *c = &d->cfg;
    lc_decoder_ctx x;
    memset(&x, 0, sizeof x);
    lc_block_ctx *b = &x.self;
    b->B = 1, b->T = d->rows, b->C = c->d_model, b->H = c->n_head, b->F = c->d_ff;
    b->norm = c->norm, b->activation = c->activation, b->dropout = c->dropout, b->train = train;
    b->seed = lc_hier_step_seed(m, SEED_DEC_BLOCK + (uint64_t)l);
    b->layer = &d->layers[l], b->causal = 1;
    b->attn_seed = lc_seed_mix(0x6869626572740000ULL + LC_HIER_DEC, (uint64_t)l);
    for (int i = 0; i < LC_ATTN_MAX_GROUPS; i++) b->attn_state[i] = d->group_state[l * LC_ATTN_MAX_GROUPS + i];
    b->global_pos = m->global_pos;
    b->attn_work = m->attn_work, b->attn_work_floats = m->attn_work_floats;
    b->threads = m->threads, b->tmp = d->tmp;
    b->n_seq = d->n_seq, b->seq_len = d->seq_len;
    x.enc = m->doc_out, x.N_enc = m->st[LC_HIER_DOC].rows, x.C_enc = m->st[LC_HIER_DOC].cfg.d_model;
    x.n_pairs = d->n_seq, x.q_start = d->q_start, x.q_len = d->q_len, x.kv_start = d->kv_start, x.kv_len = d->kv_len;
    x.cross_work = d->cross_work, x.cross_work_floats = d->cross_work_floats;
    return x;
}

static int cmp_long(const void *a, const void *b) {
    const long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The masking of every document and the encoders' batch (m->enc_*). */
static lc_hibert_batch mask_batch(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed) {
    for (int j = 0, s0 = 0; j < b->n_docs; s0 += b->n_sents[j], j++) {
        lc_hibert_mask_sentences(b->n_sents[j], seed + (uint64_t)j, m->action + s0, m->source + s0);
        for (int i = s0; i < s0 + b->n_sents[j]; i++) {
            const int src = s0 + m->source[i];
            m->enc_sent[i] = b->sent ? b->sent[src] : NULL;
            m->enc_len[i] = b->sent_len[src];
            m->enc_mask[i] = m->action[i] == LC_HIBERT_MASKED;
            m->dec.doc_of[i] = j;
        }
    }
    const lc_hibert_batch e = {b->n_docs, b->n_sents, m->enc_sent, m->enc_len};
    return e;
}

/* Decoder rows: the selected sentences longest first, their tokens, positions, targets and pairs. */
static void pack_decoder(lc_hibert *m, const lc_hibert_batch *b) {
    lc_hier_dec *d = &m->dec;
    int n = 0;
    for (int g = 0; g < m->n_sents; g++)
        if (m->action[g] != LC_HIBERT_UNSELECTED)
            m->keys[n++] = ((long)(d->max_len - lc_hier_clipped_len(m, b->sent_len[g]) - 1) << 32) | g;
    qsort(m->keys, (size_t)n, sizeof *m->keys, cmp_long);
    int r = 0;
    for (int k = 0; k < n; k++) {
        const int g = (int)(m->keys[k] & 0xffffffffL), L = lc_hier_clipped_len(m, b->sent_len[g]);
        const uint8_t *x = L ? b->sent[g] : NULL;
        d->sent[k] = g, d->seq_len[k] = L + 1;
        d->q_start[k] = r, d->q_len[k] = L + 1;
        d->kv_start[k] = m->d_row[g] - m->d_pos[g], d->kv_len[k] = b->n_sents[d->doc_of[g]];
        for (int t = 0; t <= L; t++) {
            d->tok[r + t] = t ? x[t - 1] : LC_HIBERT_DEC_BOS;
            d->target[r + t] = t < L ? x[t] : LC_HIBERT_EOS;
            d->pos[r + t] = t, d->row_seq[r + t] = k;
        }
        r += L + 1;
    }
    d->n_seq = n, d->rows = r;
}

static const float *dec_hidden(const lc_hibert *m) {
    const lc_hier_dec *d = &m->dec;
    return d->cfg.norm == LC_NORM_PRE ? d->lnf : d->res[d->cfg.n_layer];
}

static double row_lse(const float *z) {
    float mx = z[0];
    for (int v = 1; v < OUT_ROWS; v++) mx = z[v] > mx ? z[v] : mx;
    double s = 0;
    for (int v = 0; v < OUT_ROWS; v++) s += exp((double)z[v] - mx);
    return mx + log(s);
}

lc_status lc_hibert_pretrain_forward(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed, int train,
                                     double *loss_sum, long *count) {
    lc_clear_error();
    m->have_labels = 0, m->pretrained = 0;
    lc_status st = lc_hier_check_batch(m, b);
    if (st) return st;
    const lc_hibert_batch e = mask_batch(m, b, seed);
    m->enc_masked = m->enc_mask;
    st = lc_hier_encode(m, &e, train);
    m->enc_masked = NULL;
    if (st) return st;
    lc_hier_dec *d = &m->dec;
    pack_decoder(m, b);
    char err[512];
    for (int l = 0; l < d->cfg.n_layer; l++) {
        const lc_decoder_ctx x = dec_ctx(m, l, train);
        if (lc_decoder_check(&x, err, sizeof err)) return lc_fail(LC_ERR_ARG, "sentence decoder layer %d: %s", l, err);
    }
    const int Cd = m->st[LC_HIER_DOC].cfg.d_model, Cx = d->cfg.d_model, N = d->rows;
    for (int k = 0; k < d->n_seq; k++)
        memcpy(d->vin + (size_t)k * Cd, m->doc_out + (size_t)m->d_row[d->sent[k]] * Cd, sizeof(float) * (size_t)Cd);
    if (d->in_w) lc_linear_forward(d->vproj, d->vin, d->in_w, d->in_b, d->n_seq, Cd, Cx);
    else memcpy(d->vproj, d->vin, sizeof(float) * (size_t)d->n_seq * Cx);
    for (int r = 0; r < N; r++) {
        const float *a = d->wte + (size_t)d->tok[r] * Cx, *p = d->wpe + (size_t)d->pos[r] * Cx;
        const float *v = d->vproj + (size_t)d->row_seq[r] * Cx;
        float *x = d->res[0] + (size_t)r * Cx;
        for (int k = 0; k < Cx; k++) x[k] = a[k] + p[k] + v[k];
    }
    lc_dropout_forward(d->res[0], d->res[0], (size_t)N * Cx, dec_dropout(m, train), lc_hier_step_seed(m, SEED_DEC_EMBED));
    for (int l = 0; l < d->cfg.n_layer; l++) {
        const lc_decoder_ctx x = dec_ctx(m, l, train);
        lc_decoder_forward(&x, &d->blk[l], &d->dact[l], d->res[l], d->res[l + 1]);
    }
    if (d->cfg.norm == LC_NORM_PRE)
        lc_layernorm_forward(d->lnf, d->lnf_mean, d->lnf_rstd, d->res[d->cfg.n_layer], d->lnf_w, d->lnf_b, N, Cx,
                             LC_LN_EPS);
    lc_linear_forward(d->logits, dec_hidden(m), d->wte, NULL, N, Cx, OUT_ROWS);
    double sum = 0;
    for (int r = 0; r < N; r++) {
        const float *z = d->logits + (size_t)r * OUT_ROWS;
        sum += row_lse(z) - z[d->target[r]];
    }
    d->count = N;
    m->pretrained = 1;
    if (loss_sum) *loss_sum = sum;
    if (count) *count = N;
    return LC_OK;
}

void lc_hier_pretrain_backward(lc_hibert *m, float loss_scale) {
    lc_hier_dec *d = &m->dec;
    lc_hier_stack *ds = &m->st[LC_HIER_DOC];
    const int Cd = ds->cfg.d_model, Cx = d->cfg.d_model, N = d->rows, L = d->cfg.n_layer;
    lc_set_threads(m->threads);
    /* d loss / d logits = scale (softmax - one-hot), in place */
    for (int r = 0; r < N; r++) {
        float *z = d->logits + (size_t)r * OUT_ROWS;
        const double lse = row_lse(z);
        for (int v = 0; v < OUT_ROWS; v++) z[v] = (float)(loss_scale * exp((double)z[v] - lse));
        z[d->target[r]] -= loss_scale;
    }
    memset(d->dh, 0, sizeof(float) * (size_t)N * Cx);
    lc_linear_backward(d->dh, d->g_wte, NULL, d->logits, dec_hidden(m), d->wte, N, Cx, OUT_ROWS);
    if (d->cfg.norm == LC_NORM_PRE) {
        memset(d->dres, 0, sizeof(float) * (size_t)N * Cx);
        lc_layernorm_backward(d->dres, d->g_lnf_w, d->g_lnf_b, d->dh, d->res[L], d->lnf_w, d->lnf_mean, d->lnf_rstd, N,
                              Cx);
    } else {
        memcpy(d->dres, d->dh, sizeof(float) * (size_t)N * Cx);
    }
    memset(d->d_enc, 0, sizeof(float) * (size_t)ds->rows * Cd);
    for (int l = L - 1; l >= 0; l--) {
        const lc_decoder_ctx x = dec_ctx(m, l, m->cur_train);
        lc_decoder_backward(&x, &d->blk[l], &d->gblk[l], &d->dact[l], d->res[l], d->dres, d->d_enc, &d->scratch);
    }
    lc_dropout_backward(d->dres, d->dres, (size_t)N * Cx, dec_dropout(m, m->cur_train),
                        lc_hier_step_seed(m, SEED_DEC_EMBED));
    memset(d->dvproj, 0, sizeof(float) * (size_t)d->n_seq * Cx);
    for (int r = 0; r < N; r++) { /* serial: a fixed order */
        const float *g = d->dres + (size_t)r * Cx;
        float *ge = d->g_wte + (size_t)d->tok[r] * Cx, *gp = d->g_wpe + (size_t)d->pos[r] * Cx;
        float *gv = d->dvproj + (size_t)d->row_seq[r] * Cx;
        for (int k = 0; k < Cx; k++) ge[k] += g[k], gp[k] += g[k], gv[k] += g[k];
    }
    if (d->in_w) {
        memset(d->dvin, 0, sizeof(float) * (size_t)d->n_seq * Cd);
        lc_linear_backward(d->dvin, d->g_in_w, d->g_in_b, d->dvproj, d->vin, d->in_w, d->n_seq, Cd, Cx);
    } else {
        memcpy(d->dvin, d->dvproj, sizeof(float) * (size_t)d->n_seq * Cd);
    }
    for (int k = 0; k < d->n_seq; k++) {
        float *g = d->d_enc + (size_t)m->d_row[d->sent[k]] * Cd;
        const float *v = d->dvin + (size_t)k * Cd;
        for (int c = 0; c < Cd; c++) g[c] += v[c];
    }
    memcpy(ds->dh, d->d_enc, sizeof(float) * (size_t)ds->rows * Cd);
    lc_hier_encode_backward(m);
    m->pretrained = 0; /* the logits now hold their gradient */
}

lc_status lc_hibert_pretrain_step(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b, uint64_t seed,
                                  double *loss) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    lc_hibert_zero_grad(m);
    double sum;
    long n;
    if ((st = lc_hibert_pretrain_forward(m, b, seed, 1, &sum, &n))) return st;
    if ((st = lc_hibert_backward(m, 1.0f / (float)n))) return st;
    return lc_hier_update(m, o, sum, n, loss);
}
