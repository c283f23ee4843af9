/* Tests of the linformer attention kind (src/attn/linformer.h) on the test kit (tests/attn_kit.h): a plain
 * double reference written with E, F in their natural k x n layout, which the kit checks against central
 * finite differences for q, k, v and the parameters; the fast fp32 path against it through strided fused
 * views, for every sharing mode, inputs shorter than n, more than one block of query rows and k > T, with
 * dE, dF accumulated onto existing values (and nothing added beyond column T); k = T with identity
 * projections is full bidirectional attention (forward and gradients); the sharing modes' sizes; the
 * initialisation; bit-identical results across repeats and thread counts; values in a buffer of their own
 * (share=kv's separate products) against the fused views (one product); layerwise aliasing; option and
 * shape errors; the workspace; parity with the PyTorch fixture tests/fixtures/linformer_attn.safetensors
 * (tests/reference/make_linformer_fixture.py). */
#include "attn/linformer.h"
#include "attn/spec.h"
#include "attn_kit.h"

/* Cases: p = {k, share}, max_len = n (>= T), M = 0, bidirectional. */
static void lin_opts(const kit_case *c, void *opts) {
    lc_attn_linformer_opts *o = opts;
    lc_attn_linformer.opts_init(o, c->H);
    o->k = c->p[0], o->share = c->p[1];
}

/* The inputs and parameters these cases have always had: E, F from param_init, times 4 (scores of order
 * 1 at small n). */
static uint64_t lin_seed(const kit_case *c) { return (uint64_t)(50 + c->T + 7 * c->p[0] + c->p[1]); }

static void lin_prepare(kit_problem *p) {
    const kit_case *c = &p->c;
    lc_attn_linformer.param_init(p->params, p->opts, c->H, c->D, c->max_len, lin_seed(c) + 1);
    for (size_t i = 0; i < p->params_n; i++) p->params[i] *= 4.0f;
}

/* ---------------------------------------------------------------- double reference */

/* kind layout [n][P][k] <-> natural [P][k][n] */
static void params_to_natural(const double *kind, int P, int K, int n, double *nat) {
    for (int p = 0; p < P; p++)
        for (int j = 0; j < K; j++)
            for (int s = 0; s < n; s++) nat[((size_t)p * K + j) * n + s] = kind[((size_t)s * P + p) * K + j];
}
static void natural_to_params(const double *nat, int P, int K, int n, double *kind) {
    for (int p = 0; p < P; p++)
        for (int j = 0; j < K; j++)
            for (int s = 0; s < n; s++) kind[((size_t)s * P + p) * K + j] = nat[((size_t)p * K + j) * n + s];
}

static size_t ix(const kit_case *c, int b, int t, int h, int d) { return (((size_t)b * c->T + t) * c->H + h) * c->D + d; }

