/* Model-level tests: parity of logits, loss and every gradient with the PyTorch reference fixtures
 * (tests/reference/make_lm_fixture.py), the embedding op, dropout determinism, memory planning. */
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "harness.h"
#include "models/lm/lm.h"
#include "nn/nn.h"
#include "train/safetensors.h"

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

static int meta_int(const lc_st_file *f, const char *key) {
    const char *v = lc_st_get_meta(f, key);
    return v ? atoi(v) : -1;
}

/* Builds the fixture's model, loads its weights, runs forward+backward and compares with PyTorch. */
static void check_fixture(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/lm_%s.safetensors", LC_FIXTURES, name);
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    lc_config c;
    memset(&c, 0, sizeof c);
    c.vocab = meta_int(f, "vocab");
    c.n_layer = meta_int(f, "n_layer");
    c.d_model = meta_int(f, "d_model");
    c.n_head = meta_int(f, "n_head");
    c.d_ff = meta_int(f, "d_ff");
    c.seq_len = meta_int(f, "seq_len");
    c.tied = meta_int(f, "tied");
    c.norm = strcmp(lc_st_get_meta(f, "norm"), "pre") == 0 ? LC_NORM_PRE : LC_NORM_POST;
    c.activation = strcmp(lc_st_get_meta(f, "activation"), "gelu") == 0 ? LC_ACT_GELU : LC_ACT_RELU;
    int B = meta_int(f, "batch"), T = c.seq_len, N = B * T;
    lc_model *m;
    st = lc_model_create(&c, B, 1, &m);
    CHECK(st == LC_OK, "create: %s", lc_last_error());
    if (st) { lc_st_close(f); return; }
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        st = lc_st_read(f, s->name, LC_DT_F32, s->ndim, s->shape, m->params + s->offset);
        CHECK(st == LC_OK, "%s", lc_last_error());
    }
    int *tok = malloc(sizeof(int) * (size_t)N), *tgt = malloc(sizeof(int) * (size_t)N);
    long bt[2] = {B, T}, lshape[3] = {B, T, 256}, one[1] = {1};
    CHECK(lc_st_read(f, "tokens", LC_DT_I32, 2, bt, tok) == LC_OK, "%s", lc_last_error());
    CHECK(lc_st_read(f, "targets", LC_DT_I32, 2, bt, tgt) == LC_OK, "%s", lc_last_error());
    float *want_logits = malloc(sizeof(float) * (size_t)N * 256), want_loss;
    CHECK(lc_st_read(f, "expected.logits", LC_DT_F32, 3, lshape, want_logits) == LC_OK, "%s", lc_last_error());
    CHECK(lc_st_read(f, "expected.loss", LC_DT_F32, 1, one, &want_loss) == LC_OK, "%s", lc_last_error());

    double sum;
    long count;
    CHECK(lc_model_forward(m, tok, tgt, B, T, 1, &sum, &count) == LC_OK, "%s", lc_last_error());
    char label[128];
    snprintf(label, sizeof label, "%s logits", name);
    CHECK_CLOSE(label, m->logits, want_logits, (long)N * 256, 1e-4, 1e-5);
    double loss = sum / (double)count;
    snprintf(label, sizeof label, "%s loss", name);
    CHECK_CLOSE(label, &loss, &want_loss, 1, 1e-5, 0);
    lc_model_zero_grad(m);
    lc_model_backward(m, 1.0f / (float)count);
    float *want = malloc(sizeof(float) * m->ptab.total);
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        char gname[LC_NAME_MAX + 8];
        snprintf(gname, sizeof gname, "grad.%s", s->name);
        CHECK(lc_st_read(f, gname, LC_DT_F32, s->ndim, s->shape, want) == LC_OK, "%s", lc_last_error());
        snprintf(label, sizeof label, "%s d%s", name, s->name);
        CHECK_CLOSE(label, m->grads + s->offset, want, (long)s->count, 1e-4, 5e-7);
    }
    free(want);
    free(want_logits);
    free(tok);
    free(tgt);
    lc_model_free(m);
    lc_st_close(f);
}

TEST(parity_pre_gelu_tied) { check_fixture("pre_gelu_tied"); }
TEST(parity_post_relu_untied) { check_fixture("post_relu_untied"); }

