/* The word-frequency score of each sentence of a document (the classic frequency summarizer, and the fourth of
 * the sentence features HIBERT's head may read, src/summ/lexrank.c lc_summary_features): the mean, over the
 * sentence's ROUGE tokens outside a short stop list, of the token's count in the whole document divided by the
 * count of the document's most frequent such token. bench/summ_surface_baseline.py --frequency computes the
 * same score independently in Python. Tokens are kept as 64-bit hashes (lc_rouge_token_hashes). */
#include <stdlib.h>

#include "core/status.h"
#include "summ/summ.h"

/* Function words left out of the counts (bench/summ_surface_baseline.py's STOP). */
static const char stop_words[] = "the a an of to in and or is are was were be been for on at by with from that this it "
                                 "its as he she they we i you his her their our but not have has had will would said says";

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether key is in the sorted keys[0..n). */
static int contains(const uint64_t *keys, int n, uint64_t key) {
    return bsearch(&key, keys, (size_t)n, sizeof key, cmp_u64) != NULL;
}

/* How many times key occurs in the sorted keys[0..n). */
static int count_of(const uint64_t *keys, int n, uint64_t key) {
    int lo = 0, hi = n;
    while (lo < hi) { /* the first place >= key */
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    int c = 0;
    while (lo + c < n && keys[lo + c] == key) c++;
    return c;
}

lc_status lc_frequency_scores(const char *const *sent, int n, double *scores) {
    if (n <= 0) return LC_OK;
    uint64_t stop[64];
    const int n_stop = lc_rouge_token_hashes(stop_words, stop);
    qsort(stop, (size_t)n_stop, sizeof *stop, cmp_u64);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (size_t)lc_rouge_token_hashes(sent[i], NULL);
    uint64_t *tok = malloc(sizeof *tok * (total ? total : 1)), *kept = malloc(sizeof *kept * (total ? total : 1));
    int *first = malloc(sizeof *first * ((size_t)n + 1)); /* sentence i's kept tokens: kept[first[i]..first[i+1]) */
    if (!tok || !kept || !first) {
        free(tok), free(kept), free(first);
        return lc_fail(LC_ERR_NOMEM, "frequency: out of memory");
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const int t = lc_rouge_token_hashes(sent[i], tok);
        first[i] = m;
        for (int j = 0; j < t; j++)
            if (!contains(stop, n_stop, tok[j])) kept[m++] = tok[j];
    }
    first[n] = m;
    for (int j = 0; j < m; j++) tok[j] = kept[j];
    qsort(tok, (size_t)m, sizeof *tok, cmp_u64); /* the document's counts: runs of equal keys */
    int top = 0;
    for (int j = 0, run; j < m; j += run) {
        for (run = 1; j + run < m && tok[j + run] == tok[j];) run++;
        if (run > top) top = run;
    }
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int j = first[i]; j < first[i + 1]; j++) sum += (double)count_of(tok, m, kept[j]) / top;
        scores[i] = first[i + 1] > first[i] ? sum / (first[i + 1] - first[i]) : 0;
    }
    free(tok), free(kept), free(first);
    return LC_OK;
}
