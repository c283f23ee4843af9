/* libFuzzer harness: a HIBERT checkpoint (lc_hibert_checkpoint_info, then lc_hibert_load for one small
 * batch) from arbitrary bytes. Seeds: tiny real checkpoints of every family. */
#include "fuzz_kit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(0, data, size);
    if (!path) return 0;
    lc_hibert_config cfg;
    lc_hibert_run run;
    lc_status st = lc_hibert_checkpoint_info(path, &cfg, &run);
    fuzz_expect_message(st);
    if (st) return 0;
    const lc_hibert_limits lim = {1, 8, 256, 0, 0};
    lc_hibert *m = NULL;
    st = lc_hibert_load(path, &lim, &m, NULL);
    fuzz_expect_message(st);
    lc_hibert_free(m);
    return 0;
}