static void fill(double *x, int n, lc_rng *r) {
    for (int i = 0; i < n; i++) x[i] = (lc_rng_uniform(r) - 0.5) * 2 + (lc_rng_uniform(r) > 0.5 ? 0.1 : -0.1);
}

TEST(embedding_matches_reference_and_gradcheck) {
    enum { B = 2, T = 3, C = 5, V = 7 };
    lc_rng r;
    lc_rng_seed(&r, 3);
    int tok[B * T] = {1, 6, 1, 0, 3, 6};
    double wte[V * C], wpe[T * C], dout[B * T * C], out[B * T * C];
    fill(wte, V * C, &r);
    fill(wpe, T * C, &r);
    fill(dout, B * T * C, &r);
    double gte[V * C] = {0}, gpe[T * C] = {0};
    lc_embedding_forward_ref(out, tok, wte, wpe, B, T, C);
    lc_embedding_backward_ref(gte, gpe, dout, tok, B, T, C);
    /* finite differences of L = sum(out * dout) */
    double h = 1e-6, num[V * C];
    for (int i = 0; i < V * C; i++) {
        double keep = wte[i], lp = 0, lm = 0;
        wte[i] = keep + h;
        lc_embedding_forward_ref(out, tok, wte, wpe, B, T, C);
        for (int j = 0; j < B * T * C; j++) lp += out[j] * dout[j];
        wte[i] = keep - h;
        lc_embedding_forward_ref(out, tok, wte, wpe, B, T, C);
        for (int j = 0; j < B * T * C; j++) lm += out[j] * dout[j];
        wte[i] = keep;
        num[i] = (lp - lm) / (2 * h);
    }
    CHECK_CLOSE("embedding dwte (ref vs finite diff)", gte, num, V * C, 1e-6, 1e-8);
    float fte[V * C], fpe[T * C], fout[B * T * C], fdout[B * T * C], gfte[V * C], gfpe[T * C];
    for (int i = 0; i < V * C; i++) fte[i] = (float)wte[i], gfte[i] = 0.5f;
    for (int i = 0; i < T * C; i++) fpe[i] = (float)wpe[i], gfpe[i] = 0.5f;
    for (int i = 0; i < B * T * C; i++) fdout[i] = (float)dout[i];
    lc_embedding_forward(fout, tok, fte, fpe, B, T, C);
    lc_embedding_forward_ref(out, tok, wte, wpe, B, T, C);
    CHECK_CLOSE("embedding forward (fast vs ref)", fout, out, B * T * C, 1e-6, 1e-7);
    for (int i = 0; i < V * C; i++) gte[i] += 0.5;
    for (int i = 0; i < T * C; i++) gpe[i] = 0.5;
    lc_embedding_backward_ref(NULL, gpe, dout, tok, B, T, C);
    lc_embedding_backward(gfte, gfpe, fdout, tok, B, T, C);
    CHECK_CLOSE("embedding dwte accumulates (fast vs ref)", gfte, gte, V * C, 1e-6, 1e-6);
    CHECK_CLOSE("embedding dwpe accumulates (fast vs ref)", gfpe, gpe, T * C, 1e-6, 1e-6);
}

static lc_model *tiny_model(float dropout, lc_norm norm) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.seq_len = 16;
    c.dropout = dropout;
    c.norm = norm;
    c.model = LC_MODEL_VANILLA; /* the XL path is covered by test_xl */
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 2, 42, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static double run_step(lc_model *m, long key, int train, float *grads_out) {
    int tok[32], tgt[32];
    for (int i = 0; i < 32; i++) tok[i] = (i * 37 + 11) % 256, tgt[i] = (i * 53 + 5) % 256;
    lc_model_set_noise_key(m, key);
    double sum;
    long count;
    lc_model_forward(m, tok, tgt, 2, 16, train, &sum, &count);
    lc_model_zero_grad(m);
    lc_model_backward(m, 1.0f / (float)count);
    if (grads_out) memcpy(grads_out, m->grads, m->ptab.total * sizeof(float));
    return sum / (double)count;
}

