/* Tests of the linformer attention kind (src/attn/linformer.h): a plain double reference written with
 * E, F in their natural k x n layout (checked against central finite differences for q, k, v, E, F); the
 * fast fp32 path against it through strided fused views, for every sharing mode, inputs shorter than n,
 * more than one block of query rows and k > T, with dE, dF accumulated onto existing values; k = T with
 * identity projections is full bidirectional attention (forward and gradients); the sharing modes' sizes;
 * the initialisation; bit-identical results across repeats and thread counts; option and shape errors;
 * parity with the PyTorch fixture tests/fixtures/linformer_attn.safetensors
 * (tests/reference/make_linformer_fixture.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/linformer.h"
#include "attn/spec.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "attn_workspace.h"
#include "harness.h"
#include "train/safetensors.h"

#define SENTINEL 12345.0f

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

typedef struct {
    int B, H, T, D, k, share, n; /* n: max_len of the parameters (>= T) */
} lcase;

static lc_attn_shape shape_of(lcase c) {
    lc_attn_shape s = {c.B, c.H, c.T, 0, c.D, 0, (float)(1.0 / sqrt((double)c.D)), 0, 0};
    return s;
}

static lc_attn_linformer_opts opts_of(lcase c) {
    lc_attn_linformer_opts o;
    lc_attn_linformer.opts_init(&o, c.H);
    o.k = c.k, o.share = c.share;
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

/* ---------------------------------------------------------------- double reference */

/* Contiguous [B, T, H, D] tensors; E holds all P projections in the natural layout [P][k][n]. */
typedef struct {
    lcase c;
    int P;
    double scale;
    double *q, *k, *v, *dout, *E;         /* inputs */
    double *out, *lse, *dq, *dk, *dv, *dE; /* outputs (dE written, not accumulated) */
} ref_problem;

static ref_problem ref_new(lcase c) {
    ref_problem r;
    memset(&r, 0, sizeof r);
    r.c = c;
    const lc_attn_linformer_opts o = opts_of(c);
    r.P = lc_attn_linformer_projections(&o, c.H);
    r.scale = 1.0 / sqrt((double)c.D);
    const size_t nx = (size_t)c.B * c.T * c.H * c.D, ne = (size_t)r.P * c.k * c.n;
    r.q = xcalloc(nx, sizeof(double)), r.k = xcalloc(nx, sizeof(double)), r.v = xcalloc(nx, sizeof(double));
    r.dout = xcalloc(nx, sizeof(double)), r.out = xcalloc(nx, sizeof(double)), r.dq = xcalloc(nx, sizeof(double));
    r.dk = xcalloc(nx, sizeof(double)), r.dv = xcalloc(nx, sizeof(double));
    r.lse = xcalloc((size_t)c.B * c.H * c.T, sizeof(double));
    r.E = xcalloc(ne, sizeof(double)), r.dE = xcalloc(ne, sizeof(double));
    return r;
}

static void ref_free(ref_problem *r) {
    free(r->q), free(r->k), free(r->v), free(r->dout), free(r->out), free(r->dq), free(r->dk), free(r->dv);
    free(r->lse), free(r->E), free(r->dE);
}

static size_t ix(const lcase *c, int b, int t, int h, int d) {
    return (((size_t)b * c->T + t) * c->H + h) * c->D + d;
}

/* Forward, and with backward != 0 also dq, dk, dv, dE (gradients of sum(out * dout)). */
static void ref_run(ref_problem *r, int backward) {
    const lcase *c = &r->c;
    const lc_attn_linformer_opts o = opts_of(*c);
    const int K = c->k, S = c->T, D = c->D;
    double *kp = xcalloc((size_t)K * D, sizeof(double)), *vp = xcalloc((size_t)K * D, sizeof(double));
    double *p = xcalloc((size_t)S * K, sizeof(double)), *ds = xcalloc((size_t)S * K, sizeof(double));
    double *dkp = xcalloc((size_t)K * D, sizeof(double)), *dvp = xcalloc((size_t)K * D, sizeof(double));
    if (backward) memset(r->dE, 0, sizeof(double) * (size_t)r->P * K * c->n);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            const double *E = r->E + (size_t)lc_attn_linformer_key_proj(&o, h) * K * c->n;
            const double *F = r->E + (size_t)lc_attn_linformer_value_proj(&o, h) * K * c->n;
            double *dE = r->dE + (size_t)lc_attn_linformer_key_proj(&o, h) * K * c->n;
            double *dF = r->dE + (size_t)lc_attn_linformer_value_proj(&o, h) * K * c->n;
            for (int j = 0; j < K; j++)
                for (int d = 0; d < D; d++) {
                    double a = 0, bb = 0;
                    for (int s = 0; s < S; s++) {
                        a += E[(size_t)j * c->n + s] * r->k[ix(c, b, s, h, d)];
                        bb += F[(size_t)j * c->n + s] * r->v[ix(c, b, s, h, d)];
                    }
                    kp[j * D + d] = a, vp[j * D + d] = bb;
                }
            for (int t = 0; t < c->T; t++) {
                double max = -INFINITY;
                for (int j = 0; j < K; j++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++) dot += r->q[ix(c, b, t, h, d)] * kp[j * D + d];
                    p[(size_t)t * K + j] = r->scale * dot;
                    max = fmax(max, r->scale * dot);
                }
                double sum = 0;
                for (int j = 0; j < K; j++) sum += exp(p[(size_t)t * K + j] - max);
                for (int j = 0; j < K; j++) p[(size_t)t * K + j] = exp(p[(size_t)t * K + j] - max) / sum;
                r->lse[((size_t)b * c->H + h) * c->T + t] = max + log(sum);
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j < K; j++) acc += p[(size_t)t * K + j] * vp[j * D + d];
                    r->out[ix(c, b, t, h, d)] = acc;
                }
            }
            if (!backward) continue;
            memset(dkp, 0, sizeof(double) * (size_t)K * D), memset(dvp, 0, sizeof(double) * (size_t)K * D);
            for (int t = 0; t < c->T; t++) {
                double delta = 0;
                for (int j = 0; j < K; j++) {
                    double dp = 0;
                    for (int d = 0; d < D; d++) dp += r->dout[ix(c, b, t, h, d)] * vp[j * D + d];
                    ds[(size_t)t * K + j] = dp;
                    delta += p[(size_t)t * K + j] * dp;
                }
                for (int j = 0; j < K; j++) ds[(size_t)t * K + j] = p[(size_t)t * K + j] * (ds[(size_t)t * K + j] - delta);
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j < K; j++) acc += ds[(size_t)t * K + j] * kp[j * D + d];
                    r->dq[ix(c, b, t, h, d)] = r->scale * acc;
                }
                for (int j = 0; j < K; j++)
                    for (int d = 0; d < D; d++) {
                        dkp[j * D + d] += r->scale * ds[(size_t)t * K + j] * r->q[ix(c, b, t, h, d)];
                        dvp[j * D + d] += p[(size_t)t * K + j] * r->dout[ix(c, b, t, h, d)];
                    }
            }
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++) {
                    double a = 0, bb = 0;
                    for (int j = 0; j < K; j++) a += E[(size_t)j * c->n + s] * dkp[j * D + d], bb += F[(size_t)j * c->n + s] * dvp[j * D + d];
                    r->dk[ix(c, b, s, h, d)] = a, r->dv[ix(c, b, s, h, d)] = bb;
                }
            for (int j = 0; j < K; j++)
                for (int s = 0; s < S; s++) {
                    double a = 0, bb = 0;
                    for (int d = 0; d < D; d++) a += dkp[j * D + d] * r->k[ix(c, b, s, h, d)], bb += dvp[j * D + d] * r->v[ix(c, b, s, h, d)];
                    dE[(size_t)j * c->n + s] += a;
                    dF[(size_t)j * c->n + s] += bb;
                }
        }
    free(kp), free(vp), free(p), free(ds), free(dkp), free(dvp);
}

