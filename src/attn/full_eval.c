/* Forward of the full kind for a short block of queries against a long memory: Transformer-XL evaluation,
 * a segment of T queries (at most 256) after M cached keys, S = M + T >= 4T. The tiled kernel (full.c)
 * streams every key, value and position row of a head once per 64-query tile, with three 64 x 64 tile
 * products per key tile; here each (batch, head) is one task of three dense products through lc_gemm
 * (the BLAS when the build has one), which run nearer the machine's peak (experiments/xl-eval/README.md:
 * 1.06x faster with 128-query segments, 1.16x with 80, at 3,800 keys):
 *   scores = scale (q + u) k^T     [T x S]
 *   pos    = scale (q + v) r^T     [T x S], column d = distance d (r's rows are distances)
 *   out    = softmax(scores + pos at distance M + i - j) v
 * Row i of the scores reads row i of pos backwards from column M + i: the softmax loads pos in vectors
 * and reverses their lanes. The T x S buffers are the price (2 x 3.9 MB per thread at T = 128,
 * S = 3,800), which is why the path is for short query blocks only. When the caller keeps the keys and
 * the position rows as panels and the values as contiguous rows per head across calls (tensors.k_panels,
 * v_rows, rel->r_panels: the model's key/value cache in evaluation), the three products read those with
 * kernels of their own instead of asking lc_gemm to repack both operands of every head on every call
 * (kernels/panel.c). Same semantics as
 * lc_attn_full_forward (causal mask, window, relative positions, lse); results differ from the tiled
 * kernel in the last bits (another order of summation) and do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "attn/full_eval.h"
#include "attn/full_tile.h"
#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"
#include "kernels/vec.h"

/* Score rows have PAD columns on each side: the panel products write whole panels of 16 keys, which can
 * start up to 15 columns before the first key a row needs and end up to 15 after the last. */
enum { EVAL_MAX_T = 256, EVAL_MIN_KEYS_PER_QUERY = 4, PAD = LC_PANEL_ROWS };

/* One thread's buffers. */
typedef struct {
    float *qu, *qv, *scores, *pos, *acc, *inv_sum;
} eval_buffers;

/* The leading dimension of the score and position rows; column 0 of a row is PAD floats into it. */
static size_t row_floats(const lc_attn_shape *s) { return (size_t)s->M + s->T + 2 * PAD; }

static size_t thread_floats(const lc_attn_shape *s) {
    const size_t T = (size_t)s->T, D = (size_t)s->D;
    return 3 * lc_round16(T * D) + 2 * lc_round16(T * row_floats(s)) + lc_round16(T);
}

size_t lc_attn_full_eval_floats(const lc_attn_shape *s, int nthreads) {
    if (!s->causal || s->T <= 2 || s->T > EVAL_MAX_T || (long)s->M + s->T < (long)EVAL_MIN_KEYS_PER_QUERY * s->T)
        return 0;
    return (size_t)nthreads * thread_floats(s);
}

static eval_buffers buffers_for_thread(float *base, const lc_attn_shape *s, int thread) {
    const size_t T = (size_t)s->T, D = (size_t)s->D, ld = row_floats(s);
    float *p = base + (size_t)thread * thread_floats(s);
    eval_buffers w;
    w.qu = p, p += lc_round16(T * D);
    w.qv = p, p += lc_round16(T * D);
    w.acc = p, p += lc_round16(T * D);
    w.scores = p + PAD, p += lc_round16(T * ld);
    w.pos = p + PAD, p += lc_round16(T * ld);
    w.inv_sum = p;
    return w;
}

/* The first key query i sees. */
static int first_key(const lc_attn_shape *s, int i) {
    const int lo = s->window > 0 ? s->M + i - s->window + 1 : 0;
    return lo > 0 ? lo : 0;
}

