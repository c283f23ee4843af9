/* Tests of the `bigbird` attention kind (ITC and ETC block-sparse attention) on the test kit
 * (tests/attn_kit.h): the masked double reference (with the pattern written straight from its definition
 * and the kind's own plan) against finite differences; the fast fp32 forward/backward against that
 * reference over variants, causal and bidirectional, block sizes, lengths (multiples of b, not, shorter
 * than b), head sizes and large scores; equality with the full kind where the pattern covers everything;
 * determinism across repeats and thread counts; an explicit plan; the seeded plan (valid, reproducible,
 * seed-dependent, roughly uniform); parity with PyTorch (tests/reference/make_bigbird_fixture.py); option
 * errors; the workspace; empty and one-token problems. */
#include "attn/bigbird.h"
#include "attn/spec.h"
#include "attn_kit.h"

#define FIX LC_FIXTURES "/"

/* Cases: p = {b, variant, r, g} (r, g: -1 for the defaults); seed: tensors.seed. */
static void bb_opts(const kit_case *c, void *opts) {
    lc_attn_bigbird_opts *o = opts;
    lc_attn_bigbird.opts_init(o, c->H);
    o->b = c->p[0], o->variant = c->p[1], o->r = c->p[2], o->g = c->p[1] == LC_BIGBIRD_ETC ? c->p[3] : -1;
}

/* ---------------------------------------------------------------- the pattern, from its definition */

typedef struct {
    int T, causal, itc, b, G, n, r;
    int *plan; /* [H][n][r] */
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

/* The mask of a case, with the kind's own seeded plan. */
static bb_mask *bb_mask_new(const kit_case *c) {
    lc_attn_bigbird_opts o;
    bb_opts(c, &o);
    bb_mask *m = kit_calloc(1, sizeof *m);
    m->T = c->T, m->causal = c->causal, m->itc = o.variant == LC_BIGBIRD_ITC, m->b = o.b;
    m->G = lc_attn_bigbird_globals(&o, c->T), m->n = lc_attn_bigbird_blocks(&o, c->T), m->r = lc_attn_bigbird_random(&o);
    m->plan = kit_calloc((size_t)c->H * m->n * m->r + 1, sizeof(int));
    lc_attn_bigbird_plan(&o, c->H, c->T, c->seed, m->plan);
    return m;
}

static void bb_mask_free(void *ctx) {
    bb_mask *m = ctx;
    free(m->plan), free(m);
}

static void *bb_ctx_new(const kit_problem *p) { return bb_mask_new(&p->c); }

static const kit_kind bigbird = {.kind = &lc_attn_bigbird, .opts = bb_opts, .visible = bb_visible,
                                 .ctx_new = bb_ctx_new, .ctx_free = bb_mask_free};

/* Tolerance: 1e-5 relative, plus 1e-6 of the tensor's largest magnitude for entries near zero. */
#define RTOL 1e-5
#define ATOL_FRAC 1e-6
static const kit_tol tol = {RTOL, ATOL_FRAC, RTOL};

/* ---------------------------------------------------------------- reference, fast path */

TEST(reference_backward_matches_finite_differences) {
    /* B, H, T, M, D, causal, {b, variant, r, g}: both have blocks that see only part of the keys */
    kit_check_reference_gradients(&bigbird, (kit_case){1, 2, 23, 0, 3, 0, {3, LC_BIGBIRD_ITC, 1, -1}, .seed = 5});
    kit_check_reference_gradients(&bigbird, (kit_case){2, 1, 19, 0, 3, 1, {3, LC_BIGBIRD_ETC, 1, 2}, .seed = 6});
}

static int pattern_is_sparse(const kit_case *c) { /* some query misses some key it could see causally */
    bb_mask *m = bb_mask_new(c);
    int sparse = 0;
    for (int h = 0; h < c->H && !sparse; h++)
        for (int t = 0; t < c->T && !sparse; t++)
            for (int s = 0; s <= (c->causal ? t : c->T - 1) && !sparse; s++) sparse = !bb_visible(m, 0, h, t, s);
    bb_mask_free(m);
    return sparse;
}

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
                const kit_case c = {BH[n % 4][0], T > 400 ? 1 : BH[n % 4][1], T, 0, D, causal,
                                    {b, variant, rs[(n / 2) % 4], g}, .seed = (uint64_t)(1234 + n)};
                sparse += pattern_is_sparse(&c), ran++;
                passed += kit_check_fast(&bigbird, c, tol, 0);
            }
    printf("  %d of %d cases (%d with a sparse pattern) match the reference (rtol %.0e, atol %.0e x scale)\n", passed,
           ran, sparse, RTOL, ATOL_FRAC);
    /* three cases in full, so the log shows the margins */
    const kit_case full[] = {{2, 2, 200, 0, 16, 0, {16, LC_BIGBIRD_ITC, 2, -1}, .seed = 9},
                             {1, 2, 600, 0, 64, 1, {64, LC_BIGBIRD_ITC, 3, -1}, .seed = 10},
                             {2, 1, 203, 0, 16, 1, {5, LC_BIGBIRD_ETC, 3, 13}, .seed = 11}};
    kit_check_fast_cases(&bigbird, full, 3, tol);
}

