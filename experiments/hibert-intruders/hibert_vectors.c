/* How much of HIBERT's sentence vectors is one vector shared by every sentence (experiments/hibert-intruders/README.md, "Sentence
 * intruders"): the sentence encoder's EOS state (after its final LayerNorm) for every sentence of the first
 * 8 articles of a BBC root's valid split, then the share of their mean in their mean squared norm and the
 * mean pairwise cosine before and after removing that mean. A share near 1 leaves little of a sentence's
 * content for the document encoder to compare.
 *   usage: build/release/experiments/hibert-intruders/hibert_vectors CKPT|fresh [BBC_ROOT]   (default data/bbc-news-summary) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "longctx.h"
#include "models/hibert/hibert.h"

enum { DOCS = 8, MAX_SENTS = 64 };

/* The share of the mean of v's N rows in their mean squared norm and their mean pairwise cosine, before and
 * after removing that mean. */
static void report(const char *ckpt, const char *what, const double *v, int N, int C) {
    double *mean = calloc((size_t)C, sizeof(double));
    for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++) mean[k] += v[(size_t)i * C + k] / N;
    double norm2 = 0, mean2 = 0, cosine[2] = {0, 0};
    for (int k = 0; k < C; k++) mean2 += mean[k] * mean[k];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++) norm2 += v[(size_t)i * C + k] * v[(size_t)i * C + k] / N;
    for (int centred = 0; centred < 2; centred++)
        for (int i = 0; i < N; i++)
            for (int j = i + 1; j < N; j++) {
                double dot = 0, a = 0, c = 0;
                for (int k = 0; k < C; k++) {
                    const double x = v[(size_t)i * C + k] - centred * mean[k], y = v[(size_t)j * C + k] - centred * mean[k];
                    dot += x * y, a += x * x, c += y * y;
                }
                cosine[centred] += dot / sqrt(a * c + 1e-300) / ((double)N * (N - 1) / 2);
            }
    printf("%s (%s): %d sentences, share of the mean in the squared norm %.4f, mean pairwise cosine %.4f "
           "(centred %.4f)\n", ckpt, what, N, mean2 / norm2, cosine[0], cosine[1]);
    free(mean);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s CKPT|fresh [BBC_ROOT]\n", argv[0]);
        return 2;
    }
    lc_doc_list list;
    lc_document doc[DOCS];
    const uint8_t *sent[DOCS * MAX_SENTS];
    int len[DOCS * MAX_SENTS], n_sents[DOCS], n = 0, docs = 0;
    lc_status st = lc_doc_list_open(argc > 2 ? argv[2] : "data/bbc-news-summary", LC_PART_VALID, &list);
    for (; !st && docs < DOCS && docs < list.n; docs++) {
        if ((st = lc_document_read(list.article[docs], NULL, &doc[docs]))) break;
        n_sents[docs] = doc[docs].sents.n < MAX_SENTS ? doc[docs].sents.n : MAX_SENTS;
        for (int i = 0; i < n_sents[docs]; i++, n++)
            sent[n] = (const uint8_t *)doc[docs].sents.sent[i], len[n] = (int)strlen(doc[docs].sents.sent[i]);
    }
    lc_hibert_limits lim = {DOCS, DOCS * MAX_SENTS, 0, 0, 1};
    lc_hibert *m = NULL;
    if (!st && strcmp(argv[1], "fresh") == 0) {
        lc_hibert_config c;
        lc_hibert_config_default(&c);
        c.max_sents = MAX_SENTS;
        st = lc_hibert_create(&c, &lim, 1337, &m);
    } else if (!st) {
        st = lc_hibert_load(argv[1], &lim, &m, NULL);
    }
    const lc_hibert_batch b = {docs, n_sents, sent, len};
    if (st || (st = lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL))) {
        fprintf(stderr, "hibert_vectors: %s\n", lc_last_error());
        return 1;
    }
    const int C = m->st[LC_HIBERT_SENT].cfg.d_model;
    double *v = calloc((size_t)n * C, sizeof(double));
    for (int i = 0; i < n; i++)
        for (int k = 0; k < C; k++) v[(size_t)i * C + k] = m->sent_out[(size_t)m->s_row[i] * C + k];
    report(argv[1], "EOS states", v, n, C);
    if (m->cfg.sent_words) { /* the document encoder's input: EOS state + hashed word vectors */
        for (int i = 0; i < n; i++)
            for (int k = 0; k < C; k++) v[(size_t)i * C + k] = m->doc_in[(size_t)m->d_row[i] * C + k];
        report(argv[1], "EOS + words", v, n, C);
    }
    free(v);
    lc_hibert_free(m);
    for (int j = 0; j < docs; j++) lc_document_free(&doc[j]);
    lc_doc_list_free(&list);
    return 0;
}
