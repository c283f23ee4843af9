/* Tests of global tokens (Longformer) in the window attention kind (window.h). The double reference is
 * composed from the shared masked reference: ordinary rows with a mask of band plus global columns on
 * (q, k, v), global rows with a causal or full mask on (qg, kg, vg), each with dout zeroed on the other
 * rows; it is checked against finite differences. The fast fp32 passes against it (causal and
 * bidirectional, dilated heads, memory, many globals, globals inside and outside the band, strided fused
 * views with sentinels); determinism across repeats and thread counts; check() accepting and rejecting
 * global positions; parity with the PyTorch (Hugging Face style) fixture
 * tests/fixtures/longformer_attn.safetensors (tests/reference/make_longformer_fixture.py). */
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
#include "train/safetensors.h"

#define SENTINEL 12345.0f
#define MAX_GLOBAL 96

typedef struct {
    int B, H, T, M, D, causal, w, dilated; /* dilated: per-head dilations 1, 2, 3, 1, 2, 3, ... */
    int n;                                 /* global tokens */
    int pos[MAX_GLOBAL];                   /* n = -k: every k-th position starting at 0 (filled by fill_pos) */
} gcase;

static const int DILATIONS[8] = {1, 2, 3, 1, 2, 3, 1, 2};

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

static gcase fill_pos(gcase c) {
    if (c.n < 0) {
        const int every = -c.n;
        c.n = 0;
        for (int t = 0; t < c.T && c.n < MAX_GLOBAL; t += every) c.pos[c.n++] = t;
    }
    return c;
}

static lc_attn_shape shape_of(const gcase *c) {
    lc_attn_shape s = {c->B, c->H, c->T, c->M, c->D, c->causal, (float)(1.0 / sqrt((double)c->D)), 0, 0};
    return s;
}

static lc_attn_window_opts opts_of(const gcase *c) {
    lc_attn_window_opts o;
    memset(&o, 0, sizeof o);
    o.w = c->w;
    for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) o.dilation[h] = c->dilated ? DILATIONS[h % 8] : 1;
    return o;
}

static int is_global_row(const gcase *c, int t) {
    for (int i = 0; i < c->n; i++)
        if (c->pos[i] == t) return 1;
    return 0;
}

/* ---------------------------------------------------------------- the composed double reference */

typedef struct {
    const gcase *c;
    lc_attn_window_opts o;
} gmask;

/* Ordinary rows: the window band (straight from the definition) or a global key (causal: not after the
 * query). Read for global rows too, whose dout is zeroed in the reference. */
static int ordinary_visible(const void *ctx, int b, int h, int t, int s) {
    const gmask *m = ctx;
    const gcase *c = m->c;
    (void)b;
    const int p = c->M + t, diff = s - p;
    if (c->causal && diff > 0) return 0;
    if (s >= c->M && is_global_row(c, s - c->M)) return 1;
    const int d = lc_attn_window_dilation(&m->o, h);
    return diff % d == 0 && abs(diff) / d <= c->w;
}

/* Global rows: every key, causal: up to the query. */
static int global_visible(const void *ctx, int b, int h, int t, int s) {
    const gmask *m = ctx;
    (void)b, (void)h;
    return !m->c->causal || s <= m->c->M + t;
}

/* Contiguous [B, rows, H, D] doubles. */
typedef struct {
    gcase c;
    lc_attn_shape s;
    double *q, *k, *v, *qg, *kg, *vg, *dout;
    double *out, *dq, *dk, *dv, *dqg, *dkg, *dvg;
    double *lse, *glse;                        /* [B,H,T] (global rows: +inf), [B,H,n] */
    double *out_o, *out_g, *dout_o, *dout_g; /* scratch */
} gproblem_d;

static lc_view_d view_d(double *p, int rows, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)rows * s->H * s->D, (long)s->H * s->D};
    return v;
}

