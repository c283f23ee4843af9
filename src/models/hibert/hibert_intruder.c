/* Sentence intruders: longctx's auxiliary pre-training objective for HIBERT's document encoder (not in the
 * paper; experiments/hibert-intruders/README.md). Pairs of sentences of different documents of a batch swap
 * places, and the extraction head learns which sentences are in their own document (label 1) and which came
 * from another (label 0; binary cross-entropy), so it scores a sentence the way extraction wants: the more it
 * belongs, the higher. A sentence that shares its document's words is hard to call an intruder, so the objective
 * asks the document encoder how much each sentence has in common with the rest of its document: the
 * centrality that extractive summaries follow. Swapping keeps every document's sentence count and the
 * batch's bytes, so any batch the model is planned for stays within its plan. The training step computes
 * it beside the masked sentences with one pass of the sentence encoder (step_passes). */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "models/hibert/hibert.h"

lc_status lc_hibert_swap_sentences(int n_docs, const int *n_sents, double rate, uint64_t seed, int *source,
                                   uint8_t *intruder) {
    lc_clear_error();
    if (n_docs < 1 || !n_sents || !source || !intruder)
        return lc_fail(LC_ERR_ARG, "hibert intruders: a batch of documents, source and intruder are required");
    if (!(rate >= 0 && rate <= 1)) return lc_fail(LC_ERR_ARG, "hibert intruders: the rate must be 0..1, got %g", rate);
    int total = 0;
    for (int j = 0; j < n_docs; j++) {
        if (n_sents[j] < 1) return lc_fail(LC_ERR_ARG, "hibert intruders: document %d has %d sentences", j, n_sents[j]);
        total += n_sents[j];
    }
    for (int i = 0; i < total; i++) source[i] = i, intruder[i] = 0;
    const int want = (int)(rate * total / 2 + 0.5);
    if (n_docs < 2 || want == 0) return LC_OK;
    int *pool = malloc(sizeof(int) * 2 * (size_t)total), *doc = pool + total;
    if (!pool) return lc_fail(LC_ERR_NOMEM, "hibert intruders: out of memory");
    for (int j = 0, i = 0; j < n_docs; j++)
        for (int k = 0; k < n_sents[j]; k++, i++) pool[i] = i, doc[i] = j;
    lc_rng r;
    lc_rng_seed(&r, seed);
    /* a: uniform among the sentences not yet swapped; b: uniform among those of them in other documents
     * (a is dropped when there is none: fewer pairs than asked when one document holds nearly all) */
    for (int done = 0, n = total; done < want && n >= 2;) {
        const int ia = (int)lc_rng_below(&r, (uint32_t)n), a = pool[ia];
        pool[ia] = pool[--n];
        int others = 0;
        for (int k = 0; k < n; k++) others += doc[pool[k]] != doc[a];
        if (!others) continue;
        int pick = (int)lc_rng_below(&r, (uint32_t)others), ib = 0;
        for (;; ib++)
            if (doc[pool[ib]] != doc[a] && pick-- == 0) break;
        const int b = pool[ib];
        pool[ib] = pool[--n];
        source[a] = b, source[b] = a, intruder[a] = intruder[b] = 1;
        done++;
    }
    free(pool);
    return LC_OK;
}

lc_status lc_hibert_intruder_forward(lc_hibert *m, const lc_hibert_batch *b, double rate, uint64_t seed, int train,
                                     double *loss_sum, long *count) {
    lc_clear_error();
    lc_status st = lc_hibert_check_batch(m, b);
    if (st) return st;
    if ((st = lc_hibert_swap_sentences(b->n_docs, b->n_sents, rate, seed, m->source, m->action))) return st;
    long total = 0;
    for (int j = 0; j < b->n_docs; j++) total += b->n_sents[j];
    for (long i = 0; i < total; i++) {
        m->enc_sent[i] = b->sent ? b->sent[m->source[i]] : NULL, m->enc_len[i] = b->sent_len[m->source[i]];
        m->action[i] = !m->action[i]; /* label 1: the sentence is in its own document */
    }
    const lc_hibert_batch view = {b->n_docs, b->n_sents, m->enc_sent, m->enc_len};
    return lc_hibert_extract_forward(m, &view, m->action, train, loss_sum, count);
}

