/* Tests of the `bigbird` attention kind (ITC and ETC block-sparse attention): the masked double reference
 * (with the pattern written straight from its definition and the kind's own plan) against finite
 * differences; the fast fp32 forward/backward against that reference over variants, causal and
 * bidirectional, block sizes, lengths (multiples of b, not, shorter than b) and head sizes, through
 * strided views into fused buffers; equality with the full kind where the pattern covers everything;
 * determinism across thread counts; the seeded plan (valid, reproducible, seed-dependent, roughly
 * uniform); parity with PyTorch (tests/reference/make_bigbird_fixture.py); option errors; the workspace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/bigbird.h"
#include "attn/spec.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "attn_workspace.h"
#include "harness.h"
#include "train/safetensors.h"

#define SENTINEL 12345.0f
#define FIX "tests/fixtures/"

typedef struct {
    int B, H, T, D, causal;
    int variant, b, r, g; /* r, g: -1 for the defaults */
    uint64_t seed;        /* tensors.seed */
} bb_case;

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

static lc_attn_bigbird_opts opts_of(const bb_case *c) {
    lc_attn_bigbird_opts o;
    lc_attn_bigbird.opts_init(&o, c->H);
    o.b = c->b, o.r = c->r, o.variant = c->variant, o.g = c->variant == LC_BIGBIRD_ETC ? c->g : -1;
    return o;
}

static lc_attn_shape shape_of(const bb_case *c) {
    lc_attn_shape s = {c->B, c->H, c->T, 0, c->D, c->causal, (float)(1.0 / sqrt((double)c->D)), 0, 0};
    return s;
}

/* ---------------------------------------------------------------- the pattern, from its definition */

typedef struct {
    int T, causal, itc, b, G, n, r;
    const int *plan; /* [H][n][r] */
} bb_mask;

static int bb_visible(const void *ctx, int b, int h, int t, int s) {
    const bb_mask *m = ctx;
    (void)b;
    if (m->causal && s > t) return 0;
    if (t < m->G || s < m->G) return 1; /* etc global tokens */
    const int qb = (t - m->G) / m->b, kb = (s - m->G) / m->b;
    if (m->itc && (qb == 0 || qb == m->n - 1 || kb == 0 || kb == m->n - 1)) return 1;
    if (abs(qb - kb) <= 1) return 1;
    for (int j = 0; j < m->r; j++)
        if (m->plan[((size_t)h * m->n + qb) * m->r + j] == kb) return 1;
    return 0;
}

/* The mask of a case with plan (allocated here, freed by the caller): the kind's own seeded plan. */
static bb_mask mask_of(const bb_case *c, int **plan_out) {
    const lc_attn_bigbird_opts o = opts_of(c);
    bb_mask m;
    m.T = c->T, m.causal = c->causal, m.itc = c->variant == LC_BIGBIRD_ITC, m.b = c->b;
    m.G = lc_attn_bigbird_globals(&o, c->T), m.n = lc_attn_bigbird_blocks(&o, c->T), m.r = lc_attn_bigbird_random(&o);
    int *plan = xcalloc((size_t)c->H * m.n * m.r + 1, sizeof(int));
    lc_attn_bigbird_plan(&o, c->H, c->T, c->seed, plan);
    m.plan = plan;
    *plan_out = plan;
    return m;
}

/* ---------------------------------------------------------------- double problems (the reference) */

typedef struct {
    lc_attn_shape s;
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    lc_attn_tensors_d t;
} problem_d;

static lc_view_d view_d(double *p, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)s->T * s->H * s->D, (long)s->H * s->D};
    return v;
}

static problem_d problem_d_new(lc_attn_shape s) {
    problem_d p;
    memset(&p, 0, sizeof p);
    p.s = s;
    const size_t n = (size_t)s.B * s.T * s.H * s.D;
    double **all[8] = {&p.q, &p.k, &p.v, &p.out, &p.dout, &p.dq, &p.dk, &p.dv};
    for (int i = 0; i < 8; i++) *all[i] = xcalloc(n, sizeof(double));
    p.t.q = view_d(p.q, &s), p.t.k = view_d(p.k, &s), p.t.v = view_d(p.v, &s), p.t.out = view_d(p.out, &s);
    p.t.dout = view_d(p.dout, &s), p.t.dq = view_d(p.dq, &s), p.t.dk = view_d(p.dk, &s), p.t.dv = view_d(p.dv, &s);
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
}

static void reference_lse(const problem_d *p, const bb_mask *m, double *lse) {
    const lc_attn_shape *s = &p->s;
    const int T = s->T, HD = s->H * s->D;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < T; t++) {
                double max = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++)
                    for (int j = 0; j < T; j++) {
                        if (!bb_visible(m, b, h, t, j)) continue;
                        double dot = 0;
                        for (int d = 0; d < s->D; d++)
                            dot += p->q[((size_t)b * T + t) * HD + h * s->D + d] *
                                   p->k[((size_t)b * T + j) * HD + h * s->D + d];
                        const double sc = s->scale * dot;
                        if (pass == 0) max = sc > max ? sc : max;
                        else sum += exp(sc - max);
                    }
                lse[((size_t)b * s->H + h) * T + t] = max + log(sum);
            }
}

