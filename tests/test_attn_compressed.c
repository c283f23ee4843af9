/* Tests of the compressed attention kind (raw local window + average-pooled far keys and values).
 * The generic masked reference cannot express pooled keys, so this file has its own slow reference in
 * double: it materialises the pooled keys/values, builds the dense [T x (nb + S)] score matrix over
 * [pooled columns | raw keys] with the mask written straight from the definition, and differentiates it
 * by hand (the pooling's gradient spread back over each block). That reference is checked against
 * central finite differences of its forward; the fast fp32 kind is checked against it over causal and
 * bidirectional shapes, memories, S not a multiple of s, w >= S, s = 1, odd D and strided fused views;
 * against the full kind where the two coincide (s = 1, w >= S); for bit-identical results across repeats
 * and thread counts; option errors; unseen keys; and the workspace bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/compressed.h"
#include "attn/spec.h"
#include "core/rng.h"
#include "core/threads.h"
#include "attn_test_util.h"
#include "harness.h"

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, M, D, causal, w, s;
} case_shape;

static lc_attn_shape shape_of(case_shape c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, 0};
    return s;
}

static lc_attn_compressed_opts opts_of(case_shape c) {
    lc_attn_compressed_opts o;
    memset(&o, 0, sizeof o);
    o.w = c.w, o.s = c.s;
    return o;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* ---------------------------------------------------------------- the pattern, from the definition */

/* Raw key `key` for the query at key position p. */
static int raw_visible(int causal, long w, long p, long key) {
    return causal ? key >= p - w && key <= p : labs(key - p) <= w;
}

/* Pooled block j (positions j s .. min((j+1) s, S) - 1) for the query at key position p. */
static int pooled_visible(int causal, long w, long s, long S, long p, long j) {
    if (causal) return (j + 1) * s - 1 < p - w;
    const long first = j * s, last = ((j + 1) * s < S ? (j + 1) * s : S) - 1;
    return last < p - w || first > p + w; /* no overlap with [p - w, p + w] */
}

/* ---------------------------------------------------------------- double reference */

typedef struct {
    lc_attn_shape s;
    lc_attn_compressed_opts o;
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv, *lse;
} problem_d;

static problem_d problem_d_new(lc_attn_shape s, lc_attn_compressed_opts o) {
    problem_d p;
    memset(&p, 0, sizeof p);
    p.s = s, p.o = o;
    const int S = s.M + s.T;
    const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * S * s.H * s.D;
    p.q = xcalloc(nq, sizeof(double)), p.out = xcalloc(nq, sizeof(double)), p.dout = xcalloc(nq, sizeof(double));
    p.dq = xcalloc(nq, sizeof(double));
    p.k = xcalloc(nk, sizeof(double)), p.v = xcalloc(nk, sizeof(double));
    p.dk = xcalloc(nk, sizeof(double)), p.dv = xcalloc(nk, sizeof(double));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(double));
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
    free(p->lse);
}

/* Contiguous [B, rows, H, D]: element (b, r, h, d). */
static size_t at_d(const lc_attn_shape *s, int rows, int b, int r, int h, int d) {
    return (((size_t)b * rows + r) * s->H + h) * s->D + d;
}

/* One (b, h) of the reference: the nb + S columns (pooled blocks, then raw keys), their keys and values
 * [C][D], and the dense score matrix [T][C] with -inf where the mask hides a column. */
typedef struct {
    int T, C, nb, D;
    double *kc, *vc, *score;
} ref_head;

