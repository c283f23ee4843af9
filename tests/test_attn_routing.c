/* Tests of the routing attention kind (src/attn/routing.h) on the test kit (tests/attn_kit.h): the fast fp32
 * passes against the masked double reference with the visibility the kind's own routing defines
 * (membership from lc_attn_routing_members with the snapshot centroids), causal and bidirectional, with
 * memory rows, in training and evaluation forwards; the reference with such a mask against finite
 * differences; the top-w membership itself; one cluster with window >= S is the full kind; queries in no
 * cluster see only themselves; the EMA centroid update (train = 1 follows the formula, train = 0 and
 * backward leave the state alone, and backward routes with the centroids its forward used); state init;
 * bit-identical results (state included) across repeats and thread counts; an empty segment; option and
 * shape errors; the workspace bound. */
#include "attn/routing.h"
#include "attn/spec.h"
#include "attn_kit.h"
#include "models/lm/lm.h"

/* Cases: p = {C clusters, w members per centroid (0: the default ceil(S / C))}. */
static void routing_opts(const kit_case *c, void *opts) {
    lc_attn_routing_opts *o = opts;
    lc_attn_routing.opts_init(o, c->H);
    o->clusters = c->p[0], o->window = c->p[1];
}

/* The inputs and centroids these cases have always had. */
static uint64_t routing_seed(const kit_case *c) {
    return (uint64_t)(77 + c->T + 13 * c->M + 101 * c->D + c->causal + 7 * c->p[0]);
}

static void routing_prepare(kit_problem *p) {
    lc_attn_routing.state_init(p->state, p->opts, p->c.H, p->c.D, routing_seed(&p->c) + 17);
}

static const float *snapshot_of(const kit_problem *p) { return p->state + p->state_n / 2; }

/* ---------------------------------------------------------------- the routing as a mask */

typedef struct {
    int B, H, T, M, S, C, causal;
    unsigned char *qin, *kin; /* [B][H][C][T], [B][H][C][S]: membership */
} routing_mask;

static routing_mask *mask_new(const kit_problem *p, const float *cent) {
    routing_mask *m = kit_calloc(1, sizeof *m);
    const kit_case c = p->c;
    const lc_attn_routing_opts *o = (const void *)p->opts;
    m->B = c.B, m->H = c.H, m->T = c.T, m->M = c.M, m->S = c.M + c.T, m->C = o->clusters, m->causal = c.causal;
    m->qin = kit_calloc((size_t)c.B * c.H * m->C * c.T, 1), m->kin = kit_calloc((size_t)c.B * c.H * m->C * m->S, 1);
    int wq, wk;
    lc_attn_routing_members_per_centroid(&p->s, o, &wq, &wk);
    int *qsel = kit_calloc((size_t)m->C * wq, sizeof(int)), *ksel = kit_calloc((size_t)m->C * wk, sizeof(int));
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++) {
            if (lc_attn_routing_members(&p->s, o, &p->t, cent, b, h, qsel, ksel)) exit(1);
            for (int cc = 0; cc < m->C; cc++) {
                for (int j = 0; j < wq; j++) m->qin[(((size_t)b * c.H + h) * m->C + cc) * c.T + qsel[cc * wq + j]] = 1;
                for (int j = 0; j < wk; j++) m->kin[(((size_t)b * c.H + h) * m->C + cc) * m->S + ksel[cc * wk + j]] = 1;
            }
        }
    free(qsel), free(ksel);
    return m;
}

static void mask_free(void *ctx) {
    routing_mask *m = ctx;
    free(m->qin), free(m->kin), free(m);
}

/* The routing of the problem's last forward: membership from the snapshot it routed with. */
static void *routing_ctx_new(const kit_problem *p) { return mask_new(p, snapshot_of(p)); }

static int routing_visible(const void *ctx, int b, int h, int t, int s) {
    const routing_mask *m = ctx;
    if (s == m->M + t) return 1;
    if (m->causal && s > m->M + t) return 0;
    for (int c = 0; c < m->C; c++)
        if (m->qin[(((size_t)b * m->H + h) * m->C + c) * m->T + t] && m->kin[(((size_t)b * m->H + h) * m->C + c) * m->S + s])
            return 1;
    return 0;
}

