/* Tests of the compressed attention kind (raw local window + average-pooled far keys and values) on the
 * test kit (tests/attn_kit.h). The generic masked reference cannot express pooled keys, so this file gives
 * the kit its own slow reference in double: it materialises the pooled keys/values, builds the dense
 * [T x (nb + S)] score matrix over [pooled columns | raw keys] with the mask written straight from the
 * definition, and differentiates it by hand (the pooling's gradient spread back over each block). The kit
 * checks that reference against central finite differences, and the fast fp32 kind against it over causal
 * and bidirectional shapes, memories, S not a multiple of s, w >= S, s = 1, odd D and large scores; against
 * the full kind where the two coincide (s = 1, w >= S); for bit-identical results across repeats and
 * thread counts; unseen keys. Here too: the pattern's counts, option errors and the workspace bound. */
#include "attn/compressed.h"
#include "attn/spec.h"
#include "attn_kit.h"

/* ---------------------------------------------------------------- the pattern, from the definition */

/* Raw key `key` for the query at key position p. */
static int raw_visible(int causal, long w, long p, long key) {
    return causal ? key >= p - w && key <= p : labs(key - p) <= w;
}

/* Pooled block j (positions j s .. min((j+1) s, S) - 1) for the query at key position p. */
static int pooled_visible(int causal, long w, long s, long S, long p, long j) {
    if (causal) return (j + 1) * s - 1 < p - w;
    const long first = j * s, last = ((j + 1) * s < S ? (j + 1) * s : S) - 1;
    return last < p - w || first > p + w; /* no overlap with [p - w, p + w] */
}

/* ---------------------------------------------------------------- double reference */

/* Contiguous [B, rows, H, D]: element (b, r, h, d). */
static size_t at_d(const lc_attn_shape *s, int rows, int b, int r, int h, int d) {
    return (((size_t)b * rows + r) * s->H + h) * s->D + d;
}

/* One (b, h) of the reference: the nb + S columns (pooled blocks, then raw keys), their keys and values
 * [C][D], and the dense score matrix [T][C] with -inf where the mask hides a column. */
typedef struct {
    int T, C, nb, D;
    double *kc, *vc, *score;
} ref_head;

static ref_head ref_head_build(const kit_ref *p, int b, int h) {
    const lc_attn_shape *s = &p->s;
    const lc_attn_compressed_opts *o = (const void *)p->p->opts;
    const int S = s->M + s->T, D = s->D, sw = o->s, nb = (S + sw - 1) / sw;
    ref_head r = {s->T, nb + S, nb, D, NULL, NULL, NULL};
    r.kc = kit_calloc((size_t)r.C * D, sizeof(double));
    r.vc = kit_calloc((size_t)r.C * D, sizeof(double));
    r.score = kit_calloc((size_t)r.T * r.C, sizeof(double));
    for (int j = 0; j < nb; j++) {
        const int first = j * sw, last = (j + 1) * sw < S ? (j + 1) * sw : S;
        for (int key = first; key < last; key++)
            for (int d = 0; d < D; d++) {
                r.kc[(size_t)j * D + d] += p->k[at_d(s, S, b, key, h, d)] / (last - first);
                r.vc[(size_t)j * D + d] += p->v[at_d(s, S, b, key, h, d)] / (last - first);
            }
    }
    for (int key = 0; key < S; key++)
        for (int d = 0; d < D; d++) {
            r.kc[(size_t)(nb + key) * D + d] = p->k[at_d(s, S, b, key, h, d)];
            r.vc[(size_t)(nb + key) * D + d] = p->v[at_d(s, S, b, key, h, d)];
        }
    for (int t = 0; t < s->T; t++) {
        const long pos = (long)s->M + t;
        for (int c = 0; c < r.C; c++) {
            const int vis = c < nb ? pooled_visible(s->causal, o->w, sw, S, pos, c) : raw_visible(s->causal, o->w, pos, c - nb);
            double dot = 0;
            for (int d = 0; d < D; d++) dot += p->q[at_d(s, s->T, b, t, h, d)] * r.kc[(size_t)c * D + d];
            r.score[(size_t)t * r.C + c] = vis ? s->scale * dot : -INFINITY;
        }
    }
    return r;
}

