/* Tests of the hierarchical model (HIBERT) and its extraction head: directional finite differences of
 * the whole model's loss against the backward for every parameter tensor (pre- and post-LN, full and
 * windowed/global attention, sentence and document widths that differ, hashed word vectors); a packed batch of documents gives
 * each document's scores and loss as it does alone; a sentence's bytes reach only its own document's
 * scores, and truncated bytes reach nothing; the tensor list; the refusals; a tiny model learns a toy
 * extraction task; the masked-sentence rule's statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "harness.h"
#include "hibert_kit.h"
#include "fd_kit.h"
#include "longctx.h"
#include "models/hibert/hibert.h"

enum { MAX_SENT_LEN = 12, MAX_SENTS = 6, N_DOCS = 3 };

/* A toy batch: 3 documents of 3, 2 and 4 sentences, lengths from 0 to past the truncation. */
typedef struct {
    int n_sents[N_DOCS];
    int len[16];
    uint8_t bytes[16][24];
    const uint8_t *ptr[16];
    uint8_t labels[16];
    float feat[16 * LC_HIBERT_MAX_FEATURES]; /* sentence features (cfg.head_features of them each) */
    int total;
} toy;

static int head_feats; /* cfg.head_features of the models made (the head-feature tests set it) */

static lc_hibert_batch toy_batch(const toy *t, int doc0, int n_docs) {
    int s0 = 0;
    for (int j = 0; j < doc0; j++) s0 += t->n_sents[j];
    lc_hibert_batch b = {n_docs, t->n_sents + doc0, t->ptr + s0, t->len + s0, head_feats ? t->feat + s0 * head_feats : NULL};
    return b;
}

/* Fills t from seed; returns its whole batch (all N_DOCS documents). */
static lc_hibert_batch toy_make(toy *t, uint64_t seed) {
    static const int n_sents[N_DOCS] = {3, 2, 4};
    static const int len[9] = {5, 0, 16, 7, 7, 3, 12, 1, 9};
    lc_rng r;
    lc_rng_seed(&r, seed);
    t->total = 0;
    for (int j = 0; j < N_DOCS; j++) t->n_sents[j] = n_sents[j], t->total += n_sents[j];
    for (int i = 0; i < t->total; i++) {
        t->len[i] = len[i];
        for (int k = 0; k < 24; k++) t->bytes[i][k] = (uint8_t)(lc_rng_next(&r) % 256);
        t->ptr[i] = t->bytes[i];
        t->labels[i] = (uint8_t)(lc_rng_next(&r) % 2);
    }
    for (int i = 0; i < 16 * LC_HIBERT_MAX_FEATURES; i++) t->feat[i] = (float)(lc_rng_next(&r) % 2001) / 1000.0f - 1;
    return toy_batch(t, 0, N_DOCS);
}

static int word_buckets; /* cfg.sent_words of the models made (the word-vector tests set it) */

static lc_hibert *make_dec(const char *sent_attn, const char *doc_attn, const char *dec_attn, lc_norm norm,
                           int doc_width, int dec_width, uint64_t seed) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.sent_words = word_buckets;
    c.head_features = head_feats;
    c.sent = (lc_hibert_stack){2, 16, 2, 24, ""};
    c.doc = (lc_hibert_stack){2, doc_width, 2, 20, ""};
    c.dec = (lc_hibert_stack){2, dec_width, 2, 18, ""};
    snprintf(c.sent.attn, sizeof c.sent.attn, "%s", sent_attn);
    snprintf(c.doc.attn, sizeof c.doc.attn, "%s", doc_attn);
    snprintf(c.dec.attn, sizeof c.dec.attn, "%s", dec_attn);
    c.max_sent_len = MAX_SENT_LEN, c.max_sents = MAX_SENTS, c.norm = norm;
    char what[160];
    snprintf(what, sizeof what, "%s / %s: ", sent_attn, doc_attn);
    return hibert_new(&c, N_DOCS, seed, what);
}

static lc_hibert *make(const char *sent_attn, const char *doc_attn, lc_norm norm, int doc_width, uint64_t seed) {
    return make_dec(sent_attn, doc_attn, "full", norm, doc_width, 10, seed);
}

