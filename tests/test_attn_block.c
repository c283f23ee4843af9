/* Tests of the `block` attention kind (blockwise local attention): the masked double reference against
 * finite differences; the fast fp32 forward/backward against the reference for causal and bidirectional
 * patterns over block sizes, lengths, memories and head sizes, through strided views into fused buffers;
 * a block covering all keys against the full kind; determinism across runs and thread counts. Causal cases
 * also run with Transformer-XL relative positions (dr, du, dv compared too; bidirectional + rel rejected). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/block.h"
#include "core/rng.h"
#include "core/threads.h"
#include "harness.h"

#define SENTINEL 12345.0f
#define KIND lc_attn_block
#define KIND_NAME "block"
typedef lc_attn_block_opts kind_opts;

typedef struct {
    int B, H, T, M, D, causal, param, rel; /* rel: relative positions (causal only); param: the block size */
} case_shape;

/* The pattern, straight from its definition: position p = M + t sees key s when both lie in the same
 * block of `param` positions (causal: s <= p), or, causal, s lies in the previous block. */
typedef struct {
    int M, causal, param;
} mask_ctx;

static int visible(const void *ctx, int b, int h, int t, int s) {
    const mask_ctx *m = ctx;
    (void)b, (void)h;
    const int p = m->M + t, bp = p / m->param, bs = s / m->param;
    if (!m->causal) return bp == bs;
    return s <= p && (bs == bp || bs == bp - 1);
}

static kind_opts opts_of(int param) {
    kind_opts o = {param};
    return o;
}

/* The machinery shared with the other parameterised kinds. */
#include "attn_kind_tests.h"

TEST(block_covering_all_keys_is_full_bidirectional_attention) {
    check_equals_full((case_shape){2, 2, 130, 7, 64, 0, 137});
    check_equals_full((case_shape){1, 3, 65, 70, 16, 0, 1000});
}

TEST(block_one_keeps_two_keys_causal_and_one_key_bidirectional) {
    /* block 1, bidirectional: each query sees only itself, so out = v of its own position */
    const lc_attn_shape s = shape_of((case_shape){1, 2, 5, 3, 16, 0, 1});
    problem p = problem_new(s, 1, lc_get_threads(), 3);
    run_fast(&p);
    int ok = 1;
    for (int t = 0; t < s.T; t++)
        for (int i = 0; i < s.H * s.D; i++)
            ok &= fabsf(p.out[t * p.out_row + i] - p.t.v.p[(long)(s.M + t) * p.row + i]) < 1e-6f;
    CHECK(ok, "block 1 bidirectional: out must equal the query's own v");
    problem_free(&p);
}

TEST(block_covering_all_keys_is_full_causal_attention_with_relative_positions) {
    check_equals_full((case_shape){2, 2, 130, 7, 64, 1, 137, 1});
    check_equals_full((case_shape){1, 3, 65, 70, 16, 1, 1000, 1});
}

int main(void) {
    lc_set_threads(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_across_shapes);
    RUN(fast_matches_reference_with_relative_positions);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(empty_segment_with_relative_positions_writes_zero_gradients);
    RUN(check_accepts_relative_positions_only_when_causal);
    RUN(workspace_stays_within_row_statistics_and_per_thread_tiles);
    RUN(block_covering_all_keys_is_full_bidirectional_attention);
    RUN(block_one_keeps_two_keys_causal_and_one_key_bidirectional);
    RUN(block_covering_all_keys_is_full_causal_attention_with_relative_positions);
    return test_summary("test_attn_block");
}
