/* The `linformer` attention kind (linformer.h): sequence-axis projections of keys and values, then dense
 * softmax attention over the k projected rows.
 *
 * Every product is an lc_gemm call (BLAS when built with it; lc_gemm's results do not depend on the thread
 * count nor on whether it is called inside a parallel region). Per pass:
 *   projections: K' = E_S K, V' = F_S V (k x D per head). When the heads share E and F (share=headwise,
 *             kv) one product per sequence computes all its heads (N = H*D columns: a row of K holds the
 *             heads side by side), so E is packed once per sequence, not once per head; share=kv with the
 *             values right after the keys in a row (the fused qkv buffer of a one-group layer): one product
 *             E_S [K | V] for both (N = 2*H*D); share=none: one product per (sequence, head).
 *   per (sequence, head), per block of <= 512 query rows:
 *     forward:  Sc = scale Q K'^T, row softmax (lse saved), out = P V' (P left unnormalized, the row's
 *               1 / sum applied to its D outputs instead of its k probabilities)
 *     backward: Sc and P again, dP = dout V'^T, dS = P (dP - Delta) with Delta = rowsum(dout * out);
 *               dq = scale dS K' (written), dK' += scale dS^T Q, dV' += P^T dout
 *   backward, then: dk = E_S^T dK', dv = F_S^T dV' (written; per sequence or per head as the projections)
 *             and dE_S^T += K dK'^T, dF_S^T += V dV'^T accumulated into dparams in the order b, head group,
 *             keys before values (shared: one product per sequence, the sum over heads its inner dimension;
 *             share=kv side by side: dE_S^T += [K | V] [dK' | dV']^T, one product).
 * Backward recomputes K', V' (one product per sequence, about a tenth of the kind's time at 4K tokens,
 * k = 256): the attention interface keeps no per-layer state from forward to backward besides lse, and
 * the workspace is shared by every layer.
 * Tasks (sequences or heads) run in parallel; each sums in a fixed order, so results are identical for
 * any thread count. */
#include "attn/linformer.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/vec.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

enum { LIN_BLOCK_ROWS = 512 };

static void linformer_opts_init(void *opts, int H) {
    lc_attn_linformer_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->k = 256;
    o->share = LC_LINFORMER_SHARE_HEADWISE;
    (void)H;
}

static int linformer_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_linformer_opts *o = opts;
    (void)H;
    if (strcmp(key, "k") == 0) return lc_attn_opt_int(key, value, 1, 1 << 20, &o->k, err, errlen);
    if (strcmp(key, "share") == 0) {
        if (strcmp(value, "none") == 0)
            o->share = LC_LINFORMER_SHARE_NONE;
        else if (strcmp(value, "headwise") == 0)
            o->share = LC_LINFORMER_SHARE_HEADWISE;
        else if (strcmp(value, "kv") == 0)
            o->share = LC_LINFORMER_SHARE_KV;
        else if (strcmp(value, "layerwise") == 0)
            return snprintf(err, errlen,
                            "option share=layerwise: layerwise sharing is done by the model giving several layers "
                            "the same parameters; use share=none|headwise|kv here"),
                   -1;
        else
            return snprintf(err, errlen, "option share=%s: expected none, headwise or kv", value), -1;
        return 0;
    }
    return lc_attn_opt_unknown(&lc_attn_linformer, key, err, errlen);
}

static int linformer_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                           size_t errlen) {
    const lc_attn_linformer_opts *o = opts;
    if (o->k < 1) return snprintf(err, errlen, "linformer: k=%d must be >= 1", o->k), -1;
    if (o->share < LC_LINFORMER_SHARE_NONE || o->share > LC_LINFORMER_SHARE_KV)
        return snprintf(err, errlen, "linformer: unknown share mode %d", o->share), -1;
    return 0;
}

int lc_attn_linformer_projections(const lc_attn_linformer_opts *o, int H) {
    return o->share == LC_LINFORMER_SHARE_NONE ? 2 * H : o->share == LC_LINFORMER_SHARE_HEADWISE ? 2 : 1;
}