static const kit_kind routing = {.kind = &lc_attn_routing, .opts = routing_opts, .visible = routing_visible,
                                 .ctx_new = routing_ctx_new, .ctx_free = mask_free, .prepare = routing_prepare,
                                 .seed_of = routing_seed};

static const kit_tol tol = {1e-4, 2e-6, 1e-5, 1e-6};

/* B, H, T, M, D, causal, {C, w}; every other case a training forward */
TEST(fast_matches_reference_causal) {
    kit_case cases[] = {
        {1, 1, 1, 0, 16, 1, {1, 0}},  {2, 3, 5, 7, 3, 1, {2, 0}},    {1, 3, 65, 0, 64, 1, {4, 0}},
        {2, 2, 130, 20, 16, 1, {8, 0}}, {1, 2, 200, 0, 24, 1, {3, 40}}, {1, 2, 90, 10, 5, 1, {16, 3}},
        {2, 1, 64, 0, 32, 1, {5, 100}}, {1, 2, 80, 8, 16, 1, {4, 60}}, {1, 1, 100, 5, 8, 1, {70, 4}},
        {1, 1, 600, 0, 8, 1, {1, 0}}, /* more than one block of query rows per centroid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) cases[i].train = (int)(i % 2);
    kit_check_fast_cases(&routing, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(fast_matches_reference_bidirectional) {
    kit_case cases[] = {
        {1, 1, 1, 0, 3, 0, {1, 0}},   {2, 3, 5, 7, 16, 0, {2, 0}},   {1, 3, 65, 0, 64, 0, {4, 0}},
        {2, 2, 130, 20, 16, 0, {8, 0}}, {1, 2, 200, 3, 24, 0, {3, 40}}, {1, 2, 90, 0, 5, 0, {16, 3}},
        {1, 2, 80, 8, 16, 0, {4, 60}},  {1, 2, 50, 0, 8, 0, {130, 3}}, {1, 1, 560, 30, 4, 0, {1, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) cases[i].train = (int)(i % 2);
    kit_check_fast_cases(&routing, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(reference_with_routing_mask_matches_finite_differences) {
    const kit_case cases[] = {{1, 2, 6, 2, 3, 1, {3, 2}}, {2, 1, 7, 0, 2, 0, {2, 3}}};
    kit_check_reference_cases(&routing, cases, 2);
}

/* ---------------------------------------------------------------- membership, equivalences */

static double cosine_d(const float *x, const float *mu, int D) {
    double xx = 0, xm = 0;
    for (int d = 0; d < D; d++) xx += (double)x[d] * x[d], xm += (double)x[d] * mu[d];
    return xx > 0 ? xm / sqrt(xx) : 0;
}

TEST(members_are_the_top_w_by_cosine) {
    kit_problem *pp = kit_problem_new(&routing, &(kit_case){2, 3, 100, 30, 16, 1, {5, 0}}, 2);
    const kit_problem p = *pp;
    const struct {
        int B, H, T, M, D, C;
    } c = {p.c.B, p.c.H, p.c.T, p.c.M, p.c.D, p.c.p[0]};
    const float *cent = p.state; /* live centroids, before any forward */
    int wq, wk;
    lc_attn_routing_members_per_centroid(&p.s, (const void *)p.opts, &wq, &wk);
    CHECK(wq == 26 && wk == 26, "default w = ceil(130 / 5) = 26: wq %d wk %d", wq, wk);
    const int S = c.M + c.T;
    int *qsel = kit_calloc((size_t)c.C * wq, sizeof(int)), *ksel = kit_calloc((size_t)c.C * wk, sizeof(int));
    int ok_sorted = 1, ok_top = 1;
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++) {
            CHECK(lc_attn_routing_members(&p.s, (const void *)p.opts, &pp->t, cent, b, h, qsel, ksel) == 0, "members");
            for (int cc = 0; cc < c.C; cc++) {
                const float *mu = cent + ((size_t)h * c.C + cc) * c.D;
                for (int which = 0; which < 2; which++) {
                    const int n = which ? S : c.T, w = which ? wk : wq, *sel = (which ? ksel : qsel) + cc * w;
                    const lc_view *x = which ? &pp->t.k : &pp->t.q;
                    unsigned char *in = kit_calloc((size_t)n, 1);
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
    kit_problem_free(pp);
}

TEST(one_cluster_covering_everything_is_full_attention) {
    kit_case cases[] = {{2, 3, 65, 0, 16, 1, {1, 0}}, {1, 2, 130, 70, 64, 1, {1, 200}},
                        {2, 2, 33, 5, 8, 0, {1, 0}}, {1, 1, 5, 7, 3, 0, {1, 1000}}};
    for (size_t ci = 0; ci < 4; ci++) {
        cases[ci].train = 1;
        kit_check_same(&routing, &kit_full, cases[ci], (kit_tol){1e-4, 1e-5, 1e-5, 1e-5}, 1);
    }
}

TEST(queries_in_no_cluster_see_only_themselves) {
    /* C = 2, w = 1: at most two queries per head are routed; every other query's output is its own v */
    kit_problem *p = kit_problem_new(&routing, &(kit_case){2, 2, 40, 6, 8, 0, {2, 1}}, 2);
    kit_forward(p);
    routing_mask *m = routing_ctx_new(p);
    const struct {
        int B, H, T, M, D, C;
    } c = {p->c.B, p->c.H, p->c.T, p->c.M, p->c.D, p->c.p[0]};
    int checked = 0, ok = 1;
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++)
            for (int t = 0; t < c.T; t++) {
                int routed = 0;
                for (int cc = 0; cc < c.C; cc++) routed |= m->qin[(((size_t)b * c.H + h) * c.C + cc) * c.T + t];
                if (routed) continue;
                const float *out = p->t.out.p + (long)b * p->t.out.sb + (long)t * p->t.out.st + h * c.D;
                const float *v = p->t.v.p + (long)b * p->t.v.sb + (long)(c.M + t) * p->t.v.st + h * c.D;
                for (int d = 0; d < c.D; d++) ok &= fabsf(out[d] - v[d]) <= 1e-6f * (1 + fabsf(v[d]));
                checked++;
            }
    CHECK(checked >= c.B * c.H * (c.T - 2), "only %d unrouted queries", checked);
    CHECK(ok, "an unrouted query's output is not its own value");
    mask_free(m);
    kit_problem_free(p);
}

/* ---------------------------------------------------------------- centroid state */

/* The expected live centroids after a training forward, in double, from the snapshot. */
static void expected_update(const kit_problem *p, const float *used, double *want) {
    const int B = p->c.B, H = p->c.H, T = p->c.T, S = p->c.M + T, D = p->c.D;
    const lc_attn_routing_opts *o = (const void *)p->opts;
    const int C = o->clusters;
    double *acc = kit_calloc((size_t)D, sizeof(double));
    for (int h = 0; h < H; h++)
        for (int cc = 0; cc < C; cc++) {
            memset(acc, 0, sizeof(double) * D);
            long n = 0;
            for (int b = 0; b < B; b++)
                for (int v = 0; v < T + S; v++) {
                    const lc_view *x = v < T ? &p->t.q : &p->t.k;
                    const float *row = x->p + (long)b * x->sb + (long)(v < T ? v : v - T) * x->st + h * D;
                    int best = 0;
                    double best_sc = -INFINITY;
                    for (int k = 0; k < C; k++) {
                        const double sc = cosine_d(row, used + ((size_t)h * C + k) * D, D);
                        if (sc > best_sc) best_sc = sc, best = k;
                    }
                    if (best != cc) continue;
                    double n2 = 0;
                    for (int d = 0; d < D; d++) n2 += (double)row[d] * row[d];
                    for (int d = 0; d < D; d++) acc[d] += row[d] / sqrt(n2);
                    n++;
                }
            const float *mu = used + ((size_t)h * C + cc) * D;
            double *out = want + ((size_t)h * C + cc) * D, n2 = 0;
            for (int d = 0; d < D; d++) {
                out[d] = n ? o->decay * (double)mu[d] + (1 - o->decay) * acc[d] / n : mu[d];
                n2 += out[d] * out[d];
            }
            for (int d = 0; d < D; d++) out[d] /= sqrt(n2);
        }
    free(acc);
}

static void set_decay(kit_problem *p, float decay) { ((lc_attn_routing_opts *)(void *)p->opts)->decay = decay; }

TEST(training_forward_updates_centroids_by_ema) {
    const kit_case cases[] = {{2, 2, 50, 10, 8, 1, {4, 0}}, {1, 3, 33, 0, 5, 0, {3, 0}}, {2, 1, 60, 5, 6, 0, {70, 0}}};
    const float decays[] = {0.9f, 0.0f, 0.999f};
    for (size_t ci = 0; ci < 3; ci++)
        for (int di = 0; di < 3; di++) {
            kit_problem *p = kit_problem_new(&routing, &cases[ci], 2);
            set_decay(p, decays[di]);
            const size_t n = p->state_n / 2;
            float *before = kit_calloc(p->state_n, sizeof(float));
            memcpy(before, p->state, p->state_n * sizeof(float));
            p->t.train = 1;
            kit_forward(p);
            CHECK(memcmp(snapshot_of(p), before, n * sizeof(float)) == 0, "snapshot is not the pre-update centroids");
            double *want = kit_calloc(n, sizeof(double));
            expected_update(p, before, want);
            char label[96];
            snprintf(label, sizeof label, "live centroids C%d decay %g", cases[ci].p[0], (double)decays[di]);
            CHECK_CLOSE(label, p->state, want, n, 1e-5, 1e-6);
            double moved = 0;
            for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs(p->state[i] - before[i]));
            CHECK(moved > 1e-5, "centroids did not move (%g)", moved);
            /* backward leaves the state alone */
            float *after = kit_calloc(p->state_n, sizeof(float));
            memcpy(after, p->state, p->state_n * sizeof(float));
            kit_backward(p);
            CHECK(memcmp(after, p->state, p->state_n * sizeof(float)) == 0, "backward changed the state");
            free(before), free(after), free(want);
            kit_problem_free(p);
        }
}

TEST(eval_forward_leaves_centroids_alone) {
    kit_problem *p = kit_problem_new(&routing, &(kit_case){2, 2, 50, 10, 8, 1, {4, 0}}, 2);
    float *before = kit_calloc(p->state_n, sizeof(float));
    memcpy(before, p->state, p->state_n * sizeof(float));
    p->t.train = 0;
    kit_run(p);
    kit_run(p);
    CHECK(memcmp(before, p->state, p->state_n * sizeof(float)) == 0, "train = 0 changed the state");
    free(before);
    kit_problem_free(p);
}

TEST(backward_routes_with_the_centroids_of_its_forward) {
    /* a training forward moves live on; its backward must equal the backward of an eval forward */
    const kit_case c = {2, 2, 70, 10, 8, 1, {4, 0}};
    kit_problem *a = kit_problem_new(&routing, &c, 2), *e = kit_problem_new(&routing, &c, 2);
    a->t.train = 1, e->t.train = 0;
    set_decay(a, 0.0f); /* the biggest possible move */
    kit_run(a), kit_run(e);
    CHECK(memcmp(a->state, e->state, a->state_n / 2 * sizeof(float)) != 0, "training forward did not move the centroids");
    CHECK(memcmp(a->out, e->out, a->out_n * sizeof(float)) == 0, "outputs differ");
    CHECK(memcmp(a->grad, e->grad, a->qkv_n * sizeof(float)) == 0, "gradients differ");
    kit_problem_free(a), kit_problem_free(e);
}

TEST(state_init_gives_seeded_unit_centroids) {
    lc_attn_routing_opts o;
    lc_attn_routing.opts_init(&o, 4);
    CHECK(o.clusters == 0 && o.window == 0 && fabsf(o.decay - 0.999f) < 1e-7f, "defaults (clusters=auto)");
    const int H = 4, D = 24;
    lc_attn_routing.opts_plan(&o, H, D, 256); /* auto: 16 clusters of about 16 members for 256 keys */
    CHECK(o.clusters == 16, "auto planned %d clusters for 256 keys", o.clusters);
    const size_t n = lc_attn_routing.state_floats(&o, H, D);
    CHECK(n == (size_t)2 * H * 16 * D, "state_floats %zu", n);
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
    kit_check_determinism(&routing, (kit_case){2, 3, 130, 70, 24, 1, {4, 0}, .train = 1});
    kit_check_determinism(&routing, (kit_case){1, 3, 200, 7, 16, 0, {6, 50}, .train = 1});
}

TEST(empty_segment_writes_zero_memory_gradients) {
    kit_check_empty_segment(&routing, (kit_case){2, 2, 0, 5, 24, 1, {3, 0}, .train = 1});
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
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, NULL, err, sizeof err) == 0, "causal with memory: %s", err);
    s.causal = 0;
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, NULL, err, sizeof err) == 0, "bidirectional: %s", err);
    s.relpos = 1;
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, NULL, err, sizeof err) == -1, "relpos accepted");
    s.relpos = 0, s.window = 8;
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, NULL, err, sizeof err) == -1, "shape.window accepted");
    s.window = 0;
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, &g, err, sizeof err) == -1 && strstr(err, "global"), "global: %s", err);
    o.clusters = 0;
    CHECK(kit_kind_check(&lc_attn_routing, &s, &o, NULL, err, sizeof err) == -1, "clusters = 0 passed check");

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
                const kit_case c = {2, 8, Ts[it], Ms[im], 64, 1, {Cs[ic], 0}};
                lc_attn_routing_opts o;
                routing_opts(&c, &o);
                const lc_attn_shape s = {2, 8, Ts[it], Ms[im], 64, 1, 0.125f, 0, 0, 2};
                const size_t floats = lc_attn_routing.workspace_floats(&s, &o);
                /* plans and row statistics, the gathered K, V, dK, dV of one cluster, two score blocks of about
                 * 2^18 floats (at least 16 rows), per-thread selection scratch */
                const size_t S = (size_t)c.M + c.T,
                             bound = (size_t)c.B * c.H * (8 * S + 4 * (size_t)c.T) + 8 * S * c.D + 2 * ((size_t)1 << 18) +
                                     64 * S + 4096;
                CHECK(floats <= bound, "T %d M %d C %d: %zu floats > %zu", c.T, c.M, Cs[ic], floats, bound);
            }
}