static void ref_head_free(ref_head *r) { free(r->kc), free(r->vc), free(r->score); }

/* Softmax of score row t into prob (C values); returns the row's log-sum-exp. */
static double ref_softmax_row(const ref_head *r, int t, double *prob) {
    const double *sc = r->score + (size_t)t * r->C;
    double max = -INFINITY, sum = 0;
    for (int c = 0; c < r->C; c++) max = sc[c] > max ? sc[c] : max;
    for (int c = 0; c < r->C; c++) sum += prob[c] = exp(sc[c] - max);
    for (int c = 0; c < r->C; c++) prob[c] /= sum;
    return max + log(sum);
}

/* out and lse; with backward also dq, dk, dv (all S rows) for the loss sum(out * dout), by hand:
 *   P = softmax(score), dP_c = dout . v_c, dS = P (dP - sum_c P_c dP_c),
 *   dq = scale sum_c dS_c k_c, dk_c = scale sum_t dS_tc q_t, dv_c = sum_t P_tc dout_t per column,
 * then each pooled column's gradient is divided by its block size and added to every key of the block. */
static void compressed_reference(kit_ref *p, const void *ctx, int backward) {
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T, D = s->D, sw = ((const lc_attn_compressed_opts *)(const void *)p->p->opts)->s;
    (void)ctx;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++) {
            ref_head r = ref_head_build(p, b, h);
            double *prob = kit_calloc((size_t)r.C, sizeof(double)), *dp = kit_calloc((size_t)r.C, sizeof(double));
            double *dkc = kit_calloc((size_t)r.C * D, sizeof(double)), *dvc = kit_calloc((size_t)r.C * D, sizeof(double));
            for (int t = 0; t < s->T; t++) {
                p->lse[((size_t)b * s->H + h) * s->T + t] = ref_softmax_row(&r, t, prob);
                const double *q = p->q + at_d(s, s->T, b, t, h, 0), *dout = p->dout + at_d(s, s->T, b, t, h, 0);
                double *out = p->out + at_d(s, s->T, b, t, h, 0), *dq = p->dq + at_d(s, s->T, b, t, h, 0), delta = 0;
                for (int d = 0; d < D; d++) {
                    out[d] = 0, dq[d] = 0;
                    for (int c = 0; c < r.C; c++) out[d] += prob[c] * r.vc[(size_t)c * D + d];
                }
                if (!backward) continue;
                for (int c = 0; c < r.C; c++) {
                    dp[c] = 0;
                    for (int d = 0; d < D; d++) dp[c] += dout[d] * r.vc[(size_t)c * D + d];
                    delta += prob[c] * dp[c];
                }
                for (int c = 0; c < r.C; c++) {
                    const double ds = prob[c] * (dp[c] - delta);
                    for (int d = 0; d < D; d++) {
                        dq[d] += s->scale * ds * r.kc[(size_t)c * D + d];
                        dkc[(size_t)c * D + d] += s->scale * ds * q[d];
                        dvc[(size_t)c * D + d] += prob[c] * dout[d];
                    }
                }
            }
            for (int key = 0; backward && key < S; key++) {
                const int j = key / sw, n = ((j + 1) * sw < S ? (j + 1) * sw : S) - j * sw;
                for (int d = 0; d < D; d++) {
                    p->dk[at_d(s, S, b, key, h, d)] = dkc[(size_t)(r.nb + key) * D + d] + dkc[(size_t)j * D + d] / n;
                    p->dv[at_d(s, S, b, key, h, d)] = dvc[(size_t)(r.nb + key) * D + d] + dvc[(size_t)j * D + d] / n;
                }
            }
            free(prob), free(dp), free(dkc), free(dvc);
            ref_head_free(&r);
        }
}

/* p[0] = w raw keys per side, p[1] = s pooling stride */
static void compressed_opts(const kit_case *c, void *opts) {
    lc_attn_compressed_opts *o = opts;
    o->w = c->p[0], o->s = c->p[1];
}

