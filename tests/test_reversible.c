/* Tests of the Reformer memory savers: reversible residual layers (backward rebuilds each layer's inputs
 * from its outputs, replaying dropout) against the same network with every activation kept, activation
 * memory against depth, and the chunked feed-forward against the unchunked one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "harness.h"
#include "longctx.h"
#include "models/lm/lm.h"

enum { B = 2, T = 48 };

static lc_model *make(int layers, int reversible, int ffn_chunk, float dropout, const char *attn, uint64_t seed) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA;
    c.mem_len = 0;
    c.n_layer = layers;
    c.seq_len = T;
    c.dropout = dropout;
    c.reversible = reversible;
    c.ffn_chunk = ffn_chunk;
    snprintf(c.attn, sizeof c.attn, "%s", attn);
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, B, seed, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static void batch_of(int *tok, int *tgt, uint64_t seed) {
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < B * T; i++) tok[i] = (int)(lc_rng_next(&rng) % 256), tgt[i] = (int)(lc_rng_next(&rng) % 256);
}

/* One training-mode step (dropout on): loss, gradients in m->grads. */
static double step(lc_model *m, long key) {
    int tok[B * T], tgt[B * T];
    batch_of(tok, tgt, 3);
    double sum = 0;
    long n = 0;
    lc_model_zero_grad(m);
    lc_model_set_noise_key(m, key);
    CHECK(lc_model_forward(m, tok, tgt, B, T, 1, &sum, &n) == LC_OK, "%s", lc_last_error());
    lc_model_backward(m, 1.0f / (float)n);
    return sum / (double)n;
}

TEST(reversible_backward_equals_stored_activations) {
    const char *attn[] = {"full", "2xwindow:w=5+2xblock:b=8"};
    for (int k = 0; k < 2; k++) {
        lc_model *rev = make(4, 1, 0, 0.1f, attn[k], 5), *ref = make(4, 1, 0, 0.1f, attn[k], 5);
        if (!rev || !ref) return;
        CHECK(lc_model_set_reversible_store(ref, 1) == LC_OK, "%s", lc_last_error());
        const double lr = step(rev, 7), lf = step(ref, 7);
        char label[96];
        snprintf(label, sizeof label, "loss, %s", attn[k]);
        CHECK_CLOSE(label, &lr, &lf, 1, 1e-6, 0);
        snprintf(label, sizeof label, "all gradients, %s", attn[k]);
        CHECK_CLOSE(label, rev->grads, ref->grads, (long)rev->ptab.total, 1e-4, 1e-6);
        /* and the comparison can fail: another dropout key gives other gradients */
        step(rev, 8);
        double worst = 0;
        for (size_t i = 0; i < rev->ptab.total; i++) worst = fmax(worst, fabs(rev->grads[i] - ref->grads[i]));
        CHECK(worst > 1e-4, "gradients of another dropout draw must differ (%g)", worst);
        lc_model_free(rev);
        lc_model_free(ref);
    }
}

TEST(reversible_gradients_by_differences) {
    lc_model *m = make(3, 1, 16, 0.0f, "window:w=6", 9);
    if (!m) return;
    int tok[B * T], tgt[B * T];
    batch_of(tok, tgt, 4);
    double sum;
    long n;
    lc_model_zero_grad(m);
    lc_model_forward(m, tok, tgt, B, T, 0, &sum, &n);
    lc_model_backward(m, 1.0f / (float)n);
    float *g = malloc(sizeof(float) * m->ptab.total), *d = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    lc_rng rng;
    lc_rng_seed(&rng, 1);
    const char *names[] = {"wte", "blocks.0.attn.qkv.weight", "blocks.1.ln1.weight", "blocks.2.ffn.fc1.weight",
                           "blocks.0.ffn.fc2.weight", "ln_f.weight"};
    for (int k = 0; k < 6; k++) {
        const int i = lc_table_find(&m->ptab, names[k]);
        if (i < 0) { CHECK(0, "no %s", names[k]); continue; }
        const lc_slot *s = &m->ptab.slots[i];
        double norm = 0, gd = 0;
        for (size_t j = 0; j < s->count; j++) d[j] = lc_rng_normal(&rng), norm += (double)d[j] * d[j];
        for (size_t j = 0; j < s->count; j++) d[j] = (float)(d[j] / sqrt(norm)), gd += (double)g[s->offset + j] * d[j];
        float *p = m->params + s->offset;
        const double eps = 1e-3;
        double up, down;
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        lc_model_forward(m, tok, tgt, B, T, 0, &up, &n);
        for (size_t j = 0; j < s->count; j++) p[j] -= 2 * (float)eps * d[j];
        lc_model_forward(m, tok, tgt, B, T, 0, &down, &n);
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        const double fd = (up - down) / n / (2 * eps);
        CHECK_CLOSE(names[k], &gd, &fd, 1, 2e-2, 1e-4);
    }
    free(g);
    free(d);
    lc_model_free(m);
}

TEST(activation_memory_does_not_grow_with_depth) {
    size_t rev[2], plain[2];
    const int depth[2] = {1, 8};
    for (int k = 0; k < 2; k++) {
        lc_model *r = make(depth[k], 1, 0, 0.0f, "full", 1), *p = make(depth[k], 0, 0, 0.0f, "full", 1);
        if (!r || !p) return;
        rev[k] = lc_model_activation_bytes(r), plain[k] = lc_model_activation_bytes(p);
        lc_model_free(r);
        lc_model_free(p);
    }
    printf("  activation bytes, depth 1 -> 8: reversible %zu -> %zu, ordinary %zu -> %zu\n", rev[0], rev[1], plain[0],
           plain[1]);
    CHECK(rev[1] == rev[0], "reversible activations must not depend on depth");
    CHECK(plain[1] > plain[0] * 3, "ordinary activations grow with depth (the test can tell)");
}

TEST(chunked_ffn_equals_whole) {
    const int chunks[] = {1, 7, 32, 96, 1000};
    lc_model *whole = make(2, 0, 0, 0.1f, "full", 2);
    if (!whole) return;
    const double want = step(whole, 3);
    for (int k = 0; k < 5; k++) {
        lc_model *m = make(2, 0, chunks[k], 0.1f, "full", 2);
        if (!m) return;
        const double got = step(m, 3);
        char label[64];
        snprintf(label, sizeof label, "loss, chunk %d", chunks[k]);
        CHECK_CLOSE(label, &got, &want, 1, 1e-6, 0);
        snprintf(label, sizeof label, "gradients, chunk %d", chunks[k]);
        CHECK_CLOSE(label, m->grads, whole->grads, (long)m->ptab.total, 1e-5, 1e-7);
        if (chunks[k] < B * T)
            CHECK(lc_model_activation_bytes(m) < lc_model_activation_bytes(whole), "chunk %d saves memory", chunks[k]);
        lc_model_free(m);
    }
    lc_model_free(whole);
}

TEST(reversible_needs_pre_ln_without_memory) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.reversible = 1; /* the preset is xl */
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 1, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "reversible"), "%s", lc_last_error());
    c.model = LC_MODEL_VANILLA, c.mem_len = 0, c.norm = LC_NORM_POST;
    CHECK(lc_model_create(&c, 1, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "--norm pre"), "%s", lc_last_error());
    lc_model_free(m);
}

int main(void) {
    RUN(reversible_backward_equals_stored_activations);
    RUN(reversible_gradients_by_differences);
    RUN(activation_memory_does_not_grow_with_depth);
    RUN(chunked_ffn_equals_whole);
    RUN(reversible_needs_pre_ln_without_memory);
    return test_summary("test_reversible");
}