/* m with sharpened weights (fd_kit.h) from seed; NULL stays NULL. */
static lc_hibert *sharpened(lc_hibert *m, uint64_t seed) {
    if (m) fd_sharpen(&m->tensors, &m->ptab, m->params, seed);
    return m;
}

static double mean_loss(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *labels) {
    double sum = 0;
    long n = 0;
    CHECK(lc_hibert_extract_forward(m, b, labels, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    return n ? sum / (double)n : NAN;
}

/* The finite differences' view of a model and its batch (fd_kit.h). */
typedef struct {
    lc_hibert *m;
    const lc_hibert_batch *b;
    const uint8_t *labels;
} fd_ctx;

static double extract_mean(void *user) {
    const fd_ctx *c = user;
    return mean_loss(c->m, c->b, c->labels);
}

enum { MASK_SEED = 41 }; /* the pre-training masks' seed */

/* The backward's gradients of the mean loss of b (extraction against labels; pre-training with MASK_SEED where
 * labels is NULL), in a malloc'ed copy. */
static float *backward_grads(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *labels) {
    lc_hibert_zero_grad(m);
    double sum = 0;
    long n = 0;
    const lc_status st = labels ? lc_hibert_extract_forward(m, b, labels, 0, &sum, &n)
                                : lc_hibert_pretrain_forward(m, b, MASK_SEED, 0, &sum, &n);
    CHECK(st == LC_OK, "%s", lc_last_error());
    CHECK(n > 0 && isfinite(sum), "loss %g over %ld", sum, n);
    CHECK(lc_hibert_backward(m, 1.0f / (float)n) == LC_OK, "%s", lc_last_error());
    float *g = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    return g;
}

/* For every parameter tensor: the derivative along (the gradient's direction + a random unit vector), by
 * central differences in float, against the backward's (fd_kit.h). */
static void check_gradients(const char *sent_attn, const char *doc_attn, lc_norm norm, int doc_width) {
    lc_hibert *m = sharpened(make(sent_attn, doc_attn, norm, doc_width, 3), 17);
    if (!m) return;
    toy t;
    const lc_hibert_batch b = toy_make(&t, 5);
    float *g = backward_grads(m, &b, t.labels);
    fd_ctx c = {m, &b, t.labels};
    char what[128];
    snprintf(what, sizeof what, "%s|%s %s", sent_attn, doc_attn, norm == LC_NORM_PRE ? "pre" : "post");
    const int checked = fd_check_table(&m->ptab, m->params, g, extract_mean, &c, what, 2e-2, 2e-4);
    CHECK(checked == m->ptab.n && checked > 30, "checked %d tensors", checked);
    free(g);
    lc_hibert_free(m);
}

TEST(gradients_full_pre) { check_gradients("full", "full", LC_NORM_PRE, 12); }
TEST(gradients_full_post_same_width) { check_gradients("full", "full", LC_NORM_POST, 16); }
TEST(gradients_window_global) { check_gradients("window:w=4", "window:w=2,global=1", LC_NORM_PRE, 12); }

/* A batch of 3 documents gives each document's scores and loss as the document alone. */
static void packing_invariance(const char *sent_attn, const char *doc_attn) {
    lc_hibert *m = sharpened(make(sent_attn, doc_attn, LC_NORM_PRE, 12, 4), 23);
    if (!m) return;
    toy t;
    const lc_hibert_batch all = toy_make(&t, 8);
    double sum_all = 0, sum_alone = 0, s;
    long n;
    CHECK(lc_hibert_extract_forward(m, &all, t.labels, 0, &sum_all, &n) == LC_OK, "%s", lc_last_error());
    float packed[16], alone[16];
    memcpy(packed, lc_hibert_scores(m), sizeof(float) * (size_t)t.total);
    for (int j = 0, s0 = 0; j < N_DOCS; s0 += t.n_sents[j], j++) {
        const lc_hibert_batch one = toy_batch(&t, j, 1);
        CHECK(lc_hibert_extract_forward(m, &one, t.labels + s0, 0, &s, &n) == LC_OK, "%s", lc_last_error());
        CHECK(n == t.n_sents[j], "count %ld", n);
        memcpy(alone + s0, lc_hibert_scores(m), sizeof(float) * (size_t)t.n_sents[j]);
        sum_alone += s;
    }
    char label[96];
    snprintf(label, sizeof label, "%s|%s scores", sent_attn, doc_attn);
    CHECK_CLOSE(label, packed, alone, t.total, 1e-5, 1e-6);
    CHECK_CLOSE("loss sum", &sum_all, &sum_alone, 1, 1e-6, 1e-9);
    lc_hibert_free(m);
}

TEST(packed_documents_equal_alone) {
    packing_invariance("full", "full");
    packing_invariance("window:w=4", "window:w=2,global=1");
}

/* Changing bytes of one sentence of document 1 changes document 1's scores only; changing a byte past
 * max_sent_len (truncated) changes nothing. */
TEST(sentence_bytes_reach_their_document_only) {
    lc_hibert *m = sharpened(make("full", "full", LC_NORM_PRE, 12, 6), 29);
    if (!m) return;
    toy t;
    const lc_hibert_batch b = toy_make(&t, 10);
    float before[16], after[16];
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(before, lc_hibert_scores(m), sizeof before);
    t.bytes[3][2] ^= 0x55; /* sentence 3: document 1's first */
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(after, lc_hibert_scores(m), sizeof after);
    for (int i = 0; i < t.total; i++) {
        const int in_doc1 = i == 3 || i == 4;
        if (in_doc1) CHECK(before[i] != after[i], "sentence %d of document 1 did not change", i);
        else CHECK(before[i] == after[i], "sentence %d of another document changed: %g -> %g", i, before[i], after[i]);
    }
    t.bytes[2][MAX_SENT_LEN + 1] ^= 0x55; /* sentence 2 has 16 bytes: this one is truncated away */
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(after, lc_hibert_scores(m), sizeof(float) * (size_t)t.total) == 0, "a truncated byte changed a score");
    lc_hibert_free(m);
}

/* Names with their prefixes, roles' decay, widths. */
TEST(tensor_list) {
    lc_hibert *m = make("full", "window:w=2,global=1", LC_NORM_PRE, 12, 1);
    if (!m) return;
    static const char *want[] = {"sent.wte", "sent.wpe", "sent.blocks.0.attn.qkv.weight", "sent.blocks.1.ffn.fc2.bias",
                                 "sent.ln_f.weight", "doc.proj.weight", "doc.proj.bias", "doc.wpe",
                                 "doc.blocks.0.attn.global.qkv.weight", "doc.ln_f.bias", "head.weight", "head.bias"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        CHECK(lc_table_find(&m->ptab, want[i]) >= 0, "no tensor %s", want[i]);
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        if (!strcmp(t->name, "sent.wte")) CHECK(t->shape[0] == 258 && t->shape[1] == 16 && t->decay, "sent.wte");
        if (!strcmp(t->name, "sent.wpe")) CHECK(t->shape[0] == MAX_SENT_LEN + 1, "sent.wpe rows %ld", t->shape[0]);
        if (!strcmp(t->name, "doc.wpe")) CHECK(t->shape[0] == MAX_SENTS && t->shape[1] == 12, "doc.wpe");
        if (!strcmp(t->name, "head.bias")) CHECK(!t->decay && t->shape[0] == 1, "head.bias");
        if (!strcmp(t->name, "head.weight")) CHECK(t->decay && t->shape[1] == 12, "head.weight");
    }
    CHECK(lc_hibert_num_params(m) > 0 && lc_hibert_activation_bytes(m) > 0, "sizes");
    lc_hibert_free(m);
    m = make("full", "full", LC_NORM_POST, 16, 1); /* equal widths, post-LN: no projection, no ln_f */
    if (!m) return;
    CHECK(lc_table_find(&m->ptab, "doc.proj.weight") < 0 && lc_table_find(&m->ptab, "sent.ln_f.weight") < 0,
          "post-LN, equal widths");
    lc_hibert_free(m);
}

TEST(refusals) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.sent.n_head = 3;
    lc_hibert_limits lim = {2, 0, 0};
    lc_hibert *m = NULL;
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "sentence encoder"), "%s",
          lc_last_error());
    lc_hibert_config_default(&c);
    snprintf(c.doc.attn, sizeof c.doc.attn, "nonsense");
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "document encoder"), "%s",
          lc_last_error());
    lc_hibert_config_default(&c);
    c.max_sents = 0;
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_ERR_ARG, "max_sents 0");
    m = make("full", "full", LC_NORM_PRE, 12, 1);
    if (!m) return;
    toy t;
    lc_hibert_batch b = toy_make(&t, 1);
    CHECK(lc_hibert_backward(m, 1.0f) == LC_ERR_ARG, "backward before any forward");
    b.n_docs = N_DOCS + 1;
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_ERR_ARG, "too many documents");
    int many[1] = {MAX_SENTS + 1};
    b = toy_batch(&t, 0, 1);
    b.n_sents = many;
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "sentences"),
          "%s", lc_last_error());
    b = toy_batch(&t, 0, N_DOCS);
    t.labels[0] = 2;
    CHECK(lc_hibert_extract_forward(m, &b, t.labels, 0, NULL, NULL) == LC_ERR_ARG, "label 2");
    CHECK(lc_hibert_backward(m, 1.0f) == LC_ERR_ARG, "backward after a refused forward");
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_backward(m, 1.0f) == LC_ERR_ARG, "backward without labels");
    lc_hibert_free(m);
}

