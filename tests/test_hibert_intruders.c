/* Tests of the sentence intruders (src/models/hibert/hibert_intruder.c), longctx's auxiliary pre-training objective
 * for HIBERT: the swap rule (pairs of different documents, as many as the rate asks, deterministic, bounded
 * when one document holds nearly every sentence, refusals); the intruder forward is the extraction forward
 * of the swapped batch against labels 1 for the sentences in their own document; the combined step's gradient is the sum of the two
 * objectives' gradients at their scales, and rate 0 is the masked-sentence step; a tiny model learns to
 * find sentences that come from a document with another alphabet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "harness.h"
#include "hibert_kit.h"
#include "longctx.h"
#include "models/hibert/hibert.h"

static int doc_of(const int *n_sents, int n_docs, int i) {
    for (int j = 0, s0 = 0; j < n_docs; s0 += n_sents[j], j++)
        if (i < s0 + n_sents[j]) return j;
    return -1;
}

TEST(swap_rule) {
    static const int shapes[][5] = {{3, 2, 4, 0, 0}, {1, 1, 0, 0, 0}, {7, 1, 5, 9, 2}, {20, 20, 20, 20, 0}};
    static const double rates[] = {0.1, 0.25, 0.5, 1.0};
    int source[96], again[96];
    uint8_t intruder[96], flags2[96];
    for (int s = 0; s < 4; s++) {
        int n_docs = 0, total = 0;
        while (n_docs < 5 && shapes[s][n_docs]) total += shapes[s][n_docs++];
        for (int r = 0; r < 4; r++)
            for (uint64_t seed = 1; seed <= 20; seed++) {
                CHECK(lc_hibert_swap_sentences(n_docs, shapes[s], rates[r], seed, source, intruder) == LC_OK, "%s",
                      lc_last_error());
                int flagged = 0;
                for (int i = 0; i < total; i++) {
                    CHECK(source[i] >= 0 && source[i] < total && source[source[i]] == i, "shape %d: not a swap at %d", s, i);
                    CHECK(intruder[i] == (source[i] != i), "shape %d: flag %d at %d", s, intruder[i], i);
                    if (intruder[i])
                        CHECK(doc_of(shapes[s], n_docs, i) != doc_of(shapes[s], n_docs, source[i]),
                              "shape %d: sentence %d swapped inside its document", s, i);
                    flagged += intruder[i];
                }
                const int pairs = (int)(rates[r] * total / 2 + 0.5);
                /* at rate 1 the pairs run out when the sentences left are all of one document */
                CHECK(rates[r] < 1 ? flagged == 2 * pairs : flagged > 0 && flagged <= 2 * pairs, "shape %d rate %g: %d intruders, want %d", s, rates[r], flagged, 2 * pairs);
                CHECK(lc_hibert_swap_sentences(n_docs, shapes[s], rates[r], seed, again, flags2) == LC_OK &&
                          memcmp(source, again, sizeof(int) * (size_t)total) == 0,
                      "not deterministic");
            }
    }
    /* every sentence is swapped under some seed; another seed gives other swaps */
    int seen[9] = {0}, differs = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        lc_hibert_swap_sentences(3, shapes[0], 0.25, seed, source, intruder);
        lc_hibert_swap_sentences(3, shapes[0], 0.25, seed + 1000, again, flags2);
        differs += memcmp(source, again, sizeof(int) * 9) != 0;
        for (int i = 0; i < 9; i++) seen[i] += intruder[i];
    }
    for (int i = 0; i < 9; i++) CHECK(seen[i] > 0, "sentence %d never swapped in 200 seeds", i);
    CHECK(differs > 150, "seeds give the same swaps %d times in 200", 200 - differs);
    /* one document, or rate 0: nothing swapped; one document among many sentences of another: bounded */
    const int one[1] = {6}, lopsided[2] = {1, 40};
    CHECK(lc_hibert_swap_sentences(1, one, 1.0, 3, source, intruder) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < 6; i++) CHECK(source[i] == i && !intruder[i], "one document: sentence %d swapped", i);
    CHECK(lc_hibert_swap_sentences(2, lopsided, 1.0, 3, source, intruder) == LC_OK, "%s", lc_last_error());
    int flagged = 0;
    for (int i = 0; i < 41; i++) flagged += intruder[i];
    CHECK(flagged == 2 && intruder[0], "lopsided: %d intruders", flagged);
    /* refusals */
    const int empty[2] = {3, 0};
    CHECK(lc_hibert_swap_sentences(2, shapes[0], 1.5, 1, source, intruder) == LC_ERR_ARG, "rate 1.5 accepted");
    CHECK(lc_hibert_swap_sentences(2, shapes[0], -0.1, 1, source, intruder) == LC_ERR_ARG, "rate -0.1 accepted");
    CHECK(lc_hibert_swap_sentences(2, shapes[0], NAN, 1, source, intruder) == LC_ERR_ARG, "rate NaN accepted");
    CHECK(lc_hibert_swap_sentences(2, empty, 0.5, 1, source, intruder) == LC_ERR_ARG, "an empty document accepted");
    CHECK(lc_hibert_swap_sentences(0, shapes[0], 0.5, 1, source, intruder) == LC_ERR_ARG, "no document accepted");
}

