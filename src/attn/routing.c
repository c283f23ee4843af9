/* The `routing` attention kind (routing.h): options, state, and the attention passes over the routing
 * plan built by routing_plan.c.
 *
 * Each centroid's members form a dense block: its wq queries x its wk keys, gathered into contiguous
 * buffers and multiplied with lc_gemm (BLAS when built with it), in blocks of at most R query rows. A
 * (query, key) pair that shares several centroids is scored only in the block of the lowest one; pairs
 * after the query (causal) are masked; a query's own key, when no centroid holds both, is a separate
 * self term. Forward: per query a running softmax (max m, sum l, output accumulated in out) starts with
 * the self term and absorbs each block it appears in (rescaled by the block's row max and sum), so the
 * result is one softmax over the union. Backward recomputes P = exp(scale q.k - lse) per block:
 *   dS = P (dout.v - Delta),  dq += scale dS K,  dK += scale dS^T Q,  dV += P^T dout,
 * scattered back into dq, dk, dv rows block after block. Heads and centroids run in a fixed order; the
 * products thread internally and the row loops split rows, so results do not depend on the thread count.
 * Forward copies the live centroids to the snapshot first; with train != 0 the plan also records each
 * vector's nearest centroid and the centroids are updated at the end (routing_plan.c). */
#include "attn/routing.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/routing_plan.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

static void routing_opts_init(void *opts, int H) {
    lc_attn_routing_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->clusters = 0; /* auto: fixed from the planned length by routing_opts_plan */
    o->window = 0;
    o->decay = 0.999f;
    (void)H;
}

static int routing_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_routing_opts *o = opts;
    (void)H;
    if (strcmp(key, "clusters") == 0) {
        if (strcmp(value, "auto") == 0) return o->clusters = 0, 0;
        return lc_attn_opt_int(key, value, 1, 4096, &o->clusters, err, errlen);
    }
    if (strcmp(key, "window") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->window, err, errlen);
    if (strcmp(key, "decay") == 0) return lc_attn_opt_float(key, value, 0.0, 1.0, &o->decay, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_routing, key, err, errlen);
}

static int routing_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                         size_t errlen) {
    const lc_attn_routing_opts *o = opts;
    if (o->clusters < 1)
        return snprintf(err, errlen, "routing: clusters=%s must be >= 1 (auto is fixed from the planned length)",
                        o->clusters ? "negative" : "auto"), -1;
    if (o->window < 0) return snprintf(err, errlen, "routing: window=%d must be >= 1", o->window), -1;
    if (!(o->decay >= 0.0f && o->decay <= 1.0f))
        return snprintf(err, errlen, "routing: decay=%g must be in [0, 1]", (double)o->decay), -1;
    return 0;
}

int lc_attn_routing_auto_clusters(int max_len) {
    int C = 1;
    while (C < 4096 && (long)(2 * C) * (2 * C) <= max_len) C *= 2;
    return C;
}

static void routing_opts_plan(void *opts, int H, int D, int max_len) {
    lc_attn_routing_opts *o = opts;
    (void)H, (void)D;
    if (o->clusters == 0) o->clusters = lc_attn_routing_auto_clusters(max_len);
}

size_t lc_attn_routing_state_floats(const void *opts, int H, int D) {
    const lc_attn_routing_opts *o = opts;
    return 2 * (size_t)H * (size_t)o->clusters * (size_t)D;
}

/* Live centroids: normalised N(0, 1) vectors drawn in order h, c, d; the snapshot is a copy. */
void lc_attn_routing_state_init(float *state, const void *opts, int H, int D, uint64_t seed) {
    const lc_attn_routing_opts *o = opts;
    const size_t n = (size_t)H * o->clusters;
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        float *mu = state + i * D;
        double n2 = 0;
        for (;;) {
            n2 = 0;
            for (int d = 0; d < D; d++) mu[d] = lc_rng_normal(&rng), n2 += (double)mu[d] * mu[d];
            if (n2 > 0) break;
        }
        const double inv = 1.0 / sqrt(n2);
        for (int d = 0; d < D; d++) mu[d] = (float)(mu[d] * inv);
    }
    memcpy(state + n * D, state, sizeof(float) * n * D);
}

size_t lc_attn_routing_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    return rt_geom_of(s, opts, nthreads).total;
}

static void check_args(const lc_attn_shape *s, const lc_attn_routing_opts *o, const lc_attn_tensors *t) {
    assert(o && o->clusters >= 1 && o->window >= 0);
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(!s->window && !t->rel && !t->global);
    assert(t->state);
    (void)s, (void)o, (void)t;
}

