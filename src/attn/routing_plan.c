/* The routing kind's clustering (routing.h): geometry and workspace layout, the balanced top-w membership
 * of every centroid (the plan), and the exponential-moving-average update of the centroids.
 *
 * Selection: for each (b, h, c) one task scores all queries (and all keys) against the centroid with the
 * cosine q.mu / |q|, sorts (score descending, position ascending: a strict order, so the result does not
 * depend on the sort algorithm) and keeps the first w, then sorts those by position. The membership
 * bit masks of every query and key are then set per (b, h).
 * Update: one task per vector finds its nearest centroid; one task per (h, c) sums its vectors in the
 * fixed order b, queries, keys (in double). Every task writes only its own outputs: results are identical
 * for any thread count. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/routing_plan.h"
#include "core/threads.h"
#include "kernels/kernels.h"

enum { RT_CENTROID_BLOCK = 64 }; /* centroids scored per product */

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
    if (nthreads < 1) nthreads = 1;
    rt_geom g;
    memset(&g, 0, sizeof g);
    g.threads = nthreads;
    g.B = s->B, g.H = s->H, g.T = s->T, g.M = s->M, g.S = s->M + s->T, g.D = s->D, g.causal = s->causal;
    g.C = o->clusters, g.W = (o->clusters + 63) / 64, g.scale = s->scale;
    lc_attn_routing_members_per_centroid(s, o, &g.wq, &g.wk);
    const int budget = 1 << 18, floor_rows = 16;
    g.R = budget / (g.wk > 0 ? g.wk : 1);
    if (g.R < floor_rows) g.R = floor_rows;
    if (g.R > g.wq) g.R = g.wq;
    if (g.R < 1) g.R = 1;
    const size_t N = (size_t)imax(g.S, 1), D16 = round16((size_t)g.D), BH = (size_t)g.B * g.H;
    const size_t select = round16(2 * N), sums = 4 * D16;
    g.thread_floats = select > sums ? select : sums;
    const size_t R = (size_t)g.R, wk = (size_t)g.wk;
    size_t at = 16;
#define TAKE(field, floats) (g.field = at, at += round16(floats))
    TAKE(masks_off, BH * ((size_t)g.T + g.S) * g.W * 2); /* uint64 = 2 floats */
    TAKE(lists_off, BH * (size_t)g.C * ((size_t)g.wq + g.wk));
    TAKE(assign_off, BH * ((size_t)g.T + g.S));
    TAKE(m_off, (size_t)g.T);
    TAKE(l_off, (size_t)g.T);
    TAKE(delta_off, (size_t)g.T);
    TAKE(rowm_off, R);
    TAKE(rowl_off, R);
    TAKE(kg_off, wk * g.D);
    TAKE(vg_off, wk * g.D);
    TAKE(dkg_off, wk * g.D);
    TAKE(dvg_off, wk * g.D);
    TAKE(qg_off, R * g.D);
    TAKE(dog_off, R * g.D);
    TAKE(og_off, R * g.D);
    TAKE(sc_off, R * wk);
    TAKE(dp_off, R * wk);
    TAKE(sel_off, N * (size_t)(g.C < RT_CENTROID_BLOCK ? g.C : RT_CENTROID_BLOCK));
    TAKE(inv_off, N);
    TAKE(best_off, N);
    TAKE(threads_off, (size_t)nthreads * g.thread_floats);
#undef TAKE
    g.total = at;
    return g;
}

rt_plan rt_plan_at(const rt_geom *g, float *work, int b, int h) {
    const size_t bh = (size_t)b * g->H + h;
    uint64_t *masks = (uint64_t *)(work + g->masks_off) + bh * ((size_t)g->T + g->S) * g->W;
    int *lists = (int *)(work + g->lists_off) + bh * (size_t)g->C * ((size_t)g->wq + g->wk);
    rt_plan p;
    p.qmask = masks;
    p.kmask = masks + (size_t)g->T * g->W;
    p.qsel = lists;
    p.ksel = lists + (size_t)g->C * g->wq;
    return p;
}

static float *rt_thread_scratch(const rt_geom *g, float *work, int thread) {
    return work + g->threads_off + (size_t)thread * g->thread_floats;
}

typedef struct {
    float score;
    int pos;
} rt_pair;

/* The strict order of membership: higher score first, then lower position. A strict total order only
 * without NaN (NaN compares false both ways, and quickselect then runs past its range or keeps the wrong
 * count), so scores enter through rank_score: NaN ranks as -inf (the farthest), and every centroid still
 * gets exactly w distinct members, whatever the inputs. */
static inline int before(rt_pair a, rt_pair b) { return a.score > b.score || (a.score == b.score && a.pos < b.pos); }
static inline float rank_score(float x) { return x != x ? -INFINITY : x; }