int lc_attn_linformer_key_proj(const lc_attn_linformer_opts *o, int h) {
    return o->share == LC_LINFORMER_SHARE_NONE ? 2 * h : 0;
}

int lc_attn_linformer_value_proj(const lc_attn_linformer_opts *o, int h) {
    return o->share == LC_LINFORMER_SHARE_NONE ? 2 * h + 1 : o->share == LC_LINFORMER_SHARE_HEADWISE ? 1 : 0;
}

size_t lc_attn_linformer_param_floats(const void *opts, int H, int D, int max_len) {
    const lc_attn_linformer_opts *o = opts;
    (void)D;
    return (size_t)(max_len > 0 ? max_len : 0) * (size_t)lc_attn_linformer_projections(o, H) * (size_t)o->k;
}

/* xavier-uniform, gain 1/sqrt(2), per k x n matrix; draws in the order p, row j, column s. */
void lc_attn_linformer_param_init(float *params, const void *opts, int H, int D, int max_len, uint64_t seed) {
    const lc_attn_linformer_opts *o = opts;
    (void)D;
    const int P = lc_attn_linformer_projections(o, H), K = o->k;
    const float a = (float)sqrt(3.0 / ((double)K + (double)max_len));
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int p = 0; p < P; p++)
        for (int j = 0; j < K; j++)
            for (int s = 0; s < max_len; s++)
                params[((size_t)s * P + p) * K + j] = a * (2.0f * lc_rng_uniform(&rng) - 1.0f);
}

static int block_rows(const lc_attn_shape *s) { return s->T < LIN_BLOCK_ROWS ? (s->T > 0 ? s->T : 1) : LIN_BLOCK_ROWS; }

/* Layout: per thread two blocks of rows x k (scores / P, dP / dS); then per sequence X = [K' | V'] and
 * dX = [dK' | dV'] of all its heads, each k x 2*H*D: K' of head h in columns h*D .. h*D+D-1 (the layout of a
 * row of t->k), V' of head h at H*D + h*D (the layout of a row of [t->k | t->v] when the fused qkv buffer
 * has them side by side). When the heads share E (or F) the projections of a sequence are then one
 * product over all its heads (a product per head repacked the whole k x S matrix E for D columns of
 * output), and with share=kv and side-by-side keys and values one product over keys and values. */
static size_t per_thread_floats(const lc_attn_shape *s, const lc_attn_linformer_opts *o) {
    return 2 * lc_round16((size_t)block_rows(s) * (size_t)o->k);
}

static size_t per_sequence_floats(const lc_attn_shape *s, const lc_attn_linformer_opts *o) {
    return 2 * lc_round16(2 * (size_t)o->k * (size_t)s->H * (size_t)s->D);
}

size_t lc_attn_linformer_workspace(const lc_attn_shape *s, const void *opts) {
    const lc_attn_linformer_opts *o = opts;
    return (size_t)lc_attn_threads(s) * per_thread_floats(s, o) + (size_t)s->B * per_sequence_floats(s, o);
}

typedef struct {
    int K, P, rows, ld; /* ld: row stride of kp, vp, dkp, dvp (2 * H * D) */
    float *kp, *vp, *dkp, *dvp, *sc, *dp;
} lin_work;

/* The scratch of thread `thread` (negative: none) and K', V', dK', dV' of head h of sequence b (h = 0: the
 * sequence's matrices of all heads; kp and vp, dkp and dvp are then the halves of X, dX). */
