/* The `block` attention kind, and the arithmetic-progression engine that block and strided share
 * (block.h). The engine works row by row, vectorized over D with 16-float GCC vectors:
 *   forward, one task per query row: stream its keys in chunks of 64 (scores, chunk max, one rescale of
 *     the accumulator, vector exp, out += p v), save lse;
 *   backward: Delta_t = rowsum(dout out); then a query pass (dq = scale sum_s dS_ts k_s) and a key pass
 *     (dv_s = sum_t P_ts dout_t, dk_s = scale sum_t dS_ts q_t), P recomputed from lse, dS = P (dP - Delta).
 * Every row is written by exactly one task that sums in a fixed order: bit-identical for any thread
 * count, no atomics. Tasks are runs of 64 rows in the pattern's order, handed out dynamically. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/block.h"
#include "attn/full_tile.h"
#include "core/threads.h"

enum { PROG_CHUNK = 64, PROG_TASK_ROWS = 64 };

/* ---------------------------------------------------------------- row kernels */

static inline float *prog_row(const lc_view *v, int b, int t, int h, int D) {
    return v->p + (long)b * v->sb + (long)t * v->st + (long)h * D;
}

/* a . b over D floats, in a fixed order */
static inline float prog_dot(const float *a, const float *b, int D) {
    full_v16 acc = {0};
    int d = 0;
    for (; d + 16 <= D; d += 16) acc += full_vload(a + d) * full_vload(b + d);
    float s = full_hsum(acc);
    for (; d < D; d++) s += a[d] * b[d];
    return s;
}

/* y += a x over D floats */
static inline void prog_axpy(float *y, float a, const float *x, int D) {
    int d = 0;
    for (; d + 16 <= D; d += 16) full_vstore(y + d, full_vload(y + d) + a * full_vload(x + d));
    for (; d < D; d++) y[d] += a * x[d];
}

static inline int prog_at(int (*order)(const void *, int), const void *ctx, int i) {
    return order ? order(ctx, i) : i;
}

/* One query row: out_t = softmax(scale q_t . k_s) v_s over its keys, online softmax; lse saved. */
static void forward_row(const lc_attn_shape *sh, const lc_attn_pattern *pat, const lc_attn_tensors *t, int b, int h,
                        int row, float *qs, float *acc) {
    const int D = sh->D;
    const float *q = prog_row(&t->q, b, row, h, D);
    for (int d = 0; d < D; d++) qs[d] = sh->scale * q[d], acc[d] = 0;
    const lc_attn_progression keys = pat->keys_of(pat->ctx, row);
    assert(keys.count > 0);
    float run_max = -INFINITY, run_sum = 0;
    float score[PROG_CHUNK] __attribute__((aligned(64)));
    for (int c0 = 0; c0 < keys.count; c0 += PROG_CHUNK) {
        const int n = full_min(PROG_CHUNK, keys.count - c0);
        const int key0 = keys.first + c0 * keys.step;
        float chunk_max = -INFINITY;
        for (int j = 0; j < n; j++) {
            score[j] = prog_dot(qs, prog_row(&t->k, b, key0 + j * keys.step, h, D), D);
            chunk_max = score[j] > chunk_max ? score[j] : chunk_max;
        }
        if (chunk_max > run_max) {
            const float correction = run_max == -INFINITY ? 0.0f : expf(run_max - chunk_max);
            run_sum *= correction;
            for (int d = 0; d < D; d++) acc[d] *= correction;
            run_max = chunk_max;
        }
        for (int j = n; j < full_round_up(n, 16); j++) score[j] = -INFINITY;
        full_v16 sum = {0};
        for (int j = 0; j < n; j += 16) {
            const full_v16 p = full_vexp(full_vload(score + j) - run_max);
            full_vstore(score + j, p);
            sum += p;
        }
        run_sum += full_hsum(sum);
        for (int j = 0; j < n; j++) prog_axpy(acc, score[j], prog_row(&t->v, b, key0 + j * keys.step, h, D), D);
    }
    float *out = prog_row(&t->out, b, row, h, D);
    const float inv_sum = 1.0f / run_sum; /* the row max contributes exp(0) = 1 */
    for (int d = 0; d < D; d++) out[d] = acc[d] * inv_sum;
    t->lse[((size_t)b * sh->H + h) * sh->T + row] = run_max + logf(run_sum);
}

