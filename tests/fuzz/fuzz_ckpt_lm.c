/* libFuzzer harness: a language-model checkpoint (lc_checkpoint_load) from arbitrary bytes. Whatever the
 * file, loading either builds the model it describes or fails with one message; the seeds are tiny real
 * checkpoints of every family (a classifier or HIBERT file must be refused as another kind). */
#include "fuzz_kit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(0, data, size);
    lc_model *m = NULL;
    lc_train_options o;
    if (path && !fuzz_expect_message(lc_checkpoint_load(path, 1, &m, &o)) && !m) abort();
    lc_model_free(m);
    return 0;
}