static gproblem_d gproblem_d_new(const gcase *c) {
    gproblem_d p;
    memset(&p, 0, sizeof p);
    p.c = *c, p.s = shape_of(c);
    const size_t nq = (size_t)c->B * c->T * c->H * c->D, nk = (size_t)c->B * (c->M + c->T) * c->H * c->D;
    double **q_like[] = {&p.q, &p.qg, &p.dout, &p.out, &p.dq, &p.dqg, &p.out_o, &p.out_g, &p.dout_o, &p.dout_g};
    double **k_like[] = {&p.k, &p.v, &p.kg, &p.vg, &p.dk, &p.dv, &p.dkg, &p.dvg};
    for (size_t i = 0; i < sizeof q_like / sizeof *q_like; i++) *q_like[i] = xcalloc(nq, sizeof(double));
    for (size_t i = 0; i < sizeof k_like / sizeof *k_like; i++) *k_like[i] = xcalloc(nk, sizeof(double));
    p.lse = xcalloc((size_t)c->B * c->H * c->T, sizeof(double));
    p.glse = xcalloc((size_t)c->B * c->H * (c->n > 0 ? c->n : 1), sizeof(double));
    return p;
}

static void gproblem_d_free(gproblem_d *p) {
    double *all[] = {p->q,  p->k,   p->v,    p->qg,  p->kg,     p->vg,     p->dout,   p->out,    p->dq,  p->dk,
                     p->dv, p->dqg, p->dkg,  p->dvg, p->lse,    p->glse,   p->out_o,  p->out_g,  p->dout_o, p->dout_g};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

static lc_attn_tensors_d tensors_d(const gproblem_d *p, int global, double *out, double *dout) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T;
    lc_attn_tensors_d t;
    memset(&t, 0, sizeof t);
    t.q = view_d(global ? p->qg : p->q, s->T, s), t.k = view_d(global ? p->kg : p->k, S, s);
    t.v = view_d(global ? p->vg : p->v, S, s);
    t.out = view_d(out, s->T, s), t.dout = view_d(dout, s->T, s);
    t.dq = view_d(global ? p->dqg : p->dq, s->T, s), t.dk = view_d(global ? p->dkg : p->dk, S, s);
    t.dv = view_d(global ? p->dvg : p->dv, S, s);
    return t;
}

/* Row log-sum-exp of one path over its mask. */
static double row_lse(const gproblem_d *p, int global, const gmask *m, int b, int h, int t) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, HD = s->H * s->D;
    const double *q = global ? p->qg : p->q, *k = global ? p->kg : p->k;
    double max = -INFINITY, sum = 0;
    double *scores = xcalloc((size_t)S, sizeof(double));
    for (int j = 0; j < S; j++) {
        double dot = 0;
        for (int d = 0; d < s->D; d++)
            dot += q[((size_t)b * s->T + t) * HD + h * s->D + d] * k[((size_t)b * S + j) * HD + h * s->D + d];
        const int vis = global ? global_visible(m, b, h, t, j) : ordinary_visible(m, b, h, t, j);
        scores[j] = vis ? s->scale * dot : -INFINITY;
        max = scores[j] > max ? scores[j] : max;
    }
    for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
    free(scores);
    return max + log(sum);
}

/* out: ordinary rows from the ordinary path, global rows from the global path; lse, glse as the fast
 * path stores them. */
static void reference_forward(gproblem_d *p) {
    const gcase *c = &p->c;
    const gmask m = {c, opts_of(c)};
    lc_attn_tensors_d to = tensors_d(p, 0, p->out_o, p->dout), tg = tensors_d(p, 1, p->out_g, p->dout);
    lc_attn_masked_forward_ref(&p->s, ordinary_visible, &m, &to);
    lc_attn_masked_forward_ref(&p->s, global_visible, &m, &tg);
    const int HD = c->H * c->D;
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++) {
            const size_t at = ((size_t)b * c->T + t) * HD;
            memcpy(p->out + at, (is_global_row(c, t) ? p->out_g : p->out_o) + at, sizeof(double) * HD);
        }
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            for (int t = 0; t < c->T; t++)
                p->lse[((size_t)b * c->H + h) * c->T + t] = is_global_row(c, t) ? INFINITY : row_lse(p, 0, &m, b, h, t);
            for (int i = 0; i < c->n; i++)
                p->glse[((size_t)b * c->H + h) * c->n + i] = row_lse(p, 1, &m, b, h, c->pos[i]);
        }
}