/* dq of one query row: dq_t = scale sum_s P_ts (dout_t . v_s - Delta_t) k_s. */
static void query_grad_row(const lc_attn_shape *sh, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                           const float *delta, int b, int h, int row, float *qs, float *acc) {
    const int D = sh->D;
    const float *q = prog_row(&t->q, b, row, h, D), *dout = prog_row(&t->dout, b, row, h, D);
    for (int d = 0; d < D; d++) qs[d] = sh->scale * q[d], acc[d] = 0;
    const size_t r = ((size_t)b * sh->H + h) * sh->T + row;
    const float lse = t->lse[r], row_delta = delta[r];
    const lc_attn_progression keys = pat->keys_of(pat->ctx, row);
    float p[PROG_CHUNK] __attribute__((aligned(64))), dp[PROG_CHUNK] __attribute__((aligned(64)));
    for (int c0 = 0; c0 < keys.count; c0 += PROG_CHUNK) {
        const int n = full_min(PROG_CHUNK, keys.count - c0);
        const int key0 = keys.first + c0 * keys.step;
        for (int j = 0; j < n; j++) {
            const int key = key0 + j * keys.step;
            p[j] = prog_dot(qs, prog_row(&t->k, b, key, h, D), D);
            dp[j] = prog_dot(dout, prog_row(&t->v, b, key, h, D), D);
        }
        for (int j = n; j < full_round_up(n, 16); j++) p[j] = -INFINITY, dp[j] = 0;
        for (int j = 0; j < n; j += 16) {
            const full_v16 prob = full_vexp(full_vload(p + j) - lse);
            full_vstore(dp + j, prob * (full_vload(dp + j) - row_delta));
        }
        for (int j = 0; j < n; j++) prog_axpy(acc, dp[j], prog_row(&t->k, b, key0 + j * keys.step, h, D), D);
    }
    float *dq = prog_row(&t->dq, b, row, h, D);
    for (int d = 0; d < D; d++) dq[d] = sh->scale * acc[d];
}

/* dk and dv of one key row s: dv_s = sum_t P_ts dout_t, dk_s = scale sum_t dS_ts q_t. */
static void key_grad_row(const lc_attn_shape *sh, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                         const float *delta, int b, int h, int key, float *dk_acc, float *dv_acc) {
    const int D = sh->D;
    const float *k = prog_row(&t->k, b, key, h, D), *v = prog_row(&t->v, b, key, h, D);
    for (int d = 0; d < D; d++) dk_acc[d] = 0, dv_acc[d] = 0;
    const lc_attn_progression queries = pat->queries_of(pat->ctx, key);
    const size_t r0 = ((size_t)b * sh->H + h) * sh->T;
    float p[PROG_CHUNK] __attribute__((aligned(64))), ds[PROG_CHUNK] __attribute__((aligned(64)));
    float lse[PROG_CHUNK] __attribute__((aligned(64))), dl[PROG_CHUNK] __attribute__((aligned(64)));
    for (int c0 = 0; c0 < queries.count; c0 += PROG_CHUNK) {
        const int n = full_min(PROG_CHUNK, queries.count - c0);
        const int row0 = queries.first + c0 * queries.step;
        for (int i = 0; i < n; i++) {
            const int row = row0 + i * queries.step;
            p[i] = sh->scale * prog_dot(prog_row(&t->q, b, row, h, D), k, D);
            ds[i] = prog_dot(prog_row(&t->dout, b, row, h, D), v, D);
            lse[i] = t->lse[r0 + row], dl[i] = delta[r0 + row];
        }
        for (int i = n; i < full_round_up(n, 16); i++) p[i] = -INFINITY, ds[i] = 0, lse[i] = 0, dl[i] = 0;
        for (int i = 0; i < n; i += 16) {
            const full_v16 prob = full_vexp(full_vload(p + i) - full_vload(lse + i));
            full_vstore(p + i, prob);
            full_vstore(ds + i, prob * (full_vload(ds + i) - full_vload(dl + i)));
        }
        for (int i = 0; i < n; i++) {
            const int row = row0 + i * queries.step;
            prog_axpy(dv_acc, p[i], prog_row(&t->dout, b, row, h, D), D);
            prog_axpy(dk_acc, ds[i], prog_row(&t->q, b, row, h, D), D);
        }
    }
    float *dk = prog_row(&t->dk, b, key, h, D), *dv = prog_row(&t->dv, b, key, h, D);
    for (int d = 0; d < D; d++) dk[d] = sh->scale * dk_acc[d], dv[d] = dv_acc[d];
}

