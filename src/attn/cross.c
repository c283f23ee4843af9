/* Cross-attention over packed (query range, key range) pairs: forward, backward and the double
 * references. See cross.h for the contract. A query row's scores over its pair's keys are one row of
 * scratch (kv_len floats), never a query x key matrix. */
#include "attn/cross.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/vec.h"
#include "core/threads.h"

static int cross_threads(const lc_cross_shape *s) { return s->threads > 1 ? s->threads : 1; }

static int longest_keys(const lc_cross_shape *s) {
    int most = 1;
    for (int i = 0; i < s->n; i++) most = s->kv_len[i] > most ? s->kv_len[i] : most;
    return most;
}

static size_t row_floats(const lc_cross_shape *s) { return ((size_t)longest_keys(s) + 15) / 16 * 16; }

typedef struct {
    int start, len;
} cross_range;

static int by_start(const void *a, const void *b) {
    const cross_range *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

int lc_cross_check(const lc_cross_shape *s, char *err, size_t errlen) {
    if (s->H < 1 || s->D < 1 || s->n < 0) {
        snprintf(err, errlen, "cross-attention: heads %d, head dim %d, pairs %d must be positive", s->H, s->D, s->n);
        return -1;
    }
    cross_range *r = malloc(sizeof *r * (size_t)(s->n > 0 ? s->n : 1));
    if (!r) {
        snprintf(err, errlen, "cross-attention: out of memory checking %d pairs", s->n);
        return -1;
    }
    int bad = -1;
    for (int i = 0; i < s->n && bad < 0; i++) {
        if (s->q_start[i] < 0 || s->q_len[i] < 0 || s->kv_start[i] < 0 || s->kv_len[i] < 0 ||
            (s->q_len[i] > 0 && s->kv_len[i] < 1))
            bad = i;
        r[i] = (cross_range){s->q_start[i], s->q_len[i]};
    }
    if (bad >= 0) {
        snprintf(err, errlen, "cross-attention: pair %d has query rows %d+%d and key rows %d+%d", bad,
                 s->q_start[bad], s->q_len[bad], s->kv_start[bad], s->kv_len[bad]);
        free(r);
        return -1;
    }
    qsort(r, (size_t)s->n, sizeof *r, by_start);
    for (int i = 1; i < s->n; i++)
        if (r[i - 1].len > 0 && r[i].len > 0 && (long)r[i - 1].start + r[i - 1].len > r[i].start) {
            snprintf(err, errlen, "cross-attention: query rows %d+%d and %d+%d overlap", r[i - 1].start, r[i - 1].len,
                     r[i].start, r[i].len);
            free(r);
            return -1;
        }
    free(r);
    return 0;
}

size_t lc_cross_workspace(const lc_cross_shape *s) { return (size_t)cross_threads(s) * 2 * row_floats(s); }

static const float *row_at(const lc_view *v, long r, int h, int D) { return v->p + r * v->st + (long)h * D; }
static float *row_mut(const lc_view *v, long r, int h, int D) { return v->p + r * v->st + (long)h * D; }

/* p[j] = scale q . k_j over the pair's keys: the raw scores of one query row. */
static void scores(const lc_cross_shape *s, const lc_cross_tensors *t, int pair, int h, const float *q, float *p) {
    const int D = s->D;
    for (int j = 0; j < s->kv_len[pair]; j++) p[j] = s->scale * lc_vdot(q, row_at(&t->k, s->kv_start[pair] + j, h, D), D);
}

/* Softmax of one query row into p (from the raw scores in p); returns the row's log-sum-exp. */
static float softmax_row(float *p, int n) {
    float m = p[0];
    for (int j = 1; j < n; j++) m = p[j] > m ? p[j] : m;
    double sum = 0;
    for (int j = 0; j < n; j++) {
        p[j] = expf(p[j] - m);
        sum += p[j];
    }
    const float inv = (float)(1.0 / sum);
    for (int j = 0; j < n; j++) p[j] *= inv;
    return m + (float)log(sum);
}

/* p[j] = exp(score_j - lse): the probabilities forward computed, from its saved log-sum-exp. */
static void probabilities(const lc_cross_shape *s, const lc_cross_tensors *t, int pair, int h, long r, float *p) {
    scores(s, t, pair, h, row_at(&t->q, r, h, s->D), p);
    const float lse = t->lse[r * s->H + h];
    for (int j = 0; j < s->kv_len[pair]; j++) p[j] = expf(p[j] - lse);
}

void lc_cross_forward(const lc_cross_shape *s, const lc_cross_tensors *t, float *work) {
    const int nthreads = cross_threads(s), D = s->D;
    const size_t per = 2 * row_floats(s);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < (long)s->n * s->H; task++) {
        const int pair = (int)(task / s->H), h = (int)(task % s->H);
        float *p = work + (size_t)lc_thread_id() * per;
        for (int i = 0; i < s->q_len[pair]; i++) {
            const long r = (long)s->q_start[pair] + i;
            scores(s, t, pair, h, row_at(&t->q, r, h, D), p);
            t->lse[r * s->H + h] = softmax_row(p, s->kv_len[pair]);
            float *o = row_mut(&t->out, r, h, D);
            memset(o, 0, sizeof(float) * (size_t)D);
            for (int j = 0; j < s->kv_len[pair]; j++) lc_vaxpy(o, p[j], row_at(&t->v, s->kv_start[pair] + j, h, D), D);
        }
    }
}

