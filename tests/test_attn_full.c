/* Tests of the full (dense) attention kind: the double reference against finite differences and
 * hand-computed values; the fast fp32 forward/backward against the reference over many shapes, through
 * strided views into fused qkv and gradient buffers; determinism across runs and thread counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "core/rng.h"
#include "core/threads.h"
#include "attn_test_util.h"
#include "harness.h"

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, M, D, causal;
} case_shape;

static lc_attn_shape shape_of(case_shape c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, 0};
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

/* ---------------------------------------------------------------- double-precision problems */

/* Contiguous [B, rows, H, D] double tensors for the reference. */
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
    memset(&p, 0, sizeof p); /* t.rel = NULL */
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

/* Row log-sum-exp of the scaled, masked scores, [B, H, T], straight from the definition. */
static void reference_lse(const problem_d *p, double *lse) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, HD = s->H * s->D;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++) {
                double max = -INFINITY, sum = 0;
                double *scores = xcalloc((size_t)S, sizeof(double));
                for (int j = 0; j < S; j++) {
                    double dot = 0;
                    for (int d = 0; d < s->D; d++)
                        dot += p->q[((size_t)b * s->T + t) * HD + h * s->D + d] *
                               p->k[((size_t)b * S + j) * HD + h * s->D + d];
                    scores[j] = (s->causal && j > s->M + t) ? -INFINITY : s->scale * dot;
                    if (scores[j] > max) max = scores[j];
                }
                for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
                lse[((size_t)b * s->H + h) * s->T + t] = max + log(sum);
                free(scores);
            }
}

/* ---------------------------------------------------------------- finite differences */

static double loss_of(problem_d *p) { /* L = sum(out * dout) */
    lc_attn_full_forward_ref(&p->s, &p->t);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(case_shape c) {
    lc_attn_shape s = shape_of(c);
    s.scale = 0.7f; /* a scale that is not 1/sqrt(D), so a misplaced scale shows */
    problem_d p = problem_d_new(s);
    lc_rng rng;
    lc_rng_seed(&rng, 1000 + c.T * 7 + c.M * 3 + c.causal);
    const int S = c.M + c.T;
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D;
    for (size_t i = 0; i < nq; i++) p.q[i] = lc_rng_normal(&rng), p.dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) p.k[i] = lc_rng_normal(&rng), p.v[i] = lc_rng_normal(&rng);
    lc_attn_full_backward_ref(&s, &p.t);

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
        snprintf(label, sizeof label, "%s T=%d M=%d causal=%d vs finite diff", names[which], c.T, c.M, c.causal);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(&p);
}