/* ---------------------------------------------------------------- drivers */

/* Workspace: [16 floats of alignment slack][per thread: 2 x D_pad][Delta: B*H*T]. */
size_t lc_attn_progression_workspace(const lc_attn_shape *s, int nthreads) {
    if (nthreads < 1) nthreads = 1;
    return 16 + (size_t)nthreads * 2 * full_round_up(s->D, 16) + (size_t)s->B * s->H * s->T;
}

static void check_shape(const lc_attn_shape *s, const lc_attn_tensors *t) {
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->M >= 0 && s->D > 0);
    assert(s->window == 0); /* the pattern decides what each query sees */
    assert(t->rel == NULL); /* relative positions are not supported by the sparse kinds */
    (void)s, (void)t;
}

void lc_attn_progression_forward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                 float *work) {
    check_shape(s, t);
    if (s->B == 0 || s->H == 0 || s->T == 0) return;
    const int nthreads = lc_get_threads(), D_pad = full_round_up(s->D, 16);
    (void)nthreads; /* only the OpenMP build uses it */
    float *base = full_workspace_base(work);
    const long per_head = (s->T + PROG_TASK_ROWS - 1) / PROG_TASK_ROWS, tasks = (long)s->B * s->H * per_head;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < tasks; task++) {
        float *w = base + (size_t)lc_thread_id() * 2 * D_pad;
        const long head = task / per_head;
        const int b = (int)(head / s->H), h = (int)(head % s->H), i0 = (int)(task % per_head) * PROG_TASK_ROWS;
        for (int i = i0; i < full_min(s->T, i0 + PROG_TASK_ROWS); i++)
            forward_row(s, pat, t, b, h, prog_at(pat->query_at, pat->ctx, i), w, w + D_pad);
    }
}

void lc_attn_progression_backward(const lc_attn_shape *s, const lc_attn_pattern *pat, const lc_attn_tensors *t,
                                  float *work) {
    check_shape(s, t);
    const int S = s->M + s->T;
    if (s->B == 0 || s->H == 0) return;
    if (s->T == 0) { /* no queries: nothing flows back, but every row of dk and dv is written */
        for (int b = 0; b < s->B; b++)
            for (int j = 0; j < S; j++)
                for (int h = 0; h < s->H; h++) {
                    memset(prog_row(&t->dk, b, j, h, s->D), 0, sizeof(float) * s->D);
                    memset(prog_row(&t->dv, b, j, h, s->D), 0, sizeof(float) * s->D);
                }
        return;
    }
    const int nthreads = lc_get_threads(), D_pad = full_round_up(s->D, 16);
    (void)nthreads;
    float *base = full_workspace_base(work);
    float *delta = base + (size_t)nthreads * 2 * D_pad;
    const long rows = (long)s->B * s->H * s->T;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static)