/* ds[j] = p[j] (dout . v_j - dout . out) for query row r: the score gradients (before scale). */
static void score_grads(const lc_cross_shape *s, const lc_cross_tensors *t, int pair, int h, long r, const float *p,
                        float *ds) {
    const int D = s->D;
    const float *dout = row_at(&t->dout, r, h, D);
    const float delta = lc_vdot(dout, row_at(&t->out, r, h, D), D);
    for (int j = 0; j < s->kv_len[pair]; j++)
        ds[j] = p[j] * (lc_vdot(dout, row_at(&t->v, s->kv_start[pair] + j, h, D), D) - delta);
}

void lc_cross_backward(const lc_cross_shape *s, const lc_cross_tensors *t, float *work) {
    const int nthreads = cross_threads(s), D = s->D;
    const size_t half = row_floats(s), per = 2 * half;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < (long)s->n * s->H; task++) { /* dq: one writer per (row, head) */
        const int pair = (int)(task / s->H), h = (int)(task % s->H);
        float *p = work + (size_t)lc_thread_id() * per, *ds = p + half;
        for (int i = 0; i < s->q_len[pair]; i++) {
            const long r = (long)s->q_start[pair] + i;
            probabilities(s, t, pair, h, r, p);
            score_grads(s, t, pair, h, r, p, ds);
            float *dq = row_mut(&t->dq, r, h, D);
            memset(dq, 0, sizeof(float) * (size_t)D);
            for (int j = 0; j < s->kv_len[pair]; j++)
                lc_vaxpy(dq, s->scale * ds[j], row_at(&t->k, s->kv_start[pair] + j, h, D), D);
        }
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (int h = 0; h < s->H; h++) { /* dk, dv: each head sums over the pairs in order */
        float *p = work + (size_t)lc_thread_id() * per, *ds = p + half;
        for (int pair = 0; pair < s->n; pair++)
            for (int j = 0; j < s->kv_len[pair]; j++) {
                memset(row_mut(&t->dk, s->kv_start[pair] + j, h, D), 0, sizeof(float) * (size_t)D);
                memset(row_mut(&t->dv, s->kv_start[pair] + j, h, D), 0, sizeof(float) * (size_t)D);
            }
        for (int pair = 0; pair < s->n; pair++)
            for (int i = 0; i < s->q_len[pair]; i++) {
                const long r = (long)s->q_start[pair] + i;
                probabilities(s, t, pair, h, r, p);
                score_grads(s, t, pair, h, r, p, ds);
                const float *q = row_at(&t->q, r, h, D), *dout = row_at(&t->dout, r, h, D);
                for (int j = 0; j < s->kv_len[pair]; j++) {
                    const long kr = (long)s->kv_start[pair] + j;
                    lc_vaxpy(row_mut(&t->dv, kr, h, D), p[j], dout, D);
                    lc_vaxpy(row_mut(&t->dk, kr, h, D), s->scale * ds[j], q, D);
                }
            }
    }
}

