/* Tests of the vanilla encoder-decoder Transformer (lc_seq2seq_*): directional finite differences of the
 * loss against the backward for every tensor (tied pre-LN; untied post-LN with different widths and a
 * windowed encoder), a packed batch gives each pair's loss and gradients as it does alone, the tensor list,
 * the refusals, a tiny model learns to reverse short strings, greedy decoding agrees with the teacher-forced
 * argmax, and parity of loss and every gradient with PyTorch (tests/reference/make_seq2seq_fixture.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "harness.h"
#include "fd_kit.h"
#include "parity_kit.h"
#include "longctx.h"
#include "models/seq2seq/seq2seq.h"

enum { MAX_SRC = 10, MAX_TGT = 9, N_PAIRS = 3 };

typedef struct {
    uint8_t src[N_PAIRS][MAX_SRC], tgt[N_PAIRS][MAX_TGT];
    const uint8_t *sp[N_PAIRS], *tp[N_PAIRS];
    int sl[N_PAIRS], tl[N_PAIRS];
} toy;

/* Three pairs: an empty source, an empty target, lengths up to the limits. */
static lc_seq2seq_batch toy_make(toy *t, uint64_t seed) {
    static const int sl[N_PAIRS] = {5, 0, 10}, tl[N_PAIRS] = {4, 9, 0};
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int i = 0; i < N_PAIRS; i++) {
        for (int k = 0; k < MAX_SRC; k++) t->src[i][k] = (uint8_t)(lc_rng_next(&r) % 256);
        for (int k = 0; k < MAX_TGT; k++) t->tgt[i][k] = (uint8_t)(lc_rng_next(&r) % 256);
        t->sp[i] = t->src[i], t->tp[i] = t->tgt[i], t->sl[i] = sl[i], t->tl[i] = tl[i];
    }
    return (lc_seq2seq_batch){N_PAIRS, t->sp, t->sl, t->tp, t->tl};
}