static void ref_fill(ref_problem *r, uint64_t seed, double e_std) {
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    const size_t nx = (size_t)r->c.B * r->c.T * r->c.H * r->c.D, ne = (size_t)r->P * r->c.k * r->c.n;
    for (size_t i = 0; i < nx; i++)
        r->q[i] = lc_rng_normal(&rng), r->k[i] = lc_rng_normal(&rng), r->v[i] = lc_rng_normal(&rng),
        r->dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < ne; i++) r->E[i] = e_std * lc_rng_normal(&rng);
}

static double ref_loss(ref_problem *r) {
    ref_run(r, 0);
    const size_t nx = (size_t)r->c.B * r->c.T * r->c.H * r->c.D;
    double L = 0;
    for (size_t i = 0; i < nx; i++) L += r->out[i] * r->dout[i];
    return L;
}

TEST(reference_backward_matches_finite_differences) {
    const lcase cases[] = {
        /* B, H, T, D, k, share, n */
        {2, 2, 5, 3, 3, LC_LINFORMER_SHARE_NONE, 7},
        {2, 3, 4, 2, 6, LC_LINFORMER_SHARE_HEADWISE, 4},
        {1, 2, 6, 3, 4, LC_LINFORMER_SHARE_KV, 8},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        ref_problem r = ref_new(cases[ci]);
        ref_fill(&r, 100 + ci, 0.5);
        ref_run(&r, 1);
        const size_t nx = (size_t)r.c.B * r.c.T * r.c.H * r.c.D, ne = (size_t)r.P * r.c.k * r.c.n;
        double *inputs[4] = {r.q, r.k, r.v, r.E}, *grads[4] = {r.dq, r.dk, r.dv, r.dE};
        const size_t counts[4] = {nx, nx, nx, ne};
        const char *names[4] = {"dq", "dk", "dv", "dE (all projections)"};
        for (int w = 0; w < 4; w++) {
            double *want = xcalloc(counts[w], sizeof(double)), *got = xcalloc(counts[w], sizeof(double));
            memcpy(got, grads[w], sizeof(double) * counts[w]);
            for (size_t i = 0; i < counts[w]; i++) {
                const double saved = inputs[w][i], step = 1e-6;
                inputs[w][i] = saved + step;
                const double up = ref_loss(&r);
                inputs[w][i] = saved - step;
                const double down = ref_loss(&r);
                inputs[w][i] = saved;
                want[i] = (up - down) / (2 * step);
            }
            char label[96];
            snprintf(label, sizeof label, "%s share=%d n=%d vs finite diff", names[w], r.c.share, r.c.n);
            CHECK_CLOSE(label, got, want, counts[w], 1e-6, 1e-8);
            free(want), free(got);
        }
        ref_free(&r);
    }
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, T, row] buffer, dq, dk, dv of one gradient buffer; out and dout
 * are [B, T, H*D + 5]. Padding columns hold SENTINEL and must survive. */