enum { DOCS = 3, SENTS = 9 };

/* A batch of 3 documents (3, 2, 4 sentences) of random bytes, sentences of 0 to 15 bytes. */
typedef struct {
    int n_sents[DOCS], len[SENTS];
    uint8_t bytes[SENTS][16];
    const uint8_t *ptr[SENTS];
} batch9;

static lc_hibert_batch batch9_make(batch9 *t, uint64_t seed) {
    static const int n_sents[DOCS] = {3, 2, 4}, len[SENTS] = {5, 0, 12, 7, 7, 3, 15, 1, 9};
    lc_rng r;
    lc_rng_seed(&r, seed);
    memcpy(t->n_sents, n_sents, sizeof n_sents);
    for (int i = 0; i < SENTS; i++) {
        t->len[i] = len[i], t->ptr[i] = t->bytes[i];
        for (int k = 0; k < 16; k++) t->bytes[i][k] = (uint8_t)(lc_rng_next(&r) % 256);
    }
    return (lc_hibert_batch){DOCS, t->n_sents, t->ptr, t->len};
}

static int word_buckets; /* cfg.sent_words of the models made */

static lc_hibert *make(uint64_t seed) {
    lc_hibert_config c;
    hibert_config(&c, (lc_hibert_stack){1, 16, 2, 24, "full"}, (lc_hibert_stack){2, 12, 2, 20, "full"},
                  (lc_hibert_stack){1, 8, 2, 16, "full"}, 12, 6);
    c.sent_words = word_buckets;
    return hibert_new(&c, DOCS, seed, "");
}

TEST(intruder_forward_is_the_extraction_of_the_swapped_batch) {
    batch9 t;
    const lc_hibert_batch b = batch9_make(&t, 5);
    lc_hibert *m = make(3);
    if (!m) return;
    int source[SENTS], len[SENTS];
    uint8_t intruder[SENTS];
    const uint8_t *ptr[SENTS];
    CHECK(lc_hibert_swap_sentences(DOCS, b.n_sents, 0.5, 77, source, intruder) == LC_OK, "%s", lc_last_error());
    uint8_t belongs[SENTS]; /* the labels: 1 for a sentence in its own document */
    for (int i = 0; i < SENTS; i++) ptr[i] = b.sent[source[i]], len[i] = b.sent_len[source[i]], belongs[i] = !intruder[i];
    const lc_hibert_batch swapped = {DOCS, b.n_sents, ptr, len};
    double want = 0, got = 0;
    long nw = 0, ng = 0;
    float scores[SENTS];
    CHECK(lc_hibert_extract_forward(m, &swapped, belongs, 0, &want, &nw) == LC_OK, "%s", lc_last_error());
    memcpy(scores, lc_hibert_scores(m), sizeof scores);
    CHECK(lc_hibert_intruder_forward(m, &b, 0.5, 77, 0, &got, &ng) == LC_OK, "%s", lc_last_error());
    CHECK(got == want && ng == nw && nw == SENTS, "loss %.17g (%ld) against %.17g (%ld)", got, ng, want, nw);
    CHECK(memcmp(scores, lc_hibert_scores(m), sizeof scores) == 0, "scores differ from the swapped batch's");
    CHECK(lc_hibert_intruder_forward(m, &b, 0.5, 78, 0, &got, &ng) == LC_OK && got != want, "another seed, same loss");
    lc_hibert_free(m);
}