/* A one-layer, width-32 model of every stack for up to `docs` documents, and 40 steps of constant lr. */
static lc_hibert *tiny_learner(int docs, uint64_t seed, float lr, lc_train_options *o) {
    const lc_hibert_stack stack = {1, 32, 2, 64, "full"};
    lc_hibert_config c;
    hibert_config(&c, stack, stack, stack, 16, 8);
    lc_hibert *m = hibert_new(&c, docs, seed, "");
    lc_train_options_default(o);
    o->steps = 40, o->warmup = 5, o->lr = lr, o->min_lr = lr, o->weight_decay = 0;
    return m;
}

/* Toy extraction: a sentence is in the summary when it starts with '!'. Documents of 3-5 random
 * sentences; the model must learn it in a few dozen steps. */
TEST(learns_a_toy_extraction_task) {
    lc_train_options o;
    lc_hibert *m = tiny_learner(4, 7, 3e-3f, &o);
    if (!m) return;
    lc_rng r;
    lc_rng_seed(&r, 42);
    uint8_t bytes[32][16];
    const uint8_t *ptr[32];
    int len[32], n_sents[4];
    uint8_t labels[32];
    double first = 0, last = 0;
    for (int step = 0; step < o.steps; step++) {
        int total = 0;
        for (int j = 0; j < 4; j++) {
            n_sents[j] = 3 + (int)(lc_rng_next(&r) % 3);
            for (int s = 0; s < n_sents[j]; s++, total++) {
                len[total] = 4 + (int)(lc_rng_next(&r) % 10);
                for (int k = 0; k < 16; k++) bytes[total][k] = (uint8_t)('a' + lc_rng_next(&r) % 26);
                labels[total] = (uint8_t)(lc_rng_next(&r) % 3 == 0);
                if (labels[total]) bytes[total][0] = '!';
                ptr[total] = bytes[total];
            }
        }
        const lc_hibert_batch b = {4, n_sents, ptr, len};
        double loss = 0;
        CHECK(lc_hibert_step(m, &o, &b, labels, &loss) == LC_OK, "%s", lc_last_error());
        if (step < 5) first += loss / 5;
        if (step >= o.steps - 5) last += loss / 5;
    }
    printf("  toy extraction: loss %.4f (first 5 steps) -> %.4f (last 5)\n", first, last);
    CHECK(last < 0.25 * first, "loss %.4f -> %.4f", first, last);
    CHECK(lc_hibert_steps_done(m) == o.steps, "steps %ld", lc_hibert_steps_done(m));
    lc_hibert_free(m);
}

