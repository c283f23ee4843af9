/* HIBERT's masked-sentence rule (pre-training): which sentences of a document the sentence decoder must
 * regenerate and what the encoders see in their place. */
#include <math.h>

#include "core/rng.h"
#include "core/status.h"
#include "longctx.h"

int lc_hibert_mask_count(int n) {
    const int k = (int)lround(0.15 * n);
    return k < 1 ? 1 : k;
}

lc_status lc_hibert_mask_sentences(int n, uint64_t seed, uint8_t *action, int *source) {
    lc_clear_error();
    if (n < 1) return lc_fail(LC_ERR_ARG, "hibert masking: a document needs at least one sentence, got %d", n);
    if (!action || !source) return lc_fail(LC_ERR_ARG, "hibert masking: action and source are required");
    lc_rng r;
    lc_rng_seed(&r, seed);
    const int k = lc_hibert_mask_count(n);
    /* k distinct sentences, uniformly: the first k of a partial Fisher-Yates shuffle (source as scratch) */
    for (int i = 0; i < n; i++) source[i] = i, action[i] = LC_HIBERT_UNSELECTED;
    for (int i = 0; i < k; i++) {
        const int j = i + (int)lc_rng_below(&r, (uint32_t)(n - i)), t = source[i];
        source[i] = source[j], source[j] = t;
    }
    for (int i = 0; i < k; i++) action[source[i]] = LC_HIBERT_MASKED; /* decided below */
    for (int i = 0; i < n; i++) {
        source[i] = i;
        if (action[i] == LC_HIBERT_UNSELECTED) continue;
        const float u = lc_rng_uniform(&r);
        if (u < 0.8f || n == 1) continue; /* a one-sentence document has no other sentence: masked */
        if (u < 0.9f) {
            const int j = (int)lc_rng_below(&r, (uint32_t)(n - 1)); /* another sentence of the document */
            action[i] = LC_HIBERT_REPLACED, source[i] = j < i ? j : j + 1;
        } else {
            action[i] = LC_HIBERT_KEPT;
        }
    }
    return LC_OK;
}
