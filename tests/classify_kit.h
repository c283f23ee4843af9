/* The toy examples of the classifier tests (tests/test_classify.c, tests/test_classify_mlm.c): N_EX sequences of
 * lengths 3, 7, 7, 15 (longer than MAX_LEN 12, so truncated) and 0 (the [CLS] alone) of random ids, with random
 * labels; and the learning tests' runs (toy_learn). Include after harness.h. */
#ifndef LC_TESTS_CLASSIFY_KIT_H
#define LC_TESTS_CLASSIFY_KIT_H

#include <stdint.h>
#include <stdio.h>

#include "core/rng.h"
#include "models/classify/classify.h"

#define MAX_LEN 12
#define N_EX 5

typedef struct {
    int ids[N_EX][MAX_LEN + 4];
    int len[N_EX];
    const int *ptr[N_EX];
    int labels[N_EX];
} toy;

/* Ids in [lo, hi); with classes > 0, each example's label below classes (drawn before its ids). */
static inline void toy_fill(toy *t, int lo, int hi, int classes, uint64_t seed) {
    static const int lens[N_EX] = {3, 7, 7, 15, 0};
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int i = 0; i < N_EX; i++) {
        t->len[i] = lens[i], t->ptr[i] = t->ids[i], t->labels[i] = 0;
        if (classes > 0) t->labels[i] = (int)(lc_rng_uniform(&r) * classes) % classes;
        for (int k = 0; k < MAX_LEN + 4; k++) t->ids[i][k] = lo + (int)(lc_rng_uniform(&r) * (hi - lo)) % (hi - lo);
    }
}

/* The tests' classifier: 2 layers of width 16, 2 heads, d_ff 24, 3 classes through a hidden layer of 12, attention
 * spec attn over bytes or words (vocab), sequences up to max_len; the caller sets the rest before create. */
static inline void toy_config(lc_classify_config *c, const char *attn, int words, int vocab, int max_len) {
    lc_classify_config_default(c);
    c->n_layer = 2, c->d_model = 16, c->n_head = 2, c->d_ff = 24, c->max_len = max_len, c->n_classes = 3;
    c->d_hidden = 12, c->tokens = words ? LC_TOKENS_WORDS : LC_TOKENS_BYTES, c->vocab = vocab;
    snprintf(c->attn, sizeof c->attn, "%s", attn);
}

/* lc_classifier_create for up to max_batch examples; NULL (and a failed CHECK naming the spec) when refused. */
static inline lc_classifier *toy_create(const lc_classify_config *c, int max_batch, uint64_t seed) {
    lc_classifier *m = NULL;
    CHECK(lc_classifier_create(c, max_batch, 0, seed, &m) == LC_OK, "%s: %s", c->attn, lc_last_error());
    return m;
}

/* m saved to path (labels a, b, c; the default run record; words v for a words model) and loaded back: the
 * loaded model (NULL, after a failed CHECK, when either step failed), its vocabulary in *vb (vb may be NULL). */
static inline lc_classifier *toy_round_trip(const lc_classifier *m, const lc_word_vocab *v, const char *path,
                                            lc_word_vocab **vb) {
    char *names[3] = {"a", "b", "c"};
    const lc_label_set labels = {3, names};
    lc_classify_run run;
    lc_classify_run_default(&run);
    CHECK(lc_classifier_save(m, &run, &labels, v, path) == LC_OK, "%s", lc_last_error());
    lc_classifier *back = NULL;
    lc_label_set lb = {0, NULL};
    CHECK(lc_classifier_load(path, 0, 0, &back, NULL, &lb, vb) == LC_OK, "%s", lc_last_error());
    lc_label_set_free(&lb);
    return back;
}

/* Examples first .. first + n - 1 as a batch. */
static inline lc_classify_batch toy_batch(const toy *t, int first, int n) {
    return (lc_classify_batch){n, t->ptr + first, t->len + first};
}

/* A learning test's batches: LEARN_BATCH sequences of up to LEARN_LEN ids (labels: each sequence's class). */
enum { LEARN_BATCH = 16, LEARN_LEN = 16 };
typedef struct {
    int ids[LEARN_BATCH][LEARN_LEN], len[LEARN_BATCH], labels[LEARN_BATCH];
    const int *ptr[LEARN_BATCH];
} learn_batch;

/* `steps` optimizer steps (lr 3e-3, warm-up 10, no weight decay) on batches whose sequence i draw(r, lb, i)
 * fills from one generator (seed 4); over the last 20 steps *right of *seen predictions were right (the
 * labels, or with mlm the masked tokens, which the steps then train without labels). */
static inline void toy_learn(lc_classifier *m, long steps, int mlm, void (*draw)(lc_rng *r, learn_batch *lb, int i),
                             long *right, long *seen) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.lr = 3e-3f, o.warmup = 10, o.steps = steps, o.weight_decay = 0;
    learn_batch lb;
    lc_rng r;
    lc_rng_seed(&r, 4);
    *right = 0, *seen = 0;
    for (long step = 0; step < o.steps; step++) {
        for (int i = 0; i < LEARN_BATCH; i++) lb.ptr[i] = lb.ids[i], draw(&r, &lb, i);
        const lc_classify_batch b = {LEARN_BATCH, lb.ptr, lb.len};
        if (step >= o.steps - 20) {
            long n = LEARN_BATCH, ok;
            if (mlm)
                CHECK(lc_classifier_mlm_forward(m, &b, (uint64_t)step, 0, NULL, &n, &ok) == LC_OK, "%s", lc_last_error());
            else
                CHECK(lc_classifier_forward(m, &b, lb.labels, 0, NULL, &ok) == LC_OK, "%s", lc_last_error());
            *right += ok, *seen += n;
        }
        CHECK(lc_classifier_step(m, &o, &b, mlm ? NULL : lb.labels, NULL) == LC_OK, "%s", lc_last_error());
    }
}

#endif