/* The combined step accumulates weight * d(intruder BCE mean) + d(masked-sentence NLL mean): with a learning
 * rate of 1e-30 and no clipping, the gradients it leaves are those of the two passes run apart (the intruder
 * forward of the whole batch, then the masked-sentence forward), summed. Returns the sentences the masking
 * rule replaced (their originals are read by the intruders' pass). */
static int step_matches_two_passes(uint64_t seed, float weight) {
    batch9 t;
    const lc_hibert_batch b = batch9_make(&t, 9);
    lc_hibert *m = make(4), *ref = make(4);
    if (!m || !ref) return 0;
    const size_t n = m->ptab.total;
    float *want = calloc(n, sizeof *want);
    double sum;
    long count;
    lc_hibert_zero_grad(ref);
    CHECK(lc_hibert_intruder_forward(ref, &b, 0.5, lc_seed_mix(seed, LC_HIBERT_INTRUDER_STREAM), 1, &sum, &count) == LC_OK &&
              lc_hibert_backward(ref, weight / (float)count) == LC_OK,
          "%s", lc_last_error());
    const double ibce = sum / (double)count;
    CHECK(lc_hibert_pretrain_forward(ref, &b, seed, 1, &sum, &count) == LC_OK && lc_hibert_backward(ref, 1.0f / (float)count) == LC_OK,
          "%s", lc_last_error());
    memcpy(want, ref->grads, n * sizeof *want);
    lc_train_options o;
    lc_train_options_default(&o);
    o.lr = 1e-30f, o.min_lr = 0, o.clip = 0, o.weight_decay = 0; /* the gradients are what counts */
    double loss = 0, got_ibce = 0;
    CHECK(lc_hibert_pretrain_step_intruders(m, &o, &b, seed, 0.5, weight, &loss, &got_ibce) == LC_OK, "%s", lc_last_error());
    /* the one-pass step packs more sentences into the sentence encoder's products, whose blocking (and so
     * their last bits) may follow the row count */
    CHECK(fabs(got_ibce - ibce) <= 1e-6 * ibce && fabs(loss - sum / (double)count) <= 1e-6 * loss,
          "seed %llu: losses %.9g %.9g against %.9g %.9g", (unsigned long long)seed, loss, got_ibce, sum / (double)count, ibce);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)m->grads[i] - want[i]));
        scale = fmax(scale, fabs((double)want[i]));
    }
    CHECK(scale > 0 && worst <= 1e-6 * scale, "seed %llu: gradients differ by %.3g (largest %.3g)",
          (unsigned long long)seed, worst, scale);
    /* the head's gradient comes from the intruders alone (the masked-sentence loss does not read it) */
    const lc_tensor *head = NULL;
    for (int k = 0; k < m->tensors.n; k++)
        if (strcmp(m->tensors.t[k].name, "head.weight") == 0) head = &m->tensors.t[k];
    CHECK(head != NULL, "no head.weight");
    double head_norm = 0;
    const lc_slot *hs = head ? &m->ptab.slots[head->slot] : NULL;
    for (size_t i = 0; hs && i < hs->count; i++) head_norm += fabs(m->grads[hs->offset + i]);
    CHECK(head_norm > 0, "the head got no gradient from the intruders");
    int replaced = 0;
    for (int i = 0; i < SENTS; i++) replaced += ref->action[i] == LC_HIBERT_REPLACED;
    free(want);
    lc_hibert_free(m), lc_hibert_free(ref);
    return replaced;
}

