/* Tests of global tokens (Longformer) in the window attention kind (window.h) on the test kit
 * (tests/attn_kit.h). The kit's double reference composes them from the shared masked reference:
 * ordinary rows with a mask of band plus global columns on (q, k, v), global rows with a causal or full
 * mask on (qg, kg, vg), each with dout zeroed on the other rows; it is checked against finite
 * differences. The fast fp32 passes against it (causal and bidirectional, dilated heads, memory, many
 * globals, globals inside and outside the band, no globals, large scores); determinism across repeats and
 * thread counts; the check accepting and rejecting global positions; the workspace; parity with the
 * PyTorch (Hugging Face style) fixture tests/fixtures/longformer_attn.safetensors
 * (tests/reference/make_longformer_fixture.py). */
#include "attn_kit.h"

/* B, H, T, M, D, causal, {w, dilated}, then the global positions (n < 0: every -n-th) */
#define GLOBALS(n, ...) .global = 1, .n_global = (n), .pos = {__VA_ARGS__}

TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {1, 3, 7, 0, 3, 0, {1, 1}, GLOBALS(2, 0, 4)},
        {1, 3, 7, 2, 2, 1, {1, 1}, GLOBALS(2, 0, 5)},
        {2, 1, 6, 0, 3, 1, {2, 0}, GLOBALS(3, 0, 1, 5)},
        {1, 2, 6, 3, 2, 0, {1, 1}, GLOBALS(1, 3)},
    };
    kit_check_reference_cases(&kit_window, cases, sizeof cases / sizeof cases[0]);
}

static const kit_tol tol = {1e-5, 1e-6};

/* Bidirectional, then causal. */
static const kit_case CASES[] = {
    {1, 1, 1, 0, 16, 0, {1, 0}, GLOBALS(1, 0)},
    {2, 3, 13, 0, 16, 0, {2, 0}, GLOBALS(2, 0, 7)},
    {1, 3, 37, 5, 3, 0, {3, 1}, GLOBALS(3, 0, 2, 36)},
    {2, 3, 130, 0, 64, 0, {16, 1}, GLOBALS(4, 0, 9, 64, 129)},
    {1, 3, 200, 7, 16, 0, {5, 1}, GLOBALS(-2)}, /* 96 globals: more than one chunk of 64 extra columns */
    {1, 2, 70, 70, 24, 0, {100, 0}, GLOBALS(2, 0, 69)}, /* every global inside every band */
    {1, 3, 20, 0, 8, 0, {2, 1}, GLOBALS(0)},            /* n = 0 */
    {1, 1, 1, 0, 16, 1, {1, 0}, GLOBALS(1, 0)},
    {2, 3, 11, 0, 16, 1, {3, 0}, GLOBALS(2, 0, 6)},
    {1, 3, 37, 5, 3, 1, {3, 1}, GLOBALS(3, 0, 2, 36)},
    {2, 3, 130, 70, 64, 1, {16, 1}, GLOBALS(4, 0, 9, 64, 129)},
    {1, 3, 200, 0, 16, 1, {5, 1}, GLOBALS(-2)},
    {1, 2, 70, 3, 24, 1, {100, 0}, GLOBALS(2, 0, 69)},
    {1, 3, 65, 7, 16, 1, {64, 0}, GLOBALS(5, 0, 1, 2, 3, 64)},
    /* a list made for longer sequences (a short last segment, a short prompt): positions >= T are not
     * global in this call */
    {2, 3, 20, 0, 8, 1, {2, 1}, GLOBALS(3, 0, 15, 30)},
    {1, 2, 5, 3, 8, 1, {2, 0}, GLOBALS(2, 25, 40)},
};

static void check_cases(int causal) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        if (CASES[i].causal == causal) kit_check_fast(&kit_window, CASES[i], tol, 1);
}

TEST(fast_matches_reference_bidirectional) { check_cases(0); }

TEST(fast_matches_reference_causal) { check_cases(1); }

TEST(fast_is_stable_for_large_scores) {
    const kit_case cases[] = {{1, 3, 130, 7, 16, 0, {8, 1}, GLOBALS(3, 0, 50, 100), .scale = 1, .input_mul = 3},
                              {1, 3, 130, 7, 16, 1, {8, 1}, GLOBALS(3, 0, 50, 100), .scale = 1, .input_mul = 3}};
    kit_check_fast_cases(&kit_window, cases, 2, (kit_tol){1e-3, 3e-5});
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&kit_window, (kit_case){2, 3, 150, 70, 24, 1, {8, 1}, GLOBALS(-7)});
    kit_check_determinism(&kit_window, (kit_case){1, 3, 200, 7, 16, 0, {3, 1}, GLOBALS(4, 0, 3, 100, 199)});
}

