/* Tests of HIBERT's hashed word vectors (cfg.sent_words, src/models/hibert/hibert_words.c): the bucket is FNV-1a of
 * the word (published test vectors); the document encoder's input for each sentence is its EOS state minus
 * its document's mean EOS state, plus the sum of its words' vectors over sqrt(its word count), with words
 * found here by an independent reading of the rule (lower-cased runs of ASCII letters and digits, within
 * the bytes the encoder reads); a masked sentence of pre-training brings no words, a replaced one brings
 * its replacement's; a model without word vectors has no sent.words tensor; with word vectors the sentence
 * encoder's final LayerNorm gain starts at 0 (the EOS part grows from nothing) and still gets its gradient. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "longctx.h"
#include "models/hibert/hibert.h"

enum { BUCKETS = 13, MAX_LEN = 40, C_S = 16 };

static const char *texts[7] = {"The cat sat on the MAT.", "It's 42 degrees -- hot!", "...", "Dogs, cats & mice?",
                               "A long sentence whose last words are cut off by the truncation at forty bytes",
                               "Caf\xc3\xa9 au lait", ""};
static const int n_sents[2] = {4, 3};
static int lens[7];

static lc_hibert_batch batch(void) {
    for (int i = 0; i < 7; i++) lens[i] = (int)strlen(texts[i]);
    return (lc_hibert_batch){2, n_sents, (const uint8_t *const *)texts, lens};
}

static lc_hibert *make(int words) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.sent = (lc_hibert_stack){1, C_S, 2, 24, "full"};
    c.doc = (lc_hibert_stack){1, 12, 2, 20, "full"};
    c.dec = (lc_hibert_stack){1, 8, 2, 16, "full"};
    c.max_sent_len = MAX_LEN, c.max_sents = 8, c.sent_words = words;
    const lc_hibert_limits lim = {2, 0, 0};
    lc_hibert *m = NULL;
    CHECK(lc_hibert_create(&c, &lim, 5, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static float *tensor(lc_hibert *m, float *base, const char *name, size_t *count) {
    const int i = lc_table_find(&m->ptab, name);
    CHECK(i >= 0, "no tensor %s", name);
    if (i < 0) return NULL;
    *count = m->ptab.slots[i].count;
    return base + m->ptab.slots[i].offset;
}

/* A model with word vectors whose EOS part is not 0 (its sent.ln_f gain set to 1 + small offsets), so the
 * tests below see both parts of the sentence vector. */
static lc_hibert *make_with_eos(int words) {
    lc_hibert *m = make(words);
    size_t n = 0;
    float *g = m ? tensor(m, m->params, "sent.ln_f.weight", &n) : NULL;
    for (size_t j = 0; g && j < n; j++) g[j] = 1.0f + 0.01f * (float)j;
    return m;
}

TEST(bucket_is_fnv1a) {
    /* FNV-1a 32-bit: "" -> 0x811c9dc5, "a" -> 0xe40c292c, "foobar" -> 0xbf9cf968 */
    CHECK(lc_hibert_word_bucket((const uint8_t *)"", 0, 1 << 30) == (int)(0x811c9dc5u % (1u << 30)), "empty word");
    CHECK(lc_hibert_word_bucket((const uint8_t *)"a", 1, 1000003) == (int)(0xe40c292cu % 1000003u), "a");
    CHECK(lc_hibert_word_bucket((const uint8_t *)"foobar", 6, 4096) == (int)(0xbf9cf968u % 4096u), "foobar");
}

/* The words of text[0 .. min(len, MAX_LEN)) by the rule, read independently: their buckets into ids. */
static int words_of(const char *text, int len, int *ids) {
    char word[64];
    int n = 0, k = 0;
    if (len > MAX_LEN) len = MAX_LEN;
    for (int t = 0; t <= len; t++) {
        const char c = t < len ? text[t] : ' ';
        const char lc = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
        if ((lc >= 'a' && lc <= 'z') || (lc >= '0' && lc <= '9')) {
            word[k++] = lc;
        } else if (k) {
            ids[n++] = lc_hibert_word_bucket((const uint8_t *)word, k, BUCKETS);
            k = 0;
        }
    }
    return n;
}

/* doc_in of place i (the document encoder's input before its projection) against its EOS state minus its
 * document's mean EOS state, plus the words of sentence `text` (masked: NULL, none). Returns the largest
 * difference. */
static double input_error(const lc_hibert *m, int i, const char *text, int len) {
    const int s0 = i < n_sents[0] ? 0 : n_sents[0], s1 = i < n_sents[0] ? n_sents[0] : n_sents[0] + n_sents[1];
    const float *x = m->doc_in + (size_t)m->d_row[i] * C_S;
    int ids[64];
    const int n = text ? words_of(text, len, ids) : 0;
    double worst = 0;
    for (int c = 0; c < C_S; c++) {
        double mean = 0;
        for (int j = s0; j < s1; j++) mean += m->sent_out[(size_t)m->s_row[j] * C_S + c] / (s1 - s0);
        double want = m->sent_out[(size_t)m->s_row[i] * C_S + c] - mean;
        for (int w = 0; w < n; w++) want += m->words[(size_t)ids[w] * C_S + c] / sqrt((double)n);
        worst = fmax(worst, fabs(want - x[c]));
    }
    return worst;
}