static const kit_kind compressed = {.kind = &lc_attn_compressed, .opts = compressed_opts,
                                    .reference = compressed_reference};

/* B, H, T, M, D, causal, {w, s} */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {1, 2, 9, 0, 3, 1, {1, 2}},  {1, 2, 9, 0, 3, 0, {1, 2}},  {2, 1, 8, 3, 2, 1, {2, 3}}, {2, 1, 8, 3, 2, 0, {1, 3}},
        {1, 1, 7, 4, 3, 0, {20, 2}}, {1, 1, 10, 2, 2, 1, {1, 1}},
    };
    kit_check_reference_cases(&compressed, cases, sizeof cases / sizeof cases[0]);
}

/* The reference's mask, counted: causal rows see w + 1 raw keys (fewer near the start) and the complete
 * blocks before them; checked on one shape against hand-derived counts so the definition is pinned. */
TEST(reference_pattern_counts) {
    /* S = 20, s = 4 (5 blocks), w = 3, causal, M = 0: query p sees raw max(0, p-3)..p and blocks j with
     * 4j + 3 < p - 3, i.e. floor((p - 3) / 4) blocks for p > 3 */
    int ok = 1;
    for (long p = 0; p < 20; p++) {
        int raw = 0, pooled = 0;
        for (long k = 0; k < 20; k++) raw += raw_visible(1, 3, p, k);
        for (long j = 0; j < 5; j++) pooled += pooled_visible(1, 3, 4, 20, p, j);
        ok &= raw == (p < 3 ? p + 1 : 4) && pooled == (p > 3 ? (p - 3) / 4 : 0);
    }
    CHECK(ok, "causal counts");
    /* bidirectional, S = 18 (blocks of 4, last one of 2), w = 2, query p = 9: raw 7..11, blocks 0 (0..3),
     * 1 (4..7) overlaps 7, 2 (8..11) overlaps, 3 (12..15), 4 (16..17): visible 0, 3, 4 */
    const int want[5] = {1, 0, 0, 1, 1};
    for (long j = 0; j < 5; j++) CHECK(pooled_visible(0, 2, 4, 18, 9, j) == want[j], "block %ld", j);
}

/* Each shape runs causal and bidirectional. */
static const kit_case SHAPES[] = {
    {1, 1, 1, 0, 16, 0, {1, 1}},    /* one query */
    {2, 3, 37, 0, 16, 0, {4, 3}},   /* S = 37 not a multiple of s */
    {1, 2, 100, 23, 64, 0, {8, 7}}, /* memory, S = 123 */
    {2, 2, 130, 70, 3, 0, {16, 16}}, /* odd D, S = 200 (last block of 8) */
    {1, 2, 64, 0, 64, 0, {100, 4}}, /* w >= S: no pooled columns */
    {1, 2, 40, 9, 64, 0, {49, 5}},  /* w = S: no pooled columns */
    {1, 3, 50, 13, 24, 0, {5, 1}},  /* s = 1: pooled keys are the raw keys */
    {1, 1, 200, 0, 32, 0, {1, 64}}, /* w = 1, large s, partial last block */
    {1, 2, 5, 70, 16, 0, {3, 8}},   /* memory much longer than the segment */
    {2, 1, 97, 31, 20, 0, {64, 16}}, /* the default options */
    {1, 2, 80, 5, 17, 0, {2, 200}}, /* s >= S: one (partial) block */
};

static const kit_tol tol = {1e-5, 1e-6, 1e-5};

TEST(fast_matches_reference_causal) {
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        kit_case c = SHAPES[i];
        c.causal = 1;
        kit_check_fast(&compressed, c, tol, 1);
    }
}

TEST(fast_matches_reference_bidirectional) {
    kit_check_fast_cases(&compressed, SHAPES, sizeof SHAPES / sizeof SHAPES[0], tol);
}

