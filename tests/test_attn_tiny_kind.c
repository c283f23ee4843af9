/* A new attention kind defined entirely in this file, the way docs/design.md says a kind is added:
 * "prev" (query at key position q sees keys q - p .. q, causal, memory rows allowed), written plainly,
 * registered with lc_attn_kind_register, tested with the kit (tests/attn_kit.h) like every built-in kind,
 * then used through a spec string in a small model. Also the kit's own test: deliberately broken
 * variants of the kind (a workspace overrun, scratch read before it is written, a gradient element left
 * unwritten, a wrong gradient) must each fail its checks. */
#include <fcntl.h>
#include <unistd.h>

#include "attn/spec.h"
#include "attn_kit.h"
#include "longctx.h"

/* ---------------------------------------------------------------- the kind */

typedef struct {
    int p; /* keys before the query's own, >= 0 */
} prev_opts;

/* Test switch: 0 the kind as it should be; 1..4 the broken variants of the kit's own test. */
enum { PREV_OK, PREV_OVERRUN, PREV_STALE_SCRATCH, PREV_UNWRITTEN, PREV_WRONG_DQ };
static int prev_defect;

static void prev_opts_init(void *opts, int H) {
    (void)H;
    ((prev_opts *)opts)->p = 2;
}

static int prev_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen);

/* One score row of p + 1 keys per thread. */
static size_t prev_workspace(const lc_attn_shape *s, const void *opts) {
    return (size_t)lc_attn_threads(s) * (((const prev_opts *)opts)->p + 1);
}

static float *row_of(const lc_view *v, int b, int t, int h, int D) { return v->p + (long)b * v->sb + (long)t * v->st + (long)h * D; }

/* Scores of query t against keys first .. q into sc; returns first. */
static int prev_scores(const lc_attn_shape *s, int P, const lc_attn_tensors *x, int b, int h, int t, float *sc) {
    const int q = s->M + t, first = q - P > 0 ? q - P : 0;
    const float *qr = row_of(&x->q, b, t, h, s->D);
    for (int j = first; j <= q; j++) {
        const float *kr = row_of(&x->k, b, j, h, s->D);
        float dot = 0;
        for (int d = 0; d < s->D; d++) dot += qr[d] * kr[d];
        sc[j - first] = s->scale * dot;
    }
    return first;
}

/* One task per (b, h): out and lse of its rows. */
static void prev_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *x, float *work) {
    const int P = ((const prev_opts *)opts)->p, D = s->D;
#pragma omp parallel for num_threads(lc_attn_threads(s)) schedule(static)
    for (int bh = 0; bh < s->B * s->H; bh++) {
        const int b = bh / s->H, h = bh % s->H;
        float *sc = work + (size_t)lc_thread_id() * (P + 1);
        if (prev_defect == PREV_OVERRUN) sc[(size_t)lc_attn_threads(s) * (P + 1) - (size_t)lc_thread_id() * (P + 1)] = 0;
        for (int t = 0; t < s->T; t++) {
            const int q = s->M + t, first = prev_scores(s, P, x, b, h, t, sc);
            float max = -INFINITY, sum = 0;
            for (int j = first; j <= q; j++) max = fmaxf(max, sc[j - first]);
            for (int j = first; j <= q; j++) sum += sc[j - first] = expf(sc[j - first] - max);
            float *o = row_of(&x->out, b, t, h, D);
            for (int d = 0; d < D; d++) o[d] = 0;
            for (int j = first; j <= q; j++) {
                const float *v = row_of(&x->v, b, j, h, D), w = sc[j - first] / sum;
                for (int d = 0; d < D; d++) o[d] += w * v[d];
            }
            x->lse[(size_t)bh * s->T + t] = max + logf(sum);
        }
    }
}

/* One task per (b, h): it owns dq of its rows and dk, dv of its head (all S rows), so no two tasks write
 * the same element. P = exp(score - lse), Delta = dout . out, dS = P (dout . v - Delta). */
