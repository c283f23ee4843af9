/* Tests of the `strided` attention kind (Sparse Transformer strided pattern): the masked double reference
 * against finite differences; the fast fp32 forward/backward against the reference for causal and
 * bidirectional patterns over strides, lengths, memories and head sizes, through strided views into fused
 * buffers; stride 1 against the full kind; determinism across runs and thread counts. Causal cases also run
 * with Transformer-XL relative positions (dr, du, dv compared too; bidirectional + rel rejected). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/strided.h"
#include "core/rng.h"
#include "core/threads.h"
#include "harness.h"

#define SENTINEL 12345.0f
#define KIND lc_attn_strided
#define KIND_NAME "strided"
typedef lc_attn_strided_opts kind_opts;

typedef struct {
    int B, H, T, M, D, causal, param, rel; /* rel: relative positions (causal only); param: the stride */
} case_shape;

/* The pattern, straight from its definition: position p = M + t sees key s when p - s is a multiple of
 * the stride (causal: and s <= p). */
typedef struct {
    int M, causal, param;
} mask_ctx;

static int visible(const void *ctx, int b, int h, int t, int s) {
    const mask_ctx *m = ctx;
    (void)b, (void)h;
    const int p = m->M + t;
    if (m->causal && s > p) return 0;
    return (p - s) % m->param == 0;
}

static kind_opts opts_of(int param) {
    kind_opts o = {param};
    return o;
}

/* The machinery shared with the other parameterised kinds. */
#include "attn_kind_tests.h"

TEST(stride_one_is_full_causal_attention) {
    check_equals_full((case_shape){2, 2, 130, 7, 64, 1, 1});
    check_equals_full((case_shape){1, 3, 65, 70, 16, 1, 1});
    check_equals_full((case_shape){1, 1, 65, 0, 3, 0, 1}); /* and bidirectional too */
}

TEST(stride_beyond_the_keys_sees_only_itself) {
    /* stride >= S: each query sees only its own position, so out = v of that position */
    for (int causal = 0; causal < 2; causal++) {
        const lc_attn_shape s = shape_of((case_shape){1, 2, 5, 3, 16, causal, 8});
        problem p = problem_new(s, 8, lc_get_threads(), 3);
        run_fast(&p);
        int ok = 1;
        for (int t = 0; t < s.T; t++)
            for (int i = 0; i < s.H * s.D; i++)
                ok &= fabsf(p.out[t * p.out_row + i] - p.t.v.p[(long)(s.M + t) * p.row + i]) < 1e-6f;
        CHECK(ok, "stride >= S, causal %d: out must equal the query's own v", causal);
        problem_free(&p);
    }
}

TEST(stride_one_is_full_causal_attention_with_relative_positions) {
    check_equals_full((case_shape){2, 2, 130, 7, 64, 1, 1, 1});
    check_equals_full((case_shape){1, 3, 65, 70, 16, 1, 1, 1});
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
    RUN(stride_one_is_full_causal_attention);
    RUN(stride_beyond_the_keys_sees_only_itself);
    RUN(stride_one_is_full_causal_attention_with_relative_positions);
    return test_summary("test_attn_strided");
}