TEST(check_accepts_and_rejects_global_positions) {
    kit_problem *p = kit_problem_new(&kit_window, &(kit_case){1, 2, 10, 3, 8, 1, {2, 1}}, 2);
    const lc_attn_shape s = p->s;
    char err[256];
    const int good[3] = {0, 4, 9}, beyond[2] = {0, 10}, negative[2] = {-1, 3}, unsorted[2] = {5, 2}, repeated[2] = {4, 4};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 3, g.pos = good;
    CHECK(kit_kind_check(&lc_attn_window, &s, p->opts, &g, err, sizeof err) == 0, "valid positions refused: %s", err);
    lc_attn_shape bi = s;
    bi.causal = 0;
    CHECK(kit_kind_check(&lc_attn_window, &bi, p->opts, &g, err, sizeof err) == 0, "bidirectional refused: %s", err);
    g.pos = NULL; /* the spec parser's probe: only the count */
    CHECK(kit_kind_check(&lc_attn_window, &s, p->opts, &g, err, sizeof err) == 0, "probe refused: %s", err);
    /* one list serves every length: positions >= T, or more globals than positions, are simply not global
     * in a shorter call */
    g.n = 2, g.pos = beyond;
    CHECK(kit_kind_check(&lc_attn_window, &s, p->opts, &g, err, sizeof err) == 0, "position 10 of T = 10 refused: %s", err);
    g.n = 11, g.pos = NULL;
    CHECK(kit_kind_check(&lc_attn_window, &s, p->opts, &g, err, sizeof err) == 0, "11 globals at T = 10 refused: %s", err);
    const int *bad[3] = {negative, unsorted, repeated};
    for (int i = 0; i < 3; i++) {
        g.n = 2, g.pos = bad[i];
        err[0] = 0;
        CHECK(kit_kind_check(&lc_attn_window, &s, p->opts, &g, err, sizeof err) != 0, "bad positions %d, %d accepted",
              bad[i][0], bad[i][1]);
        CHECK(strstr(err, "window: global") != NULL, "message: %s", err);
    }
    g.n = 2, g.pos = good;
    lc_attn_shape rel = s;
    rel.relpos = 1;
    CHECK(kit_kind_check(&lc_attn_window, &rel, p->opts, &g, err, sizeof err) != 0,
          "globals with relative positions accepted");
    CHECK(kit_kind_check(&lc_attn_window, &rel, p->opts, NULL, err, sizeof err) == 0,
          "dilated relative positions refused: %s", err);
    kit_problem_free(p);
}

TEST(workspace_does_not_grow_with_globals) {
    /* The global passes need a fixed per-thread slot: a window as small as w = 1 at D = 256 still fits. */
    const kit_case c = {1, 2, 300, 0, 256, 0, {1, 0}, GLOBALS(-3)};
    kit_problem *p = kit_problem_new(&kit_window, &c, 3);
    CHECK(p->work_n >= lc_attn_window_global_workspace(&p->s), "workspace too small");
    kit_problem_free(p);
    kit_check_fast(&kit_window, c, tol, 1);
}

/* ---------------------------------------------------------------- PyTorch fixture */

/* Case "bi." or "causal.": PyTorch's float64 results (stored as F32) against the fast path and the
 * double reference. */