static double loss_of(problem_d *p, const bb_mask *m) { /* L = sum(out * dout) */
    lc_attn_masked_forward_ref(&p->s, bb_visible, m, &p->t);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, T, 3HD + 7] buffer, dq, dk, dv the same slices of a gradient
 * buffer; out and dout are [B, T, HD + 5]. Padding columns hold SENTINEL and must survive. */
typedef struct {
    lc_attn_shape s;
    lc_attn_bigbird_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    size_t qkv_n, out_n;
    lc_attn_tensors t;
} problem;

static problem problem_new(const bb_case *c, int nthreads, uint64_t data_seed) {
    problem p;
    memset(&p, 0, sizeof p);
    p.s = shape_of(c), p.o = opts_of(c);
    const lc_attn_shape s = p.s;
    const int HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * s.T * p.row, p.out_n = (size_t)s.B * s.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    const size_t work_n = LC_TEST_WORKSPACE(lc_attn_bigbird.workspace_floats, &p.s, &p.o, nthreads);
    p.work = malloc((work_n ? work_n : 1) * sizeof(float)); /* exactly the size asked for: ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, data_seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        p.qkv[i] = (i % p.row) < 3 * (size_t)HD ? lc_rng_normal(&rng) : SENTINEL;
        p.grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p.out_n; i++) p.dout[i] = lc_rng_normal(&rng), p.out[i] = SENTINEL;
    const long sb = (long)s.T * p.row, out_sb = (long)s.T * p.out_row;
    p.t.q = (lc_view){p.qkv, sb, p.row}, p.t.k = (lc_view){p.qkv + HD, sb, p.row};
    p.t.v = (lc_view){p.qkv + 2 * HD, sb, p.row};
    p.t.dq = (lc_view){p.grad, sb, p.row}, p.t.dk = (lc_view){p.grad + HD, sb, p.row};
    p.t.dv = (lc_view){p.grad + 2 * HD, sb, p.row};
    p.t.out = (lc_view){p.out, out_sb, p.out_row}, p.t.dout = (lc_view){p.dout, out_sb, p.out_row};
    p.t.lse = p.lse;
    p.t.seed = c->seed;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work);
}

static void run_fast(problem *p, const int *plan) {
    lc_attn_bigbird_forward_plan(&p->s, &p->o, &p->t, p->work, plan);
    lc_attn_bigbird_backward_plan(&p->s, &p->o, &p->t, p->work, plan);
}

static void view_to_d(const lc_view *v, const lc_attn_shape *s, double *dst) {
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int i = 0; i < s->H * s->D; i++) *dst++ = v->p[(long)b * v->sb + (long)t * v->st + i];
}

static int sentinels_intact(const problem *p) {
    const int HD = p->s.H * p->s.D;
    for (size_t i = 0; i < p->qkv_n; i++)
        if (i % p->row >= 3 * (size_t)HD && p->grad[i] != SENTINEL) return 0;
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= (size_t)HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

static double scale_of(const double *x, size_t n) { /* max |x|, at least 1 */
    double m = 1;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* ---------------------------------------------------------------- reference vs finite differences */

static void check_reference_gradients(bb_case c) {
    int *plan;
    const bb_mask m = mask_of(&c, &plan);
    lc_attn_shape s = shape_of(&c);
    s.scale = 0.7f;
    problem_d p = problem_d_new(s);
    lc_rng rng;
    lc_rng_seed(&rng, 1000 + c.T * 7 + c.causal);
    const size_t n = (size_t)c.B * c.T * c.H * c.D;
    for (size_t i = 0; i < n; i++)
        p.q[i] = lc_rng_normal(&rng), p.k[i] = lc_rng_normal(&rng), p.v[i] = lc_rng_normal(&rng),
        p.dout[i] = lc_rng_normal(&rng);
    lc_attn_masked_backward_ref(&s, bb_visible, &m, &p.t);
    double *inputs[3] = {p.q, p.k, p.v}, *grads[3] = {p.dq, p.dk, p.dv};
    const char *names[3] = {"dq", "dk", "dv"};
    const double step = 1e-6;
    for (int which = 0; which < 3; which++) {
        double *numeric = xcalloc(n, sizeof(double));
        for (size_t i = 0; i < n; i++) {
            const double saved = inputs[which][i];
            inputs[which][i] = saved + step;
            const double up = loss_of(&p, &m);
            inputs[which][i] = saved - step;
            const double down = loss_of(&p, &m);
            inputs[which][i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        char label[96];
        snprintf(label, sizeof label, "%s %s T=%d b=%d causal=%d vs finite diff", names[which],
                 c.variant == LC_BIGBIRD_ITC ? "itc" : "etc", c.T, c.b, c.causal);
        CHECK_CLOSE(label, grads[which], numeric, n, 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(&p);
    free(plan);
}

TEST(reference_backward_matches_finite_differences) {
    /* B, H, T, D, causal, variant, b, r, g, seed: both have blocks that see only part of the keys */
    check_reference_gradients((bb_case){1, 2, 23, 3, 0, LC_BIGBIRD_ITC, 3, 1, -1, 5});
    check_reference_gradients((bb_case){2, 1, 19, 3, 1, LC_BIGBIRD_ETC, 3, 1, 2, 6});
}

/* ---------------------------------------------------------------- fast vs reference */

static int pattern_is_sparse(const bb_case *c) { /* some query misses some key it could see causally */
    int *plan;
    const bb_mask m = mask_of(c, &plan);
    int sparse = 0;
    for (int h = 0; h < c->H && !sparse; h++)
        for (int t = 0; t < c->T && !sparse; t++)
            for (int s = 0; s <= (c->causal ? t : c->T - 1) && !sparse; s++) sparse = !bb_visible(&m, 0, h, t, s);
    free(plan);
    return sparse;
}

/* Every output of the fast path against the double reference: |got - want| <= rtol |want| + atol,
 * atol = atol_frac * max(1, max |want|). The run uses the seeded plan, or `plan` when given (the
 * reference then uses the same one). Returns 1 when all are close. */
static int check_fast_against_reference(bb_case c, double rtol, double atol_frac, int verbose) {
    int *plan;
    bb_mask m = mask_of(&c, &plan);
    const lc_attn_shape s = shape_of(&c);
    problem p = problem_new(&c, lc_get_threads(), 77 + c.T + 101 * c.D + c.causal + 7 * c.b + 3 * c.variant);
    run_fast(&p, NULL);

    problem_d r = problem_d_new(s);
    view_to_d(&p.t.q, &s, r.q), view_to_d(&p.t.k, &s, r.k), view_to_d(&p.t.v, &s, r.v);
    view_to_d(&p.t.dout, &s, r.dout);
    lc_attn_masked_forward_ref(&s, bb_visible, &m, &r.t);
    lc_attn_masked_backward_ref(&s, bb_visible, &m, &r.t);
    const size_t n = (size_t)c.B * c.T * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(n, sizeof(double));
    reference_lse(&r, &m, lse_want);

    const int failed_before = harness_current_failed;
    harness_current_failed = 0;
    char label[160];
#define COMPARE(name, got_values, want, count, rtol_)                                                          \
    do {                                                                                                       \
        const double atol_ = atol_frac * scale_of(want, count);                                                \
        int all_ok_ = 1;                                                                                       \
        for (size_t i_ = 0; i_ < (count); i_++)                                                                \
            all_ok_ &= fabs((got_values)[i_] - (want)[i_]) <= atol_ + (rtol_)*fabs((want)[i_]);                \
        if (verbose || !all_ok_) {                                                                             \
            snprintf(label, sizeof label, "%s %s B%d H%d T%d D%d c%d b%d r%d g%d", name,                       \
                     c.variant == LC_BIGBIRD_ITC ? "itc" : "etc", c.B, c.H, c.T, c.D, c.causal, c.b, m.r, m.G); \
            CHECK_CLOSE(label, got_values, want, count, rtol_, atol_);                                         \
        }                                                                                                      \
    } while (0)
    view_to_d(&p.t.out, &s, got);
    COMPARE("out", got, r.out, n, rtol);
    COMPARE("lse", p.lse, lse_want, nl, rtol);
    view_to_d(&p.t.dq, &s, got);
    COMPARE("dq", got, r.dq, n, rtol);
    view_to_d(&p.t.dk, &s, got);
    COMPARE("dk", got, r.dk, n, rtol);
    view_to_d(&p.t.dv, &s, got);
    COMPARE("dv", got, r.dv, n, rtol);
#undef COMPARE
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns");
    const int ok = !harness_current_failed;
    harness_current_failed |= failed_before;
    free(lse_want), free(got), free(plan);
    problem_d_free(&r);
    problem_free(&p);
    return ok;
}

/* Tolerance: 1e-5 relative, plus 1e-6 of the tensor's largest magnitude for entries near zero. */
#define RTOL 1e-5
#define ATOL_FRAC 1e-6

TEST(fast_matches_reference_across_shapes) {
    /* (b, T) pairs: T a multiple of b, not a multiple, shorter than b; b < 64 (several blocks per tile),
     * b = 64, b > 64 (several tiles per block) */
    const int bT[][2] = {{1, 37},  {3, 60},  {3, 61},   {5, 203}, {16, 200}, {16, 208}, {16, 9},   {24, 130},
                         {64, 640}, {64, 600}, {64, 40}, {100, 701}, {100, 1}, {7, 7},   {40, 333}};
    const int nbT = (int)(sizeof bT / sizeof bT[0]);
    const int Ds[] = {3, 16, 64}, rs[] = {-1, 0, 1, 2}, BH[][2] = {{1, 1}, {2, 1}, {1, 3}, {2, 2}};
    int n = 0, ran = 0, passed = 0, sparse = 0;
    for (int i = 0; i < nbT; i++)
        for (int variant = 0; variant < 2; variant++)
            for (int causal = 0; causal < 2; causal++, n++) {
                const int b = bT[i][0], T = bT[i][1];
                int g = -1;
                if (variant == LC_BIGBIRD_ETC) g = T > 1 ? 1 + (n * 7) % (T - 1 < 70 ? T - 1 : 70) : 1;
                if (variant == LC_BIGBIRD_ETC && T == 1) continue; /* etc needs g < T */
                const int D = (T > 400 ? 16 : Ds[n % 3]);
                const bb_case c = {BH[n % 4][0], T > 400 ? 1 : BH[n % 4][1], T, D, causal, variant, b,
                                   rs[(n / 2) % 4], g, (uint64_t)(1234 + n)};
                sparse += pattern_is_sparse(&c), ran++;
                passed += check_fast_against_reference(c, RTOL, ATOL_FRAC, 0);
            }
    printf("  %d of %d cases (%d with a sparse pattern) match the reference (rtol %.0e, atol %.0e x scale)\n", passed,
           ran, sparse, RTOL, ATOL_FRAC);
    /* three cases in full, so the log shows the margins */
    check_fast_against_reference((bb_case){2, 2, 200, 16, 0, LC_BIGBIRD_ITC, 16, 2, -1, 9}, RTOL, ATOL_FRAC, 1);
    check_fast_against_reference((bb_case){1, 2, 600, 64, 1, LC_BIGBIRD_ITC, 64, 3, -1, 10}, RTOL, ATOL_FRAC, 1);
    check_fast_against_reference((bb_case){2, 1, 203, 16, 1, LC_BIGBIRD_ETC, 5, 3, 13, 11}, RTOL, ATOL_FRAC, 1);
}

TEST(default_options_match_reference) {
    /* b = 64, r = 3 (itc) / 0 (etc), g = b: lengths that give random blocks and a short last block */
    check_fast_against_reference((bb_case){1, 2, 1000, 16, 0, LC_BIGBIRD_ITC, 64, -1, -1, 3}, RTOL, ATOL_FRAC, 1);
    check_fast_against_reference((bb_case){1, 2, 1000, 16, 1, LC_BIGBIRD_ETC, 64, -1, -1, 3}, RTOL, ATOL_FRAC, 1);
}

TEST(fast_is_stable_for_large_scores) {
    bb_case c = {1, 2, 300, 16, 0, LC_BIGBIRD_ITC, 16, 2, -1, 4};
    int *plan;
    const bb_mask m = mask_of(&c, &plan);
    problem p = problem_new(&c, lc_get_threads(), 8);
    for (size_t i = 0; i < p.qkv_n; i++)
        if (p.qkv[i] != SENTINEL) p.qkv[i] *= 4.0f; /* scores up to a few hundred */
    p.s.scale = 1.0f;
    run_fast(&p, NULL);
    int finite = 1;
    for (size_t i = 0; i < p.qkv_n; i++) finite &= isfinite(p.grad[i]) != 0;
    for (size_t i = 0; i < p.out_n; i++) finite &= isfinite(p.out[i]) != 0;
    CHECK(finite, "outputs and gradients must stay finite");
    problem_d r = problem_d_new(p.s);
    view_to_d(&p.t.q, &p.s, r.q), view_to_d(&p.t.k, &p.s, r.k), view_to_d(&p.t.v, &p.s, r.v);
    view_to_d(&p.t.dout, &p.s, r.dout);
    lc_attn_masked_forward_ref(&p.s, bb_visible, &m, &r.t);
    const size_t n = (size_t)c.B * c.T * c.H * c.D;
    double *got = xcalloc(n, sizeof(double));
    view_to_d(&p.t.out, &p.s, got);
    CHECK_CLOSE("out with large scores", got, r.out, n, 1e-3, 1e-4 * scale_of(r.out, n));
    free(got), free(plan);
    problem_d_free(&r);
    problem_free(&p);
}

/* ---------------------------------------------------------------- the full kind, plans, threads */

/* Bidirectional itc with at most 3 blocks, or etc with one block: every query sees every key. */
TEST(dense_patterns_equal_the_full_kind) {
    const bb_case cases[] = {{2, 2, 130, 16, 0, LC_BIGBIRD_ITC, 64, 3, -1, 1},
                             {1, 3, 20, 64, 0, LC_BIGBIRD_ITC, 64, 3, -1, 1},
                             {1, 2, 45, 24, 1, LC_BIGBIRD_ITC, 16, 2, -1, 1},
                             {2, 2, 90, 16, 1, LC_BIGBIRD_ETC, 64, 1, 30, 1},
                             {1, 1, 1, 3, 1, LC_BIGBIRD_ITC, 5, 3, -1, 1},
                             {1, 2, 50, 16, 0, LC_BIGBIRD_ETC, 1 << 24, 3, 5, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bb_case c = cases[i];
        CHECK(!pattern_is_sparse(&c), "case %zu should be dense", i);
        problem a = problem_new(&c, lc_get_threads(), 31 + i), f = problem_new(&c, lc_get_threads(), 31 + i);
        run_fast(&a, NULL);
        float *work = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &f.s, NULL, lc_get_threads()) * sizeof(float) + 64);
        lc_attn_full.forward(&f.s, NULL, &f.t, work);
        lc_attn_full.backward(&f.s, NULL, &f.t, work);
        free(work);
        char label[96];
        snprintf(label, sizeof label, "out vs full, case %zu", i);
        CHECK_CLOSE(label, a.out, f.out, a.out_n, 1e-5, 1e-6);
        snprintf(label, sizeof label, "lse vs full, case %zu", i);
        CHECK_CLOSE(label, a.lse, f.lse, (size_t)c.B * c.H * c.T, 1e-5, 1e-6);
        snprintf(label, sizeof label, "dq dk dv vs full, case %zu", i);
        CHECK_CLOSE(label, a.grad, f.grad, a.qkv_n, 1e-5, 1e-6);
        problem_free(&a), problem_free(&f);
    }
}

TEST(explicit_plan_reproduces_the_seeded_plan) {
    const bb_case c = {2, 3, 700, 16, 0, LC_BIGBIRD_ITC, 32, 3, -1, 77};
    int *plan;
    const bb_mask m = mask_of(&c, &plan);
    problem a = problem_new(&c, lc_get_threads(), 5), b = problem_new(&c, lc_get_threads(), 5);
    run_fast(&a, NULL);
    run_fast(&b, plan);
    CHECK(memcmp(a.out, b.out, a.out_n * sizeof(float)) == 0, "out differs between seeded and explicit plan");
    CHECK(memcmp(a.grad, b.grad, a.qkv_n * sizeof(float)) == 0, "gradients differ between seeded and explicit plan");
    /* a different plan (each head's rows rotated to another head) must change the result */
    int *other = xcalloc((size_t)c.H * m.n * m.r, sizeof(int));
    const size_t per_head = (size_t)m.n * m.r;
    for (int h = 0; h < c.H; h++)
        memcpy(other + h * per_head, plan + ((h + 1) % c.H) * per_head, per_head * sizeof(int));
    run_fast(&b, other);
    CHECK(memcmp(a.out, b.out, a.out_n * sizeof(float)) != 0, "another plan must give another output");
    /* and a changed tensors.seed, too */
    b.t.seed = c.seed + 1;
    run_fast(&b, NULL);
    CHECK(memcmp(a.out, b.out, a.out_n * sizeof(float)) != 0, "another layer seed must give another output");
    free(other), free(plan);
    problem_free(&a), problem_free(&b);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const bb_case cases[] = {{2, 3, 530, 24, 1, LC_BIGBIRD_ITC, 16, 3, -1, 21},
                             {1, 3, 700, 16, 0, LC_BIGBIRD_ETC, 64, 2, 37, 22},
                             {2, 2, 300, 16, 0, LC_BIGBIRD_ITC, 5, 2, -1, 23}};
    const int threads_before = lc_get_threads();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bb_case c = cases[ci];
        problem runs[4];
        const int threads[4] = {2, 2, 1, 3};
        for (int i = 0; i < 4; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(&c, threads[i], 5);
            run_fast(&runs[i], NULL);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 4; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0,
                  "case %zu: out differs (run %d)", ci, i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)c.B * c.H * c.T * sizeof(float)) == 0,
                  "case %zu: lse differs (run %d)", ci, i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0,
                  "case %zu: gradients differ (run %d)", ci, i);
        }
        for (int i = 0; i < 4; i++) problem_free(&runs[i]);
    }
}