/* The lanes of v in reverse order. */
static inline lc_vn reverse_lanes(lc_vn v) {
#ifdef __clang__ /* make fuzz: no __builtin_shuffle */
    lc_vn r;
    for (int i = 0; i < LC_VW; i++) r[i] = v[LC_VW - 1 - i];
    return r;
#elif LC_VW == 16
    return __builtin_shuffle(v, (lc_vni){15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
#elif LC_VW == 8
    return __builtin_shuffle(v, (lc_vni){7, 6, 5, 4, 3, 2, 1, 0});
#else
    return __builtin_shuffle(v, (lc_vni){3, 2, 1, 0});
#endif
}

/* Row i of the scores: add its position scores (key j at distance M + i - j: pos_row read backwards),
 * softmax over keys [lo, M + i], zeros elsewhere in [k0, S); the row's lse and 1 / sum out. Native
 * vectors (lc_vn), the tail in scalars. */
static void softmax_row(const lc_attn_shape *s, float *row, const float *pos_row, int i, int k0, float *lse,
                        float *inv_sum) {
    const int lo = first_key(s, i), hi = s->M + i, S = s->M + s->T, n = hi - lo + 1;
    float *x = row + lo;
    const float *p = pos_row ? pos_row + (hi - lo) : NULL; /* p[-j]: the distance of key lo + j */
    lc_vn vmax = (lc_vn){0} - INFINITY, vsum = {0};
    int j = 0;
    for (; j + LC_VW <= n; j += LC_VW) {
        lc_vn v = lc_vnload(x + j);
        if (p) v += reverse_lanes(lc_vnload(p - j - (LC_VW - 1)));
        lc_vnstore(x + j, v);
        vmax = lc_vnselect(v > vmax, v, vmax);
    }
    float max = -INFINITY, sum = 0;
    for (int l = 0; l < LC_VW; l++) max = vmax[l] > max ? vmax[l] : max;
    for (; j < n; j++) {
        if (p) x[j] += p[-j];
        max = x[j] > max ? x[j] : max;
    }
    const lc_vn vm = (lc_vn){0} + max;
    for (j = 0; j + LC_VW <= n; j += LC_VW) {
        const lc_vn e = lc_vnexp(lc_vnload(x + j) - vm);
        lc_vnstore(x + j, e);
        vsum += e;
    }
    for (int l = 0; l < LC_VW; l++) sum += vsum[l];
    for (; j < n; j++) {
        x[j] = lc_expf(x[j] - max);
        sum += x[j];
    }
    if (lo > k0) memset(row + k0, 0, sizeof(float) * (size_t)(lo - k0));
    if (hi + 1 < S) memset(row + hi + 1, 0, sizeof(float) * (size_t)(S - hi - 1));
    *lse = max + logf(sum);
    *inv_sum = 1.0f / sum;
}

/* out[i][c] = scale * a_i . row c of the store, for the columns c in [c0, c1) of the view whose row 0 is the
 * store's row row0: whole panels, so out gets up to 15 more columns on each side (the rows' PAD). */
static void panel_scores(const lc_attn_shape *s, const float *a, const float *store, int row0, int c0, int c1,
                         float *out, long ld) {
    const int first = (row0 + c0) / LC_PANEL_ROWS, end = (row0 + c1 + LC_PANEL_ROWS - 1) / LC_PANEL_ROWS;
    lc_panel_gemm(s->T, end - first, s->D, s->scale, a, s->D, store + (size_t)first * LC_PANEL_ROWS * s->D,
                  out + ((long)first * LC_PANEL_ROWS - row0), ld);
}

static void eval_head(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, eval_buffers *w) {
    const int T = s->T, M = s->M, S = M + T, D = s->D;
    const long HD = (long)s->H * D, ld = (long)row_floats(s);
    const lc_attn_relpos *rel = t->rel;
    const int k0 = first_key(s, 0); /* no row sees a key before this one */
    for (int i = 0; i < T; i++) {
        const float *q = lc_view_row(&t->q, b, i, h, D);
        for (int d = 0; d < D; d++) {
            w->qu[(size_t)i * D + d] = q[d] + (rel ? rel->u[(long)h * D + d] : 0.0f);
            if (rel) w->qv[(size_t)i * D + d] = q[d] + rel->v[(long)h * D + d];
        }
    }
    /* scores[i][j] for keys j >= k0 (the columns before k0 are never read) */
    const lc_attn_store *kp = &t->k_panels;
    if (kp->p)
        panel_scores(s, w->qu, kp->p + b * kp->sb + h * kp->sh, kp->row0, k0, S, w->scores, ld);
    else
        lc_gemm(LC_NO_TRANS, LC_TRANS, T, S - k0, D, s->scale, w->qu, D, lc_view_row(&t->k, b, k0, h, D),
                (int)t->k.st, 0.0f, w->scores + k0, (int)ld);
    if (rel) { /* pos[i][d] for the distances 0 .. the farthest any row sees */
        int far = 0;
        for (int i = 0; i < T; i++) far = lc_imax(far, M + i - first_key(s, i));
        const lc_attn_store *rp = &rel->r_panels;
        if (rp->p)
            panel_scores(s, w->qv, rp->p + h * rp->sh, rp->row0, 0, far + 1, w->pos, ld);
        else
            lc_gemm(LC_NO_TRANS, LC_TRANS, T, far + 1, D, s->scale, w->qv, D, rel->r + (long)h * D, (int)HD, 0.0f,
                    w->pos, (int)ld);
    }
    float *lse = t->lse + ((long)b * s->H + h) * T;
    for (int i = 0; i < T; i++)
        softmax_row(s, w->scores + (size_t)i * ld, rel ? w->pos + (size_t)i * ld : NULL, i, k0, &lse[i],
                    &w->inv_sum[i]);
    const lc_attn_store *vr = &t->v_rows;
    if (vr->p && lc_rows_gemm_fits(D))
        lc_rows_gemm(T, D, S - k0, w->scores + k0, (int)ld, vr->p + b * vr->sb + h * vr->sh + (long)(vr->row0 + k0) * D,
                     D, w->acc, D);
    else
        lc_gemm(LC_NO_TRANS, LC_NO_TRANS, T, D, S - k0, 1.0f, w->scores + k0, (int)ld,
                lc_view_row(&t->v, b, k0, h, D), (int)t->v.st, 0.0f, w->acc, D);
    for (int i = 0; i < T; i++) {
        float *out = lc_view_row(&t->out, b, i, h, D);
        for (int d = 0; d < D; d++) out[d] = w->acc[(size_t)i * D + d] * w->inv_sum[i];
    }
}

/* What each (batch, head) reads. */
typedef struct {
    const lc_attn_shape *s;
    const lc_attn_tensors *t;
    float *base;
} eval_job;

static void eval_task(const void *job, int b, int h) {
    const eval_job *j = job;
    eval_buffers w = buffers_for_thread(j->base, j->s, lc_thread_id());
    eval_head(j->s, j->t, b, h, &w);
}

int lc_attn_full_eval(const lc_attn_shape *s, const lc_attn_tensors *t, float *work) {
    const int nthreads = lc_attn_threads(s);
    if (!lc_attn_full_eval_floats(s, nthreads)) return 0;
    const eval_job job = {s, t, full_workspace_base(work)};
    full_each_head(s->B, s->H, nthreads, eval_task, &job);
    return 1;
}