static lin_work lin_work_of(const lc_attn_shape *s, const lc_attn_linformer_opts *o, float *work, int thread, int b,
                            int h) {
    lin_work w;
    const size_t HD = (size_t)s->H * s->D;
    w.K = o->k, w.P = lc_attn_linformer_projections(o, s->H), w.rows = block_rows(s), w.ld = 2 * (int)HD;
    const size_t blk = lc_round16((size_t)w.rows * (size_t)o->k), half = per_sequence_floats(s, o) / 2;
    float *mine = thread >= 0 ? work + (size_t)thread * per_thread_floats(s, o) : NULL;
    w.sc = mine, w.dp = mine ? mine + blk : NULL;
    float *seq = work + (size_t)lc_attn_threads(s) * per_thread_floats(s, o) + (size_t)b * per_sequence_floats(s, o) +
                 (size_t)h * s->D;
    w.kp = seq, w.vp = seq + HD, w.dkp = seq + half, w.dvp = seq + half + HD;
    return w;
}

static void check_args(const lc_attn_shape *s, const lc_attn_linformer_opts *o, const lc_attn_tensors *t) {
    assert(o && o->k >= 1);
    assert(!s->causal && s->M == 0 && !s->window && !t->rel && !t->global);
    assert(s->T == 0 || t->params);
    (void)s, (void)o, (void)t;
}

/* Shared projections (headwise, kv): one product per sequence covers its H heads (N = H*D columns);
 * share=none: one per (sequence, head), each head with its own E, F. */
static int heads_per_product(const lc_attn_shape *s, const lc_attn_linformer_opts *o) {
    return o->share == LC_LINFORMER_SHARE_NONE ? 1 : s->H;
}

/* Whether values sit right after keys in every row (v = k + H*D columns, same strides), as in the fused
 * qkv buffer of a layer with one head group: [K | V] is then one S x 2HD matrix. */
static int side_by_side(const lc_attn_shape *s, const lc_view *k, const lc_view *v) {
    return k->p && v->p == k->p + (long)s->H * s->D && v->st == k->st && v->sb == k->sb;
}

/* share=kv with side-by-side inputs: one product E_S [K | V] for keys and values of all heads. */
static int kv_fused(const lc_attn_shape *s, const lc_attn_linformer_opts *o, const lc_view *k, const lc_view *v) {
    return o->share == LC_LINFORMER_SHARE_KV && side_by_side(s, k, v);
}

/* One product with E_S (S x K, row stride ld) on n columns: the projection Y = E_S^T X (X: S rows of
 * stride xst; Y: K rows of stride yld) or the expansion X = E_S Y. */
static void product(int expansion, int S, int K, int n, const float *E, int ld, float *x, int xst, float *y,
                    int yld) {
    if (expansion) lc_gemm(LC_NO_TRANS, LC_NO_TRANS, S, n, K, 1.0f, E, ld, y, yld, 0.0f, x, xst);
    else lc_gemm(LC_TRANS, LC_NO_TRANS, K, n, S, 1.0f, E, ld, x, xst, 0.0f, y, yld);
}

/* K' = E_S K, V' = F_S V (expansion = 0), or dK = E_S dK', dV = F_S dV' once all the row blocks are done
 * (expansion = 1), of heads_per_product heads from head h0 of sequence b. */
static void project_or_expand(const lc_attn_shape *s, const lc_attn_linformer_opts *o, const lc_attn_tensors *t,
                              float *work, int b, int h0, int expansion) {
    const lin_work w = lin_work_of(s, o, work, -1, b, h0);
    const int S = s->T, D = s->D, N = heads_per_product(s, o) * D, ld = w.P * w.K;
    const float *E = t->params + (size_t)lc_attn_linformer_key_proj(o, h0) * w.K;
    const float *F = t->params + (size_t)lc_attn_linformer_value_proj(o, h0) * w.K;
    const lc_view *k = expansion ? &t->dk : &t->k, *v = expansion ? &t->dv : &t->v;
    float *kp = expansion ? w.dkp : w.kp, *vp = expansion ? w.dvp : w.vp;
    if (kv_fused(s, o, k, v)) { /* [K' | V'] = E_S [K | V] (E = F), or its expansion */
        product(expansion, S, w.K, 2 * N, E, ld, lc_view_row(k, b, 0, 0, D), (int)k->st, kp, w.ld);
        return;
    }
    product(expansion, S, w.K, N, E, ld, lc_view_row(k, b, 0, h0, D), (int)k->st, kp, w.ld);
    product(expansion, S, w.K, N, F, ld, lc_view_row(v, b, 0, h0, D), (int)v->st, vp, w.ld);
}