/* The per-head buffers of the workspace (routing_plan.h). */
typedef struct {
    float *m, *l, *delta, *rowm, *rowl, *kg, *vg, *dkg, *dvg, *qg, *dog, *og, *sc, *dp;
} rt_bufs;

static rt_bufs bufs_of(const rt_geom *g, float *work) {
    rt_bufs w;
    w.m = work + g->m_off, w.l = work + g->l_off, w.delta = work + g->delta_off;
    w.rowm = work + g->rowm_off, w.rowl = work + g->rowl_off;
    w.kg = work + g->kg_off, w.vg = work + g->vg_off, w.dkg = work + g->dkg_off, w.dvg = work + g->dvg_off;
    w.qg = work + g->qg_off, w.dog = work + g->dog_off, w.og = work + g->og_off;
    w.sc = work + g->sc_off, w.dp = work + g->dp_off;
    return w;
}

/* dst[i] = row rows[i] of head h of sequence b, i < n (contiguous n x D). */
static void gather(const lc_view *v, int b, int h, int D, const int *rows, int n, float *dst) {
    for (int i = 0; i < n; i++) memcpy(dst + (size_t)i * D, rt_row(v, b, rows[i], h, D), sizeof(float) * (size_t)D);
}

/* Scores of query t against the keys ks of block c that are NOT scored there become -inf: keys after the
 * query when causal (ks is sorted, so they are a suffix), and keys the query shares a lower centroid with. */
static void mask_row(const rt_geom *g, const rt_plan *p, int c, int t, const int *ks, float *row) {
    const int pos = g->M + t, W = g->W;
    const uint64_t *qm = p->qmask + (size_t)t * W;
    int j = 0;
    if (g->causal)
        while (j < g->wk && ks[j] <= pos) j++;
    else
        j = g->wk;
    for (int i = j; i < g->wk; i++) row[i] = -INFINITY;
    if (!rt_in_lower_centroid(qm, c)) return; /* the query's first centroid: nothing to deduplicate */
    for (int i = 0; i < j; i++)
        if (!rt_lowest_common_is(qm, p->kmask + (size_t)ks[i] * W, W, c)) row[i] = -INFINITY;
}

/* Whether query t's own key is scored in some centroid block (otherwise it is a separate self term). */
static int self_in_block(const rt_geom *g, const rt_plan *p, int t) {
    return rt_share_any(p->qmask + (size_t)t * g->W, p->kmask + (size_t)(g->M + t) * g->W, g->W);
}

/* Both passes start cluster c of head h of sequence b by gathering its keys and values into w->kg, w->vg
 * (its wk key positions in *ks); returns its wq query positions. */
static const int *cluster_begin(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, const rt_bufs *w, int b,
                                int h, int c, const int **ks) {
    *ks = p->ksel + (size_t)c * g->wk;
    gather(&t->k, b, h, g->D, *ks, g->wk, w->kg);
    gather(&t->v, b, h, g->D, *ks, g->wk, w->vg);
    return p->qsel + (size_t)c * g->wq;
}

static void forward_head(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, const rt_bufs *w, int b,
                         int h) {
    const int D = g->D, T = g->T, wq = g->wq, wk = g->wk, nthreads = g->threads;
    (void)nthreads;
    float *lse = t->lse + ((long)b * g->H + h) * T;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)T * D > 16384)
#endif
    for (int i = 0; i < T; i++) { /* the running softmax of every query starts with its self term, if any */
        float *out = rt_row_w(&t->out, b, i, h, D);
        if (self_in_block(g, p, i)) {
            w->m[i] = -INFINITY, w->l[i] = 0;
            memset(out, 0, sizeof(float) * (size_t)D);
        } else {
            w->m[i] = g->scale * rt_dot(rt_row(&t->q, b, i, h, D), rt_row(&t->k, b, g->M + i, h, D), D);
            w->l[i] = 1;
            memcpy(out, rt_row(&t->v, b, g->M + i, h, D), sizeof(float) * (size_t)D);
        }
    }
    for (int c = 0; c < g->C && wq > 0; c++) {
        const int *ks, *qs = cluster_begin(g, t, p, w, b, h, c, &ks);
        for (int r0 = 0; r0 < wq; r0 += g->R) {
            const int n = wq - r0 < g->R ? wq - r0 : g->R;
            gather(&t->q, b, h, D, qs + r0, n, w->qg);
            lc_gemm(LC_NO_TRANS, LC_TRANS, n, wk, D, g->scale, w->qg, D, w->kg, D, 0.0f, w->sc, wk);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)n * wk > 16384)
