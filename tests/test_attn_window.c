/* Tests of the window attention kind (sliding window with per-head dilation): the masked double
 * reference with the window's visibility against finite differences; the fast fp32 forward/backward
 * against that reference over causal and bidirectional shapes, per-head dilations, memories and strided
 * fused views; a window covering everything against the full kind; determinism across runs and thread
 * counts; the workspace bound; relative positions (Transformer-XL) on dilated causal heads against the
 * masked reference with rel, and their determinism. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/window.h"
#include "core/rng.h"
#include "core/threads.h"
#include "attn_test_util.h"
#include "harness.h"

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, M, D, causal, w, dilated; /* dilated: per-head dilations 1, 2, 3, 1, 2, 3, ... */
} case_shape;

static const int DILATIONS[8] = {1, 2, 3, 1, 2, 3, 1, 2};

static lc_attn_shape shape_of(case_shape c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, 0};
    return s;
}

static lc_attn_window_opts window_opts(int w, const int *dil, int n) {
    lc_attn_window_opts o;
    memset(&o, 0, sizeof o);
    o.w = w;
    for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) o.dilation[h] = dil ? dil[h % n] : 1;
    return o;
}

static lc_attn_window_opts opts_of(case_shape c) { return window_opts(c.w, c.dilated ? DILATIONS : NULL, 8); }

/* The window's mask straight from the definition (ctx: the shape's M and causal plus the options). */
typedef struct {
    int M, causal;
    lc_attn_window_opts o;
} window_mask;

static int window_visible(const void *ctx, int b, int h, int t, int s) {
    const window_mask *m = ctx;
    (void)b;
    const int d = lc_attn_window_dilation(&m->o, h), diff = s - (m->M + t);
    if (m->causal && diff > 0) return 0;
    if (diff % d != 0) return 0;
    const int k = abs(diff) / d;
    return k <= m->o.w;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* ---------------------------------------------------------------- double-precision problems */

typedef struct {
    lc_attn_shape s;
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    lc_attn_tensors_d t;
} problem_d;

static lc_view_d view_d(double *p, int rows, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)rows * s->H * s->D, (long)s->H * s->D};
    return v;
}

static problem_d problem_d_new(lc_attn_shape s) {
    problem_d p;
    memset(&p, 0, sizeof p);
    p.s = s;
    const int S = s.M + s.T;
    const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * S * s.H * s.D;
    p.q = xcalloc(nq, sizeof(double)), p.out = xcalloc(nq, sizeof(double)), p.dout = xcalloc(nq, sizeof(double));
    p.dq = xcalloc(nq, sizeof(double));
    p.k = xcalloc(nk, sizeof(double)), p.v = xcalloc(nk, sizeof(double));
    p.dk = xcalloc(nk, sizeof(double)), p.dv = xcalloc(nk, sizeof(double));
    p.t.q = view_d(p.q, s.T, &s), p.t.out = view_d(p.out, s.T, &s), p.t.dout = view_d(p.dout, s.T, &s);
    p.t.dq = view_d(p.dq, s.T, &s);
    p.t.k = view_d(p.k, S, &s), p.t.v = view_d(p.v, S, &s), p.t.dk = view_d(p.dk, S, &s), p.t.dv = view_d(p.dv, S, &s);
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
}

/* Row log-sum-exp over the visible keys, [B, H, T]. */
static void reference_lse(const problem_d *p, const window_mask *m, double *lse) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, HD = s->H * s->D;
    double *scores = xcalloc((size_t)S, sizeof(double));
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++) {
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < S; j++) {
                    double dot = 0;
                    for (int d = 0; d < s->D; d++)
                        dot += p->q[((size_t)b * s->T + t) * HD + h * s->D + d] *
                               p->k[((size_t)b * S + j) * HD + h * s->D + d];
                    scores[j] = window_visible(m, b, h, t, j) ? s->scale * dot : -INFINITY;
                    if (scores[j] > max) max = scores[j];
                }
                for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
                lse[((size_t)b * s->H + h) * s->T + t] = max + log(sum);
            }
    free(scores);
}

