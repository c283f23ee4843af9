/* Reference full attention in double precision, for tests only: builds the dense T x S probability
 * matrix of each (batch, head) with an explicit causal mask, then applies the textbook formulas.
 * Slow and allocation-heavy on purpose; it shares no code with the fast kernels in full.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/attn.h"

static double *ref_elem(const lc_view_d *v, int b, int t, int h, int D, int d) {
    return v->p + (long)b * v->sb + (long)t * v->st + (long)h * D + d;
}

static double *ref_alloc(size_t n) {
    double *p = calloc(n ? n : 1, sizeof(double));
    if (!p) {
        fprintf(stderr, "attn full reference: out of memory\n");
        abort();
    }
    return p;
}

/* probs[t*S + s] = softmax over s of scale * q_t . k_s, with masked keys at probability 0. */
static void ref_probabilities(const lc_attn_shape *sh, const lc_attn_tensors_d *x, int b, int h, double *probs) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D;
    for (int t = 0; t < T; t++) {
        double *row = probs + (size_t)t * S;
        double row_max = -INFINITY;
        for (int s = 0; s < S; s++) {
            const int masked = sh->causal && s > sh->M + t;
            double dot = 0;
            for (int d = 0; d < D; d++) dot += *ref_elem(&x->q, b, t, h, D, d) * *ref_elem(&x->k, b, s, h, D, d);
            row[s] = masked ? -INFINITY : sh->scale * dot;
            if (row[s] > row_max) row_max = row[s];
        }
        double sum = 0;
        for (int s = 0; s < S; s++) sum += row[s] = exp(row[s] - row_max);
        for (int s = 0; s < S; s++) row[s] /= sum;
    }
}

void lc_attn_full_forward_ref(const lc_attn_shape *sh, const lc_attn_tensors_d *x) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D;
    double *probs = ref_alloc((size_t)T * S);
    for (int b = 0; b < sh->B; b++)
        for (int h = 0; h < sh->H; h++) {
            ref_probabilities(sh, x, b, h, probs);
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    double sum = 0;
                    for (int s = 0; s < S; s++) sum += probs[(size_t)t * S + s] * *ref_elem(&x->v, b, s, h, D, d);
                    *ref_elem(&x->out, b, t, h, D, d) = sum;
                }
        }
    free(probs);
}

void lc_attn_full_backward_ref(const lc_attn_shape *sh, const lc_attn_tensors_d *x) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D;
    double *probs = ref_alloc((size_t)T * S), *dscores = ref_alloc((size_t)T * S);
    for (int b = 0; b < sh->B; b++)
        for (int h = 0; h < sh->H; h++) {
            ref_probabilities(sh, x, b, h, probs);
            /* dP = dout v^T; softmax backward: dS = P * (dP - sum_s P dP); the scale goes on dq, dk */
            for (int t = 0; t < T; t++) {
                double *dp = dscores + (size_t)t * S;
                const double *p = probs + (size_t)t * S;
                double weighted = 0;
                for (int s = 0; s < S; s++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++)
                        dot += *ref_elem(&x->dout, b, t, h, D, d) * *ref_elem(&x->v, b, s, h, D, d);
                    dp[s] = dot;
                    weighted += p[s] * dot;
                }
                for (int s = 0; s < S; s++) dp[s] = p[s] * (dp[s] - weighted);
            }
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    double sum = 0;
                    for (int s = 0; s < S; s++) sum += dscores[(size_t)t * S + s] * *ref_elem(&x->k, b, s, h, D, d);
                    *ref_elem(&x->dq, b, t, h, D, d) = sh->scale * sum;
                }
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++) {
                    double dk = 0, dv = 0;
                    for (int t = 0; t < T; t++) {
                        dk += dscores[(size_t)t * S + s] * *ref_elem(&x->q, b, t, h, D, d);
                        dv += probs[(size_t)t * S + s] * *ref_elem(&x->dout, b, t, h, D, d);
                    }
                    *ref_elem(&x->dk, b, s, h, D, d) = sh->scale * dk;
                    *ref_elem(&x->dv, b, s, h, D, d) = dv;
                }
        }
    free(dscores);
    free(probs);
}
