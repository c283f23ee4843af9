/* libFuzzer harness: a classifier checkpoint (lc_classifier_load: metadata, label set, word vocabulary,
 * tensor table) from arbitrary bytes; the loaded model must have as many labels as classes. Seeds: tiny
 * real checkpoints of every family. */
#include "fuzz_kit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(0, data, size);
    if (!path) return 0;
    lc_classifier *m = NULL;
    lc_classify_run run;
    lc_label_set labels;
    lc_word_vocab *words = NULL;
    const lc_status st = fuzz_expect_message(lc_classifier_load(path, 1, 0, &m, &run, &labels, &words));
    if (!st) {
        if (!m || labels.n != lc_classifier_config(m)->n_classes) abort();
        lc_label_set_free(&labels);
        lc_word_vocab_free(words);
        lc_classifier_free(m);
    }
    return 0;
}