static ref_head ref_head_build(const problem_d *p, int b, int h) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, D = s->D, sw = p->o.s, nb = (S + sw - 1) / sw;
    ref_head r = {s->T, nb + S, nb, D, NULL, NULL, NULL};
    r.kc = xcalloc((size_t)r.C * D, sizeof(double));
    r.vc = xcalloc((size_t)r.C * D, sizeof(double));
    r.score = xcalloc((size_t)r.T * r.C, sizeof(double));
    for (int j = 0; j < nb; j++) {
        const int first = j * sw, last = (j + 1) * sw < S ? (j + 1) * sw : S;
        for (int key = first; key < last; key++)
            for (int d = 0; d < D; d++) {
                r.kc[(size_t)j * D + d] += p->k[at_d(s, S, b, key, h, d)] / (last - first);
                r.vc[(size_t)j * D + d] += p->v[at_d(s, S, b, key, h, d)] / (last - first);
            }
    }
    for (int key = 0; key < S; key++)
        for (int d = 0; d < D; d++) {
            r.kc[(size_t)(nb + key) * D + d] = p->k[at_d(s, S, b, key, h, d)];
            r.vc[(size_t)(nb + key) * D + d] = p->v[at_d(s, S, b, key, h, d)];
        }
    for (int t = 0; t < s->T; t++) {
        const long pos = (long)s->M + t;
        for (int c = 0; c < r.C; c++) {
            const int vis = c < nb ? pooled_visible(s->causal, p->o.w, sw, S, pos, c)
                                   : raw_visible(s->causal, p->o.w, pos, c - nb);
            double dot = 0;
            for (int d = 0; d < D; d++) dot += p->q[at_d(s, s->T, b, t, h, d)] * r.kc[(size_t)c * D + d];
            r.score[(size_t)t * r.C + c] = vis ? s->scale * dot : -INFINITY;
        }
    }
    return r;
}

static void ref_head_free(ref_head *r) { free(r->kc), free(r->vc), free(r->score); }

/* Softmax of score row t into prob (C values); returns the row's log-sum-exp. */
static double ref_softmax_row(const ref_head *r, int t, double *prob) {
    const double *sc = r->score + (size_t)t * r->C;
    double max = -INFINITY, sum = 0;
    for (int c = 0; c < r->C; c++) max = sc[c] > max ? sc[c] : max;
    for (int c = 0; c < r->C; c++) sum += prob[c] = exp(sc[c] - max);
    for (int c = 0; c < r->C; c++) prob[c] /= sum;
    return max + log(sum);
}

/* Writes out and lse. */
static void ref_forward(problem_d *p) {
    const lc_attn_shape *s = &p->s;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++) {
            ref_head r = ref_head_build(p, b, h);
            double *prob = xcalloc((size_t)r.C, sizeof(double));
            for (int t = 0; t < s->T; t++) {
                p->lse[((size_t)b * s->H + h) * s->T + t] = ref_softmax_row(&r, t, prob);
                for (int d = 0; d < s->D; d++) {
                    double acc = 0;
                    for (int c = 0; c < r.C; c++) acc += prob[c] * r.vc[(size_t)c * s->D + d];
                    p->out[at_d(s, s->T, b, t, h, d)] = acc;
                }
            }
            free(prob);
            ref_head_free(&r);
        }
}

/* Writes dq, dk, dv (all S rows) for the loss sum(out * dout), by hand:
 *   P = softmax(score), dP_c = dout . v_c, dS = P (dP - sum_c P_c dP_c),
 *   dq = scale sum_c dS_c k_c, dk_c = scale sum_t dS_tc q_t, dv_c = sum_t P_tc dout_t per column,
 * then each pooled column's gradient is divided by its block size and added to every key of the block. */
static void ref_backward(problem_d *p) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, D = s->D, sw = p->o.s;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++) {
            ref_head r = ref_head_build(p, b, h);
            double *prob = xcalloc((size_t)r.C, sizeof(double)), *dp = xcalloc((size_t)r.C, sizeof(double));
            double *dkc = xcalloc((size_t)r.C * D, sizeof(double)), *dvc = xcalloc((size_t)r.C * D, sizeof(double));
            for (int t = 0; t < s->T; t++) {
                ref_softmax_row(&r, t, prob);
                const double *q = p->q + at_d(s, s->T, b, t, h, 0), *dout = p->dout + at_d(s, s->T, b, t, h, 0);
                double delta = 0;
                for (int c = 0; c < r.C; c++) {
                    dp[c] = 0;
                    for (int d = 0; d < D; d++) dp[c] += dout[d] * r.vc[(size_t)c * D + d];
                    delta += prob[c] * dp[c];
                }
                double *dq = p->dq + at_d(s, s->T, b, t, h, 0);
                for (int d = 0; d < D; d++) dq[d] = 0;
                for (int c = 0; c < r.C; c++) {
                    const double ds = prob[c] * (dp[c] - delta);
                    for (int d = 0; d < D; d++) {
                        dq[d] += s->scale * ds * r.kc[(size_t)c * D + d];
                        dkc[(size_t)c * D + d] += s->scale * ds * q[d];
                        dvc[(size_t)c * D + d] += prob[c] * dout[d];
                    }
                }
            }
            for (int key = 0; key < S; key++) {
                const int j = key / sw, n = ((j + 1) * sw < S ? (j + 1) * sw : S) - j * sw;
                for (int d = 0; d < D; d++) {
                    p->dk[at_d(s, S, b, key, h, d)] = dkc[(size_t)(r.nb + key) * D + d] + dkc[(size_t)j * D + d] / n;
                    p->dv[at_d(s, S, b, key, h, d)] = dvc[(size_t)(r.nb + key) * D + d] + dvc[(size_t)j * D + d] / n;
                }
            }
            free(prob), free(dp), free(dkc), free(dvc);
            ref_head_free(&r);
        }
}

