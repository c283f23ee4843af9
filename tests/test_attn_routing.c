/* Tests of the routing attention kind (src/attn/routing.h): the fast fp32 passes against the masked double
 * reference (lc_attn_masked_*_ref) with the visibility the kind's own routing defines (membership from
 * lc_attn_routing_members with the snapshot centroids), causal and bidirectional, with memory rows, through
 * strided fused views; the reference with such a mask against finite differences; the top-w membership
 * itself; one cluster with window >= S is the full kind; queries in no cluster see only themselves; the
 * EMA centroid update (train = 1 follows the formula, train = 0 and backward leave the state alone, and
 * backward routes with the centroids its forward used); state init; bit-identical results across repeats
 * and thread counts; option and shape errors; the workspace bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/routing.h"
#include "attn/spec.h"
#include "core/rng.h"
#include "core/threads.h"
#include "attn_test_util.h"
#include "harness.h"

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, M, D, causal, C, w; /* w = 0: default ceil(S / C) */
} rcase;

static lc_attn_shape shape_of(rcase c) {
    lc_attn_shape s = {c.B, c.H, c.T, c.M, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, 0};
    return s;
}

static lc_attn_routing_opts opts_of(rcase c) {
    lc_attn_routing_opts o;
    lc_attn_routing.opts_init(&o, c.H);
    o.clusters = c.C, o.window = c.w;
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

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, S, row] buffer (q uses its last T rows); dq, dk, dv the same
 * slices of one gradient buffer; out and dout are [B, T, H*D + 5]. Padding columns and the dq columns of
 * the memory rows hold SENTINEL and must survive. */
typedef struct {
    rcase c;
    lc_attn_shape s;
    lc_attn_routing_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work, *state;
    size_t qkv_n, out_n, work_n, state_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(rcase c, int nthreads, uint64_t seed) {
    problem p;
    memset(&p, 0, sizeof p);
    p.c = c, p.s = shape_of(c), p.o = opts_of(c);
    const int S = c.M + c.T, HD = c.H * c.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)c.B * S * p.row, p.out_n = (size_t)c.B * c.T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)c.B * c.H * c.T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_routing.workspace_floats, &p.s, &p.o, nthreads);
    p.work = malloc(p.work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    p.state_n = lc_attn_routing.state_floats(&p.o, c.H, c.D);
    p.state = malloc(p.state_n * sizeof(float));
    lc_attn_routing.state_init(p.state, &p.o, c.H, c.D, seed + 17);
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        p.qkv[i] = (i % p.row) < 3 * (size_t)HD ? lc_rng_normal(&rng) : SENTINEL;
        p.grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p.out_n; i++) p.dout[i] = lc_rng_normal(&rng), p.out[i] = SENTINEL;
    const long sb = (long)S * p.row, out_sb = (long)c.T * p.out_row;
    p.t.q = view_f(p.qkv + (long)c.M * p.row, sb, p.row);
    p.t.k = view_f(p.qkv + HD, sb, p.row);
    p.t.v = view_f(p.qkv + 2 * HD, sb, p.row);
    p.t.dq = view_f(p.grad + (long)c.M * p.row, sb, p.row);
    p.t.dk = view_f(p.grad + HD, sb, p.row);
    p.t.dv = view_f(p.grad + 2 * HD, sb, p.row);
    p.t.out = view_f(p.out, out_sb, p.out_row);
    p.t.dout = view_f(p.dout, out_sb, p.out_row);
    p.t.lse = p.lse;
    p.t.state = p.state;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work), free(p->state);
}

static void run_fast(problem *p) {
    lc_attn_routing.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_routing.backward(&p->s, &p->o, &p->t, p->work);
}

static const float *snapshot_of(const problem *p) { return p->state + p->state_n / 2; }

static int sentinels_intact(const problem *p) {
    const int HD = p->c.H * p->c.D, S = p->c.M + p->c.T;
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row, row = i / p->row % S;
        const int pad = col >= 3 * (size_t)HD, memory_dq = col < (size_t)HD && row < (size_t)p->c.M;
        if ((pad || memory_dq) && p->grad[i] != SENTINEL) return 0;
    }
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= (size_t)HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

/* ---------------------------------------------------------------- the routing as a mask */

