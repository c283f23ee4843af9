/* The hierarchical encoders' passes: the batch check and packing (sentences and documents sorted longest
 * first, so equal lengths are adjacent as lc_block_ctx's packing wants), the sentence encoder (byte
 * embedding + position inside the sentence, bidirectional blocks, the EOS row's final hidden state), the
 * document encoder (those vectors, plus their hashed word vectors when cfg.sent_words, projected when the
 * widths differ, + sentence positions, bidirectional blocks) and the backward of both. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/hibert/hibert.h"

enum { SEED_EMBED = 1 };

/* The key of this step's dropout masks: the step, or with several processes each one's own. */
static uint64_t noise_key(const lc_hibert *m) {
    return (uint64_t)(m->noise_ranks > 1 ? m->step * m->noise_ranks + m->noise_rank : m->step);
}

uint64_t lc_hibert_step_seed(const lc_hibert *m, uint64_t what) {
    return lc_seed_mix(lc_seed_mix(m->seed, noise_key(m)), what);
}

lc_pass_env lc_hibert_env(const lc_hibert *m) {
    const lc_pass_env e = {lc_seed_mix(m->seed, noise_key(m)), m->w.global_pos, m->w.attn_work, m->w.attn_work_floats,
                           m->threads};
    return e;
}

static float embed_dropout(const lc_hibert *m, int train) { return train ? m->cfg.dropout : 0.0f; }

/* ---------------------------------------------------------------- batch check and packing */

int lc_hibert_clipped_len(const lc_hibert *m, int len) { return len < m->cfg.max_sent_len ? len : m->cfg.max_sent_len; }

lc_status lc_hibert_check_batch(const lc_hibert *m, const lc_hibert_batch *b) {
    if (!b || !b->n_sents || !b->sent_len) return lc_fail(LC_ERR_ARG, "hibert: a batch needs n_sents and sent_len");
    if (b->n_docs < 1 || b->n_docs > m->lim.max_docs)
        return lc_fail(LC_ERR_ARG, "hibert: %d documents, the model is planned for 1..%d", b->n_docs, m->lim.max_docs);
    long sents = 0, bytes = 0;
    for (int j = 0; j < b->n_docs; j++) {
        if (b->n_sents[j] < 1 || b->n_sents[j] > m->cfg.max_sents)
            return lc_fail(LC_ERR_ARG, "hibert: document %d has %d sentences (1..%d)", j, b->n_sents[j],
                           m->cfg.max_sents);
        sents += b->n_sents[j];
    }
    if (sents > m->lim.max_sents)
        return lc_fail(LC_ERR_ARG, "hibert: %ld sentences in the batch, the model is planned for %d", sents,
                       m->lim.max_sents);
    for (long i = 0; i < sents; i++) {
        if (b->sent_len[i] < 0) return lc_fail(LC_ERR_ARG, "hibert: sentence %ld has length %d", i, b->sent_len[i]);
        if (b->sent_len[i] > 0 && (!b->sent || !b->sent[i]))
            return lc_fail(LC_ERR_ARG, "hibert: sentence %ld has no bytes", i);
        bytes += lc_hibert_clipped_len(m, b->sent_len[i]);
    }
    if (bytes > m->lim.max_bytes)
        return lc_fail(LC_ERR_ARG, "hibert: %ld sentence bytes in the batch (after truncation to %d), the model is "
                                   "planned for %ld", bytes, m->cfg.max_sent_len, m->lim.max_bytes);
    return LC_OK;
}

/* keys[0..n) = (longest first, then index) of lengths len[i]; sorted in place. The index is key & mask. */
static void sort_longest_first(long *keys, int n, int max_len, const int *len) {
    for (int i = 0; i < n; i++) keys[i] = ((long)(max_len - len[i]) << 32) | i;
    lc_sort_keys(keys, n);
}