TEST(dropout_is_keyed_and_replayed) {
    lc_model *m = tiny_model(0.2f, LC_NORM_PRE);
    if (!m) return;
    size_t n = m->ptab.total;
    float *g1 = malloc(n * sizeof(float)), *g2 = malloc(n * sizeof(float));
    double a = run_step(m, 5, 1, g1), b = run_step(m, 5, 1, g2);
    CHECK(a == b && memcmp(g1, g2, n * sizeof(float)) == 0, "same key must give bit-identical loss and gradients");
    double c = run_step(m, 6, 1, NULL);
    CHECK(c != a, "a different key must give different dropout masks (%g vs %g)", c, a);
    double e1 = run_step(m, 5, 0, NULL), e2 = run_step(m, 6, 0, NULL);
    CHECK(e1 == e2 && e1 != a, "evaluation must not use dropout (%g %g %g)", e1, e2, a);
    free(g1);
    free(g2);
    lc_model_free(m);
}

/* With dropout, the analytic gradient must still match finite differences of the same keyed loss:
 * checks that backward replays exactly the forward's masks. fp32, so only a loose directional check. */
TEST(dropout_gradient_matches_finite_difference) {
    lc_model *m = tiny_model(0.3f, LC_NORM_POST);
    if (!m) return;
    float *g = malloc(m->ptab.total * sizeof(float));
    run_step(m, 9, 1, g);
    int worst_ok = 1;
    const float h = 1e-2f;
    for (int probe = 0; probe < 8; probe++) {
        size_t i = (size_t)probe * 997 % lc_model_num_params(m);
        float keep = m->params[i];
        m->params[i] = keep + h;
        double lp = run_step(m, 9, 1, NULL);
        m->params[i] = keep - h;
        double lm = run_step(m, 9, 1, NULL);
        m->params[i] = keep;
        double num = (lp - lm) / (2 * h), err = fabs(num - g[i]);
        if (err > 2e-3 + 0.05 * fabs(num)) {
            worst_ok = 0;
            printf("  param %zu: analytic %.6g numeric %.6g\n", i, (double)g[i], num);
        }
    }
    CHECK(worst_ok, "dropout gradients disagree with finite differences");
    free(g);
    lc_model_free(m);
}

TEST(rejects_bad_inputs) {
    lc_model *m = tiny_model(0, LC_NORM_PRE);
    if (!m) return;
    int tok[4] = {1, 2, 300, 4};
    CHECK(lc_model_forward(m, tok, NULL, 1, 4, 0, NULL, NULL) == LC_ERR_ARG, "token 300 must be rejected");
    CHECK(lc_model_forward(m, tok, NULL, 3, 1, 0, NULL, NULL) == LC_ERR_ARG, "batch above max must be rejected");
    CHECK(lc_model_forward(m, tok, NULL, 1, 17, 0, NULL, NULL) == LC_ERR_ARG, "T above seq_len must be rejected");
    lc_config c;
    lc_config_default(&c);
    c.n_head = 0;
    CHECK(lc_config_validate(&c) == LC_ERR_ARG, "zero heads");
    c.n_head = 3;
    CHECK(lc_config_validate(&c) == LC_ERR_ARG && strstr(lc_last_error(), "divisible"), "dim %% heads: %s",
          lc_last_error());
    lc_model_free(m);
}

/* The compute plan: a model runs with the thread count it was planned for, whatever the process's count
 * is later set to (a model planned for 1 thread and run after the count was raised to 8 overflowed its
 * attention workspace under ASan), lc_model_set_threads re-plans, counts are capped at the cores the
 * process may use, and results are bit-identical for every count. */