/* ---------------------------------------------------------------- finite differences of the reference */

static double loss_of(problem_d *p) { /* L = sum(out * dout) */
    ref_forward(p);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(case_shape c) {
    lc_attn_shape s = shape_of(c);
    s.scale = 0.7f;
    problem_d p = problem_d_new(s, opts_of(c));
    lc_rng rng;
    lc_rng_seed(&rng, 2000 + c.T * 7 + c.M * 3 + c.causal + 11 * c.s);
    const int S = c.M + c.T;
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D;
    for (size_t i = 0; i < nq; i++) p.q[i] = lc_rng_normal(&rng), p.dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) p.k[i] = lc_rng_normal(&rng), p.v[i] = lc_rng_normal(&rng);
    ref_backward(&p);

    double *inputs[3] = {p.q, p.k, p.v}, *grads[3] = {p.dq, p.dk, p.dv};
    const size_t counts[3] = {nq, nk, nk};
    const char *names[3] = {"dq", "dk", "dv"};
    const double step = 1e-6;
    for (int which = 0; which < 3; which++) {
        double *numeric = xcalloc(counts[which], sizeof(double));
        for (size_t i = 0; i < counts[which]; i++) {
            const double saved = inputs[which][i];
            inputs[which][i] = saved + step;
            const double up = loss_of(&p);
            inputs[which][i] = saved - step;
            const double down = loss_of(&p);
            inputs[which][i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        char label[96];
        snprintf(label, sizeof label, "%s T=%d M=%d c=%d w=%d s=%d vs finite diff", names[which], c.T, c.M, c.causal,
                 c.w, c.s);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(&p);
}

TEST(reference_backward_matches_finite_differences) {
    const case_shape cases[] = {
        /* B, H, T, M, D, causal, w, s */
        {1, 2, 9, 0, 3, 1, 1, 2},  {1, 2, 9, 0, 3, 0, 1, 2},  {2, 1, 8, 3, 2, 1, 2, 3}, {2, 1, 8, 3, 2, 0, 1, 3},
        {1, 1, 7, 4, 3, 0, 20, 2}, {1, 1, 10, 2, 2, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

/* The reference's mask, counted: causal rows see w + 1 raw keys (fewer near the start) and the complete
 * blocks before them; checked on one shape against hand-derived counts so the definition is pinned. */
TEST(reference_pattern_counts) {
    /* S = 20, s = 4 (5 blocks), w = 3, causal, M = 0: query p sees raw max(0, p-3)..p and blocks j with
     * 4j + 3 < p - 3, i.e. floor((p - 3) / 4) blocks for p > 3 */
    int ok = 1;
    for (long p = 0; p < 20; p++) {
        int raw = 0, pooled = 0;
        for (long k = 0; k < 20; k++) raw += raw_visible(1, 3, p, k);
        for (long j = 0; j < 5; j++) pooled += pooled_visible(1, 3, 4, 20, p, j);
        ok &= raw == (p < 3 ? p + 1 : 4) && pooled == (p > 3 ? (p - 3) / 4 : 0);
    }
    CHECK(ok, "causal counts");
    /* bidirectional, S = 18 (blocks of 4, last one of 2), w = 2, query p = 9: raw 7..11, blocks 0 (0..3),
     * 1 (4..7) overlaps 7, 2 (8..11) overlaps, 3 (12..15), 4 (16..17): visible 0, 3, 4 */
    const int want[5] = {1, 0, 0, 1, 1};
    for (long j = 0; j < 5; j++) CHECK(pooled_visible(0, 2, 4, 18, 9, j) == want[j], "block %ld", j);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows); dq, dk, dv the same
 * slices of one gradient buffer; out and dout are [B, T, H*D + 5]. Padding columns and the dq columns of
 * the memory rows hold SENTINEL and must survive. */
typedef struct {
    lc_attn_shape s;
    lc_attn_compressed_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    size_t qkv_n, out_n, work_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lc_attn_shape s, lc_attn_compressed_opts o, int nthreads, uint64_t seed, float input_mul) {
    problem p;
    memset(&p, 0, sizeof p);
    p.s = s, p.o = o;
    const int S = s.M + s.T, HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * S * p.row, p.out_n = (size_t)s.B * s.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_compressed.workspace_floats, &p.s, &p.o, nthreads);
    p.work = malloc((p.work_n ? p.work_n : 1) * sizeof(float)); /* exactly the size asked for: ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        p.qkv[i] = (i % p.row) < 3 * (size_t)HD ? input_mul * lc_rng_normal(&rng) : SENTINEL;
        p.grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p.out_n; i++) p.dout[i] = lc_rng_normal(&rng), p.out[i] = SENTINEL;
    const long sb = (long)S * p.row, out_sb = (long)s.T * p.out_row;
    p.t.q = view_f(p.qkv + (long)s.M * p.row, sb, p.row);
    p.t.k = view_f(p.qkv + HD, sb, p.row);
    p.t.v = view_f(p.qkv + 2 * HD, sb, p.row);
    p.t.dq = view_f(p.grad + (long)s.M * p.row, sb, p.row);
    p.t.dk = view_f(p.grad + HD, sb, p.row);
    p.t.dv = view_f(p.grad + 2 * HD, sb, p.row);
    p.t.out = view_f(p.out, out_sb, p.out_row);
    p.t.dout = view_f(p.dout, out_sb, p.out_row);
    p.t.lse = p.lse;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work);
}

static void run_fast(problem *p) {
    lc_attn_compressed.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_compressed.backward(&p->s, &p->o, &p->t, p->work);
}

static int sentinels_intact(const problem *p) {
    const int HD = p->s.H * p->s.D, S = p->s.M + p->s.T;
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row, row = i / p->row % S;
        const int pad = col >= 3 * (size_t)HD, memory_dq = col < (size_t)HD && row < (size_t)p->s.M;
        if ((pad || memory_dq) && p->grad[i] != SENTINEL) return 0;
    }
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= (size_t)HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

/* Every output of the fast kind against the double reference: |got - want| <= rtol |want| + atol with
 * atol = atol_frac * max(1, max |want|) over the tensor. */
static void check_fast_against_reference(case_shape c, float scale, float input_mul, double rtol, double atol_frac) {
    lc_attn_shape s = shape_of(c);
    if (scale > 0) s.scale = scale;
    const lc_attn_compressed_opts o = opts_of(c);
    problem p = problem_new(s, o, lc_get_threads(), 77 + c.T + 13 * c.M + 101 * c.D + c.causal + 7 * c.w + 3 * c.s,
                            input_mul);
    run_fast(&p);

    problem_d r = problem_d_new(s, o);
    const int S = c.M + c.T;
    view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
    view_to_d(&p.t.dout, c.T, &s, r.dout);
    ref_forward(&r);
    ref_backward(&r);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *got = xcalloc(nk > nq ? nk : nq, sizeof(double));

    char label[160];
#define COMPARE(name, got_values, want, n)                                                                   \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n);                                                           \
        snprintf(label, sizeof label, "%s B%d H%d T%d M%d D%d c%d w%d s%d", name, c.B, c.H, c.T, c.M, c.D, \
                 c.causal, c.w, c.s);                                                                      \
        CHECK_CLOSE(label, got_values, want, n, rtol, atol_frac *scale_);                                  \
    } while (0)
    view_to_d(&p.t.out, c.T, &s, got);
    COMPARE("out", got, r.out, nq);
    COMPARE("lse", p.lse, r.lse, nl);
    view_to_d(&p.t.dq, c.T, &s, got);
    COMPARE("dq", got, r.dq, nq);
    view_to_d(&p.t.dk, S, &s, got);
    COMPARE("dk", got, r.dk, nk);
    view_to_d(&p.t.dv, S, &s, got);
    COMPARE("dv", got, r.dv, nk);
#undef COMPARE
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns or in memory rows of dq");
    free(got);
    problem_d_free(&r);
    problem_free(&p);
}

/* Each shape runs causal and bidirectional. */
static const case_shape SHAPES[] = {
    /* B, H, T, M, D, causal (set per run), w, s */
    {1, 1, 1, 0, 16, 0, 1, 1},    /* one query */
    {2, 3, 37, 0, 16, 0, 4, 3},   /* S = 37 not a multiple of s */
    {1, 2, 100, 23, 64, 0, 8, 7}, /* memory, S = 123 */
    {2, 2, 130, 70, 3, 0, 16, 16}, /* odd D, S = 200 (last block of 8) */
    {1, 2, 64, 0, 64, 0, 100, 4}, /* w >= S: no pooled columns */
    {1, 2, 40, 9, 64, 0, 49, 5},  /* w = S: no pooled columns */
    {1, 3, 50, 13, 24, 0, 5, 1},  /* s = 1: pooled keys are the raw keys */
    {1, 1, 200, 0, 32, 0, 1, 64}, /* w = 1, large s, partial last block */
    {1, 2, 5, 70, 16, 0, 3, 8},   /* memory much longer than the segment */
    {2, 1, 97, 31, 20, 0, 64, 16}, /* the default options */
    {1, 2, 80, 5, 17, 0, 2, 200}, /* s >= S: one (partial) block */
};

TEST(fast_matches_reference_causal) {
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        case_shape c = SHAPES[i];
        c.causal = 1;
        check_fast_against_reference(c, 0, 1.0f, 1e-5, 1e-6);
    }
}

TEST(fast_matches_reference_bidirectional) {
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        case_shape c = SHAPES[i];
        c.causal = 0;
        check_fast_against_reference(c, 0, 1.0f, 1e-5, 1e-6);
    }
}

TEST(fast_is_stable_for_large_scores) {
    const case_shape cases[] = {{1, 2, 130, 70, 16, 0, 8, 4}, {1, 2, 130, 7, 16, 1, 8, 4}};
    for (size_t i = 0; i < 2; i++) check_fast_against_reference(cases[i], 1.0f, 3.0f, 1e-3, 3e-5);
}

/* ---------------------------------------------------------------- against the full kind */

/* s = 1 (every pooled column is one raw key, so the columns cover every visible key exactly once) and
 * w >= S (no pooled columns) are both full attention. */
static void check_equals_full(case_shape c) {
    lc_attn_shape s = shape_of(c);
    problem a = problem_new(s, opts_of(c), lc_get_threads(), 31 + c.T + c.causal, 1.0f);
    problem f = problem_new(s, opts_of(c), lc_get_threads(), 31 + c.T + c.causal, 1.0f);
    run_fast(&a);
    float *work = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &s, NULL, lc_get_threads()) * sizeof(float));
    lc_attn_full.forward(&s, NULL, &f.t, work);
    lc_attn_full.backward(&s, NULL, &f.t, work);
    free(work);
    char label[128];
    snprintf(label, sizeof label, "out vs full T%d M%d D%d c%d w%d s%d", c.T, c.M, c.D, c.causal, c.w, c.s);
    CHECK_CLOSE(label, a.out, f.out, a.out_n, 1e-5, 1e-5);
    snprintf(label, sizeof label, "lse vs full");
    CHECK_CLOSE(label, a.lse, f.lse, (size_t)s.B * s.H * s.T, 1e-5, 1e-5);
    snprintf(label, sizeof label, "dq dk dv vs full");
    CHECK_CLOSE(label, a.grad, f.grad, a.qkv_n, 1e-5, 1e-5);
    problem_free(&a), problem_free(&f);
}

TEST(s1_and_wide_windows_equal_the_full_kind) {
    const case_shape cases[] = {
        {1, 2, 130, 70, 64, 1, 3, 1},  {1, 2, 130, 70, 64, 0, 3, 1},   {2, 1, 65, 0, 16, 1, 17, 1},
        {2, 1, 65, 0, 16, 0, 17, 1},   {1, 2, 130, 70, 64, 1, 200, 16}, {1, 2, 130, 70, 64, 0, 199, 16},
        {2, 3, 65, 0, 3, 1, 1000, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_equals_full(cases[i]);
}

/* ---------------------------------------------------------------- determinism */

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const case_shape cs[2] = {{2, 3, 130, 70, 24, 1, 8, 5}, {1, 3, 200, 7, 16, 0, 3, 16}};
    const int threads_before = lc_get_threads();
    for (int ci = 0; ci < 2; ci++) {
        const lc_attn_shape s = shape_of(cs[ci]);
        problem runs[4];
        const int threads[4] = {2, 2, 1, 3};
        for (int i = 0; i < 4; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(s, opts_of(cs[ci]), 3, 5, 1.0f);
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 4; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)s.B * s.H * s.T * sizeof(float)) == 0,
                  "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)",
                  i);
        }
        for (int i = 0; i < 4; i++) problem_free(&runs[i]);
    }
}

