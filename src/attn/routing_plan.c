/* The routing kind's clustering (routing.h): geometry and workspace layout, the balanced top-w membership
 * of every centroid (the plan), and the exponential-moving-average update of the centroids.
 *
 * Selection: for each (b, h, c) one task scores all queries (and all keys) against the centroid with the
 * cosine q.mu / |q|, sorts (score descending, position ascending: a strict order, so the result does not
 * depend on the sort algorithm) and keeps the first w, then sorts those by position. The per-query and
 * per-key centroid lists are then built per (b, h), centroids in increasing order.
 * Update: one task per vector finds its nearest centroid; one task per (h, c) sums its vectors in the
 * fixed order b, queries, keys (in double). Every task writes only its own outputs: results are identical
 * for any thread count. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/routing_plan.h"
#include "core/threads.h"

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }
static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

void lc_attn_routing_members_per_centroid(const lc_attn_shape *s, const lc_attn_routing_opts *o, int *wq, int *wk) {
    const int S = s->M + s->T, C = o->clusters > 0 ? o->clusters : 1;
    int w = o->window > 0 ? o->window : (S + C - 1) / C;
    if (w < 1) w = 1;
    *wq = imin(w, s->T);
    *wk = imin(w, S);
}

rt_geom rt_geom_of(const lc_attn_shape *s, const lc_attn_routing_opts *o, int nthreads) {
    rt_geom g;
    memset(&g, 0, sizeof g);
    g.B = s->B, g.H = s->H, g.T = s->T, g.M = s->M, g.S = s->M + s->T, g.D = s->D, g.causal = s->causal;
    g.C = o->clusters, g.scale = s->scale;
    lc_attn_routing_members_per_centroid(s, o, &g.wq, &g.wk);
    const long keys_cap = imin(g.S, g.C * g.wk + 1), queries_cap = imin(g.T, g.C * g.wq + 1);
    g.list_cap = (int)(keys_cap > queries_cap ? keys_cap : queries_cap);
    if (g.list_cap < 1) g.list_cap = 1;
    g.plan_ints = 2 * (size_t)g.C * ((size_t)g.wq + g.wk) + (size_t)g.T + 1 + (size_t)g.S + 1;
    const size_t N = (size_t)imax(imax(g.T, g.S), 1), D16 = round16((size_t)g.D);
    const size_t select = round16(2 * N), rows = round16(N) + 2 * round16((size_t)g.list_cap) + 2 * D16,
                 sums = 4 * D16;
    g.thread_floats = select > rows ? select : rows;
    if (sums > g.thread_floats) g.thread_floats = sums;
    if (nthreads < 1) nthreads = 1;
    const size_t BH = (size_t)g.B * g.H;
    g.plans_off = 16;
    g.delta_off = g.plans_off + round16(BH * g.plan_ints);
    g.assign_off = g.delta_off + round16(BH * (size_t)g.T);
    g.threads_off = g.assign_off + round16(BH * ((size_t)g.T + g.S));
    g.total = g.threads_off + (size_t)nthreads * g.thread_floats;
    return g;
}

rt_plan rt_plan_at(const rt_geom *g, float *work, int b, int h) {
    int *base = (int *)(work + g->plans_off) + ((size_t)b * g->H + h) * g->plan_ints;
    rt_plan p;
    p.qsel = base;
    p.ksel = p.qsel + (size_t)g->C * g->wq;
    p.qoff = p.ksel + (size_t)g->C * g->wk;
    p.qcl = p.qoff + g->T + 1;
    p.koff = p.qcl + (size_t)g->C * g->wq;
    p.kcl = p.koff + g->S + 1;
    return p;
}

float *rt_thread_scratch(const rt_geom *g, float *work, int thread) {
    return work + g->threads_off + (size_t)thread * g->thread_floats;
}

/* cosine of row x with the unit centroid mu: x.mu / |x| (0 for a zero row) */
static inline float unit_dot(const float *x, const float *mu, int D) {
    const float n2 = rt_dot(x, x, D);
    return n2 > 0 ? rt_dot(x, mu, D) / sqrtf(n2) : 0.0f;
}

typedef struct {
    float score;
    int pos;
} rt_pair;