/* Forward, and with backward also dq, dk, dv, dparams (gradients of sum(out * dout), written). */
static void lin_reference(kit_ref *r, const void *ctx, int backward) {
    const kit_case *c = &r->p->c;
    const lc_attn_linformer_opts *o = (const void *)r->p->opts;
    const int K = o->k, S = c->T, D = c->D, n = c->max_len, P = lc_attn_linformer_projections(o, c->H);
    const double scale = r->s.scale;
    (void)ctx;
    double *E_all = kit_calloc((size_t)P * K * n, sizeof(double)), *dE_all = kit_calloc((size_t)P * K * n, sizeof(double));
    params_to_natural(r->params, P, K, n, E_all);
    double *kp = kit_calloc((size_t)K * D, sizeof(double)), *vp = kit_calloc((size_t)K * D, sizeof(double));
    double *p = kit_calloc((size_t)S * K, sizeof(double)), *ds = kit_calloc((size_t)S * K, sizeof(double));
    double *dkp = kit_calloc((size_t)K * D, sizeof(double)), *dvp = kit_calloc((size_t)K * D, sizeof(double));
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            const double *E = E_all + (size_t)lc_attn_linformer_key_proj(o, h) * K * n;
            const double *F = E_all + (size_t)lc_attn_linformer_value_proj(o, h) * K * n;
            double *dE = dE_all + (size_t)lc_attn_linformer_key_proj(o, h) * K * n;
            double *dF = dE_all + (size_t)lc_attn_linformer_value_proj(o, h) * K * n;
            for (int j = 0; j < K; j++)
                for (int d = 0; d < D; d++) {
                    double a = 0, bb = 0;
                    for (int s = 0; s < S; s++) {
                        a += E[(size_t)j * n + s] * r->k[ix(c, b, s, h, d)];
                        bb += F[(size_t)j * n + s] * r->v[ix(c, b, s, h, d)];
                    }
                    kp[j * D + d] = a, vp[j * D + d] = bb;
                }
            for (int t = 0; t < c->T; t++) {
                double max = -INFINITY;
                for (int j = 0; j < K; j++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++) dot += r->q[ix(c, b, t, h, d)] * kp[j * D + d];
                    p[(size_t)t * K + j] = scale * dot;
                    max = fmax(max, scale * dot);
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
                    r->dq[ix(c, b, t, h, d)] = scale * acc;
                }
                for (int j = 0; j < K; j++)
                    for (int d = 0; d < D; d++) {
                        dkp[j * D + d] += scale * ds[(size_t)t * K + j] * r->q[ix(c, b, t, h, d)];
                        dvp[j * D + d] += p[(size_t)t * K + j] * r->dout[ix(c, b, t, h, d)];
                    }
            }
            for (int s = 0; s < S; s++)
                for (int d = 0; d < D; d++) {
                    double a = 0, bb = 0;
                    for (int j = 0; j < K; j++) a += E[(size_t)j * n + s] * dkp[j * D + d], bb += F[(size_t)j * n + s] * dvp[j * D + d];
                    r->dk[ix(c, b, s, h, d)] = a, r->dv[ix(c, b, s, h, d)] = bb;
                }
            for (int j = 0; j < K; j++)
                for (int s = 0; s < S; s++) {
                    double a = 0, bb = 0;
                    for (int d = 0; d < D; d++) a += dkp[j * D + d] * r->k[ix(c, b, s, h, d)], bb += dvp[j * D + d] * r->v[ix(c, b, s, h, d)];
                    dE[(size_t)j * n + s] += a;
                    dF[(size_t)j * n + s] += bb;
                }
        }
    if (backward) natural_to_params(dE_all, P, K, n, r->dparams);
    free(kp), free(vp), free(p), free(ds), free(dkp), free(dvp), free(E_all), free(dE_all);
}

/* Backward adds nothing to the parameter columns s >= T. */
static void lin_extra_check(const kit_problem *p, const char *label) {
    const lc_attn_linformer_opts *o = (const void *)p->opts;
    int untouched = 1;
    for (size_t i = (size_t)p->c.T * lc_attn_linformer_projections(o, p->c.H) * o->k; i < p->params_n; i++)
        untouched &= p->dparams[i] == p->dparams0[i];
    CHECK(untouched, "%s: dparams beyond column T changed", label);
}

static const kit_kind linformer = {.kind = &lc_attn_linformer, .opts = lin_opts, .reference = lin_reference,
                                   .prepare = lin_prepare, .extra_check = lin_extra_check, .seed_of = lin_seed};

/* B, H, T, M, D, causal, {k, share}, .max_len = n */
#define LIN(B, H, T, D, k, share, n) {B, H, T, 0, D, 0, {k, LC_LINFORMER_SHARE_##share}, .max_len = n}

TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {LIN(2, 2, 5, 3, 3, NONE, 7), LIN(2, 3, 4, 2, 6, HEADWISE, 4), LIN(1, 2, 6, 3, 4, KV, 8)};
    kit_check_reference_cases(&linformer, cases, 3);
}