static void check_fixture_case(lc_st_file *f, const char *prefix) {
    char key[64];
    snprintf(key, sizeof key, "%sq", prefix);
    const lc_st_tensor *qt = lc_st_find(f, key);
    snprintf(key, sizeof key, "%spos", prefix);
    const lc_st_tensor *pt = lc_st_find(f, key);
    CHECK(qt && qt->ndim == 4 && pt && pt->ndim == 1 && pt->shape[0] <= KIT_MAX_GLOBAL, "%s: no q or positions (%s)",
          lc_st_path(f), prefix);
    if (!qt || qt->ndim != 4 || !pt || pt->ndim != 1 || pt->shape[0] > KIT_MAX_GLOBAL) return;
    kit_case c = {(int)qt->shape[0], (int)qt->shape[2], (int)qt->shape[1], 0, (int)qt->shape[3], 0, {0},
                  GLOBALS((int)pt->shape[0])};
    const long one[1] = {1}, sn[1] = {c.n_global};
    if (!kit_st_read(f, prefix, "pos", LC_DT_I32, 1, sn, c.pos) || !kit_st_read(f, prefix, "w", LC_DT_I32, 1, one, &c.p[0]) ||
        !kit_st_read(f, prefix, "causal", LC_DT_I32, 1, one, &c.causal) ||
        !kit_st_read(f, prefix, "scale", LC_DT_F32, 1, one, &c.scale))
        return;
    kit_problem *p = kit_problem_new(&kit_window, &c, 2);
    const size_t nq = p->nq, nl = p->nl, ng = p->ng;
    const long sq[4] = {c.B, c.T, c.H, c.D}, sl[3] = {c.B, c.H, c.T}, sg[3] = {c.B, c.H, c.n_global};
    float *buf = kit_calloc(nq, sizeof(float));
    double *want = kit_calloc(nq, sizeof(double)), *got = kit_calloc(nq, sizeof(double));
    const char *in_names[7] = {"q", "k", "v", "qg", "kg", "vg", "dout"};
    const lc_view *in_views[7] = {&p->t.q, &p->t.k, &p->t.v, &p->global.qg, &p->global.kg, &p->global.vg, &p->t.dout};
    for (int i = 0; i < 7; i++) {
        if (!kit_st_read(f, prefix, in_names[i], LC_DT_F32, 4, sq, buf)) goto done;
        kit_floats_to_view(buf, in_views[i], c.T, &p->s);
    }
    kit_run(p);
    kit_ref *r = kit_ref_new(p);
    kit_reference(r, p, 1);
    char label[96];
    snprintf(label, sizeof label, "fixture %s B%d H%d T%d D%d w%d n%d", prefix, c.B, c.H, c.T, c.D, c.p[0], c.n_global);
    const struct {
        const char *name;
        const lc_view *v;
        const double *ref;
    } outs[7] = {
        {"out", &p->t.out, r->out},        {"dq", &p->t.dq, r->dq},           {"dk", &p->t.dk, r->dk},
        {"dv", &p->t.dv, r->dv},           {"dqg", &p->global.dqg, r->dqg}, {"dkg", &p->global.dkg, r->dkg},
        {"dvg", &p->global.dvg, r->dvg},
    };
    for (int i = 0; i < 7; i++) {
        if (!kit_st_read(f, prefix, outs[i].name, LC_DT_F32, 4, sq, buf)) continue;
        kit_floats_to_d(buf, nq, want);
        kit_view_to_d(outs[i].v, c.T, &p->s, got);
        char what[64];
        snprintf(what, sizeof what, "%s fast", outs[i].name);
        kit_compare(what, label, got, want, nq, 1e-5, 1e-6, 0, 1);
        /* the double reference: PyTorch's float64 values rounded to float32, so about 6e-8 relative */
        snprintf(what, sizeof what, "%s reference", outs[i].name);
        kit_compare(what, label, outs[i].ref, want, nq, 2e-7, 1e-8, 0, 1);
    }
    if (kit_st_read(f, prefix, "lse", LC_DT_F32, 3, sl, buf)) { /* +inf on global rows, as the fast path */
        int inf_ok = 1;
        for (size_t i = 0; i < nl; i++) {
            inf_ok &= isinf(buf[i]) == isinf(p->lse[i]);
            want[i] = isinf(buf[i]) ? 0 : buf[i], got[i] = isinf(p->lse[i]) ? 0 : p->lse[i];
        }
        CHECK(inf_ok, "%s: lse of global rows must be +inf in both", label);
        kit_compare("lse fast", label, got, want, nl, 1e-6, 1e-6, 0, 1);
    }
    if (kit_st_read(f, prefix, "glse", LC_DT_F32, 3, sg, buf)) {
        kit_floats_to_d(buf, ng, want);
        kit_floats_to_d(p->glse, ng, got);
        kit_compare("global lse fast", label, got, want, ng, 1e-6, 1e-6, 0, 1);
    }
    kit_ref_free(r);
done:
    free(buf), free(want), free(got);
    kit_problem_free(p);
}

TEST(matches_pytorch_fixture) { kit_fixture_cases("longformer_attn.safetensors", "bi.,causal.", check_fixture_case); }

int main(void) {
    lc_threads_use(2);
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