typedef struct {
    lcase c;
    lc_attn_shape s;
    lc_attn_linformer_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work, *params, *dparams;
    size_t qkv_n, out_n, work_n, params_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lcase c, int nthreads, uint64_t seed) {
    problem p;
    memset(&p, 0, sizeof p);
    p.c = c, p.s = shape_of(c), p.o = opts_of(c);
    const int HD = c.H * c.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)c.B * c.T * p.row, p.out_n = (size_t)c.B * c.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)c.B * c.H * c.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_linformer.workspace_floats, &p.s, &p.o, nthreads);
    p.work = malloc(p.work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    p.params_n = lc_attn_linformer.param_floats(&p.o, c.H, c.D, c.n);
    p.params = malloc(p.params_n * sizeof(float)), p.dparams = malloc(p.params_n * sizeof(float));
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        p.qkv[i] = (i % p.row) < 3 * (size_t)HD ? lc_rng_normal(&rng) : SENTINEL;
        p.grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p.out_n; i++) p.dout[i] = lc_rng_normal(&rng), p.out[i] = SENTINEL;
    lc_attn_linformer.param_init(p.params, &p.o, c.H, c.D, c.n, seed + 1);
    for (size_t i = 0; i < p.params_n; i++) p.params[i] *= 4.0f; /* scores of order 1 at small n */
    for (size_t i = 0; i < p.params_n; i++) p.dparams[i] = 0.25f * lc_rng_normal(&rng); /* accumulated onto */
    const long sb = (long)c.T * p.row, out_sb = (long)c.T * p.out_row;
    p.t.q = view_f(p.qkv, sb, p.row), p.t.k = view_f(p.qkv + HD, sb, p.row), p.t.v = view_f(p.qkv + 2 * HD, sb, p.row);
    p.t.dq = view_f(p.grad, sb, p.row), p.t.dk = view_f(p.grad + HD, sb, p.row);
    p.t.dv = view_f(p.grad + 2 * HD, sb, p.row);
    p.t.out = view_f(p.out, out_sb, p.out_row), p.t.dout = view_f(p.dout, out_sb, p.out_row);
    p.t.lse = p.lse;
    p.t.params = p.params, p.t.dparams = p.dparams;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work), free(p->params);
    free(p->dparams);
}

static void run_fast(problem *p) {
    lc_attn_linformer.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_linformer.backward(&p->s, &p->o, &p->t, p->work);
}

static void view_to_d(const lc_view *v, const lcase *c, double *dst) {
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++)
            for (int i = 0; i < c->H * c->D; i++) *dst++ = v->p[(long)b * v->sb + (long)t * v->st + i];
}

static void d_to_view(const double *src, const lc_view *v, const lcase *c) {
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++)
            for (int i = 0; i < c->H * c->D; i++) v->p[(long)b * v->sb + (long)t * v->st + i] = (float)*src++;
}

/* kind layout [n][P][k] <-> natural [P][k][n] */
static void params_to_natural(const float *kind, int P, int K, int n, double *nat) {
    for (int p = 0; p < P; p++)
        for (int j = 0; j < K; j++)
            for (int s = 0; s < n; s++) nat[((size_t)p * K + j) * n + s] = kind[((size_t)s * P + p) * K + j];
}
static void natural_to_params(const double *nat, int P, int K, int n, float *kind) {
    for (int p = 0; p < P; p++)
        for (int j = 0; j < K; j++)
            for (int s = 0; s < n; s++) kind[((size_t)s * P + p) * K + j] = (float)nat[((size_t)p * K + j) * n + s];
}