TEST(fast_matches_reference) {
    const kit_case cases[] = {
        LIN(1, 1, 1, 16, 1, HEADWISE, 1),
        LIN(2, 3, 5, 3, 4, NONE, 9),
        LIN(2, 2, 37, 16, 8, HEADWISE, 64),
        LIN(1, 3, 20, 5, 32, KV, 20),       /* k > T */
        LIN(1, 2, 600, 16, 24, NONE, 700),  /* two blocks of query rows */
        LIN(2, 2, 530, 64, 64, HEADWISE, 530),
        LIN(3, 4, 65, 24, 16, KV, 100),
    };
    kit_check_fast_cases(&linformer, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 5e-6, 1e-5, 1e-6, .param_atol = 8e-6});
}

TEST(identity_projections_are_full_attention) {
    /* k = T = n, E = F = I: K' = K, V' = V, so linformer is full bidirectional attention, gradients too */
    const kit_case cases[] = {LIN(2, 3, 17, 8, 17, HEADWISE, 17), LIN(1, 2, 70, 16, 70, NONE, 70), LIN(1, 2, 9, 5, 9, KV, 9)};
    for (size_t ci = 0; ci < 3; ci++) {
        kit_problem *a = kit_problem_new(&linformer, &cases[ci], 2), *f = kit_problem_new(&kit_full, &cases[ci], 2);
        const int P = lc_attn_linformer_projections((const void *)a->opts, a->c.H), n = a->c.max_len, k = a->c.p[0];
        memset(a->params, 0, a->params_n * sizeof(float));
        for (int s = 0; s < n; s++)
            for (int p = 0; p < P; p++) a->params[((size_t)s * P + p) * k + s] = 1.0f;
        memcpy(f->qkv, a->qkv, a->qkv_n * sizeof(float)), memcpy(f->dout, a->dout, a->out_n * sizeof(float));
        kit_run(a), kit_run(f);
        kit_compare_runs(a, f, (kit_tol){1e-4, 1e-5, 1e-5, 1e-5}, 1, "vs full");
        kit_problem_free(a), kit_problem_free(f);
    }
}

static int all_visible(const void *ctx, int b, int h, int t, int s) {
    (void)ctx, (void)b, (void)h, (void)t, (void)s;
    return 1;
}

TEST(identity_reference_is_masked_reference_with_everything_visible) {
    kit_problem *p = kit_problem_new(&linformer, &(kit_case)LIN(2, 2, 6, 3, 6, NONE, 6), 2);
    kit_ref *r = kit_ref_new(p), *m = kit_ref_new(p);
    const int P = lc_attn_linformer_projections((const void *)p->opts, 2), n = 6, k = 6;
    memset(r->params, 0, r->np * sizeof(double));
    for (int s = 0; s < n; s++)
        for (int q = 0; q < P; q++) r->params[((size_t)s * P + q) * k + s] = 1.0;
    lin_reference(r, NULL, 1);
    lc_attn_masked_forward_ref(&m->s, all_visible, NULL, &m->t);
    lc_attn_masked_backward_ref(&m->s, all_visible, NULL, &m->t);
    CHECK_CLOSE("out vs masked reference", r->out, m->out, p->nq, 1e-12, 1e-12);
    CHECK_CLOSE("dq vs masked reference", r->dq, m->dq, p->nq, 1e-12, 1e-12);
    CHECK_CLOSE("dk vs masked reference", r->dk, m->dk, p->nq, 1e-12, 1e-12);
    CHECK_CLOSE("dv vs masked reference", r->dv, m->dv, p->nq, 1e-12, 1e-12);
    kit_ref_free(r), kit_ref_free(m);
    kit_problem_free(p);
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
    const kit_case c = LIN(1, 4, 8, 16, 32, NONE, 480);
    lc_attn_linformer_opts o;
    lin_opts(&c, &o);
    const size_t n = lc_attn_linformer.param_floats(&o, c.H, c.D, c.max_len);
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    lc_attn_linformer.param_init(a, &o, c.H, c.D, c.max_len, 42);
    lc_attn_linformer.param_init(b, &o, c.H, c.D, c.max_len, 42);
    lc_attn_linformer.param_init(d, &o, c.H, c.D, c.max_len, 43);
    const double bound = sqrt(3.0 / (c.p[0] + c.max_len));
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
    kit_check_determinism(&linformer, (kit_case)LIN(2, 3, 530, 24, 40, NONE, 600));
    kit_check_determinism(&linformer, (kit_case)LIN(3, 2, 70, 16, 16, KV, 70));
    /* shared projections, one product per sequence: 2 sequences are one task per thread at 1 and 2 threads
     * and products split by lc_gemm at 3 */
    kit_check_determinism(&linformer, (kit_case)LIN(2, 4, 530, 16, 40, HEADWISE, 600));
}