/* ---------------------------------------------------------------- the plan */

/* Checks every row of a plan against the definition; returns the number of bad rows. */
static int bad_plan_rows(const lc_attn_bigbird_opts *o, int H, int T, const int *plan) {
    const int n = lc_attn_bigbird_blocks(o, T), r = lc_attn_bigbird_random(o), itc = o->variant == LC_BIGBIRD_ITC;
    int bad = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++) {
            const int *row = plan + ((size_t)h * n + i) * r;
            const int global = itc && (i == 0 || i == n - 1);
            int candidates = 0;
            for (int k = 0; k < n; k++)
                candidates += !(itc && (k == 0 || k == n - 1)) && abs(k - i) > 1;
            const int want = global ? 0 : (r < candidates ? r : candidates);
            int ok = 1, count = 0;
            for (int j = 0; j < r; j++) {
                if (row[j] < 0) continue;
                ok &= j == count; /* drawn blocks first */
                ok &= j == 0 || row[j] > row[j - 1];
                ok &= row[j] < n && abs(row[j] - i) > 1 && !(itc && (row[j] == 0 || row[j] == n - 1));
                count++;
            }
            ok &= count == want;
            for (int j = count; j < r; j++) ok &= row[j] == -1;
            bad += !ok;
        }
    return bad;
}