static int sentinels_intact(const problem *p) {
    const int HD = p->c.H * p->c.D;
    for (size_t i = 0; i < p->qkv_n; i++)
        if (i % p->row >= 3 * (size_t)HD && p->grad[i] != SENTINEL) return 0;
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= (size_t)HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

static double scale_of(const double *x, size_t n) {
    double m = 1;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

#define COMPARE_SCALED(label, got, want, n, rtol, atol_frac)                                                 \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n);                                                           \
        CHECK_CLOSE(label, got, want, n, rtol, (atol_frac) * scale_);                                      \
    } while (0)

static void check_fast_against_reference(lcase c) {
    problem p = problem_new(c, lc_get_threads(), 50 + c.T + 7 * c.k + c.share);
    float *dparams_before = xcalloc(p.params_n, sizeof(float));
    memcpy(dparams_before, p.dparams, p.params_n * sizeof(float));
    run_fast(&p);

    ref_problem r = ref_new(c);
    r.scale = p.s.scale;
    view_to_d(&p.t.q, &c, r.q), view_to_d(&p.t.k, &c, r.k), view_to_d(&p.t.v, &c, r.v);
    view_to_d(&p.t.dout, &c, r.dout);
    params_to_natural(p.params, r.P, c.k, c.n, r.E);
    ref_run(&r, 1);

    const size_t nx = (size_t)c.B * c.T * c.H * c.D, nl = (size_t)c.B * c.H * c.T, ne = (size_t)r.P * c.k * c.n;
    double *got = xcalloc(nx > ne ? nx : ne, sizeof(double)), *want = xcalloc(ne, sizeof(double));
    char label[128];
#define LABEL(what) (snprintf(label, sizeof label, "%s B%d H%d T%d D%d k%d share%d n%d", what, c.B, c.H, c.T, c.D, \
                              c.k, c.share, c.n), label)
    view_to_d(&p.t.out, &c, got);
    COMPARE_SCALED(LABEL("out"), got, r.out, nx, 1e-4, 5e-6);
    COMPARE_SCALED(LABEL("lse"), p.lse, r.lse, nl, 1e-5, 1e-6);
    view_to_d(&p.t.dq, &c, got);
    COMPARE_SCALED(LABEL("dq"), got, r.dq, nx, 1e-4, 5e-6);
    view_to_d(&p.t.dk, &c, got);
    COMPARE_SCALED(LABEL("dk"), got, r.dk, nx, 1e-4, 5e-6);
    view_to_d(&p.t.dv, &c, got);
    COMPARE_SCALED(LABEL("dv"), got, r.dv, nx, 1e-4, 5e-6);
    /* dparams = before + dE, in the kind's layout; columns s >= T get nothing */
    float *delta = xcalloc(p.params_n, sizeof(float));
    for (size_t i = 0; i < p.params_n; i++) delta[i] = p.dparams[i] - dparams_before[i];
    params_to_natural(delta, r.P, c.k, c.n, got);
    COMPARE_SCALED(LABEL("dE dF (accumulated)"), got, r.dE, ne, 1e-4, 8e-6);
    int untouched = 1;
    for (size_t i = (size_t)c.T * r.P * c.k; i < p.params_n; i++) untouched &= p.dparams[i] == dparams_before[i];
    CHECK(untouched, "dparams beyond column T changed");
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns");
#undef LABEL
    free(got), free(want), free(delta), free(dparams_before);
    ref_free(&r);
    problem_free(&p);
}

TEST(fast_matches_reference) {
    const lcase cases[] = {
        /* B, H, T, D, k, share, n */
        {1, 1, 1, 16, 1, LC_LINFORMER_SHARE_HEADWISE, 1},
        {2, 3, 5, 3, 4, LC_LINFORMER_SHARE_NONE, 9},
        {2, 2, 37, 16, 8, LC_LINFORMER_SHARE_HEADWISE, 64},
        {1, 3, 20, 5, 32, LC_LINFORMER_SHARE_KV, 20},       /* k > T */
        {1, 2, 600, 16, 24, LC_LINFORMER_SHARE_NONE, 700},  /* two blocks of query rows */
        {2, 2, 530, 64, 64, LC_LINFORMER_SHARE_HEADWISE, 530},
        {3, 4, 65, 24, 16, LC_LINFORMER_SHARE_KV, 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i]);
}