TEST(fast_is_stable_for_large_scores) {
    const kit_case cases[] = {{1, 2, 130, 70, 16, 0, {8, 4}, .scale = 1, .input_mul = 3},
                              {1, 2, 130, 7, 16, 1, {8, 4}, .scale = 1, .input_mul = 3}};
    kit_check_fast_cases(&compressed, cases, 2, (kit_tol){1e-3, 3e-5, 1e-3});
}

/* s = 1 (every pooled column is one raw key, so the columns cover every visible key exactly once) and
 * w >= S (no pooled columns) are both full attention. */
TEST(s1_and_wide_windows_equal_the_full_kind) {
    const kit_case cases[] = {
        {1, 2, 130, 70, 64, 1, {3, 1}},  {1, 2, 130, 70, 64, 0, {3, 1}},   {2, 1, 65, 0, 16, 1, {17, 1}},
        {2, 1, 65, 0, 16, 0, {17, 1}},   {1, 2, 130, 70, 64, 1, {200, 16}}, {1, 2, 130, 70, 64, 0, {199, 16}},
        {2, 3, 65, 0, 3, 1, {1000, 7}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        kit_check_same(&compressed, &kit_full, cases[i], (kit_tol){1e-5, 1e-5, 1e-5, 1e-5}, 1);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&compressed, (kit_case){2, 3, 130, 70, 24, 1, {8, 5}});
    kit_check_determinism(&compressed, (kit_case){1, 3, 200, 7, 16, 0, {3, 16}});
}

TEST(unseen_keys_get_zero_gradients) { kit_check_empty_segment(&compressed, (kit_case){2, 2, 0, 21, 24, 1, {3, 4}}); }

static int contains(const char *s, const char *part) { return strstr(s, part) != NULL; }

TEST(options_parse_and_bad_options_give_clear_errors) {
    const lc_attn_kind *k = lc_attn_kind_by_name("compressed");
    CHECK(k == &lc_attn_compressed, "kind table lookup");
    CHECK(k->forward == lc_attn_compressed_forward && k->backward == lc_attn_compressed_backward &&
              k->workspace_floats == lc_attn_compressed_workspace,
          "table row points elsewhere");
    CHECK(k->opts_size <= LC_ATTN_OPTS_BYTES, "options too large");
    lc_attn_compressed_opts o;
    char err[256] = "";
    k->opts_init(&o, 4);
    CHECK(o.w == 64 && o.s == 16, "defaults w=%d s=%d", o.w, o.s);
    CHECK(k->opts_set(&o, 4, "w", "12", err, sizeof err) == 0 && o.w == 12, "w=12");
    CHECK(k->opts_set(&o, 4, "s", "5", err, sizeof err) == 0 && o.s == 5, "s=5");

    const struct {
        const char *key, *value, *want;
    } bad[] = {{"w", "0", "option w=0"}, {"s", "0", "option s=0"}, {"w", "-3", "option w=-3"},
               {"s", "x", "option s=x"}, {"w", "", "option w="},    {"stride", "4", "no option 'stride'"},
               {"b", "4", "w=<raw keys"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        const int rc = k->opts_set(&o, 4, bad[i].key, bad[i].value, err, sizeof err);
        CHECK(rc == -1 && contains(err, bad[i].want), "%s=%s: rc %d, message '%s'", bad[i].key, bad[i].value, rc,
              err);
    }
    CHECK(o.w == 12 && o.s == 5, "a rejected option changed the options");
    printf("  e.g. %s\n", err);

    lc_attn_shape s = {1, 4, 64, 0, 16, 1, 0.25f, 0, 0};
    CHECK(kit_kind_check(k, &s, &o, NULL, err, sizeof err) == 0, "good shape rejected: %s", err);
    const lc_attn_compressed_opts zero_w = {0, 4}, zero_s = {4, 0};
    CHECK(kit_kind_check(k, &s, &zero_w, NULL, err, sizeof err) == -1 && contains(err, "w=0"), "w=0: '%s'", err);
    CHECK(kit_kind_check(k, &s, &zero_s, NULL, err, sizeof err) == -1 && contains(err, "s=0"), "s=0: '%s'", err);
    s.relpos = 1;
    CHECK(kit_kind_check(k, &s, &o, NULL, err, sizeof err) == -1 && contains(err, "relative positions"), "relpos: '%s'", err);
    s.relpos = 0, s.window = 32;
    CHECK(kit_kind_check(k, &s, &o, NULL, err, sizeof err) == -1 && contains(err, "same_length"), "window: '%s'", err);
    s.window = 0;
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 2;
    CHECK(kit_kind_check(k, &s, &o, &g, err, sizeof err) == -1 && contains(err, "global"), "global: '%s'", err);

    /* through the spec string */
    lc_attn_layer layer;
    CHECK(lc_attn_spec_parse("compressed:w=8,s=4", 1, 4, &layer, err, sizeof err) == 0, "spec: %s", err);
    const lc_attn_compressed_opts *po = (const void *)layer.group[0].opts;
    CHECK(layer.group[0].kind == &lc_attn_compressed && po->w == 8 && po->s == 4, "spec options w=%d s=%d", po->w,
          po->s);
    CHECK(lc_attn_spec_parse("compressed", 1, 4, &layer, err, sizeof err) == 0 && po->w == 64 && po->s == 16,
          "spec defaults");
    CHECK(lc_attn_spec_parse("compressed:s=0", 1, 4, &layer, err, sizeof err) == -1 && contains(err, "s=0"),
          "spec s=0: '%s'", err);
    CHECK(lc_attn_spec_parse("compressed:q=1", 1, 4, &layer, err, sizeof err) == -1 && contains(err, "no option 'q'"),
          "spec unknown key: '%s'", err);
    CHECK(lc_attn_spec_parse("compressed:global=2", 1, 4, &layer, err, sizeof err) == 0, "spec global: %s", err);
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == -1 && contains(err, "global"), "layer check: '%s'", err);
}

TEST(workspace_does_not_grow_like_t_squared) {
    /* Linear in T: pooled K, V and their gradients (4 B H ceil(S/s) D), Delta (B H T) and per-thread rows
     * (w + S/s columns and the accumulators of 16 pooled blocks, 32 D-vectors), rounded up to 16 floats. */
    const int ws[] = {1, 64, 512}, ss[] = {1, 16, 64}, Ms[] = {0, 4096};
    for (int iw = 0; iw < 3; iw++)
        for (int is = 0; is < 3; is++)
            for (int im = 0; im < 2; im++)
                for (int causal = 0; causal <= 1; causal++) {
                    const lc_attn_compressed_opts o = {ws[iw], ss[is]};
                    size_t prev = 0, prev_growth = 0;
                    for (long T = 1024; T <= 65536; T *= 4) {
                        lc_attn_shape s = {2, 8, (int)T, Ms[im], 64, causal, 0.125f, 0, 0, 3};
                        const size_t nthreads = 3, S = (size_t)T + Ms[im], nb = (S + o.s - 1) / o.s;
                        const size_t floats = lc_attn_compressed_workspace(&s, &o);
                        const size_t bound = 4 * ((size_t)s.B * s.H * nb * s.D + 16) + (size_t)s.B * s.H * T + 16 +
                                             nthreads * (2 * (size_t)o.w + 1 + nb + 32 * (size_t)s.D + 48);
                        CHECK(floats <= bound, "T %ld M %d w %d s %d c %d: %zu floats > %zu", T, s.M, o.w, o.s, causal,
                              floats, bound);
                        if (prev) {
                            const size_t growth = floats - prev; /* T x 4: linear grows 4x per step */
                            if (prev_growth)
                                CHECK(growth <= 4 * prev_growth + 256, "T %ld: growth %zu after %zu", T, growth,
                                      prev_growth);
                            prev_growth = growth;
                        }
                        prev = floats;
                    }
                }
}

int main(void) {
    lc_threads_use(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(reference_pattern_counts);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_is_stable_for_large_scores);
    RUN(s1_and_wide_windows_equal_the_full_kind);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(unseen_keys_get_zero_gradients);
    RUN(options_parse_and_bad_options_give_clear_errors);
    RUN(workspace_does_not_grow_like_t_squared);
    return test_summary("test_attn_compressed");
}