static void prev_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *x, float *work) {
    const int P = ((const prev_opts *)opts)->p, D = s->D, S = s->M + s->T;
#pragma omp parallel for num_threads(lc_attn_threads(s)) schedule(static)
    for (int bh = 0; bh < s->B * s->H; bh++) {
        const int b = bh / s->H, h = bh % s->H;
        float *sc = work + (size_t)lc_thread_id() * (P + 1);
        const float stale = prev_defect == PREV_STALE_SCRATCH ? sc[P] : 0; /* read before any write */
        for (int j = 0; j < S; j++)
            for (int d = 0; d < D; d++) row_of(&x->dk, b, j, h, D)[d] = 0, row_of(&x->dv, b, j, h, D)[d] = 0;
        for (int t = 0; t < s->T; t++) {
            const int q = s->M + t, first = prev_scores(s, P, x, b, h, t, sc);
            const float *dout = row_of(&x->dout, b, t, h, D), *o = row_of(&x->out, b, t, h, D), *qr = row_of(&x->q, b, t, h, D);
            float *dq = row_of(&x->dq, b, t, h, D), delta = 0;
            for (int d = 0; d < D; d++) delta += dout[d] * o[d], dq[d] = 0 * stale;
            for (int j = first; j <= q; j++) {
                const float pr = expf(sc[j - first] - x->lse[(size_t)bh * s->T + t]);
                const float *v = row_of(&x->v, b, j, h, D), *kr = row_of(&x->k, b, j, h, D);
                float dp = 0;
                for (int d = 0; d < D; d++) dp += dout[d] * v[d];
                const float ds = pr * (dp - delta) * s->scale * (prev_defect == PREV_WRONG_DQ ? 1.01f : 1.0f);
                float *dk = row_of(&x->dk, b, j, h, D), *dv = row_of(&x->dv, b, j, h, D);
                for (int d = 0; d < D; d++) dq[d] += ds * kr[d], dk[d] += ds * qr[d], dv[d] += pr * dout[d];
            }
        }
    }
    if (prev_defect == PREV_UNWRITTEN && S > 0 && s->B * s->H > 0) row_of(&x->dv, 0, S - 1, 0, D)[0] = KIT_SENTINEL;
}

static const lc_attn_kind prev_kind = {
    .name = "prev",
    .options_help = "p=<keys before the query>",
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_MEMORY,
    .opts_size = sizeof(prev_opts),
    .opts_init = prev_opts_init,
    .opts_set = prev_opts_set,
    .workspace_floats = prev_workspace,
    .forward = prev_forward,
    .backward = prev_backward,
};

static int prev_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    (void)H;
    if (strcmp(key, "p") == 0) return lc_attn_opt_int(key, value, 0, 1 << 24, &((prev_opts *)opts)->p, err, errlen);
    return lc_attn_opt_unknown(&prev_kind, key, err, errlen);
}

/* ---------------------------------------------------------------- the kind in the kit */

static void prev_case_opts(const kit_case *c, void *opts) { ((prev_opts *)opts)->p = c->p[0]; }

static int prev_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_problem *p = ctx;
    const int q = p->s.M + t;
    (void)b, (void)h;
    return s <= q && s >= q - ((const prev_opts *)(const void *)p->opts)->p;
}

static const kit_kind prev = {.kind = &prev_kind, .opts = prev_case_opts, .visible = prev_visible};

TEST(registers_and_parses) {
    CHECK(lc_attn_kind_register(&prev_kind) == 0, "register: %s", lc_last_error());
    CHECK(lc_attn_kind_by_name("prev") == &prev_kind, "the table does not find prev");
    CHECK(lc_attn_kind_register(&prev_kind) != 0, "the same name registered twice");
    lc_attn_layer layer;
    char err[256];
    CHECK(lc_attn_spec_parse("2xfull+prev:p=3", 1, 4, &layer, err, sizeof err) == 0, "spec: %s", err);
    CHECK(layer.n_groups == 2 && layer.group[1].kind == &prev_kind && ((const prev_opts *)(const void *)layer.group[1].opts)->p == 3,
          "spec parsed wrong");
    CHECK(lc_attn_spec_parse("prev:q=1", 1, 4, &layer, err, sizeof err) != 0 && strstr(err, "p=<keys"), "unknown key: %s", err);
    CHECK(lc_attn_spec_parse("prev:p=-1", 1, 4, &layer, err, sizeof err) != 0, "p=-1 accepted");
}

/* B, H, T, M, D, causal, {p} */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {{1, 2, 5, 2, 3, 1, {2}}, {2, 1, 6, 0, 2, 1, {1}}, {1, 1, 4, 3, 3, 1, {0}}};
    kit_check_reference_cases(&prev, cases, 3);
}

TEST(fast_matches_reference) {
    const kit_case cases[] = {{1, 1, 1, 0, 16, 1, {2}},  {2, 3, 5, 7, 3, 1, {2}},  {1, 2, 65, 0, 24, 1, {5}},
                              {2, 2, 40, 70, 16, 1, {100}}, {1, 3, 33, 4, 8, 1, {0}}, {1, 1, 20, 3, 5, 1, {1}}};
    kit_check_fast_cases(&prev, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 2e-6});
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&prev, (kit_case){2, 3, 50, 10, 16, 1, {4}});
}

TEST(empty_segment_writes_zero_memory_gradients) { kit_check_empty_segment(&prev, (kit_case){2, 2, 0, 5, 8, 1, {2}}); }

