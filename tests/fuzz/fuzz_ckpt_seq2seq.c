/* libFuzzer harness: a seq2seq checkpoint (lc_seq2seq_load: metadata, the config of both stacks, the tensor
 * table) from arbitrary bytes; a model that loads must generate from a short source within its longest
 * target. Seeds: tiny real checkpoints of seq2seq and the other families' exports. */
#include "fuzz_kit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(0, data, size);
    if (!path) return 0;
    lc_seq2seq *m = NULL;
    lc_seq2seq_run run;
    const lc_status st = fuzz_expect_message(lc_seq2seq_load(path, 1, &m, &run));
    if (!st) {
        int max_src = 0, max_tgt = 0;
        lc_seq2seq_max_lengths(m, &max_src, &max_tgt);
        if (!m || max_src < 1 || max_tgt < 1) abort();
        static const uint8_t src[] = "abc";
        const int src_len = max_src < 3 ? max_src : 3;
        uint8_t *out = malloc((size_t)max_tgt);
        int out_len = -1;
        if (out && !lc_seq2seq_generate_one(m, src, src_len, out, &out_len) && (out_len < 0 || out_len > max_tgt))
            abort();
        free(out);
        lc_seq2seq_free(m);
    }
    return 0;
}
