/* Internal pieces of the summarization data module (src/summ): token ids shared by ROUGE and the
 * greedy oracle. The public API (text files, sentences, the BBC corpus, labels, ROUGE) is in longctx.h. */
#ifndef LC_SUMM_H
#define LC_SUMM_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"

/* A copy of text (free() it; NULL when out of memory) with every run of whitespace (space, \t, \n, \v,
 * \f, \r) replaced by one space and none at either end. */
char *lc_collapse_whitespace(const char *text);

/* The split of the document at `index` in sorted path order (see lc_doc_list_open). */
lc_part lc_doc_part(int index);

/* Interns tokens (byte ranges of texts that outlive the vocabulary) as dense ids 0, 1, 2, ... */
typedef struct {
    const char **start; /* slot -> token start (NULL: empty slot) */
    int *len, *id;      /* slot -> token length, id */
    size_t cap;         /* slots, a power of two */
    int n;              /* ids handed out */
} lc_vocab;

void lc_vocab_free(lc_vocab *v);

/* The ROUGE tokens of text (runs of [a-z0-9] after mapping A-Z to a-z) as ids of v: *ids (free() it,
 * NULL when *n == 0) holds *n ids. Tokens are compared case-insensitively, so "The" and "the" get one id. */
lc_status lc_rouge_tokenize(const char *text, lc_vocab *v, int **ids, int *n);

/* The ROUGE tokens of text (runs of [a-z0-9] after mapping A-Z to a-z) as 64-bit hashes of their lower-cased
 * bytes, in order, into out[] (NULL: only count them); returns how many there are. */
int lc_rouge_token_hashes(const char *text, uint64_t *out);

/* The text's ROUGE tokens, lower-cased, each of more than 3 characters replaced by its Porter stem, each
 * followed by one space, as a new string (free() it; NULL when out of memory): lc_rouge_score_stem's input. */
char *lc_rouge_stem_text(const char *text);

/* Sorted n-gram keys (n = 1 or 2) of ids[0..len) with their counts: *keys and *counts (free() both)
 * hold *m distinct n-grams in increasing key order. */
lc_status lc_ngram_counts(const int *ids, int len, int n, uint64_t **keys, int **counts, int *m);

/* Clipped overlap of the n-grams of ids[0..len) against sorted reference counts (keys, counts, m):
 * sum over n-grams of min(candidate count, reference count). scratch holds len keys. */
long lc_ngram_overlap(const int *ids, int len, int n, const uint64_t *keys, const int *counts, int m,
                      uint64_t *scratch);

/* Length of the longest common subsequence of a[0..na) and b[0..nb); LC_ERR_NOMEM when the row buffer
 * cannot be had. */
lc_status lc_lcs_length(const int *a, int na, const int *b, int nb, long *out);

/* F1 of `overlap` matches among `cand` candidate and `ref` reference items: 2 o / (c + r), with
 * precision o / c and recall o / r (each 0 when its denominator is 0). */
lc_rouge_prf lc_rouge_prf_of(long overlap, long cand, long ref);

#endif
