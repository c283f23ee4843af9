/* Evaluation in bits per byte over a range of bytes, segment by segment. */
#include <math.h>
#include <stdlib.h>

#include "core/status.h"
#include "model/lm.h"

static void fill_segment(const uint8_t *data, size_t start, int T, int *tok, int *tgt) {
    for (int t = 0; t < T; t++) {
        tok[t] = data[start + (size_t)t];
        tgt[t] = data[start + (size_t)t + 1];
    }
}

lc_status lc_evaluate(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                      long *tokens) {
    if (n < 2) return lc_fail(LC_ERR_ARG, "evaluation needs at least 2 bytes, got %zu", n);
    if (seg_len < 1 || seg_len > m->cfg.seq_len)
        return lc_fail(LC_ERR_ARG, "seg-len %d outside 1..%d (the model's segment length)", seg_len, m->cfg.seq_len);
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