TEST(plan_is_valid_reproducible_and_seeded) {
    lc_attn_bigbird_opts o;
    lc_attn_bigbird.opts_init(&o, 4);
    const int H = 4;
    const struct {
        int variant, b, r, T;
    } cases[] = {{LC_BIGBIRD_ITC, 64, 3, 4096}, {LC_BIGBIRD_ITC, 16, 5, 130}, {LC_BIGBIRD_ITC, 8, 3, 57},
                 {LC_BIGBIRD_ETC, 64, 2, 4096}, {LC_BIGBIRD_ETC, 4, 7, 33},   {LC_BIGBIRD_ITC, 4, 2, 4}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        o.variant = cases[ci].variant, o.b = cases[ci].b, o.r = cases[ci].r, o.g = o.variant == LC_BIGBIRD_ETC ? 3 : -1;
        o.seed = 0;
        const int T = cases[ci].T, n = lc_attn_bigbird_blocks(&o, T);
        const size_t len = (size_t)H * n * o.r;
        int *a = xcalloc(len, sizeof(int)), *b = xcalloc(len, sizeof(int));
        lc_attn_bigbird_plan(&o, H, T, 99, a);
        CHECK(bad_plan_rows(&o, H, T, a) == 0, "case %zu: %d invalid rows", ci, bad_plan_rows(&o, H, T, a));
        lc_attn_bigbird_plan(&o, H, T, 99, b);
        CHECK(memcmp(a, b, len * sizeof(int)) == 0, "case %zu: same seed, different plan", ci);
        if (n >= 10) {
            lc_attn_bigbird_plan(&o, H, T, 100, b);
            CHECK(memcmp(a, b, len * sizeof(int)) != 0, "case %zu: another layer seed, same plan", ci);
            o.seed = 1;
            lc_attn_bigbird_plan(&o, H, T, 99, b);
            CHECK(memcmp(a, b, len * sizeof(int)) != 0, "case %zu: another option seed, same plan", ci);
            CHECK(memcmp(a, a + (size_t)n * o.r, (size_t)n * o.r * sizeof(int)) != 0, "case %zu: heads 0, 1 alike", ci);
        }
        free(a), free(b);
    }
}

