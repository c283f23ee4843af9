/* Shared body of the tests of parameterised sparse attention kinds (tests/test_attn_block.c,
 * tests/test_attn_strided.c): problem set-up through strided fused views, the fast kind against the
 * masked double reference, finite differences of the reference, equality with the full kind,
 * determinism. The including file defines first: KIND, KIND_NAME, kind_opts, case_shape (B, H, T, M, D,
 * causal, param, rel), opts_of(param) and the pattern's visibility callback.
 * rel = 1: Transformer-XL relative positions (causal only): r, u, v and their gradients dr, du, dv join
 * every comparison. */
#include "attn_test_util.h"
#ifndef LC_TESTS_ATTN_KIND_TESTS_H
#define LC_TESTS_ATTN_KIND_TESTS_H

static lc_attn_shape shape_of(case_shape c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, c.rel};
    return s;
}

static mask_ctx mask_of(case_shape c) {
    mask_ctx m = {c.M, c.causal, c.param};
    return m;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* Contiguous [B, rows, H, D] double tensors for the reference; with s.relpos also r [S, H, D], u and vb
 * (the position bias) [H, D], and their gradients. */
typedef struct {
    lc_attn_shape s;
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    double *r, *u, *vb, *dr, *du, *dvb;
    lc_attn_relpos_d *rel; /* heap-allocated, so the struct can be copied; NULL without relpos */
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
    if (s.relpos) {
        const size_t nr = (size_t)S * s.H * s.D, nu = (size_t)s.H * s.D;
        p.r = xcalloc(nr, sizeof(double)), p.dr = xcalloc(nr, sizeof(double));
        p.u = xcalloc(nu, sizeof(double)), p.vb = xcalloc(nu, sizeof(double));
        p.du = xcalloc(nu, sizeof(double)), p.dvb = xcalloc(nu, sizeof(double));
        p.rel = xcalloc(1, sizeof *p.rel);
        *p.rel = (lc_attn_relpos_d){p.r, p.u, p.vb, p.dr, p.du, p.dvb};
        p.t.rel = p.rel;
    }
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
    free(p->r), free(p->u), free(p->vb), free(p->dr), free(p->du), free(p->dvb), free(p->rel);
}

/* Row log-sum-exp of the scaled scores over the visible keys, [B, H, T] (with the position terms when the
 * problem has them). */
static void reference_lse(const problem_d *p, const mask_ctx *m, double *lse) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, HD = s->H * s->D;
    double *scores = xcalloc((size_t)S, sizeof(double));
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++) {
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < S; j++) {
                    double dot = 0;
                    for (int d = 0; d < s->D; d++) {
                        const double q = p->q[((size_t)b * s->T + t) * HD + h * s->D + d];
                        const double k = p->k[((size_t)b * S + j) * HD + h * s->D + d];
                        if (p->rel && visible(m, b, h, t, j)) /* distance M + t - j >= 0 when visible */
                            dot += (q + p->u[h * s->D + d]) * k +
                                   (q + p->vb[h * s->D + d]) * p->r[(size_t)(s->M + t - j) * HD + h * s->D + d];
                        else
                            dot += q * k;
                    }
                    scores[j] = visible(m, b, h, t, j) ? s->scale * dot : -INFINITY;
                    if (scores[j] > max) max = scores[j];
                }
                for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
                lse[((size_t)b * s->H + h) * s->T + t] = max + log(sum);
            }
    free(scores);
}

/* ---------------------------------------------------------------- finite differences */

