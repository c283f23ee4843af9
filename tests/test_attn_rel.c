/* Tests of the two extensions of the full attention kind: a window (query t sees keys M+t-W+1 .. M+t) and
 * Transformer-XL relative positions (score += scale (q + v) . r[M + t - s], content term with q + u).
 * The double reference against finite differences (q, k, v, r, u, v); the fast fp32 passes against the
 * reference over many shapes, through strided views into fused buffers; equivalences (a window >= S is
 * no window, zero r/u/v is plain attention, the paper's shift trick gives the same scores); determinism
 * across repeats and thread counts; the workspace size; parity with the PyTorch fixture
 * tests/fixtures/xl_attn.safetensors (tests/reference/make_xl_fixture.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "core/rng.h"
#include "core/threads.h"
#include "attn_test_util.h"
#include "harness.h"
#include "train/safetensors.h"

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, M, D, window, rel;
} rcase;

static lc_attn_shape shape_of(rcase c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, 1, (float)(1.0 / sqrt((double)c.D)), c.window, c.rel};
    return s;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* |got - want| <= rtol |want| + atol_frac * max(1, max |want|); the label carries the worst error / scale. */
#define COMPARE_SCALED(what, got, want, n, rtol, atol_frac)                                                 \
    do {                                                                                                  \
        const double scale_ = scale_of(want, n);                                                         \
        double worst_ = 0;                                                                                \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++) worst_ = fmax(worst_, fabs((got)[i_] - (want)[i_])); \
        char label_[256];                                                                                 \
        snprintf(label_, sizeof label_, "%s %s err/scale %.1e", what, case_label, worst_ / scale_);       \
        CHECK_CLOSE(label_, got, want, n, rtol, (atol_frac)*scale_);                                     \
    } while (0)

/* ---------------------------------------------------------------- double-precision problems */

/* Contiguous [B, rows, H, D] tensors; r [S, H, D]; u, vb [H, D] (vb: the position bias, v being values). */
typedef struct {
    lc_attn_shape s;
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    double *r, *u, *vb, *dr, *du, *dvb;
    lc_attn_relpos_d rel;
    lc_attn_tensors_d t;
} problem_d;

static lc_view_d view_d(double *p, int rows, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)rows * s->H * s->D, (long)s->H * s->D};
    return v;
}

/* Heap-allocated: t.rel points into the struct. */
static problem_d *problem_d_new(lc_attn_shape s, int with_rel) {
    problem_d *p = xcalloc(1, sizeof *p);
    p->s = s;
    const int S = s.M + s.T, HD = s.H * s.D;
    const size_t nq = (size_t)s.B * s.T * HD, nk = (size_t)s.B * S * HD;
    p->q = xcalloc(nq, sizeof(double)), p->out = xcalloc(nq, sizeof(double)), p->dout = xcalloc(nq, sizeof(double));
    p->dq = xcalloc(nq, sizeof(double));
    p->k = xcalloc(nk, sizeof(double)), p->v = xcalloc(nk, sizeof(double));
    p->dk = xcalloc(nk, sizeof(double)), p->dv = xcalloc(nk, sizeof(double));
    p->r = xcalloc((size_t)S * HD, sizeof(double)), p->dr = xcalloc((size_t)S * HD, sizeof(double));
    p->u = xcalloc((size_t)HD, sizeof(double)), p->vb = xcalloc((size_t)HD, sizeof(double));
    p->du = xcalloc((size_t)HD, sizeof(double)), p->dvb = xcalloc((size_t)HD, sizeof(double));
    p->t.q = view_d(p->q, s.T, &s), p->t.out = view_d(p->out, s.T, &s), p->t.dout = view_d(p->dout, s.T, &s);
    p->t.dq = view_d(p->dq, s.T, &s);
    p->t.k = view_d(p->k, S, &s), p->t.v = view_d(p->v, S, &s);
    p->t.dk = view_d(p->dk, S, &s), p->t.dv = view_d(p->dv, S, &s);
    p->rel = (lc_attn_relpos_d){p->r, p->u, p->vb, p->dr, p->du, p->dvb};
    p->t.rel = with_rel ? &p->rel : NULL;
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
    free(p->r), free(p->u), free(p->vb), free(p->dr), free(p->du), free(p->dvb);
    free(p);
}

