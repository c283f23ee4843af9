/* Evaluation in bits per byte over a range of bytes, segment by segment: independent segments for the
 * vanilla model, one stream with memory carried across segments for Transformer-XL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "models/lm/lm.h"

static void fill_segment(const uint8_t *data, size_t start, int T, int *tok, int *tgt) {
    for (int t = 0; t < T; t++) {
        tok[t] = data[start + (size_t)t];
        tgt[t] = data[start + (size_t)t + 1];
    }
}

/* Transformer-XL: one stream, consecutive segments, each attending to the memory of the ones before.
 * The caller's memory (a training run's) is saved and restored around the pass. */
static lc_status evaluate_xl(lc_model *m, const uint8_t *data, size_t n, int seg_len, double *sum, long *count) {
    int L = m->cfg.n_layer, saved_rows = m->kv_mode ? 0 : m->mem_rows, saved_B = m->mem_B;
    size_t per_layer = (size_t)m->max_B * (size_t)m->cap_M * (size_t)m->cfg.d_model;
    float *saved = saved_rows ? malloc(sizeof(float) * per_layer * (size_t)L) : NULL;
    if (saved_rows && !saved) return lc_fail(LC_ERR_NOMEM, "out of memory saving the XL memory");
    for (int l = 0; l < L && saved; l++) memcpy(saved + per_layer * (size_t)l, m->mem[l], sizeof(float) * per_layer);
    int *tok = malloc(sizeof(int) * (size_t)seg_len), *tgt = malloc(sizeof(int) * (size_t)seg_len);
    lc_status st = tok && tgt ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory in evaluation");
    lc_model_reset_memory(m);
    for (size_t s = 0; s + 1 < n && !st; s += (size_t)seg_len) {
        int T = n - 1 - s < (size_t)seg_len ? (int)(n - 1 - s) : seg_len;
        fill_segment(data, s, T, tok, tgt);
        double part;
        long c;
        st = lc_model_forward(m, tok, tgt, 1, T, 0, &part, &c);
        *sum += part;
        *count += c;
    }
    lc_model_reset_memory(m);
    for (int l = 0; l < L && saved; l++) memcpy(m->mem[l], saved + per_layer * (size_t)l, sizeof(float) * per_layer);
    m->mem_rows = saved_rows;
    m->mem_B = saved_B;
    free(saved);
    free(tok);
    free(tgt);
    return st;
}

lc_status lc_evaluate(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                      long *tokens) {
    lc_clear_error();
    if (n < 2) return lc_fail(LC_ERR_ARG, "evaluation needs at least 2 bytes, got %zu", n);
    if (seg_len < 1 || seg_len > m->cap_T)
        return lc_fail(LC_ERR_ARG, "seg-len %d outside 1..%d (the model's planned segment length)", seg_len, m->cap_T);
    if (m->cfg.model == LC_MODEL_XL) {
        double sum = 0;
        long count = 0;
        lc_status st = evaluate_xl(m, data, n, seg_len, &sum, &count);
        if (st) return st;
        *bpc = sum / (double)count / log(2.0);
        if (tokens) *tokens = count;
        return LC_OK;
    }
    if (batch < 1 || batch > m->max_B) batch = m->max_B;
    size_t predicted = n - 1, nfull = predicted / (size_t)seg_len, rem = predicted % (size_t)seg_len;
    int *tok = malloc(sizeof(int) * (size_t)batch * (size_t)seg_len);
    int *tgt = malloc(sizeof(int) * (size_t)batch * (size_t)seg_len);
    if (!tok || !tgt) { free(tok); free(tgt); return lc_fail(LC_ERR_NOMEM, "out of memory in evaluation"); }
    double sum = 0;
    long count = 0;
    lc_status st = LC_OK;
    for (size_t s = 0; s < nfull && !st; s += (size_t)batch) {
        int B = (int)(nfull - s < (size_t)batch ? nfull - s : (size_t)batch);
        for (int b = 0; b < B; b++) fill_segment(data, (s + (size_t)b) * (size_t)seg_len, seg_len, tok + b * seg_len, tgt + b * seg_len);
        double part;
        long c;
        st = lc_model_forward(m, tok, tgt, B, seg_len, 0, &part, &c);
        sum += part;
        count += c;
    }
    if (rem && !st) {
        fill_segment(data, nfull * (size_t)seg_len, (int)rem, tok, tgt);
        double part;
        long c;
        st = lc_model_forward(m, tok, tgt, 1, (int)rem, 0, &part, &c);
        sum += part;
        count += c;
    }
    free(tok);
    free(tgt);
    if (st) return st;
    *bpc = sum / (double)count / log(2.0);
    if (tokens) *tokens = count;
    return LC_OK;
}
