/* Tests of the classifier's masked-token objective (models/classify/classify_mlm.c) and of starting a classifier from
 * a classifier checkpoint (lc_classifier_init_from_any): finite differences of the masked-token loss over
 * every tensor (words and bytes, a window spec with the global [CLS]), the masking rule ([CLS] never, about
 * 15% of the tokens, 80/10/10, random words from the vocabulary's words), that a tiny model learns to fill
 * masked tokens, the objective's checkpoint round trip, and the copy of the encoder into a classifier of
 * another attention spec and length with its refusals (another vocabulary, another tokenization, another
 * shape), the head kept from a masked-token checkpoint and copied from a labels one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "classify_kit.h"
#include "fd_kit.h"
#include "test_files.h"
#include "models/classify/classify.h"


static lc_classifier *make(const char *attn, int words, int vocab, lc_classify_objective obj, int max_batch,
                           int max_len, uint64_t seed) {
    lc_classify_config c;
    toy_config(&c, attn, words, vocab, max_len);
    c.objective = obj;
    return toy_create(&c, max_batch, seed);
}

typedef struct {
    lc_classifier *m;
    lc_classify_batch b;
} fd_ctx;

static double mean_loss(void *user) {
    fd_ctx *c = user;
    double sum = 0;
    long n = 0;
    CHECK(lc_classifier_mlm_forward(c->m, &c->b, 77, 0, &sum, &n, NULL) == LC_OK, "%s", lc_last_error());
    return sum / (double)n;
}

static void check_gradients(const char *attn, int words) {
    const int vocab = words ? 11 : 256;
    lc_classifier *m = make(attn, words, vocab, LC_CLASSIFY_MLM, N_EX, MAX_LEN, 3);
    if (!m) return;
    fd_sharpen(&m->tensors, &m->ptab, m->params, 21);
    toy t;
    toy_fill(&t, words ? LC_WORD_FIRST : 0, vocab, 0, 5);
    fd_ctx c = {m, toy_batch(&t, 0, N_EX)};
    lc_classifier_zero_grad(m);
    double sum;
    long n;
    CHECK(lc_classifier_mlm_forward(m, &c.b, 77, 0, &sum, &n, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(n >= 2 && sum > 0, "%ld rows masked, loss %g", n, sum);
    CHECK(lc_classifier_mlm_backward(m, 1.0f / (float)n) == LC_OK, "%s", lc_last_error());
    CHECK(lc_classifier_mlm_backward(m, 1.0f) == LC_ERR_ARG, "a second backward of one forward is refused");
    float *g = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    double wte_norm = 0;
    for (long i = 0; i < (long)vocab * 16; i++) wte_norm += (double)m->g_wte[i] * m->g_wte[i];
    CHECK(wte_norm > 0, "the tied embedding gets a gradient");
    char what[96];
    snprintf(what, sizeof what, "mlm %s %s", attn, words ? "words" : "bytes");
    const int checked = fd_check_table(&m->ptab, m->params, g, mean_loss, &c, what, 2e-2, 2e-4);
    CHECK(checked == m->ptab.n && checked >= 20, "checked %d tensors", checked);
    free(g);
    lc_classifier_free(m);
}

TEST(gradients_words_window_global) { check_gradients("window:w=2", 1); }
TEST(gradients_bytes_full) { check_gradients("full", 0); }

/* Over a large batch: [CLS] rows are never touched, about 15% of the tokens are chosen, 80% of those masked,
 * the random replacements are words of the vocabulary (never the reserved ids). */