typedef struct {
    int B, H, T, M, S, C, causal;
    unsigned char *qin, *kin; /* [B][H][C][T], [B][H][C][S]: membership */
} routing_mask;

static routing_mask mask_new(const problem *p, const float *cent) {
    routing_mask m;
    const rcase c = p->c;
    m.B = c.B, m.H = c.H, m.T = c.T, m.M = c.M, m.S = c.M + c.T, m.C = c.C, m.causal = c.causal;
    m.qin = xcalloc((size_t)c.B * c.H * c.C * c.T, 1), m.kin = xcalloc((size_t)c.B * c.H * c.C * m.S, 1);
    int wq, wk;
    lc_attn_routing_members_per_centroid(&p->s, &p->o, &wq, &wk);
    int *qsel = xcalloc((size_t)c.C * wq, sizeof(int)), *ksel = xcalloc((size_t)c.C * wk, sizeof(int));
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++) {
            if (lc_attn_routing_members(&p->s, &p->o, &p->t, cent, b, h, qsel, ksel)) exit(1);
            for (int cc = 0; cc < c.C; cc++) {
                for (int j = 0; j < wq; j++)
                    m.qin[(((size_t)b * c.H + h) * c.C + cc) * c.T + qsel[cc * wq + j]] = 1;
                for (int j = 0; j < wk; j++)
                    m.kin[(((size_t)b * c.H + h) * c.C + cc) * m.S + ksel[cc * wk + j]] = 1;
            }
        }
    free(qsel), free(ksel);
    return m;
}

static void mask_free(routing_mask *m) { free(m->qin), free(m->kin); }

static int routing_visible(const void *ctx, int b, int h, int t, int s) {
    const routing_mask *m = ctx;
    if (s == m->M + t) return 1;
    if (m->causal && s > m->M + t) return 0;
    for (int c = 0; c < m->C; c++)
        if (m->qin[(((size_t)b * m->H + h) * m->C + c) * m->T + t] && m->kin[(((size_t)b * m->H + h) * m->C + c) * m->S + s])
            return 1;
    return 0;
}

/* Contiguous [B, rows, H, D] double tensors for the reference. */
typedef struct {
    double *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    lc_attn_tensors_d t;
} problem_d;

static lc_view_d view_d(double *p, int rows, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)rows * s->H * s->D, (long)s->H * s->D};
    return v;
}

static problem_d problem_d_new(const lc_attn_shape *s) {
    problem_d p;
    memset(&p, 0, sizeof p);
    const int S = s->M + s->T;
    const size_t nq = (size_t)s->B * s->T * s->H * s->D, nk = (size_t)s->B * S * s->H * s->D;
    p.q = xcalloc(nq, sizeof(double)), p.out = xcalloc(nq, sizeof(double)), p.dout = xcalloc(nq, sizeof(double));
    p.dq = xcalloc(nq, sizeof(double));
    p.k = xcalloc(nk, sizeof(double)), p.v = xcalloc(nk, sizeof(double));
    p.dk = xcalloc(nk, sizeof(double)), p.dv = xcalloc(nk, sizeof(double));
    p.t.q = view_d(p.q, s->T, s), p.t.out = view_d(p.out, s->T, s), p.t.dout = view_d(p.dout, s->T, s);
    p.t.dq = view_d(p.dq, s->T, s);
    p.t.k = view_d(p.k, S, s), p.t.v = view_d(p.v, S, s), p.t.dk = view_d(p.dk, S, s), p.t.dv = view_d(p.dv, S, s);
    return p;
}

static void problem_d_free(problem_d *p) {
    free(p->q), free(p->k), free(p->v), free(p->out), free(p->dout), free(p->dq), free(p->dk), free(p->dv);
}

/* Row log-sum-exp over the visible keys, [B, H, T]. */
static void reference_lse(const lc_attn_shape *s, const problem_d *p, const routing_mask *m, double *lse) {
    const int S = s->M + s->T, HD = s->H * s->D;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++) {
                double max = -INFINITY, sum = 0;
                for (int pass = 0; pass < 2; pass++)
                    for (int j = 0; j < S; j++) {
                        if (!routing_visible(m, b, h, t, j)) continue;
                        double dot = 0;
                        for (int d = 0; d < s->D; d++)
                            dot += p->q[((size_t)b * s->T + t) * HD + h * s->D + d] * p->k[((size_t)b * S + j) * HD + h * s->D + d];
                        if (pass == 0) max = fmax(max, s->scale * dot);
                        else sum += exp(s->scale * dot - max);
                    }
                lse[((size_t)b * s->H + h) * s->T + t] = max + log(sum);
            }
}