/* Scaled scores of query t, visible keys only (others -inf), straight from the definition. */
static double score_d(const problem_d *p, int b, int h, int t, int s) {
    const lc_attn_shape *sh = &p->s;
    const int S = sh->M + sh->T, HD = sh->H * sh->D, D = sh->D;
    if (s > sh->M + t || (sh->window > 0 && s < sh->M + t - sh->window + 1)) return -INFINITY;
    double dot = 0;
    for (int d = 0; d < D; d++) {
        const double q = p->q[((size_t)b * sh->T + t) * HD + h * D + d];
        const double k = p->k[((size_t)b * S + s) * HD + h * D + d];
        if (p->t.rel)
            dot += (q + p->u[h * D + d]) * k + (q + p->vb[h * D + d]) * p->r[(size_t)(sh->M + t - s) * HD + h * D + d];
        else
            dot += q * k;
    }
    return sh->scale * dot;
}

/* Row log-sum-exp [B, H, T]. */
static void reference_lse(const problem_d *p, double *lse) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T;
    double *scores = xcalloc((size_t)S, sizeof(double));
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++) {
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < S; j++) {
                    scores[j] = score_d(p, b, h, t, j);
                    if (scores[j] > max) max = scores[j];
                }
                for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
                lse[((size_t)b * s->H + h) * s->T + t] = max + log(sum);
            }
    free(scores);
}

/* ---------------------------------------------------------------- finite differences */

