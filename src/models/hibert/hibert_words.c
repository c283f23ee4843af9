/* HIBERT's hashed word vectors (cfg.sent_words; longctx's, not the paper's): each sentence's words (maximal
 * runs of ASCII letters and digits, lower-cased, as ROUGE tokenizes) are hashed into sent.words buckets,
 * and their vectors, summed and divided by the square root of the word count, are added to the sentence's
 * EOS state before the document encoder; the EOS states are first centred on their document's mean, which
 * removes the one vector that every trained EOS state shares (it hid the words' differences from the
 * document encoder). With the N(0, 1) initialisation, the dot product of two such bags over the width is
 * about the cosine similarity of the two sentences' word sets: the overlap of vocabulary that byte-level
 * EOS states lose (experiments/hibert-words/README.md). */
#include <math.h>

#include "models/hibert/hibert.h"

/* FNV-1a, 32 bits: the offset basis, and one byte more. */
#define FNV_BASIS 2166136261u
static uint32_t fnv1a(uint32_t h, uint8_t c) { return (h ^ c) * 16777619u; }

int lc_hibert_word_bucket(const uint8_t *word, int len, int buckets) {
    uint32_t h = FNV_BASIS;
    for (int i = 0; i < len; i++) h = fnv1a(h, word[i]);
    return buckets > 0 ? (int)(h % (uint32_t)buckets) : 0;
}

static int word_byte(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c; }

void lc_hibert_words_collect(lc_hibert *m, int n, const uint8_t *const *sent, const int *len) {
    int w = 0;
    for (int i = 0; i < n; i++) {
        m->word_start[i] = w;
        if (m->enc_masked && m->enc_masked[i]) continue;
        const int L = lc_hibert_clipped_len(m, len[i]);
        for (int t = 0; t < L;) {
            if (!word_byte(lower(sent[i][t]))) { t++; continue; }
            uint32_t h = FNV_BASIS; /* lc_hibert_word_bucket of the lower-cased run, a byte at a time */
            for (; t < L && word_byte(lower(sent[i][t])); t++) h = fnv1a(h, lower(sent[i][t]));
            m->word_id[w++] = (int)(h % (uint32_t)m->cfg.sent_words);
        }
    }
    m->word_start[n] = w;
}

void lc_hibert_words_add(const lc_hibert *m, float *dst, int i) {
    const int C = m->cfg.sent.d_model, a = m->word_start[i], b = m->word_start[i + 1];
    if (a == b) return;
    const float scale = 1.0f / sqrtf((float)(b - a));
    for (int k = a; k < b; k++) {
        const float *v = m->words + (size_t)m->word_id[k] * C;
        for (int c = 0; c < C; c++) dst[c] += scale * v[c];
    }
}

void lc_hibert_words_backward(lc_hibert *m, const float *d, int i) {
    const int C = m->cfg.sent.d_model, a = m->word_start[i], b = m->word_start[i + 1];
    if (a == b) return;
    const float scale = 1.0f / sqrtf((float)(b - a));
    for (int k = a; k < b; k++) {
        float *g = m->g_words + (size_t)m->word_id[k] * C;
        for (int c = 0; c < C; c++) g[c] += scale * d[c];
    }
}

void lc_hibert_centre_documents(const lc_hibert *m, float *x) {
    const int C = m->cfg.sent.d_model;
    for (int j = 0; j < m->n_docs; j++) {
        const int s0 = m->doc_first[j], s1 = j + 1 < m->n_docs ? m->doc_first[j + 1] : m->n_sents;
        for (int c = 0; c < C; c++) {
            double sum = 0;
            for (int i = s0; i < s1; i++) sum += x[(size_t)m->d_row[i] * C + c];
            const float mean = (float)(sum / (s1 - s0));
            for (int i = s0; i < s1; i++) x[(size_t)m->d_row[i] * C + c] -= mean;
        }
    }
}