#define COMPARE_SCALED(label, got, want, n, rtol, atol_frac)                                                 \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n);                                                           \
        CHECK_CLOSE(label, got, want, n, rtol, (atol_frac) * scale_);                                      \
    } while (0)

static void check_fast_against_reference(rcase c, int train) {
    problem p = problem_new(c, lc_get_threads(), 77 + c.T + 13 * c.M + 101 * c.D + c.causal + 7 * c.C);
    p.t.train = train;
    run_fast(&p);
    routing_mask m = mask_new(&p, snapshot_of(&p));

    const lc_attn_shape s = p.s;
    problem_d r = problem_d_new(&s);
    const int S = c.M + c.T;
    view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
    view_to_d(&p.t.dout, c.T, &s, r.dout);
    lc_attn_masked_forward_ref(&s, routing_visible, &m, &r.t);
    lc_attn_masked_backward_ref(&s, routing_visible, &m, &r.t);
    const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *lse_want = xcalloc(nl, sizeof(double)), *got = xcalloc(nk, sizeof(double));
    reference_lse(&s, &r, &m, lse_want);
    char label[160];
#define LABEL(what) (snprintf(label, sizeof label, "%s B%d H%d T%d M%d D%d c%d C%d w%d train%d", what, c.B, c.H, c.T, \
                              c.M, c.D, c.causal, c.C, c.w, train), label)
    view_to_d(&p.t.out, c.T, &s, got);
    COMPARE_SCALED(LABEL("out"), got, r.out, nq, 1e-4, 2e-6);
    COMPARE_SCALED(LABEL("lse"), p.lse, lse_want, nl, 1e-5, 1e-6);
    view_to_d(&p.t.dq, c.T, &s, got);
    COMPARE_SCALED(LABEL("dq"), got, r.dq, nq, 1e-4, 2e-6);
    view_to_d(&p.t.dk, S, &s, got);
    COMPARE_SCALED(LABEL("dk"), got, r.dk, nk, 1e-4, 2e-6);
    view_to_d(&p.t.dv, S, &s, got);
    COMPARE_SCALED(LABEL("dv"), got, r.dv, nk, 1e-4, 2e-6);
#undef LABEL
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns or in memory rows of dq");
    free(lse_want), free(got);
    problem_d_free(&r);
    mask_free(&m);
    problem_free(&p);
}