static double loss_of(problem_d *p) { /* L = sum(out * dout) */
    lc_attn_full_forward_ref(&p->s, &p->t);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(rcase c) {
    lc_attn_shape s = shape_of(c);
    s.scale = 0.7f; /* not 1/sqrt(D), so a misplaced scale shows */
    problem_d *p = problem_d_new(s, c.rel);
    lc_rng rng;
    lc_rng_seed(&rng, 2000 + c.T * 7 + c.M * 3 + c.window * 11 + c.rel);
    const int S = c.M + c.T, HD = c.H * c.D;
    const size_t nq = (size_t)c.B * c.T * HD, nk = (size_t)c.B * S * HD;
    for (size_t i = 0; i < nq; i++) p->q[i] = lc_rng_normal(&rng), p->dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) p->k[i] = lc_rng_normal(&rng), p->v[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < (size_t)S * HD; i++) p->r[i] = lc_rng_normal(&rng);
    for (int i = 0; i < HD; i++) p->u[i] = lc_rng_normal(&rng), p->vb[i] = lc_rng_normal(&rng);
    lc_attn_full_backward_ref(&s, &p->t);

    double *inputs[6] = {p->q, p->k, p->v, p->r, p->u, p->vb}, *grads[6] = {p->dq, p->dk, p->dv, p->dr, p->du, p->dvb};
    const size_t counts[6] = {nq, nk, nk, (size_t)S * HD, (size_t)HD, (size_t)HD};
    const char *names[6] = {"dq", "dk", "dv", "dr", "du", "dv(bias)"};
    const double step = 1e-6;
    for (int which = 0; which < (c.rel ? 6 : 3); which++) {
        double *numeric = xcalloc(counts[which], sizeof(double));
        for (size_t i = 0; i < counts[which]; i++) {
            const double saved = inputs[which][i];
            inputs[which][i] = saved + step;
            const double up = loss_of(p);
            inputs[which][i] = saved - step;
            const double down = loss_of(p);
            inputs[which][i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        char label[96];
        snprintf(label, sizeof label, "%s T=%d M=%d W=%d rel=%d vs finite diff", names[which], c.T, c.M, c.window,
                 c.rel);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(p);
}

TEST(reference_backward_matches_finite_differences) {
    const rcase cases[] = {
        /* B, H, T, M, D, window, rel */
        {2, 2, 4, 0, 3, 2, 0}, {1, 2, 5, 3, 2, 3, 0}, {2, 2, 4, 0, 3, 0, 1}, {2, 2, 3, 2, 3, 0, 1},
        {1, 2, 5, 3, 2, 3, 1}, {2, 1, 4, 4, 3, 2, 1}, {1, 1, 5, 0, 4, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows); dq, dk, dv the same slices
 * of one gradient buffer; out, dout [B, T, H*D + 5]. Padding columns, and the dq columns of the memory
 * rows, hold SENTINEL and must survive. r, u, vb and their gradients are exactly-sized allocations (ASan
 * sees overruns); the gradients start as SENTINEL, so every element must be written. */
typedef struct {
    lc_attn_shape s;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    float *r, *u, *vb, *dr, *du, *dvb;
    size_t qkv_n, out_n, work_n;
    lc_attn_relpos rel;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

/* Heap-allocated: t.rel points into the struct. rel inputs: r ~ N(0, 1), u, vb ~ N(0, 0.5), times input_mul. */
static problem *problem_new(lc_attn_shape s, int with_rel, int nthreads, uint64_t seed, float input_mul) {
    problem *p = xcalloc(1, sizeof *p);
    p->s = s;
    const int S = s.M + s.T, HD = s.H * s.D;
    p->row = 3L * HD + 7, p->out_row = HD + 5;
    p->qkv_n = (size_t)s.B * S * p->row, p->out_n = (size_t)s.B * s.T * p->out_row;
    p->qkv = xcalloc(p->qkv_n, sizeof(float)), p->grad = xcalloc(p->qkv_n, sizeof(float));
    p->out = xcalloc(p->out_n, sizeof(float)), p->dout = xcalloc(p->out_n, sizeof(float));
    p->lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    p->r = xcalloc((size_t)S * HD, sizeof(float)), p->dr = xcalloc((size_t)S * HD, sizeof(float));
    p->u = xcalloc((size_t)HD, sizeof(float)), p->vb = xcalloc((size_t)HD, sizeof(float));
    p->du = xcalloc((size_t)HD, sizeof(float)), p->dvb = xcalloc((size_t)HD, sizeof(float));
    p->work_n = LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &p->s, NULL, nthreads);
    p->work = malloc(p->work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p->qkv_n; i++) {
        p->qkv[i] = (i % p->row) < 3 * (size_t)HD ? input_mul * lc_rng_normal(&rng) : SENTINEL;
        p->grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p->out_n; i++) p->dout[i] = lc_rng_normal(&rng), p->out[i] = SENTINEL;
    for (size_t i = 0; i < (size_t)S * HD; i++) p->r[i] = input_mul * lc_rng_normal(&rng), p->dr[i] = SENTINEL;
    for (int i = 0; i < HD; i++) {
        p->u[i] = 0.5f * input_mul * lc_rng_normal(&rng), p->vb[i] = 0.5f * input_mul * lc_rng_normal(&rng);
        p->du[i] = p->dvb[i] = SENTINEL;
    }
    const long sb = (long)S * p->row, out_sb = (long)s.T * p->out_row;
    p->t.q = view_f(p->qkv + (long)s.M * p->row, sb, p->row);
    p->t.k = view_f(p->qkv + HD, sb, p->row);
    p->t.v = view_f(p->qkv + 2 * HD, sb, p->row);
    p->t.dq = view_f(p->grad + (long)s.M * p->row, sb, p->row);
    p->t.dk = view_f(p->grad + HD, sb, p->row);
    p->t.dv = view_f(p->grad + 2 * HD, sb, p->row);
    p->t.out = view_f(p->out, out_sb, p->out_row);
    p->t.dout = view_f(p->dout, out_sb, p->out_row);
    p->t.lse = p->lse;
    p->rel = (lc_attn_relpos){p->r, p->u, p->vb, p->dr, p->du, p->dvb};
    p->t.rel = with_rel ? &p->rel : NULL;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work);
    free(p->r), free(p->u), free(p->vb), free(p->dr), free(p->du), free(p->dvb);
    free(p);
}

static void run_fast(problem *p) {
    lc_attn_full.forward(&p->s, NULL, &p->t, p->work);
    lc_attn_full.backward(&p->s, NULL, &p->t, p->work);
}

static void floats_to_d(const float *src, size_t n, double *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
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

/* The double problem holding exactly the inputs of a fp32 one. */
static problem_d *reference_of(const problem *p) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, HD = s->H * s->D;
    problem_d *r = problem_d_new(*s, p->t.rel != NULL);
    view_to_d(&p->t.q, s->T, s, r->q), view_to_d(&p->t.k, S, s, r->k), view_to_d(&p->t.v, S, s, r->v);
    view_to_d(&p->t.dout, s->T, s, r->dout);
    floats_to_d(p->r, (size_t)S * HD, r->r), floats_to_d(p->u, (size_t)HD, r->u);
    floats_to_d(p->vb, (size_t)HD, r->vb);
    return r;
}

/* Compares every output of the fast path with the double reference: |got - want| <= rtol |want| + atol,
 * atol = atol_frac * max(1, max |want|) over the tensor. scale <= 0 means 1/sqrt(D). */
static void check_fast_against_reference(rcase c, float scale, float input_mul, double rtol, double atol_frac) {
    lc_attn_shape s = shape_of(c);
    if (scale > 0) s.scale = scale;
    problem *p = problem_new(s, c.rel, lc_get_threads(), 99 + c.T + 13 * c.M + 101 * c.D + 7 * c.window + c.rel,
                             input_mul);
    run_fast(p);
    problem_d *r = reference_of(p);
    lc_attn_full_forward_ref(&s, &r->t);
    lc_attn_full_backward_ref(&s, &r->t);
    const int S = c.M + c.T, HD = c.H * c.D;
    const size_t nq = (size_t)c.B * c.T * HD, nk = (size_t)c.B * S * HD, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(nk > nq ? nk : nq, sizeof(double));
    reference_lse(r, lse_want);
    char case_label[96];
    snprintf(case_label, sizeof case_label, "B%d H%d T%d M%d D%d W%d rel%d", c.B, c.H, c.T, c.M, c.D, c.window, c.rel);

    view_to_d(&p->t.out, c.T, &s, got);
    COMPARE_SCALED("out", got, r->out, nq, rtol, atol_frac);
    COMPARE_SCALED("lse", p->lse, lse_want, nl, rtol / 10, atol_frac);
    view_to_d(&p->t.dq, c.T, &s, got);
    COMPARE_SCALED("dq", got, r->dq, nq, rtol, atol_frac);
    view_to_d(&p->t.dk, S, &s, got);
    COMPARE_SCALED("dk", got, r->dk, nk, rtol, atol_frac);
    view_to_d(&p->t.dv, S, &s, got);
    COMPARE_SCALED("dv", got, r->dv, nk, rtol, atol_frac);
    if (c.rel) {
        /* dr, du, dv are sums over up to B*T rows, each term carrying fp32 noise of about atol_frac times dq's
         * scale, which adds up like a random walk: with window 1 every dS is 0 in exact arithmetic and these
         * sums are nothing but that noise. */
        const double rows_noise = sqrt((double)c.B * c.T) * scale_of(r->dq, nq);
        COMPARE_SCALED("dr", p->dr, r->dr, (size_t)S * HD, rtol, atol_frac * rows_noise);
        COMPARE_SCALED("du", p->du, r->du, (size_t)HD, rtol, atol_frac * rows_noise);
        COMPARE_SCALED("dv(bias)", p->dvb, r->dvb, (size_t)HD, rtol, atol_frac * rows_noise);
    }
    CHECK(sentinels_intact(p), "a write landed outside the q/k/v/out columns or in memory rows of dq (%s)",
          case_label);
    free(lse_want), free(got);
    problem_d_free(r);
    problem_free(p);
}

TEST(fast_matches_reference_with_window) {
    const rcase cases[] = {
        /* B, H, T, M, D, window, rel */
        {1, 1, 130, 0, 16, 1, 0}, {2, 2, 130, 7, 3, 5, 0},   {1, 2, 130, 70, 64, 64, 0}, {1, 1, 200, 70, 16, 100, 0},
        {2, 3, 65, 7, 24, 64, 0}, {1, 1, 129, 0, 64, 100, 0}, {1, 2, 63, 70, 3, 1, 0},    {1, 1, 5, 70, 16, 5, 0},
        {2, 2, 2, 130, 16, 5, 0}, {1, 1, 1, 70, 64, 100, 0}, /* decode path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_matches_reference_with_relative_positions) {
    const rcase cases[] = {
        {1, 1, 1, 0, 16, 0, 1},  {2, 3, 5, 7, 3, 0, 1},    {1, 2, 63, 0, 16, 0, 1},  {1, 2, 65, 7, 64, 0, 1},
        {2, 1, 130, 70, 16, 0, 1}, {1, 1, 130, 0, 64, 0, 1}, {1, 2, 130, 7, 3, 0, 1}, {1, 1, 70, 3, 80, 0, 1},
        {1, 1, 5, 70, 64, 0, 1}, {1, 1, 192, 0, 16, 0, 1},
        {2, 3, 2, 130, 32, 0, 1}, {1, 2, 1, 200, 3, 0, 1}, {1, 1, 2, 0, 64, 0, 1}, /* decode path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_matches_reference_with_window_and_relative_positions) {
    const rcase cases[] = {
        {1, 1, 130, 0, 16, 1, 1}, {2, 2, 130, 7, 3, 5, 1},    {1, 2, 130, 70, 64, 64, 1}, {1, 1, 200, 70, 16, 100, 1},
        {1, 3, 65, 70, 24, 5, 1}, {2, 1, 140, 7, 64, 100, 1}, {1, 1, 64, 0, 3, 64, 1},
        {2, 2, 2, 130, 16, 5, 1}, {1, 1, 1, 70, 64, 64, 1}, /* decode path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_is_stable_for_large_scores) {
    /* scores spread over hundreds; with a window some queries see nothing in their first key tile */
    const rcase cases[] = {{1, 2, 130, 70, 16, 5, 1}, {1, 2, 130, 7, 24, 0, 1}, {1, 1, 130, 70, 16, 64, 0}};
    for (size_t i = 0; i < 3; i++) check_fast_against_reference(cases[i], 1.0f, 3.0f, 1e-3, 3e-5);
}

/* ---------------------------------------------------------------- equivalences */

static int same_floats(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

TEST(window_of_at_least_S_is_no_window) {
    for (int rel = 0; rel <= 1; rel++) {
        const rcase c = {2, 2, 130, 70, 24, 0, rel};
        const int S = c.M + c.T;
        problem *plain = problem_new(shape_of(c), rel, lc_get_threads(), 31, 1.0f);
        run_fast(plain);
        const int windows[2] = {S, S + 3};
        for (int w = 0; w < 2; w++) {
            rcase cw = c;
            cw.window = windows[w];
            problem *p = problem_new(shape_of(cw), rel, lc_get_threads(), 31, 1.0f);
            run_fast(p);
            CHECK(same_floats(p->out, plain->out, p->out_n) && same_floats(p->lse, plain->lse, (size_t)c.B * c.H * c.T) &&
                      same_floats(p->grad, plain->grad, p->qkv_n),
                  "window %d (S = %d) differs from no window (rel %d)", windows[w], S, rel);
            if (rel)
                CHECK(same_floats(p->dr, plain->dr, (size_t)S * c.H * c.D) && same_floats(p->du, plain->du, (size_t)c.H * c.D) &&
                          same_floats(p->dvb, plain->dvb, (size_t)c.H * c.D),
                      "window %d: dr/du/dv differ", windows[w]);
            problem_free(p);
        }
        problem_free(plain);
    }
    /* the reference agrees */
    const rcase c = {1, 2, 4, 3, 3, 0, 1};
    problem_d *a = problem_d_new(shape_of(c), 1);
    lc_rng rng;
    lc_rng_seed(&rng, 3);
    for (int i = 0; i < 4 * 6; i++) a->q[i] = lc_rng_normal(&rng);
    for (int i = 0; i < 7 * 6; i++) a->k[i] = lc_rng_normal(&rng), a->v[i] = lc_rng_normal(&rng), a->r[i] = lc_rng_normal(&rng);
    lc_attn_full_forward_ref(&a->s, &a->t);
    double out[24];
    memcpy(out, a->out, sizeof out);
    a->s.window = 7;
    lc_attn_full_forward_ref(&a->s, &a->t);
    CHECK(memcmp(out, a->out, sizeof out) == 0, "reference: window S differs from no window");
    problem_d_free(a);
}

TEST(zero_relative_inputs_are_plain_attention) {
    const rcase cases[] = {{2, 2, 130, 70, 24, 0, 1}, {1, 3, 65, 7, 64, 5, 1}};
    for (int i = 0; i < 2; i++) {
        rcase c = cases[i];
        const int S = c.M + c.T, HD = c.H * c.D;
        problem *rel = problem_new(shape_of(c), 1, lc_get_threads(), 41, 1.0f);
        memset(rel->r, 0, sizeof(float) * (size_t)S * HD);
        memset(rel->u, 0, sizeof(float) * (size_t)HD), memset(rel->vb, 0, sizeof(float) * (size_t)HD);
        c.rel = 0;
        problem *plain = problem_new(shape_of(c), 0, lc_get_threads(), 41, 1.0f);
        run_fast(rel);
        run_fast(plain);
        CHECK(same_floats(rel->out, plain->out, rel->out_n), "out differs (case %d)", i);
        CHECK(same_floats(rel->lse, plain->lse, (size_t)c.B * c.H * c.T), "lse differs (case %d)", i);
        CHECK(same_floats(rel->grad, plain->grad, rel->qkv_n), "dq/dk/dv differ (case %d)", i);
        /* with r = 0 nothing flows to the position bias; du is the batch and time sum of dq */
        int zero = 1;
        for (int j = 0; j < HD; j++) zero &= rel->dvb[j] == 0.0f;
        CHECK(zero, "dv(bias) must be 0 when r = 0");
        problem_free(rel);
        problem_free(plain);
    }
}

TEST(relative_scores_match_the_shift_trick) {
    /* Transformer-XL computes the position scores for all distances with the columns in the order
     * S-1, ..., 0, pads a zero column in front, reads the [T][S+1] buffer as [S+1][T], drops the first row
     * and reads the rest as [T][S]: entry (i, j) then holds distance M + i - j (junk above the mask). */
    enum { T = 3, M = 2, S = M + T, D = 2 };
    const rcase c = {1, 1, T, M, D, 0, 1};
    problem *p = problem_new(shape_of(c), 1, lc_get_threads(), 51, 1.0f);
    lc_attn_full.forward(&p->s, NULL, &p->t, p->work);
    problem_d *r = reference_of(p);
    lc_attn_full_forward_ref(&r->s, &r->t);

    double by_column[T][S], padded[T * (S + 1)], bd[T][S];
    for (int i = 0; i < T; i++)
        for (int col = 0; col < S; col++) {
            double dot = 0;
            for (int d = 0; d < D; d++) dot += (r->q[i * D + d] + r->vb[d]) * r->r[(S - 1 - col) * D + d];
            by_column[i][col] = dot;
        }
    for (int i = 0; i < T; i++) {
        padded[i * (S + 1)] = 0;
        for (int col = 0; col < S; col++) padded[i * (S + 1) + 1 + col] = by_column[i][col];
    }
    const double *dropped = padded + T; /* as [S+1][T]: the first row holds T values */
    for (int i = 0; i < T; i++)
        for (int j = 0; j < S; j++) bd[i][j] = dropped[i * S + j];

    double out[T][D], lse[T];
    for (int i = 0; i < T; i++) {
        double scores[S], max = -INFINITY, sum = 0;
        for (int j = 0; j < S; j++) {
            if (j > M + i) {
                scores[j] = -INFINITY;
                continue;
            }
            double direct = 0, content = 0;
            for (int d = 0; d < D; d++) {
                direct += (r->q[i * D + d] + r->vb[d]) * r->r[(M + i - j) * D + d];
                content += (r->q[i * D + d] + r->u[d]) * r->k[j * D + d];
            }
            CHECK(bd[i][j] == direct, "shift trick (%d, %d): %.17g, by distance %.17g", i, j, bd[i][j], direct);
            scores[j] = p->s.scale * (content + bd[i][j]);
            max = fmax(max, scores[j]);
        }
        for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
        lse[i] = max + log(sum);
        for (int d = 0; d < D; d++) {
            double acc = 0;
            for (int j = 0; j <= M + i; j++) acc += exp(scores[j] - lse[i]) * r->v[j * D + d];
            out[i][d] = acc;
        }
    }
    const char *case_label = "shift trick";
    double got[T * D];
    view_to_d(&p->t.out, T, &p->s, got);
    COMPARE_SCALED("reference out", r->out, &out[0][0], (size_t)T * D, 1e-12, 1e-14);
    COMPARE_SCALED("fast out", got, &out[0][0], (size_t)T * D, 1e-5, 1e-7);
    COMPARE_SCALED("fast lse", p->lse, lse, (size_t)T, 1e-6, 1e-7);
    problem_d_free(r);
    problem_free(p);
}

/* ---------------------------------------------------------------- determinism, workspace, edges */

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const rcase cases[] = {{2, 3, 130, 70, 24, 0, 1}, {2, 3, 130, 70, 24, 100, 1}, {1, 2, 200, 7, 16, 64, 0}};
    const int threads_before = lc_get_threads();
    for (int c = 0; c < 3; c++) {
        const lc_attn_shape s = shape_of(cases[c]);
        const int S = s.M + s.T, HD = s.H * s.D;
        problem *runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(s, cases[c].rel, 2, 5, 1.0f);
            run_fast(runs[i]);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 3; i++) {
            CHECK(same_floats(runs[0]->out, runs[i]->out, runs[0]->out_n), "out differs (case %d run %d)", c, i);
            CHECK(same_floats(runs[0]->lse, runs[i]->lse, (size_t)s.B * s.H * s.T), "lse differs (case %d run %d)", c,
                  i);
            CHECK(same_floats(runs[0]->grad, runs[i]->grad, runs[0]->qkv_n), "dq/dk/dv differ (case %d run %d)", c, i);
            CHECK(same_floats(runs[0]->dr, runs[i]->dr, (size_t)S * HD) &&
                      same_floats(runs[0]->du, runs[i]->du, (size_t)HD) &&
                      same_floats(runs[0]->dvb, runs[i]->dvb, (size_t)HD),
                  "dr/du/dv differ (case %d run %d)", c, i);
        }
        for (int i = 0; i < 3; i++) problem_free(runs[i]);
    }
}

TEST(workspace_accounts_for_relative_positions) {
    lc_attn_shape small = shape_of((rcase){1, 8, 1024, 0, 64, 0, 0}), large = small;
    large.T = 16384;
    const size_t plain_a = LC_TEST_WORKSPACE(lc_attn_full_workspace, &small, NULL, 2), plain_b = LC_TEST_WORKSPACE(lc_attn_full_workspace, &large, NULL, 2);
    CHECK(plain_b - plain_a == (size_t)8 * (16384 - 1024), "plain workspace %zu -> %zu floats", plain_a, plain_b);
    small.relpos = large.relpos = 1;
    const size_t rel_a = LC_TEST_WORKSPACE(lc_attn_full_workspace, &small, NULL, 2), rel_b = LC_TEST_WORKSPACE(lc_attn_full_workspace, &large, NULL, 2);
    /* beyond the row statistics, the rel part grows by one head's dr, dk, dv (S x D each) per thread */
    CHECK(rel_b - rel_a == (size_t)8 * (16384 - 1024) + 2 * 3 * (size_t)64 * (16384 - 1024),
          "rel workspace %zu -> %zu floats", rel_a, rel_b);
    CHECK(rel_a > plain_a && rel_a - plain_a < (size_t)2 * 64 * 4 * (1024 + 1024), "rel adds %zu floats at T = 1024",
          rel_a - plain_a);
    /* a window changes nothing */
    small.window = 256;
    CHECK(LC_TEST_WORKSPACE(lc_attn_full_workspace, &small, NULL, 2) == rel_a, "window changed the workspace");
}

TEST(empty_segment_writes_zero_gradients) {
    /* T = 0: nothing flows back; dk, dv of the memory rows and dr, du, dv are still written (as 0) */
    const lc_attn_shape s = {2, 2, 0, 5, 24, 1, 0.2f, 3, 1};
    problem *p = problem_new(s, 1, lc_get_threads(), 9, 1.0f);
    run_fast(p);
    const int HD = s.H * s.D;
    int ok = 1;
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row;
        const int dkdv = col >= (size_t)HD && col < 3 * (size_t)HD;
        ok &= dkdv ? p->grad[i] == 0.0f : p->grad[i] == SENTINEL;
    }
    for (int i = 0; i < 5 * HD; i++) ok &= p->dr[i] == 0.0f;
    for (int i = 0; i < HD; i++) ok &= p->du[i] == 0.0f && p->dvb[i] == 0.0f;
    CHECK(ok, "dk, dv of the memory rows and dr, du, dv must be 0, nothing else written");
    problem_free(p);
}

/* ---------------------------------------------------------------- PyTorch fixture */

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

static int read_f32(lc_st_file *f, const char *prefix, const char *name, int ndim, const long *shape, float *dst) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const lc_status st = lc_st_read(f, key, LC_DT_F32, ndim, shape, dst);
    CHECK(st == LC_OK, "%s", lc_last_error());
    return st == LC_OK;
}

/* Case "a." or "b.": inputs into a fused fp32 problem, the fast path and the double reference against
 * PyTorch's float64 results (stored as F32). */
static void check_fixture_case(lc_st_file *f, const char *prefix) {
    const lc_st_tensor *q = NULL;
    char key[64];
    snprintf(key, sizeof key, "%sq", prefix);
    q = lc_st_find(f, key);
    CHECK(q && q->ndim == 4, "%s: no 4-d tensor %s", lc_st_path(f), key);
    if (!q || q->ndim != 4) return;
    int window = 0, mem = 0;
    float scale = 0;
    const long one[1] = {1};
    snprintf(key, sizeof key, "%swindow", prefix);
    CHECK(lc_st_read(f, key, LC_DT_I32, 1, one, &window) == LC_OK, "%s", lc_last_error());
    snprintf(key, sizeof key, "%smem", prefix);
    CHECK(lc_st_read(f, key, LC_DT_I32, 1, one, &mem) == LC_OK, "%s", lc_last_error());
    read_f32(f, prefix, "scale", 1, one, &scale);
    const rcase c = {(int)q->shape[0], (int)q->shape[2], (int)q->shape[1], mem, (int)q->shape[3], window, 1};
    lc_attn_shape s = shape_of(c);
    s.scale = scale;
    const int S = c.M + c.T, HD = c.H * c.D;
    const size_t nq = (size_t)c.B * c.T * HD, nk = (size_t)c.B * S * HD, nl = (size_t)c.B * c.H * c.T;
    const long sq[4] = {c.B, c.T, c.H, c.D}, sk[4] = {c.B, S, c.H, c.D}, sr[3] = {S, c.H, c.D}, su[2] = {c.H, c.D},
               sl[3] = {c.B, c.H, c.T};

    /* fixture tensors are contiguous [B, rows, H, D]: read them into the strided problem through buffers */
    problem *p = problem_new(s, 1, lc_get_threads(), 1, 1.0f);
    float *buf = xcalloc(nk, sizeof(float));
    const lc_view *inputs[4] = {&p->t.q, &p->t.k, &p->t.v, &p->t.dout};
    const char *names[4] = {"q", "k", "v", "dout"};
    for (int i = 0; i < 4; i++) {
        const int rows = (i == 1 || i == 2) ? S : c.T;
        if (!read_f32(f, prefix, names[i], 4, rows == S ? sk : sq, buf)) goto done;
        for (int b = 0; b < c.B; b++)
            for (int t = 0; t < rows; t++)
                memcpy(inputs[i]->p + (long)b * inputs[i]->sb + (long)t * inputs[i]->st,
                       buf + ((size_t)b * rows + t) * HD, sizeof(float) * (size_t)HD);
    }
    if (!read_f32(f, prefix, "r", 3, sr, p->r) || !read_f32(f, prefix, "u", 2, su, p->u) ||
        !read_f32(f, prefix, "vb", 2, su, p->vb))
        goto done;
    run_fast(p);
    problem_d *r = reference_of(p);
    lc_attn_full_forward_ref(&s, &r->t);
    lc_attn_full_backward_ref(&s, &r->t);
    double *lse_ref = xcalloc(nl, sizeof(double));
    reference_lse(r, lse_ref);

    char case_label[96];
    snprintf(case_label, sizeof case_label, "fixture %s B%d H%d T%d M%d D%d W%d", prefix, c.B, c.H, c.T, c.M, c.D,
             c.window);
    double *want = xcalloc(nk, sizeof(double)), *got = xcalloc(nk, sizeof(double));
    /* name, shape, count, fast result (as a view or a flat array), reference result */
    struct {
        const char *name;
        const long *shape;
        int ndim;
        size_t n;
        const lc_view *view;
        int view_rows;
        const float *flat;
        const double *ref;
    } outputs[8] = {
        {"out", sq, 4, nq, &p->t.out, c.T, NULL, r->out},  {"lse", sl, 3, nl, NULL, 0, p->lse, lse_ref},
        {"dq", sq, 4, nq, &p->t.dq, c.T, NULL, r->dq},     {"dk", sk, 4, nk, &p->t.dk, S, NULL, r->dk},
        {"dv", sk, 4, nk, &p->t.dv, S, NULL, r->dv},       {"dr", sr, 3, (size_t)S * HD, NULL, 0, p->dr, r->dr},
        {"du", su, 2, (size_t)HD, NULL, 0, p->du, r->du}, {"dvb", su, 2, (size_t)HD, NULL, 0, p->dvb, r->dvb},
    };
    for (int i = 0; i < 8; i++) {
        if (!read_f32(f, prefix, outputs[i].name, outputs[i].ndim, outputs[i].shape, buf)) continue;
        floats_to_d(buf, outputs[i].n, want);
        if (outputs[i].view)
            view_to_d(outputs[i].view, outputs[i].view_rows, &s, got);
        else
            floats_to_d(outputs[i].flat, outputs[i].n, got);
        char what[64];
        snprintf(what, sizeof what, "%s fast", outputs[i].name);
        COMPARE_SCALED(what, got, want, outputs[i].n, 1e-4, 2e-6);
        /* the double reference: PyTorch's float64 values rounded to float32, so about 6e-8 relative */
        snprintf(what, sizeof what, "%s reference", outputs[i].name);
        COMPARE_SCALED(what, outputs[i].ref, want, outputs[i].n, 2e-7, 1e-8);
    }
    free(want), free(got), free(lse_ref);
    problem_d_free(r);
done:
    free(buf);
    problem_free(p);
}

TEST(matches_pytorch_fixture) {
    const char *path = LC_FIXTURES "/xl_attn.safetensors";
    lc_st_file *f;
    const lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    check_fixture_case(f, "a.");
    check_fixture_case(f, "b.");
    lc_st_close(f);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(relative_scores_match_the_shift_trick);
    RUN(fast_matches_reference_with_window);
    RUN(fast_matches_reference_with_relative_positions);
    RUN(fast_matches_reference_with_window_and_relative_positions);
    RUN(fast_is_stable_for_large_scores);
    RUN(window_of_at_least_S_is_no_window);
    RUN(zero_relative_inputs_are_plain_attention);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(workspace_accounts_for_relative_positions);
    RUN(empty_segment_writes_zero_gradients);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_rel");
}