TEST(reference_backward_matches_finite_differences) {
    const case_shape cases[] = {
        {2, 2, 3, 0, 3, 1}, {2, 2, 3, 2, 3, 1}, {2, 2, 3, 0, 3, 0}, {1, 2, 4, 3, 2, 0}, {1, 1, 5, 1, 4, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

TEST(reference_forward_matches_hand_computed_values) {
    /* one query, one memory key: scores 0 and ln 3 -> probabilities 1/4, 3/4 -> out = 2/4 + 18/4 */
    lc_attn_shape s = {1, 1, 1, 1, 1, 1, 1.0f, 0, 0};
    problem_d p = problem_d_new(s);
    p.q[0] = 1, p.k[0] = 0, p.k[1] = log(3.0), p.v[0] = 2, p.v[1] = 6;
    lc_attn_full_forward_ref(&s, &p.t);
    CHECK(fabs(p.out[0] - 5.0) < 1e-12, "out %.17g, want 5", p.out[0]);
    problem_d_free(&p);

    /* causal without memory: the first query sees only the first key, the second sees both */
    lc_attn_shape c = {1, 1, 2, 0, 1, 1, 1.0f, 0, 0};
    problem_d r = problem_d_new(c);
    r.q[0] = 1, r.q[1] = 1, r.k[0] = 0, r.k[1] = log(3.0), r.v[0] = 2, r.v[1] = 6;
    lc_attn_full_forward_ref(&c, &r.t);
    CHECK(fabs(r.out[0] - 2.0) < 1e-12 && fabs(r.out[1] - 5.0) < 1e-12, "out %.17g %.17g, want 2 5", r.out[0],
          r.out[1]);
    c.causal = 0; /* without the mask both queries see both keys */
    lc_attn_full_forward_ref(&c, &r.t);
    CHECK(fabs(r.out[0] - 5.0) < 1e-12 && fabs(r.out[1] - 5.0) < 1e-12, "out %.17g %.17g, want 5 5", r.out[0],
          r.out[1]);
    problem_d_free(&r);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows), and dq, dk, dv are
 * the same slices of one gradient buffer; out and dout are [B, T, H*D + 5]. Padding columns, and the
 * dq columns of the memory rows, hold SENTINEL and must survive. */
typedef struct {
    lc_attn_shape s;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    size_t qkv_n, out_n, work_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lc_attn_shape s, int nthreads, uint64_t seed, float input_mul) {
    problem p;
    memset(&p, 0, sizeof p); /* t.rel = NULL */
    p.s = s;
    const int S = s.M + s.T, HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * S * p.row, p.out_n = (size_t)s.B * s.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &p.s, NULL, nthreads);
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
    lc_attn_full.forward(&p->s, NULL, &p->t, p->work);
    lc_attn_full.backward(&p->s, NULL, &p->t, p->work);
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

/* Compares every output of the fast path with the double reference: |got - want| <= rtol |want| + atol,
 * where atol = atol_frac * max(1, max |want|) over the tensor (fp32 cannot resolve elements much smaller than
 * the tensor's own scale). scale <= 0 means 1/sqrt(D); inputs are standard normal times input_mul. */
static void check_fast_against_reference(case_shape c, float scale, float input_mul, double rtol, double atol_frac) {
    lc_attn_shape s = shape_of(c);
    if (scale > 0) s.scale = scale;
    problem p = problem_new(s, lc_get_threads(), 77 + c.T + 13 * c.M + 101 * c.D + c.causal, input_mul);
    run_fast(&p);

    problem_d r = problem_d_new(s);
    const int S = c.M + c.T;
    view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
    view_to_d(&p.t.dout, c.T, &s, r.dout);
    lc_attn_full_forward_ref(&s, &r.t);
    lc_attn_full_backward_ref(&s, &r.t);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(nk, sizeof(double));
    reference_lse(&r, lse_want);

    char label[128];
    /* The label carries the worst |got - want| / max(1, max |want|), the margin the harness hides
     * (its max_rel_err only counts elements outside atol). */
#define COMPARE(name, got_values, want, n, rtol_)                                                            \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n); /* CHECK_CLOSE evaluates atol per element */             \
        double worst_ = 0;                                                                                 \
        for (size_t i_ = 0; i_ < (n); i_++) worst_ = fmax(worst_, fabs((got_values)[i_] - (want)[i_]));    \
        snprintf(label, sizeof label, "%s B%d H%d T%d M%d D%d c%d err/scale %.1e", name, c.B, c.H, c.T, c.M,  \
                 c.D, c.causal, worst_ / scale_);                                                          \
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

TEST(fast_matches_reference_across_shapes) {
    const case_shape cases[] = {
        /* B, H, T, M, D, causal */
        {1, 1, 1, 0, 16, 1},  {1, 1, 1, 0, 3, 0},    {2, 3, 5, 7, 3, 1},   {1, 2, 63, 0, 24, 1},
        {2, 2, 64, 70, 16, 0}, {1, 2, 65, 7, 64, 1}, {2, 1, 130, 70, 24, 1}, {1, 3, 130, 0, 64, 0},
        {1, 1, 65, 70, 3, 0}, {2, 2, 130, 7, 16, 1}, {1, 1, 64, 0, 64, 1},  {1, 1, 5, 70, 64, 1},
        {1, 2, 130, 0, 40, 1}, {1, 1, 70, 3, 80, 1},
        /* one or two queries take the decode path (full_decode.c) */
        {2, 3, 2, 70, 64, 1}, {1, 2, 2, 200, 3, 0}, {3, 1, 1, 130, 24, 1}, {1, 2, 2, 0, 16, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 0, 1.0f, 1e-4, 2e-6);
}

TEST(fast_is_stable_for_large_scores) {
    /* Scores spread over hundreds (exp of them overflows fp32): the running max must grow across key
     * tiles without overflow. A score near 100 carries an fp32 error near 1e-5, so the bound is looser. */
    const case_shape cases[] = {{1, 2, 130, 70, 16, 0}, {1, 2, 130, 7, 24, 1}};
    for (size_t i = 0; i < 2; i++) check_fast_against_reference(cases[i], 1.0f, 3.0f, 1e-3, 3e-5);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const lc_attn_shape s = shape_of((case_shape){2, 3, 130, 70, 24, 1});
    const int threads_before = lc_get_threads();
    problem runs[3];
    const int threads[3] = {2, 2, 1};
    for (int i = 0; i < 3; i++) {
        lc_set_threads(threads[i]);
        runs[i] = problem_new(s, 2, 5, 1.0f);
        run_fast(&runs[i]);
    }
    lc_set_threads(threads_before);
    for (int i = 1; i < 3; i++) {
        CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
        CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)s.B * s.H * s.T * sizeof(float)) == 0, "lse differs (run %d)",
              i);
        CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)", i);
    }
    for (int i = 0; i < 3; i++) problem_free(&runs[i]);
}

TEST(empty_segment_writes_zero_memory_gradients) {
    /* T = 0: no queries, so nothing flows back, but all M rows of dk and dv are still written */
    const lc_attn_shape s = {2, 2, 0, 5, 24, 1, 0.2f, 0, 0};
    problem p = problem_new(s, lc_get_threads(), 9, 1.0f);
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

TEST(kind_row_names_the_full_functions) {
    CHECK(strcmp(lc_attn_full.name, "full") == 0, "name %s", lc_attn_full.name);
    CHECK(lc_attn_full.forward == lc_attn_full_forward && lc_attn_full.backward == lc_attn_full_backward &&
              lc_attn_full.workspace_floats == lc_attn_full_workspace,
          "table row points elsewhere");
    CHECK(lc_attn_kind_by_name("full") == &lc_attn_full, "the kinds table finds full");
    CHECK(lc_attn_kind_by_name("no-such-kind") == NULL, "unknown kinds are NULL");
    int found = 0;
    for (int i = 0; i < lc_attn_kind_count(); i++) found += lc_attn_kind_at(i) == &lc_attn_full;
    CHECK(found == 1 && lc_attn_kind_at(lc_attn_kind_count()) == NULL, "enumeration lists full once");
    /* the workspace does not grow with T beyond the B*H*T row statistics */
    lc_attn_shape small = shape_of((case_shape){1, 8, 1024, 0, 64, 1}), large = small;
    large.T = 16384;
    const size_t a = LC_TEST_WORKSPACE(lc_attn_full_workspace, &small, NULL, 2), b = LC_TEST_WORKSPACE(lc_attn_full_workspace, &large, NULL, 2);
    CHECK(b - a == (size_t)8 * (16384 - 1024), "workspace %zu -> %zu floats", a, b);
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_forward_matches_hand_computed_values);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_across_shapes);
    RUN(fast_is_stable_for_large_scores);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(kind_row_names_the_full_functions);
    return test_summary("test_attn_full");
}