/* The encoders' passes of a pre-training step with intruders, the sentence encoder run once: it reads the
 * masked view's sentences and, after them, the originals of those the masking rule changed (masked or
 * replaced), so that every original sentence has a vector. The document encoder then runs twice on those
 * vectors: on the batch with its swaps (the intruders' head and BCE, backward at once), then on the masked
 * view (the decoder). Both add their gradients to the sentence vectors: lc_hibert_backward then runs the
 * decoder's and the document encoder's backward and the sentence encoder's once (m->intruder_grads). The
 * same objective as lc_hibert_intruder_forward + lc_hibert_pretrain_forward. */
lc_status lc_hibert_pretrain_forward_intruders(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed, double rate,
                                            float weight, double *nll, long *targets, double *intruder_bce) {
    lc_status st = lc_hibert_pretrain_mask(m, b, seed);
    if (st) return st;
    lc_hibert_batch view;
    if ((st = lc_hibert_pretrain_view(m, b, NULL, NULL, &view))) return st;
    int n = 0;
    for (int j = 0; j < b->n_docs; j++) n += b->n_sents[j];
    m->n_docs = b->n_docs, m->n_sents = n;
    /* the originals of the changed sentences after the view's n; vec_row: each original's vector */
    int extra = n;
    for (int i = 0; i < n; i++) {
        if (m->action[i] == LC_HIBERT_MASKED || m->action[i] == LC_HIBERT_REPLACED) {
            m->enc_sent[extra] = b->sent ? b->sent[i] : NULL, m->enc_len[extra] = b->sent_len[i];
            m->enc_mask[extra] = 0, m->vec_row[i] = extra++;
        } else {
            m->vec_row[i] = i;
        }
    }
    m->enc_masked = m->enc_mask;
    st = lc_hibert_sentences_forward(m, extra, m->enc_sent, m->enc_len, 1);
    m->enc_masked = NULL;
    if (st) return st;
    lc_enc_stack *ss = &m->st[LC_HIBERT_SENT];
    memset(ss->dh, 0, sizeof(float) * (size_t)ss->rows * ss->cfg.d_model);
    /* the intruders: place i reads the original of its swap partner; label 1 where that is itself */
    if ((st = lc_hibert_swap_sentences(b->n_docs, b->n_sents, rate, lc_seed_mix(seed, LC_HIBERT_INTRUDER_STREAM),
                                       m->source, m->labels)))
        return st;
    for (int i = 0; i < n; i++) m->source[i] = m->vec_row[m->source[i]], m->labels[i] = !m->labels[i];
    double bce_sum = 0;
    if ((st = lc_hibert_documents_forward(m, b, m->source, 1)) || (st = lc_hibert_head_forward(m, m->labels, 0, &bce_sum)))
        return st;
    lc_hibert_head_backward(m, weight / (float)n);
    lc_hibert_documents_backward(m, m->source);
    *intruder_bce = bce_sum / n;
    /* the masked sentences: the view's vectors, the decoder */
    if ((st = lc_hibert_documents_forward(m, b, NULL, 1)) || (st = lc_hibert_pretrain_decode(m, b, 1, nll, targets))) {
        m->pretrained = 0;
        return st;
    }
    m->intruder_grads = 1;
    return LC_OK;
}

lc_status lc_hibert_pretrain_step_intruders(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b,
                                            uint64_t seed, double rate, float weight, double *loss, double *intruder_bce) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    if (!(weight >= 0) || !(rate >= 0 && rate <= 1))
        return lc_fail(LC_ERR_ARG, "hibert intruders: rate must be 0..1 and weight >= 0, got %g and %g", rate, (double)weight);
    lc_hibert_zero_grad(m);
    double sum = 0, ibce = 0;
    long n = 0;
    if ((st = rate > 0 && weight > 0 ? lc_hibert_pretrain_forward_intruders(m, b, seed, rate, weight, &sum, &n, &ibce)
                                     : lc_hibert_pretrain_forward(m, b, seed, 1, &sum, &n)))
        return st;
    if ((st = lc_hibert_backward(m, 1.0f / (float)n))) return st;
    if (intruder_bce) *intruder_bce = ibce;
    return lc_hibert_update(m, o, sum, n, loss);
}