/* ---------------------------------------------------------------- edges, options, memory */

TEST(unseen_keys_get_zero_gradients) {
    /* T = 0: nothing flows back, but all M rows of dk and dv are written as zeros. */
    const lc_attn_shape s = {2, 2, 0, 21, 24, 1, 0.2f, 0, 0};
    const lc_attn_compressed_opts o = {3, 4};
    problem p = problem_new(s, o, lc_get_threads(), 9, 1.0f);
    run_fast(&p);
    const int HD = s.H * s.D;
    int ok = 1;
    for (size_t i = 0; i < p.qkv_n; i++) {
        const size_t col = i % p.row;
        const int dkdv = col >= (size_t)HD && col < 3 * (size_t)HD;
        ok &= dkdv ? p.grad[i] == 0.0f : p.grad[i] == SENTINEL;
    }
    CHECK(ok, "dk, dv of the memory rows must be 0 and nothing else written");
    problem_free(&p);
}

static int contains(const char *s, const char *part) { return strstr(s, part) != NULL; }

TEST(options_parse_and_bad_options_give_clear_errors) {
    const lc_attn_kind *k = lc_attn_kind_by_name("compressed");
    CHECK(k == &lc_attn_compressed, "kind table lookup");
    CHECK(k->forward == lc_attn_compressed_forward && k->backward == lc_attn_compressed_backward &&
              k->workspace_floats == lc_attn_compressed_workspace,
          "table row points elsewhere");
    CHECK(k->opts_size <= LC_ATTN_OPTS_BYTES, "options too large");
    lc_attn_compressed_opts o;
    char err[256] = "";
    k->opts_init(&o, 4);
    CHECK(o.w == 64 && o.s == 16, "defaults w=%d s=%d", o.w, o.s);
    CHECK(k->opts_set(&o, 4, "w", "12", err, sizeof err) == 0 && o.w == 12, "w=12");
    CHECK(k->opts_set(&o, 4, "s", "5", err, sizeof err) == 0 && o.s == 5, "s=5");

    const struct {
        const char *key, *value, *want;
    } bad[] = {{"w", "0", "option w=0"}, {"s", "0", "option s=0"}, {"w", "-3", "option w=-3"},
               {"s", "x", "option s=x"}, {"w", "", "option w="},    {"stride", "4", "no option 'stride'"},
               {"b", "4", "w=<raw keys"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        const int rc = k->opts_set(&o, 4, bad[i].key, bad[i].value, err, sizeof err);
        CHECK(rc == -1 && contains(err, bad[i].want), "%s=%s: rc %d, message '%s'", bad[i].key, bad[i].value, rc,
              err);
    }
    CHECK(o.w == 12 && o.s == 5, "a rejected option changed the options");
    printf("  e.g. %s\n", err);

    lc_attn_shape s = {1, 4, 64, 0, 16, 1, 0.25f, 0, 0};
    CHECK(k->check(&s, &o, NULL, err, sizeof err) == 0, "good shape rejected: %s", err);
    const lc_attn_compressed_opts zero_w = {0, 4}, zero_s = {4, 0};
    CHECK(k->check(&s, &zero_w, NULL, err, sizeof err) == -1 && contains(err, "w=0"), "w=0: '%s'", err);
    CHECK(k->check(&s, &zero_s, NULL, err, sizeof err) == -1 && contains(err, "s=0"), "s=0: '%s'", err);
    s.relpos = 1;
    CHECK(k->check(&s, &o, NULL, err, sizeof err) == -1 && contains(err, "relative positions"), "relpos: '%s'", err);
    s.relpos = 0, s.window = 32;
    CHECK(k->check(&s, &o, NULL, err, sizeof err) == -1 && contains(err, "same_length"), "window: '%s'", err);
    s.window = 0;
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 2;
    CHECK(k->check(&s, &o, &g, err, sizeof err) == -1 && contains(err, "global"), "global: '%s'", err);

    /* through the spec string */
    lc_attn_layer layer;
    CHECK(lc_attn_spec_parse("compressed:w=8,s=4", 1, 4, &layer, err, sizeof err) == 0, "spec: %s", err);
    const lc_attn_compressed_opts *po = (const void *)layer.group[0].opts;
    CHECK(layer.group[0].kind == &lc_attn_compressed && po->w == 8 && po->s == 4, "spec options w=%d s=%d", po->w,
          po->s);
    CHECK(lc_attn_spec_parse("compressed", 1, 4, &layer, err, sizeof err) == 0 && po->w == 64 && po->s == 16,
          "spec defaults");
    CHECK(lc_attn_spec_parse("compressed:s=0", 1, 4, &layer, err, sizeof err) == -1 && contains(err, "s=0"),
          "spec s=0: '%s'", err);
    CHECK(lc_attn_spec_parse("compressed:q=1", 1, 4, &layer, err, sizeof err) == -1 && contains(err, "no option 'q'"),
          "spec unknown key: '%s'", err);
    CHECK(lc_attn_spec_parse("compressed:global=2", 1, 4, &layer, err, sizeof err) == 0, "spec global: %s", err);
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == -1 && contains(err, "global"), "layer check: '%s'", err);
}