TEST(identity_projections_are_full_attention) {
    /* k = T = n, E = F = I: K' = K, V' = V, so linformer is full bidirectional attention, gradients too */
    const lcase cases[] = {{2, 3, 17, 8, 17, LC_LINFORMER_SHARE_HEADWISE, 17},
                           {1, 2, 70, 16, 70, LC_LINFORMER_SHARE_NONE, 70},
                           {1, 2, 9, 5, 9, LC_LINFORMER_SHARE_KV, 9}};
    for (size_t ci = 0; ci < 3; ci++) {
        const lcase c = cases[ci];
        problem a = problem_new(c, lc_get_threads(), 11 + ci), f = problem_new(c, lc_get_threads(), 11 + ci);
        const int P = lc_attn_linformer_projections(&a.o, c.H);
        memset(a.params, 0, a.params_n * sizeof(float));
        for (int s = 0; s < c.n; s++)
            for (int p = 0; p < P; p++) a.params[((size_t)s * P + p) * c.k + s] = 1.0f;
        run_fast(&a);
        float *work = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &f.s, NULL, lc_get_threads()) * sizeof(float));
        lc_attn_full.forward(&f.s, NULL, &f.t, work);
        lc_attn_full.backward(&f.s, NULL, &f.t, work);
        free(work);
        char label[96];
        snprintf(label, sizeof label, "out vs full T%d share%d", c.T, c.share);
        CHECK_CLOSE(label, a.out, f.out, a.out_n, 1e-4, 1e-5);
        snprintf(label, sizeof label, "lse vs full T%d share%d", c.T, c.share);
        CHECK_CLOSE(label, a.lse, f.lse, (size_t)c.B * c.H * c.T, 1e-5, 1e-5);
        snprintf(label, sizeof label, "dq dk dv vs full T%d share%d", c.T, c.share);
        CHECK_CLOSE(label, a.grad, f.grad, a.qkv_n, 1e-4, 1e-5);
        problem_free(&a), problem_free(&f);
    }
}

static int all_visible(const void *ctx, int b, int h, int t, int s) {
    (void)ctx, (void)b, (void)h, (void)t, (void)s;
    return 1;
}

TEST(identity_reference_is_masked_reference_with_everything_visible) {
    const lcase c = {2, 2, 6, 3, 6, LC_LINFORMER_SHARE_NONE, 6};
    ref_problem r = ref_new(c);
    ref_fill(&r, 7, 0.0);
    for (int p = 0; p < r.P; p++)
        for (int j = 0; j < c.k; j++) r.E[((size_t)p * c.k + j) * c.n + j] = 1.0;
    const lc_attn_shape s = shape_of(c);
    const size_t nx = (size_t)c.B * c.T * c.H * c.D;
    double *out = xcalloc(nx, sizeof(double)), *dq = xcalloc(nx, sizeof(double)), *dk = xcalloc(nx, sizeof(double)),
           *dv = xcalloc(nx, sizeof(double));
    const long sb = (long)c.T * c.H * c.D, st = (long)c.H * c.D;
    lc_attn_tensors_d t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view_d){r.q, sb, st}, t.k = (lc_view_d){r.k, sb, st}, t.v = (lc_view_d){r.v, sb, st};
    t.dout = (lc_view_d){r.dout, sb, st}, t.out = (lc_view_d){out, sb, st};
    t.dq = (lc_view_d){dq, sb, st}, t.dk = (lc_view_d){dk, sb, st}, t.dv = (lc_view_d){dv, sb, st};
    lc_attn_shape sr = s;
    sr.scale = (float)r.scale;
    r.scale = sr.scale; /* the same float scale on both sides */
    ref_run(&r, 1);
    lc_attn_masked_forward_ref(&sr, all_visible, NULL, &t);
    lc_attn_masked_backward_ref(&sr, all_visible, NULL, &t);
    CHECK_CLOSE("out vs masked reference", r.out, out, nx, 1e-12, 1e-12);
    CHECK_CLOSE("dq vs masked reference", r.dq, dq, nx, 1e-12, 1e-12);
    CHECK_CLOSE("dk vs masked reference", r.dk, dk, nx, 1e-12, 1e-12);
    CHECK_CLOSE("dv vs masked reference", r.dv, dv, nx, 1e-12, 1e-12);
    free(out), free(dq), free(dk), free(dv);
    ref_free(&r);
}

TEST(sharing_modes_set_parameter_counts) {
    const int H = 6, D = 32, n = 1000;
    lc_attn_linformer_opts o;
    lc_attn_linformer.opts_init(&o, H);
    CHECK(o.k == 256 && o.share == LC_LINFORMER_SHARE_HEADWISE, "defaults k=%d share=%d", o.k, o.share);
    o.k = 64;
    o.share = LC_LINFORMER_SHARE_NONE;
    CHECK(lc_attn_linformer.param_floats(&o, H, D, n) == (size_t)2 * H * 64 * n, "none: %zu",
          lc_attn_linformer.param_floats(&o, H, D, n));
    o.share = LC_LINFORMER_SHARE_HEADWISE;
    CHECK(lc_attn_linformer.param_floats(&o, H, D, n) == (size_t)2 * 64 * n, "headwise: %zu",
          lc_attn_linformer.param_floats(&o, H, D, n));
    o.share = LC_LINFORMER_SHARE_KV;
    CHECK(lc_attn_linformer.param_floats(&o, H, D, n) == (size_t)64 * n, "kv: %zu",
          lc_attn_linformer.param_floats(&o, H, D, n));
    CHECK(lc_attn_linformer.state_floats == NULL, "linformer keeps no state");
    /* projection numbering */
    o.share = LC_LINFORMER_SHARE_NONE;
    CHECK(lc_attn_linformer_key_proj(&o, 3) == 6 && lc_attn_linformer_value_proj(&o, 3) == 7, "none: 2h, 2h+1");
    o.share = LC_LINFORMER_SHARE_HEADWISE;
    CHECK(lc_attn_linformer_key_proj(&o, 3) == 0 && lc_attn_linformer_value_proj(&o, 3) == 1, "headwise: 0, 1");
    o.share = LC_LINFORMER_SHARE_KV;
    CHECK(lc_attn_linformer_key_proj(&o, 3) == 0 && lc_attn_linformer_value_proj(&o, 3) == 0, "kv: 0, 0");
}