/* ---- references ---- */

static const double *row_d(const lc_view_d *v, long r, int h, int D) { return v->p + r * v->st + (long)h * D; }
static double *row_dm(const lc_view_d *v, long r, int h, int D) { return v->p + r * v->st + (long)h * D; }

static double dot_d(const double *a, const double *b, int D) {
    double s = 0;
    for (int d = 0; d < D; d++) s += a[d] * b[d];
    return s;
}

/* The probabilities of query row r of a pair, in p[kv_len]. */
static void probs_ref(const lc_cross_shape *s, const lc_cross_tensors_d *t, int pair, int h, long r, double *p) {
    const int n = s->kv_len[pair], D = s->D;
    double m = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) {
        p[j] = s->scale * dot_d(row_d(&t->q, r, h, D), row_d(&t->k, s->kv_start[pair] + j, h, D), D);
        m = p[j] > m ? p[j] : m;
    }
    for (int j = 0; j < n; j++) sum += p[j] = exp(p[j] - m);
    for (int j = 0; j < n; j++) p[j] /= sum;
}

void lc_cross_forward_ref(const lc_cross_shape *s, const lc_cross_tensors_d *t) {
    double *p = malloc(sizeof(double) * (size_t)longest_keys(s));
    if (!p) return;
    for (int pair = 0; pair < s->n; pair++)
        for (int h = 0; h < s->H; h++)
            for (int i = 0; i < s->q_len[pair]; i++) {
                const long r = (long)s->q_start[pair] + i;
                probs_ref(s, t, pair, h, r, p);
                double *o = row_dm(&t->out, r, h, s->D);
                for (int d = 0; d < s->D; d++) {
                    double acc = 0;
                    for (int j = 0; j < s->kv_len[pair]; j++) acc += p[j] * row_d(&t->v, s->kv_start[pair] + j, h, s->D)[d];
                    o[d] = acc;
                }
            }
    free(p);
}

void lc_cross_backward_ref(const lc_cross_shape *s, const lc_cross_tensors_d *t) {
    const int D = s->D, most = longest_keys(s);
    double *p = malloc(sizeof(double) * (size_t)most), *ds = malloc(sizeof(double) * (size_t)most);
    if (!p || !ds) {
        free(p), free(ds);
        return;
    }
    for (int pair = 0; pair < s->n; pair++)
        for (int j = 0; j < s->kv_len[pair]; j++)
            for (int h = 0; h < s->H; h++) {
                memset(row_dm(&t->dk, s->kv_start[pair] + j, h, D), 0, sizeof(double) * (size_t)D);
                memset(row_dm(&t->dv, s->kv_start[pair] + j, h, D), 0, sizeof(double) * (size_t)D);
            }
    for (int pair = 0; pair < s->n; pair++)
        for (int h = 0; h < s->H; h++)
            for (int i = 0; i < s->q_len[pair]; i++) {
                const long r = (long)s->q_start[pair] + i;
                probs_ref(s, t, pair, h, r, p);
                const double *dout = row_d(&t->dout, r, h, D), *q = row_d(&t->q, r, h, D);
                double delta = 0; /* dout . out, with out recomputed from p */
                for (int j = 0; j < s->kv_len[pair]; j++)
                    delta += p[j] * dot_d(dout, row_d(&t->v, s->kv_start[pair] + j, h, D), D);
                double *dq = row_dm(&t->dq, r, h, D);
                memset(dq, 0, sizeof(double) * (size_t)D);
                for (int j = 0; j < s->kv_len[pair]; j++) {
                    const long kr = (long)s->kv_start[pair] + j;
                    ds[j] = p[j] * (dot_d(dout, row_d(&t->v, kr, h, D), D) - delta);
                    const double *k = row_d(&t->k, kr, h, D);
                    double *dk = row_dm(&t->dk, kr, h, D), *dv = row_dm(&t->dv, kr, h, D);
                    for (int d = 0; d < D; d++) {
                        dq[d] += s->scale * ds[j] * k[d];
                        dk[d] += s->scale * ds[j] * q[d];
                        dv[d] += p[j] * dout[d];
                    }
                }
            }
    free(p), free(ds);
}