TEST(layerwise_sharing_accumulates_into_one_gradient) {
    /* Two "layers" given the same params/dparams: dparams ends as the sum of both layers' gradients. */
    const kit_case c = LIN(1, 2, 30, 8, 8, HEADWISE, 40);
    kit_case c2 = c;
    c2.T = 29; /* other inputs for the second layer, same parameters */
    c2.max_len = 40;
    kit_problem *a = kit_problem_new(&linformer, &c, 2), *b = kit_problem_new(&linformer, &c2, 2);
    memcpy(b->params, a->params, a->params_n * sizeof(float));
    float *sep = kit_calloc(a->params_n, sizeof(float));
    memset(a->dparams, 0, a->params_n * sizeof(float)), memset(b->dparams, 0, a->params_n * sizeof(float));
    kit_run(a), kit_run(b);
    for (size_t i = 0; i < a->params_n; i++) sep[i] = a->dparams[i] + b->dparams[i];
    memset(a->dparams, 0, a->params_n * sizeof(float));
    b->t.dparams = a->dparams; /* the aliasing the model does */
    kit_run(a), kit_run(b);
    CHECK_CLOSE("shared dparams = sum of the layers'", a->dparams, sep, a->params_n, 1e-5, 1e-6);
    b->t.dparams = b->dparams;
    free(sep);
    kit_problem_free(a), kit_problem_free(b);
}

/* got within rtol 2e-4 and atol 1e-5 of the largest |want| (sentinels and NaN excluded from the scale). */
static void close_to(const char *what, size_t ci, const float *got, const float *want, size_t n) {
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        if (want[i] != KIT_SENTINEL && fabs(want[i]) > scale) scale = fabs(want[i]);
    char label[64];
    snprintf(label, sizeof label, "case %zu %s", ci, what);
    CHECK_CLOSE(label, got, want, n, 2e-4, 1e-5 * scale);
}

