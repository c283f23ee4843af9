/* Sentence labels for extractive summarization: "contained" (the sentence occurs verbatim in the
 * reference) and the greedy ROUGE oracle of SummaRuNNer / HIBERT (add the sentence that most increases
 * ROUGE-1 F1 + ROUGE-2 F1 of the selection against the reference, until none does).
 * The oracle keeps the chosen sentences' counts of every reference n-gram, so trying a sentence costs its
 * own tokens (plus the bigrams it makes with its chosen neighbours), not a rescoring of the whole
 * selection: a round is O(document tokens), and a 250-sentence article takes milliseconds. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "summ/summ.h"

/* Margin below which a gain counts as none: scores are sums of two ratios of integers, and a candidate
 * that ties with an earlier one (or with no change) must lose on every machine. */
#define GAIN_EPS 1e-12

typedef struct {
    int n;               /* sentences */
    int **ids, *len;     /* tokens of each sentence */
    int **uni, **bi;     /* per sentence: reference unigram index of each token, reference bigram index of
                          * each internal bigram (-1: not in the reference) */
    int *ref, nref;      /* tokens of the reference */
    uint64_t *keys[2];
    int *counts[2], m[2]; /* distinct reference unigrams / bigrams and their counts */
    int *have[2];        /* counts of those n-grams in the chosen sentences */
    long overlap[2];     /* sum of min(have, counts) */
    lc_vocab v;
} oracle;

static void oracle_free(oracle *o) {
    for (int i = 0; i < o->n; i++) {
        if (o->ids) free(o->ids[i]);
        if (o->uni) free(o->uni[i]);
        if (o->bi) free(o->bi[i]);
    }
    free(o->ids);
    free(o->uni);
    free(o->bi);
    free(o->len);
    free(o->ref);
    for (int k = 0; k < 2; k++) {
        free(o->keys[k]);
        free(o->counts[k]);
        free(o->have[k]);
    }
    lc_vocab_free(&o->v);
}

/* Index of key among the sorted distinct reference n-grams, -1 when absent. */
static int find(const uint64_t *keys, int m, uint64_t key) {
    int lo = 0, hi = m - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid] == key) return mid;
        if (keys[mid] < key) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Index of the reference bigram (a, b), -1 when absent. */
static int bigram(const oracle *o, int a, int b) {
    return find(o->keys[1], o->m[1], (uint64_t)(uint32_t)a << 32 | (uint32_t)b);
}

/* Adds d (+1 or -1) to the chosen count of reference n-gram g (n = k + 1), keeping the overlap. */
static void bump(oracle *o, int k, int g, int d) {
    if (g < 0) return;
    if (d > 0 && o->have[k][g] < o->counts[k][g]) o->overlap[k]++;
    o->have[k][g] += d;
    if (d < 0 && o->have[k][g] < o->counts[k][g]) o->overlap[k]--;
}

/* Adds (d = +1) or removes (d = -1) sentence i, chosen neighbours prev and next (-1: none), from the
 * chosen counts: its unigrams and internal bigrams, the bigrams it makes with its neighbours, and
 * (reversed) the bigram the neighbours made with each other. */
static void apply(oracle *o, int i, int prev, int next, int d) {
    for (int t = 0; t < o->len[i]; t++) bump(o, 0, o->uni[i][t], d);
    for (int t = 0; t + 1 < o->len[i]; t++) bump(o, 1, o->bi[i][t], d);
    const int *s = o->ids[i];
    int first = s[0], last = s[o->len[i] - 1];
    if (prev >= 0) bump(o, 1, bigram(o, o->ids[prev][o->len[prev] - 1], first), d);
    if (next >= 0) bump(o, 1, bigram(o, last, o->ids[next][0]), d);
    if (prev >= 0 && next >= 0) bump(o, 1, bigram(o, o->ids[prev][o->len[prev] - 1], o->ids[next][0]), -d);
}

/* ROUGE-1 F1 + ROUGE-2 F1 of a selection of L tokens with the current overlaps. */
static double score(const oracle *o, long L) {
    return lc_rouge_prf_of(o->overlap[0], L, o->nref).f1 +
           lc_rouge_prf_of(o->overlap[1], L > 1 ? L - 1 : 0, o->nref > 1 ? o->nref - 1 : 0).f1;
}

static lc_status greedy(const char *const *sent, int n, const char *reference, uint8_t *labels) {
    oracle o = {0};
    lc_status st;
    int *prev = NULL, *next = NULL;
    o.n = n;
    o.ids = calloc((size_t)n, sizeof *o.ids);
    o.uni = calloc((size_t)n, sizeof *o.uni);
    o.bi = calloc((size_t)n, sizeof *o.bi);
    o.len = calloc((size_t)n, sizeof *o.len);
    prev = malloc((size_t)n * sizeof *prev);
    next = malloc((size_t)n * sizeof *next);
    if (!o.ids || !o.uni || !o.bi || !o.len || !prev || !next) {
        st = lc_fail(LC_ERR_NOMEM, "oracle: out of memory for %d sentences", n);
        goto done;
    }
    if ((st = lc_rouge_tokenize(reference, &o.v, &o.ref, &o.nref))) goto done;
    for (int k = 0; k < 2; k++) {
        if ((st = lc_ngram_counts(o.ref, o.nref, k + 1, &o.keys[k], &o.counts[k], &o.m[k]))) goto done;
        if (!(o.have[k] = calloc((size_t)o.m[k] + 1, sizeof *o.have[k]))) {
            st = lc_fail(LC_ERR_NOMEM, "oracle: out of memory for %d n-grams", o.m[k]);
            goto done;
        }
    }
    for (int i = 0; i < n; i++) {
        if ((st = lc_rouge_tokenize(sent[i], &o.v, &o.ids[i], &o.len[i]))) goto done;
        int L = o.len[i];
        o.uni[i] = malloc(((size_t)L + 1) * sizeof *o.uni[i]);
        o.bi[i] = malloc(((size_t)L + 1) * sizeof *o.bi[i]);
        if (!o.uni[i] || !o.bi[i]) {
            st = lc_fail(LC_ERR_NOMEM, "oracle: out of memory for %d tokens", L);
            goto done;
        }
        for (int t = 0; t < L; t++) o.uni[i][t] = find(o.keys[0], o.m[0], (uint64_t)(uint32_t)o.ids[i][t]);
        for (int t = 0; t + 1 < L; t++) o.bi[i][t] = bigram(&o, o.ids[i][t], o.ids[i][t + 1]);
    }
    double current = 0;
    long chosen_tokens = 0;
    for (;;) {
        /* the nearest chosen sentence before and after each position */
        for (int i = 0, p = -1; i < n; i++) {
            prev[i] = p;
            if (labels[i]) p = i;
        }
        for (int i = n - 1, q = -1; i >= 0; i--) {
            next[i] = q;
            if (labels[i]) q = i;
        }
        int best = -1;
        double best_score = 0;
        for (int i = 0; i < n; i++) {
            if (labels[i] || o.len[i] == 0) continue;
            apply(&o, i, prev[i], next[i], +1);
            double s = score(&o, chosen_tokens + o.len[i]);
            apply(&o, i, prev[i], next[i], -1);
            if (best < 0 || s > best_score + GAIN_EPS) { /* ties: the earliest sentence */
                best_score = s;
                best = i;
            }
        }
        if (best < 0 || best_score <= current + GAIN_EPS) break;
        apply(&o, best, prev[best], next[best], +1);
        labels[best] = 1;
        chosen_tokens += o.len[best];
        current = best_score;
    }
done:
    free(prev);
    free(next);
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