TEST(plan_draws_every_candidate_about_equally) {
    /* block 10 of 20 (itc): 15 candidates (1..18 without 9, 10, 11), 3 drawn per seed */
    lc_attn_bigbird_opts o;
    lc_attn_bigbird.opts_init(&o, 1);
    o.b = 1, o.r = 3;
    const int T = 20, n = 20, seeds = 7500;
    int counts[20] = {0}, plan[20 * 3];
    for (int s = 0; s < seeds; s++) {
        lc_attn_bigbird_plan(&o, 1, T, (uint64_t)s, plan);
        for (int j = 0; j < 3; j++) counts[plan[10 * 3 + j]]++;
    }
    const double expect = seeds * 3.0 / 15.0; /* 1500 */
    int ok = 1;
    for (int k = 0; k < n; k++) {
        const int candidate = k >= 1 && k <= 18 && (k < 9 || k > 11);
        ok &= candidate ? fabs(counts[k] - expect) < 0.1 * expect : counts[k] == 0;
    }
    CHECK(ok, "counts off: %d %d %d ... %d (expect %.0f)", counts[1], counts[2], counts[3], counts[18], expect);
}

/* ---------------------------------------------------------------- PyTorch parity */

static int meta_int(const lc_st_file *f, const char *key) {
    const char *v = lc_st_get_meta(f, key);
    return v ? atoi(v) : -1;
}