static double loss_of(problem_d *p, const mask_ctx *m) { /* L = sum(out * dout) */
    lc_attn_masked_forward_ref(&p->s, visible, m, &p->t);
    const size_t n = (size_t)p->s.B * p->s.T * p->s.H * p->s.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

static void check_reference_gradients(case_shape c) {
    lc_attn_shape s = shape_of(c);
    s.scale = 0.7f; /* a scale that is not 1/sqrt(D), so a misplaced scale shows */
    const mask_ctx m = mask_of(c);
    problem_d p = problem_d_new(s);
    lc_rng rng;
    lc_rng_seed(&rng, 1000 + c.T * 7 + c.M * 3 + c.causal);
    const int S = c.M + c.T;
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D;
    for (size_t i = 0; i < nq; i++) p.q[i] = lc_rng_normal(&rng), p.dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) p.k[i] = lc_rng_normal(&rng), p.v[i] = lc_rng_normal(&rng);
    const size_t nr = (size_t)S * c.H * c.D, nu = (size_t)c.H * c.D;
    if (c.rel) {
        for (size_t i = 0; i < nr; i++) p.r[i] = lc_rng_normal(&rng);
        for (size_t i = 0; i < nu; i++) p.u[i] = lc_rng_normal(&rng), p.vb[i] = lc_rng_normal(&rng);
    }
    lc_attn_masked_backward_ref(&s, visible, &m, &p.t);

    double *inputs[6] = {p.q, p.k, p.v, p.r, p.u, p.vb}, *grads[6] = {p.dq, p.dk, p.dv, p.dr, p.du, p.dvb};
    const size_t counts[6] = {nq, nk, nk, nr, nu, nu};
    const char *names[6] = {"dq", "dk", "dv", "dr", "du", "dv(bias)"};
    const double step = 1e-6;
    for (int which = 0; which < (c.rel ? 6 : 3); which++) {
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
        snprintf(label, sizeof label, "%s T=%d M=%d causal=%d param=%d rel=%d vs finite diff", names[which], c.T,
                 c.M, c.causal, c.param, c.rel);
        CHECK_CLOSE(label, grads[which], numeric, counts[which], 1e-6, 1e-8);
        free(numeric);
    }
    problem_d_free(&p);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows), and dq, dk, dv are
 * the same slices of one gradient buffer; out and dout are [B, T, H*D + 5]. Padding columns, and the
 * dq columns of the memory rows, hold SENTINEL and must survive. With s.relpos: r, u, vb and their
 * gradients are exactly-sized allocations (ASan sees overruns); the gradients start as SENTINEL, so
 * every element must be written. */
typedef struct {
    lc_attn_shape s;
    kind_opts opts;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    float *r, *u, *vb, *dr, *du, *dvb;
    lc_attn_relpos *rel; /* heap-allocated, so the struct can be copied; NULL without relpos */
    size_t qkv_n, out_n, work_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lc_attn_shape s, int param, int nthreads, uint64_t seed) {
    problem p;
    memset(&p, 0, sizeof p); /* t.rel = NULL */
    p.s = s;
    p.opts = opts_of(param);
    const int S = s.M + s.T, HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * S * p.row, p.out_n = (size_t)s.B * s.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * s.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(KIND.workspace_floats, &p.s, &p.opts, nthreads);
    p.work = malloc(p.work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        p.qkv[i] = (i % p.row) < 3 * (size_t)HD ? lc_rng_normal(&rng) : SENTINEL;
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
    if (s.relpos) { /* r ~ N(0, 1), u, vb ~ N(0, 0.5), drawn after the rest so plain problems are unchanged */
        const size_t nr = (size_t)S * HD;
        p.r = xcalloc(nr, sizeof(float)), p.dr = xcalloc(nr, sizeof(float));
        p.u = xcalloc((size_t)HD, sizeof(float)), p.vb = xcalloc((size_t)HD, sizeof(float));
        p.du = xcalloc((size_t)HD, sizeof(float)), p.dvb = xcalloc((size_t)HD, sizeof(float));
        for (size_t i = 0; i < nr; i++) p.r[i] = lc_rng_normal(&rng), p.dr[i] = SENTINEL;
        for (int i = 0; i < HD; i++) {
            p.u[i] = 0.5f * lc_rng_normal(&rng), p.vb[i] = 0.5f * lc_rng_normal(&rng);
            p.du[i] = p.dvb[i] = SENTINEL;
        }
        p.rel = xcalloc(1, sizeof *p.rel);
        p.rel->r = p.r, p.rel->u = p.u, p.rel->v = p.vb, p.rel->dr = p.dr, p.rel->du = p.du, p.rel->dv = p.dvb;
        p.t.rel = p.rel;
    }
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work);
    free(p->r), free(p->u), free(p->vb), free(p->dr), free(p->du), free(p->dvb), free(p->rel);
}

/* dr, du, dv of two problems are bit-identical (1 without relative positions). */
static int same_rel_grads(const problem *a, const problem *b) {
    if (!a->rel) return 1;
    const size_t nr = (size_t)(a->s.M + a->s.T) * a->s.H * a->s.D, nu = (size_t)a->s.H * a->s.D;
    return memcmp(a->dr, b->dr, nr * sizeof(float)) == 0 && memcmp(a->du, b->du, nu * sizeof(float)) == 0 &&
           memcmp(a->dvb, b->dvb, nu * sizeof(float)) == 0;
}