TEST(fast_matches_reference_causal) {
    const rcase cases[] = {
        /* B, H, T, M, D, causal, C, w */
        {1, 1, 1, 0, 16, 1, 1, 0},  {2, 3, 5, 7, 3, 1, 2, 0},    {1, 3, 65, 0, 64, 1, 4, 0},
        {2, 2, 130, 20, 16, 1, 8, 0}, {1, 2, 200, 0, 24, 1, 3, 40}, {1, 2, 90, 10, 5, 1, 16, 3},
        {2, 1, 64, 0, 32, 1, 5, 100}, {1, 2, 80, 8, 16, 1, 4, 60}, {1, 1, 100, 5, 8, 1, 70, 4},
        {1, 1, 600, 0, 8, 1, 1, 0}, /* more than one block of query rows per centroid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i], (int)(i % 2));
}

TEST(fast_matches_reference_bidirectional) {
    const rcase cases[] = {
        {1, 1, 1, 0, 3, 0, 1, 0},   {2, 3, 5, 7, 16, 0, 2, 0},   {1, 3, 65, 0, 64, 0, 4, 0},
        {2, 2, 130, 20, 16, 0, 8, 0}, {1, 2, 200, 3, 24, 0, 3, 40}, {1, 2, 90, 0, 5, 0, 16, 3},
        {1, 2, 80, 8, 16, 0, 4, 60},  {1, 2, 50, 0, 8, 0, 130, 3}, {1, 1, 560, 30, 4, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_fast_against_reference(cases[i], (int)(i % 2));
}

/* ---------------------------------------------------------------- finite differences of the reference */

static double loss_of(const lc_attn_shape *s, problem_d *p, const routing_mask *m) {
    lc_attn_masked_forward_ref(s, routing_visible, m, &p->t);
    const size_t n = (size_t)s->B * s->T * s->H * s->D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += p->out[i] * p->dout[i];
    return L;
}

TEST(reference_with_routing_mask_matches_finite_differences) {
    const rcase cases[] = {{1, 2, 6, 2, 3, 1, 3, 2}, {2, 1, 7, 0, 2, 0, 2, 3}};
    for (size_t ci = 0; ci < 2; ci++) {
        const rcase c = cases[ci];
        problem p = problem_new(c, lc_get_threads(), 900 + ci);
        lc_attn_routing.forward(&p.s, &p.o, &p.t, p.work);
        routing_mask m = mask_new(&p, snapshot_of(&p));
        lc_attn_shape s = p.s;
        s.scale = 0.7f;
        problem_d r = problem_d_new(&s);
        const int S = c.M + c.T;
        view_to_d(&p.t.q, c.T, &s, r.q), view_to_d(&p.t.k, S, &s, r.k), view_to_d(&p.t.v, S, &s, r.v);
        view_to_d(&p.t.dout, c.T, &s, r.dout);
        lc_attn_masked_backward_ref(&s, routing_visible, &m, &r.t);
        const size_t nq = (size_t)c.B * c.T * c.H * c.D, nk = (size_t)c.B * S * c.H * c.D;
        double *inputs[3] = {r.q, r.k, r.v}, *grads[3] = {r.dq, r.dk, r.dv};
        const size_t counts[3] = {nq, nk, nk};
        const char *names[3] = {"dq", "dk", "dv"};
        for (int w = 0; w < 3; w++) {
            double *numeric = xcalloc(counts[w], sizeof(double));
            for (size_t i = 0; i < counts[w]; i++) {
                const double saved = inputs[w][i], step = 1e-6;
                inputs[w][i] = saved + step;
                const double up = loss_of(&s, &r, &m);
                inputs[w][i] = saved - step;
                const double down = loss_of(&s, &r, &m);
                inputs[w][i] = saved;
                numeric[i] = (up - down) / (2 * step);
            }
            char label[96];
            snprintf(label, sizeof label, "%s T=%d M=%d causal=%d C=%d vs finite diff", names[w], c.T, c.M, c.causal, c.C);
            CHECK_CLOSE(label, grads[w], numeric, counts[w], 1e-6, 1e-8);
            free(numeric);
        }
        problem_d_free(&r);
        mask_free(&m);
        problem_free(&p);
    }
}

/* ---------------------------------------------------------------- membership, equivalences */

static double cosine_d(const float *x, const float *mu, int D) {
    double xx = 0, xm = 0;
    for (int d = 0; d < D; d++) xx += (double)x[d] * x[d], xm += (double)x[d] * mu[d];
    return xx > 0 ? xm / sqrt(xx) : 0;
}

TEST(members_are_the_top_w_by_cosine) {
    const rcase c = {2, 3, 100, 30, 16, 1, 5, 0};
    problem p = problem_new(c, lc_get_threads(), 5);
    const float *cent = p.state; /* live centroids, before any forward */
    int wq, wk;
    lc_attn_routing_members_per_centroid(&p.s, &p.o, &wq, &wk);
    CHECK(wq == 26 && wk == 26, "default w = ceil(130 / 5) = 26: wq %d wk %d", wq, wk);
    const int S = c.M + c.T;
    int *qsel = xcalloc((size_t)c.C * wq, sizeof(int)), *ksel = xcalloc((size_t)c.C * wk, sizeof(int));
    int ok_sorted = 1, ok_top = 1;
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++) {
            CHECK(lc_attn_routing_members(&p.s, &p.o, &p.t, cent, b, h, qsel, ksel) == 0, "members");
            for (int cc = 0; cc < c.C; cc++) {
                const float *mu = cent + ((size_t)h * c.C + cc) * c.D;
                for (int which = 0; which < 2; which++) {
                    const int n = which ? S : c.T, w = which ? wk : wq, *sel = (which ? ksel : qsel) + cc * w;
                    const lc_view *x = which ? &p.t.k : &p.t.q;
                    unsigned char *in = xcalloc((size_t)n, 1);
                    double min_in = INFINITY, max_out = -INFINITY;
                    for (int j = 0; j < w; j++) {
                        ok_sorted &= j == 0 || sel[j] > sel[j - 1];
                        in[sel[j]] = 1;
                    }
                    for (int i = 0; i < n; i++) {
                        const double sc = cosine_d(x->p + (long)b * x->sb + (long)i * x->st + h * c.D, mu, c.D);
                        if (in[i]) min_in = fmin(min_in, sc);
                        else max_out = fmax(max_out, sc);
                    }
                    ok_top &= min_in >= max_out - 1e-6;
                    free(in);
                }
            }
        }
    CHECK(ok_sorted, "members not in increasing position order");
    CHECK(ok_top, "a member scores below a non-member");
    free(qsel), free(ksel);
    problem_free(&p);
}

TEST(one_cluster_covering_everything_is_full_attention) {
    const rcase cases[] = {{2, 3, 65, 0, 16, 1, 1, 0}, {1, 2, 130, 70, 64, 1, 1, 200},
                           {2, 2, 33, 5, 8, 0, 1, 0}, {1, 1, 5, 7, 3, 0, 1, 1000}};
    for (size_t ci = 0; ci < 4; ci++) {
        const rcase c = cases[ci];
        problem a = problem_new(c, lc_get_threads(), 31 + ci), f = problem_new(c, lc_get_threads(), 31 + ci);
        a.t.train = 1;
        run_fast(&a);
        float *work = malloc(LC_TEST_WORKSPACE(lc_attn_full.workspace_floats, &f.s, NULL, lc_get_threads()) * sizeof(float));
        lc_attn_full.forward(&f.s, NULL, &f.t, work);
        lc_attn_full.backward(&f.s, NULL, &f.t, work);
        free(work);
        char label[96];
        snprintf(label, sizeof label, "out vs full T%d M%d causal%d", c.T, c.M, c.causal);
        CHECK_CLOSE(label, a.out, f.out, a.out_n, 1e-4, 1e-5);
        snprintf(label, sizeof label, "lse vs full T%d M%d causal%d", c.T, c.M, c.causal);
        CHECK_CLOSE(label, a.lse, f.lse, (size_t)c.B * c.H * c.T, 1e-5, 1e-5);
        snprintf(label, sizeof label, "dq dk dv vs full T%d M%d causal%d", c.T, c.M, c.causal);
        CHECK_CLOSE(label, a.grad, f.grad, a.qkv_n, 1e-4, 1e-5);
        problem_free(&a), problem_free(&f);
    }
}

TEST(queries_in_no_cluster_see_only_themselves) {
    /* C = 2, w = 1: at most two queries per head are routed; every other query's output is its own v */
    const rcase c = {2, 2, 40, 6, 8, 0, 2, 1};
    problem p = problem_new(c, lc_get_threads(), 8);
    lc_attn_routing.forward(&p.s, &p.o, &p.t, p.work);
    routing_mask m = mask_new(&p, snapshot_of(&p));
    int checked = 0, ok = 1;
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++)
            for (int t = 0; t < c.T; t++) {
                int routed = 0;
                for (int cc = 0; cc < c.C; cc++) routed |= m.qin[(((size_t)b * c.H + h) * c.C + cc) * c.T + t];
                if (routed) continue;
                const float *out = p.t.out.p + (long)b * p.t.out.sb + (long)t * p.t.out.st + h * c.D;
                const float *v = p.t.v.p + (long)b * p.t.v.sb + (long)(c.M + t) * p.t.v.st + h * c.D;
                for (int d = 0; d < c.D; d++) ok &= fabsf(out[d] - v[d]) <= 1e-6f * (1 + fabsf(v[d]));
                checked++;
            }
    CHECK(checked >= c.B * c.H * (c.T - 2), "only %d unrouted queries", checked);
    CHECK(ok, "an unrouted query's output is not its own value");
    mask_free(&m);
    problem_free(&p);
}