static lc_seq2seq *make(int tied, lc_norm norm, int ce, int cd, const char *enc_attn, uint64_t seed) {
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    c.enc = (lc_seq2seq_stack){2, ce, 2, 20, ""};
    c.dec = (lc_seq2seq_stack){2, cd, 2, 18, ""};
    snprintf(c.enc.attn, sizeof c.enc.attn, "%s", enc_attn);
    c.max_src_len = MAX_SRC, c.max_tgt_len = MAX_TGT, c.norm = norm, c.tied = tied;
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, N_PAIRS, seed, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

/* make(), then sharpened weights (fd_kit.h) from sharpen_seed. */
static lc_seq2seq *make_sharp(int tied, lc_norm norm, int ce, int cd, const char *attn, uint64_t seed,
                              uint64_t sharpen_seed) {
    lc_seq2seq *m = make(tied, norm, ce, cd, attn, seed);
    if (m) fd_sharpen(&m->tensors, &m->ptab, m->params, sharpen_seed);
    return m;
}

typedef struct {
    lc_seq2seq *m;
    const lc_seq2seq_batch *b;
} loss_ctx;

static double mean_loss(void *user) {
    loss_ctx *c = user;
    double sum = 0;
    long n = 0;
    CHECK(lc_seq2seq_forward(c->m, c->b, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    return n ? sum / (double)n : NAN;
}

static void check_gradients(int tied, lc_norm norm, int ce, int cd, const char *enc_attn) {
    lc_seq2seq *m = make_sharp(tied, norm, ce, cd, enc_attn, 3, 17);
    if (!m) return;
    toy t;
    const lc_seq2seq_batch b = toy_make(&t, 5);
    loss_ctx c = {m, &b};
    lc_seq2seq_zero_grad(m);
    double sum;
    long n;
    CHECK(lc_seq2seq_forward(m, &b, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    CHECK(n == 4 + 1 + 9 + 1 + 0 + 1, "count %ld", n);
    CHECK(lc_seq2seq_backward(m, 1.0f / (float)n) == LC_OK, "%s", lc_last_error());
    float *g = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    char what[64];
    snprintf(what, sizeof what, "%s %s %s", tied ? "tied" : "untied", norm == LC_NORM_PRE ? "pre" : "post", enc_attn);
    const int checked = fd_check_table(&m->ptab, m->params, g, mean_loss, &c, what, 2e-2, 2e-4);
    CHECK(checked == m->ptab.n && checked > 30, "%d tensors checked", checked);
    free(g);
    lc_seq2seq_free(m);
}

TEST(gradients_tied_pre) { check_gradients(1, LC_NORM_PRE, 12, 12, "full"); }
TEST(gradients_untied_post_widths_window) { check_gradients(0, LC_NORM_POST, 12, 10, "window:w=2"); }

/* One packed batch == each pair alone (losses summed, gradients of the summed loss). */
TEST(packed_pairs_equal_alone) {
    lc_seq2seq *m = make_sharp(0, LC_NORM_PRE, 12, 10, "full", 4, 8);
    if (!m) return;
    toy t;
    const lc_seq2seq_batch b = toy_make(&t, 6);
    double all, one, sum = 0;
    long n_all, n;
    lc_seq2seq_zero_grad(m);
    CHECK(lc_seq2seq_forward(m, &b, 0, &all, &n_all) == LC_OK, "%s", lc_last_error());
    CHECK(lc_seq2seq_backward(m, 1.0f) == LC_OK, "%s", lc_last_error());
    float *g = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    lc_seq2seq_zero_grad(m);
    for (int i = 0; i < N_PAIRS; i++) {
        const lc_seq2seq_batch bi = {1, b.src + i, b.src_len + i, b.tgt + i, b.tgt_len + i};
        CHECK(lc_seq2seq_forward(m, &bi, 0, &one, &n) == LC_OK, "%s", lc_last_error());
        CHECK(lc_seq2seq_backward(m, 1.0f) == LC_OK, "%s", lc_last_error());
        sum += one;
    }
    CHECK_CLOSE("loss sum", &sum, &all, 1, 1e-5, 0);
    CHECK_CLOSE("gradients", m->grads, g, (long)m->ptab.total, 1e-3, 1e-5);
    free(g);
    lc_seq2seq_free(m);
}

static int has(const lc_seq2seq *m, const char *name, long d0, long d1) {
    const int i = lc_table_find(&m->ptab, name);
    return i >= 0 && m->ptab.slots[i].shape[0] == d0 && (d1 == 0 || m->ptab.slots[i].shape[1] == d1);
}

TEST(tensor_list) {
    lc_seq2seq *m = make(1, LC_NORM_PRE, 12, 12, "full", 1);
    if (!m) return;
    CHECK(has(m, "wte", 258, 12) && has(m, "enc.wpe", MAX_SRC + 1, 12) && has(m, "dec.wpe", MAX_TGT + 1, 12),
          "tied embeddings and positions");
    CHECK(has(m, "dec.blocks.1.cross.kv.weight", 24, 12) && has(m, "enc.ln_f.weight", 12, 0) &&
          lc_table_find(&m->ptab, "dec.head.weight") < 0 && lc_table_find(&m->ptab, "enc.wte") < 0, "tied list");
    lc_seq2seq_free(m);
    m = make(0, LC_NORM_POST, 12, 10, "full", 1);
    if (!m) return;
    CHECK(has(m, "enc.wte", 257, 12) && has(m, "dec.wte", 258, 10) && has(m, "dec.head.weight", 257, 10) &&
          has(m, "dec.blocks.0.cross.kv.weight", 20, 12) && lc_table_find(&m->ptab, "dec.ln_f.weight") < 0,
          "untied post-LN list");
    lc_seq2seq_free(m);
}

TEST(refusals) {
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    lc_seq2seq *m = NULL;
    c.dec.d_model = 64;
    CHECK(lc_seq2seq_create(&c, 2, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "tied"), "%s", lc_last_error());
    c.tied = 0;
    snprintf(c.enc.attn, sizeof c.enc.attn, "nonsense");
    CHECK(lc_seq2seq_create(&c, 2, 1, &m) == LC_ERR_ARG && strstr(lc_last_error(), "encoder"), "%s", lc_last_error());
    m = make(1, LC_NORM_PRE, 12, 12, "full", 1);
    if (!m) return;
    CHECK(lc_seq2seq_backward(m, 1.0f) == LC_ERR_ARG, "backward without forward");
    toy t;
    lc_seq2seq_batch b = toy_make(&t, 1);
    t.sl[0] = MAX_SRC + 1;
    CHECK(lc_seq2seq_forward(m, &b, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "source 0"), "%s",
          lc_last_error());
    t.sl[0] = 1, t.tl[1] = -1;
    CHECK(lc_seq2seq_forward(m, &b, 0, NULL, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "target 1"), "%s",
          lc_last_error());
    b.n = N_PAIRS + 1;
    CHECK(lc_seq2seq_forward(m, &b, 0, NULL, NULL) == LC_ERR_ARG, "too many pairs");
    uint8_t out[N_PAIRS * MAX_TGT];
    int len[N_PAIRS];
    b.n = 1;
    CHECK(lc_seq2seq_generate(m, &b, MAX_TGT + 1, out, len) == LC_ERR_ARG, "generate past max_tgt_len");
    lc_seq2seq_free(m);
}

/* Greedy decoding of b's sources agrees with the teacher-forced argmax of its own output. */
static void check_generate_matches_argmax(lc_seq2seq *m, const lc_seq2seq_batch *b, int max_len) {
    uint8_t *out = malloc((size_t)b->n * max_len);
    int *len = malloc(sizeof(int) * (size_t)b->n);
    CHECK(lc_seq2seq_generate(m, b, max_len, out, len) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < b->n; i++) {
        const uint8_t *p = out + (size_t)i * max_len;
        const lc_seq2seq_batch one = {1, b->src + i, b->src_len + i, &p, len + i};
        CHECK(lc_seq2seq_forward(m, &one, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
        const lc_dec_stack *d = &m->dec;
        const int rows = len[i] < max_len ? len[i] + 1 : len[i];
        for (int r = 0; r < rows; r++) {
            const float *z = d->logits + (size_t)r * d->n_out;
            int best = 0;
            for (int v = 1; v < d->n_out; v++) best = z[v] > z[best] ? v : best;
            const int want = r < len[i] ? p[r] : LC_SEQ2SEQ_EOS;
            CHECK(best == want, "pair %d step %d: teacher-forced argmax %d, generated %d", i, r, best, want);
        }
    }
    free(out);
    free(len);
}

TEST(generate_matches_teacher_forced_argmax_untrained) {
    lc_seq2seq *m = make_sharp(0, LC_NORM_PRE, 12, 10, "full", 9, 10);
    if (!m) return;
    toy t;
    const lc_seq2seq_batch b = toy_make(&t, 11);
    check_generate_matches_argmax(m, &b, MAX_TGT);
    check_generate_matches_argmax(m, &b, 3);
    lc_seq2seq_free(m);
}

/* Reversal of strings of 1..6 letters of "abcd" (800 steps, a few seconds): near-zero loss, then exact
 * greedy output. */
TEST(learns_to_reverse) {
    enum { B = 16, L = 6, STEPS = 800 };
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    c.enc = (lc_seq2seq_stack){2, 32, 4, 64, "full"};
    c.dec = c.enc;
    c.max_src_len = L, c.max_tgt_len = L;
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, B, 7, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    lc_train_options o;
    lc_train_options_default(&o);
    o.lr = 2e-3f, o.warmup = 20, o.steps = STEPS, o.weight_decay = 0.0f;
    uint8_t src[B][L], tgt[B][L];
    const uint8_t *sp[B], *tp[B];
    int sl[B], tl[B];
    lc_rng r;
    lc_rng_seed(&r, 12);
    double loss = 99;
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < B; i++) {
            sl[i] = tl[i] = 1 + (int)lc_rng_below(&r, L);
            for (int k = 0; k < sl[i]; k++) src[i][k] = (uint8_t)('a' + lc_rng_below(&r, 4));
            for (int k = 0; k < sl[i]; k++) tgt[i][k] = src[i][sl[i] - 1 - k];
            sp[i] = src[i], tp[i] = tgt[i];
        }
        const lc_seq2seq_batch b = {B, sp, sl, tp, tl};
        CHECK(lc_seq2seq_step(m, &o, &b, &loss) == LC_OK, "%s", lc_last_error());
    }
    printf("  reverse: loss %.4f nats per symbol after %d steps\n", loss, STEPS);
    CHECK(loss < 0.02, "loss %.4f", loss);
    const lc_seq2seq_batch b = {B, sp, sl, tp, tl};
    uint8_t out[B * L];
    int len[B], exact = 0;
    CHECK(lc_seq2seq_generate(m, &b, L, out, len) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < B; i++) exact += len[i] == tl[i] && !memcmp(out + i * L, tgt[i], (size_t)tl[i]);
    CHECK(exact == B, "%d of %d reversed exactly", exact, B);
    check_generate_matches_argmax(m, &b, L);
    lc_seq2seq_free(m);
}

/* ---------------------------------------------------------------- PyTorch parity */

static void check_parity(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/seq2seq_%s.safetensors", LC_FIXTURES, name);
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    c.enc = (lc_seq2seq_stack){parity_meta_int(f, "enc.n_layer"), parity_meta_int(f, "enc.d_model"),
                               parity_meta_int(f, "enc.n_head"), parity_meta_int(f, "enc.d_ff"), "full"};
    c.dec = (lc_seq2seq_stack){parity_meta_int(f, "dec.n_layer"), parity_meta_int(f, "dec.d_model"),
                               parity_meta_int(f, "dec.n_head"), parity_meta_int(f, "dec.d_ff"), "full"};
    snprintf(c.enc.attn, sizeof c.enc.attn, "%s", lc_st_get_meta(f, "enc.attn"));
    snprintf(c.dec.attn, sizeof c.dec.attn, "%s", lc_st_get_meta(f, "dec.attn"));
    c.max_src_len = parity_meta_int(f, "max_src_len"), c.max_tgt_len = parity_meta_int(f, "max_tgt_len");
    c.norm = strcmp(lc_st_get_meta(f, "norm"), "pre") ? LC_NORM_POST : LC_NORM_PRE;
    c.activation = strcmp(lc_st_get_meta(f, "activation"), "gelu") ? LC_ACT_RELU : LC_ACT_GELU;
    c.tied = parity_meta_int(f, "tied");
    const int n = parity_meta_int(f, "pairs");
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, n, 1, &m) == LC_OK, "%s", lc_last_error());
    if (m && !parity_load_params(f, &m->ptab, m->params)) {
        int sl[16], tl[16], bytes[2][512];
        const uint8_t *sp[16], *tp[16];
        uint8_t data[2][512];
        const long nn[1] = {n};
        CHECK(n <= 16 && lc_st_read(f, "src_len", LC_DT_I32, 1, nn, sl) == LC_OK &&
              lc_st_read(f, "tgt_len", LC_DT_I32, 1, nn, tl) == LC_OK, "%s", lc_last_error());
        long tot[2] = {0, 0};
        for (int i = 0; i < n; i++) tot[0] += sl[i], tot[1] += tl[i];
        CHECK(lc_st_read(f, "src", LC_DT_I32, 1, tot, bytes[0]) == LC_OK &&
              lc_st_read(f, "tgt", LC_DT_I32, 1, tot + 1, bytes[1]) == LC_OK, "%s", lc_last_error());
        for (int s = 0; s < 2; s++)
            for (long k = 0; k < tot[s]; k++) data[s][k] = (uint8_t)bytes[s][k];
        for (int i = 0, a = 0, b = 0; i < n; a += sl[i], b += tl[i], i++) sp[i] = data[0] + a, tp[i] = data[1] + b;
        const lc_seq2seq_batch batch = {n, sp, sl, tp, tl};
        double sum, want;
        long count;
        float want_f;
        const long one[1] = {1};
        CHECK(lc_st_read(f, "expected.loss", LC_DT_F32, 1, one, &want_f) == LC_OK, "%s", lc_last_error());
        lc_seq2seq_zero_grad(m);
        CHECK(lc_seq2seq_forward(m, &batch, 0, &sum, &count) == LC_OK, "%s", lc_last_error());
        CHECK(lc_seq2seq_backward(m, 1.0f / (float)count) == LC_OK, "%s", lc_last_error());
        const double loss = sum / (double)count;
        want = want_f;
        CHECK_CLOSE("seq2seq mean NLL", &loss, &want, 1, 1e-5, 0);
        parity_check_grads(f, &m->ptab, m->grads, "grad.", name, 1e-4, 5e-7);
    }
    lc_seq2seq_free(m);
    lc_st_close(f);
}

TEST(parity_pre_gelu_tied) { check_parity("pre_gelu_tied"); }
TEST(parity_post_relu_untied) { check_parity("post_relu_untied"); }

int main(void) {
    RUN(gradients_tied_pre);
    RUN(gradients_untied_post_widths_window);
    RUN(packed_pairs_equal_alone);
    RUN(tensor_list);
    RUN(refusals);
    RUN(generate_matches_teacher_forced_argmax_untrained);
    RUN(learns_to_reverse);
    RUN(parity_pre_gelu_tied);
    RUN(parity_post_relu_untied);
    return test_summary("test_seq2seq");
}