TEST(default_options_match_reference) {
    /* b = 64, r = 3 (itc) / 0 (etc), g = b: lengths that give random blocks and a short last block */
    const kit_case cases[] = {{1, 2, 1000, 0, 16, 0, {64, LC_BIGBIRD_ITC, -1, -1}, .seed = 3},
                              {1, 2, 1000, 0, 16, 1, {64, LC_BIGBIRD_ETC, -1, -1}, .seed = 3}};
    kit_check_fast_cases(&bigbird, cases, 2, tol);
}

TEST(fast_is_stable_for_large_scores) {
    /* scores up to a few hundred: everything finite and close to the reference */
    const kit_case c = {1, 2, 300, 0, 16, 0, {16, LC_BIGBIRD_ITC, 2, -1}, .seed = 4, .scale = 1, .input_mul = 4};
    kit_check_fast(&bigbird, c, (kit_tol){1e-3, 1e-4}, 1);
}

/* ---------------------------------------------------------------- the full kind, plans, threads */

/* Bidirectional itc with at most 3 blocks, or etc with one block or g >= T: every query sees every key. */
TEST(dense_patterns_equal_the_full_kind) {
    const kit_case cases[] = {{2, 2, 130, 0, 16, 0, {64, LC_BIGBIRD_ITC, 3, -1}, .seed = 1},
                              {1, 3, 20, 0, 64, 0, {64, LC_BIGBIRD_ITC, 3, -1}, .seed = 1},
                              {1, 2, 45, 0, 24, 1, {16, LC_BIGBIRD_ITC, 2, -1}, .seed = 1},
                              {2, 2, 90, 0, 16, 1, {64, LC_BIGBIRD_ETC, 1, 30}, .seed = 1},
                              {1, 1, 1, 0, 3, 1, {5, LC_BIGBIRD_ITC, 3, -1}, .seed = 1},
                              {1, 2, 50, 0, 16, 0, {1 << 24, LC_BIGBIRD_ETC, 3, 5}, .seed = 1},
                              {2, 2, 10, 0, 16, 1, {16, LC_BIGBIRD_ETC, 0, 16}, .seed = 1}, /* g >= T: all global */
                              {1, 2, 9, 0, 8, 0, {4, LC_BIGBIRD_ETC, 1, -1}, .seed = 1}};   /* default g = b >= T */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(!pattern_is_sparse(&cases[i]), "case %zu should be dense", i);
        kit_check_same(&bigbird, &kit_full, cases[i], (kit_tol){1e-5, 1e-6, 1e-5, 1e-6}, 1);
    }
}

static void run_plan(kit_problem *p, const int *plan) {
    kit_pass_begin(p);
    lc_attn_bigbird_forward_plan(&p->s, (const void *)p->opts, &p->t, p->work, plan);
    kit_pass_end(p, "forward");
    kit_pass_begin(p);
    lc_attn_bigbird_backward_plan(&p->s, (const void *)p->opts, &p->t, p->work, plan);
    kit_pass_end(p, "backward");
}

