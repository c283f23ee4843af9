/* Tests of the `strided` attention kind (Sparse Transformer strided pattern) on the test kit
 * (tests/attn_kit.h): the suite of one-parameter kinds (the masked double reference against finite
 * differences; the fast fp32 passes against it over strides, lengths, memories, head sizes, causal and
 * bidirectional, and causal with Transformer-XL relative positions; determinism; empty segments; the
 * checks; the workspace), then stride 1 against the full kind and strides beyond the keys. */
#include "attn/strided.h"
#include "attn_kit.h"

/* The pattern, straight from its definition: position p = M + t sees key s when p - s is a multiple of
 * the stride (causal: and s <= p). */
static int strided_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_problem *p = ctx;
    const int q = p->s.M + t;
    (void)b, (void)h;
    if (p->s.causal && s > q) return 0;
    return (q - s) % ((const lc_attn_strided_opts *)(const void *)p->opts)->stride == 0;
}

static void strided_opts(const kit_case *c, void *opts) { ((lc_attn_strided_opts *)opts)->stride = c->p[0]; }

static const kit_kind strided = {.kind = &lc_attn_strided, .opts = strided_opts, .visible = strided_visible};

static const kit_tol same_tol = {1e-4, 1e-5, 1e-5, 1e-5, 1e-4};

TEST(stride_one_is_full_causal_attention) {
    kit_check_same(&strided, &kit_full, (kit_case){2, 2, 130, 7, 64, 1, {1}}, same_tol, 1);
    kit_check_same(&strided, &kit_full, (kit_case){1, 3, 65, 70, 16, 1, {1}}, same_tol, 1);
    kit_check_same(&strided, &kit_full, (kit_case){1, 1, 65, 0, 3, 0, {1}}, same_tol, 1); /* and bidirectional too */
}

TEST(stride_beyond_the_keys_sees_only_itself) {
    /* stride >= S: each query sees only its own position, so out = v of that position */
    for (int causal = 0; causal < 2; causal++) {
        kit_problem *p = kit_problem_new(&strided, &(kit_case){1, 2, 5, 3, 16, causal, {8}}, 2);
        kit_run(p);
        int ok = 1;
        for (int t = 0; t < p->s.T; t++)
            for (int i = 0; i < p->s.H * p->s.D; i++)
                ok &= fabsf(p->out[t * p->out_row + i] - p->t.v.p[(long)(p->s.M + t) * p->row + i]) < 1e-6f;
        CHECK(ok, "stride >= S, causal %d: out must equal the query's own v", causal);
        kit_problem_free(p);
    }
}

TEST(stride_one_is_full_causal_attention_with_relative_positions) {
    kit_check_same(&strided, &kit_full, (kit_case){2, 2, 130, 7, 64, 1, {1}, 1}, same_tol, 1);
    kit_check_same(&strided, &kit_full, (kit_case){1, 3, 65, 70, 16, 1, {1}, 1}, same_tol, 1);
}

TEST(kind_row_is_strided) { CHECK(strcmp(lc_attn_strided.name, "strided") == 0, "name %s", lc_attn_strided.name); }

int main(void) {
    lc_threads_use(2);
    kit_run_param_suite(&strided);
    RUN(stride_one_is_full_causal_attention);
    RUN(stride_beyond_the_keys_sees_only_itself);
    RUN(stride_one_is_full_causal_attention_with_relative_positions);
    RUN(kind_row_is_strided);
    return test_summary("test_attn_strided");
}
