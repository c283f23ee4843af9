/* LexRank (Erkan and Radev 2004), the graph-centrality baseline of extractive summarization that
 * docs/results/summarization.md compares HIBERT with: inverse document frequencies of ROUGE tokens over a collection,
 * idf-modified cosine between a document's sentences, and the stationary distribution of a damped random
 * walk on the thresholded similarity graph; and the sentence features HIBERT's head may read (position, length,
 * LexRank centrality, word frequency: src/summ/frequency.c). Tokens are kept as 64-bit hashes
 * (lc_rouge_token_hashes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "summ/summ.h"

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sorted hashes of text's tokens in *out (free() it; NULL when there are none), their count in *n. */
static lc_status sorted_tokens(const char *text, uint64_t **out, int *n) {
    *n = lc_rouge_token_hashes(text, NULL);
    *out = NULL;
    if (*n == 0) return LC_OK;
    if (!(*out = malloc(sizeof **out * (size_t)*n))) return lc_fail(LC_ERR_NOMEM, "lexrank: out of memory");
    lc_rouge_token_hashes(text, *out);
    qsort(*out, (size_t)*n, sizeof **out, cmp_u64);
    return LC_OK;
}

void lc_idf_free(lc_idf *idf) {
    free(idf->key);
    free(idf->df);
    memset(idf, 0, sizeof *idf);
}

lc_status lc_idf_build(const char *const *texts, int n, lc_idf *out) {
    memset(out, 0, sizeof *out);
    uint64_t *all = NULL;
    size_t used = 0, cap = 0;
    for (int t = 0; t < n; t++) {
        uint64_t *tok;
        int m;
        lc_status st = sorted_tokens(texts[t], &tok, &m);
        if (st) {
            free(all);
            return st;
        }
        for (int i = 0; i < m; i++) {
            if (i > 0 && tok[i] == tok[i - 1]) continue; /* once per text */
            if (used == cap) {
                cap = cap ? 2 * cap : 4096;
                uint64_t *grown = realloc(all, cap * sizeof *all);
                if (!grown) {
                    free(tok);
                    free(all);
                    return lc_fail(LC_ERR_NOMEM, "lexrank: out of memory for the idf table");
                }
                all = grown;
            }
            all[used++] = tok[i];
        }
        free(tok);
    }
    if (used) qsort(all, used, sizeof *all, cmp_u64);
    out->key = malloc(sizeof *out->key * (used ? used : 1));
    out->df = malloc(sizeof *out->df * (used ? used : 1));
    if (!out->key || !out->df) {
        free(all);
        lc_idf_free(out);
        return lc_fail(LC_ERR_NOMEM, "lexrank: out of memory for the idf table");
    }
    for (size_t i = 0; i < used; i++) {
        if (out->n > 0 && out->key[out->n - 1] == all[i]) {
            out->df[out->n - 1]++;
            continue;
        }
        out->key[out->n] = all[i];
        out->df[out->n++] = 1;
    }
    free(all);
    out->n_texts = n;
    return LC_OK;
}

double lc_idf_of(const lc_idf *idf, uint64_t key) {
    const uint64_t *hit = idf->n ? bsearch(&key, idf->key, (size_t)idf->n, sizeof key, cmp_u64) : NULL;
    const double N = idf->n_texts > 0 ? idf->n_texts : 1;
    return hit ? log(N / idf->df[hit - idf->key]) : log(N);
}

/* One sentence as distinct token hashes (increasing) with weights count x idf, and the weights' norm. */
typedef struct {
    uint64_t *key;
    double *w;
    int n;
    double norm;
} bag;

static lc_status make_bag(const char *text, const lc_idf *idf, bag *b) {
    memset(b, 0, sizeof *b);
    uint64_t *tok;
    int m;
    lc_status st = sorted_tokens(text, &tok, &m);
    if (st || m == 0) return st;
    b->key = tok; /* distinct keys are compacted in place */
    if (!(b->w = malloc(sizeof *b->w * (size_t)m))) return lc_fail(LC_ERR_NOMEM, "lexrank: out of memory");
    for (int i = 0; i < m; i++) {
        if (b->n > 0 && b->key[b->n - 1] == tok[i]) {
            b->w[b->n - 1] += 1;
            continue;
        }
        b->key[b->n] = tok[i];
        b->w[b->n++] = 1;
    }
    double sq = 0;
    for (int i = 0; i < b->n; i++) {
        b->w[i] *= lc_idf_of(idf, b->key[i]);
        sq += b->w[i] * b->w[i];
    }
    b->norm = sqrt(sq);
    return LC_OK;
}

