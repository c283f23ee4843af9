/* Tests of the window attention kind (sliding window with per-head dilation) on the test kit
 * (tests/attn_kit.h, which holds the kind's visibility): the masked double reference against finite
 * differences; the fast fp32 passes against it over causal and bidirectional shapes, per-head dilations,
 * memories, large scores, and Transformer-XL relative positions on dilated causal heads; a window
 * covering everything against the full kind; determinism; an empty segment; the workspace bound. Global
 * tokens: tests/test_attn_global.c. */
#include "attn_kit.h"

/* B, H, T, M, D, causal, {w, dilated} */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {1, 3, 6, 2, 3, 1, {1, 1}}, {1, 3, 6, 0, 3, 0, {1, 1}}, {2, 2, 5, 3, 2, 1, {2, 0}}, {1, 2, 7, 0, 2, 0, {2, 1}},
    };
    kit_check_reference_cases(&kit_window, cases, sizeof cases / sizeof cases[0]);
}

TEST(fast_matches_reference_causal) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 16, 1, {1, 0}},   {2, 3, 5, 7, 3, 1, {3, 1}},    {1, 3, 65, 70, 64, 1, {64, 1}},
        {2, 2, 130, 0, 16, 1, {3, 0}}, {1, 3, 200, 7, 16, 1, {100, 1}}, {1, 3, 130, 70, 3, 1, {1, 1}},
        {1, 2, 200, 0, 64, 1, {64, 0}}, {2, 3, 65, 7, 64, 1, {100, 0}}, {1, 1, 1, 70, 64, 1, {100, 0}},
        {1, 3, 5, 70, 16, 1, {64, 1}},
    };
    kit_check_fast_cases(&kit_window, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 2e-6});
}

TEST(fast_matches_reference_bidirectional) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 3, 0, {1, 0}},     {2, 3, 5, 7, 16, 0, {3, 1}},   {1, 3, 65, 0, 64, 0, {64, 1}},
        {2, 2, 130, 70, 16, 0, {3, 0}}, {1, 3, 200, 7, 64, 0, {100, 1}}, {1, 3, 130, 70, 3, 0, {1, 1}},
        {1, 2, 200, 0, 16, 0, {64, 0}}, {1, 1, 1, 70, 64, 0, {100, 1}},
    };
    kit_check_fast_cases(&kit_window, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 2e-6});
}

TEST(fast_is_stable_for_large_scores) {
    const kit_case cases[] = {{1, 3, 130, 70, 16, 0, {64, 1}, .scale = 1, .input_mul = 3},
                              {1, 3, 130, 7, 16, 1, {100, 1}, .scale = 1, .input_mul = 3}};
    kit_check_fast_cases(&kit_window, cases, 2, (kit_tol){1e-3, 3e-5});
}

TEST(window_covering_everything_equals_full_kind) {
    /* dilation 1, w >= S (causal, or w >= S - 1 bidirectional): the window kind must agree with lc_attn_full */
    const kit_case cases[] = {{1, 2, 130, 70, 64, 1, {200}}, {2, 3, 65, 0, 16, 1, {65}}, {1, 1, 5, 7, 3, 1, {1000}},
                              {1, 2, 130, 70, 64, 0, {199}}, {2, 3, 65, 0, 16, 0, {64}}, {1, 1, 5, 7, 3, 0, {1000}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        kit_check_same(&kit_window, &kit_full, cases[i], (kit_tol){1e-4, 1e-5, 1e-5, 1e-5}, 1);
}

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&kit_window, (kit_case){2, 3, 130, 70, 24, 1, {64, 1}});
    kit_check_determinism(&kit_window, (kit_case){1, 3, 200, 7, 16, 0, {3, 1}});
}

TEST(unseen_keys_get_zero_gradients) {
    kit_check_empty_segment(&kit_window, (kit_case){2, 2, 0, 5, 24, 1, {3}});
    kit_check_empty_segment(&kit_window, (kit_case){2, 2, 0, 5, 24, 0, {3, 1}});
}

TEST(workspace_does_not_grow_like_t_squared) {
    CHECK(strcmp(lc_attn_window.name, "window") == 0, "name %s", lc_attn_window.name);
    CHECK(lc_attn_window.forward == lc_attn_window_forward && lc_attn_window.backward == lc_attn_window_backward &&
              lc_attn_window.workspace_floats == lc_attn_window_workspace,
          "table row points elsewhere");
    /* Beyond a fixed per-thread part, at most H floats per token (row statistics), in both modes and
     * with dilation. (At T = 1,024 and D = 64 the full kind's one-pass backward, src/attn/full_tile.h,
     * adds one head's dq per thread: 2 x (65,536 + 256) floats, within the bound checked below.) */
    for (int causal = 0; causal <= 1; causal++)
        for (int dilated = 0; dilated <= 1; dilated++) {
            lc_attn_window_opts o;
            kit_window_opts(&(kit_case){.p = {256, dilated}}, &o);
            lc_attn_shape small = {1, 8, 1024, 0, 64, causal, 0.125f, 0, 0, 2}, large = small;
            large.T = 65536;
            const size_t a = lc_attn_window_workspace(&small, &o), b = lc_attn_window_workspace(&large, &o);
            CHECK(b >= a && b - a <= (size_t)8 * (65536 - 1024), "causal %d dilated %d: workspace %zu -> %zu floats",
                  causal, dilated, a, b);
            CHECK(a < (size_t)(128 + 2 * 64) * 1024, "causal %d dilated %d: workspace %zu floats at T = 1024", causal,
                  dilated, a);
        }
}

/* Causal heads with dilations 1, 2, 3, ... and relative positions against the masked reference with rel
 * (the distance of key s from query t is M + t - s, as in the full kind). */
TEST(dilated_relative_positions_match_reference) {
    const kit_case cases[] = {
        {1, 3, 1, 0, 16, 1, {1, 1}, 1},  {2, 3, 5, 7, 3, 1, {3, 1}, 1},    {1, 3, 65, 70, 64, 1, {64, 1}, 1},
        {2, 3, 130, 0, 16, 1, {3, 1}, 1}, {1, 3, 200, 7, 16, 1, {100, 1}, 1}, {1, 4, 130, 70, 3, 1, {1, 1}, 1},
        {2, 2, 40, 5, 8, 1, {4, 0}, 1}, /* undilated: the whole problem goes to the full kind */
    };
    kit_check_fast_cases(&kit_window, cases, sizeof cases / sizeof cases[0], (kit_tol){1e-4, 2e-6});
}

TEST(dilated_relative_positions_are_deterministic) {
    kit_check_determinism(&kit_window, (kit_case){2, 3, 150, 40, 24, 1, {8, 1}, 1});
}

int main(void) {
    lc_threads_use(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_is_stable_for_large_scores);
    RUN(window_covering_everything_equals_full_kind);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(unseen_keys_get_zero_gradients);
    RUN(workspace_does_not_grow_like_t_squared);
    RUN(dilated_relative_positions_match_reference);
    RUN(dilated_relative_positions_are_deterministic);
    return test_summary("test_attn_window");
}