/* ---------------------------------------------------------------- finite differences */

static double loss_of(problem_d *p, const window_mask *m) { /* L = sum(out * dout) */
    lc_attn_masked_forward_ref(&p->s, window_visible, m, &p->t);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(case_shape c) {
    lc_attn_shape s = shape_of(c);
    s.scale = 0.7f;
    const window_mask m = {c.M, c.causal, opts_of(c)};
    problem_d p = problem_d_new(s);
    lc_rng rng;
    lc_rng_seed(&rng, 2000 + c.T * 7 + c.M * 3 + c.causal);
    const int S = c.M + c.T;
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D;
    for (size_t i = 0; i < nq; i++) p.q[i] = lc_rng_normal(&rng), p.dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) p.k[i] = lc_rng_normal(&rng), p.v[i] = lc_rng_normal(&rng);
    lc_attn_masked_backward_ref(&s, window_visible, &m, &p.t);

    double *inputs[3] = {p.q, p.k, p.v}, *grads[3] = {p.dq, p.dk, p.dv};
    const size_t counts[3] = {nq, nk, nk};
    const char *names[3] = {"dq", "dk", "dv"};
    const double step = 1e-6;
    for (int which = 0; which < 3; which++) {
        double *numeric = xcalloc(counts[which], sizeof(double));
        for (size_t i = 0; i < counts[which]; i++) {
            const double saved = inputs[which][i];
            inputs[which][i] = saved + step;
            const double up = loss_of(&p, &m);
            inputs[which][i] = saved - step;
            const double down = loss_of(&p, &m);
            inputs[which][i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        char label[96];
        snprintf(label, sizeof label, "%s T=%d M=%d c=%d w=%d dil=%d vs finite diff", names[which], c.T, c.M,
                 c.causal, c.w, c.dilated);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(&p);
}

TEST(reference_backward_matches_finite_differences) {
    const case_shape cases[] = {
        /* B, H, T, M, D, causal, w, dilated */
        {1, 3, 6, 2, 3, 1, 1, 1}, {1, 3, 6, 0, 3, 0, 1, 1}, {2, 2, 5, 3, 2, 1, 2, 0}, {1, 2, 7, 0, 2, 0, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows); dq, dk, dv the same
 * slices of one gradient buffer; out and dout are [B, T, H*D + 5]. Padding columns and the dq columns of
 * the memory rows hold SENTINEL and must survive. */
typedef struct {
    lc_attn_shape s;
    lc_attn_window_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    size_t qkv_n, out_n, work_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lc_attn_shape s, lc_attn_window_opts o, int nthreads, uint64_t seed, float input_mul) {
    problem p;
    memset(&p, 0, sizeof p);
    p.s = s, p.o = o;
    const int S = s.M + s.T, HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * S * p.row, p.out_n = (size_t)s.B * s.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_window.workspace_floats, &p.s, &p.o, nthreads);
    p.work = malloc(p.work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
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
    lc_attn_window.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_window.backward(&p->s, &p->o, &p->t, p->work);
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

static void check_fast_against_reference(case_shape c, float scale, float input_mul, double rtol, double atol_frac) {
    lc_attn_shape s = shape_of(c);
    if (scale > 0) s.scale = scale;
    const window_mask m = {c.M, c.causal, opts_of(c)};
    problem p = problem_new(s, m.o, lc_get_threads(), 77 + c.T + 13 * c.M + 101 * c.D + c.causal + 7 * c.w, input_mul);
    run_fast(&p);

    problem_d r = problem_d_new(s);
    const int S = c.M + c.T;
    view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
    view_to_d(&p.t.dout, c.T, &s, r.dout);
    lc_attn_masked_forward_ref(&s, window_visible, &m, &r.t);
    lc_attn_masked_backward_ref(&s, window_visible, &m, &r.t);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(nk, sizeof(double));
    reference_lse(&r, &m, lse_want);

    char label[160];
#define COMPARE(name, got_values, want, n, rtol_)                                                            \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n);                                                           \
        double worst_ = 0;                                                                                 \
        for (size_t i_ = 0; i_ < (n); i_++) worst_ = fmax(worst_, fabs((got_values)[i_] - (want)[i_]));    \
        snprintf(label, sizeof label, "%s B%d H%d T%d M%d D%d c%d w%d dil%d err/scale %.1e", name, c.B, c.H, \
                 c.T, c.M, c.D, c.causal, c.w, c.dilated, worst_ / scale_);                                \
        const double atol_ = atol_frac * scale_;                                                           \
        CHECK_CLOSE(label, got_values, want, n, rtol_, atol_);                                             \
    } while (0)
    view_to_d(&p.t.out, c.T, &s, got);
    COMPARE("out", got, r.out, nq, rtol);
    COMPARE("lse", p.lse, lse_want, nl, rtol / 10);
    view_to_d(&p.t.dq, c.T, &s, got);
    COMPARE("dq", got, r.dq, nq, rtol);
    view_to_d(&p.t.dk, S, &s, got);
    COMPARE("dk", got, r.dk, nk, rtol);
    view_to_d(&p.t.dv, S, &s, got);
    COMPARE("dv", got, r.dv, nk, rtol);
#undef COMPARE
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns or in memory rows of dq");
    free(lse_want), free(got);
    problem_d_free(&r);
    problem_free(&p);
}

TEST(fast_matches_reference_causal) {
    const case_shape cases[] = {
        /* B, H, T, M, D, causal, w, dilated */
        {1, 1, 1, 0, 16, 1, 1, 0},   {2, 3, 5, 7, 3, 1, 3, 1},    {1, 3, 65, 70, 64, 1, 64, 1},
        {2, 2, 130, 0, 16, 1, 3, 0}, {1, 3, 200, 7, 16, 1, 100, 1}, {1, 3, 130, 70, 3, 1, 1, 1},
        {1, 2, 200, 0, 64, 1, 64, 0}, {2, 3, 65, 7, 64, 1, 100, 0}, {1, 1, 1, 70, 64, 1, 100, 0},
        {1, 3, 5, 70, 16, 1, 64, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_matches_reference_bidirectional) {
    const case_shape cases[] = {
        {1, 1, 1, 0, 3, 0, 1, 0},     {2, 3, 5, 7, 16, 0, 3, 1},   {1, 3, 65, 0, 64, 0, 64, 1},
        {2, 2, 130, 70, 16, 0, 3, 0}, {1, 3, 200, 7, 64, 0, 100, 1}, {1, 3, 130, 70, 3, 0, 1, 1},
        {1, 2, 200, 0, 16, 0, 64, 0}, {1, 1, 1, 70, 64, 0, 100, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_is_stable_for_large_scores) {
    const case_shape cases[] = {{1, 3, 130, 70, 16, 0, 64, 1}, {1, 3, 130, 7, 16, 1, 100, 1}};
    for (size_t i = 0; i < 2; i++) check_fast_against_reference(cases[i], 1.0f, 3.0f, 1e-3, 3e-5);
}

TEST(window_covering_everything_equals_full_kind) {
    /* causal, dilation 1, w >= S: the window kind must agree with lc_attn_full's forward */
    const case_shape cases[] = {{1, 2, 130, 70, 64, 1, 200, 0}, {2, 3, 65, 0, 16, 1, 65, 0}, {1, 1, 5, 7, 3, 1, 1000, 0}};
    for (size_t ci = 0; ci < 3; ci++) {
        const case_shape c = cases[ci];
        lc_attn_shape s = shape_of(c);
        problem p = problem_new(s, opts_of(c), lc_get_threads(), 31 + ci, 1.0f);
        lc_attn_window.forward(&s, &p.o, &p.t, p.work);
        float *out_w = xcalloc(p.out_n, sizeof(float)), *lse_w = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
        memcpy(out_w, p.out, p.out_n * sizeof(float));
        memcpy(lse_w, p.lse, (size_t)s.B * s.H * s.T * sizeof(float));
        float *work_full = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &s, NULL, lc_get_threads()) * sizeof(float));
        lc_attn_full.forward(&s, NULL, &p.t, work_full);
        char label[96];
        snprintf(label, sizeof label, "out window vs full T%d M%d D%d w%d", c.T, c.M, c.D, c.w);
        CHECK_CLOSE(label, out_w, p.out, p.out_n, 1e-4, 1e-5);
        snprintf(label, sizeof label, "lse window vs full T%d M%d D%d w%d", c.T, c.M, c.D, c.w);
        CHECK_CLOSE(label, lse_w, p.lse, (size_t)s.B * s.H * s.T, 1e-5, 1e-5);
        free(out_w), free(lse_w), free(work_full);
        problem_free(&p);
    }
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const case_shape cs[2] = {{2, 3, 130, 70, 24, 1, 64, 1}, {1, 3, 200, 7, 16, 0, 3, 1}};
    const int threads_before = lc_get_threads();
    for (int ci = 0; ci < 2; ci++) {
        const lc_attn_shape s = shape_of(cs[ci]);
        problem runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(s, opts_of(cs[ci]), 2, 5, 1.0f);
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 3; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)s.B * s.H * s.T * sizeof(float)) == 0,
                  "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)",
                  i);
        }
        for (int i = 0; i < 3; i++) problem_free(&runs[i]);
    }
}

TEST(unseen_keys_get_zero_gradients) {
    /* T = 0: nothing flows back, but all M rows of dk and dv are written as zeros. */
    const lc_attn_shape s = {2, 2, 0, 5, 24, 1, 0.2f, 0, 0};
    const lc_attn_window_opts o = window_opts(3, NULL, 1);
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

TEST(workspace_does_not_grow_like_t_squared) {
    CHECK(strcmp(lc_attn_window.name, "window") == 0, "name %s", lc_attn_window.name);
    CHECK(lc_attn_window.forward == lc_attn_window_forward && lc_attn_window.backward == lc_attn_window_backward &&
              lc_attn_window.workspace_floats == lc_attn_window_workspace,
          "table row points elsewhere");
    /* Beyond a fixed per-thread part, at most H floats per token (row statistics), in both modes and
     * with dilation. */
    const int dil[8] = {1, 1, 2, 3, 1, 1, 2, 3};
    for (int causal = 0; causal <= 1; causal++)
        for (int dilated = 0; dilated <= 1; dilated++) {
            const lc_attn_window_opts o = window_opts(256, dilated ? dil : NULL, 8);
            lc_attn_shape small = shape_of((case_shape){1, 8, 1024, 0, 64, causal, 256, 0}), large = small;
            large.T = 65536;
            const size_t a = LC_TEST_WORKSPACE(lc_attn_window_workspace, &small, &o, 2), b = LC_TEST_WORKSPACE(lc_attn_window_workspace, &large, &o, 2);
            CHECK(b >= a && b - a <= (size_t)8 * (65536 - 1024), "causal %d dilated %d: workspace %zu -> %zu floats",
                  causal, dilated, a, b);
            CHECK(a < (size_t)128 * 1024, "causal %d dilated %d: workspace %zu floats at T = 1024", causal, dilated, a);
        }
}

/* ---------------------------------------------------------------- relative positions, dilated */

/* The fused fp32 problem plus r [S, H*D], u, vb [H*D] and their gradients (exactly sized, SENTINEL first,
 * so every element must be written); the shape gets relpos = 1. */
typedef struct {
    problem p;
    float *r, *u, *vb, *dr, *du, *dvb;
    lc_attn_relpos rel;
} rel_problem;

static rel_problem *rel_problem_new(case_shape c, int nthreads, uint64_t seed) {
    rel_problem *x = xcalloc(1, sizeof *x);
    lc_attn_shape s = shape_of(c);
    s.relpos = 1;
    x->p = problem_new(s, opts_of(c), nthreads, seed, 1.0f);
    const size_t S = (size_t)c.M + c.T, HD = (size_t)c.H * c.D;
    x->r = xcalloc(S * HD, sizeof(float)), x->dr = xcalloc(S * HD, sizeof(float));
    x->u = xcalloc(HD, sizeof(float)), x->vb = xcalloc(HD, sizeof(float));
    x->du = xcalloc(HD, sizeof(float)), x->dvb = xcalloc(HD, sizeof(float));
    lc_rng rng;
    lc_rng_seed(&rng, seed + 1);
    for (size_t i = 0; i < S * HD; i++) x->r[i] = lc_rng_normal(&rng), x->dr[i] = SENTINEL;
    for (size_t i = 0; i < HD; i++) {
        x->u[i] = 0.5f * lc_rng_normal(&rng), x->vb[i] = 0.5f * lc_rng_normal(&rng);
        x->du[i] = x->dvb[i] = SENTINEL;
    }
    x->rel = (lc_attn_relpos){x->r, x->u, x->vb, x->dr, x->du, x->dvb};
    x->p.t.rel = &x->rel;
    return x;
}

static void rel_problem_free(rel_problem *x) {
    problem_free(&x->p);
    free(x->r), free(x->u), free(x->vb), free(x->dr), free(x->du), free(x->dvb);
    free(x);
}

static void floats_to_d(const float *src, size_t n, double *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* Causal heads with dilations 1, 2, 3, ... and relative positions against the masked reference with rel
 * (the distance of key s from query t is M + t - s, as in the full kind). */
static void check_relative_against_reference(case_shape c, double rtol, double atol_frac) {
    rel_problem *x = rel_problem_new(c, lc_get_threads(), 400 + c.T + 13 * c.M + 101 * c.D + 7 * c.w);
    problem *p = &x->p;
    char err[256];
    CHECK(lc_attn_window.check(&p->s, &p->o, NULL, err, sizeof err) == 0, "check refused: %s", err);
    run_fast(p);

    const lc_attn_shape s = p->s;
    const window_mask m = {c.M, 1, p->o};
    problem_d r = problem_d_new(s);
    const int S = c.M + c.T, HD = c.H * c.D;
    view_to_d(&p->t.q, c.T, &s, r.q), view_to_d(&p->t.k, S, &s, r.k), view_to_d(&p->t.v, S, &s, r.v);
    view_to_d(&p->t.dout, c.T, &s, r.dout);
    double *rel_d = xcalloc((size_t)(2 * S + 4) * HD, sizeof(double));
    double *rr = rel_d, *ru = rr + (size_t)S * HD, *rv = ru + HD, *rdr = rv + HD, *rdu = rdr + (size_t)S * HD,
           *rdv = rdu + HD;
    floats_to_d(x->r, (size_t)S * HD, rr), floats_to_d(x->u, HD, ru), floats_to_d(x->vb, HD, rv);
    const lc_attn_relpos_d rel = {rr, ru, rv, rdr, rdu, rdv};
    r.t.rel = &rel;
    lc_attn_masked_forward_ref(&s, window_visible, &m, &r.t);
    lc_attn_masked_backward_ref(&s, window_visible, &m, &r.t);

    const size_t nq = (size_t)c.B * c.T * HD, nk = (size_t)c.B * S * HD;
    double *got = xcalloc(nk > (size_t)S * HD ? nk : (size_t)S * HD, sizeof(double));
    char label[160];
#define COMPARE_REL(name, want, n)                                                                          \
    do {                                                                                                  \
        snprintf(label, sizeof label, "rel %s B%d H%d T%d M%d D%d w%d dil%d", name, c.B, c.H, c.T, c.M, c.D, \
                 c.w, c.dilated);                                                                         \
        const double atol_ = atol_frac * scale_of(want, n);                                               \
        CHECK_CLOSE(label, got, want, n, rtol, atol_);                                                    \
    } while (0)
    view_to_d(&p->t.out, c.T, &s, got);
    COMPARE_REL("out", r.out, nq);
    view_to_d(&p->t.dq, c.T, &s, got);
    COMPARE_REL("dq", r.dq, nq);
    view_to_d(&p->t.dk, S, &s, got);
    COMPARE_REL("dk", r.dk, nk);
    view_to_d(&p->t.dv, S, &s, got);
    COMPARE_REL("dv", r.dv, nk);
    floats_to_d(x->dr, (size_t)S * HD, got);
    COMPARE_REL("dr", rdr, (size_t)S * HD);
    floats_to_d(x->du, HD, got);
    COMPARE_REL("du", rdu, (size_t)HD);
    floats_to_d(x->dvb, HD, got);
    COMPARE_REL("dv(bias)", rdv, (size_t)HD);
#undef COMPARE_REL
    CHECK(sentinels_intact(p), "a write landed outside the q/k/v/out columns or in memory rows of dq");
    free(got), free(rel_d);
    problem_d_free(&r);
    rel_problem_free(x);
}

TEST(dilated_relative_positions_match_reference) {
    const case_shape cases[] = {
        /* B, H, T, M, D, causal, w, dilated */
        {1, 3, 1, 0, 16, 1, 1, 1},  {2, 3, 5, 7, 3, 1, 3, 1},    {1, 3, 65, 70, 64, 1, 64, 1},
        {2, 3, 130, 0, 16, 1, 3, 1}, {1, 3, 200, 7, 16, 1, 100, 1}, {1, 4, 130, 70, 3, 1, 1, 1},
        {2, 2, 40, 5, 8, 1, 4, 0}, /* undilated: the whole problem goes to the full kind */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_relative_against_reference(cases[i], 1e-4, 2e-6);
}

TEST(dilated_relative_positions_are_deterministic) {
    const case_shape c = {2, 3, 150, 40, 24, 1, 8, 1};
    const int threads_before = lc_get_threads(), threads[3] = {2, 1, 3};
    rel_problem *runs[3];
    for (int i = 0; i < 3; i++) {
        lc_set_threads(threads[i]);
        runs[i] = rel_problem_new(c, threads[i], 17);
        run_fast(&runs[i]->p);
    }
    lc_set_threads(threads_before);
    const size_t S = (size_t)c.M + c.T, HD = (size_t)c.H * c.D;
    for (int i = 1; i < 3; i++) {
        CHECK(memcmp(runs[0]->p.out, runs[i]->p.out, runs[0]->p.out_n * sizeof(float)) == 0, "out differs (run %d)", i);
        CHECK(memcmp(runs[0]->p.grad, runs[i]->p.grad, runs[0]->p.qkv_n * sizeof(float)) == 0,
              "gradients differ (run %d)", i);
        CHECK(memcmp(runs[0]->dr, runs[i]->dr, S * HD * sizeof(float)) == 0, "dr differs (run %d)", i);
        CHECK(memcmp(runs[0]->du, runs[i]->du, HD * sizeof(float)) == 0 &&
                  memcmp(runs[0]->dvb, runs[i]->dvb, HD * sizeof(float)) == 0,
              "du / dv(bias) differ (run %d)", i);
    }
    for (int i = 0; i < 3; i++) rel_problem_free(runs[i]);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_is_stable_for_large_scores);
    RUN(window_covering_everything_equals_full_kind);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(unseen_keys_get_zero_gradients);
    RUN(workspace_does_not_grow_like_t_squared);
    RUN(dilated_relative_positions_match_reference);
    RUN(dilated_relative_positions_are_deterministic);
    return test_summary("test_attn_window");
}