static void *grab(const lc_st_file *f, const char *name) {
    const lc_st_tensor *t = lc_st_find(f, name);
    CHECK(t != NULL, "fixture lacks %s", name);
    if (!t) return NULL;
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    void *x = malloc(4 * (n ? n : 1));
    CHECK(lc_st_read(f, name, t->dtype, t->ndim, t->shape, x) == LC_OK, "%s", lc_last_error());
    return x;
}

static void fixture_case(const char *file) {
    char path[128];
    snprintf(path, sizeof path, FIX "%s", file);
    lc_st_file *f;
    if (lc_st_open(path, &f)) {
        CHECK(0, "%s", lc_last_error());
        return;
    }
    const int B = meta_int(f, "batch"), H = meta_int(f, "n_head"), T = meta_int(f, "seq_len");
    const int D = meta_int(f, "head_dim");
    lc_attn_bigbird_opts o;
    lc_attn_bigbird.opts_init(&o, H);
    o.b = meta_int(f, "block"), o.r = meta_int(f, "random");
    const char *variant = lc_st_get_meta(f, "variant");
    o.variant = variant && strcmp(variant, "etc") == 0 ? LC_BIGBIRD_ETC : LC_BIGBIRD_ITC;
    if (o.variant == LC_BIGBIRD_ETC) o.g = meta_int(f, "globals");
    const lc_st_tensor *pt = lc_st_find(f, "plan");
    CHECK(pt && pt->ndim == 3 && pt->shape[0] == H && pt->shape[1] == lc_attn_bigbird_blocks(&o, T) &&
              pt->shape[2] == o.r,
          "%s: plan shape does not match the options", file);
    float *q = grab(f, "q"), *k = grab(f, "k"), *v = grab(f, "v"), *dout = grab(f, "dout"), *scale = grab(f, "scale");
    int *plan = grab(f, "plan");
    const long HD = (long)H * D, n = (long)B * T * HD;
    float *out = xcalloc((size_t)n, 4), *lse = xcalloc((size_t)B * H * T, 4), *dq = xcalloc((size_t)n, 4);
    float *dk = xcalloc((size_t)n, 4), *dv = xcalloc((size_t)n, 4);
    const char *cases[2] = {"bidirectional", "causal"};
    for (int causal = 0; causal < 2 && q && plan && pt; causal++) {
        lc_attn_shape s = {B, H, T, 0, D, causal, scale[0], 0, 0};
        char err[256];
        CHECK(lc_attn_bigbird.check(&s, &o, NULL, err, sizeof err) == 0, "%s", err);
        float *work = malloc(LC_TEST_WORKSPACE(lc_attn_bigbird_workspace, &s, &o, lc_get_threads()) * sizeof(float));
        lc_attn_tensors t;
        memset(&t, 0, sizeof t);
        t.q = (lc_view){q, T * HD, HD}, t.k = (lc_view){k, T * HD, HD}, t.v = (lc_view){v, T * HD, HD};
        t.out = (lc_view){out, T * HD, HD}, t.dout = (lc_view){dout, T * HD, HD};
        t.dq = (lc_view){dq, T * HD, HD}, t.dk = (lc_view){dk, T * HD, HD}, t.dv = (lc_view){dv, T * HD, HD};
        t.lse = lse;
        lc_attn_bigbird_forward_plan(&s, &o, &t, work, plan);
        lc_attn_bigbird_backward_plan(&s, &o, &t, work, plan);
        free(work);
        const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
        const float *gots[5] = {out, lse, dq, dk, dv};
        const long counts[5] = {n, (long)B * H * T, n, n, n};
        for (int i = 0; i < 5; i++) {
            char key[64], label[96];
            snprintf(key, sizeof key, "%s.%s", cases[causal], names[i]);
            float *want = grab(f, key);
            if (!want) continue;
            double mx = 1;
            for (long j = 0; j < counts[i]; j++) mx = fabs(want[j]) > mx ? fabs(want[j]) : mx;
            snprintf(label, sizeof label, "%s %s", file, key);
            CHECK_CLOSE(label, gots[i], want, counts[i], RTOL, ATOL_FRAC * mx);
            free(want);
        }
    }
    free(q), free(k), free(v), free(dout), free(scale), free(plan);
    free(out), free(lse), free(dq), free(dk), free(dv);
    lc_st_close(f);
}