TEST(shapes_outside_the_caps_are_refused) {
    char err[256];
    const prev_opts o = {2};
    lc_attn_shape s = {1, 2, 8, 3, 4, 1, 0.5f, 0, 0, 1};
    CHECK(kit_kind_check(&prev_kind, &s, &o, NULL, err, sizeof err) == 0, "causal with memory refused: %s", err);
    s.causal = 0;
    CHECK(kit_kind_check(&prev_kind, &s, &o, NULL, err, sizeof err) != 0 && strstr(err, "prev"), "bidirectional: %s", err);
    s.causal = 1, s.relpos = 1;
    CHECK(kit_kind_check(&prev_kind, &s, &o, NULL, err, sizeof err) != 0, "relative positions accepted");
    s.relpos = 0;
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1;
    CHECK(kit_kind_check(&prev_kind, &s, &o, &g, err, sizeof err) != 0, "global tokens accepted");
}

/* ---------------------------------------------------------------- the kind in a model */

enum { MB = 2, MT = 24 };

static lc_model *model_with(const char *spec) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA, c.seq_len = MT, c.mem_len = 0, c.dropout = 0;
    snprintf(c.attn, sizeof c.attn, "%s", spec);
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, MB, 7, &m) == LC_OK, "%s: %s", spec, lc_last_error());
    return m;
}

/* Losses of n training steps on one batch. */
static void train_losses(lc_model *m, int n, double *loss) {
    int tok[MB * MT], tgt[MB * MT];
    for (int i = 0; i < MB * MT; i++) tok[i] = (i * 37 + 11) % 256, tgt[i] = (i * 53 + 5) % 256;
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = n, o.warmup = 0, o.lr = 3e-3f;
    for (int i = 0; i < n; i++) CHECK(lc_train_step(m, &o, tok, tgt, MB, MT, &loss[i]) == LC_OK, "%s", lc_last_error());
}

TEST(trains_in_a_model_through_the_spec_string) {
    /* prev covering every key is full attention: the same losses, before and after steps */
    lc_model *a = model_with("prev:p=1000"), *f = model_with("full"), *m = model_with("2xfull+2xprev:p=2");
    if (!a || !f || !m) goto done;
    double la[3], lf[3], lm[20];
    train_losses(a, 3, la), train_losses(f, 3, lf);
    for (int i = 0; i < 3; i++) CHECK(fabs(la[i] - lf[i]) < 1e-4 * fabs(lf[i]), "step %d: prev %.9g, full %.9g", i, la[i], lf[i]);
    train_losses(m, 20, lm);
    CHECK(isfinite(lm[19]) && lm[19] < lm[0] - 0.5, "mixed heads did not learn: %.4f -> %.4f", lm[0], lm[19]);
    printf("  full vs prev:p=1000 after 3 steps %.9g %.9g; 2xfull+2xprev:p=2 %.4f -> %.4f in 20 steps\n", lf[2], la[2], lm[0],
           lm[19]);
done:
    lc_model_free(a), lc_model_free(f), lc_model_free(m);
}

/* ---------------------------------------------------------------- the kit's own test */

/* 1 when the kit's checks of one case fail (their messages go to /dev/null). */
static int kit_finds_fault(int defect, kit_case c) {
    fflush(stdout);
    const int saved = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1), close(null);
    const int failed_before = harness_current_failed;
    prev_defect = defect;
    const int ok = kit_check_fast(&prev, c, (kit_tol){1e-4, 2e-6}, 0);
    prev_defect = PREV_OK;
    harness_current_failed = failed_before;
    fflush(stdout);
    dup2(saved, 1), close(saved);
    return !ok;
}

TEST(kit_finds_broken_kinds) {
    const kit_case c = {2, 2, 20, 3, 8, 1, {3}};
    CHECK(!kit_finds_fault(PREV_OK, c), "the sound kind fails");
#ifndef __SANITIZE_ADDRESS__ /* ASan stops the program at the overrun itself */
    CHECK(kit_finds_fault(PREV_OVERRUN, c), "a write past the workspace went unnoticed");
#endif
    CHECK(kit_finds_fault(PREV_STALE_SCRATCH, c), "a read of scratch not written in the pass went unnoticed");
    CHECK(kit_finds_fault(PREV_UNWRITTEN, c), "an unwritten gradient element went unnoticed");
    CHECK(kit_finds_fault(PREV_WRONG_DQ, c), "a gradient 1%% off went unnoticed");
}

int main(void) {
    lc_threads_use(2);
    RUN(registers_and_parses);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(shapes_outside_the_caps_are_refused);
    RUN(trains_in_a_model_through_the_spec_string);
    RUN(kit_finds_broken_kinds);
    return test_summary("test_attn_tiny_kind");
}
