/* Sentence intruders: longctx's auxiliary pre-training objective for HIBERT's document encoder (not in the
 * paper; docs/hibert.md, "Sentence intruders"). Pairs of sentences of different documents of a batch swap
 * places, and the extraction head learns which sentences came from another document (binary
 * cross-entropy). A sentence that shares its document's words is hard to call an intruder, so the objective
 * asks the document encoder how much each sentence has in common with the rest of its document: the
 * centrality that extractive summaries follow. Swapping keeps every document's sentence count and the
 * batch's bytes, so any batch the model is planned for stays within its plan. */
#include <stdlib.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "model/hier.h"

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
    lc_status st = lc_hier_check_batch(m, b);
    if (st) return st;
    if ((st = lc_hibert_swap_sentences(b->n_docs, b->n_sents, rate, seed, m->source, m->action))) return st;
    long total = 0;
    for (int j = 0; j < b->n_docs; j++) total += b->n_sents[j];
    for (long i = 0; i < total; i++) m->enc_sent[i] = b->sent ? b->sent[m->source[i]] : NULL, m->enc_len[i] = b->sent_len[m->source[i]];
    const lc_hibert_batch view = {b->n_docs, b->n_sents, m->enc_sent, m->enc_len};
    return lc_hibert_extract_forward(m, &view, m->action, train, loss_sum, count);
}

lc_status lc_hibert_pretrain_step_intruders(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b,
                                            uint64_t seed, double rate, float weight, double *loss, double *intruder_bce) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    if (!(weight >= 0) || !(rate >= 0 && rate <= 1))
        return lc_fail(LC_ERR_ARG, "hibert intruders: rate must be 0..1 and weight >= 0, got %g and %g", rate, (double)weight);
    lc_hibert_zero_grad(m);
    double sum = 0;
    long n = 0;
    if (rate > 0 && weight > 0) {
        /* the intruders' view first: the masked-sentence pass below leaves the model ready for its own backward */
        if ((st = lc_hibert_intruder_forward(m, b, rate, lc_seed_mix(seed, LC_HIER_INTRUDER_STREAM), 1, &sum, &n))) return st;
        if ((st = lc_hibert_backward(m, weight / (float)n))) return st;
        if (intruder_bce) *intruder_bce = sum / (double)n;
    } else if (intruder_bce) {
        *intruder_bce = 0;
    }
    if ((st = lc_hibert_pretrain_forward(m, b, seed, 1, &sum, &n))) return st;
    if ((st = lc_hibert_backward(m, 1.0f / (float)n))) return st;
    return lc_hier_update(m, o, sum, n, loss);
}

void lc_hibert_flip_head(lc_hibert *m) {
    const int Cd = m->st[LC_HIER_DOC].cfg.d_model;
    for (int c = 0; c < Cd; c++) m->head_w[c] = -m->head_w[c];
    m->head_b[0] = -m->head_b[0];
}