static double cosine(const bag *a, const bag *b) {
    if (a->norm == 0 || b->norm == 0) return 0;
    double dot = 0;
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
        if (a->key[i] < b->key[j]) i++;
        else if (a->key[i] > b->key[j]) j++;
        else dot += a->w[i++] * b->w[j++];
    }
    return dot / (a->norm * b->norm);
}

lc_status lc_lexrank_scores(const char *const *sent, int n, const lc_idf *idf, double threshold, double damping,
                            double *scores) {
    if (n <= 0) return LC_OK;
    bag *bags = calloc((size_t)n, sizeof *bags);
    uint8_t *edge = malloc((size_t)n * (size_t)n);
    double *deg = malloc(sizeof *deg * (size_t)n), *next = malloc(sizeof *next * (size_t)n);
    lc_status st = bags && edge && deg && next ? LC_OK : lc_fail(LC_ERR_NOMEM, "lexrank: out of memory");
    for (int i = 0; i < n && !st; i++) st = make_bag(sent[i], idf, &bags[i]);
    if (!st) {
        for (int i = 0; i < n; i++) deg[i] = 0;
        for (int i = 0; i < n; i++) /* the cosine is symmetric: each pair once */
            for (int j = i; j < n; j++) {
                const uint8_t e = cosine(&bags[i], &bags[j]) > threshold;
                edge[(size_t)i * n + j] = edge[(size_t)j * n + i] = e;
                deg[i] += e;
                if (j != i) deg[j] += e;
            }
        for (int i = 0; i < n; i++) scores[i] = 1.0 / n;
        for (int round = 0; round < 1000; round++) {
            /* next[j] = (1 - d) / n + d sum_i p[i] walk[i][j]; walk's row i: edges / deg, uniform without edges */
            double spread = 0;
            for (int i = 0; i < n; i++)
                if (deg[i] == 0) spread += scores[i] / n;
            for (int j = 0; j < n; j++) next[j] = spread;
            for (int i = 0; i < n; i++)
                if (deg[i] > 0)
                    for (int j = 0; j < n; j++)
                        if (edge[(size_t)i * n + j]) next[j] += scores[i] / deg[i];
            double change = 0;
            for (int j = 0; j < n; j++) {
                next[j] = (1 - damping) / n + damping * next[j];
                change += fabs(next[j] - scores[j]);
                scores[j] = next[j];
            }
            if (change < 1e-8) break;
        }
    }
    for (int i = 0; bags && i < n; i++) {
        free(bags[i].key);
        free(bags[i].w);
    }
    free(bags);
    free(edge);
    free(deg);
    free(next);
    return st;
}

lc_status lc_summary_features(const char *const *sent, int n, int features, float *out) {
    lc_clear_error();
    if (features < 1 || features > LC_SUMMARY_FEATURES)
        return lc_fail(LC_ERR_ARG, "features: %d features a sentence asked; there are 1 to %d", features,
                       LC_SUMMARY_FEATURES);
    if (n <= 0) return LC_OK;
    lc_idf idf;
    double *score = malloc(sizeof *score * 2 * (size_t)n), *freq = score ? score + n : NULL;
    lc_status st = score ? lc_idf_build(sent, n, &idf) : lc_fail(LC_ERR_NOMEM, "features: out of memory");
    if (!st) {
        st = lc_lexrank_scores(sent, n, &idf, 0.1, 0.85, score);
        lc_idf_free(&idf);
    }
    if (!st && features > 3) st = lc_frequency_scores(sent, n, freq);
    double freq_mean = 0;
    for (int i = 0; i < n && !st && features > 3; i++) freq_mean += freq[i] / n;
    for (int i = 0; i < n && !st; i++) {
        const double all[LC_SUMMARY_FEATURES] = {1.0 / (1 + i), log1p((double)lc_rouge_token_hashes(sent[i], NULL)) / 4,
                                                 n * score[i], features > 3 && freq_mean > 0 ? freq[i] / freq_mean : 0};
        for (int f = 0; f < features; f++) out[(size_t)features * i + f] = (float)all[f];
    }
    free(score);
    return st;
}