/* Sentence rows of n sentences: tokens and positions, the packed lengths and each sentence's EOS row. */
static void pack_sentences(lc_hibert *m, int n, const uint8_t *const *sent, const int *len) {
    lc_enc_stack *st = &m->st[LC_HIBERT_SENT];
    for (int i = 0; i < n; i++) m->s_row[i] = lc_hibert_clipped_len(m, len[i]) + 1; /* the sort's lengths */
    sort_longest_first(m->keys, n, st->max_len, m->s_row);
    int r = 0;
    for (int k = 0; k < n; k++) {
        const int i = (int)(m->keys[k] & 0xffffffffL), L = lc_hibert_clipped_len(m, len[i]);
        const int masked = m->enc_masked && m->enc_masked[i];
        for (int t = 0; t < L; t++) m->tok[r + t] = masked ? LC_HIBERT_MASK : sent[i][t], m->pos[r + t] = t;
        m->tok[r + L] = LC_HIBERT_EOS, m->pos[r + L] = L;
        st->seq_len[k] = L + 1;
        m->s_row[i] = r + L;
        r += L + 1;
    }
    st->n_seq = n, st->rows = r;
}

/* Document rows: the row and sentence position of every sentence. */
static void pack_documents(lc_hibert *m, const lc_hibert_batch *b) {
    lc_enc_stack *st = &m->st[LC_HIBERT_DOC];
    for (int j = 0, s0 = 0; j < m->n_docs; j++) m->doc_first[j] = s0, s0 += b->n_sents[j];
    sort_longest_first(m->keys, m->n_docs, st->max_len, b->n_sents);
    int r = 0;
    for (int k = 0; k < m->n_docs; k++) {
        const int j = (int)(m->keys[k] & 0xffffffffL), s0 = m->doc_first[j];
        for (int s = 0; s < b->n_sents[j]; s++) m->d_row[s0 + s] = r + s, m->d_pos[s0 + s] = s;
        st->seq_len[k] = b->n_sents[j];
        r += b->n_sents[j];
    }
    st->n_seq = m->n_docs, st->rows = r;
}

/* ---------------------------------------------------------------- the encoders */

lc_status lc_hibert_sentences_forward(lc_hibert *m, int n, const uint8_t *const *sent, const int *len, int train) {
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT];
    long rows = 0;
    for (int i = 0; i < n; i++) rows += lc_hibert_clipped_len(m, len[i]) + 1;
    if (n > ss->max_seqs || rows > ss->max_rows)
        return lc_fail(LC_ERR_ARG, "hibert: the sentence encoder gets %d sentences, %ld rows; it is planned for %d, %d",
                       n, rows, ss->max_seqs, ss->max_rows);
    pack_sentences(m, n, sent, len);
    if (m->cfg.sent_words) lc_hibert_words_collect(m, n, sent, len);
    const lc_pass_env env = lc_hibert_env(m);
    lc_status st = lc_enc_stack_check(ss, &env);
    if (st) return st;
    lc_threads_use(m->threads);
    m->cur_train = train;
    const int Cs = ss->cfg.d_model;
    /* byte (or EOS) embedding + position inside the sentence */
    lc_embed_rows(ss->res[0], m->wte, ss->wpe, m->tok, m->pos, ss->rows, Cs);
    lc_dropout_forward(ss->res[0], ss->res[0], (size_t)ss->rows * Cs, embed_dropout(m, train),
                       lc_hibert_step_seed(m, SEED_EMBED));
    m->sent_out = lc_enc_stack_forward(ss, &env, train);
    return LC_OK;
}

lc_status lc_hibert_documents_forward(lc_hibert *m, const lc_hibert_batch *b, const int *vec, int train) {
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT], *ds = &m->st[LC_HIBERT_DOC];
    pack_documents(m, b);
    const lc_pass_env env = lc_hibert_env(m);
    lc_status st = lc_enc_stack_check(ds, &env);
    if (st) return st;
    lc_threads_use(m->threads);
    const int Cs = ss->cfg.d_model, Cd = ds->cfg.d_model;
    /* each place's sentence vector (an EOS row) at its document row (+ projection) + its position */
    for (int i = 0; i < m->n_sents; i++)
        memcpy(m->doc_in + (size_t)m->d_row[i] * Cs, m->sent_out + (size_t)m->s_row[vec ? vec[i] : i] * Cs,
               sizeof(float) * (size_t)Cs);
    if (m->cfg.sent_words) { /* EOS states centred on their document's mean, + the words (models/hibert/hibert_words.c) */
        lc_hibert_centre_documents(m, m->doc_in);
        for (int i = 0; i < m->n_sents; i++) lc_hibert_words_add(m, m->doc_in + (size_t)m->d_row[i] * Cs, vec ? vec[i] : i);
    }
    if (m->in_w) lc_linear_forward(ds->res[0], m->doc_in, m->in_w, m->in_b, ds->rows, Cs, Cd);
    else memcpy(ds->res[0], m->doc_in, sizeof(float) * (size_t)ds->rows * Cd);
    for (int i = 0; i < m->n_sents; i++) {
        float *x = ds->res[0] + (size_t)m->d_row[i] * Cd;
        const float *p = ds->wpe + (size_t)m->d_pos[i] * Cd;
        for (int k = 0; k < Cd; k++) x[k] += p[k];
    }
    lc_dropout_forward(ds->res[0], ds->res[0], (size_t)ds->rows * Cd, embed_dropout(m, train),
                       lc_hibert_step_seed(m, SEED_EMBED + 1));
    m->doc_out = lc_enc_stack_forward(ds, &env, train);
    return LC_OK;
}