/* All projection (expand = 0) or expansion (expand = 1) tasks of a pass. With at least as many tasks as
 * threads, one task per thread at a time (serial products inside); otherwise the tasks in order, each
 * product split over the threads by lc_gemm (same bits either way: lc_gemm's do not depend on the thread
 * count nor on the parallel region). */
static void run_products(const lc_attn_shape *s, const lc_attn_linformer_opts *o, const lc_attn_tensors *t,
                         float *work, int expansion) {
    const int nthreads = lc_attn_threads(s), per = heads_per_product(s, o), groups = s->H / per;
    const long tasks = (long)s->B * groups;
    (void)nthreads;
    if (tasks >= nthreads) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1) if (nthreads > 1)
#endif
        for (long i = 0; i < tasks; i++) {
            const int b = (int)(i / groups), h0 = (int)(i % groups) * per;
            project_or_expand(s, o, t, work, b, h0, expansion);
        }
    } else {
        for (long i = 0; i < tasks; i++) {
            const int b = (int)(i / groups), h0 = (int)(i % groups) * per;
            project_or_expand(s, o, t, work, b, h0, expansion);
        }
    }
}

/* The row passes over the k scores are explicit vector loops (lc_vn): without -ffast-math GCC keeps a max
 * or a float sum over a row scalar (one dependent vmaxss / vaddss per score: most of the softmax time).
 * Lanes reduce in a fixed order, so results do not depend on the thread count. */

/* Largest of r[0..K). */
static inline float row_max(const float *r, int K) {
    float m = -INFINITY;
    int j = 0;
    if (K >= LC_VW) {
        lc_vn acc = lc_vnload(r);
        for (j = LC_VW; j + LC_VW <= K; j += LC_VW) {
            const lc_vn x = lc_vnload(r + j);
            acc = lc_vnselect(x > acc, x, acc);
        }
        float l[LC_VW];
        memcpy(l, &acc, sizeof l);
        for (int i = 0; i < LC_VW; i++) m = l[i] > m ? l[i] : m;
    }
    for (; j < K; j++) m = r[j] > m ? r[j] : m;
    return m;
}

/* r[j] = exp(r[j] - max) in place; returns their sum. */
static inline float row_exp_sum(float *r, int K, float max) {
    const lc_vn mv = (lc_vn){0} + max;
    lc_vn acc = (lc_vn){0};
    int j = 0;
    for (; j + LC_VW <= K; j += LC_VW) {
        const lc_vn e = lc_vnexp(lc_vnload(r + j) - mv);
        lc_vnstore(r + j, e);
        acc += e;
    }
    float l[LC_VW], sum = 0;
    memcpy(l, &acc, sizeof l);
    for (int i = 0; i < LC_VW; i++) sum += l[i];
    for (; j < K; j++) sum += r[j] = lc_expf(r[j] - max);
    return sum;
}

/* In place: row i of sc (n rows of K scores) becomes exp(score - max), unnormalized; lse written and
 * inv[i] = 1 / (the row's sum), which the caller applies to the D outputs of the row instead of the K
 * probabilities. */
static void softmax_rows(float *sc, int n, int K, float *lse, float *inv) {
    for (int i = 0; i < n; i++) {
        float *r = sc + (size_t)i * K;
        const float max = row_max(r, K), sum = row_exp_sum(r, K, max);
        inv[i] = 1.0f / sum;
        lse[i] = max + logf(sum);
    }
}

/* Forward of rows r0 .. r0+n-1 of head h of sequence b: out = softmax(scale Q K'^T) V', lse written. The
 * thread's dP block (unused in forward) holds the rows' 1 / sum. */