TEST(matches_pytorch_fixtures) {
    fixture_case("bigbird_itc.safetensors");
    fixture_case("bigbird_etc.safetensors");
}

/* ---------------------------------------------------------------- options, checks, workspace */

TEST(options_parse_and_bad_options_give_errors) {
    CHECK(lc_attn_kind_by_name("bigbird") == &lc_attn_bigbird, "bigbird is not in the table of kinds");
    CHECK(lc_attn_bigbird.opts_size <= LC_ATTN_OPTS_BYTES, "options too large");
    lc_attn_layer layer;
    char err[256];
    CHECK(lc_attn_spec_parse("bigbird", 1, 4, &layer, err, sizeof err) == 0, "%s", err);
    const lc_attn_bigbird_opts *o = (const lc_attn_bigbird_opts *)(const void *)layer.group[0].opts;
    CHECK(o->b == 64 && lc_attn_bigbird_random(o) == 3 && o->variant == LC_BIGBIRD_ITC && o->seed == 0,
          "defaults: b=%d r=%d variant=%d", o->b, lc_attn_bigbird_random(o), o->variant);
    CHECK(lc_attn_spec_parse("bigbird:r=2,b=16,variant=etc,g=5,seed=9", 1, 4, &layer, err, sizeof err) == 0, "%s", err);
    o = (const lc_attn_bigbird_opts *)(const void *)layer.group[0].opts;
    CHECK(o->b == 16 && o->r == 2 && o->variant == LC_BIGBIRD_ETC && o->g == 5 && o->seed == 9, "parsed options");
    CHECK(lc_attn_spec_parse("bigbird:variant=etc", 1, 4, &layer, err, sizeof err) == 0, "%s", err);
    o = (const lc_attn_bigbird_opts *)(const void *)layer.group[0].opts;
    CHECK(lc_attn_bigbird_random(o) == 0 && lc_attn_bigbird_globals(o, 1000) == 64, "etc defaults r=0, g=b");

    const char *bad_specs[] = {"bigbird:b=0", "bigbird:bs=4", "bigbird:variant=xyz", "bigbird:r=-1", "bigbird:g=0",
                               "bigbird:b=x"};
    for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
        err[0] = 0;
        CHECK(lc_attn_spec_parse(bad_specs[i], 1, 4, &layer, err, sizeof err) != 0 && err[0], "'%s' accepted",
              bad_specs[i]);
        printf("  %-22s -> %s\n", bad_specs[i], err);
    }

    /* check() against shapes */
    lc_attn_bigbird_opts etc;
    lc_attn_bigbird.opts_init(&etc, 2);
    etc.variant = LC_BIGBIRD_ETC, etc.g = 10, etc.b = 16;
    lc_attn_shape s = {1, 2, 100, 0, 16, 1, 0.25f, 0, 0};
    CHECK(lc_attn_bigbird.check(&s, &etc, NULL, err, sizeof err) == 0, "%s", err);
    struct {
        const char *what;
        lc_attn_shape s;
        lc_attn_bigbird_opts o;
        int global;
    } bad[6];
    for (int i = 0; i < 6; i++) bad[i].s = s, bad[i].o = etc, bad[i].global = 0;
    bad[0].what = "g >= T", bad[0].s.T = 10;
    bad[1].what = "memory", bad[1].s.M = 5;
    bad[2].what = "relative positions", bad[2].s.relpos = 1;
    bad[3].what = "Longformer globals", bad[3].global = 1;
    bad[4].what = "g with itc", bad[4].o.variant = LC_BIGBIRD_ITC;
    bad[5].what = "b = 0", bad[5].o.b = 0;
    lc_attn_global probe;
    memset(&probe, 0, sizeof probe);
    probe.n = 1;
    for (int i = 0; i < 6; i++) {
        err[0] = 0;
        const int rc = lc_attn_bigbird.check(&bad[i].s, &bad[i].o, bad[i].global ? &probe : NULL, err, sizeof err);
        CHECK(rc != 0 && err[0], "%s accepted", bad[i].what);
        printf("  %-22s -> %s\n", bad[i].what, err);
    }
    /* the default g (= b) must be below T too */
    etc.g = -1, s.T = 16;
    CHECK(lc_attn_bigbird.check(&s, &etc, NULL, err, sizeof err) != 0, "the default g = b = 16 with T = 16 passed");
    s.T = 17;
    CHECK(lc_attn_bigbird.check(&s, &etc, NULL, err, sizeof err) == 0, "%s", err);
}