lc_status lc_hibert_encode(lc_hibert *m, const lc_hibert_batch *b, int train) {
    lc_status st = lc_hibert_check_batch(m, b);
    if (st) return st;
    m->n_docs = b->n_docs;
    m->n_sents = 0;
    for (int j = 0; j < b->n_docs; j++) m->n_sents += b->n_sents[j];
    if ((st = lc_hibert_sentences_forward(m, m->n_sents, b->sent, b->sent_len, train))) return st;
    return lc_hibert_documents_forward(m, b, NULL, train);
}

void lc_hibert_documents_backward(lc_hibert *m, const int *vec) {
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT], *ds = &m->st[LC_HIBERT_DOC];
    const int Cs = ss->cfg.d_model, Cd = ds->cfg.d_model;
    const lc_pass_env env = lc_hibert_env(m);
    lc_threads_use(m->threads);
    lc_enc_stack_backward(ds, &env, m->cur_train);
    lc_dropout_backward(ds->dres, ds->dres, (size_t)ds->rows * Cd, embed_dropout(m, m->cur_train),
                        lc_hibert_step_seed(m, SEED_EMBED + 1));
    for (int i = 0; i < m->n_sents; i++) { /* positions: serial, a fixed order */
        const float *d = ds->dres + (size_t)m->d_row[i] * Cd;
        float *g = ds->g_wpe + (size_t)m->d_pos[i] * Cd;
        for (int k = 0; k < Cd; k++) g[k] += d[k];
    }
    if (m->in_w) {
        memset(m->d_doc_in, 0, sizeof(float) * (size_t)ds->rows * Cs);
        lc_linear_backward(m->d_doc_in, m->g_in_w, m->g_in_b, ds->dres, m->doc_in, m->in_w, ds->rows, Cs, Cd);
    } else {
        memcpy(m->d_doc_in, ds->dres, sizeof(float) * (size_t)ds->rows * Cd);
    }
    if (m->cfg.sent_words) { /* the word vectors (serial, a fixed order), then the centring's backward */
        for (int i = 0; i < m->n_sents; i++) lc_hibert_words_backward(m, m->d_doc_in + (size_t)m->d_row[i] * Cs, vec ? vec[i] : i);
        lc_hibert_centre_documents(m, m->d_doc_in);
    }
    /* the sentence encoder's final hidden state gets gradient at the EOS rows only */
    for (int i = 0; i < m->n_sents; i++) {
        float *g = ss->dh + (size_t)m->s_row[vec ? vec[i] : i] * Cs;
        const float *d = m->d_doc_in + (size_t)m->d_row[i] * Cs;
        for (int k = 0; k < Cs; k++) g[k] += d[k];
    }
}

void lc_hibert_sentences_backward(lc_hibert *m) {
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT];
    const int Cs = ss->cfg.d_model;
    const lc_pass_env env = lc_hibert_env(m);
    lc_threads_use(m->threads);
    lc_enc_stack_backward(ss, &env, m->cur_train);
    lc_dropout_backward(ss->dres, ss->dres, (size_t)ss->rows * Cs, embed_dropout(m, m->cur_train),
                        lc_hibert_step_seed(m, SEED_EMBED));
    lc_embed_rows_backward(m->g_wte, ss->g_wpe, ss->dres, m->tok, m->pos, ss->rows, Cs);
}

void lc_hibert_encode_backward(lc_hibert *m) {
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT];
    memset(ss->dh, 0, sizeof(float) * (size_t)ss->rows * ss->cfg.d_model);
    lc_hibert_documents_backward(m, NULL);
    lc_hibert_sentences_backward(m);
}