/* ---------------------------------------------------------------- centroid state */

/* The expected live centroids after a training forward, in double, from the snapshot. */
static void expected_update(const problem *p, const float *used, double *want) {
    const rcase c = p->c;
    const int S = c.M + c.T, D = c.D;
    double *acc = xcalloc((size_t)D, sizeof(double));
    for (int h = 0; h < c.H; h++)
        for (int cc = 0; cc < c.C; cc++) {
            memset(acc, 0, sizeof(double) * D);
            long n = 0;
            for (int b = 0; b < c.B; b++)
                for (int v = 0; v < c.T + S; v++) {
                    const lc_view *x = v < c.T ? &p->t.q : &p->t.k;
                    const float *row = x->p + (long)b * x->sb + (long)(v < c.T ? v : v - c.T) * x->st + h * D;
                    int best = 0;
                    double best_sc = -INFINITY;
                    for (int k = 0; k < c.C; k++) {
                        const double sc = cosine_d(row, used + ((size_t)h * c.C + k) * D, D);
                        if (sc > best_sc) best_sc = sc, best = k;
                    }
                    if (best != cc) continue;
                    double n2 = 0;
                    for (int d = 0; d < D; d++) n2 += (double)row[d] * row[d];
                    for (int d = 0; d < D; d++) acc[d] += row[d] / sqrt(n2);
                    n++;
                }
            const float *mu = used + ((size_t)h * c.C + cc) * D;
            double *out = want + ((size_t)h * c.C + cc) * D, n2 = 0;
            for (int d = 0; d < D; d++) {
                out[d] = n ? p->o.decay * (double)mu[d] + (1 - p->o.decay) * acc[d] / n : mu[d];
                n2 += out[d] * out[d];
            }
            for (int d = 0; d < D; d++) out[d] /= sqrt(n2);
        }
    free(acc);
}