/* Gradients of L = sum(out * dout): each path sees dout on its own rows only. */
static void reference_backward(gproblem_d *p) {
    const gcase *c = &p->c;
    const gmask m = {c, opts_of(c)};
    const int HD = c->H * c->D;
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++) {
            const size_t at = ((size_t)b * c->T + t) * HD;
            const int g = is_global_row(c, t);
            for (int i = 0; i < HD; i++) {
                p->dout_o[at + i] = g ? 0 : p->dout[at + i];
                p->dout_g[at + i] = g ? p->dout[at + i] : 0;
            }
        }
    lc_attn_tensors_d to = tensors_d(p, 0, p->out_o, p->dout_o), tg = tensors_d(p, 1, p->out_g, p->dout_g);
    lc_attn_masked_backward_ref(&p->s, ordinary_visible, &m, &to);
    lc_attn_masked_backward_ref(&p->s, global_visible, &m, &tg);
}

static void fill_normal(double *x, size_t n, lc_rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = lc_rng_normal(rng);
}

/* ---------------------------------------------------------------- finite differences */

static double loss_of(gproblem_d *p) {
    reference_forward(p);
    const size_t n = (size_t)p->c.B * p->c.T * p->c.H * p->c.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(gcase c) {
    c = fill_pos(c);
    gproblem_d p = gproblem_d_new(&c);
    p.s.scale = 0.7f;
    lc_rng rng;
    lc_rng_seed(&rng, 3000 + c.T * 7 + c.M * 3 + c.causal + 11 * c.n);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * (c.M + c.T) * c.H * c.D;
    fill_normal(p.q, nq, &rng), fill_normal(p.qg, nq, &rng), fill_normal(p.dout, nq, &rng);
    fill_normal(p.k, nk, &rng), fill_normal(p.v, nk, &rng), fill_normal(p.kg, nk, &rng), fill_normal(p.vg, nk, &rng);
    reference_backward(&p);
    double *inputs[6] = {p.q, p.k, p.v, p.qg, p.kg, p.vg}, *grads[6] = {p.dq, p.dk, p.dv, p.dqg, p.dkg, p.dvg};
    const size_t counts[6] = {nq, nk, nk, nq, nk, nk};
    const char *names[6] = {"dq", "dk", "dv", "dqg", "dkg", "dvg"};
    const double step = 1e-6;
    for (int which = 0; which < 6; which++) {
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
        snprintf(label, sizeof label, "%s T=%d M=%d c=%d w=%d dil=%d n=%d vs finite diff", names[which], c.T, c.M,
                 c.causal, c.w, c.dilated, c.n);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    gproblem_d_free(&p);
}

TEST(reference_backward_matches_finite_differences) {
    const gcase cases[] = {
        /* B, H, T, M, D, causal, w, dilated, n, pos */
        {1, 3, 7, 0, 3, 0, 1, 1, 2, {0, 4}},
        {1, 3, 7, 2, 2, 1, 1, 1, 2, {0, 5}},
        {2, 1, 6, 0, 3, 1, 2, 0, 3, {0, 1, 5}},
        {1, 2, 6, 3, 2, 0, 1, 1, 1, {3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q: its last T rows), qg, kg, vg of another;
 * the gradients are the same slices of two more buffers; out, dout [B, T, H*D + 5]. Padding columns and
 * the dq / dqg columns of memory rows hold SENTINEL and must survive; every other gradient element
 * starts as SENTINEL, so it must be written. */
typedef struct {
    gcase c;
    lc_attn_shape s;
    lc_attn_window_opts o;
    long row, out_row;
    float *qkv, *gqkv, *grad, *ggrad, *out, *dout, *lse, *glse, *work;
    size_t qkv_n, out_n, work_n;
    lc_attn_global global;
    lc_attn_tensors t;
} gproblem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

/* Heap-allocated: t.global points into the struct. */
static gproblem *gproblem_new(const gcase *c, int nthreads, uint64_t seed, float input_mul) {
    gproblem *p = xcalloc(1, sizeof *p);
    p->c = *c, p->s = shape_of(c), p->o = opts_of(c);
    const int S = c->M + c->T, HD = c->H * c->D;
    p->row = 3L * HD + 7, p->out_row = HD + 5;
    p->qkv_n = (size_t)c->B * S * p->row, p->out_n = (size_t)c->B * c->T * p->out_row;
    p->qkv = xcalloc(p->qkv_n, sizeof(float)), p->gqkv = xcalloc(p->qkv_n, sizeof(float));
    p->grad = xcalloc(p->qkv_n, sizeof(float)), p->ggrad = xcalloc(p->qkv_n, sizeof(float));
    p->out = xcalloc(p->out_n, sizeof(float)), p->dout = xcalloc(p->out_n, sizeof(float));
    p->lse = xcalloc((size_t)c->B * c->H * c->T, sizeof(float));
    p->glse = malloc(sizeof(float) * ((size_t)c->B * c->H * c->n + 1)); /* n = 0: no element */
    p->work_n = LC_TEST_WORKSPACE(lc_attn_window.workspace_floats, &p->s, &p->o, nthreads);
    p->work = malloc(p->work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p->qkv_n; i++) {
        const int data = (i % p->row) < 3 * (size_t)HD;
        p->qkv[i] = data ? input_mul * lc_rng_normal(&rng) : SENTINEL;
        p->gqkv[i] = data ? input_mul * lc_rng_normal(&rng) : SENTINEL;
        p->grad[i] = p->ggrad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p->out_n; i++) p->dout[i] = lc_rng_normal(&rng), p->out[i] = SENTINEL;
    const long sb = (long)S * p->row, out_sb = (long)c->T * p->out_row, M = c->M;
    p->t.q = view_f(p->qkv + M * p->row, sb, p->row);
    p->t.k = view_f(p->qkv + HD, sb, p->row);
    p->t.v = view_f(p->qkv + 2 * HD, sb, p->row);
    p->t.dq = view_f(p->grad + M * p->row, sb, p->row);
    p->t.dk = view_f(p->grad + HD, sb, p->row);
    p->t.dv = view_f(p->grad + 2 * HD, sb, p->row);
    p->t.out = view_f(p->out, out_sb, p->out_row);
    p->t.dout = view_f(p->dout, out_sb, p->out_row);
    p->t.lse = p->lse;
    p->global.n = c->n;
    p->global.pos = p->c.pos;
    p->global.qg = view_f(p->gqkv + M * p->row, sb, p->row);
    p->global.kg = view_f(p->gqkv + HD, sb, p->row);
    p->global.vg = view_f(p->gqkv + 2 * HD, sb, p->row);
    p->global.dqg = view_f(p->ggrad + M * p->row, sb, p->row);
    p->global.dkg = view_f(p->ggrad + HD, sb, p->row);
    p->global.dvg = view_f(p->ggrad + 2 * HD, sb, p->row);
    p->global.lse = p->glse;
    p->t.global = &p->global;
    return p;
}

static void gproblem_free(gproblem *p) {
    free(p->qkv), free(p->gqkv), free(p->grad), free(p->ggrad), free(p->out), free(p->dout), free(p->lse);
    free(p->glse), free(p->work);
    free(p);
}

static void run_fast(gproblem *p) {
    char err[256];
    CHECK(lc_attn_window.check(&p->s, &p->o, &p->global, err, sizeof err) == 0, "check refused: %s", err);
    lc_attn_window.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_window.backward(&p->s, &p->o, &p->t, p->work);
}


static int sentinels_intact(const gproblem *p) {
    const int HD = p->s.H * p->s.D, S = p->s.M + p->s.T;
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row, row = i / p->row % S;
        const int pad = col >= 3 * (size_t)HD, memory_dq = col < (size_t)HD && row < (size_t)p->s.M;
        if ((pad || memory_dq) && (p->grad[i] != SENTINEL || p->ggrad[i] != SENTINEL)) return 0;
        if (!pad && !memory_dq && (p->grad[i] == SENTINEL || p->ggrad[i] == SENTINEL)) return 0;
    }
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= (size_t)HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

/* The double problem holding exactly the inputs of a fp32 one. */
static gproblem_d reference_of(const gproblem *p) {
    gproblem_d r = gproblem_d_new(&p->c);
    r.s = p->s;
    const int S = p->s.M + p->s.T;
    view_to_d(&p->t.q, p->s.T, &p->s, r.q), view_to_d(&p->t.k, S, &p->s, r.k);
    view_to_d(&p->t.v, S, &p->s, r.v), view_to_d(&p->t.dout, p->s.T, &p->s, r.dout);
    view_to_d(&p->global.qg, p->s.T, &p->s, r.qg), view_to_d(&p->global.kg, S, &p->s, r.kg);
    view_to_d(&p->global.vg, S, &p->s, r.vg);
    return r;
}

/* |got - want| <= rtol |want| + atol_frac * max(1, max |want|) */
#define COMPARE_SCALED(what, got, want, n, rtol, atol_frac)                                                 \
    do {                                                                                                  \
        const double scale_ = scale_of(want, n);                                                         \
        char label_[256];                                                                                 \
        snprintf(label_, sizeof label_, "%s %s", what, case_label);                                       \
        CHECK_CLOSE(label_, got, want, n, rtol, (atol_frac)*scale_);                                     \
    } while (0)

static void check_fast_against_reference(gcase c, float scale, float input_mul, double rtol, double atol_frac) {
    c = fill_pos(c);
    gproblem *p = gproblem_new(&c, lc_get_threads(), 55 + c.T + 13 * c.M + 101 * c.D + c.causal + 7 * c.w + c.n,
                               input_mul);
    if (scale > 0) p->s.scale = scale;
    run_fast(p);
    gproblem_d r = reference_of(p);
    reference_forward(&r);
    reference_backward(&r);
    const int S = c.M + c.T;
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *got = xcalloc(nk > nq ? nk : nq, sizeof(double));
    char case_label[128];
    snprintf(case_label, sizeof case_label, "B%d H%d T%d M%d D%d c%d w%d dil%d n%d", c.B, c.H, c.T, c.M, c.D,
             c.causal, c.w, c.dilated, c.n);
    view_to_d(&p->t.out, c.T, &p->s, got);
    COMPARE_SCALED("out", got, r.out, nq, rtol, atol_frac);
    int lse_ok = 1;
    for (size_t i = 0; i < nl; i++) {
        got[i] = p->lse[i];
        if (isinf(r.lse[i])) lse_ok &= isinf(p->lse[i]) && p->lse[i] > 0, got[i] = r.lse[i] = 0;
    }
    CHECK(lse_ok, "%s: lse of global rows must be +inf", case_label);
    COMPARE_SCALED("lse", got, r.lse, nl, rtol / 10, atol_frac);
    for (size_t i = 0; i < (size_t)c.B * c.H * c.n; i++) got[i] = p->glse[i];
    COMPARE_SCALED("global lse", got, r.glse, (size_t)c.B * c.H * c.n, rtol / 10, atol_frac);
    const struct {
        const char *name;
        const lc_view *v;
        int rows;
        const double *want;
    } grads[6] = {
        {"dq", &p->t.dq, c.T, r.dq},           {"dk", &p->t.dk, S, r.dk},           {"dv", &p->t.dv, S, r.dv},
        {"dqg", &p->global.dqg, c.T, r.dqg}, {"dkg", &p->global.dkg, S, r.dkg}, {"dvg", &p->global.dvg, S, r.dvg},
    };
    for (int i = 0; i < 6; i++) {
        view_to_d(grads[i].v, grads[i].rows, &p->s, got);
        COMPARE_SCALED(grads[i].name, got, grads[i].want, grads[i].rows == S ? nk : nq, rtol, atol_frac);
    }
    CHECK(sentinels_intact(p), "%s: a write landed outside the data columns, in memory rows of dq/dqg, or a "
                               "gradient element was not written", case_label);
    free(got);
    gproblem_d_free(&r);
    gproblem_free(p);
}

TEST(fast_matches_reference_bidirectional) {
    const gcase cases[] = {
        /* B, H, T, M, D, causal, w, dilated, n, pos */
        {1, 1, 1, 0, 16, 0, 1, 0, 1, {0}},
        {2, 3, 13, 0, 16, 0, 2, 0, 2, {0, 7}},
        {1, 3, 37, 5, 3, 0, 3, 1, 3, {0, 2, 36}},
        {2, 3, 130, 0, 64, 0, 16, 1, 4, {0, 9, 64, 129}},
        {1, 3, 200, 7, 16, 0, 5, 1, -2}, /* 96 globals: more than one chunk of 64 extra columns */
        {1, 2, 70, 70, 24, 0, 100, 0, 2, {0, 69}}, /* every global inside every band */
        {1, 3, 20, 0, 8, 0, 2, 1, 0, {0}},         /* n = 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 0, 1.0f, 1e-5, 1e-6);
}

TEST(fast_matches_reference_causal) {
    const gcase cases[] = {
        {1, 1, 1, 0, 16, 1, 1, 0, 1, {0}},
        {2, 3, 11, 0, 16, 1, 3, 0, 2, {0, 6}},
        {1, 3, 37, 5, 3, 1, 3, 1, 3, {0, 2, 36}},
        {2, 3, 130, 70, 64, 1, 16, 1, 4, {0, 9, 64, 129}},
        {1, 3, 200, 0, 16, 1, 5, 1, -2},
        {1, 2, 70, 3, 24, 1, 100, 0, 2, {0, 69}},
        {1, 3, 65, 7, 16, 1, 64, 0, 5, {0, 1, 2, 3, 64}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 0, 1.0f, 1e-5, 1e-6);
}

TEST(fast_is_stable_for_large_scores) {
    const gcase cases[] = {{1, 3, 130, 7, 16, 0, 8, 1, 3, {0, 50, 100}}, {1, 3, 130, 7, 16, 1, 8, 1, 3, {0, 50, 100}}};
    for (size_t i = 0; i < 2; i++) check_fast_against_reference(cases[i], 1.0f, 3.0f, 1e-3, 3e-5);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const gcase cs[2] = {fill_pos((gcase){2, 3, 150, 70, 24, 1, 8, 1, -7}),
                         fill_pos((gcase){1, 3, 200, 7, 16, 0, 3, 1, 4, {0, 3, 100, 199}})};
    const int threads_before = lc_get_threads();
    for (int ci = 0; ci < 2; ci++) {
        gproblem *runs[4];
        const int threads[4] = {2, 2, 1, 3};
        for (int i = 0; i < 4; i++) {
            lc_set_threads(threads[i]);
            runs[i] = gproblem_new(&cs[ci], threads[i], 5, 1.0f);
            run_fast(runs[i]);
        }
        lc_set_threads(threads_before);
        const size_t nl = (size_t)cs[ci].B * cs[ci].H * cs[ci].T, ng = (size_t)cs[ci].B * cs[ci].H * cs[ci].n;
        for (int i = 1; i < 4; i++) {
            const gproblem *a = runs[0], *b = runs[i];
            CHECK(memcmp(a->out, b->out, a->out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(a->lse, b->lse, nl * sizeof(float)) == 0, "lse differs (run %d)", i);
            CHECK(memcmp(a->glse, b->glse, ng * sizeof(float)) == 0, "global lse differs (run %d)", i);
            CHECK(memcmp(a->grad, b->grad, a->qkv_n * sizeof(float)) == 0, "gradients differ (run %d)", i);
            CHECK(memcmp(a->ggrad, b->ggrad, a->qkv_n * sizeof(float)) == 0, "global gradients differ (run %d)", i);
        }
        for (int i = 0; i < 4; i++) gproblem_free(runs[i]);
    }
}

TEST(check_accepts_and_rejects_global_positions) {
    const gcase c = {1, 2, 10, 3, 8, 1, 2, 1, 0, {0}};
    const lc_attn_shape s = shape_of(&c);
    const lc_attn_window_opts o = opts_of(&c);
    char err[256];
    const int good[3] = {0, 4, 9}, out_of_range[2] = {0, 10}, negative[2] = {-1, 3}, unsorted[2] = {5, 2},
              repeated[2] = {4, 4};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 3, g.pos = good;
    CHECK(lc_attn_window.check(&s, &o, &g, err, sizeof err) == 0, "valid positions refused: %s", err);
    lc_attn_shape bi = s;
    bi.causal = 0;
    CHECK(lc_attn_window.check(&bi, &o, &g, err, sizeof err) == 0, "bidirectional refused: %s", err);
    g.pos = NULL; /* the spec parser's probe: only the count */
    CHECK(lc_attn_window.check(&s, &o, &g, err, sizeof err) == 0, "probe refused: %s", err);
    const int *bad[4] = {out_of_range, negative, unsorted, repeated};
    for (int i = 0; i < 4; i++) {
        g.n = 2, g.pos = bad[i];
        err[0] = 0;
        CHECK(lc_attn_window.check(&s, &o, &g, err, sizeof err) != 0, "bad positions %d, %d accepted", bad[i][0],
              bad[i][1]);
        CHECK(strstr(err, "window: global") != NULL, "message: %s", err);
    }
    g.n = 11, g.pos = NULL;
    CHECK(lc_attn_window.check(&s, &o, &g, err, sizeof err) != 0, "11 globals in 10 positions accepted");
    g.n = 2, g.pos = good;
    lc_attn_shape rel = s;
    rel.relpos = 1;
    CHECK(lc_attn_window.check(&rel, &o, &g, err, sizeof err) != 0, "globals with relative positions accepted");
    CHECK(lc_attn_window.check(&rel, &o, NULL, err, sizeof err) == 0, "dilated relative positions refused: %s", err);
}

TEST(workspace_does_not_grow_with_globals) {
    /* The global passes need a fixed per-thread slot: a window as small as w = 1 at D = 256 still fits. */
    const gcase c = fill_pos((gcase){1, 2, 300, 0, 256, 0, 1, 0, -3});
    lc_attn_shape s = shape_of(&c);
    const lc_attn_window_opts o = opts_of(&c);
    CHECK(LC_TEST_WORKSPACE(lc_attn_window_workspace, &s, &o, 3) >= lc_attn_window_global_workspace(&s, 3), "workspace too small");
    check_fast_against_reference(c, 0, 1.0f, 1e-5, 1e-6);
}

/* ---------------------------------------------------------------- PyTorch fixture */

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

static int read_tensor(lc_st_file *f, const char *prefix, const char *name, lc_dtype dt, int ndim, const long *shape,
                       void *dst) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const lc_status st = lc_st_read(f, key, dt, ndim, shape, dst);
    CHECK(st == LC_OK, "%s", lc_last_error());
    return st == LC_OK;
}

/* A contiguous [B, rows, H, D] float tensor into a strided view. */
static void floats_to_view(const float *src, const lc_view *v, int B, int rows, int HD) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < rows; t++)
            memcpy(v->p + (long)b * v->sb + (long)t * v->st, src + ((size_t)b * rows + t) * HD, sizeof(float) * HD);
}

static void floats_to_d(const float *src, size_t n, double *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* Case "bi." or "causal.": PyTorch's float64 results (stored as F32) against the fast path and the
 * double reference. */
static void check_fixture_case(lc_st_file *f, const char *prefix) {
    char key[64];
    snprintf(key, sizeof key, "%sq", prefix);
    const lc_st_tensor *qt = lc_st_find(f, key);
    CHECK(qt && qt->ndim == 4, "%s: no 4-d tensor %s", lc_st_path(f), key);
    snprintf(key, sizeof key, "%spos", prefix);
    const lc_st_tensor *pt = lc_st_find(f, key);
    CHECK(pt && pt->ndim == 1 && pt->shape[0] <= MAX_GLOBAL, "%s: no positions %s", lc_st_path(f), key);
    if (!qt || qt->ndim != 4 || !pt || pt->ndim != 1 || pt->shape[0] > MAX_GLOBAL) return;
    gcase c;
    memset(&c, 0, sizeof c);
    c.B = (int)qt->shape[0], c.T = (int)qt->shape[1], c.H = (int)qt->shape[2], c.D = (int)qt->shape[3];
    c.n = (int)pt->shape[0];
    const long one[1] = {1}, sn[1] = {c.n};
    float scale = 0;
    int ok = read_tensor(f, prefix, "pos", LC_DT_I32, 1, sn, c.pos) &&
             read_tensor(f, prefix, "w", LC_DT_I32, 1, one, &c.w) &&
             read_tensor(f, prefix, "causal", LC_DT_I32, 1, one, &c.causal) &&
             read_tensor(f, prefix, "scale", LC_DT_F32, 1, one, &scale);
    if (!ok) return;
    const int HD = c.H * c.D;
    const size_t nq = (size_t)c.B * c.T * HD, nl = (size_t)c.B * c.H * c.T, ng = (size_t)c.B * c.H * c.n;
    const long sq[4] = {c.B, c.T, c.H, c.D}, sl[3] = {c.B, c.H, c.T}, sg[3] = {c.B, c.H, c.n};
    gproblem *p = gproblem_new(&c, lc_get_threads(), 1, 1.0f);
    p->s.scale = scale;
    float *buf = xcalloc(nq, sizeof(float));
    const char *in_names[7] = {"q", "k", "v", "qg", "kg", "vg", "dout"};
    const lc_view *in_views[7] = {&p->t.q, &p->t.k, &p->t.v, &p->global.qg, &p->global.kg, &p->global.vg, &p->t.dout};
    for (int i = 0; i < 7; i++) {
        if (!read_tensor(f, prefix, in_names[i], LC_DT_F32, 4, sq, buf)) goto done;
        floats_to_view(buf, in_views[i], c.B, c.T, HD);
    }
    run_fast(p);
    gproblem_d r = reference_of(p);
    reference_forward(&r);
    reference_backward(&r);

    char case_label[96];
    snprintf(case_label, sizeof case_label, "fixture %s B%d H%d T%d D%d w%d n%d", prefix, c.B, c.H, c.T, c.D, c.w,
             c.n);
    double *want = xcalloc(nq, sizeof(double)), *got = xcalloc(nq, sizeof(double));
    const struct {
        const char *name;
        const lc_view *v;
        const double *ref;
    } outs[7] = {
        {"out", &p->t.out, r.out},        {"dq", &p->t.dq, r.dq},           {"dk", &p->t.dk, r.dk},
        {"dv", &p->t.dv, r.dv},           {"dqg", &p->global.dqg, r.dqg}, {"dkg", &p->global.dkg, r.dkg},
        {"dvg", &p->global.dvg, r.dvg},
    };
    for (int i = 0; i < 7; i++) {
        if (!read_tensor(f, prefix, outs[i].name, LC_DT_F32, 4, sq, buf)) continue;
        floats_to_d(buf, nq, want);
        view_to_d(outs[i].v, c.T, &p->s, got);
        char what[64];
        snprintf(what, sizeof what, "%s fast", outs[i].name);
        COMPARE_SCALED(what, got, want, nq, 1e-5, 1e-6);
        /* the double reference: PyTorch's float64 values rounded to float32, so about 6e-8 relative */
        snprintf(what, sizeof what, "%s reference", outs[i].name);
        COMPARE_SCALED(what, outs[i].ref, want, nq, 2e-7, 1e-8);
    }
    if (read_tensor(f, prefix, "lse", LC_DT_F32, 3, sl, buf)) { /* +inf on global rows, as the fast path */
        int inf_ok = 1;
        for (size_t i = 0; i < nl; i++) {
            inf_ok &= isinf(buf[i]) == isinf(p->lse[i]);
            want[i] = isinf(buf[i]) ? 0 : buf[i], got[i] = isinf(p->lse[i]) ? 0 : p->lse[i];
        }
        CHECK(inf_ok, "%s: lse of global rows must be +inf in both", case_label);
        COMPARE_SCALED("lse fast", got, want, nl, 1e-6, 1e-6);
    }
    if (read_tensor(f, prefix, "glse", LC_DT_F32, 3, sg, buf)) {
        floats_to_d(buf, ng, want);
        floats_to_d(p->glse, ng, got);
        COMPARE_SCALED("global lse fast", got, want, ng, 1e-6, 1e-6);
    }
    free(want), free(got);
    gproblem_d_free(&r);
done:
    free(buf);
    gproblem_free(p);
}

TEST(matches_pytorch_fixture) {
    const char *path = LC_FIXTURES "/longformer_attn.safetensors";
    lc_st_file *f;
    const lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    check_fixture_case(f, "bi.");
    check_fixture_case(f, "causal.");
    lc_st_close(f);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_matches_reference_causal);
    RUN(fast_is_stable_for_large_scores);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(check_accepts_and_rejects_global_positions);
    RUN(workspace_does_not_grow_with_globals);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_global");
}