TEST(workspace_does_not_grow_like_t_squared) {
    /* beyond the row statistics (B H per token) only O(H r / b + threads r / b) per token */
    const int Ts[2] = {1024, 65536};
    for (int variant = 0; variant < 2; variant++)
        for (int causal = 0; causal < 2; causal++) {
            const bb_case c = {1, 8, 0, 64, causal, variant, 64, 3, 64, 1};
            const lc_attn_bigbird_opts o = opts_of(&c);
            size_t ws[2];
            for (int i = 0; i < 2; i++) {
                bb_case ci = c;
                ci.T = Ts[i];
                lc_attn_shape s = shape_of(&ci);
                ws[i] = LC_TEST_WORKSPACE(lc_attn_bigbird_workspace, &s, &o, 2);
            }
            CHECK(ws[1] >= ws[0] && ws[1] - ws[0] <= (size_t)(8 + 2) * (65536 - 1024),
                  "variant %d causal %d: workspace %zu -> %zu floats", variant, causal, ws[0], ws[1]);
            CHECK(ws[0] < (size_t)128 * 1024, "variant %d causal %d: workspace %zu floats at T = 1024", variant, causal,
                  ws[0]);
        }
}

TEST(empty_and_tiny_problems) {
    /* T = 0, B = 0, H = 0 write nothing and do not crash; T = 1 is the query's own value */
    const bb_case zero[3] = {{2, 2, 0, 16, 1, LC_BIGBIRD_ITC, 16, 3, -1, 1},
                             {0, 2, 5, 16, 0, LC_BIGBIRD_ITC, 16, 3, -1, 1},
                             {2, 0, 5, 16, 0, LC_BIGBIRD_ETC, 16, 0, 2, 1}};
    for (int i = 0; i < 3; i++) {
        problem p = problem_new(&zero[i], lc_get_threads(), 1);
        run_fast(&p, NULL);
        CHECK(sentinels_intact(&p), "case %d wrote something", i);
        problem_free(&p);
    }
    const bb_case one = {2, 2, 1, 16, 0, LC_BIGBIRD_ITC, 64, 3, -1, 1};
    problem p = problem_new(&one, lc_get_threads(), 3);
    run_fast(&p, NULL);
    int ok = 1;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 32; i++) ok &= fabsf(p.out[b * p.out_row + i] - p.t.v.p[b * p.t.v.sb + i]) < 1e-6f;
    CHECK(ok, "T = 1: out must equal v");
    problem_free(&p);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_across_shapes);
    RUN(default_options_match_reference);
    RUN(fast_is_stable_for_large_scores);
    RUN(dense_patterns_equal_the_full_kind);
    RUN(explicit_plan_reproduces_the_seeded_plan);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(plan_is_valid_reproducible_and_seeded);
    RUN(plan_draws_every_candidate_about_equally);
    RUN(matches_pytorch_fixtures);
    RUN(options_parse_and_bad_options_give_errors);
    RUN(workspace_does_not_grow_like_t_squared);
    RUN(empty_and_tiny_problems);
    return test_summary("test_attn_bigbird");
}