static void run_fast(problem *p) {
    KIND.forward(&p->s, &p->opts, &p->t, p->work);
    KIND.backward(&p->s, &p->opts, &p->t, p->work);
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

/* Every output of the fast path against the double reference: |got - want| <= rtol |want| + atol, with
 * atol = atol_frac * max(1, max |want|) over the tensor. Returns 1 when all are close. */
static int check_fast_against_reference(case_shape c, double rtol, double atol_frac, int verbose) {
    const lc_attn_shape s = shape_of(c);
    const mask_ctx m = mask_of(c);
    problem p = problem_new(s, c.param, lc_get_threads(), 77 + c.T + 13 * c.M + 101 * c.D + c.causal + 7 * c.param);
    run_fast(&p);

    problem_d r = problem_d_new(s);
    const int S = c.M + c.T;
    view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
    view_to_d(&p.t.dout, c.T, &s, r.dout);
    const size_t nr = (size_t)S * c.H * c.D, nu = (size_t)c.H * c.D;
    if (c.rel) {
        for (size_t i = 0; i < nr; i++) r.r[i] = p.r[i];
        for (size_t i = 0; i < nu; i++) r.u[i] = p.u[i], r.vb[i] = p.vb[i];
    }
    lc_attn_masked_forward_ref(&s, visible, &m, &r.t);
    lc_attn_masked_backward_ref(&s, visible, &m, &r.t);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(nk, sizeof(double));
    reference_lse(&r, &m, lse_want);

    const int failed_before = harness_current_failed;
    harness_current_failed = 0;
    char label[128];
    /* Quiet unless verbose or failing: the sweep runs hundreds of cases. */
#define COMPARE(name, got_values, want, n, rtol_) COMPARE_ATOL(name, got_values, want, n, rtol_, atol_frac)
#define COMPARE_ATOL(name, got_values, want, n, rtol_, atol_frac_)                                           \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n), atol_ = (atol_frac_)*scale_;                              \
        int all_ok_ = 1;                                                                                     \
        for (size_t i_ = 0; i_ < (n); i_++)                                                                \
            all_ok_ &= fabs((got_values)[i_] - (want)[i_]) <= atol_ + (rtol_)*fabs((want)[i_]);                 \
        if (verbose || !all_ok_) {                                                                             \
            snprintf(label, sizeof label, "%s B%d H%d T%d M%d D%d c%d %s=%d%s", name, c.B, c.H, c.T, c.M,    \
                     c.D, c.causal, KIND_NAME, c.param, c.rel ? " rel" : "");                               \
            CHECK_CLOSE(label, got_values, want, n, rtol_, atol_);                                         \
        }                                                                                                  \
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
    if (c.rel) {
        /* dr, du, dv sum over up to B*T rows, each term carrying fp32 noise of about atol_frac times dq's
         * scale, which adds up like a random walk (as in tests/test_attn_rel.c) */
        const double rows_noise = sqrt((double)c.B * c.T) * scale_of(r.dq, nq) / scale_of(r.dr, nr);
        COMPARE_ATOL("dr", p.dr, r.dr, nr, rtol, atol_frac * fmax(1.0, rows_noise));
        COMPARE_ATOL("du", p.du, r.du, nu, rtol, atol_frac * fmax(1.0, rows_noise));
        COMPARE_ATOL("dv(bias)", p.dvb, r.dvb, nu, rtol, atol_frac * fmax(1.0, rows_noise));
    }
#undef COMPARE
#undef COMPARE_ATOL
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns or in memory rows of dq");
    const int ok = !harness_current_failed;
    harness_current_failed |= failed_before;
    free(lse_want), free(got);
    problem_d_free(&r);
    problem_free(&p);
    return ok;
}

/* The sweep: every parameter x T x M x causal, D and (B, H) cycling (B*H = 1 is below the 2 threads). */
static void sweep_against_reference(void) {
    const int params[] = {1, 3, 16, 64, 100}, Ts[] = {1, 5, 65, 130}, Ms[] = {0, 7, 70}, Ds[] = {3, 16, 64};
    const int BH[][2] = {{1, 1}, {2, 1}, {1, 3}, {2, 2}};
    int n = 0, passed = 0;
    for (int ip = 0; ip < 5; ip++)
        for (int it = 0; it < 4; it++)
            for (int im = 0; im < 3; im++)
                for (int causal = 0; causal < 2; causal++, n++) {
                    const case_shape c = {BH[n % 4][0], BH[n % 4][1], Ts[it], Ms[im], Ds[(n / 2) % 3], causal,
                                          params[ip]};
                    passed += check_fast_against_reference(c, 1e-4, 2e-6, 0);
                }
    printf("  %d of %d cases match the reference (rtol 1e-4, atol 2e-6 x tensor scale)\n", passed, n);
    /* two cases in full, so the log shows the margins */
    check_fast_against_reference((case_shape){1, 2, 130, 70, 64, 1, 16}, 1e-4, 2e-6, 1);
    check_fast_against_reference((case_shape){2, 1, 65, 7, 3, 0, 3}, 1e-4, 2e-6, 1);
}

/* The same with relative positions (causal only), to 1e-5 relative: every parameter x T x M, D and (B, H)
 * cycling; T = 65, 130 are not multiples of 64 nor of most parameters. The absolute floor is for entries
 * whose exact value is 0 by cancellation (a query that sees one key has dS = P (dP - Delta) = 0): there
 * the fp32 rounding of dP, a D-term dot, shows, times |k + r| in dq and |q + u| in dk. */
static void sweep_rel_against_reference(void) {
    const int params[] = {1, 3, 16, 64, 100}, Ts[] = {1, 5, 65, 130}, Ms[] = {0, 7, 70}, Ds[] = {3, 16, 64};
    const int BH[][2] = {{1, 1}, {2, 1}, {1, 3}, {2, 2}};
    int n = 0, passed = 0;
    for (int ip = 0; ip < 5; ip++)
        for (int it = 0; it < 4; it++)
            for (int im = 0; im < 3; im++, n++) {
                const case_shape c = {BH[n % 4][0], BH[n % 4][1], Ts[it], Ms[im], Ds[(n / 3) % 3], 1, params[ip], 1};
                passed += check_fast_against_reference(c, 1e-5, 5e-6, 0);
            }
    printf("  %d of %d rel cases match the reference (rtol 1e-5, atol 5e-6 x tensor scale)\n", passed, n);
    check_fast_against_reference((case_shape){1, 2, 130, 70, 64, 1, 16, 1}, 1e-5, 5e-6, 1);
    check_fast_against_reference((case_shape){2, 1, 130, 0, 24, 1, 100, 1}, 1e-5, 5e-6, 1);
    check_fast_against_reference((case_shape){1, 3, 65, 0, 64, 1, 1000, 1}, 1e-5, 5e-6, 1);
    check_fast_against_reference((case_shape){2, 2, 300, 50, 16, 1, 7, 1}, 1e-5, 5e-6, 1);
}

/* The fast kind against lc_attn_full on the same fused buffers (special cases where they coincide). */
static void check_equals_full(case_shape c) {
    lc_attn_shape s = shape_of(c);
    problem a = problem_new(s, c.param, lc_get_threads(), 31 + c.T);
    problem f = problem_new(s, c.param, lc_get_threads(), 31 + c.T);
    run_fast(&a);
    float *work = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &s, NULL, lc_get_threads()) * sizeof(float));
    lc_attn_full.forward(&s, NULL, &f.t, work);
    lc_attn_full.backward(&s, NULL, &f.t, work);
    free(work);
    char label[128];
    snprintf(label, sizeof label, "out vs full T%d M%d D%d c%d %s=%d", c.T, c.M, c.D, c.causal, KIND_NAME, c.param);
    CHECK_CLOSE(label, a.out, f.out, a.out_n, 1e-4, 1e-5);
    snprintf(label, sizeof label, "lse vs full");
    CHECK_CLOSE(label, a.lse, f.lse, (size_t)s.B * s.H * s.T, 1e-5, 1e-5);
    snprintf(label, sizeof label, "dq dk dv vs full");
    CHECK_CLOSE(label, a.grad, f.grad, a.qkv_n, 1e-4, 1e-5);
    if (c.rel) {
        const size_t nr = (size_t)(s.M + s.T) * s.H * s.D, nu = (size_t)s.H * s.D;
        CHECK_CLOSE("dr vs full", a.dr, f.dr, nr, 1e-4, 1e-4);
        CHECK_CLOSE("du vs full", a.du, f.du, nu, 1e-4, 1e-4);
        CHECK_CLOSE("dv(bias) vs full", a.dvb, f.dvb, nu, 1e-4, 1e-4);
    }
    problem_free(&a), problem_free(&f);
}

