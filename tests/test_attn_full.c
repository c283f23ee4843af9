/* Tests of the full (dense) attention kind on the test kit (tests/attn_kit.h): the double reference
 * against finite differences and hand-computed values; the fast fp32 forward/backward against the
 * reference over many shapes (the decode path for one or two queries included) and for large scores;
 * determinism across repeats and thread counts; an empty segment; the kind's row and workspace. */
#include "attn_kit.h"

/* B, H, T, M, D, causal */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {2, 2, 3, 0, 3, 1}, {2, 2, 3, 2, 3, 1}, {2, 2, 3, 0, 3, 0}, {1, 2, 4, 3, 2, 0}, {1, 1, 5, 1, 4, 1},
    };
    kit_check_reference_cases(&kit_full, cases, sizeof cases / sizeof cases[0]);
}

/* The double reference on hand-computed values (out straight from the problem's double copy). */
static void check_hand_computed(kit_case c, const double *q, const double *k, const double *v, const double *want) {
    kit_problem *p = kit_problem_new(&kit_full, &c, 1);
    kit_ref *r = kit_ref_new(p);
    memcpy(r->q, q, sizeof(double) * c.T), memcpy(r->k, k, sizeof(double) * (c.M + c.T));
    memcpy(r->v, v, sizeof(double) * (c.M + c.T));
    lc_attn_full_forward_ref(&r->s, &r->t);
    for (int t = 0; t < c.T; t++)
        CHECK(fabs(r->out[t] - want[t]) < 1e-12, "causal %d M %d: out[%d] %.17g, want %.17g", c.causal, c.M, t, r->out[t],
              want[t]);
    kit_ref_free(r);
    kit_problem_free(p);
}

TEST(reference_forward_matches_hand_computed_values) {
    /* one query, one memory key: scores 0 and ln 3 -> probabilities 1/4, 3/4 -> out = 2/4 + 18/4 */
    const double q[2] = {1, 1}, k[2] = {0, log(3.0)}, v[2] = {2, 6}, five[2] = {5, 5}, two_five[2] = {2, 5};
    check_hand_computed((kit_case){1, 1, 1, 1, 1, 1, .scale = 1}, q, k, v, five);
    /* causal without memory: the first query sees only the first key, the second sees both */
    check_hand_computed((kit_case){1, 1, 2, 0, 1, 1, .scale = 1}, q, k, v, two_five);
    /* without the mask both queries see both keys */
    check_hand_computed((kit_case){1, 1, 2, 0, 1, 0, .scale = 1}, q, k, v, five);
}

TEST(fast_matches_reference_across_shapes) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 16, 1},  {1, 1, 1, 0, 3, 0},    {2, 3, 5, 7, 3, 1},   {1, 2, 63, 0, 24, 1},
        {2, 2, 64, 70, 16, 0}, {1, 2, 65, 7, 64, 1}, {2, 1, 130, 70, 24, 1}, {1, 3, 130, 0, 64, 0},
        {1, 1, 65, 70, 3, 0}, {2, 2, 130, 7, 16, 1}, {1, 1, 64, 0, 64, 1},  {1, 1, 5, 70, 64, 1},
        {1, 2, 130, 0, 40, 1}, {1, 1, 70, 3, 80, 1},
        /* 8 heads or more at 2 threads: the one-pass backward (one task per head, full_backward.c) */
        {2, 4, 130, 70, 24, 1}, {4, 2, 64, 0, 32, 1}, {2, 4, 130, 0, 40, 0}, {8, 1, 5, 3, 16, 1},
        /* one or two queries take the decode path (full_decode.c) */
        {2, 3, 2, 70, 64, 1}, {1, 2, 2, 200, 3, 0}, {3, 1, 1, 130, 24, 1}, {1, 2, 2, 0, 16, 1},
    };
    kit_check_fast_cases(&kit_full, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 2e-6});
}

TEST(fast_is_stable_for_large_scores) {
    /* Scores spread over hundreds (exp of them overflows fp32): the running max must grow across key
     * tiles without overflow. A score near 100 carries an fp32 error near 1e-5, so the bound is looser. */
    const kit_case cases[] = {{1, 2, 130, 70, 16, 0, .scale = 1, .input_mul = 3},
                              {1, 2, 130, 7, 24, 1, .scale = 1, .input_mul = 3}};
    kit_check_fast_cases(&kit_full, cases, 2, (kit_tol){1e-3, 3e-5});
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&kit_full, (kit_case){2, 3, 130, 70, 24, 1});
    /* 8 heads: one pass per head at 1 and 2 threads, the two passes at 3 (fewer than 4 heads a thread):
     * the same sums in the same order, so the same bits */
    kit_check_determinism(&kit_full, (kit_case){2, 4, 130, 70, 24, 1});
    kit_check_determinism(&kit_full, (kit_case){4, 2, 100, 0, 40, 0});
}

TEST(empty_segment_writes_zero_memory_gradients) { kit_check_empty_segment(&kit_full, (kit_case){2, 2, 0, 5, 24, 1}); }

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
    /* Past the one-pass backward's bound (T = 1,024 at D = 64) the workspace does not grow with T beyond
     * the B*H*T row statistics; below it, each of the 2 threads adds at most one head's dq, 65,536 floats
     * and 4 rows of padding. */
    lc_attn_shape short_t = {1, 8, 1024, 0, 64, 1, 0.125f, 0, 0, 2}, mid = short_t, large = short_t;
    mid.T = 4096, large.T = 16384;
    const size_t s = lc_attn_full_workspace(&short_t, NULL), a = lc_attn_full_workspace(&mid, NULL),
                 b = lc_attn_full_workspace(&large, NULL);
    CHECK(b - a == (size_t)8 * (16384 - 4096), "workspace %zu -> %zu floats", a, b);
    const size_t two_pass_at_short = a - (size_t)8 * (4096 - 1024);
    CHECK(s >= two_pass_at_short && s - two_pass_at_short <= 2 * (65536 + 4 * 64 + 16),
          "workspace at T = 1,024: %zu floats, %zu without the one-pass dq", s, two_pass_at_short);
}

int main(void) {
    lc_threads_use(2);
    RUN(reference_forward_matches_hand_computed_values);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_across_shapes);
    RUN(fast_is_stable_for_large_scores);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(kind_row_names_the_full_functions);
    return test_summary("test_attn_full");
}