TEST(init_is_xavier_uniform_and_seeded) {
    lcase c = {1, 4, 8, 16, 32, LC_LINFORMER_SHARE_NONE, 480};
    const lc_attn_linformer_opts o = opts_of(c);
    const size_t n = lc_attn_linformer.param_floats(&o, c.H, c.D, c.n);
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    lc_attn_linformer.param_init(a, &o, c.H, c.D, c.n, 42);
    lc_attn_linformer.param_init(b, &o, c.H, c.D, c.n, 42);
    lc_attn_linformer.param_init(d, &o, c.H, c.D, c.n, 43);
    const double bound = sqrt(3.0 / (c.k + c.n));
    double sum = 0, sum2 = 0, maxabs = 0;
    for (size_t i = 0; i < n; i++) sum += a[i], sum2 += (double)a[i] * a[i], maxabs = fmax(maxabs, fabs(a[i]));
    const double mean = sum / n, var = sum2 / n - mean * mean;
    CHECK(memcmp(a, b, n * sizeof(float)) == 0, "same seed, same values");
    CHECK(memcmp(a, d, n * sizeof(float)) != 0, "another seed, other values");
    CHECK(maxabs <= bound && maxabs > 0.95 * bound, "max |E| %g, bound %g", maxabs, bound);
    CHECK(fabs(mean) < 0.02 * bound, "mean %g", mean);
    CHECK(fabs(var / (bound * bound / 3) - 1) < 0.03, "variance %g, want %g", var, bound * bound / 3);
    free(a), free(b), free(d);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const int threads_before = lc_get_threads();
    const lcase cs[2] = {{2, 3, 530, 24, 40, LC_LINFORMER_SHARE_NONE, 600}, {3, 2, 70, 16, 16, LC_LINFORMER_SHARE_KV, 70}};
    for (int ci = 0; ci < 2; ci++) {
        problem runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(cs[ci], 2, 5);
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 3; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)cs[ci].B * cs[ci].H * cs[ci].T * sizeof(float)) == 0,
                  "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)",
                  i);
            CHECK(memcmp(runs[0].dparams, runs[i].dparams, runs[0].params_n * sizeof(float)) == 0,
                  "dparams differ (run %d)", i);
        }
        for (int i = 0; i < 3; i++) problem_free(&runs[i]);
    }
}

TEST(layerwise_sharing_accumulates_into_one_gradient) {
    /* Two "layers" given the same params/dparams: dparams ends as the sum of both layers' gradients. */
    const lcase c = {1, 2, 30, 8, 8, LC_LINFORMER_SHARE_HEADWISE, 40};
    problem a = problem_new(c, lc_get_threads(), 3), b = problem_new(c, lc_get_threads(), 4);
    memcpy(b.params, a.params, a.params_n * sizeof(float));
    float *sep = xcalloc(a.params_n, sizeof(float));
    memset(a.dparams, 0, a.params_n * sizeof(float)), memset(b.dparams, 0, a.params_n * sizeof(float));
    run_fast(&a), run_fast(&b);
    for (size_t i = 0; i < a.params_n; i++) sep[i] = a.dparams[i] + b.dparams[i];
    memset(a.dparams, 0, a.params_n * sizeof(float));
    b.t.dparams = a.dparams; /* the aliasing the model does */
    run_fast(&a), run_fast(&b);
    CHECK_CLOSE("shared dparams = sum of the layers'", a.dparams, sep, a.params_n, 1e-5, 1e-6);
    free(sep);
    problem_free(&a), problem_free(&b);
}