TEST(training_forward_updates_centroids_by_ema) {
    const rcase cases[] = {{2, 2, 50, 10, 8, 1, 4, 0}, {1, 3, 33, 0, 5, 0, 3, 0}, {2, 1, 60, 5, 6, 0, 70, 0}};
    const float decays[] = {0.9f, 0.0f, 0.999f};
    for (size_t ci = 0; ci < 3; ci++)
        for (int di = 0; di < 3; di++) {
            rcase c = cases[ci];
            problem p = problem_new(c, lc_get_threads(), 60 + ci);
            p.o.decay = decays[di];
            const size_t n = p.state_n / 2;
            float *before = xcalloc(p.state_n, sizeof(float));
            memcpy(before, p.state, p.state_n * sizeof(float));
            p.t.train = 1;
            lc_attn_routing.forward(&p.s, &p.o, &p.t, p.work);
            CHECK(memcmp(snapshot_of(&p), before, n * sizeof(float)) == 0, "snapshot is not the pre-update centroids");
            double *want = xcalloc(n, sizeof(double));
            expected_update(&p, before, want);
            char label[96];
            snprintf(label, sizeof label, "live centroids C%d decay %g", c.C, (double)decays[di]);
            CHECK_CLOSE(label, p.state, want, n, 1e-5, 1e-6);
            double moved = 0;
            for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs(p.state[i] - before[i]));
            CHECK(moved > 1e-5, "centroids did not move (%g)", moved);
            /* backward leaves the state alone */
            float *after = xcalloc(p.state_n, sizeof(float));
            memcpy(after, p.state, p.state_n * sizeof(float));
            lc_attn_routing.backward(&p.s, &p.o, &p.t, p.work);
            CHECK(memcmp(after, p.state, p.state_n * sizeof(float)) == 0, "backward changed the state");
            free(before), free(after), free(want);
            problem_free(&p);
        }
}

TEST(eval_forward_leaves_centroids_alone) {
    const rcase c = {2, 2, 50, 10, 8, 1, 4, 0};
    problem p = problem_new(c, lc_get_threads(), 61);
    float *before = xcalloc(p.state_n, sizeof(float));
    memcpy(before, p.state, p.state_n * sizeof(float));
    p.t.train = 0;
    run_fast(&p);
    run_fast(&p);
    CHECK(memcmp(before, p.state, p.state_n * sizeof(float)) == 0, "train = 0 changed the state");
    free(before);
    problem_free(&p);
}