static void forward_block(const lc_attn_shape *s, const lc_attn_tensors *t, const lin_work *w, int b, int h, int r0,
                          int n) {
    const int D = s->D, K = w->K;
    float *lse = t->lse + ((long)b * s->H + h) * s->T, *inv = w->dp;
    lc_gemm(LC_NO_TRANS, LC_TRANS, n, K, D, s->scale, lc_view_row(&t->q, b, r0, h, D), (int)t->q.st, w->kp, w->ld,
            0.0f, w->sc, K);
    softmax_rows(w->sc, n, K, lse + r0, inv);
    lc_gemm(LC_NO_TRANS, LC_NO_TRANS, n, D, K, 1.0f, w->sc, K, w->vp, w->ld, 0.0f, lc_view_row(&t->out, b, r0, h, D),
            (int)t->out.st);
    for (int i = 0; i < n; i++) {
        float *o = lc_view_row(&t->out, b, r0 + i, h, D);
        for (int e = 0; e < D; e++) o[e] *= inv[i];
    }
}

/* sc: scores in, P out; dp: dP in, dS out. */
static void backward_rows(const lc_attn_shape *s, const lc_attn_tensors *t, int b, int h, int r0, int n, int K,
                          float *sc, float *dp) {
    const int D = s->D;
    const float *lse = t->lse + ((long)b * s->H + h) * s->T + r0;
    for (int i = 0; i < n; i++) {
        const float *dout = lc_view_row(&t->dout, b, r0 + i, h, D), *out = lc_view_row(&t->out, b, r0 + i, h, D);
        double acc = 0;
        for (int e = 0; e < D; e++) acc += (double)dout[e] * out[e];
        const float delta = (float)acc, l = lse[i];
        float *p = sc + (size_t)i * K, *d = dp + (size_t)i * K;
        const lc_vn lv = (lc_vn){0} + l, dv = (lc_vn){0} + delta;
        int j = 0;
        for (; j + LC_VW <= K; j += LC_VW) {
            const lc_vn pj = lc_vnexp(lc_vnload(p + j) - lv);
            lc_vnstore(p + j, pj);
            lc_vnstore(d + j, pj * (lc_vnload(d + j) - dv));
        }
        for (; j < K; j++) {
            p[j] = lc_expf(p[j] - l);
            d[j] = p[j] * (d[j] - delta);
        }
    }
}

/* Backward of rows r0 .. r0+n-1 of head h of sequence b: dq written; dK', dV' accumulated (set by the first
 * block). */
static void backward_block(const lc_attn_shape *s, const lc_attn_tensors *t, const lin_work *w, int b, int h, int r0,
                           int n) {
    const int D = s->D, K = w->K;
    const float *q = lc_view_row(&t->q, b, r0, h, D), *dout = lc_view_row(&t->dout, b, r0, h, D);
    const float beta = r0 == 0 ? 0.0f : 1.0f;
    lc_gemm(LC_NO_TRANS, LC_TRANS, n, K, D, s->scale, q, (int)t->q.st, w->kp, w->ld, 0.0f, w->sc, K);
    lc_gemm(LC_NO_TRANS, LC_TRANS, n, K, D, 1.0f, dout, (int)t->dout.st, w->vp, w->ld, 0.0f, w->dp, K);
    backward_rows(s, t, b, h, r0, n, K, w->sc, w->dp);
    lc_gemm(LC_NO_TRANS, LC_NO_TRANS, n, D, K, s->scale, w->dp, K, w->kp, w->ld, 0.0f,
            lc_view_row(&t->dq, b, r0, h, D), (int)t->dq.st);
    lc_gemm(LC_TRANS, LC_NO_TRANS, K, D, n, s->scale, w->dp, K, q, (int)t->q.st, beta, w->dkp, w->ld);
    lc_gemm(LC_TRANS, LC_NO_TRANS, K, D, n, 1.0f, w->sc, K, dout, (int)t->dout.st, beta, w->dvp, w->ld);
}

