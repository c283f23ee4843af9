/* Sentence labels for extractive summarization: "contained" (the sentence occurs verbatim in the
 * reference) and the greedy ROUGE oracle of SummaRuNNer / HIBERT (add the sentence that most increases
 * ROUGE-1 F1 + ROUGE-2 F1 of the selection against the reference, until none does). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "summ/summ.h"

/* Margin below which a gain counts as none: scores are sums of two ratios of integers, and a candidate
 * that ties with an earlier one (or with no change) must lose on every machine. */
#define GAIN_EPS 1e-12

typedef struct {
    int n;            /* sentences */
    int **ids, *len;  /* tokens of each sentence */
    int *ref, nref;   /* tokens of the reference */
    uint64_t *keys[2];
    int *counts[2], m[2]; /* reference unigram / bigram counts */
    int *cand;        /* candidate token buffer (all sentence tokens) */
    uint64_t *scratch;
    lc_vocab v;
} oracle;

static void oracle_free(oracle *o) {
    for (int i = 0; i < o->n && o->ids; i++) free(o->ids[i]);
    free(o->ids);
    free(o->len);
    free(o->ref);
    for (int k = 0; k < 2; k++) {
        free(o->keys[k]);
        free(o->counts[k]);
    }
    free(o->cand);
    free(o->scratch);
    lc_vocab_free(&o->v);
}

/* ROUGE-1 F1 + ROUGE-2 F1 of the chosen sentences (pick, plus sentence `extra` when >= 0) joined in
 * document order. */
static double oracle_score(oracle *o, const uint8_t *pick, int extra) {
    int L = 0;
    for (int i = 0; i < o->n; i++) {
        if (!pick[i] && i != extra) continue;
        if (o->len[i]) memcpy(o->cand + L, o->ids[i], (size_t)o->len[i] * sizeof *o->cand);
        L += o->len[i];
    }
    double s = 0;
    for (int n = 1; n <= 2; n++) {
        long overlap = lc_ngram_overlap(o->cand, L, n, o->keys[n - 1], o->counts[n - 1], o->m[n - 1], o->scratch);
        s += lc_rouge_prf_of(overlap, L >= n ? L - n + 1 : 0, o->nref >= n ? o->nref - n + 1 : 0).f1;
    }
    return s;
}

static lc_status greedy(const char *const *sent, int n, const char *reference, uint8_t *labels) {
    oracle o = {0};
    lc_status st;
    o.n = n;
    o.ids = calloc((size_t)n, sizeof *o.ids);
    o.len = calloc((size_t)n, sizeof *o.len);
    if (!o.ids || !o.len) { st = lc_fail(LC_ERR_NOMEM, "oracle: out of memory for %d sentences", n); goto done; }
    if ((st = lc_rouge_tokenize(reference, &o.v, &o.ref, &o.nref))) goto done;
    long total = 0;
    for (int i = 0; i < n; i++) {
        if ((st = lc_rouge_tokenize(sent[i], &o.v, &o.ids[i], &o.len[i]))) goto done;
        total += o.len[i];
    }
    if (total > 0x3fffffff) { st = lc_fail(LC_ERR_ARG, "oracle: more than 2^30 tokens"); goto done; }
    for (int k = 0; k < 2; k++)
        if ((st = lc_ngram_counts(o.ref, o.nref, k + 1, &o.keys[k], &o.counts[k], &o.m[k]))) goto done;
    o.cand = malloc(((size_t)total + 1) * sizeof *o.cand);
    o.scratch = malloc(((size_t)total + 1) * sizeof *o.scratch);
    if (!o.cand || !o.scratch) { st = lc_fail(LC_ERR_NOMEM, "oracle: out of memory for %ld tokens", total); goto done; }
    double current = 0;
    for (;;) {
        int best = -1;
        double best_score = 0;
        for (int i = 0; i < n; i++) {
            if (labels[i] || o.len[i] == 0) continue;
            double s = oracle_score(&o, labels, i);
            if (best < 0 || s > best_score + GAIN_EPS) { /* ties: the earliest sentence */
                best_score = s;
                best = i;
            }
        }
        if (best < 0 || best_score <= current + GAIN_EPS) break;
        if (best < 0) break;
        labels[best] = 1;
        current = best_score;
    }
done:
    oracle_free(&o);
    return st;
}

lc_status lc_summary_labels(const char *const *sent, int n, const char *reference, lc_label_rule rule,
                            uint8_t *labels, int *count) {
    lc_clear_error();
    if (count) *count = 0;
    if (n < 0 || (n > 0 && (!sent || !labels)) || !reference)
        return lc_fail(LC_ERR_ARG, "labels: bad arguments (n = %d, NULL sentences, labels or reference)", n);
    if (rule != LC_LABELS_CONTAINED && rule != LC_LABELS_GREEDY)
        return lc_fail(LC_ERR_ARG, "labels: unknown rule %d", (int)rule);
    if (n == 0) return LC_OK;
    memset(labels, 0, (size_t)n);
    if (rule == LC_LABELS_CONTAINED) {
        for (int i = 0; i < n; i++) labels[i] = sent[i][0] && strstr(reference, sent[i]) != NULL;
    } else {
        lc_status st = greedy(sent, n, reference, labels);
        if (st) {
            memset(labels, 0, (size_t)n);
            return st;
        }
    }
    if (count)
        for (int i = 0; i < n; i++) *count += labels[i];
    return LC_OK;
}