TEST(backward_routes_with_the_centroids_of_its_forward) {
    /* a training forward moves live on; its backward must equal the backward of an eval forward */
    const rcase c = {2, 2, 70, 10, 8, 1, 4, 0};
    problem a = problem_new(c, lc_get_threads(), 62), e = problem_new(c, lc_get_threads(), 62);
    a.t.train = 1, a.o.decay = 0.0f; /* the biggest possible move */
    e.t.train = 0;
    run_fast(&a), run_fast(&e);
    CHECK(memcmp(a.state, e.state, a.state_n / 2 * sizeof(float)) != 0, "training forward did not move the centroids");
    CHECK(memcmp(a.out, e.out, a.out_n * sizeof(float)) == 0, "outputs differ");
    CHECK(memcmp(a.grad, e.grad, a.qkv_n * sizeof(float)) == 0, "gradients differ");
    problem_free(&a), problem_free(&e);
}

TEST(state_init_gives_seeded_unit_centroids) {
    lc_attn_routing_opts o;
    lc_attn_routing.opts_init(&o, 4);
    CHECK(o.clusters == 8 && o.window == 0 && fabsf(o.decay - 0.999f) < 1e-7f, "defaults");
    const int H = 4, D = 24;
    const size_t n = lc_attn_routing.state_floats(&o, H, D);
    CHECK(n == (size_t)2 * H * 8 * D, "state_floats %zu", n);
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    lc_attn_routing.state_init(a, &o, H, D, 9), lc_attn_routing.state_init(b, &o, H, D, 9);
    lc_attn_routing.state_init(d, &o, H, D, 10);
    CHECK(memcmp(a, b, n * sizeof(float)) == 0 && memcmp(a, d, n * sizeof(float)) != 0, "seeded");
    CHECK(memcmp(a, a + n / 2, n / 2 * sizeof(float)) == 0, "snapshot = live after init");
    int unit = 1;
    for (size_t r = 0; r < n / 2 / D; r++) {
        double n2 = 0;
        for (int e = 0; e < D; e++) n2 += (double)a[r * D + e] * a[r * D + e];
        unit &= fabs(n2 - 1) < 1e-5;
    }
    CHECK(unit, "centroids are not unit vectors");
    CHECK(lc_attn_routing.param_floats == NULL, "routing has no learned parameters");
    free(a), free(b), free(d);
}

/* ---------------------------------------------------------------- determinism, errors, sizes */

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    const rcase cs[2] = {{2, 3, 130, 70, 24, 1, 4, 0}, {1, 3, 200, 7, 16, 0, 6, 50}};
    const int threads_before = lc_get_threads();
    for (int ci = 0; ci < 2; ci++) {
        problem runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(cs[ci], 2, 5);
            runs[i].t.train = 1;
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        const size_t nl = (size_t)cs[ci].B * cs[ci].H * cs[ci].T;
        for (int i = 1; i < 3; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, nl * sizeof(float)) == 0, "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)",
                  i);
            CHECK(memcmp(runs[0].state, runs[i].state, runs[0].state_n * sizeof(float)) == 0,
                  "state differs (run %d)", i);
        }
        for (int i = 0; i < 3; i++) problem_free(&runs[i]);
    }
}

TEST(empty_segment_writes_zero_memory_gradients) {
    const rcase c = {2, 2, 0, 5, 24, 1, 3, 0};
    problem p = problem_new(c, lc_get_threads(), 9);
    p.t.train = 1;
    run_fast(&p);
    const int HD = c.H * c.D;
    int ok = 1;
    for (size_t i = 0; i < p.qkv_n; i++) {
        const size_t col = i % p.row;
        const int dkdv = col >= (size_t)HD && col < 3 * (size_t)HD;
        ok &= dkdv ? p.grad[i] == 0.0f : p.grad[i] == SENTINEL;
    }
    CHECK(ok, "dk, dv of the memory rows must be 0 and nothing else written");
    problem_free(&p);
}