TEST(sentence_vector_is_eos_plus_words) {
    lc_hibert *m = make_with_eos(BUCKETS);
    if (!m) return;
    const lc_hibert_batch b = batch();
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    int counts[7], ids[64];
    for (int i = 0; i < 7; i++) {
        counts[i] = words_of(texts[i], lens[i], ids);
        CHECK(input_error(m, i, texts[i], lens[i]) < 1e-5, "sentence %d: input differs by %g", i, input_error(m, i, texts[i], lens[i]));
    }
    /* the rule's cases: "it" "s" "42" ...; "..." none; "caf" "au" "lait" (é is not a word byte); truncation */
    CHECK(counts[0] == 6 && counts[1] == 5 && counts[2] == 0 && counts[3] == 3 && counts[5] == 3 && counts[6] == 0,
          "word counts %d %d %d %d %d %d", counts[0], counts[1], counts[2], counts[3], counts[5], counts[6]);
    CHECK(counts[4] == 8, "the truncated sentence has %d words within its first %d bytes", counts[4], MAX_LEN);
    lc_hibert_free(m);
    m = make(0);
    CHECK(m && m->words == NULL && lc_table_find(&m->ptab, "sent.words") < 0, "a model without word vectors has sent.words");
    lc_hibert_free(m);
}

TEST(masked_sentences_bring_no_words) {
    lc_hibert *m = make_with_eos(BUCKETS);
    if (!m) return;
    const lc_hibert_batch b = batch();
    /* document 0: sentence 0 masked, 1 replaced by sentence 3 of its document, 3 kept; document 1: 4 masked */
    const uint8_t action[7] = {LC_HIBERT_MASKED, LC_HIBERT_REPLACED, LC_HIBERT_UNSELECTED, LC_HIBERT_KEPT,
                               LC_HIBERT_MASKED, LC_HIBERT_UNSELECTED, LC_HIBERT_UNSELECTED};
    const int source[7] = {0, 3, 2, 3, 0, 1, 2};
    double sum = 0;
    long count = 0;
    CHECK(lc_hibert_pretrain_actions(m, &b, action, source, 0, &sum, &count) == LC_OK, "%s", lc_last_error());
    CHECK(input_error(m, 0, NULL, 0) < 1e-6 && input_error(m, 4, NULL, 0) < 1e-6, "a masked sentence brought words");
    CHECK(input_error(m, 1, texts[3], lens[3]) < 1e-5, "the replaced sentence does not bring its replacement's words");
    CHECK(input_error(m, 3, texts[3], lens[3]) < 1e-5 && input_error(m, 5, texts[5], lens[5]) < 1e-5, "kept, unselected");
    lc_hibert_free(m);
}

/* With word vectors, sent.ln_f.weight starts at 0: every EOS state is its bias, so the document encoder
 * reads the words alone, and the gain gets a gradient (the EOS part can grow) while the sentence blocks get
 * none yet. Without word vectors the gain starts at 1, as every other LayerNorm's. */
TEST(eos_part_starts_at_zero_with_word_vectors) {
    lc_hibert *m = make(BUCKETS);
    if (!m) return;
    size_t n = 0, nb = 0;
    const float *gain = tensor(m, m->params, "sent.ln_f.weight", &n);
    for (size_t j = 0; gain && j < n; j++) CHECK(gain[j] == 0.0f, "sent.ln_f.weight[%zu] = %g, not 0", j, gain[j]);
    const lc_hibert_batch b = batch();
    const uint8_t labels[7] = {1, 0, 0, 1, 0, 1, 0};
    double sum = 0;
    long count = 0;
    lc_hibert_zero_grad(m);
    CHECK(lc_hibert_extract_forward(m, &b, labels, 0, &sum, &count) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_backward(m, 1.0f) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < 7; i++)
        CHECK(input_error(m, i, texts[i], lens[i]) < 1e-5, "sentence %d: not its words alone", i);
    double g_gain = 0, g_block = 0;
    const float *dg = tensor(m, m->grads, "sent.ln_f.weight", &n);
    const float *db = tensor(m, m->grads, "sent.blocks.0.ffn.fc2.weight", &nb);
    for (size_t j = 0; dg && j < n; j++) g_gain += fabs(dg[j]);
    for (size_t j = 0; db && j < nb; j++) g_block += fabs(db[j]);
    CHECK(g_gain > 1e-6 && g_block == 0, "gradient of the gain %g (want > 0), of a sentence block %g (want 0)", g_gain, g_block);
    lc_hibert_free(m);
    m = make(0);
    gain = m ? tensor(m, m->params, "sent.ln_f.weight", &n) : NULL;
    for (size_t j = 0; gain && j < n; j++) CHECK(gain[j] == 1.0f, "without words, sent.ln_f.weight[%zu] = %g", j, gain[j]);
    lc_hibert_free(m);
}

int main(void) {
    RUN(bucket_is_fnv1a);
    RUN(sentence_vector_is_eos_plus_words);
    RUN(masked_sentences_bring_no_words);
    RUN(eos_part_starts_at_zero_with_word_vectors);
    return test_summary("test_hibert_words");
}
