/* The vanilla encoder-decoder over sets of pairs (include/longctx/seq2seq.h): greedy generation of many
 * sources in batches of the model's planned size, the exact-match and character-accuracy measures of a
 * validation or `longctx eval --task seq2seq`, and the flat calls of the Python binding. */
#include <stdlib.h>
#include <string.h>

#include "models/seq2seq/seq2seq.h"

/* Generates sources idx[0 .. n) (n <= max_pairs) of src into buf (row k at k * max_tgt_len), len[k]. */
static lc_status gen_chunk(lc_seq2seq *m, const long *idx, int n, const uint8_t *const *src, const size_t *src_len,
                           uint8_t *buf, int *len) {
    const uint8_t *s[n];
    int sl[n];
    for (int k = 0; k < n; k++) {
        const long i = idx[k];
        if (src_len[i] > (size_t)m->cfg.max_src_len)
            return lc_fail(LC_ERR_ARG, "seq2seq: source %ld has %zu bytes, the model reads at most %d", i + 1, src_len[i],
                           m->cfg.max_src_len);
        s[k] = src[i], sl[k] = (int)src_len[i];
    }
    const lc_seq2seq_batch b = {n, s, sl, NULL, NULL};
    return lc_seq2seq_generate(m, &b, m->cfg.max_tgt_len, buf, len);
}

lc_status lc_seq2seq_generate_set(lc_seq2seq *m, long n, const uint8_t *const *src, const size_t *src_len,
                                  uint8_t *out, int *out_len) {
    lc_clear_error();
    if (n < 0 || (n > 0 && (!src || !src_len || !out || !out_len)))
        return lc_fail(LC_ERR_ARG, "seq2seq generate: sources, their lengths and the outputs are required");
    long *idx = malloc(sizeof(long) * (size_t)m->max_pairs);
    if (!idx) return lc_fail(LC_ERR_NOMEM, "out of memory generating");
    lc_status st = LC_OK;
    const size_t T = (size_t)m->cfg.max_tgt_len;
    for (long s = 0; s < n && !st; s += m->max_pairs) {
        const int k = (int)(n - s < m->max_pairs ? n - s : m->max_pairs);
        for (int j = 0; j < k; j++) idx[j] = s + j;
        st = gen_chunk(m, idx, k, src, src_len, out + (size_t)s * T, out_len + s);
    }
    free(idx);
    return st;
}

/* Positions of target + EOS that output + EOS has in place (*right) out of the longer of the two (*all). */
static void compare(const uint8_t *out, int out_len, const uint8_t *tgt, size_t tgt_len, long *right, long *all) {
    const long lo = (long)tgt_len, go = out_len;
    const long shorter = lo < go ? lo : go;
    long r = 0;
    for (long t = 0; t < shorter; t++) r += out[t] == tgt[t];
    *right += r + (lo == go); /* the EOS in place */
    *all += (lo > go ? lo : go) + 1;
}

lc_status lc_seq2seq_tally(lc_seq2seq *m, const lc_pair_data *d, int rank, int ranks, double t[4]) {
    memset(t, 0, 4 * sizeof *t);
    const size_t T = (size_t)m->cfg.max_tgt_len;
    long *idx = malloc(sizeof(long) * (size_t)m->max_pairs);
    uint8_t *buf = malloc(T * (size_t)m->max_pairs);
    int *len = malloc(sizeof(int) * (size_t)m->max_pairs);
    lc_status st = idx && buf && len ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory scoring");
    long i = rank, right = 0, all = 0, exact = 0, pairs = 0;
    while (!st && i < d->n) {
        int k = 0;
        for (; k < m->max_pairs && i < d->n; i += ranks) idx[k++] = i;
        if ((st = gen_chunk(m, idx, k, d->src, d->src_len, buf, len))) break;
        for (int j = 0; j < k; j++) {
            const long p = idx[j];
            const uint8_t *o = buf + (size_t)j * T;
            compare(o, len[j], d->tgt[p], d->tgt_len[p], &right, &all);
            exact += (size_t)len[j] == d->tgt_len[p] && memcmp(o, d->tgt[p], d->tgt_len[p]) == 0;
        }
        pairs += k;
    }
    t[0] = (double)pairs, t[1] = (double)exact, t[2] = (double)right, t[3] = (double)all;
    free(idx), free(buf), free(len);
    return st;
}

lc_status lc_seq2seq_evaluate(lc_seq2seq *m, const lc_pair_data *d, double *exact_match, double *char_accuracy) {
    lc_clear_error();
    if (!d || d->n < 1) return lc_fail(LC_ERR_ARG, "seq2seq evaluate: no pairs");
    double t[4];
    lc_status st = lc_seq2seq_tally(m, d, 0, 1, t);
    if (st) return st;
    if (exact_match) *exact_match = t[1] / t[0];
    if (char_accuracy) *char_accuracy = t[2] / t[3];
    return LC_OK;
}

void lc_seq2seq_max_lengths(const lc_seq2seq *m, int *max_src_len, int *max_tgt_len) {
    if (max_src_len) *max_src_len = m->cfg.max_src_len;
    if (max_tgt_len) *max_tgt_len = m->cfg.max_tgt_len;
}

lc_status lc_seq2seq_generate_one(lc_seq2seq *m, const uint8_t *src, int src_len, uint8_t *out, int *out_len) {
    lc_clear_error();
    if (!m || src_len < 0 || (src_len > 0 && !src) || !out || !out_len)
        return lc_fail(LC_ERR_ARG, "seq2seq generate: a model, a source of >= 0 bytes and the outputs are required");
    const long i = 0;
    const size_t len = (size_t)src_len;
    return gen_chunk(m, &i, 1, &src, &len, out, out_len);
}