TEST(explicit_plan_reproduces_the_seeded_plan) {
    const kit_case c = {2, 3, 700, 0, 16, 0, {32, LC_BIGBIRD_ITC, 3, -1}, .seed = 77};
    bb_mask *m = bb_mask_new(&c);
    kit_problem *a = kit_problem_new(&bigbird, &c, 2), *b = kit_problem_new(&bigbird, &c, 2);
    kit_run(a);
    run_plan(b, m->plan);
    CHECK(memcmp(a->out, b->out, a->out_n * sizeof(float)) == 0, "out differs between seeded and explicit plan");
    CHECK(memcmp(a->grad, b->grad, a->qkv_n * sizeof(float)) == 0, "gradients differ between seeded and explicit plan");
    /* a different plan (each head's rows rotated to another head) must change the result */
    int *other = kit_calloc((size_t)c.H * m->n * m->r, sizeof(int));
    const size_t per_head = (size_t)m->n * m->r;
    for (int h = 0; h < c.H; h++)
        memcpy(other + h * per_head, m->plan + ((h + 1) % c.H) * per_head, per_head * sizeof(int));
    run_plan(b, other);
    CHECK(memcmp(a->out, b->out, a->out_n * sizeof(float)) != 0, "another plan must give another output");
    /* and a changed tensors.seed, too */
    b->t.seed = c.seed + 1;
    run_plan(b, NULL);
    CHECK(memcmp(a->out, b->out, a->out_n * sizeof(float)) != 0, "another layer seed must give another output");
    free(other);
    bb_mask_free(m);
    kit_problem_free(a), kit_problem_free(b);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&bigbird, (kit_case){2, 3, 530, 0, 24, 1, {16, LC_BIGBIRD_ITC, 3, -1}, .seed = 21});
    kit_check_determinism(&bigbird, (kit_case){1, 3, 700, 0, 16, 0, {64, LC_BIGBIRD_ETC, 2, 37}, .seed = 22});
    kit_check_determinism(&bigbird, (kit_case){2, 2, 300, 0, 16, 0, {5, LC_BIGBIRD_ITC, 2, -1}, .seed = 23});
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
        int *a = kit_calloc(len, sizeof(int)), *b = kit_calloc(len, sizeof(int));
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

/* The fixture's inputs (contiguous [B, T, H, D]) in a kit problem, its plan, its results against the
 * fast path with that plan, both directions. */
static void fixture_case(const char *file) {
    lc_st_file *f;
    if (lc_st_open(file, &f)) {
        CHECK(0, "%s", lc_last_error());
        return;
    }
    const char *variant = lc_st_get_meta(f, "variant");
    const int etc = variant && strcmp(variant, "etc") == 0;
    kit_case c = {meta_int(f, "batch"), meta_int(f, "n_head"), meta_int(f, "seq_len"), 0, meta_int(f, "head_dim"), 0,
                  {meta_int(f, "block"), etc ? LC_BIGBIRD_ETC : LC_BIGBIRD_ITC, meta_int(f, "random"),
                   etc ? meta_int(f, "globals") : -1}};
    const long one[1] = {1}, sx[4] = {c.B, c.T, c.H, c.D};
    if (!kit_st_read(f, "", "scale", LC_DT_F32, 1, one, &c.scale)) goto close;
    for (int causal = 0; causal < 2; causal++) {
        c.causal = causal;
        kit_problem *p = kit_problem_new(&bigbird, &c, 2);
        const lc_attn_bigbird_opts *o = (const void *)p->opts;
        const long sp[3] = {c.H, lc_attn_bigbird_blocks(o, c.T), lc_attn_bigbird_random(o)};
        int *plan = kit_calloc((size_t)sp[0] * sp[1] * sp[2], sizeof(int));
        float *buf = kit_calloc(p->nq, sizeof(float));
        double *want = kit_calloc(p->nq, sizeof(double)), *got = kit_calloc(p->nq, sizeof(double));
        const char *in_names[4] = {"q", "k", "v", "dout"};
        const lc_view *in_views[4] = {&p->t.q, &p->t.k, &p->t.v, &p->t.dout};
        int ok = kit_st_read(f, "", "plan", LC_DT_I32, 3, sp, plan); /* the plan's shape follows the options */
        for (int i = 0; i < 4 && ok; i++)
            if ((ok = kit_st_read(f, "", in_names[i], LC_DT_F32, 4, sx, buf))) kit_floats_to_view(buf, in_views[i], c.T, &p->s);
        if (ok) {
            char err[256];
            CHECK(kit_kind_check(&lc_attn_bigbird, &p->s, o, NULL, err, sizeof err) == 0, "%s", err);
            run_plan(p, plan);
            const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
            const lc_view *views[5] = {&p->t.out, NULL, &p->t.dq, &p->t.dk, &p->t.dv};
            const long sl[3] = {c.B, c.H, c.T};
            for (int i = 0; i < 5; i++) {
                char prefix[32], label[96];
                snprintf(prefix, sizeof prefix, "%s.", causal ? "causal" : "bidirectional");
                const size_t n = views[i] ? p->nq : p->nl;
                if (!kit_st_read(f, prefix, names[i], LC_DT_F32, views[i] ? 4 : 3, views[i] ? sx : sl, buf)) continue;
                kit_floats_to_d(buf, n, want);
                if (views[i]) kit_view_to_d(views[i], c.T, &p->s, got);
                else kit_floats_to_d(p->lse, n, got);
                snprintf(label, sizeof label, "%s %s%s", file, prefix, names[i]);
                kit_compare("fixture", label, got, want, n, RTOL, ATOL_FRAC, 0, 1);
            }
        }
        free(plan), free(buf), free(want), free(got);
        kit_problem_free(p);
    }
close:
    lc_st_close(f);
}