TEST(thread_count_is_part_of_the_plan) {
    const char *specs[] = {"full", "window:w=5", "bigbird:b=4,r=1", "2xblock:b=8+window:w=3"};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        lc_config c;
        lc_config_preset(&c, "tiny");
        c.model = LC_MODEL_VANILLA, c.seq_len = 48, c.n_head = 4, c.d_model = 32;
        snprintf(c.attn, sizeof c.attn, "%s", specs[k]);
        lc_set_threads(1);
        lc_model *m = NULL;
        const lc_status st = lc_model_create(&c, 2, 7, &m);
        CHECK(st == LC_OK, "%s: %s", specs[k], lc_last_error());
        if (st) continue;
        CHECK(lc_model_threads(m) == 1, "%s: planned for %d threads", specs[k], lc_model_threads(m));
        const size_t n = m->ptab.total;
        float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        int tok[96], tgt[96];
        for (int i = 0; i < 96; i++) tok[i] = (i * 37 + 11) % 256, tgt[i] = (i * 53 + 5) % 256;
        double loss1 = 0, loss = 0;
        long count = 0;
        lc_model_forward(m, tok, tgt, 2, 48, 0, &loss1, &count);
        lc_model_zero_grad(m);
        lc_model_backward(m, 1.0f);
        memcpy(want, m->grads, n * sizeof(float));
        const int counts[] = {8, -2, 2, 1000};
        for (int i = 0; i < 4; i++) {
            if (i == 0) lc_set_threads(counts[i]); /* behind the model's back */
            else CHECK(lc_model_set_threads(m, counts[i]) == LC_OK, "%s", lc_last_error());
            const int avail = lc_threads_available();
            const int expect = i == 0 ? 1 : counts[i] <= 0 || counts[i] > avail ? avail : counts[i];
            CHECK(lc_model_threads(m) == expect, "%s: %d threads asked, %d planned (want %d)", specs[k], counts[i],
                  lc_model_threads(m), expect);
            lc_model_forward(m, tok, tgt, 2, 48, 0, &loss, &count);
            lc_model_zero_grad(m);
            lc_model_backward(m, 1.0f);
            memcpy(got, m->grads, n * sizeof(float));
            CHECK(loss == loss1 && memcmp(want, got, n * sizeof(float)) == 0,
                  "%s: results differ with %d threads asked", specs[k], counts[i]);
        }
        free(want), free(got);
        lc_model_free(m);
    }
    lc_set_threads(0);
}

/* Every fallible public call clears the last error, so after a success lc_last_error() is ""; and a
 * re-planned model (lc_model_resize) has no last forward for backward to differentiate. */
TEST(last_error_cleared_and_backward_after_resize_refused) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA, c.seq_len = 16;
    CHECK(lc_config_preset(&c, "no-such-preset") == LC_ERR_ARG && lc_last_error()[0], "unknown preset accepted");
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA, c.seq_len = 16;
    CHECK(lc_config_validate(&c) == LC_OK && lc_last_error()[0] == 0, "validate left '%s'", lc_last_error());
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 0, 1, &m) == LC_ERR_ARG && lc_last_error()[0], "batch 0 accepted");
    CHECK(lc_model_create(&c, 2, 1, &m) == LC_OK && lc_last_error()[0] == 0, "create left '%s'", lc_last_error());
    if (!m) return;
    int tok[32], tgt[32];
    for (int i = 0; i < 32; i++) tok[i] = i, tgt[i] = i + 1;
    double sum;
    long count;
    CHECK(lc_model_forward(m, tok, tgt, 2, 16, 0, &sum, &count) == LC_OK, "%s", lc_last_error());
    CHECK(lc_model_resize(m, 1, 8, 0) == LC_OK && lc_last_error()[0] == 0, "resize left '%s'", lc_last_error());
    CHECK(lc_model_backward(m, 1.0f) == LC_ERR_ARG, "backward after a resize ran on the old shape");
    CHECK(lc_model_set_threads(m, 1) == LC_OK && lc_last_error()[0] == 0, "set_threads left '%s'", lc_last_error());
    lc_model_free(m);
}

/* A plan larger than the machine's memory fails before anything is allocated or zeroed: an XL model of
 * 2^22-token segments for 4096 streams asks for petabytes of activations. */
TEST(plans_larger_than_memory_fail_at_once) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.seq_len = 1 << 22, c.mem_len = 1 << 20;
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 4096, 1, &m) == LC_ERR_NOMEM && strstr(lc_last_error(), "activations"),
          "huge activations: %s", lc_last_error());
    CHECK(m == NULL, "a model was returned");
    lc_config_preset(&c, "tiny");
    c.d_model = 1 << 16, c.n_head = 1, c.d_ff = 1 << 16, c.n_layer = 64;
    CHECK(lc_model_create(&c, 1, 1, &m) == LC_ERR_NOMEM && strstr(lc_last_error(), "parameters"),
          "huge parameters: %s", lc_last_error());
}

int main(void) {
    RUN(parity_pre_gelu_tied);
    RUN(parity_post_relu_untied);
    RUN(embedding_matches_reference_and_gradcheck);
    RUN(dropout_is_keyed_and_replayed);
    RUN(dropout_gradient_matches_finite_difference);
    RUN(rejects_bad_inputs);
    RUN(thread_count_is_part_of_the_plan);
    RUN(last_error_cleared_and_backward_after_resize_refused);
    RUN(plans_larger_than_memory_fail_at_once);
    return test_summary("test_model");
}