/* ---------------------------------------------------------------- non-finite inputs (self-contained) */

enum { NF_GUARD = 256 }; /* sentinel floats after every buffer */
#define NF_SENTINEL 12345.678f

static float *nf_alloc(size_t n, float fill) {
    float *x = malloc((n + NF_GUARD) * sizeof(float));
    if (!x) abort();
    for (size_t i = 0; i < n; i++) x[i] = fill;
    for (size_t i = 0; i < NF_GUARD; i++) x[n + i] = NF_SENTINEL;
    return x;
}

static int nf_guard_intact(const float *x, size_t n) {
    for (size_t i = 0; i < NF_GUARD; i++)
        if (x[n + i] != NF_SENTINEL) return 0;
    return 1;
}

/* NaN, +-inf and huge values in queries, keys, values and centroids: routing must still give every
 * centroid exactly its w distinct members (NaN ranks last), write nothing out of bounds, and leave outputs
 * that depend only on the inputs (two runs over differently filled workspaces agree bit for bit). It used
 * to trip `assert(j == w)` in the plan (an out-of-bounds write with NDEBUG). */
TEST(nonfinite_inputs_keep_the_plan_in_bounds) {
    const int B = 2, H = 2, T = 37, M = 5, S = M + T, D = 8, C = 4;
    const int HD = H * D;
    lc_attn_routing_opts o;
    lc_attn_routing.opts_init(&o, H);
    o.clusters = C;
    lc_attn_shape s = {B, H, T, M, D, 1, 1.0f / sqrtf((float)D), 0, 0, 2};
    int wq, wk;
    lc_attn_routing_members_per_centroid(&s, &o, &wq, &wk);
    const size_t nq = (size_t)B * T * HD, nk = (size_t)B * S * HD, nl = (size_t)B * H * T;
    const size_t ns = lc_attn_routing.state_floats(&o, H, D), nw = lc_attn_routing.workspace_floats(&s, &o);
    float *q = nf_alloc(nq, 0), *k = nf_alloc(nk, 0), *v = nf_alloc(nk, 0), *dout = nf_alloc(nq, 0);
    lc_rng rng;
    lc_rng_seed(&rng, 99);
    for (size_t i = 0; i < nq; i++) q[i] = lc_rng_normal(&rng), dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) k[i] = lc_rng_normal(&rng), v[i] = lc_rng_normal(&rng);
    const float bad[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f};
    for (int i = 0; i < 40; i++) { /* whole rows and single entries */
        const float x = bad[i % 5];
        if (i % 4 == 0)
            for (int d = 0; d < D; d++) q[(size_t)(i % T) * HD + d] = x, k[(size_t)((3 * i) % S) * HD + D + d] = x;
        else
            q[(size_t)(7 * i) % nq] = x, k[(size_t)(11 * i) % nk] = x;
        v[(size_t)(13 * i) % nk] = x;
    }
    float *state0 = nf_alloc(ns, 0);
    lc_attn_routing.state_init(state0, &o, H, D, 5);
    for (int d = 0; d < D; d++) state0[(size_t)1 * D + d] = NAN;       /* head 0, centroid 1 */
    state0[(size_t)(C + 2) * D] = INFINITY;                             /* head 1, centroid 2 */
    memcpy(state0 + ns / 2, state0, sizeof(float) * ns / 2);
    float *out[2], *lse[2], *dq[2], *dk[2], *dv[2], *state[2];
    for (int run = 0; run < 2; run++) {
        float *work = nf_alloc(nw, run ? NAN : 0.0f); /* garbage must not leak into results */
        out[run] = nf_alloc(nq, run ? -7.0f : 7.0f), lse[run] = nf_alloc(nl, run ? -7.0f : 7.0f);
        dq[run] = nf_alloc(nq, run), dk[run] = nf_alloc(nk, run), dv[run] = nf_alloc(nk, run);
        state[run] = nf_alloc(ns, 0);
        memcpy(state[run], state0, sizeof(float) * ns);
        lc_attn_tensors t;
        memset(&t, 0, sizeof t);
        const long sq = (long)T * HD, sk = (long)S * HD;
        t.q = (lc_view){q, sq, HD}, t.k = (lc_view){k, sk, HD}, t.v = (lc_view){v, sk, HD};
        t.out = (lc_view){out[run], sq, HD}, t.dout = (lc_view){dout, sq, HD};
        t.dq = (lc_view){dq[run], sq, HD}, t.dk = (lc_view){dk[run], sk, HD}, t.dv = (lc_view){dv[run], sk, HD};
        t.lse = lse[run], t.state = state[run], t.train = 1;
        lc_attn_routing.forward(&s, &o, &t, work);
        lc_attn_routing.backward(&s, &o, &t, work);
        CHECK(nf_guard_intact(work, nw), "run %d: write past the workspace", run);
        CHECK(nf_guard_intact(out[run], nq) && nf_guard_intact(lse[run], nl) && nf_guard_intact(dq[run], nq) &&
                  nf_guard_intact(dk[run], nk) && nf_guard_intact(dv[run], nk) && nf_guard_intact(state[run], ns),
              "run %d: write past an output", run);
        /* every centroid: exactly w distinct members in range, in increasing order */
        int *qsel = malloc(sizeof(int) * (size_t)C * wq), *ksel = malloc(sizeof(int) * (size_t)C * wk);
        for (int b = 0; b < B && run == 0; b++)
            for (int h = 0; h < H; h++) {
                CHECK(lc_attn_routing_members(&s, &o, &t, state[run] + ns / 2, b, h, qsel, ksel) == 0, "members");
                int ok = 1;
                for (int c = 0; c < C; c++) {
                    const int *qs = qsel + c * wq, *ks = ksel + c * wk;
                    for (int j = 0; j < wq; j++) ok &= qs[j] >= 0 && qs[j] < T && (j == 0 || qs[j] > qs[j - 1]);
                    for (int j = 0; j < wk; j++) ok &= ks[j] >= 0 && ks[j] < S && (j == 0 || ks[j] > ks[j - 1]);
                }
                CHECK(ok, "b %d h %d: a centroid's members are out of range, repeated or unsorted", b, h);
            }
        free(qsel), free(ksel), free(work);
    }
    CHECK(memcmp(out[0], out[1], sizeof(float) * nq) == 0 && memcmp(lse[0], lse[1], sizeof(float) * nl) == 0,
          "forward depends on more than its inputs");
    CHECK(memcmp(dq[0], dq[1], sizeof(float) * nq) == 0 && memcmp(dk[0], dk[1], sizeof(float) * nk) == 0 &&
              memcmp(dv[0], dv[1], sizeof(float) * nk) == 0,
          "backward depends on more than its inputs");
    CHECK(memcmp(state[0], state[1], sizeof(float) * ns) == 0, "the centroid update depends on more than its inputs");
    int finite = 0; /* NaN spreads only through the rows that see it */
    for (size_t i = 0; i < nq; i++) finite += isfinite(out[0][i]);
    CHECK(finite > 0, "some outputs stay finite");
    for (int run = 0; run < 2; run++)
        free(out[run]), free(lse[run]), free(dq[run]), free(dk[run]), free(dv[run]), free(state[run]);
    free(q), free(k), free(v), free(dout), free(state0);
}

