/* The binding API's classifier (include/longctx/flat.h): a checkpoint's classifier with its label names and
 * vocabulary in one handle, and predictions of texts; thin over lc_classifier_load and
 * lc_classifier_classify_texts. */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "longctx/flat.h"
#include "models/classify/classify_fit.h"

struct lc_text_classifier {
    lc_classifier *m;
    lc_label_set labels;
    lc_word_vocab *words;
    int batch;
    char path[256]; /* for messages (cut) */
};

lc_status lc_text_classifier_load(const char *path, int max_batch, lc_text_classifier **out) {
    lc_clear_error();
    if (!out) return lc_fail(LC_ERR_ARG, "text classifier: out is required");
    *out = NULL;
    if (!path) return lc_fail(LC_ERR_ARG, "text classifier: a path is required");
    if (max_batch < 0 || max_batch > 4096) return lc_fail(LC_ERR_ARG, "max_batch must be 0..4096, got %d", max_batch);
    lc_text_classifier *c = calloc(1, sizeof *c);
    if (!c) return lc_fail(LC_ERR_NOMEM, "out of memory loading %s", path);
    c->batch = max_batch ? max_batch : 16;
    snprintf(c->path, sizeof c->path, "%s", path);
    const lc_status st = lc_classifier_load(path, c->batch, 0, &c->m, NULL, &c->labels, &c->words);
    if (st) lc_text_classifier_free(c);
    else *out = c;
    return st;
}

void lc_text_classifier_free(lc_text_classifier *c) {
    if (!c) return;
    lc_classifier_free(c->m);
    lc_label_set_free(&c->labels);
    lc_word_vocab_free(c->words);
    free(c);
}

lc_classifier *lc_text_classifier_model(lc_text_classifier *c) { return c ? c->m : NULL; }
const lc_label_set *lc_text_classifier_labels(const lc_text_classifier *c) { return &c->labels; }
const lc_word_vocab *lc_text_classifier_words(const lc_text_classifier *c) { return c->words; }
int lc_text_classifier_classes(const lc_text_classifier *c) { return c ? c->labels.n : 0; }

const char *lc_text_classifier_label(const lc_text_classifier *c, int i) {
    return c && i >= 0 && i < c->labels.n ? c->labels.name[i] : NULL;
}

lc_status lc_text_classifier_predict(lc_text_classifier *c, long n, const char *const *texts, const size_t *lens,
                                     int *pred, double *probs) {
    lc_clear_error();
    if (!c) return lc_fail(LC_ERR_ARG, "text classifier: a classifier is required");
    if (lc_classifier_config(c->m)->objective == LC_CLASSIFY_MLM)
        return lc_fail(LC_ERR_ARG, "%s is a masked-token pre-training (objective mlm): its head is untrained; "
                                   "fine-tune it with train --task classify --init %s", c->path, c->path);
    return lc_classifier_classify_texts(c->m, c->words, n, (const uint8_t *const *)texts, lens, c->batch, pred, probs);
}
