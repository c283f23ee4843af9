/* Tests of the `block` attention kind (blockwise local attention) on the test kit (tests/attn_kit.h):
 * the suite of one-parameter kinds (the masked double reference against finite differences; the fast
 * fp32 passes against it over block sizes, lengths, memories, head sizes, causal and bidirectional, and
 * causal with Transformer-XL relative positions; determinism; empty segments; the checks; the workspace),
 * then a block covering all keys against the full kind and block 1. */
#include "attn/block.h"
#include "attn_kit.h"

/* The pattern, straight from its definition: position p = M + t sees key s when both lie in the same
 * block of b positions (causal: s <= p), or, causal, s lies in the previous block. */
static int block_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_problem *p = ctx;
    const int block = ((const lc_attn_block_opts *)(const void *)p->opts)->block;
    const int q = p->s.M + t, bq = q / block, bs = s / block;
    (void)b, (void)h;
    if (!p->s.causal) return bq == bs;
    return s <= q && (bs == bq || bs == bq - 1);
}

static void block_opts(const kit_case *c, void *opts) { ((lc_attn_block_opts *)opts)->block = c->p[0]; }

static const kit_kind block = {.kind = &lc_attn_block, .opts = block_opts, .visible = block_visible};

TEST(block_covering_all_keys_is_full_bidirectional_attention) {
    const kit_tol tol = {1e-4, 1e-5, 1e-5, 1e-5, 1e-4};
    kit_check_same(&block, &kit_full, (kit_case){2, 2, 130, 7, 64, 0, {137}}, tol, 1);
    kit_check_same(&block, &kit_full, (kit_case){1, 3, 65, 70, 16, 0, {1000}}, tol, 1);
}

TEST(block_one_keeps_two_keys_causal_and_one_key_bidirectional) {
    /* block 1, bidirectional: each query sees only itself, so out = v of its own position */
    kit_problem *p = kit_problem_new(&block, &(kit_case){1, 2, 5, 3, 16, 0, {1}}, 2);
    kit_run(p);
    int ok = 1;
    for (int t = 0; t < p->s.T; t++)
        for (int i = 0; i < p->s.H * p->s.D; i++)
            ok &= fabsf(p->out[t * p->out_row + i] - p->t.v.p[(long)(p->s.M + t) * p->row + i]) < 1e-6f;
    CHECK(ok, "block 1 bidirectional: out must equal the query's own v");
    kit_problem_free(p);
}

TEST(block_covering_all_keys_is_full_causal_attention_with_relative_positions) {
    const kit_tol tol = {1e-4, 1e-5, 1e-5, 1e-5, 1e-4};
    kit_check_same(&block, &kit_full, (kit_case){2, 2, 130, 7, 64, 1, {137}, 1}, tol, 1);
    kit_check_same(&block, &kit_full, (kit_case){1, 3, 65, 70, 16, 1, {1000}, 1}, tol, 1);
}

/* 8 heads: the one-pass backward (one task per head) at 1 and 2 threads, the two passes at 3; block
 * sizes that put query tiles off the 64 grid, with memory, both modes: the same bits everywhere. */
TEST(one_pass_backward_gives_the_two_passes_bits) {
    kit_check_determinism(&block, (kit_case){2, 4, 130, 70, 24, 1, {37}});
    kit_check_determinism(&block, (kit_case){4, 2, 128, 0, 16, 0, {64}});
    kit_check_determinism(&block, (kit_case){2, 4, 100, 7, 32, 0, {50}});
}

TEST(kind_row_is_block) { CHECK(strcmp(lc_attn_block.name, "block") == 0, "name %s", lc_attn_block.name); }

int main(void) {
    lc_threads_use(2);
    kit_run_param_suite(&block);
    RUN(block_covering_all_keys_is_full_bidirectional_attention);
    RUN(block_one_keeps_two_keys_causal_and_one_key_bidirectional);
    RUN(block_covering_all_keys_is_full_causal_attention_with_relative_positions);
    RUN(one_pass_backward_gives_the_two_passes_bits);
    RUN(kind_row_is_block);
    return test_summary("test_attn_block");
}