TEST(reference_backward_matches_finite_differences) {
    const case_shape cases[] = {{1, 2, 5, 2, 3, 1, 2}, {2, 1, 5, 2, 3, 0, 3}, {2, 1, 5, 2, 3, 1, 2, 1},
                                {1, 2, 4, 0, 2, 1, 3, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i]);
}

TEST(fast_matches_reference_across_shapes) { sweep_against_reference(); }

TEST(fast_matches_reference_with_relative_positions) { sweep_rel_against_reference(); }

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const int threads_before = lc_get_threads();
    for (int run = 0; run < 6; run++) { /* runs 4, 5: relative positions */
        const int causal = run >= 4 || run % 2, param = run < 2 || run == 4 ? 16 : 3;
        const lc_attn_shape s = shape_of((case_shape){2, 3, 130, 70, 24, causal, param, run >= 4});
        problem runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(s, param, 2, 5);
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        for (int i = 1; i < 3; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, (size_t)s.B * s.H * s.T * sizeof(float)) == 0,
                  "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)",
                  i);
            CHECK(same_rel_grads(&runs[0], &runs[i]), "dr/du/dv differ (run %d)", i);
        }
        for (int i = 0; i < 3; i++) problem_free(&runs[i]);
    }
}

TEST(empty_segment_writes_zero_memory_gradients) {
    const lc_attn_shape s = {2, 2, 0, 5, 24, 1, 0.2f, 0, 0};
    problem p = problem_new(s, 3, lc_get_threads(), 9);
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

TEST(empty_segment_with_relative_positions_writes_zero_gradients) {
    const lc_attn_shape s = {2, 2, 0, 5, 24, 1, 0.2f, 0, 1};
    problem p = problem_new(s, 3, lc_get_threads(), 9);
    run_fast(&p);
    const int HD = s.H * s.D;
    int ok = 1;
    for (size_t i = 0; i < p.qkv_n; i++) {
        const size_t col = i % p.row;
        const int dkdv = col >= (size_t)HD && col < 3 * (size_t)HD;
        ok &= dkdv ? p.grad[i] == 0.0f : p.grad[i] == SENTINEL;
    }
    for (int i = 0; i < 5 * HD; i++) ok &= p.dr[i] == 0.0f;
    for (int i = 0; i < HD; i++) ok &= p.du[i] == 0.0f && p.dvb[i] == 0.0f;
    CHECK(ok, "dk, dv of the memory rows and dr, du, dv must be 0, nothing else written");
    problem_free(&p);
}

TEST(check_accepts_relative_positions_only_when_causal) {
    char err[256] = "";
    const kind_opts o = opts_of(16);
    lc_attn_shape s = shape_of((case_shape){1, 2, 130, 7, 16, 1, 16, 1});
    CHECK(KIND.check(&s, &o, NULL, err, sizeof err) == 0, "causal + rel rejected: %s", err);
    s.causal = 0;
    err[0] = 0;
    CHECK(KIND.check(&s, &o, NULL, err, sizeof err) == -1 && strstr(err, "causal") != NULL,
          "bidirectional + rel: want an error naming causal, got '%s'", err);
    s.causal = 1, s.relpos = 0, s.window = 32;
    CHECK(KIND.check(&s, &o, NULL, err, sizeof err) == -1, "a window must stay rejected");
}

TEST(workspace_stays_within_row_statistics_and_per_thread_tiles) {
    /* O(B H T + threads x tile): never a T x S matrix, whatever the parameter or the memory */
    CHECK(strcmp(KIND.name, KIND_NAME) == 0, "name %s", KIND.name);
    const int params[] = {1, 3, 64, 256, 100000}, Ts[] = {1024, 16384}, Ms[] = {0, 100000};
    for (int ip = 0; ip < 5; ip++)
        for (int it = 0; it < 2; it++)
            for (int im = 0; im < 2; im++) {
                const case_shape c = {1, 8, Ts[it], Ms[im], 64, 1, params[ip]};
                lc_attn_shape s = shape_of(c);
                const kind_opts o = opts_of(c.param);
                const size_t floats = LC_TEST_WORKSPACE(KIND.workspace_floats, &s, &o, 2);
                const size_t bound = (size_t)s.B * s.H * s.T + 2 * (size_t)s.T + 2 * 64 * 1024;
                CHECK(floats <= bound, "T %d M %d param %d: %zu floats > %zu", c.T, c.M, c.param, floats, bound);
                /* relative positions add per thread a few tiles and one head's dr, dk, dv (S rows each), and
                 * may gather the r rows a pattern needs: O(B H T + (threads + H) S D) */
                const case_shape cr = {1, 8, Ts[it], Ms[im], 64, 1, params[ip], 1};
                lc_attn_shape sr = shape_of(cr);
                const size_t rel_floats = LC_TEST_WORKSPACE(KIND.workspace_floats, &sr, &o, 2), S = (size_t)sr.M + sr.T;
                const size_t rel_bound = 2 * (size_t)sr.B * sr.H * sr.T + 2 * (size_t)sr.T + 2 * 64 * 1024 +
                                         (2 * 3 + 2 * (size_t)sr.H + 2) * (S + 256) * 64 + 2 * 64 * 1024;
                CHECK(rel_floats >= floats && rel_floats <= rel_bound, "rel T %d M %d param %d: %zu floats > %zu",
                      c.T, c.M, c.param, rel_floats, rel_bound);
            }
}


#endif
