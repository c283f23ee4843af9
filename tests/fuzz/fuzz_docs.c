/* libFuzzer harness: a BBC News document from arbitrary bytes (the part before the first NUL byte is the
 * article, the rest its reference summary, each read from a file as the corpus reader does), then what
 * summarization computes from it: sentence labels by both rules, ROUGE of the lead sentences against the
 * reference, and LexRank scores, which must sum to 1. */
#include <math.h>

#include "fuzz_kit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t na = nul ? (size_t)(nul - data) : size;
    const char *article = fuzz_file(0, data, na);
    const char *summary = nul ? fuzz_file(1, nul + 1, size - na - 1) : NULL;
    if (!article || (nul && !summary)) return 0;
    lc_document doc;
    lc_status st = lc_document_read(article, summary, &doc);
    fuzz_expect_message(st);
    if (st) return 0;
    const int n = doc.sents.n;
    const char *const *sent = (const char *const *)doc.sents.sent;
    uint8_t *labels = malloc((size_t)n + 1);
    double *scores = malloc(sizeof(double) * ((size_t)n + 1));
    if (!labels || !scores || n < 1) abort();
    if (doc.reference) {
        for (int rule = 0; rule < 2; rule++) {
            int count = -1;
            st = lc_summary_labels(sent, n, doc.reference, (lc_label_rule)rule, labels, &count);
            fuzz_expect_message(st);
            if (!st && (count < 0 || count > n)) abort();
        }
        char *lead = NULL;
        for (int i = 0; i < n; i++) labels[i] = i < 3;
        lc_rouge r;
        if (!lc_sentences_join(sent, n, labels, &lead) && !lc_rouge_score(lead, doc.reference, &r))
            if (!(r.r1.f1 >= 0 && r.r1.f1 <= 1 && r.r2.f1 >= 0 && r.r2.f1 <= 1 && r.rl.f1 >= 0 && r.rl.f1 <= 1))
                abort();
        free(lead);
    }
    lc_idf idf;
    if (!lc_idf_build(sent, n, &idf)) {
        if (!lc_lexrank_scores(sent, n, &idf, 0.1, 0.85, scores)) {
            double sum = 0;
            for (int i = 0; i < n; i++) {
                if (!(scores[i] >= 0)) abort();
                sum += scores[i];
            }
            if (fabs(sum - 1) > 1e-6) abort();
        }
        lc_idf_free(&idf);
    }
    free(labels);
    free(scores);
    lc_document_free(&doc);
    return 0;
}