TEST(masking_rule) {
    enum { B = 64, L = 200, V = 40 };
    lc_classifier *m = make("full", 1, V, LC_CLASSIFY_MLM, B, L, 1);
    if (!m) return;
    static int ids[B][L];
    int len[B];
    const int *ptr[B];
    lc_rng r;
    lc_rng_seed(&r, 9);
    for (int i = 0; i < B; i++) {
        len[i] = 20 + i * 2, ptr[i] = ids[i];
        for (int k = 0; k < L; k++) ids[i][k] = LC_WORD_FIRST + (int)(lc_rng_uniform(&r) * (V - LC_WORD_FIRST)) % (V - LC_WORD_FIRST);
    }
    const lc_classify_batch b = {B, ptr, len};
    long masked = 0;
    CHECK(lc_classifier_mlm_forward(m, &b, 5, 0, NULL, &masked, NULL) == LC_OK, "%s", lc_last_error());
    long tokens = 0, to_mask = 0, changed = 0, bad = 0, cls_ok = 0;
    for (int i = 0; i < B; i++) {
        const int r0 = m->row0[i];
        cls_ok += m->tok[r0] == LC_WORD_CLS && m->pos[r0] == 0;
        for (int k = 0; k < len[i]; k++) {
            const int now = m->tok[r0 + 1 + k];
            tokens++;
            if (now == ids[i][k]) continue;
            changed++;
            if (now == LC_WORD_MASK) to_mask++;
            else if (now < LC_WORD_FIRST || now >= V) bad++;
        }
    }
    CHECK(cls_ok == B, "[CLS] untouched in %ld of %d examples", cls_ok, B);
    CHECK(fabs((double)masked / (double)tokens - 0.15) < 0.02, "%ld of %ld tokens chosen", masked, tokens);
    CHECK(changed <= masked && fabs((double)to_mask / (double)masked - 0.8) < 0.04, "%ld masked of %ld chosen", to_mask,
          masked);
    CHECK(bad == 0 && changed > to_mask, "%ld random replacements outside the words, %ld random", bad, changed - to_mask);
    long again = 0;
    CHECK(lc_classifier_mlm_forward(m, &b, 5, 0, NULL, &again, NULL) == LC_OK && again == masked, "same seed, same masks");
    /* an example of one token still gets a masked row */
    const int one = LC_WORD_FIRST;
    const int *p1[1] = {&one};
    const int l1[1] = {1};
    const lc_classify_batch b1 = {1, p1, l1};
    CHECK(lc_classifier_mlm_forward(m, &b1, 5, 0, NULL, &again, NULL) == LC_OK && again == 1, "%ld", again);
    lc_classifier_free(m);
}

/* Sequence i of a batch: one of 8 words, 6 to 15 times. */
static void draw_repeated(lc_rng *r, learn_batch *lb, int i) {
    lb->len[i] = 6 + (int)(lc_rng_uniform(r) * 10) % 10;
    const int w = LC_WORD_FIRST + (int)(lc_rng_uniform(r) * 8) % 8;
    for (int k = 0; k < lb->len[i]; k++) lb->ids[i][k] = w;
}

/* Every sequence repeats one word: a tiny model learns to fill a masked one (chance: 1 in 8). */
TEST(learns_to_fill_masks) {
    lc_classifier *m = make("full", 1, LC_WORD_FIRST + 8, LC_CLASSIFY_MLM, 16, 16, 2);
    if (!m) return;
    long right, seen;
    toy_learn(m, 200, 1, draw_repeated, &right, &seen);
    CHECK(seen > 100 && right >= 0.9 * seen, "masked-token accuracy %ld / %ld at the end", right, seen);
    lc_classifier_free(m);
}

static const char *texts[] = {"( [MAX 2 ) 9 ) ] )", "( [MIN 4 ) 6 ) ] )", "( [SM 1 ) 2 ) 3 ) ] )"};

static lc_word_vocab *vocab_of(int n) {
    const uint8_t *tx[3];
    size_t tl[3];
    for (int i = 0; i < n; i++) tx[i] = (const uint8_t *)texts[i], tl[i] = strlen(texts[i]);
    lc_word_vocab *v = NULL;
    CHECK(lc_word_vocab_build(tx, tl, n, 1, 0, &v) == LC_OK, "%s", lc_last_error());
    return v;
}

/* A masked-token checkpoint (words, full attention) starts a classifier of another spec and length: every
 * embedding row, the blocks, ln_f, the positions both have; global projections from qkv; the head its own. */