TEST(bad_options_and_shapes_are_rejected) {
    char err[256];
    lc_attn_linformer_opts o;
    lc_attn_linformer.opts_init(&o, 4);
    CHECK(lc_attn_linformer.opts_set(&o, 4, "k", "0", err, sizeof err) == -1, "k=0 accepted");
    CHECK(lc_attn_linformer.opts_set(&o, 4, "k", "-3", err, sizeof err) == -1, "k=-3 accepted");
    CHECK(lc_attn_linformer.opts_set(&o, 4, "share", "rows", err, sizeof err) == -1 && strstr(err, "headwise"),
          "share=rows: %s", err);
    CHECK(lc_attn_linformer.opts_set(&o, 4, "share", "layerwise", err, sizeof err) == -1 && strstr(err, "model"),
          "share=layerwise: %s", err);
    CHECK(lc_attn_linformer.opts_set(&o, 4, "causal", "1", err, sizeof err) == -1 && strstr(err, "share"),
          "unknown key: %s", err);
    CHECK(lc_attn_linformer.opts_set(&o, 4, "k", "64", err, sizeof err) == 0 && o.k == 64, "k=64");
    CHECK(lc_attn_linformer.opts_set(&o, 4, "share", "kv", err, sizeof err) == 0 && o.share == LC_LINFORMER_SHARE_KV,
          "share=kv");
    lc_attn_shape s = {1, 4, 128, 0, 16, 0, 0.25f, 0, 0};
    CHECK(lc_attn_linformer.check(&s, &o, NULL, err, sizeof err) == 0, "bidirectional accepted: %s", err);
    s.causal = 1;
    CHECK(lc_attn_linformer.check(&s, &o, NULL, err, sizeof err) == -1 && strstr(err, "linformer is bidirectional only"),
          "causal: %s", err);
    s.causal = 0, s.M = 5;
    CHECK(lc_attn_linformer.check(&s, &o, NULL, err, sizeof err) == -1 && strstr(err, "memory"), "M > 0: %s", err);
    s.M = 0, s.relpos = 1;
    CHECK(lc_attn_linformer.check(&s, &o, NULL, err, sizeof err) == -1, "relpos accepted");
    s.relpos = 0;
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(lc_attn_linformer.check(&s, &o, &g, err, sizeof err) == -1 && strstr(err, "global"), "global: %s", err);
    o.k = 0;
    CHECK(lc_attn_linformer.check(&s, &o, NULL, err, sizeof err) == -1, "k = 0 passed check");

    lc_attn_layer layer;
    CHECK(lc_attn_spec_parse("linformer:k=0", 1, 4, &layer, err, sizeof err) == -1, "spec k=0 accepted");
    CHECK(lc_attn_spec_parse("linformer:k=32,share=none", 1, 4, &layer, err, sizeof err) == 0, "spec: %s", err);
    const lc_attn_linformer_opts *po = (const void *)layer.group[0].opts;
    CHECK(layer.group[0].kind == &lc_attn_linformer && po->k == 32 && po->share == LC_LINFORMER_SHARE_NONE,
          "spec parsed into the options");
    s.causal = 1;
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == -1 && strstr(err, "bidirectional only"),
          "layer check causal: %s", err);
}

TEST(workspace_is_independent_of_length_beyond_a_block) {
    const lcase c = {4, 8, 1024, 64, 256, LC_LINFORMER_SHARE_HEADWISE, 65536};
    lcase l = c;
    l.T = 65536;
    const lc_attn_linformer_opts o = opts_of(c);
    lc_attn_shape a = shape_of(c), b = shape_of(l);
    const size_t wa = LC_TEST_WORKSPACE(lc_attn_linformer.workspace_floats, &a, &o, 2), wb = LC_TEST_WORKSPACE(lc_attn_linformer.workspace_floats, &b, &o, 2);
    CHECK(wa == wb, "workspace %zu at T=1024, %zu at T=65536", wa, wb);
    /* per thread K', V' and two row blocks; per (sequence, head) dK', dV' (B = 4, H = 8 here) */
    CHECK(wb <= (size_t)2 * (2 * 256 * 64 + 2 * 512 * 256 + 64) + (size_t)4 * 8 * 2 * 256 * 64, "workspace %zu floats",
          wb);
}

/* ---------------------------------------------------------------- PyTorch fixture */

static int read_f32(lc_st_file *f, const char *prefix, const char *name, int ndim, const long *shape, float *dst) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const lc_status st = lc_st_read(f, key, LC_DT_F32, ndim, shape, dst);
    CHECK(st == LC_OK, "%s", lc_last_error());
    return st == LC_OK;
}

static int meta_int(lc_st_file *f, const char *prefix, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const char *v = lc_st_get_meta(f, key);
    CHECK(v != NULL, "%s: no metadata %s", lc_st_path(f), key);
    return v ? atoi(v) : -1;
}