static int by_score_then_position(const void *a, const void *b) {
    const rt_pair *x = a, *y = b;
    if (x->score > y->score) return -1;
    if (x->score < y->score) return 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int by_int(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* out[0..w) = the w rows of x (n rows of sequence b, head h) with the largest cosine to mu, by position. */
static void select_top(const lc_view *x, int b, int h, int n, int w, int D, const float *mu, rt_pair *pairs,
                       int *out) {
    if (w >= n) {
        for (int i = 0; i < n; i++) out[i] = i;
        return;
    }
    for (int i = 0; i < n; i++) pairs[i].score = unit_dot(rt_row(x, b, i, h, D), mu, D), pairs[i].pos = i;
    qsort(pairs, (size_t)n, sizeof *pairs, by_score_then_position);
    for (int j = 0; j < w; j++) out[j] = pairs[j].pos;
    qsort(out, (size_t)w, sizeof *out, by_int);
}

void lc_attn_routing_members(const lc_attn_shape *s, const lc_attn_routing_opts *o, const lc_attn_tensors *t,
                             const float *cent, int b, int h, int *qsel, int *ksel, float *scratch) {
    int wq, wk;
    lc_attn_routing_members_per_centroid(s, o, &wq, &wk);
    const int S = s->M + s->T;
    _Static_assert(sizeof(rt_pair) == 2 * sizeof(float), "pair layout");
    for (int c = 0; c < o->clusters; c++) {
        const float *mu = cent + ((size_t)h * o->clusters + c) * s->D;
        select_top(&t->q, b, h, s->T, wq, s->D, mu, (rt_pair *)scratch, qsel + (size_t)c * wq);
        select_top(&t->k, b, h, S, wk, s->D, mu, (rt_pair *)scratch, ksel + (size_t)c * wk);
    }
}

/* off[0..n] and list: the centroids of each member, from sel[C][w]; cursor: n ints of scratch. */
static void invert(const int *sel, int C, int w, int n, int *off, int *list, int *cursor) {
    memset(off, 0, sizeof(int) * ((size_t)n + 1));
    for (int i = 0; i < C * w; i++) off[sel[i] + 1]++;
    for (int i = 0; i < n; i++) off[i + 1] += off[i];
    memcpy(cursor, off, sizeof(int) * (size_t)n);
    for (int c = 0; c < C; c++)
        for (int j = 0; j < w; j++) list[cursor[sel[(size_t)c * w + j]]++] = c;
}

void rt_build_plans(const rt_geom *g, const lc_attn_tensors *t, const float *cent, float *work) {
    const long tasks = (long)g->B * g->H * g->C, heads = (long)g->B * g->H;
    const int nthreads = lc_get_threads();
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        float *mine = rt_thread_scratch(g, work, lc_thread_id());
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long i = 0; i < tasks; i++) {
            const int c = (int)(i % g->C), h = (int)(i / g->C % g->H), b = (int)(i / g->C / g->H);
            const rt_plan p = rt_plan_at(g, work, b, h);
            const float *mu = cent + ((size_t)h * g->C + c) * g->D;
            select_top(&t->q, b, h, g->T, g->wq, g->D, mu, (rt_pair *)mine, p.qsel + (size_t)c * g->wq);
            select_top(&t->k, b, h, g->S, g->wk, g->D, mu, (rt_pair *)mine, p.ksel + (size_t)c * g->wk);
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long i = 0; i < heads; i++) {
            const int h = (int)(i % g->H), b = (int)(i / g->H);
            const rt_plan p = rt_plan_at(g, work, b, h);
            invert(p.qsel, g->C, g->wq, g->T, p.qoff, p.qcl, (int *)mine);
            invert(p.ksel, g->C, g->wk, g->S, p.koff, p.kcl, (int *)mine);
        }
    }
}

/* Vector v of (b, h): queries first (v < T), then keys. */
static const float *vector_at(const rt_geom *g, const lc_attn_tensors *t, int b, int h, int v) {
    return v < g->T ? rt_row(&t->q, b, v, h, g->D) : rt_row(&t->k, b, v - g->T, h, g->D);
}

void rt_update_centroids(const rt_geom *g, const lc_attn_routing_opts *o, const lc_attn_tensors *t, const float *used,
                         float *live, float *work) {
    const int per = g->T + g->S, D = g->D, nthreads = lc_get_threads();
    const long vectors = (long)g->B * g->H * per, tasks = (long)g->H * g->C;
    int *assign = (int *)(work + g->assign_off);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long i = 0; i < vectors; i++) {
            const int v = (int)(i % per), h = (int)(i / per % g->H), b = (int)(i / per / g->H);
            const float *x = vector_at(g, t, b, h, v);
            int best = 0;
            float best_score = -INFINITY;
            for (int c = 0; c < g->C; c++) {
                const float sc = unit_dot(x, used + ((size_t)h * g->C + c) * D, D);
                if (sc > best_score) best_score = sc, best = c;
            }
            assign[i] = best;
        }
        double *acc = (double *)rt_thread_scratch(g, work, lc_thread_id());
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long i = 0; i < tasks; i++) {
            const int c = (int)(i % g->C), h = (int)(i / g->C);
            memset(acc, 0, sizeof(double) * (size_t)D);
            long n = 0;
            for (int b = 0; b < g->B; b++) {
                const int *a = assign + ((size_t)b * g->H + h) * per;
                for (int v = 0; v < per; v++) {
                    if (a[v] != c) continue;
                    const float *x = vector_at(g, t, b, h, v);
                    double n2 = 0;
                    for (int d = 0; d < D; d++) n2 += (double)x[d] * x[d];
                    n++;
                    if (n2 <= 0) continue;
                    const double inv = 1.0 / sqrt(n2);
                    for (int d = 0; d < D; d++) acc[d] += x[d] * inv;
                }
            }
            const float *mu = used + ((size_t)h * g->C + c) * D;
            float *out = live + ((size_t)h * g->C + c) * D;
            if (n == 0) {
                memcpy(out, mu, sizeof(float) * (size_t)D);
                continue;
            }
            double n2 = 0;
            for (int d = 0; d < D; d++) {
                acc[d] = o->decay * (double)mu[d] + (1.0 - o->decay) * acc[d] / (double)n;
                n2 += acc[d] * acc[d];
            }
            const double inv = n2 > 0 ? 1.0 / sqrt(n2) : 0.0;
            for (int d = 0; d < D; d++) out[d] = n2 > 0 ? (float)(acc[d] * inv) : mu[d];
        }
    }
}