/* The masking rule over many documents: the selected count, the 80/10/10 split, replacement sources,
 * determinism. */
TEST(masking_rule_statistics) {
    uint8_t action[64], again[64];
    int source[64], source2[64];
    long counts[4] = {0, 0, 0, 0}, selected = 0, first_sentence = 0, docs_long = 0;
    int bad = 0;
    for (int d = 0; d < 20000; d++) {
        const int n = 1 + d % 40;
        CHECK(lc_hibert_mask_sentences(n, 1000 + (uint64_t)d, action, source) == LC_OK, "%s", lc_last_error());
        int k = 0;
        for (int i = 0; i < n; i++) {
            counts[action[i]]++;
            k += action[i] != LC_HIBERT_UNSELECTED;
            if (action[i] == LC_HIBERT_REPLACED) bad += source[i] == i || source[i] < 0 || source[i] >= n;
            else bad += source[i] != i;
        }
        const int want = (int)lround(0.15 * n) < 1 ? 1 : (int)lround(0.15 * n);
        bad += k != want;
        selected += k;
        if (n >= 20) first_sentence += action[0] != LC_HIBERT_UNSELECTED, docs_long++;
        if (n == 1) bad += action[0] != LC_HIBERT_MASKED;
    }
    CHECK(bad == 0, "%d documents break the rule", bad);
    /* one-sentence documents are always masked: leave them out of the split */
    const double sel = (double)(selected - 500), masked = (double)(counts[LC_HIBERT_MASKED] - 500);
    printf("  masked %.4f replaced %.4f kept %.4f of %ld selected\n", masked / sel, counts[LC_HIBERT_REPLACED] / sel,
           counts[LC_HIBERT_KEPT] / sel, selected);
    CHECK(fabs(masked / sel - 0.8) < 0.01 && fabs(counts[LC_HIBERT_REPLACED] / sel - 0.1) < 0.01 &&
              fabs(counts[LC_HIBERT_KEPT] / sel - 0.1) < 0.01,
          "split");
    /* uniform selection: sentence 0 of a long document is selected about k/n of the time (~15%) */
    CHECK(fabs((double)first_sentence / docs_long - 0.15) < 0.02, "first sentence selected %.3f",
          (double)first_sentence / docs_long);
    lc_hibert_mask_sentences(30, 7, action, source);
    lc_hibert_mask_sentences(30, 7, again, source2);
    CHECK(!memcmp(action, again, 30) && !memcmp(source, source2, sizeof(int) * 30), "not deterministic");
    int differ = 0;
    for (uint64_t seed = 8; seed < 18; seed++) {
        lc_hibert_mask_sentences(30, seed, again, source2);
        differ += memcmp(action, again, 30) != 0;
    }
    CHECK(differ >= 8, "seeds give the same selection");
    CHECK(lc_hibert_mask_sentences(0, 1, action, source) == LC_ERR_ARG, "n = 0");
}