static void check_fixture_case(lc_st_file *f, const char *prefix) {
    char key[64];
    snprintf(key, sizeof key, "%sshare", prefix);
    const char *share = lc_st_get_meta(f, key);
    CHECK(share != NULL, "no %s", key);
    if (!share) return;
    lcase c = {meta_int(f, prefix, "batch"), meta_int(f, prefix, "n_head"), meta_int(f, prefix, "seq_len"),
               meta_int(f, prefix, "head_dim"), meta_int(f, prefix, "k"), 0, meta_int(f, prefix, "max_len")};
    c.share = strcmp(share, "none") == 0 ? LC_LINFORMER_SHARE_NONE
              : strcmp(share, "kv") == 0 ? LC_LINFORMER_SHARE_KV : LC_LINFORMER_SHARE_HEADWISE;
    CHECK(c.B > 0 && c.H > 0 && c.T > 0 && c.D > 0 && c.k > 0 && c.n >= c.T, "bad case metadata");
    if (!(c.B > 0 && c.H > 0 && c.T > 0 && c.D > 0 && c.k > 0 && c.n >= c.T)) return;
    problem p = problem_new(c, lc_get_threads(), 1);
    const int P = lc_attn_linformer_projections(&p.o, c.H);
    const size_t nx = (size_t)c.B * c.T * c.H * c.D, ne = (size_t)P * c.k * c.n, nl = (size_t)c.B * c.H * c.T;
    const long sx[4] = {c.B, c.T, c.H, c.D}, se[3] = {P, c.k, c.n}, sl[3] = {c.B, c.H, c.T}, one[1] = {1};
    float *buf = xcalloc(nx > ne ? nx : ne, sizeof(float));
    double *dbuf = xcalloc(nx > ne ? nx : ne, sizeof(double)), *got = xcalloc(nx > ne ? nx : ne, sizeof(double));
    const lc_view *inputs[4] = {&p.t.q, &p.t.k, &p.t.v, &p.t.dout};
    const char *names[4] = {"q", "k", "v", "dout"};
    for (int i = 0; i < 4; i++) {
        if (!read_f32(f, prefix, names[i], 4, sx, buf)) goto done;
        for (size_t j = 0; j < nx; j++) dbuf[j] = buf[j];
        d_to_view(dbuf, inputs[i], &c);
    }
    if (!read_f32(f, prefix, "E", 3, se, buf) || !read_f32(f, prefix, "scale", 1, one, &p.s.scale)) goto done;
    for (size_t j = 0; j < ne; j++) dbuf[j] = buf[j];
    natural_to_params(dbuf, P, c.k, c.n, p.params);
    memset(p.dparams, 0, p.params_n * sizeof(float));
    run_fast(&p);
    struct {
        const char *name;
        int ndim;
        const long *shape;
        size_t n;
        const lc_view *view;
    } outs[5] = {{"out", 4, sx, nx, &p.t.out}, {"dq", 4, sx, nx, &p.t.dq}, {"dk", 4, sx, nx, &p.t.dk},
                 {"dv", 4, sx, nx, &p.t.dv}, {"lse", 3, sl, nl, NULL}};
    char label[96];
    for (int i = 0; i < 5; i++) {
        if (!read_f32(f, prefix, outs[i].name, outs[i].ndim, outs[i].shape, buf)) continue;
        for (size_t j = 0; j < outs[i].n; j++) dbuf[j] = buf[j];
        if (outs[i].view)
            view_to_d(outs[i].view, &c, got);
        else
            for (size_t j = 0; j < nl; j++) got[j] = p.lse[j];
        snprintf(label, sizeof label, "fixture %s%s share=%s", prefix, outs[i].name, share);
        COMPARE_SCALED(label, got, dbuf, outs[i].n, 1e-4, 2e-6);
    }
    if (read_f32(f, prefix, "dE", 3, se, buf)) {
        for (size_t j = 0; j < ne; j++) dbuf[j] = buf[j];
        params_to_natural(p.dparams, P, c.k, c.n, got);
        snprintf(label, sizeof label, "fixture %sdE share=%s", prefix, share);
        COMPARE_SCALED(label, got, dbuf, ne, 1e-4, 4e-6);
    }
done:
    free(buf), free(dbuf), free(got);
    problem_free(&p);
}

TEST(matches_pytorch_fixture) {
    const char *path = LC_FIXTURES "/linformer_attn.safetensors";
    lc_st_file *f;
    const lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    const char *cases = lc_st_get_meta(f, "cases");
    CHECK(cases && strlen(cases) >= 3, "metadata 'cases' missing");
    for (const char *p = cases; p && *p; p++) {
        if (*p == ',') continue;
        char prefix[4] = {*p, '.', 0, 0};
        check_fixture_case(f, prefix);
    }
    lc_st_close(f);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference);
    RUN(identity_projections_are_full_attention);
    RUN(identity_reference_is_masked_reference_with_everything_visible);
    RUN(sharing_modes_set_parameter_counts);
    RUN(init_is_xavier_uniform_and_seeded);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(layerwise_sharing_accumulates_into_one_gradient);
    RUN(bad_options_and_shapes_are_rejected);
    RUN(workspace_is_independent_of_length_beyond_a_block);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_linformer");
}
