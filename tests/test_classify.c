/* Tests of sequence classification (models/classify/classify*.c, models/classify/checkpoint_classify.c, models/classify/classify_init.c):
 * finite differences over every tensor (pre/post-LN, [CLS]/mean/max pooling, a window+global spec and a mixed
 * one), the [CLS] rule (a global token for window, an ordinary position for full and block), packing
 * against one-example batches, truncation, checkpoints (word vocabulary and labels round trip, refusals),
 * the start from a masked-LM checkpoint, the documentation of every key and tensor, and that a tiny
 * model learns a toy task. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "classify_kit.h"
#include "fd_kit.h"
#include "test_files.h"
#include "models/classify/classify.h"
#include "models/lm/lm.h"

static lc_classifier *make(const char *attn, lc_norm norm, lc_pool pool, int tokens_words, int vocab, uint64_t seed) {
    lc_classify_config c;
    toy_config(&c, attn, tokens_words, vocab, MAX_LEN);
    c.norm = norm, c.pool = pool;
    return toy_create(&c, N_EX, seed);
}

typedef struct {
    lc_classifier *m;
    lc_classify_batch b;
    const int *labels;
} fd_ctx;

static double mean_loss(void *user) {
    fd_ctx *c = user;
    double sum = 0;
    CHECK(lc_classifier_forward(c->m, &c->b, c->labels, 0, &sum, NULL) == LC_OK, "%s", lc_last_error());
    return sum / c->b.n;
}

/* The backward's gradient of every tensor of c->m against finite differences of the mean loss. */
static void fd_check_model(fd_ctx *c, const char *what) {
    lc_classifier *m = c->m;
    lc_classifier_zero_grad(m);
    double sum;
    CHECK(lc_classifier_forward(m, &c->b, c->labels, 0, &sum, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_classifier_backward(m, 1.0f / (float)c->b.n) == LC_OK, "%s", lc_last_error());
    float *g = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    const int checked = fd_check_table(&m->ptab, m->params, g, mean_loss, c, what, 2e-2, 2e-4);
    CHECK(checked == m->ptab.n && checked >= 20, "%s: checked %d tensors", what, checked);
    free(g);
}

static void check_gradients(const char *attn, lc_norm norm, lc_pool pool) {
    lc_classifier *m = make(attn, norm, pool, 0, 256, 3);
    if (!m) return;
    fd_sharpen(&m->tensors, &m->ptab, m->params, 21);
    toy t;
    toy_fill(&t, 0, 256, 3, 5);
    fd_ctx c = {m, toy_batch(&t, 0, N_EX), t.labels};
    char what[160];
    snprintf(what, sizeof what, "%s %s %s", attn, norm == LC_NORM_PRE ? "pre" : "post", lc_pool_name(pool));
    fd_check_model(&c, what);
    lc_classifier_free(m);
}

TEST(gradients_full_cls_pre) { check_gradients("full", LC_NORM_PRE, LC_POOL_CLS); }
TEST(gradients_window_global_mean_post) { check_gradients("window:w=2", LC_NORM_POST, LC_POOL_MEAN); }
TEST(gradients_mixed_heads_cls) { check_gradients("1xfull+window:w=1", LC_NORM_PRE, LC_POOL_CLS); }
TEST(gradients_full_max_pre) { check_gradients("full", LC_NORM_PRE, LC_POOL_MAX); }

/* The bracket-depth embedding (4 rows) over the toy examples with depths 0..5 (4 and 5 clipped to row 3):
 * finite differences over every tensor, wde included; a batch without depths is refused by name. */
TEST(gradients_bracket_depth) {
    lc_classify_config cfg;
    toy_config(&cfg, "full", 0, 256, MAX_LEN);
    cfg.bracket_depth = 4;
    lc_classifier *m = toy_create(&cfg, N_EX, 3);
    if (!m) return;
    CHECK(m->wde != NULL, "no wde tensor");
    fd_sharpen(&m->tensors, &m->ptab, m->params, 21);
    toy t;
    toy_fill(&t, 0, 256, 3, 5);
    int depth[N_EX][MAX_LEN + 4];
    const int *dptr[N_EX];
    for (int i = 0; i < N_EX; i++) {
        dptr[i] = depth[i];
        for (int k = 0; k < MAX_LEN + 4; k++) depth[i][k] = (k * 3 + i) % 6;
    }
    fd_ctx c = {m, toy_batch(&t, 0, N_EX), t.labels};
    CHECK(lc_classifier_forward(m, &c.b, t.labels, 0, NULL, NULL) == LC_ERR_ARG &&
              strstr(lc_last_error(), "no bracket depths"), "a batch without depths: %s", lc_last_error());
    c.b.depth = dptr;
    fd_check_model(&c, "bracket depth");
    /* a depth past the last row reads as the last row, a negative one as row 0 */
    float before[N_EX * 3];
    CHECK(lc_classifier_forward(m, &c.b, t.labels, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(before, lc_classifier_logits(m), sizeof before);
    for (int i = 0; i < N_EX; i++)
        for (int k = 0; k < MAX_LEN + 4; k++) {
            const int d = depth[i][k];
            depth[i][k] = d >= 3 ? 3 + 7 * k : d == 0 ? -k : d;
        }
    CHECK(lc_classifier_forward(m, &c.b, t.labels, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK_CLOSE("clipped depths", lc_classifier_logits(m), before, N_EX * 3, 0, 0);
    /* the checkpoint keeps the field and the table */
    const char *path = tmp_path("depth.safetensors");
    lc_classifier *r = toy_round_trip(m, NULL, path, NULL);
    if (r) {
        CHECK(r->cfg.bracket_depth == 4 && r->wde, "bracket_depth %d after loading", r->cfg.bracket_depth);
        CHECK(lc_classifier_forward(r, &c.b, t.labels, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
        CHECK_CLOSE("logits after loading", lc_classifier_logits(r), before, N_EX * 3, 0, 0);
        /* --init from it: encoder, depth rows and head, so the same logits */
        lc_classifier *i2 = toy_create(&cfg, N_EX, 99);
        CHECK(i2 && lc_classifier_init_from_any(i2, NULL, path) == LC_OK, "%s", lc_last_error());
        if (i2) {
            CHECK(!memcmp(i2->wde, m->wde, sizeof(float) * 4 * 16), "--init copies the depth rows");
            CHECK(lc_classifier_forward(i2, &c.b, t.labels, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
            CHECK_CLOSE("logits after --init", lc_classifier_logits(i2), before, N_EX * 3, 0, 0);
        }
        lc_classifier_free(i2);
    }
    lc_classifier_free(r);
    lc_classifier_free(m);
}

/* lc_classify_tokens: ids as lc_tokenize's, "(" and ")" skipped with drop_parens, the square brackets' depth. */
TEST(tokens_depth_and_parens) {
    const char *text = "( [MAX 2 ( [MIN 3 4 ] ) ] )";
    const uint8_t *tx[1] = {(const uint8_t *)text};
    size_t tl[1] = {strlen(text)};
    lc_word_vocab *v = NULL;
    CHECK(lc_word_vocab_build(tx, tl, 1, 1, 0, &v) == LC_OK, "%s", lc_last_error());
    if (!v) return;
    lc_classify_config c;
    toy_config(&c, "full", 1, lc_word_vocab_size(v), 64);
    int ids[16], depth[16], ref[16];
    const long n_ref = lc_tokenize(LC_TOKENS_WORDS, v, tx[0], tl[0], 16, ref);
    long n = lc_classify_tokens(&c, v, tx[0], tl[0], 16, ids, depth);
    const int kept[] = {0, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0};
    CHECK(n == 11 && n == n_ref && !memcmp(ids, ref, sizeof(int) * 11) && !memcmp(depth, kept, sizeof kept),
          "parens kept: %ld tokens", n);
    c.drop_parens = 1;
    n = lc_classify_tokens(&c, v, tx[0], tl[0], 16, ids, depth);
    const int dropped[] = {1, 1, 2, 2, 2, 2, 1};
    const int want_ids[] = {ref[1], ref[2], ref[4], ref[5], ref[6], ref[7], ref[9]};
    CHECK(n == 7 && !memcmp(depth, dropped, sizeof dropped) && !memcmp(ids, want_ids, sizeof want_ids),
          "parens dropped: %ld tokens, depths %d %d %d %d %d %d %d", n, depth[0], depth[1], depth[2], depth[3], depth[4],
          depth[5], depth[6]);
    int few[3] = {-1, -1, -1};
    CHECK(lc_classify_tokens(&c, v, tx[0], tl[0], 2, few, NULL) == 7 && few[1] == ref[2] && few[2] == -1,
          "a max_len of 2 writes 2 ids and counts 7");
    c.drop_parens = 0, c.tokens = LC_TOKENS_BYTES, c.vocab = 256;
    const uint8_t bytes[] = "a[b]]c[";
    n = lc_classify_tokens(&c, NULL, bytes, 7, 16, ids, depth);
    const int bd[] = {0, 1, 1, 1, 0, 0, 1};
    CHECK(n == 7 && !memcmp(depth, bd, sizeof bd) && ids[1] == '[', "bytes: %ld tokens", n);
    lc_classify_config_default(&c);
    c.drop_parens = 1;
    CHECK(lc_classify_config_validate(&c) == LC_ERR_ARG && strstr(lc_last_error(), "--parens drop needs --tokens words"),
          "%s", lc_last_error());
    lc_classify_config_default(&c);
    c.bracket_depth = LC_BRACKET_DEPTH_LIMIT + 1;
    CHECK(lc_classify_config_validate(&c) == LC_ERR_ARG && strstr(lc_last_error(), "bracket-depth"), "%s", lc_last_error());
    lc_word_vocab_free(v);
}

/* How much the logits of example 3 (12 tokens after truncation) move when its token k changes. */
static double logit_shift(lc_classifier *m, int k) {
    toy t;
    toy_fill(&t, 0, 256, 3, 7);
    const lc_classify_batch b = toy_batch(&t, 3, 1);
    float before[3], after[3];
    CHECK(lc_classifier_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(before, lc_classifier_logits(m), sizeof before);
    t.ids[3][k] = (t.ids[3][k] + 77) % 256;
    CHECK(lc_classifier_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(after, lc_classifier_logits(m), sizeof after);
    double d = 0;
    for (int i = 0; i < 3; i++) d += fabs(after[i] - before[i]);
    return d;
}

static int has_tensor(const lc_classifier *m, const char *part) {
    for (int i = 0; i < m->tensors.n; i++)
        if (strstr(m->tensors.t[i].name, part)) return 1;
    return 0;
}

/* [CLS] is position 0 (its token, row 0 of each example); with a one-sided window of 1 over 2 layers an
 * ordinary position sees 2 positions on each side: token 10 (row 11) is out of [CLS]'s reach unless [CLS]
 * is global. */
TEST(cls_global_rule) {
    lc_classifier *w = make("window:w=1", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 4);
    lc_classifier *f = make("full", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 4);
    lc_classifier *k = make("block:b=4", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 4);
    if (!w || !f || !k) return;
    CHECK(w->st.layers[0].group[0].n_global == 1 && has_tensor(w, "attn.global.qkv"), "window: [CLS] is global");
    CHECK(f->st.layers[0].group[0].n_global == 0 && !has_tensor(f, "attn.global"), "full: no global token");
    CHECK(k->st.layers[0].group[0].n_global == 0 && !has_tensor(k, "attn.global"), "block: no global token");
    CHECK(logit_shift(w, 10) > 1e-6, "window: a far token reaches the global [CLS]");
    CHECK(logit_shift(f, 10) > 1e-6, "full: every token reaches [CLS]");
    CHECK(logit_shift(k, 10) == 0, "block: a token outside [CLS]'s block does not reach it (an ordinary position)");
    CHECK(logit_shift(k, 2) > 1e-6, "block: a token of [CLS]'s block reaches it");
    /* the global row's own projection gets gradient only through [CLS]: nonzero for window */
    toy t;
    toy_fill(&t, 0, 256, 3, 9);
    const lc_classify_batch b = toy_batch(&t, 0, N_EX);
    lc_classifier_zero_grad(w);
    CHECK(lc_classifier_forward(w, &b, t.labels, 0, NULL, NULL) == LC_OK && lc_classifier_backward(w, 1) == LC_OK, "%s",
          lc_last_error());
    double gn = 0;
    for (int i = 0; i < 3 * 16 * 16; i++) gn += fabs(w->st.gblk[1].qkvg_w[i]);
    CHECK(gn > 0, "the global projection of the last layer has gradient %g", gn);
    /* a user's global list without 0 gets [CLS] in front */
    lc_classifier *l = make("window:w=1,global=3/5", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 4);
    if (l) {
        const lc_attn_group *g = &l->st.layers[0].group[0];
        CHECK(g->global_listed && g->n_global == 3 && g->global_pos[0] == 0 && g->global_pos[1] == 3, "listed globals");
    }
    lc_classifier_free(w), lc_classifier_free(f), lc_classifier_free(k), lc_classifier_free(l);
}

/* One packed batch of 5 examples of 4 lengths against 5 one-example batches: same logits, same loss. */
TEST(packing_matches_single_examples) {
    const char *specs[] = {"full", "window:w=2", "2xwindow:w=1"};
    for (int s = 0; s < 3; s++) {
        lc_classifier *m = make(specs[s], LC_NORM_PRE, s == 1 ? LC_POOL_MEAN : s == 2 ? LC_POOL_MAX : LC_POOL_CLS, 0, 256, 6);
        if (!m) return;
        fd_sharpen(&m->tensors, &m->ptab, m->params, 8);
        toy t;
        toy_fill(&t, 0, 256, 3, 11);
        const lc_classify_batch all = toy_batch(&t, 0, N_EX);
        double packed = 0, single = 0, part;
        long right = 0, r1;
        CHECK(lc_classifier_forward(m, &all, t.labels, 0, &packed, &right) == LC_OK, "%s", lc_last_error());
        CHECK(lc_classifier_batch_rows(m, &all) == 4 + 8 + 8 + 13 + 1, "rows %ld", lc_classifier_batch_rows(m, &all));
        float logits[N_EX * 3];
        memcpy(logits, lc_classifier_logits(m), sizeof logits);
        for (int i = 0; i < N_EX; i++) {
            const lc_classify_batch one = toy_batch(&t, i, 1);
            CHECK(lc_classifier_forward(m, &one, t.labels + i, 0, &part, &r1) == LC_OK, "%s", lc_last_error());
            CHECK_CLOSE(specs[s], lc_classifier_logits(m), logits + 3 * i, 3, 1e-5, 1e-6);
            single += part, right -= r1;
        }
        CHECK(fabs(packed - single) <= 1e-5 * fabs(single) + 1e-6, "%s: packed %.9g, one by one %.9g", specs[s], packed,
              single);
        CHECK(right == 0, "%s: correct counts differ", specs[s]);
        lc_classifier_free(m);
    }
}

TEST(refusals) {
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.max_len = 0;
    CHECK(lc_classify_config_validate(&c) == LC_ERR_ARG && strstr(lc_last_error(), "max-len"), "%s", lc_last_error());
    lc_classify_config_default(&c);
    c.n_classes = 1;
    CHECK(lc_classify_config_validate(&c) == LC_ERR_ARG, "one class");
    lc_classifier *m = make("full", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 1);
    if (!m) return;
    toy t;
    toy_fill(&t, 0, 256, 3, 2);
    const lc_classify_batch b = toy_batch(&t, 0, 2);
    int bad[2] = {0, 3};
    CHECK(lc_classifier_forward(m, &b, bad, 0, NULL, NULL) == LC_ERR_ARG, "label out of range");
    t.ids[0][1] = 256;
    CHECK(lc_classifier_forward(m, &b, NULL, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "id 256"), "%s",
          lc_last_error());
    CHECK(lc_classifier_backward(m, 1) == LC_ERR_ARG, "backward without labels");
    lc_classifier_free(m);
}

static const char *word_texts[] = {"the cat sat", "the dog ran far", "a cat and a dog", "far far away"};

TEST(checkpoint_round_trip_words) {
    const uint8_t *tx[4];
    size_t tl[4];
    for (int i = 0; i < 4; i++) tx[i] = (const uint8_t *)word_texts[i], tl[i] = strlen(word_texts[i]);
    lc_word_vocab *v = NULL;
    CHECK(lc_word_vocab_build(tx, tl, 4, 1, 0, &v) == LC_OK, "%s", lc_last_error());
    if (!v) return;
    lc_classifier *m = make("window:w=2", LC_NORM_PRE, LC_POOL_MEAN, 1, lc_word_vocab_size(v), 12);
    if (!m) return;
    char *names[3] = {"neg", "pos", "mixed one"};
    const lc_label_set labels = {3, names};
    toy t;
    toy_fill(&t, 0, lc_word_vocab_size(v), 3, 3);
    const lc_classify_batch b = toy_batch(&t, 0, N_EX);
    lc_train_options o;
    lc_train_options_default(&o);
    o.lr = 1e-2f, o.warmup = 0, o.steps = 5;
    CHECK(lc_classifier_step(m, &o, &b, t.labels, NULL) == LC_OK, "%s", lc_last_error());
    lc_classify_run run;
    lc_classify_run_default(&run);
    run.opts = o, run.valid_accuracy = 0.5f, run.examples = 5;
    run.best_accuracy = 0.75f, run.best_step = 3, run.train_examples = 9;
    const char *path = tmp_path("words.safetensors");
    CHECK(lc_classifier_save(m, &run, &labels, v, path) == LC_OK, "%s", lc_last_error());
    CHECK(lc_classifier_save(m, &run, &labels, NULL, tmp_path("x.safetensors")) == LC_ERR_ARG, "words need a vocab");
    lc_classifier *r = NULL;
    lc_label_set back = {0, NULL};
    lc_word_vocab *vb = NULL;
    lc_classify_run rb;
    CHECK(lc_classifier_load(path, 0, 0, &r, &rb, &back, &vb) == LC_OK, "%s", lc_last_error());
    if (r && vb) {
        CHECK(back.n == 3 && !strcmp(back.name[2], "mixed one"), "labels");
        CHECK(lc_word_vocab_size(vb) == lc_word_vocab_size(v), "vocab size");
        for (int i = 0; i < 4; i++) {
            int a[8], c[8];
            const long na = lc_tokenize(LC_TOKENS_WORDS, v, tx[i], tl[i], 8, a), nc = lc_tokenize(LC_TOKENS_WORDS, vb, tx[i], tl[i], 8, c);
            CHECK(na == nc && !memcmp(a, c, sizeof(int) * (size_t)na), "ids of '%s'", word_texts[i]);
        }
        CHECK(r->step == 1 && rb.examples == 5 && rb.valid_accuracy == 0.5f && rb.opts.lr == o.lr, "run record");
        CHECK(rb.best_accuracy == 0.75f && rb.best_step == 3 && rb.train_examples == 9, "run record: best, data");
        CHECK(!memcmp(r->params, m->params, sizeof(float) * m->ptab.total), "weights");
        CHECK(!memcmp(r->adam_v, m->adam_v, sizeof(float) * m->ptab.total), "moments");
        float l1[N_EX * 3];
        CHECK(lc_classifier_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "forward");
        memcpy(l1, lc_classifier_logits(m), sizeof l1);
        CHECK(lc_classifier_forward(r, &b, NULL, 0, NULL, NULL) == LC_OK, "forward");
        CHECK(!memcmp(l1, lc_classifier_logits(r), sizeof l1), "same logits after the round trip");
    }
    /* a language-model checkpoint is refused with one line */
    lc_config lc;
    lc_config_preset(&lc, "tiny");
    lc.model = LC_MODEL_VANILLA, lc.objective = LC_OBJECTIVE_MLM, lc.n_layer = 2, lc.d_model = 16, lc.n_head = 2;
    lc.d_ff = 24, lc.seq_len = 8, lc.mem_len = 0;
    lc_model *lm = NULL;
    CHECK(lc_model_create(&lc, 2, 5, &lm) == LC_OK, "%s", lc_last_error());
    const char *lm_path = tmp_path("mlm.safetensors");
    CHECK(lm && lc_checkpoint_save(lm, &o, lm_path) == LC_OK, "%s", lc_last_error());
    lc_classifier *x = NULL;
    lc_label_set xl;
    CHECK(lc_classifier_load(lm_path, 0, 0, &x, NULL, &xl, NULL) == LC_ERR_FORMAT && strstr(lc_last_error(), "a language model checkpoint (model = vanilla), not a classifier: use it with longctx eval"),
          "%s", lc_last_error());
    lc_model *y = NULL;
    CHECK(lc_checkpoint_load(path, 0, &y, NULL) == LC_ERR_FORMAT &&
              strstr(lc_last_error(), "a classifier checkpoint (model = classify), not a language model: use it with "
                                      "longctx predict, eval --task classify"),
          "the LM reader refuses a classifier: %s", lc_last_error());
    lc_model_free(lm), lc_model_free(y);
    lc_label_set_free(&back);
    lc_word_vocab_free(vb), lc_word_vocab_free(v);
    lc_classifier_free(r), lc_classifier_free(m);
}

/* --init: the encoder's blocks, ln_f, positions and byte rows come from a masked-LM checkpoint; global
 * projections it lacks start as the layer's qkv. */
/* A 2-layer, width-16 language model of `model` and `objective` (8 positions), saved to tmp file `name`: the
 * model (NULL on failure, after a failed check) and the file's path in *path. */
static lc_model *saved_lm(lc_model_kind model, lc_objective objective, uint64_t seed, const char *name,
                          const char **path) {
    lc_config lc;
    lc_config_preset(&lc, "tiny");
    lc.model = model, lc.objective = objective, lc.n_layer = 2, lc.d_model = 16, lc.n_head = 2;
    lc.d_ff = 24, lc.seq_len = 8, lc.mem_len = model == LC_MODEL_XL ? 8 : 0;
    lc_model *lm = NULL;
    lc_train_options o;
    lc_train_options_default(&o);
    CHECK(lc_model_create(&lc, 2, seed, &lm) == LC_OK, "%s", lc_last_error());
    *path = tmp_path(name);
    CHECK(lm && lc_checkpoint_save(lm, &o, *path) == LC_OK, "%s", lc_last_error());
    return lm;
}

TEST(init_from_masked_lm) {
    const char *path;
    lc_model *lm = saved_lm(LC_MODEL_VANILLA, LC_OBJECTIVE_MLM, 5, "init.safetensors", &path);
    lc_classifier *m = make("window:w=2", LC_NORM_PRE, LC_POOL_CLS, 0, 256, 9);
    if (!lm || !m) return;
    CHECK(lc_classifier_init_from(m, path) == LC_OK, "%s", lc_last_error());
    CHECK(!memcmp(m->st.blk[1].fc1_w, lm->blk[1].fc1_w, sizeof(float) * 24 * 16), "fc1 copied");
    CHECK(!memcmp(m->st.blk[0].qkvg_w, lm->blk[0].qkv_w, sizeof(float) * 48 * 16), "global qkv from qkv");
    CHECK(!memcmp(m->wte, lm->wte, sizeof(float) * 257 * 16), "byte and mask rows");
    CHECK(!memcmp(m->st.wpe, lm->wpe, sizeof(float) * 8 * 16), "the 8 positions the LM has");
    lc_classifier *other = make("full", LC_NORM_POST, LC_POOL_CLS, 0, 256, 9);
    CHECK(other && lc_classifier_init_from(other, path) == LC_ERR_FORMAT && strstr(lc_last_error(), "post-LN"), "%s",
          lc_last_error());
    lc_classifier_free(other);
    lc_classifier_free(m);
    lc_model_free(lm);
}

/* --init from a causal language model (the causal self-pretraining of bench/lra_spt_text.sh): the same blocks,
 * positions and the 256 byte rows (the mask row keeps its own start); a Transformer-XL model is refused. */
TEST(init_from_causal_lm) {
    const char *path, *xl;
    lc_model *lm = saved_lm(LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 7, "init_clm.safetensors", &path);
    lc_classifier *m = make("window:w=2", LC_NORM_PRE, LC_POOL_MEAN, 0, 256, 9);
    if (!lm || !m) return;
    float mask_row[16];
    memcpy(mask_row, m->wte + 256 * 16, sizeof mask_row);
    CHECK(lc_classifier_init_from(m, path) == LC_OK, "%s", lc_last_error());
    CHECK(!memcmp(m->st.blk[0].qkv_w, lm->blk[0].qkv_w, sizeof(float) * 48 * 16), "qkv copied");
    CHECK(!memcmp(m->st.blk[1].fc2_w, lm->blk[1].fc2_w, sizeof(float) * 24 * 16), "fc2 copied");
    CHECK(!memcmp(m->wte, lm->wte, sizeof(float) * 256 * 16), "the byte rows");
    CHECK(!memcmp(m->wte + 256 * 16, mask_row, sizeof mask_row), "the mask row is the classifier's own");
    CHECK(!memcmp(m->st.wpe, lm->wpe, sizeof(float) * 8 * 16), "the 8 positions the LM has");
    lc_model_free(lm);
    lm = saved_lm(LC_MODEL_XL, LC_OBJECTIVE_CLM, 7, "init_xl.safetensors", &xl);
    CHECK(lm && lc_classifier_init_from(m, xl) == LC_ERR_FORMAT && strstr(lc_last_error(), "not model 'xl'"), "%s",
          lc_last_error());
    lc_classifier_free(m);
    lc_model_free(lm);
}

TEST(docs_list_every_key_and_tensor) {
    FILE *f = fopen("docs/reference/checkpoint.md", "rb");
    CHECK(f, "cannot read docs/reference/checkpoint.md");
    if (!f) return;
    static char doc[1 << 20];
    doc[fread(doc, 1, sizeof doc - 1, f)] = 0;
    fclose(f);
    char want[128];
    const char *key;
    for (int i = 0; (key = lc_classify_meta_key(i)); i++) {
        snprintf(want, sizeof want, "`%s`", key);
        CHECK(strstr(doc, want), "docs/reference/checkpoint.md lacks metadata key %s", want);
    }
    const char *extra[] = {"`classify.labels`", "`classify.words`", "`cls.dense.weight`", "`cls.dense.bias`",
                           "`cls.out.weight`", "`cls.out.bias`", "model = classify"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) CHECK(strstr(doc, extra[i]), "lacks %s", extra[i]);
}

/* Sequence i of a batch: 4 to 15 words of 7, with label 1 (half of them) token 7 (id 11) put in one place. */
static void draw_token7(lc_rng *r, learn_batch *lb, int i) {
    lb->len[i] = 4 + (int)(lc_rng_uniform(r) * 12) % 12, lb->labels[i] = lc_rng_uniform(r) < 0.5f;
    for (int k = 0; k < lb->len[i]; k++) lb->ids[i][k] = LC_WORD_FIRST + (int)(lc_rng_uniform(r) * 7) % 7;
    if (lb->labels[i]) lb->ids[i][(int)(lc_rng_uniform(r) * lb->len[i]) % lb->len[i]] = 11;
}

/* A tiny model learns "label = whether token 7 occurs" over random sequences within 150 steps. */
TEST(learns_a_toy_task) {
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.n_layer = 1, c.d_model = 16, c.n_head = 2, c.d_ff = 32, c.max_len = 16, c.n_classes = 2;
    c.tokens = LC_TOKENS_WORDS, c.vocab = 12;
    lc_classifier *m = NULL;
    CHECK(lc_classifier_create(&c, 16, 0, 1, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    long right, seen;
    toy_learn(m, 150, 0, draw_token7, &right, &seen);
    CHECK(right >= 0.9 * seen, "accuracy %ld / %ld at the end", right, seen);
    lc_classifier_free(m);
}

int main(void) {
    if (tmpdir_create("/tmp/test_classify.XXXXXX")) return 1;
    RUN(gradients_full_cls_pre);
    RUN(gradients_window_global_mean_post);
    RUN(gradients_mixed_heads_cls);
    RUN(gradients_full_max_pre);
    RUN(gradients_bracket_depth);
    RUN(tokens_depth_and_parens);
    RUN(cls_global_rule);
    RUN(packing_matches_single_examples);
    RUN(refusals);
    RUN(checkpoint_round_trip_words);
    RUN(init_from_masked_lm);
    RUN(init_from_causal_lm);
    RUN(docs_list_every_key_and_tensor);
    RUN(learns_a_toy_task);
    tmpdir_remove();
    return test_summary("test_classify");
}