TEST(workspace_does_not_grow_like_t_squared) {
    /* Linear in T: pooled K, V and their gradients (4 B H ceil(S/s) D), Delta (B H T) and per-thread rows
     * (w + S/s columns and the accumulators of 16 pooled blocks, 32 D-vectors), rounded up to 16 floats. */
    const int ws[] = {1, 64, 512}, ss[] = {1, 16, 64}, Ms[] = {0, 4096};
    for (int iw = 0; iw < 3; iw++)
        for (int is = 0; is < 3; is++)
            for (int im = 0; im < 2; im++)
                for (int causal = 0; causal <= 1; causal++) {
                    const lc_attn_compressed_opts o = {ws[iw], ss[is]};
                    size_t prev = 0, prev_growth = 0;
                    for (long T = 1024; T <= 65536; T *= 4) {
                        lc_attn_shape s = {2, 8, (int)T, Ms[im], 64, causal, 0.125f, 0, 0};
                        const size_t nthreads = 3, S = (size_t)T + Ms[im], nb = (S + o.s - 1) / o.s;
                        const size_t floats = LC_TEST_WORKSPACE(lc_attn_compressed_workspace, &s, &o, (int)nthreads);
                        const size_t bound = 4 * ((size_t)s.B * s.H * nb * s.D + 16) + (size_t)s.B * s.H * T + 16 +
                                             nthreads * (2 * (size_t)o.w + 1 + nb + 32 * (size_t)s.D + 48);
                        CHECK(floats <= bound, "T %ld M %d w %d s %d c %d: %zu floats > %zu", T, s.M, o.w, o.s, causal,
                              floats, bound);
                        if (prev) {
                            const size_t growth = floats - prev; /* T x 4: linear grows 4x per step */
                            if (prev_growth)
                                CHECK(growth <= 4 * prev_growth + 256, "T %ld: growth %zu after %zu", T, growth,
                                      prev_growth);
                            prev_growth = growth;
                        }
                        prev = floats;
                    }
                }
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(reference_pattern_counts);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_is_stable_for_large_scores);
    RUN(s1_and_wide_windows_equal_the_full_kind);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(unseen_keys_get_zero_gradients);
    RUN(options_parse_and_bad_options_give_clear_errors);
    RUN(workspace_does_not_grow_like_t_squared);
    return test_summary("test_attn_compressed");
}