/* clusters=auto (the default): the largest power of two C with C * C <= keys, fixed once from the planned
 * length, so a centroid gathers about sqrt(S) members and the cost per token grows as sqrt(S); an
 * explicit count is kept; an unplanned auto is refused by the check. */
TEST(auto_clusters_follow_the_square_root_of_the_length) {
    const int lens[] = {1, 3, 4, 15, 16, 2048, 4096, 32768, 1 << 30}, want[] = {1, 1, 2, 2, 4, 32, 64, 128, 4096};
    for (int i = 0; i < 9; i++)
        CHECK(lc_attn_routing_auto_clusters(lens[i]) == want[i], "%d keys: %d clusters, want %d", lens[i],
              lc_attn_routing_auto_clusters(lens[i]), want[i]);
    char err[256];
    lc_attn_layer layer;
    lc_attn_layer two[2];
    CHECK(lc_attn_spec_parse("routing:clusters=auto;routing:clusters=4", 2, 2, two, err, sizeof err) == 0, "%s", err);
    lc_attn_spec_plan(two, 2, 8, 1000);
    CHECK(((lc_attn_routing_opts *)two[0].group[0].opts)->clusters == 16 &&
              ((lc_attn_routing_opts *)two[1].group[0].opts)->clusters == 4,
          "planned %d and %d", ((lc_attn_routing_opts *)two[0].group[0].opts)->clusters,
          ((lc_attn_routing_opts *)two[1].group[0].opts)->clusters);
    CHECK(lc_attn_spec_parse("routing", 1, 2, &layer, err, sizeof err) == 0, "%s", err);
    lc_attn_shape s;
    memset(&s, 0, sizeof s);
    s.B = 1, s.H = 2, s.T = 64, s.D = 8, s.causal = 1, s.scale = 1;
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == -1 && strstr(err, "auto"), "unplanned auto: %s", err);
    /* a model plans it from its segment length (and memory): its centroid state has 2 H C D floats */
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA, c.seq_len = 64, c.n_layer = 1;
    snprintf(c.attn, sizeof c.attn, "routing");
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 1, 1, &m) == LC_OK, "%s", lc_last_error());
    if (m) {
        const int D = c.d_model / c.n_head;
        CHECK(m->stab.total >= (size_t)2 * c.n_head * 8 * D && m->stab.total < (size_t)2 * c.n_head * 16 * D + 64,
              "state of %zu floats for 8 clusters", m->stab.total);
        lc_model_free(m);
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
    RUN(auto_clusters_follow_the_square_root_of_the_length);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(bad_options_and_shapes_are_rejected);
    RUN(workspace_stays_linear_in_length);
    RUN(nonfinite_inputs_keep_the_plan_in_bounds);
    return test_summary("test_attn_routing");
}