#endif
            for (int i = 0; i < n; i++) {
                float *row = w->sc + (size_t)i * wk;
                mask_row(g, p, c, qs[r0 + i], ks, row);
                float max = -INFINITY, sum = 0;
                for (int j = 0; j < wk; j++) max = row[j] > max ? row[j] : max;
                if (max == -INFINITY) max = 0; /* nothing scored here: P = 0, sum 0 */
                for (int j = 0; j < wk; j++) row[j] = lc_expf(row[j] - max);
                for (int j = 0; j < wk; j++) sum += row[j];
                w->rowm[i] = max, w->rowl[i] = sum;
            }
            lc_gemm(LC_NO_TRANS, LC_NO_TRANS, n, D, wk, 1.0f, w->sc, wk, w->vg, D, 0.0f, w->og, D);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)n * D > 16384)
#endif
            for (int i = 0; i < n; i++) { /* merge the block into the query's running softmax */
                if (w->rowl[i] == 0) continue;
                const int q = qs[r0 + i];
                const float m_old = w->m[q], m_new = m_old > w->rowm[i] ? m_old : w->rowm[i];
                const float a = m_old == -INFINITY ? 0.0f : lc_expf(m_old - m_new), e = lc_expf(w->rowm[i] - m_new);
                float *out = rt_row_w(&t->out, b, q, h, D);
                const float *blk = w->og + (size_t)i * D;
                for (int d = 0; d < D; d++) out[d] = out[d] * a + blk[d] * e;
                w->l[q] = w->l[q] * a + w->rowl[i] * e;
                w->m[q] = m_new;
            }
        }
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)T * D > 16384)
#endif
    for (int i = 0; i < T; i++) {
        float *out = rt_row_w(&t->out, b, i, h, D);
        const float inv = 1.0f / w->l[i]; /* l >= the self term's share > 0 */
        for (int d = 0; d < D; d++) out[d] *= inv;
        lse[i] = w->m[i] + logf(w->l[i]);
    }
}

void lc_attn_routing_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_routing_opts *o = opts;
    check_args(s, o, t);
    const rt_geom g = rt_geom_of(s, o, lc_attn_threads(s));
    const size_t cent = (size_t)g.H * g.C * g.D;
    float *live = t->state, *used = t->state + cent;
    memcpy(used, live, sizeof(float) * cent);
    if (g.S == 0) return;
    rt_build_plans(&g, t, used, t->train, work);
    const rt_bufs w = bufs_of(&g, work);
    for (int b = 0; b < g.B; b++)
        for (int h = 0; h < g.H; h++) {
            const rt_plan p = rt_plan_at(&g, work, b, h);
            forward_head(&g, t, &p, &w, b, h);
        }
    if (t->train) rt_update_centroids(&g, o, t, used, live, work);
}

/* dst row rows[i] += src row i, i < n (distinct rows: parallel-safe) */
static void scatter_add(const lc_view *v, int b, int h, int D, const int *rows, int n, const float *src, float mul,
                        int nthreads) {
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)n * D > 16384)
#endif
    for (int i = 0; i < n; i++) {
        float *dst = rt_row_w(v, b, rows[i], h, D);
        const float *x = src + (size_t)i * D;
        for (int d = 0; d < D; d++) dst[d] += mul * x[d];
    }
}