TEST(matches_pytorch_fixtures) {
    fixture_case(FIX "bigbird_itc.safetensors");
    fixture_case(FIX "bigbird_etc.safetensors");
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
    CHECK(kit_kind_check(&lc_attn_bigbird, &s, &etc, NULL, err, sizeof err) == 0, "%s", err);
    struct {
        const char *what;
        lc_attn_shape s;
        lc_attn_bigbird_opts o;
        int global;
    } bad[6];
    for (int i = 0; i < 6; i++) bad[i].s = s, bad[i].o = etc, bad[i].global = 0;
    bad[0].what = "g = 0", bad[0].o.g = 0;
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
        const int rc = kit_kind_check(&lc_attn_bigbird, &bad[i].s, &bad[i].o, bad[i].global ? &probe : NULL, err, sizeof err);
        CHECK(rc != 0 && err[0], "%s accepted", bad[i].what);
        printf("  %-22s -> %s\n", bad[i].what, err);
    }
    /* a short segment (T <= g, also the default g = b) makes every position global */
    s.T = 10;
    CHECK(kit_kind_check(&lc_attn_bigbird, &s, &etc, NULL, err, sizeof err) == 0, "g = 10 at T = 10 refused: %s", err);
    etc.g = -1, s.T = 16;
    CHECK(kit_kind_check(&lc_attn_bigbird, &s, &etc, NULL, err, sizeof err) == 0, "the default g = b = 16 at T = 16 refused: %s",
          err);
}

TEST(workspace_does_not_grow_like_t_squared) {
    /* beyond the row statistics (B H per token) only O(H r / b + threads r / b) per token */
    const int Ts[2] = {1024, 65536};
    for (int variant = 0; variant < 2; variant++)
        for (int causal = 0; causal < 2; causal++) {
            lc_attn_bigbird_opts o;
            bb_opts(&(kit_case){1, 8, 0, 0, 64, causal, {64, variant, 3, 64}}, &o);
            size_t ws[2];
            for (int i = 0; i < 2; i++) {
                const lc_attn_shape s = {1, 8, Ts[i], 0, 64, causal, 0.125f, 0, 0, 2};
                ws[i] = lc_attn_bigbird_workspace(&s, &o);
            }
            CHECK(ws[1] >= ws[0] && ws[1] - ws[0] <= (size_t)(8 + 2) * (65536 - 1024),
                  "variant %d causal %d: workspace %zu -> %zu floats", variant, causal, ws[0], ws[1]);
            CHECK(ws[0] < (size_t)128 * 1024, "variant %d causal %d: workspace %zu floats at T = 1024", variant, causal,
                  ws[0]);
        }
}

TEST(empty_and_tiny_problems) {
    /* T = 0, B = 0, H = 0 write nothing and do not crash; T = 1 is the query's own value */
    kit_check_empty_segment(&bigbird, (kit_case){2, 2, 0, 0, 16, 1, {16, LC_BIGBIRD_ITC, 3, -1}, .seed = 1});
    kit_check_empty_segment(&bigbird, (kit_case){0, 2, 5, 0, 16, 0, {16, LC_BIGBIRD_ITC, 3, -1}, .seed = 1});
    kit_check_empty_segment(&bigbird, (kit_case){2, 0, 5, 0, 16, 0, {16, LC_BIGBIRD_ETC, 0, 2}, .seed = 1});
    kit_problem *p = kit_problem_new(&bigbird, &(kit_case){2, 2, 1, 0, 16, 0, {64, LC_BIGBIRD_ITC, 3, -1}, .seed = 1}, 2);
    kit_run(p);
    int ok = 1;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 32; i++) ok &= fabsf(p->out[b * p->out_row + i] - p->t.v.p[b * p->t.v.sb + i]) < 1e-6f;
    CHECK(ok, "T = 1: out must equal v");
    kit_problem_free(p);
}

int main(void) {
    lc_threads_use(2);
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