TEST(combined_step_sums_both_gradients) {
    int replaced = 0;
    for (uint64_t seed = 1234; seed < 1250; seed++) replaced += step_matches_two_passes(seed, seed % 2 ? 0.7f : 3.0f);
    CHECK(replaced > 0, "no seed replaced a sentence: the originals of replaced sentences are untested");
    word_buckets = 11; /* hashed word vectors: each place reads the words of the sentence it reads */
    replaced = 0;
    for (uint64_t seed = 1234; seed < 1242; seed++) replaced += step_matches_two_passes(seed, 1.5f);
    CHECK(replaced > 0, "with word vectors, no seed replaced a sentence");
    word_buckets = 0;
    batch9 t;
    const lc_hibert_batch b = batch9_make(&t, 9);
    lc_train_options o;
    /* rate 0 (or weight 0): the masked-sentence step exactly */
    lc_hibert *a = make(6), *c = make(6);
    const size_t n = a->ptab.total;
    lc_train_options_default(&o);
    for (int step = 0; step < 3; step++) {
        double la = 0, lb = 0;
        CHECK(lc_hibert_pretrain_step(a, &o, &b, 50 + (uint64_t)step, &la) == LC_OK &&
                  lc_hibert_pretrain_step_intruders(c, &o, &b, 50 + (uint64_t)step, 0.5, 0, &lb, NULL) == LC_OK && la == lb,
              "step %d: %.9g against %.9g", step, la, lb);
    }
    CHECK(memcmp(a->params, c->params, n * sizeof(float)) == 0, "weight 0 changed the step");
    CHECK(lc_hibert_pretrain_step_intruders(c, &o, &b, 1, 2.0, 1, NULL, NULL) == LC_ERR_ARG, "rate 2 accepted");
    CHECK(lc_hibert_pretrain_step_intruders(c, &o, &b, 1, 0.5, -1, NULL, NULL) == LC_ERR_ARG, "weight -1 accepted");
    lc_hibert_free(a), lc_hibert_free(c);
}

/* Documents whose sentences use disjoint alphabets: an intruder is a sentence of another alphabet, which only
 * a comparison with the rest of its document can tell (every alphabet is common across the batch). */
TEST(learns_to_find_intruders) {
    lc_hibert_config c;
    hibert_config(&c, (lc_hibert_stack){1, 32, 2, 64, "full"}, (lc_hibert_stack){2, 32, 4, 64, "full"},
                  (lc_hibert_stack){1, 16, 2, 32, "full"}, 10, 6);
    enum { D = 8, S = 6 };
    lc_hibert *m = hibert_new(&c, D, 21, "");
    if (!m) return;
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 1200, o.warmup = 10, o.lr = 3e-3f, o.min_lr = 3e-3f, o.weight_decay = 0;
#ifdef __SANITIZE_ADDRESS__
    o.steps = 100; /* ASan checks the memory of these steps; the other builds check what 1,200 of them learn */
#endif
    uint8_t bytes[D * S][10];
    const uint8_t *ptr[D * S];
    int len[D * S], n_sents[D] = {S, S, S, S, S, S, S, S};
    lc_rng r;
    lc_rng_seed(&r, 8);
    double first = 0, last = 0;
    for (int step = 0; step < o.steps; step++) {
        const int first_alphabet = (int)lc_rng_below(&r, 8);
        for (int j = 0; j < D; j++) {
            const int alphabet = (first_alphabet + j) % 8; /* 8 alphabets of 3 letters, one per document */
            for (int i = j * S; i < (j + 1) * S; i++) {
                len[i] = 6 + (int)lc_rng_below(&r, 5), ptr[i] = bytes[i];
                for (int k = 0; k < len[i]; k++) bytes[i][k] = (uint8_t)('a' + 3 * alphabet + (int)lc_rng_below(&r, 3));
            }
        }
        const lc_hibert_batch b = {D, n_sents, ptr, len};
        double loss = 0, ibce = 0;
        CHECK(lc_hibert_pretrain_step_intruders(m, &o, &b, (uint64_t)step, 0.25, 4, &loss, &ibce) == LC_OK, "%s",
              lc_last_error());
        if (step < 10) first += ibce / 10;
        if (step >= o.steps - 10) last += ibce / 10;
    }
    printf("  toy intruders: BCE %.4f -> %.4f nats\n", first, last);
    /* 12 of 48 sentences are intruders: a model that ignores the documents stays at H(0.25) = 0.562 */
#ifdef __SANITIZE_ADDRESS__
    CHECK(first > 0.45 && isfinite(last), "intruder BCE %.4f -> %.4f", first, last);
#else
    CHECK(first > 0.45 && last < 0.3, "intruder BCE %.4f -> %.4f", first, last);
#endif
    lc_hibert_free(m);
}

int main(void) {
    RUN(swap_rule);
    RUN(intruder_forward_is_the_extraction_of_the_swapped_batch);
    RUN(combined_step_sums_both_gradients);
    RUN(learns_to_find_intruders);
    return test_summary("test_hibert_intruders");
}
