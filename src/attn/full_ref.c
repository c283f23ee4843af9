/* Reference attention in double precision, for tests only: builds the dense T x S probability matrix of
 * each (batch, head) with an explicit mask, then applies the textbook formulas, including the
 * relative-position terms of Transformer-XL when x->rel is set. The mask is a callback, so every sparse
 * kind tests against the same code (lc_attn_masked_*_ref); the full kind's mask is causal + window.
 * A query that sees no key gets a zero output. Slow and allocation-heavy on purpose; it shares no code
 * with the fast kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void ref_check(const lc_attn_shape *sh, const lc_attn_tensors_d *x) {
    if ((x->rel || sh->window > 0) && !sh->causal) {
        fprintf(stderr, "attn full reference: a window and relative positions need causal = 1\n");
        abort();
    }
}

/* The full kind's mask: causal (s <= M + t) and window W (s >= M + t - W + 1). */
static int full_visible(const void *ctx, int b, int h, int t, int s) {
    const lc_attn_shape *sh = ctx;
    (void)b, (void)h;
    if (!sh->causal) return 1;
    if (s > sh->M + t) return 0;
    return sh->window <= 0 || s >= sh->M + t - sh->window + 1;
}

typedef struct {
    lc_attn_visible_fn fn;
    const void *ctx;
    int b, h;
} ref_mask;

static int ref_visible(const ref_mask *m, int t, int s) { return m->fn(m->ctx, m->b, m->h, t, s); }

/* Element d of head h of row `row` of a [rows][H*D] relative-position tensor. */
static double ref_rel(const double *p, int row, int h, const lc_attn_shape *sh, int d) {
    return p[((size_t)row * sh->H + h) * sh->D + d];
}

/* probs[t*S + s] = softmax over the visible s of
 *   scale * (q_t . k_s)                                              (plain), or
 *   scale * ((q_t + u) . k_s + (q_t + v) . r[M + t - s])             (rel),
 * with hidden keys at probability 0. */
static void ref_probabilities(const lc_attn_shape *sh, const lc_attn_tensors_d *x, const ref_mask *mask, double *probs) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D, b = mask->b, h = mask->h;
    const lc_attn_relpos_d *rel = x->rel;
    for (int t = 0; t < T; t++) {
        double *row = probs + (size_t)t * S;
        double row_max = -INFINITY;
        for (int s = 0; s < S; s++) {
            if (!ref_visible(mask, t, s)) {
                row[s] = -INFINITY;
                continue;
            }
            double dot = 0;
            for (int d = 0; d < D; d++) {
                const double q = *ref_elem(&x->q, b, t, h, D, d);
                if (rel)
                    dot += (q + ref_rel(rel->u, 0, h, sh, d)) * *ref_elem(&x->k, b, s, h, D, d) +
                           (q + ref_rel(rel->v, 0, h, sh, d)) * ref_rel(rel->r, sh->M + t - s, h, sh, d);
                else
                    dot += q * *ref_elem(&x->k, b, s, h, D, d);
            }
            row[s] = sh->scale * dot;
            if (row[s] > row_max) row_max = row[s];
        }
        double sum = 0;
        if (row_max == -INFINITY) { /* nothing visible: a zero row */
            memset(row, 0, sizeof(double) * (size_t)S);
            continue;
        }
        for (int s = 0; s < S; s++) sum += row[s] = exp(row[s] - row_max);
        for (int s = 0; s < S; s++) row[s] /= sum;
    }
}

void lc_attn_masked_forward_ref(const lc_attn_shape *sh, lc_attn_visible_fn visible, const void *ctx,
                                const lc_attn_tensors_d *x) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D;
    double *probs = ref_alloc((size_t)T * S);
    for (int b = 0; b < sh->B; b++)
        for (int h = 0; h < sh->H; h++) {
            const ref_mask mask = {visible, ctx, b, h};
            ref_probabilities(sh, x, &mask, probs);
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    double sum = 0;
                    for (int s = 0; s < S; s++) sum += probs[(size_t)t * S + s] * *ref_elem(&x->v, b, s, h, D, d);
                    *ref_elem(&x->out, b, t, h, D, d) = sum;
                }
        }
    free(probs);
}

void lc_attn_masked_backward_ref(const lc_attn_shape *sh, lc_attn_visible_fn visible, const void *ctx,
                                 const lc_attn_tensors_d *x) {
    const int T = sh->T, S = sh->M + sh->T, D = sh->D, HD = sh->H * sh->D;
    const lc_attn_relpos_d *rel = x->rel;
    if (rel) { /* shared by the batch: summed over b below */
        memset(rel->dr, 0, sizeof(double) * (size_t)S * HD);
        memset(rel->du, 0, sizeof(double) * (size_t)HD);
        memset(rel->dv, 0, sizeof(double) * (size_t)HD);
    }
    double *probs = ref_alloc((size_t)T * S), *dscores = ref_alloc((size_t)T * S);
    for (int b = 0; b < sh->B; b++)
        for (int h = 0; h < sh->H; h++) {
            const ref_mask mask = {visible, ctx, b, h};
            ref_probabilities(sh, x, &mask, probs);
            /* dP = dout v^T; softmax backward: dS = P * (dP - sum_s P dP); the scale goes on the inputs */
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
            /* dq = scale (sum_s dS k_s + sum_s dS r[M+t-s]): the first part also sums into du, the second
             * into dv; dr[M+t-s] += scale dS (q_t + v) */
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    double content = 0, position = 0;
                    for (int s = 0; s < S; s++) {
                        const double ds = dscores[(size_t)t * S + s];
                        content += ds * *ref_elem(&x->k, b, s, h, D, d);
                        if (rel && ref_visible(&mask, t, s)) {
                            position += ds * ref_rel(rel->r, sh->M + t - s, h, sh, d);
                            const double qv = *ref_elem(&x->q, b, t, h, D, d) + ref_rel(rel->v, 0, h, sh, d);
                            rel->dr[((size_t)(sh->M + t - s) * sh->H + h) * D + d] += sh->scale * ds * qv;
                        }
                    }
                    *ref_elem(&x->dq, b, t, h, D, d) = sh->scale * (content + position);
                    if (rel) {
                        rel->du[(size_t)h * D + d] += sh->scale * content;
                        rel->dv[(size_t)h * D + d] += sh->scale * position;
                    }
                }
            /* dk = scale sum_t dS (q_t [+ u]), dv = sum_t P dout */
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++) {
                    double dk = 0, dv = 0;
                    const double u = rel ? ref_rel(rel->u, 0, h, sh, d) : 0.0;
                    for (int t = 0; t < T; t++) {
                        dk += dscores[(size_t)t * S + s] * (*ref_elem(&x->q, b, t, h, D, d) + u);
                        dv += probs[(size_t)t * S + s] * *ref_elem(&x->dout, b, t, h, D, d);
                    }
                    *ref_elem(&x->dk, b, s, h, D, d) = sh->scale * dk;
                    *ref_elem(&x->dv, b, s, h, D, d) = dv;
                }
        }
    free(dscores);
    free(probs);
}

void lc_attn_full_forward_ref(const lc_attn_shape *sh, const lc_attn_tensors_d *x) {
    ref_check(sh, x);
    lc_attn_masked_forward_ref(sh, full_visible, sh, x);
}

void lc_attn_full_backward_ref(const lc_attn_shape *sh, const lc_attn_tensors_d *x) {
    ref_check(sh, x);
    lc_attn_masked_backward_ref(sh, full_visible, sh, x);
}