/* ---------------------------------------------------------------- masked-sentence pre-training */

static double pretrain_mean(lc_hibert *m, const lc_hibert_batch *b) {
    double sum = 0;
    long n = 0;
    CHECK(lc_hibert_pretrain_forward(m, b, MASK_SEED, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    return n ? sum / (double)n : NAN;
}

static double pretrain_fd(void *user) {
    const fd_ctx *c = user;
    return pretrain_mean(c->m, c->b);
}

/* Directional finite differences of the mean pre-training NLL for every tensor (encoders, decoder; the
 * extraction head's gradient is 0 and so is its difference). */
static void check_pretrain_gradients(const char *sent_attn, const char *doc_attn, const char *dec_attn, lc_norm norm,
                                     int doc_width, int dec_width) {
    lc_hibert *m = sharpened(make_dec(sent_attn, doc_attn, dec_attn, norm, doc_width, dec_width, 3), 19);
    if (!m) return;
    toy t;
    const lc_hibert_batch b = toy_make(&t, 6);
    float *g = backward_grads(m, &b, NULL);
    fd_ctx c = {m, &b, NULL};
    char what[160];
    snprintf(what, sizeof what, "pretrain %s|%s|%s %s", sent_attn, doc_attn, dec_attn, norm == LC_NORM_PRE ? "pre" : "post");
    const int checked = fd_check_table(&m->ptab, m->params, g, pretrain_fd, &c, what, 2e-2, 3e-4);
    int dec_tensors = 0;
    for (int i = 0; i < m->ptab.n; i++) dec_tensors += !strncmp(m->ptab.slots[i].name, "dec.", 4);
    CHECK(checked == m->ptab.n && dec_tensors >= 30, "checked %d tensors, %d of the decoder", checked, dec_tensors);
    free(g);
    lc_hibert_free(m);
}

TEST(pretrain_gradients) {
    check_pretrain_gradients("full", "full", "full", LC_NORM_PRE, 12, 10);             /* dec.proj */
    check_pretrain_gradients("full", "full", "full", LC_NORM_POST, 16, 16);            /* equal widths */
    check_pretrain_gradients("window:w=4", "window:w=2,global=1", "window:w=3", LC_NORM_PRE, 12, 10);
}

/* With hashed word vectors (sent.words, 7 buckets: collisions too), extraction and pre-training. */
TEST(gradients_with_word_vectors) {
    word_buckets = 7;
    check_gradients("full", "full", LC_NORM_PRE, 12);
    check_pretrain_gradients("full", "window:w=2,global=1", "full", LC_NORM_PRE, 12, 10);
    word_buckets = 0;
}

/* The head's sentence features (cfg.head_features, longctx's extension): gradients of head.features with the
 * rest; from zero weights the scores are the plain head's (same seed: the zeros draw nothing); with weights w
 * each score moves by w . x; a batch without features, or with a non-finite one, is refused. */
TEST(head_features) {
    head_feats = 3;
    check_gradients("full", "full", LC_NORM_PRE, 12);
    lc_hibert *f = make("full", "full", LC_NORM_PRE, 12, 9);
    head_feats = 0;
    lc_hibert *p = make("full", "full", LC_NORM_PRE, 12, 9);
    if (!f || !p) return;
    CHECK(f->ptab.n == p->ptab.n + 1 && f->feat_w && !p->feat_w, "one tensor more: head.features");
    toy t;
    lc_hibert_batch b = toy_make(&t, 4);
    float base[16];
    CHECK(lc_hibert_extract_forward(p, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    memcpy(base, p->scores, sizeof(float) * (size_t)t.total);
    b.features = t.feat;
    CHECK(lc_hibert_extract_forward(f, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(base, f->scores, sizeof(float) * (size_t)t.total) == 0, "zero feature weights: the plain head's scores");
    const float w[3] = {0.5f, -2.0f, 0.25f};
    memcpy(f->feat_w, w, sizeof w);
    CHECK(lc_hibert_extract_forward(f, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < t.total; i++) {
        const double want = base[i] + w[0] * t.feat[3 * i] + w[1] * t.feat[3 * i + 1] + w[2] * t.feat[3 * i + 2];
        CHECK(fabs(f->scores[i] - want) < 1e-5, "sentence %d: %g, want %g", i, f->scores[i], want);
    }
    b.features = NULL;
    CHECK(lc_hibert_extract_forward(f, &b, NULL, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "3 features"),
          "no features: %s", lc_last_error());
    t.feat[4] = NAN;
    b.features = t.feat;
    CHECK(lc_hibert_extract_forward(f, &b, NULL, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "not finite"),
          "NaN feature: %s", lc_last_error());
    lc_hibert_config c = *lc_hibert_get_config(f);
    c.head_features = LC_HIBERT_MAX_FEATURES + 1;
    CHECK(lc_hibert_config_validate(&c) == LC_ERR_ARG && strstr(lc_last_error(), "head-features"), "too many features");
    lc_hibert_free(f);
    lc_hibert_free(p);
}

/* The decoder's tensors: names and shapes of docs/reference/hibert.md's table. */
TEST(pretrain_tensor_list) {
    lc_hibert *m = make_dec("full", "full", "full", LC_NORM_PRE, 12, 10, 1);
    if (!m) return;
    static const struct {
        const char *name;
        long d0, d1;
    } want[] = {{"dec.wte", 258, 10}, {"dec.wpe", MAX_SENT_LEN + 1, 10}, {"dec.proj.weight", 10, 12},
                {"dec.proj.bias", 10, 0}, {"dec.blocks.1.attn.qkv.weight", 30, 10},
                {"dec.blocks.0.ln_cross.weight", 10, 0}, {"dec.blocks.0.cross.q.weight", 10, 10},
                {"dec.blocks.1.cross.kv.weight", 20, 12}, {"dec.blocks.1.cross.kv.bias", 20, 0},
                {"dec.blocks.1.cross.proj.weight", 10, 10}, {"dec.blocks.0.ffn.fc1.weight", 18, 10},
                {"dec.ln_f.weight", 10, 0}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int found = 0;
        for (int k = 0; k < m->tensors.n; k++) {
            const lc_tensor *t = &m->tensors.t[k];
            if (strcmp(t->name, want[i].name)) continue;
            found = 1;
            CHECK(t->shape[0] == want[i].d0 && t->shape[1] == want[i].d1, "%s: [%ld, %ld]", t->name, t->shape[0],
                  t->shape[1]);
        }
        CHECK(found, "no tensor %s", want[i].name);
    }
    lc_hibert_free(m);
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.dec.n_head = 3;
    lc_hibert_limits lim = {2, 0, 0};
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "sentence decoder"), "%s",
          lc_last_error());
    lc_hibert_config_default(&c);
    snprintf(c.dec.attn, sizeof c.dec.attn, "nonsense");
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "sentence decoder"), "%s",
          lc_last_error());
}

/* A batch of 3 documents gives the pre-training loss of the documents alone (document j masked with seed
 * + j: alone it is document 0 of a batch with seed MASK_SEED + j). */
TEST(pretrain_packed_documents_equal_alone) {
    lc_hibert *m = sharpened(make_dec("window:w=4", "window:w=2,global=1", "full", LC_NORM_PRE, 12, 10, 4), 31);
    if (!m) return;
    toy t;
    const lc_hibert_batch all = toy_make(&t, 12);
    double sum_all = 0, sum_alone = 0, s;
    long n_all = 0, n_alone = 0, n;
    CHECK(lc_hibert_pretrain_forward(m, &all, MASK_SEED, 0, &sum_all, &n_all) == LC_OK, "%s", lc_last_error());
    for (int j = 0; j < N_DOCS; j++) {
        const lc_hibert_batch one = toy_batch(&t, j, 1);
        CHECK(lc_hibert_pretrain_forward(m, &one, MASK_SEED + (uint64_t)j, 0, &s, &n) == LC_OK, "%s", lc_last_error());
        sum_alone += s, n_alone += n;
    }
    CHECK(n_all == n_alone, "targets %ld vs %ld", n_all, n_alone);
    CHECK_CLOSE("pretrain loss sum", &sum_all, &sum_alone, 1, 1e-5, 1e-6);
    /* another mask seed selects other sentences: another loss */
    CHECK(lc_hibert_pretrain_forward(m, &all, MASK_SEED + 100, 0, &s, &n) == LC_OK && s != sum_all, "seed");
    lc_hibert_free(m);
}

/* A tiny model learns to regenerate a sentence repeated in every document. */
TEST(pretrain_learns_a_repeated_sentence) {
    lc_train_options o;
    lc_hibert *m = tiny_learner(2, 9, 1e-2f, &o);
    if (!m) return;
    static const char *text = "the cat sat.";
    const uint8_t *ptr[12];
    int len[12], n_sents[2] = {6, 6};
    for (int i = 0; i < 12; i++) ptr[i] = (const uint8_t *)text, len[i] = (int)strlen(text);
    const lc_hibert_batch b = {2, n_sents, ptr, len};
    double first = 0, last = 0;
    for (int step = 0; step < o.steps; step++) {
        double loss = 0;
        CHECK(lc_hibert_pretrain_step(m, &o, &b, 100 + (uint64_t)step, &loss) == LC_OK, "%s", lc_last_error());
        if (step < 5) first += loss / 5;
        if (step >= o.steps - 5) last += loss / 5;
    }
    printf("  toy pre-training: %.4f -> %.4f nats per byte (%.3f -> %.3f bits)\n", first, last, first / log(2),
           last / log(2));
    CHECK(last < 0.2 * first, "loss %.4f -> %.4f", first, last);
    lc_hibert_free(m);
}

int main(void) {
    RUN(gradients_full_pre);
    RUN(gradients_full_post_same_width);
    RUN(gradients_window_global);
    RUN(packed_documents_equal_alone);
    RUN(sentence_bytes_reach_their_document_only);
    RUN(tensor_list);
    RUN(refusals);
    RUN(learns_a_toy_extraction_task);
    RUN(masking_rule_statistics);
    RUN(pretrain_gradients);
    RUN(gradients_with_word_vectors);
    RUN(head_features);
    RUN(pretrain_tensor_list);
    RUN(pretrain_packed_documents_equal_alone);
    RUN(pretrain_learns_a_repeated_sentence);
    return test_summary("test_hibert");
}
