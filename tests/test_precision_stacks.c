/* Tests of --precision bf16 in the models built from stacks of blocks (nn/stacks.h): the classifier
 * and HIBERT (extraction and masked-sentence pre-training) give a loss and gradients near fp32's on every
 * bf16 path this CPU has, and exactly fp32's bits when bf16 cannot run (LC_BF16=off); the precision goes
 * through their checkpoints, and their setters refuse other values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "harness.h"
#include "kernels/kernels.h"
#include "longctx/classify.h"
#include "longctx/hibert.h"
#include "models/classify/classify.h"
#include "models/hibert/hibert.h"
#include "test_files.h"

static lc_rng rng;
static int has_vector; /* the avx512bf16 path runs here (and LC_BF16 does not rule it out) */

/* The paths to test: 0 = the default (avx512bf16 where it runs), 1 = portable (forced). */
static const char *use_path(int p) {
    lc_gemm_bf16_force_portable(p == 1 || !has_vector);
    return lc_gemm_bf16_backend();
}

/* LC_BF16=off for a while (bf16 products then run in fp32), and back to what the environment had. */
static char saved_env[32];
static int had_env;

static void bf16_env_off(void) {
    const char *v = getenv("LC_BF16");
    had_env = v != NULL;
    if (v) snprintf(saved_env, sizeof saved_env, "%s", v);
    setenv("LC_BF16", "off", 1);
    lc_gemm_bf16_force_portable(0); /* the environment is read again */
}

static void bf16_env_restore(void) {
    if (had_env) setenv("LC_BF16", saved_env, 1);
    else unsetenv("LC_BF16");
    lc_gemm_bf16_force_portable(0);
}

/* |g16 - g32| / |g32| over a whole gradient buffer. */
static double relative_gap(const float *g16, const float *g32, size_t n) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)g16[i] - g32[i];
        diff += d * d, norm += (double)g32[i] * g32[i];
    }
    return sqrt(diff / norm);
}

/* ------------------------------------------------------------ the classifier */

enum { CB = 4, CMAX = 48 };

static lc_classify_config classify_config(void) {
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.n_layer = 2, c.d_model = 32, c.n_head = 2, c.d_ff = 64, c.max_len = CMAX, c.n_classes = 3;
    strcpy(c.attn, "window:w=8,global=2");
    return c;
}

typedef struct {
    int ids[CB][CMAX], len[CB], labels[CB];
    const int *ptr[CB];
    lc_classify_batch b;
} cbatch;

static void classify_batch(cbatch *c) {
    for (int i = 0; i < CB; i++) {
        c->len[i] = 10 + 11 * i, c->labels[i] = i % 3, c->ptr[i] = c->ids[i];
        for (int t = 0; t < c->len[i]; t++) c->ids[i][t] = (int)(lc_rng_next(&rng) >> 56);
    }
    c->b = (lc_classify_batch){CB, c->ptr, c->len};
}

/* Loss and gradients of one batch of m (zeroed first). */
static int classify_pass(lc_classifier *m, const cbatch *c, double *loss) {
    lc_classifier_zero_grad(m);
    long correct;
    if (lc_classifier_forward(m, &c->b, c->labels, 0, loss, &correct) || lc_classifier_backward(m, 1.0f)) {
        CHECK(0, "%s", lc_last_error());
        return 1;
    }
    return 0;
}

TEST(classifier_near_fp32_and_fp32_bits_when_off) {
    const lc_classify_config c = classify_config();
    cbatch data;
    classify_batch(&data);
    lc_classifier *m32 = NULL, *m16 = NULL;
    if (lc_classifier_create(&c, CB, 0, 7, &m32) || lc_classifier_create(&c, CB, 0, 7, &m16)) {
        CHECK(0, "%s", lc_last_error());
        lc_classifier_free(m32);
        return;
    }
    CHECK(lc_classifier_set_precision(m16, LC_PRECISION_BF16) == LC_OK, "%s", lc_last_error());
    double l32, l16;
    if (classify_pass(m32, &data, &l32)) goto done;
    for (int path = 0; path < (has_vector ? 2 : 1); path++) {
        const char *name = use_path(path);
        if (classify_pass(m16, &data, &l16)) goto done;
        const double rel = relative_gap(m16->grads, m32->grads, m32->ptab.total), lrel = fabs(l16 - l32) / l32;
        printf("  classifier %s: loss %.6f (fp32 %.6f), gradient off by %.2e of its norm\n", name, l16, l32, rel);
        CHECK(lrel < 0.01 && rel < 0.05 && rel > 0, "%s: loss off by %.3g, gradient by %.3g", name, lrel, rel);
    }
    /* bf16 asked where it cannot run: the fp32 products, bit for bit */
    bf16_env_off();
    if (!classify_pass(m16, &data, &l16))
        CHECK(l16 == l32 && !memcmp(m16->grads, m32->grads, m32->ptab.total * sizeof(float)),
              "LC_BF16=off: the bf16 classifier differs from fp32");
    bf16_env_restore();
done:
    lc_gemm_bf16_force_portable(0);
    lc_classifier_free(m32), lc_classifier_free(m16);
}

