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
#include "models/hibert/hibert.h"

/* The encoders' batch (m->enc_*) from the actions and sources of every document (m->action, m->source). */
static lc_hibert_batch encoder_view(lc_hibert *m, const lc_hibert_batch *b) {
    for (int j = 0, s0 = 0; j < b->n_docs; s0 += b->n_sents[j], j++)
        for (int i = s0; i < s0 + b->n_sents[j]; i++) {
            const int src = s0 + m->source[i];
            m->enc_sent[i] = b->sent ? b->sent[src] : NULL;
            m->enc_len[i] = b->sent_len[src];
            m->enc_mask[i] = m->action[i] == LC_HIBERT_MASKED;
            m->doc_of[i] = j;
        }
    const lc_hibert_batch e = {b->n_docs, b->n_sents, m->enc_sent, m->enc_len};
    return e;
}

/* The selected sentences' decoder rows against the plan (pack_decoder writes them unchecked). */
static lc_status check_decoder_plan(const lc_hibert *m, const lc_hibert_batch *b) {
    const lc_dec_stack *d = &m->dec.s;
    long sents = 0, rows = 0, total = 0;
    for (int j = 0; j < b->n_docs; j++) total += b->n_sents[j];
    for (long g = 0; g < total; g++)
        if (m->action[g] != LC_HIBERT_UNSELECTED) sents++, rows += lc_hibert_clipped_len(m, b->sent_len[g]) + 1;
    if (sents > d->max_seqs || rows > d->max_rows)
        return lc_fail(LC_ERR_ARG, "hibert: the sentence decoder gets %ld sentences, %ld rows; the model is planned for "
                                   "%d, %d (limits.max_dec_rows)", sents, rows, d->max_seqs, d->max_rows);
    return LC_OK;
}

/* Decoder rows: the selected sentences longest first, their tokens, positions, targets and pairs. */
static void pack_decoder(lc_hibert *m, const lc_hibert_batch *b) {
    lc_dec_stack *d = &m->dec.s;
    int n = 0;
    for (int g = 0; g < m->n_sents; g++)
        if (m->action[g] != LC_HIBERT_UNSELECTED)
            m->keys[n++] = ((long)(d->max_len - lc_hibert_clipped_len(m, b->sent_len[g]) - 1) << 32) | g;
    lc_sort_keys(m->keys, n);
    int r = 0;
    for (int k = 0; k < n; k++) {
        const int g = (int)(m->keys[k] & 0xffffffffL), L = lc_hibert_clipped_len(m, b->sent_len[g]);
        const uint8_t *x = L ? b->sent[g] : NULL;
        d->item[k] = g, d->seq_len[k] = L + 1;
        d->q_start[k] = r, d->q_len[k] = L + 1;
        d->kv_start[k] = m->d_row[g] - m->d_pos[g], d->kv_len[k] = b->n_sents[m->doc_of[g]];
        for (int t = 0; t <= L; t++) {
            d->tok[r + t] = t ? x[t - 1] : LC_HIBERT_DEC_BOS;
            d->target[r + t] = t < L ? x[t] : LC_HIBERT_EOS;
            d->pos[r + t] = t, d->row_seq[r + t] = k;
        }
        r += L + 1;
    }
    d->n_seq = n, d->rows = r;
}

lc_status lc_hibert_pretrain_mask(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed) {
    lc_clear_error();
    m->have_labels = 0, m->pretrained = 0, m->intruder_grads = 0;
    lc_status st = lc_hibert_check_batch(m, b);
    if (st) return st;
    for (int j = 0, s0 = 0; j < b->n_docs; s0 += b->n_sents[j], j++)
        lc_hibert_mask_sentences(b->n_sents[j], seed + (uint64_t)j, m->action + s0, m->source + s0);
    return LC_OK;
}

lc_status lc_hibert_pretrain_forward(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed, int train,
                                     double *loss_sum, long *count) {
    lc_status st = lc_hibert_pretrain_mask(m, b, seed);
    return st ? st : lc_hibert_pretrain_actions(m, b, NULL, NULL, train, loss_sum, count);
}

lc_status lc_hibert_pretrain_actions(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *action, const int *source,
                                   int train, double *loss_sum, long *count) {
    lc_clear_error();
    m->have_labels = 0, m->pretrained = 0, m->intruder_grads = 0;
    lc_hibert_batch e;
    lc_status st = lc_hibert_pretrain_view(m, b, action, source, &e);
    if (st) return st;
    m->enc_masked = m->enc_mask;
    st = lc_hibert_encode(m, &e, train);
    m->enc_masked = NULL;
    return st ? st : lc_hibert_pretrain_decode(m, b, train, loss_sum, count);
}