TEST(keys_and_values_apart_match_side_by_side) {
    /* The kit's fused views put v right after k (share=kv then projects keys and values in one product);
     * with v and dv in a buffer of their own (a layer of several head groups) each has its own product.
     * Same results up to rounding, for kv and (always separate products) headwise. */
    const kit_case cases[] = {LIN(2, 3, 70, 16, 24, KV, 80), LIN(2, 2, 530, 8, 16, KV, 530),
                              LIN(2, 3, 70, 16, 24, HEADWISE, 80)};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        kit_problem *a = kit_problem_new(&linformer, &cases[ci], 2), *b = kit_problem_new(&linformer, &cases[ci], 2);
        const int B = a->c.B, T = a->c.T;
        const long HD = (long)a->c.H * a->c.D, row = HD + 3;
        memcpy(b->qkv, a->qkv, a->qkv_n * sizeof(float)), memcpy(b->dout, a->dout, a->out_n * sizeof(float));
        memcpy(b->params, a->params, a->params_n * sizeof(float));
        memcpy(b->dparams, a->dparams, a->params_n * sizeof(float));
        float *v = kit_calloc((size_t)B * T * row, sizeof(float)), *dv = kit_floats((size_t)B * T * row, KIT_SENTINEL);
        float *want = kit_calloc((size_t)B * T * HD, sizeof(float)), *got = kit_calloc((size_t)B * T * HD, sizeof(float));
        for (int bt = 0; bt < B * T; bt++) memcpy(v + bt * row, a->qkv + bt * a->row + 2 * HD, HD * sizeof(float));
        b->t.v = kit_view(v, T * row, row), b->t.dv = kit_view(dv, T * row, row);
        kit_run(a), kit_run(b);
        for (int bt = 0; bt < B * T; bt++) {
            memcpy(want + bt * HD, a->grad + bt * a->row + 2 * HD, HD * sizeof(float));
            memcpy(got + bt * HD, dv + bt * row, HD * sizeof(float));
        }
        /* within rounding: the two orders of summation differ by what the fast path's own error against
         * the double reference is allowed (fast_matches_reference: rtol 1e-4, atol 5e-6 of the values'
         * scale), twice */
        close_to("out", ci, b->out, a->out, a->out_n);
        close_to("lse", ci, b->lse, a->lse, a->nl);
        close_to("dv", ci, got, want, (size_t)B * T * HD);
        for (int bt = 0; bt < B * T; bt++) /* b wrote no v columns: take a's, so the whole buffers compare */
            memcpy(b->grad + bt * b->row + 2 * HD, a->grad + bt * a->row + 2 * HD, HD * sizeof(float));
        close_to("dq dk", ci, b->grad, a->grad, a->qkv_n);
        /* dE sums K dK'^T over heads, keys and values, and sequences: compared as accumulated */
        for (size_t i = 0; i < a->params_n; i++) a->dparams[i] -= a->dparams0[i], b->dparams[i] -= b->dparams0[i];
        close_to("dparams", ci, b->dparams, a->dparams, a->params_n);
        free(v), free(dv), free(want), free(got);
        kit_problem_free(a), kit_problem_free(b);
    }
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
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, NULL, err, sizeof err) == 0, "bidirectional accepted: %s", err);
    s.causal = 1;
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, NULL, err, sizeof err) == -1 && strstr(err, "linformer is bidirectional only"),
          "causal: %s", err);
    s.causal = 0, s.M = 5;
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, NULL, err, sizeof err) == -1 && strstr(err, "memory"), "M > 0: %s", err);
    s.M = 0, s.relpos = 1;
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, NULL, err, sizeof err) == -1, "relpos accepted");
    s.relpos = 0;
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, &g, err, sizeof err) == -1 && strstr(err, "global"), "global: %s", err);
    o.k = 0;
    CHECK(kit_kind_check(&lc_attn_linformer, &s, &o, NULL, err, sizeof err) == -1, "k = 0 passed check");

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
    lc_attn_linformer_opts o;
    lin_opts(&(kit_case)LIN(4, 8, 1024, 64, 256, HEADWISE, 65536), &o);
    const lc_attn_shape a = {4, 8, 1024, 0, 64, 0, 0.125f, 0, 0, 2}, b = {4, 8, 65536, 0, 64, 0, 0.125f, 0, 0, 2};
    const size_t wa = lc_attn_linformer.workspace_floats(&a, &o), wb = lc_attn_linformer.workspace_floats(&b, &o);
    CHECK(wa == wb, "workspace %zu at T=1024, %zu at T=65536", wa, wb);
    /* per thread two row blocks; per sequence K', V', dK', dV' of all its heads (B = 4, H = 8 here) */
    CHECK(wb <= (size_t)2 * (2 * 512 * 256 + 32) + (size_t)4 * 4 * (8 * 256 * 64 + 16), "workspace %zu floats", wb);
}