/* Rearranges a[0..n) so that a[k] is the element of rank k in `before` order (quickselect, median of three). */
static void select_rank(rt_pair *a, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        rt_pair x = a[lo], y = a[mid], z = a[hi], pivot;
        if (before(x, y))
            pivot = before(y, z) ? y : (before(x, z) ? z : x);
        else
            pivot = before(x, z) ? x : (before(y, z) ? z : y);
        int i = lo, j = hi;
        while (i <= j) {
            while (before(a[i], pivot)) i++;
            while (before(pivot, a[j])) j--;
            if (i <= j) {
                const rt_pair tmp = a[i];
                a[i++] = a[j], a[j--] = tmp;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* out[0..w) = the positions of the w largest of the n scores col[i * ld] in `before` order, in increasing
 * position order. pairs: n of scratch. */
static void select_top(const float *col, long ld, int n, int w, rt_pair *pairs, int *out) {
    if (w >= n) {
        for (int i = 0; i < n; i++) out[i] = i;
        return;
    }
    for (int i = 0; i < n; i++) pairs[i].score = rank_score(col[i * ld]), pairs[i].pos = i;
    select_rank(pairs, n, w - 1);
    const rt_pair last = pairs[w - 1];
    int j = 0;
    for (int i = 0; i < n && j < w; i++) { /* exactly w with a total order; j < w bounds the writes regardless */
        const rt_pair x = {rank_score(col[i * ld]), i};
        if (before(x, last) || i == last.pos) out[j++] = i;
    }
    assert(j == w);
}

/* Bit c of mask[member * W] for every member of every centroid. */
static void set_masks(const int *sel, int C, int w, int n, int W, uint64_t *mask) {
    memset(mask, 0, sizeof(uint64_t) * (size_t)n * W);
    for (int c = 0; c < C; c++)
        for (int j = 0; j < w; j++) mask[(size_t)sel[(size_t)c * w + j] * W + (c >> 6)] |= (uint64_t)1 << (c & 63);
}

/* Members of every centroid among the n rows of x (queries or keys of (b, h)), and with assign != NULL each
 * row's nearest centroid. Cosines: one product of the rows with a block of <= 64 centroids, times 1/|x|. */
static void plan_rows(const rt_geom *g, const lc_view *x, int b, int h, int n, int w, const float *cent, int *sel,
                      int *assign, float *work) {
    const int D = g->D, nthreads = g->threads;
    float *sc = work + g->sel_off, *inv = work + g->inv_off, *best = work + g->best_off;
    const float *x0 = rt_row(x, b, 0, h, D);
    (void)nthreads;
    if (n == 0) return;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)n * D > 16384)
#endif
    for (int i = 0; i < n; i++) {
        const float *r = x0 + (long)i * x->st;
        const float n2 = rt_dot(r, r, D);
        inv[i] = n2 > 0 ? 1.0f / sqrtf(n2) : 0.0f;
        best[i] = -INFINITY;
        if (assign) assign[i] = -1; /* stays -1 when every cosine is NaN: the row updates no centroid */
    }
    for (int c0 = 0; c0 < g->C; c0 += RT_CENTROID_BLOCK) {
        const int cb = g->C - c0 < RT_CENTROID_BLOCK ? g->C - c0 : RT_CENTROID_BLOCK;
        lc_gemm(LC_NO_TRANS, LC_TRANS, n, cb, D, 1.0f, x0, (int)x->st, cent + ((size_t)h * g->C + c0) * D, D, 0.0f, sc,
                cb);
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
        {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (int i = 0; i < n; i++) {
                float *r = sc + (size_t)i * cb;
                for (int c = 0; c < cb; c++) r[c] *= inv[i];
                if (!assign) continue;
                for (int c = 0; c < cb; c++)
                    if (r[c] > best[i]) best[i] = r[c], assign[i] = c0 + c; /* ties: the lower centroid */
            }
            rt_pair *pairs = (rt_pair *)rt_thread_scratch(g, work, lc_thread_id());
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (int c = 0; c < cb; c++) select_top(sc + c, cb, n, w, pairs, sel + (size_t)(c0 + c) * w);
        }
    }
}

void rt_build_plans(const rt_geom *g, const lc_attn_tensors *t, const float *cent, int assign, float *work) {
    _Static_assert(sizeof(rt_pair) == 2 * sizeof(float), "pair layout");
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < g->H; h++) {
            const rt_plan p = rt_plan_at(g, work, b, h);
            int *a = assign ? (int *)(work + g->assign_off) + ((size_t)b * g->H + h) * ((size_t)g->T + g->S) : NULL;
            plan_rows(g, &t->q, b, h, g->T, g->wq, cent, p.qsel, a, work);
            plan_rows(g, &t->k, b, h, g->S, g->wk, cent, p.ksel, a ? a + g->T : NULL, work);
            set_masks(p.qsel, g->C, g->wq, g->T, g->W, p.qmask);
            set_masks(p.ksel, g->C, g->wk, g->S, g->W, p.kmask);
        }
}

int lc_attn_routing_members(const lc_attn_shape *s, const lc_attn_routing_opts *o, const lc_attn_tensors *t,
                            const float *cent, int b, int h, int *qsel, int *ksel) {
    const rt_geom g = rt_geom_of(s, o, lc_attn_threads(s));
    float *work = malloc(g.total * sizeof(float));
    if (!work) return -1;
    rt_build_plans(&g, t, cent, 0, work);
    const rt_plan p = rt_plan_at(&g, work, b, h);
    memcpy(qsel, p.qsel, sizeof(int) * (size_t)g.C * g.wq);
    memcpy(ksel, p.ksel, sizeof(int) * (size_t)g.C * g.wk);
    free(work);
    return 0;
}

/* Vector v of (b, h): queries first (v < T), then keys. */
static const float *vector_at(const rt_geom *g, const lc_attn_tensors *t, int b, int h, int v) {
    return v < g->T ? rt_row(&t->q, b, v, h, g->D) : rt_row(&t->k, b, v - g->T, h, g->D);
}

/* Sums per (h, c) over the assignments recorded by rt_build_plans (assign != 0). */
void rt_update_centroids(const rt_geom *g, const lc_attn_routing_opts *o, const lc_attn_tensors *t, const float *used,
                         float *live, float *work) {
    const int per = g->T + g->S, D = g->D, nthreads = g->threads;
    const long tasks = (long)g->H * g->C;
    const int *assign = (const int *)(work + g->assign_off);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
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