/* Both passes: the projections K', V' of every sequence first (run_products), then one task per
 * (sequence, head) walks the rows in blocks with its thread's scratch; backward then writes dk, dv.
 * Inlined with a constant `backward`. */
static inline __attribute__((always_inline)) void run_heads(const lc_attn_shape *s, const lc_attn_linformer_opts *o,
                                                            const lc_attn_tensors *t, float *work, int backward) {
    const int nthreads = lc_attn_threads(s);
    const long heads = (long)s->B * s->H;
    (void)nthreads;
    run_products(s, o, t, work, 0);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (long bh = 0; bh < heads; bh++) {
        const int b = (int)(bh / s->H), h = (int)(bh % s->H);
        const lin_work w = lin_work_of(s, o, work, lc_thread_id(), b, h);
        for (int r0 = 0; r0 < s->T; r0 += w.rows) {
            const int n = s->T - r0 < w.rows ? s->T - r0 : w.rows;
            if (backward) backward_block(s, t, &w, b, h, r0, n);
            else forward_block(s, t, &w, b, h, r0, n);
        }
    }
    if (backward) run_products(s, o, t, work, 1);
}

void lc_attn_linformer_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_linformer_opts *o = opts;
    check_args(s, o, t);
    if (s->T == 0) return;
    run_heads(s, o, t, work, 0);
}

void lc_attn_linformer_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_linformer_opts *o = opts;
    check_args(s, o, t);
    if (s->T == 0) return;
    run_heads(s, o, t, work, 1);
    const int D = s->D, K = o->k, S = s->T, ld = lc_attn_linformer_projections(o, s->H) * K,
              per = heads_per_product(s, o), N = per * D;
    /* dE^T += K dK'^T, dF^T += V dV'^T: projections may be shared, so one product after another, in the
     * order b, head group, keys before values (shared: one product per sequence, summing over the heads
     * through its inner dimension H*D; share=kv with side-by-side keys and values: dE^T += [K | V]
     * [dK' | dV']^T, one product over keys and values); each product split over the threads by lc_gemm */
    const int fused = kv_fused(s, o, &t->k, &t->v);
    for (int b = 0; b < s->B && t->dparams; b++)
        for (int h0 = 0; h0 < s->H; h0 += per) {
            const lin_work w = lin_work_of(s, o, work, -1, b, h0);
            const int pk = lc_attn_linformer_key_proj(o, h0), pv = lc_attn_linformer_value_proj(o, h0);
            lc_gemm(LC_NO_TRANS, LC_TRANS, S, K, fused ? 2 * N : N, 1.0f, lc_view_row(&t->k, b, 0, h0, D),
                    (int)t->k.st, w.dkp, w.ld, 1.0f, t->dparams + (size_t)pk * K, ld);
            if (!fused)
                lc_gemm(LC_NO_TRANS, LC_TRANS, S, K, N, 1.0f, lc_view_row(&t->v, b, 0, h0, D), (int)t->v.st, w.dvp,
                        w.ld, 1.0f, t->dparams + (size_t)pv * K, ld);
        }
}

const lc_attn_kind lc_attn_linformer = {
    .name = "linformer",
    .options_help = "k=<projected length, default 256> share=<none|headwise|kv, default headwise>",
    /* every query mixes every key through E and F: no causal mode */
    .caps = LC_ATTN_CAP_BIDIRECTIONAL,
    .opts_size = sizeof(lc_attn_linformer_opts),
    .opts_init = linformer_opts_init,
    .opts_set = linformer_opts_set,
    .check = linformer_check,
    .workspace_floats = lc_attn_linformer_workspace,
    .forward = lc_attn_linformer_forward,
    .backward = lc_attn_linformer_backward,
    .param_floats = lc_attn_linformer_param_floats,
    .param_init = lc_attn_linformer_param_init,
};