/* ---------------------------------------------------------------- PyTorch fixture */

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
    const int mode = strcmp(share, "none") == 0 ? LC_LINFORMER_SHARE_NONE
                     : strcmp(share, "kv") == 0 ? LC_LINFORMER_SHARE_KV : LC_LINFORMER_SHARE_HEADWISE;
    const kit_case c = {meta_int(f, prefix, "batch"), meta_int(f, prefix, "n_head"), meta_int(f, prefix, "seq_len"), 0,
                        meta_int(f, prefix, "head_dim"), 0, {meta_int(f, prefix, "k"), mode},
                        .max_len = meta_int(f, prefix, "max_len")};
    CHECK(c.B > 0 && c.H > 0 && c.T > 0 && c.D > 0 && c.p[0] > 0 && c.max_len >= c.T, "bad case metadata");
    if (!(c.B > 0 && c.H > 0 && c.T > 0 && c.D > 0 && c.p[0] > 0 && c.max_len >= c.T)) return;
    kit_problem *p = kit_problem_new(&linformer, &c, 2);
    const int P = lc_attn_linformer_projections((const void *)p->opts, c.H), K = c.p[0], n = c.max_len;
    const size_t nx = p->nq, ne = (size_t)P * K * n, most = nx > ne ? nx : ne;
    const long sx[4] = {c.B, c.T, c.H, c.D}, se[3] = {P, K, n}, sl[3] = {c.B, c.H, c.T}, one[1] = {1};
    float *buf = kit_calloc(most, sizeof(float));
    double *dbuf = kit_calloc(most, sizeof(double)), *got = kit_calloc(most, sizeof(double)), *kind = kit_calloc(ne, sizeof(double));
    const lc_view *inputs[4] = {&p->t.q, &p->t.k, &p->t.v, &p->t.dout};
    const char *names[4] = {"q", "k", "v", "dout"};
    for (int i = 0; i < 4; i++) {
        if (!kit_st_read(f, prefix, names[i], LC_DT_F32, 4, sx, buf)) goto done;
        kit_floats_to_view(buf, inputs[i], c.T, &p->s);
    }
    if (!kit_st_read(f, prefix, "E", LC_DT_F32, 3, se, buf) || !kit_st_read(f, prefix, "scale", LC_DT_F32, 1, one, &p->s.scale))
        goto done;
    kit_floats_to_d(buf, ne, dbuf);
    natural_to_params(dbuf, P, K, n, kind);
    for (size_t j = 0; j < ne; j++) p->params[j] = (float)kind[j];
    memset(p->dparams, 0, p->params_n * sizeof(float));
    kit_run(p);
    const struct {
        const char *name;
        int ndim;
        const long *shape;
        size_t n;
        const lc_view *view;
    } outs[5] = {{"out", 4, sx, nx, &p->t.out}, {"dq", 4, sx, nx, &p->t.dq}, {"dk", 4, sx, nx, &p->t.dk},
                 {"dv", 4, sx, nx, &p->t.dv}, {"lse", 3, sl, p->nl, NULL}};
    char label[96];
    snprintf(label, sizeof label, "fixture %s share=%s", prefix, share);
    for (int i = 0; i < 5; i++) {
        if (!kit_st_read(f, prefix, outs[i].name, LC_DT_F32, outs[i].ndim, outs[i].shape, buf)) continue;
        kit_floats_to_d(buf, outs[i].n, dbuf);
        if (outs[i].view) kit_view_to_d(outs[i].view, c.T, &p->s, got);
        else kit_floats_to_d(p->lse, p->nl, got);
        kit_compare(outs[i].name, label, got, dbuf, outs[i].n, 1e-4, 2e-6, 0, 1);
    }
    if (kit_st_read(f, prefix, "dE", LC_DT_F32, 3, se, buf)) {
        kit_floats_to_d(buf, ne, dbuf);
        kit_floats_to_d(p->dparams, ne, kind);
        params_to_natural(kind, P, K, n, got);
        kit_compare("dE", label, got, dbuf, ne, 1e-4, 4e-6, 0, 1);
    }
done:
    free(buf), free(dbuf), free(got), free(kind);
    kit_problem_free(p);
}

TEST(matches_pytorch_fixture) { kit_fixture_cases("linformer_attn.safetensors", NULL, check_fixture_case); }

int main(void) {
    lc_threads_use(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference);
    RUN(identity_projections_are_full_attention);
    RUN(identity_reference_is_masked_reference_with_everything_visible);
    RUN(sharing_modes_set_parameter_counts);
    RUN(init_is_xavier_uniform_and_seeded);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(layerwise_sharing_accumulates_into_one_gradient);
    RUN(keys_and_values_apart_match_side_by_side);
    RUN(bad_options_and_shapes_are_rejected);
    RUN(workspace_is_independent_of_length_beyond_a_block);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_linformer");
}