TEST(bad_options_and_shapes_are_rejected) {
    char err[256];
    lc_attn_routing_opts o;
    lc_attn_routing.opts_init(&o, 4);
    CHECK(lc_attn_routing.opts_set(&o, 4, "clusters", "0", err, sizeof err) == -1, "clusters=0 accepted");
    CHECK(lc_attn_routing.opts_set(&o, 4, "window", "0", err, sizeof err) == -1, "window=0 accepted");
    CHECK(lc_attn_routing.opts_set(&o, 4, "decay", "1.5", err, sizeof err) == -1, "decay=1.5 accepted");
    CHECK(lc_attn_routing.opts_set(&o, 4, "k", "3", err, sizeof err) == -1 && strstr(err, "clusters"), "unknown: %s",
          err);
    CHECK(lc_attn_routing.opts_set(&o, 4, "clusters", "16", err, sizeof err) == 0 && o.clusters == 16, "clusters=16");
    CHECK(lc_attn_routing.opts_set(&o, 4, "window", "32", err, sizeof err) == 0 && o.window == 32, "window=32");
    CHECK(lc_attn_routing.opts_set(&o, 4, "decay", "0.99", err, sizeof err) == 0 && fabsf(o.decay - 0.99f) < 1e-7f,
          "decay=0.99");
    lc_attn_shape s = {1, 4, 128, 16, 16, 1, 0.25f, 0, 0};
    CHECK(lc_attn_routing.check(&s, &o, NULL, err, sizeof err) == 0, "causal with memory: %s", err);
    s.causal = 0;
    CHECK(lc_attn_routing.check(&s, &o, NULL, err, sizeof err) == 0, "bidirectional: %s", err);
    s.relpos = 1;
    CHECK(lc_attn_routing.check(&s, &o, NULL, err, sizeof err) == -1, "relpos accepted");
    s.relpos = 0, s.window = 8;
    CHECK(lc_attn_routing.check(&s, &o, NULL, err, sizeof err) == -1, "shape.window accepted");
    s.window = 0;
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(lc_attn_routing.check(&s, &o, &g, err, sizeof err) == -1 && strstr(err, "global"), "global: %s", err);
    o.clusters = 0;
    CHECK(lc_attn_routing.check(&s, &o, NULL, err, sizeof err) == -1, "clusters = 0 passed check");

    lc_attn_layer layer;
    CHECK(lc_attn_spec_parse("routing:clusters=0", 1, 4, &layer, err, sizeof err) == -1, "spec clusters=0 accepted");
    CHECK(lc_attn_spec_parse("2xfull+routing:clusters=4,window=16,decay=0.99", 1, 4, &layer, err, sizeof err) == 0,
          "spec: %s", err);
    const lc_attn_routing_opts *po = (const void *)layer.group[1].opts;
    CHECK(layer.group[1].kind == &lc_attn_routing && layer.group[1].heads == 2 && po->clusters == 4 &&
              po->window == 16 && fabsf(po->decay - 0.99f) < 1e-7f,
          "spec parsed into the options");
}

TEST(workspace_stays_linear_in_length) {
    /* linear in the length: never T x S */
    const int Ts[] = {1024, 16384}, Ms[] = {0, 4096}, Cs[] = {1, 8, 64};
    for (int it = 0; it < 2; it++)
        for (int im = 0; im < 2; im++)
            for (int ic = 0; ic < 3; ic++) {
                const rcase c = {2, 8, Ts[it], Ms[im], 64, 1, Cs[ic], 0};
                lc_attn_shape s = shape_of(c);
                const lc_attn_routing_opts o = opts_of(c);
                const size_t floats = LC_TEST_WORKSPACE(lc_attn_routing.workspace_floats, &s, &o, 2);
                /* plans and row statistics, the gathered K, V, dK, dV of one cluster, two score blocks of about
                 * 2^18 floats (at least 16 rows), per-thread selection scratch */
                const size_t S = (size_t)c.M + c.T,
                             bound = (size_t)c.B * c.H * (8 * S + 4 * (size_t)c.T) + 8 * S * c.D + 2 * ((size_t)1 << 18) +
                                     64 * S + 4096;
                CHECK(floats <= bound, "T %d M %d C %d: %zu floats > %zu", c.T, c.M, c.C, floats, bound);
            }
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_with_routing_mask_matches_finite_differences);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(members_are_the_top_w_by_cosine);
    RUN(one_cluster_covering_everything_is_full_attention);
    RUN(queries_in_no_cluster_see_only_themselves);
    RUN(training_forward_updates_centroids_by_ema);
    RUN(eval_forward_leaves_centroids_alone);
    RUN(backward_routes_with_the_centroids_of_its_forward);
    RUN(state_init_gives_seeded_unit_centroids);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(bad_options_and_shapes_are_rejected);
    RUN(workspace_stays_linear_in_length);
    return test_summary("test_attn_routing");
}