static void backward_head(const rt_geom *g, const lc_attn_tensors *t, const rt_plan *p, const rt_bufs *w, int b,
                          int h) {
    const int D = g->D, T = g->T, S = g->S, wq = g->wq, wk = g->wk, nthreads = g->threads;
    (void)nthreads;
    const float *lse = t->lse + ((long)b * g->H + h) * T;
    for (int s = 0; s < S; s++) {
        memset(rt_row_w(&t->dk, b, s, h, D), 0, sizeof(float) * (size_t)D);
        memset(rt_row_w(&t->dv, b, s, h, D), 0, sizeof(float) * (size_t)D);
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)T * D > 16384)
#endif
    for (int i = 0; i < T; i++) { /* Delta, and the self term (its key row belongs to this query alone) */
        const float *dout = rt_row(&t->dout, b, i, h, D), *out = rt_row(&t->out, b, i, h, D);
        double acc = 0;
        for (int d = 0; d < D; d++) acc += (double)dout[d] * out[d];
        const float delta = (float)acc;
        w->delta[i] = delta;
        float *dq = rt_row_w(&t->dq, b, i, h, D);
        memset(dq, 0, sizeof(float) * (size_t)D);
        if (self_in_block(g, p, i)) continue;
        const float *q = rt_row(&t->q, b, i, h, D), *k = rt_row(&t->k, b, g->M + i, h, D);
        const float prob = lc_expf(g->scale * rt_dot(q, k, D) - lse[i]);
        const float ds = prob * (rt_dot(dout, rt_row(&t->v, b, g->M + i, h, D), D) - delta);
        float *dk = rt_row_w(&t->dk, b, g->M + i, h, D), *dv = rt_row_w(&t->dv, b, g->M + i, h, D);
        for (int d = 0; d < D; d++) {
            dq[d] = g->scale * ds * k[d];
            dk[d] = g->scale * ds * q[d];
            dv[d] = prob * dout[d];
        }
    }
    for (int c = 0; c < g->C && wq > 0; c++) {
        const int *ks, *qs = cluster_begin(g, t, p, w, b, h, c, &ks);
        for (int r0 = 0; r0 < wq; r0 += g->R) {
            const int n = wq - r0 < g->R ? wq - r0 : g->R;
            const float beta = r0 == 0 ? 0.0f : 1.0f;
            gather(&t->q, b, h, D, qs + r0, n, w->qg);
            gather(&t->dout, b, h, D, qs + r0, n, w->dog);
            lc_gemm(LC_NO_TRANS, LC_TRANS, n, wk, D, g->scale, w->qg, D, w->kg, D, 0.0f, w->sc, wk);
            lc_gemm(LC_NO_TRANS, LC_TRANS, n, wk, D, 1.0f, w->dog, D, w->vg, D, 0.0f, w->dp, wk);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static) if ((long)n * wk > 16384)
#endif
            for (int i = 0; i < n; i++) { /* P (in sc) and dS = P (dP - Delta) (in dp) */
                const int q = qs[r0 + i];
                float *prow = w->sc + (size_t)i * wk, *drow = w->dp + (size_t)i * wk;
                mask_row(g, p, c, q, ks, prow);
                const float l = lse[q], dl = w->delta[q];
                for (int j = 0; j < wk; j++) prow[j] = lc_expf(prow[j] - l);
                for (int j = 0; j < wk; j++) drow[j] = prow[j] * (drow[j] - dl);
            }
            lc_gemm(LC_NO_TRANS, LC_NO_TRANS, n, D, wk, 1.0f, w->dp, wk, w->kg, D, 0.0f, w->og, D);
            scatter_add(&t->dq, b, h, D, qs + r0, n, w->og, g->scale, nthreads);
            lc_gemm(LC_TRANS, LC_NO_TRANS, wk, D, n, g->scale, w->dp, wk, w->qg, D, beta, w->dkg, D);
            lc_gemm(LC_TRANS, LC_NO_TRANS, wk, D, n, 1.0f, w->sc, wk, w->dog, D, beta, w->dvg, D);
        }
        scatter_add(&t->dk, b, h, D, ks, wk, w->dkg, 1.0f, nthreads);
        scatter_add(&t->dv, b, h, D, ks, wk, w->dvg, 1.0f, nthreads);
    }
}

void lc_attn_routing_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_routing_opts *o = opts;
    check_args(s, o, t);
    const rt_geom g = rt_geom_of(s, o, lc_attn_threads(s));
    if (g.S == 0) return;
    const float *used = t->state + (size_t)g.H * g.C * g.D;
    rt_build_plans(&g, t, used, 0, work);
    const rt_bufs w = bufs_of(&g, work);
    for (int b = 0; b < g.B; b++)
        for (int h = 0; h < g.H; h++) {
            const rt_plan p = rt_plan_at(&g, work, b, h);
            backward_head(&g, t, &p, &w, b, h);
        }
}

const lc_attn_kind lc_attn_routing = {
    .name = "routing",
    .options_help = "clusters=<centroids per head, or auto: the largest power of two C with C*C <= keys, the "
                    "default> window=<members per centroid, default ceil(S/C)> "
                    "decay=<centroid EMA decay, default 0.999>",
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY,
    .opts_size = sizeof(lc_attn_routing_opts),
    .opts_init = routing_opts_init,
    .opts_set = routing_opts_set,
    .check = routing_check,
    .workspace_floats = lc_attn_routing_workspace,
    .forward = lc_attn_routing_forward,
    .backward = lc_attn_routing_backward,
    .state_floats = lc_attn_routing_state_floats,
    .state_init = lc_attn_routing_state_init,
    .opts_plan = routing_opts_plan,
};
