/* Evaluation shared by the processes that train together (lc_dist): each scores a contiguous part of the
 * range, cut on segment boundaries, and the bits, counts and correct guesses are summed over them. */
#include <math.h>

#include "core/status.h"
#include "longctx.h"
#include "train/dist.h"

/* Part r of R of data[0, n) on segment boundaries: causal segments predict bytes 1..n-1 (each reads the
 * byte after it, hence the + 1), masked-LM segments score the bytes themselves. */
static void eval_part(size_t n, int seg_len, int mlm, int r, int R, size_t *begin, size_t *len) {
    const size_t units = mlm ? n : n - 1, seg = (size_t)seg_len, nseg = (units + seg - 1) / seg;
    const size_t b = nseg * (size_t)r / (size_t)R * seg, e0 = nseg * (size_t)(r + 1) / (size_t)R * seg;
    const size_t e = e0 < units ? e0 : units;
    *begin = b;
    *len = e > b ? e - b + (mlm ? 0 : 1) : 0;
}

static lc_status evaluate(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, int mlm, double *bpc,
                          double *acc, long *tokens) {
    if (mlm) return lc_evaluate_mlm(m, data, n, seg_len, batch, LC_MLM_EVAL_SEED, bpc, acc, tokens);
    return lc_evaluate(m, data, n, seg_len, batch, bpc, tokens);
}

lc_status lc_evaluate_dist(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                           double *accuracy, long *tokens) {
    const int mlm = lc_model_config(m)->objective == LC_OBJECTIVE_MLM, R = lc_dist_size();
    double acc = NAN, part_bpc = NAN;
    long count = 0;
    if (R == 1) { /* exactly the one-process evaluation */
        lc_status st = evaluate(m, data, n, seg_len, batch, mlm, bpc, &acc, tokens);
        if (accuracy) *accuracy = acc;
        return st;
    }
    size_t begin, len;
    eval_part(n < 2 ? 2 : n, seg_len, mlm, lc_dist_rank(), R, &begin, &len);
    lc_status st = LC_OK;
    if (n >= 2 && len >= 2) st = evaluate(m, data + begin, len, seg_len, batch, mlm, &part_bpc, &acc, &count);
    const int scored = !st && count > 0;
    double sums[4] = {scored ? part_bpc * (double)count : 0, scored ? (double)count : 0,
                      scored && mlm ? acc * (double)count : 0, st ? 1 : 0}; /* bits, bytes, correct, failures */
    lc_dist_sum_doubles(sums, 4);
    if (st) return st;
    if (sums[3] > 0) return lc_fail(LC_ERR_ARG, "evaluation failed in another process");
    if (sums[1] < 1) return lc_fail(LC_ERR_ARG, "evaluation needs at least 2 bytes, got %zu", n);
    *bpc = sums[0] / sums[1];
    if (accuracy) *accuracy = mlm ? sums[2] / sums[1] : NAN;
    if (tokens) *tokens = (long)sums[1];
    return LC_OK;
}