TEST(classifier_precision_through_checkpoint) {
    lc_classify_config c = classify_config();
    c.precision = LC_PRECISION_BF16;
    lc_classifier *m = NULL, *back = NULL;
    if (lc_classifier_create(&c, CB, 0, 7, &m)) { CHECK(0, "%s", lc_last_error()); return; }
    char *names[3] = {"a", "b", "c"};
    const lc_label_set labels = {3, names};
    lc_classify_run run, run_back;
    lc_classify_run_default(&run);
    lc_label_set got = {0, NULL};
    CHECK(lc_classifier_save(m, &run, &labels, NULL, tmp_path("c.st")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_classifier_load(tmp_path("c.st"), CB, 0, &back, &run_back, &got, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(back && lc_classifier_config(back)->precision == LC_PRECISION_BF16, "precision lost in the checkpoint");
    CHECK(lc_classifier_set_precision(m, (lc_precision)7) == LC_ERR_ARG && strstr(lc_last_error(), "precision"),
          "precision 7 accepted");
    CHECK(lc_classifier_config(m)->precision == LC_PRECISION_BF16, "a refused precision changed the classifier");
    c.precision = (lc_precision)2;
    CHECK(lc_classify_config_validate(&c) == LC_ERR_ARG, "config with precision 2 accepted");
    lc_label_set_free(&got);
    lc_classifier_free(m), lc_classifier_free(back);
}

/* ------------------------------------------------------------ HIBERT */

enum { HD = 2, HS = 7, HLEN = 40 };

typedef struct {
    uint8_t bytes[HD * HS][HLEN];
    const uint8_t *sent[HD * HS];
    int len[HD * HS], n_sents[HD];
    uint8_t labels[HD * HS];
    lc_hibert_batch b;
} hbatch;

static void hibert_batch(hbatch *h) {
    h->n_sents[0] = HS, h->n_sents[1] = HS - 2;
    const int n = h->n_sents[0] + h->n_sents[1];
    for (int i = 0; i < n; i++) {
        h->len[i] = 5 + (int)(lc_rng_next(&rng) % (HLEN - 5)), h->sent[i] = h->bytes[i], h->labels[i] = i % 3 == 0;
        for (int t = 0; t < h->len[i]; t++) h->bytes[i][t] = (uint8_t)(32 + lc_rng_next(&rng) % 90);
    }
    h->b = (lc_hibert_batch){HD, h->n_sents, h->sent, h->len};
}

static lc_hibert_config hibert_config(void) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    const lc_hibert_stack s = {1, 24, 2, 48, "full"};
    c.sent = c.doc = c.dec = s;
    c.doc.d_model = 32, c.doc.d_ff = 64; /* so doc.proj and dec.proj exist */
    c.max_sent_len = HLEN, c.max_sents = HS;
    return c;
}

/* Loss and gradients of one batch: extraction (pretrain 0) or masked-sentence pre-training (1). */
static int hibert_pass(lc_hibert *m, const hbatch *h, int pretrain, double *loss) {
    lc_hibert_zero_grad(m);
    long count;
    lc_status st = pretrain ? lc_hibert_pretrain_forward(m, &h->b, 11, 0, loss, &count)
                            : lc_hibert_extract_forward(m, &h->b, h->labels, 0, loss, &count);
    if (st || lc_hibert_backward(m, 1.0f)) {
        CHECK(0, "%s", lc_last_error());
        return 1;
    }
    return 0;
}

TEST(hibert_near_fp32_and_fp32_bits_when_off) {
    const lc_hibert_config c = hibert_config();
    const lc_hibert_limits lim = {HD, 0, 0, 0, 0};
    hbatch data;
    hibert_batch(&data);
    lc_hibert *m32 = NULL, *m16 = NULL;
    if (lc_hibert_create(&c, &lim, 3, &m32) || lc_hibert_create(&c, &lim, 3, &m16)) {
        CHECK(0, "%s", lc_last_error());
        lc_hibert_free(m32);
        return;
    }
    CHECK(lc_hibert_set_precision(m16, LC_PRECISION_BF16) == LC_OK, "%s", lc_last_error());
    const size_t n = m32->ptab.total;
    float *g32 = malloc(n * sizeof *g32);
    if (!g32) abort();
    for (int pretrain = 0; pretrain < 2; pretrain++) {
        double l32, l16;
        if (hibert_pass(m32, &data, pretrain, &l32)) break;
        memcpy(g32, m32->grads, n * sizeof *g32);
        for (int path = 0; path < (has_vector ? 2 : 1); path++) {
            const char *name = use_path(path);
            if (hibert_pass(m16, &data, pretrain, &l16)) break;
            const double rel = relative_gap(m16->grads, g32, n), lrel = fabs(l16 - l32) / l32;
            printf("  hibert %s %s: loss %.6f (fp32 %.6f), gradient off by %.2e of its norm\n",
                   pretrain ? "pretrain" : "extract", name, l16, l32, rel);
            CHECK(lrel < 0.01 && rel < 0.05 && rel > 0, "%s %s: loss off by %.3g, gradient by %.3g",
                  pretrain ? "pretrain" : "extract", name, lrel, rel);
        }
        bf16_env_off();
        if (!hibert_pass(m16, &data, pretrain, &l16))
            CHECK(l16 == l32 && !memcmp(m16->grads, g32, n * sizeof *g32), "LC_BF16=off: bf16 HIBERT (%s) differs "
                  "from fp32", pretrain ? "pretrain" : "extract");
        bf16_env_restore();
    }
    lc_gemm_bf16_force_portable(0);
    free(g32);
    lc_hibert_free(m32), lc_hibert_free(m16);
}

TEST(hibert_precision_through_checkpoint) {
    lc_hibert_config c = hibert_config();
    c.precision = LC_PRECISION_BF16;
    const lc_hibert_limits lim = {HD, HD * HS, HD * HS * HLEN, 0, 1};
    lc_hibert *m = NULL, *back = NULL;
    if (lc_hibert_create(&c, &lim, 3, &m)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_hibert_run run;
    lc_hibert_run_default(&run);
    run.limits = lim;
    CHECK(lc_hibert_save(m, &run, tmp_path("h.st")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_load(tmp_path("h.st"), &lim, &back, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(back && lc_hibert_get_config(back)->precision == LC_PRECISION_BF16, "precision lost in the checkpoint");
    CHECK(lc_hibert_set_precision(m, (lc_precision)7) == LC_ERR_ARG && strstr(lc_last_error(), "precision"),
          "precision 7 accepted");
    CHECK(lc_hibert_get_config(m)->precision == LC_PRECISION_BF16, "a refused precision changed the model");
    c.precision = (lc_precision)2;
    CHECK(lc_hibert_config_validate(&c) == LC_ERR_ARG, "config with precision 2 accepted");
    lc_hibert_free(m), lc_hibert_free(back);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_precs_XXXXXX")) return 1;
    lc_rng_seed(&rng, 41);
    lc_set_threads(0);
    has_vector = lc_cpu_has_avx512_bf16();
    const char *env = getenv("LC_BF16");
    if (env && (!strcmp(env, "off") || !strcmp(env, "portable"))) has_vector = 0;
    printf("bf16 paths: %s%s\n", has_vector ? "avx512bf16 and " : "", "portable");
    RUN(classifier_near_fp32_and_fp32_bits_when_off);
    RUN(classifier_precision_through_checkpoint);
    RUN(hibert_near_fp32_and_fp32_bits_when_off);
    RUN(hibert_precision_through_checkpoint);
    tmpdir_remove();
    return test_summary("test_precision_stacks");
}