TEST(init_from_classifier_checkpoint) {
    lc_word_vocab *v = vocab_of(3), *v2 = vocab_of(2);
    if (!v || !v2) return;
    const int V = lc_word_vocab_size(v);
    lc_classifier *pre = make("full", 1, V, LC_CLASSIFY_MLM, N_EX, 8, 3);
    if (!pre) return;
    toy t;
    toy_fill(&t, LC_WORD_FIRST, V, 0, 6);
    const lc_classify_batch b = toy_batch(&t, 0, N_EX);
    lc_train_options o;
    lc_train_options_default(&o);
    o.lr = 1e-2f, o.warmup = 0, o.steps = 3;
    for (int s = 0; s < 3; s++) CHECK(lc_classifier_step(pre, &o, &b, NULL, NULL) == LC_OK, "%s", lc_last_error());
    char *names[3] = {"a", "b", "c"};
    const lc_label_set labels = {3, names};
    lc_classify_run run;
    lc_classify_run_default(&run);
    const char *path = tmp_path("pre.safetensors");
    CHECK(lc_classifier_save(pre, &run, &labels, v, path) == LC_OK, "%s", lc_last_error());
    lc_classifier *back = NULL;
    lc_label_set lb = {0, NULL};
    lc_word_vocab *vb = NULL;
    CHECK(lc_classifier_load(path, 0, 0, &back, NULL, &lb, &vb) == LC_OK, "%s", lc_last_error());
    CHECK(back && back->cfg.objective == LC_CLASSIFY_MLM, "the objective survives the round trip");
    lc_classifier_free(back), lc_label_set_free(&lb), lc_word_vocab_free(vb);

    lc_classifier *m = make("window:w=2", 1, V, LC_CLASSIFY_LABELS, N_EX, MAX_LEN, 9);
    if (m) {
        float head[12 * 16];
        memcpy(head, m->w1, sizeof head);
        CHECK(lc_classifier_init_from_any(m, v, path) == LC_OK, "%s", lc_last_error());
        CHECK(!memcmp(m->wte, pre->wte, sizeof(float) * (size_t)V * 16), "every embedding row");
        CHECK(!memcmp(m->st.wpe, pre->st.wpe, sizeof(float) * 9 * 16), "the 9 positions the checkpoint has");
        CHECK(memcmp(m->st.wpe + 9 * 16, pre->st.wpe, sizeof(float) * 16) != 0, "position 9 keeps its own");
        CHECK(!memcmp(m->st.blk[1].fc1_w, pre->st.blk[1].fc1_w, sizeof(float) * 24 * 16), "fc1 copied");
        CHECK(!memcmp(m->st.blk[0].qkvg_w, pre->st.blk[0].qkv_w, sizeof(float) * 48 * 16), "global qkv from qkv");
        CHECK(!memcmp(m->w1, head, sizeof head), "the head keeps its initialisation");
        CHECK(lc_classifier_init_from_any(m, v2, path) == LC_ERR_FORMAT && strstr(lc_last_error(), "vocabulary"), "%s",
              lc_last_error());
        CHECK(lc_classifier_init_from_any(m, NULL, path) == LC_ERR_ARG, "a words model needs its vocabulary");
    }
    /* from a classifier trained on labels (a curriculum's earlier stage): the head too */
    lc_classifier *lab = make("full", 1, V, LC_CLASSIFY_LABELS, N_EX, 8, 4), *m2 = make("full", 1, V, LC_CLASSIFY_LABELS, N_EX, MAX_LEN, 5);
    const char *lab_path = tmp_path("labels.safetensors");
    CHECK(lab && lc_classifier_save(lab, &run, &labels, v, lab_path) == LC_OK, "%s", lc_last_error());
    CHECK(m2 && lc_classifier_init_from_any(m2, v, lab_path) == LC_OK, "%s", lc_last_error());
    if (lab && m2) {
        CHECK(!memcmp(m2->w1, lab->w1, sizeof(float) * 12 * 16) && !memcmp(m2->w2, lab->w2, sizeof(float) * 3 * 12),
              "the head of a labels classifier is copied");
        CHECK(!memcmp(m2->wte, lab->wte, sizeof(float) * (size_t)V * 16), "and the embedding");
    }
    lc_classifier_free(lab), lc_classifier_free(m2);
    lc_classifier *bytes = make("full", 0, 256, LC_CLASSIFY_LABELS, N_EX, MAX_LEN, 9);
    CHECK(bytes && lc_classifier_init_from_any(bytes, NULL, path) == LC_ERR_FORMAT && strstr(lc_last_error(), "words"),
          "%s", lc_last_error());
    lc_classify_config c = pre->cfg;
    c.d_ff = 32, c.objective = LC_CLASSIFY_LABELS;
    lc_classifier *wide = NULL;
    CHECK(lc_classifier_create(&c, N_EX, 0, 1, &wide) == LC_OK, "%s", lc_last_error());
    CHECK(wide && lc_classifier_init_from_any(wide, v, path) == LC_ERR_FORMAT && strstr(lc_last_error(), "ffn 24"), "%s",
          lc_last_error());
    lc_classifier_free(wide), lc_classifier_free(bytes), lc_classifier_free(m), lc_classifier_free(pre);
    lc_word_vocab_free(v), lc_word_vocab_free(v2);
}

int main(void) {
    if (tmpdir_create("/tmp/test_classify_mlm.XXXXXX")) return 1;
    RUN(gradients_words_window_global);
    RUN(gradients_bytes_full);
    RUN(masking_rule);
    RUN(learns_to_fill_masks);
    RUN(init_from_classifier_checkpoint);
    tmpdir_remove();
    return test_summary("test_classify_mlm");
}
