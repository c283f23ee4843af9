/* What the HIBERT tests (tests/test_hibert*.c) share: a config of three stacks, and a model of it made for
 * up to a number of documents (no other limits), with a failed CHECK where lc_hibert_create refuses it. Include after harness.h. */
#ifndef LC_TESTS_HIBERT_KIT_H
#define LC_TESTS_HIBERT_KIT_H

#include <stdint.h>

#include "models/hibert/hibert.h"

/* The default config with these three stacks, sentences of up to max_sent_len bytes and documents of up to
 * max_sents sentences. */
static inline void hibert_config(lc_hibert_config *c, lc_hibert_stack sent, lc_hibert_stack doc, lc_hibert_stack dec,
                                 int max_sent_len, int max_sents) {
    lc_hibert_config_default(c);
    c->sent = sent, c->doc = doc, c->dec = dec;
    c->max_sent_len = max_sent_len, c->max_sents = max_sents;
}

/* lc_hibert_create(c) for batches of up to docs documents; NULL when refused (the CHECK names `what`). */
static inline lc_hibert *hibert_new(const lc_hibert_config *c, int docs, uint64_t seed, const char *what) {
    lc_hibert_limits lim = {docs, 0, 0};
    lc_hibert *m = NULL;
    CHECK(lc_hibert_create(c, &lim, seed, &m) == LC_OK, "%s%s", what, lc_last_error());
    return m;
}

#endif