#endif
    for (long r = 0; r < rows; r++) {
        const int row = (int)(r % s->T), h = (int)(r / s->T % s->H), b = (int)(r / s->T / s->H);
        const float *dout = prog_row(&t->dout, b, row, h, s->D), *out = prog_row(&t->out, b, row, h, s->D);
        double sum = 0;
        for (int d = 0; d < s->D; d++) sum += (double)dout[d] * out[d];
        delta[r] = (float)sum;
    }
    /* query pass: dq */
    const long q_per_head = (s->T + PROG_TASK_ROWS - 1) / PROG_TASK_ROWS, q_tasks = (long)s->B * s->H * q_per_head;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < q_tasks; task++) {
        float *w = base + (size_t)lc_thread_id() * 2 * D_pad;
        const long head = task / q_per_head;
        const int b = (int)(head / s->H), h = (int)(head % s->H), i0 = (int)(task % q_per_head) * PROG_TASK_ROWS;
        for (int i = i0; i < full_min(s->T, i0 + PROG_TASK_ROWS); i++)
            query_grad_row(s, pat, t, delta, b, h, prog_at(pat->query_at, pat->ctx, i), w, w + D_pad);
    }
    /* key pass: dk, dv of all S rows (rows no query sees get 0) */
    const long k_per_head = (S + PROG_TASK_ROWS - 1) / PROG_TASK_ROWS, k_tasks = (long)s->B * s->H * k_per_head;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long task = 0; task < k_tasks; task++) {
        float *w = base + (size_t)lc_thread_id() * 2 * D_pad;
        const long head = task / k_per_head;
        const int b = (int)(head / s->H), h = (int)(head % s->H), i0 = (int)(task % k_per_head) * PROG_TASK_ROWS;
        for (int i = i0; i < full_min(S, i0 + PROG_TASK_ROWS); i++)
            key_grad_row(s, pat, t, delta, b, h, prog_at(pat->key_at, pat->ctx, i), w, w + D_pad);
    }
}

/* ---------------------------------------------------------------- the block pattern */

typedef struct {
    long b; /* block size */
    int M, S, causal;
} block_ctx;

static lc_attn_progression block_keys_of(const void *ctx, int t) {
    const block_ctx *c = ctx;
    const long p = c->M + t, start = p / c->b * c->b;
    lc_attn_progression r = {0, 1, 0};
    if (c->causal) {
        r.first = (int)(start - c->b > 0 ? start - c->b : 0);
        r.count = (int)(p - r.first + 1);
    } else {
        r.first = (int)start;
        r.count = (int)((start + c->b < c->S ? start + c->b : c->S) - start);
    }
    return r;
}

static lc_attn_progression block_queries_of(const void *ctx, int s) {
    const block_ctx *c = ctx;
    const long start = s / c->b * c->b;
    /* positions [lo, hi) that see key s: its block (causal: from s on) and, causal, the next block */
    long lo = c->causal ? s : start, hi = start + (c->causal ? 2 : 1) * c->b;
    lo = lo > c->M ? lo : c->M;
    hi = hi < c->S ? hi : c->S;
    lc_attn_progression r = {(int)(lo - c->M), 1, hi > lo ? (int)(hi - lo) : 0};
    return r;
}

static block_ctx block_ctx_of(const lc_attn_shape *s, const void *opts) {
    const lc_attn_block_opts *o = opts;
    assert(o && o->block >= 1);
    block_ctx c = {o->block, s->M, s->M + s->T, s->causal != 0};
    return c;
}

static size_t block_workspace(const lc_attn_shape *s, const void *opts, int nthreads) {
    (void)opts;
    return lc_attn_progression_workspace(s, nthreads);
}

static void block_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const block_ctx c = block_ctx_of(s, opts);
    const lc_attn_pattern pat = {block_keys_of, block_queries_of, NULL, NULL, &c};
    lc_attn_progression_forward(s, &pat, t, work);
}

static void block_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const block_ctx c = block_ctx_of(s, opts);
    const lc_attn_pattern pat = {block_keys_of, block_queries_of, NULL, NULL, &c};
    lc_attn_progression_backward(s, &pat, t, work);
}

const lc_attn_kind lc_attn_block = {"block", block_workspace, block_forward, block_backward};