lc_status lc_hibert_pretrain_view(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *action, const int *source,
                                lc_hibert_batch *view) {
    if (m->lim.no_decoder)
        return lc_fail(LC_ERR_ARG, "hibert: the model was planned without the sentence decoder (limits.no_decoder): "
                                   "it cannot pre-train");
    lc_status st = lc_hibert_check_batch(m, b);
    if (st) return st;
    for (int j = 0, s0 = 0; action && j < b->n_docs; s0 += b->n_sents[j], j++)
        for (int i = s0; i < s0 + b->n_sents[j]; i++) {
            if (action[i] > LC_HIBERT_KEPT || source[i] < 0 || source[i] >= b->n_sents[j] ||
                (action[i] != LC_HIBERT_REPLACED && source[i] != i - s0))
                return lc_fail(LC_ERR_ARG, "hibert: sentence %d: action %d with source %d", i, action[i], source[i]);
            m->action[i] = action[i], m->source[i] = source[i];
        }
    if ((st = check_decoder_plan(m, b))) return st;
    *view = encoder_view(m, b);
    return LC_OK;
}

lc_status lc_hibert_pretrain_decode(lc_hibert *m, const lc_hibert_batch *b, int train, double *loss_sum, long *count) {
    lc_hibert_dec *hd = &m->dec;
    lc_dec_stack *d = &hd->s;
    pack_decoder(m, b);
    const lc_pass_env env = lc_hibert_env(m);
    d->enc = m->doc_out, d->N_enc = m->st[LC_HIBERT_DOC].rows, d->C_enc = m->st[LC_HIBERT_DOC].cfg.d_model;
    lc_status st = lc_dec_stack_check(d, &env);
    if (st) return st;
    const int Cd = d->C_enc, Cx = d->cfg.d_model;
    for (int k = 0; k < d->n_seq; k++)
        memcpy(hd->vin + (size_t)k * Cd, m->doc_out + (size_t)m->d_row[d->item[k]] * Cd, sizeof(float) * (size_t)Cd);
    if (hd->in_w) lc_linear_forward(hd->vproj, hd->vin, hd->in_w, hd->in_b, d->n_seq, Cd, Cx);
    else memcpy(hd->vproj, hd->vin, sizeof(float) * (size_t)d->n_seq * Cx);
    lc_dec_stack_embed(d, &env, hd->vproj, train);
    const double sum = lc_dec_stack_forward(d, &env, train);
    hd->count = d->rows;
    m->pretrained = 1;
    if (loss_sum) *loss_sum = sum;
    if (count) *count = d->rows;
    return LC_OK;
}

void lc_hibert_pretrain_decode_backward(lc_hibert *m, float loss_scale) {
    lc_hibert_dec *hd = &m->dec;
    lc_dec_stack *d = &hd->s;
    lc_enc_stack *ds = &m->st[LC_HIBERT_DOC];
    const int Cd = ds->cfg.d_model, Cx = d->cfg.d_model;
    const lc_pass_env env = lc_hibert_env(m);
    lc_set_threads(m->threads);
    lc_dec_stack_backward(d, &env, loss_scale, m->cur_train, hd->dvproj);
    if (hd->in_w) {
        memset(hd->dvin, 0, sizeof(float) * (size_t)d->n_seq * Cd);
        lc_linear_backward(hd->dvin, hd->g_in_w, hd->g_in_b, hd->dvproj, hd->vin, hd->in_w, d->n_seq, Cd, Cx);
    } else {
        memcpy(hd->dvin, hd->dvproj, sizeof(float) * (size_t)d->n_seq * Cd);
    }
    for (int k = 0; k < d->n_seq; k++) {
        float *g = d->d_enc + (size_t)m->d_row[d->item[k]] * Cd;
        const float *v = hd->dvin + (size_t)k * Cd;
        for (int c = 0; c < Cd; c++) g[c] += v[c];
    }
    memcpy(ds->dh, d->d_enc, sizeof(float) * (size_t)ds->rows * Cd);
    m->pretrained = 0; /* the logits now hold their gradient */
}

void lc_hibert_pretrain_backward(lc_hibert *m, float loss_scale) {
    const int intruders = m->intruder_grads;
    m->intruder_grads = 0;
    lc_hibert_pretrain_decode_backward(m, loss_scale);
    if (!intruders) {
        lc_hibert_encode_backward(m);
        return;
    }
    lc_hibert_documents_backward(m, NULL); /* the sentence vectors' gradient adds to the intruders' */
    lc_hibert_sentences_backward(m);
}

lc_status lc_hibert_pretrain_step(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b, uint64_t seed,
                                  double *loss) {
    return lc_hibert_pretrain_step_intruders(m, o, b, seed, 0, 0, loss, NULL);
}
