/* The masked-LM objective of the bidirectional encoder (BERT's rule on bytes): masking a batch from a
 * seed, and evaluation as bits per masked byte plus masked-byte accuracy. */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "core/status.h"
#include "models/lm/lm.h"

#define LC_MLM_RATE 0.15f

void lc_mlm_mask(int *tokens, int *targets, long n, uint64_t seed) {
    long chosen = 0;
    for (long i = 0; i < n; i++) {
        targets[i] = -1;
        if (lc_hash_uniform(seed, 4 * (uint64_t)i) >= LC_MLM_RATE) continue;
        targets[i] = tokens[i];
        chosen++;
        const float r = lc_hash_uniform(seed, 4 * (uint64_t)i + 1);
        if (r < 0.8f) tokens[i] = LC_MASK_TOKEN;
        else if (r < 0.9f) tokens[i] = (int)(lc_hash_uniform(seed, 4 * (uint64_t)i + 2) * 256.0f) & 255;
    }
    if (chosen == 0 && n > 0) { /* a loss needs at least one masked position */
        const long i = (long)(lc_hash_uniform(seed, 4 * (uint64_t)n + 3) * (float)n) % n;
        targets[i] = tokens[i];
        tokens[i] = LC_MASK_TOKEN;
    }
}

/* Counts the positions whose most likely byte (over the 256 logits) is the target. */
static long count_correct(const float *logits, const int *targets, long N, int V) {
    long correct = 0;
    for (long i = 0; i < N; i++) {
        if (targets[i] < 0) continue;
        const float *row = logits + i * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        correct += best == targets[i];
    }
    return correct;
}

static int segment_length(size_t n, int seg_len, size_t s) {
    const size_t start = s * (size_t)seg_len;
    return n - start < (size_t)seg_len ? (int)(n - start) : seg_len;
}

lc_status lc_evaluate_mlm(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, uint64_t seed,
                          double *bpc, double *accuracy, long *masked) {
    lc_clear_error();
    if (m->cfg.objective != LC_OBJECTIVE_MLM) return lc_fail(LC_ERR_ARG, "masked-LM evaluation needs an mlm model");
    if (n < 1) return lc_fail(LC_ERR_ARG, "evaluation needs at least 1 byte");
    if (seg_len < 1 || seg_len > m->cap_T)
        return lc_fail(LC_ERR_ARG, "seg-len %d outside 1..%d (the model's planned segment length)", seg_len, m->cap_T);
    if (batch < 1 || batch > m->max_B) batch = m->max_B;
    int *tok = malloc(sizeof(int) * (size_t)batch * (size_t)seg_len);
    int *tgt = malloc(sizeof(int) * (size_t)batch * (size_t)seg_len);
    if (!tok || !tgt) { free(tok); free(tgt); return lc_fail(LC_ERR_NOMEM, "out of memory in evaluation"); }
    double sum = 0;
    long count = 0, correct = 0;
    lc_status st = LC_OK;
    const size_t nseg = (n + (size_t)seg_len - 1) / (size_t)seg_len;
    for (size_t s = 0; s < nseg && !st;) { /* consecutive segments of equal length share a batch */
        const int T = segment_length(n, seg_len, s);
        int B = 0;
        for (; B < batch && s < nseg && segment_length(n, seg_len, s) == T; B++, s++) {
            for (int t = 0; t < T; t++) tok[B * T + t] = data[s * (size_t)seg_len + (size_t)t];
            lc_mlm_mask(tok + B * T, tgt + B * T, T, lc_seed_mix(seed, s));
        }
        double part;
        long c;
        st = lc_model_forward(m, tok, tgt, B, T, 0, &part, &c);
        if (st) break;
        sum += part;
        count += c;
        correct += count_correct(lc_model_logits(m), tgt, (long)B * T, m->cfg.vocab);
    }
    free(tok);
    free(tgt);
    if (st) return st;
    *bpc = sum / (double)count / log(2.0);
    if (accuracy) *accuracy = (double)correct / (double)count;
    if (masked) *masked = count;
    return LC_OK;
}
