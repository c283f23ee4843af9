/* longctx public API, part of longctx.h (include that one): Documents, sentences, summary labels and ROUGE: the data and evaluation side of extractive summarization. */
#ifndef LONGCTX_SUMMARY_H
#define LONGCTX_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ documents, sentences and ROUGE
 * The data and evaluation side of extractive summarization (src/summ; docs/results/summarization-protocol.md): text files, the
 * sentence rule, the BBC News Summary layout and its split, sentence labels and ROUGE. None of it needs
 * a model. */

/* Largest text file lc_text_read accepts (64 MiB). */
#define LC_TEXT_MAX_BYTES (64u << 20)

/* Read a text file whole as NUL-terminated UTF-8 into *text (free() it) of *len bytes (len may be NULL).
 * Valid UTF-8 is kept as it is, without a leading byte-order mark; a file that is not valid UTF-8 is
 * decoded as Latin-1 (ISO 8859-1: each byte one character) and *latin1 (may be NULL) is set to 1.
 * LC_ERR_IO: missing, unreadable, a directory or not a regular file; LC_ERR_FORMAT: a control byte other
 * than \t \n \v \f \r (a binary file) or larger than LC_TEXT_MAX_BYTES. Messages name the file. */
lc_status lc_text_read(const char *path, char **text, size_t *len, int *latin1);
/* Offset of the first byte of s[0..n) that does not start a valid UTF-8 sequence (RFC 3629), or n. */
size_t lc_utf8_invalid_at(const char *s, size_t n);
/* lc_text_read for users' files: a file that is not valid UTF-8 is refused (LC_ERR_FORMAT, one line naming
 * the file and the byte offset) unless allow_latin1, which reads it as Latin-1. */
lc_status lc_text_read_user(const char *path, int allow_latin1, char **text, size_t *len);

/* n sentences sent[0..n), NUL-terminated strings in one buffer. */
typedef struct {
    int n;
    char **sent;
    char *buf;
} lc_sentences;

/* The sentence rule: every run of whitespace (space, \t, \n, \v, \f, \r) becomes one space and none is
 * kept at either end; then a sentence ends after '.', '!' or '?' when a space and then an upper-case
 * ASCII letter or a quote (" or ') follow, and that space is dropped. Nothing else ends a sentence:
 * "Mr. Smith" is two sentences, 'said "no." Then' is one. Text without such a boundary is one sentence;
 * empty or all-whitespace text has none (n = 0). */
lc_status lc_sentences_split(const char *text, lc_sentences *out);
void lc_sentences_free(lc_sentences *s);
/* The sentences with pick[i] != 0 (all when pick is NULL), in order, joined by one space, into *out
 * (free() it). */
lc_status lc_sentences_join(const char *const *sent, int n, const uint8_t *pick, char **out);

/* Documents in the BBC News Summary layout: ROOT/articles/<topic>/<name>.txt (or ROOT/articles/<name>.txt),
 * each with its reference summary at the same path under ROOT/summaries/. All documents are sorted by
 * their path under articles/ (byte order; articles/business/001.txt first in the BBC corpus), and
 * document i (0-based) of that order is test when i % 10 == 0, valid when i % 10 == 5, train otherwise. */
typedef struct {
    int n;          /* documents of the requested part */
    char **article; /* ROOT/articles/... */
    char **summary; /* ROOT/summaries/..., same relative path */
    int *index;     /* position in the sorted order of all documents */
    int total;      /* documents in the corpus */
} lc_doc_list;

/* List the documents of one part (LC_PART_ALL: every one). Errors name the path: ROOT missing or not a
 * directory, no articles/ or summaries/ directory, no .txt article, an article without its summary. */
lc_status lc_doc_list_open(const char *root, lc_part part, lc_doc_list *out);
void lc_doc_list_free(lc_doc_list *l);

/* One article: line 1 is the title, the rest the body, which is split into sentences. */
typedef struct {
    char *title;        /* line 1, whitespace collapsed */
    lc_sentences sents; /* sentences of the body (at least one) */
    char *reference;    /* the summary file's text as read (NULL when no summary path was given) */
    int latin1;         /* bit 0: the article, bit 1: the summary was decoded as Latin-1 */
} lc_document;

/* Read an article and (when summary_path is not NULL) its reference summary with lc_text_read.
 * LC_ERR_FORMAT naming the file for an empty document (no text after the title line) or an empty or
 * all-whitespace summary. */
lc_status lc_document_read(const char *article_path, const char *summary_path, lc_document *out);
void lc_document_free(lc_document *d);

typedef enum {
    LC_LABELS_CONTAINED = 0, /* 1 when the sentence occurs verbatim (byte for byte) in the reference */
    LC_LABELS_GREEDY         /* the greedy ROUGE oracle */
} lc_label_rule;

/* 0/1 labels[0..n) of sentences against a reference summary, and their sum in *count (may be NULL).
 * GREEDY starts from no sentence and repeatedly adds the sentence that most increases ROUGE-1 F1 +
 * ROUGE-2 F1 of the chosen sentences (joined in document order by a space) against the reference, the
 * earliest on a tie, until no sentence increases it by more than 1e-12. */
lc_status lc_summary_labels(const char *const *sent, int n, const char *reference, lc_label_rule rule,
                            uint8_t *labels, int *count);

/* Inverse document frequencies of ROUGE tokens over a collection of texts: idf(w) = ln(N / df(w)) for a
 * token in df(w) of the N texts, ln N for a token in none. */
typedef struct {
    int n_texts;   /* N */
    int n;         /* distinct tokens */
    uint64_t *key; /* token hashes, increasing */
    int *df;       /* texts holding each */
} lc_idf;

lc_status lc_idf_build(const char *const *texts, int n, lc_idf *out);
void lc_idf_free(lc_idf *idf);
double lc_idf_of(const lc_idf *idf, uint64_t key);

/* LexRank with a threshold (Erkan and Radev 2004): the sentences' ROUGE tokens weighted by count x idf,
 * an edge between two sentences (a sentence and itself included) whose cosine exceeds `threshold`, and
 * the stationary distribution of a random walk on that graph that follows a uniformly chosen edge with
 * probability `damping` and jumps to a uniformly chosen sentence otherwise (a sentence without edges
 * jumps uniformly); power iteration from the uniform distribution until the L1 change is below 1e-8
 * (at most 1000 rounds). scores[0..n) sum to 1. The paper's setting: threshold 0.1, damping 0.85. */
lc_status lc_lexrank_scores(const char *const *sent, int n, const lc_idf *idf, double threshold, double damping,
                            double *scores);

/* The word-frequency score of each of a document's n sentences into scores[0..n): the mean, over the sentence's
 * ROUGE tokens outside a short stop list of function words, of the token's count in the document divided by
 * the count of the document's most frequent such token (0 for a sentence without such tokens); the classic
 * frequency summarizer (Luhn 1958; Nenkova and Vanderwende's SumBasic), as bench/summ_surface_baseline.py
 * --frequency. */
lc_status lc_frequency_scores(const char *const *sent, int n, double *scores);

/* Features of each sentence of a document that extractive systems use (longctx's HIBERT head reads the first
 * cfg.head_features of them; experiments/hibert-features/README.md), `features` (1..LC_SUMMARY_FEATURES) a
 * sentence: out[features i + 0..] = 1 / (1 + i) (position), ln(1 + its ROUGE tokens) / 4 (length), n x its
 * LexRank score (centrality: threshold 0.1, damping 0.85, idf over the document's own sentences, so that no
 * collection is needed; 1 is the mean), its lc_frequency_scores score over the document's mean score (word
 * frequency; 1 is the mean, 0 for every sentence when no sentence has a counted token). */
#define LC_SUMMARY_FEATURES 4
lc_status lc_summary_features(const char *const *sent, int n, int features, float *out);

typedef struct {
    double precision, recall, f1; /* fractions in [0, 1] */
} lc_rouge_prf;

typedef struct {
    lc_rouge_prf r1, r2, rl; /* ROUGE-1, ROUGE-2, ROUGE-L */
} lc_rouge;

/* ROUGE of a candidate summary against a reference. Tokens are the runs of [a-z0-9] after A-Z is mapped
 * to a-z (every other byte, non-ASCII included, separates tokens; no stemming, no stop words). ROUGE-N:
 * overlap = sum over n-grams of min(count in candidate, count in reference), precision = overlap /
 * candidate n-grams, recall = overlap / reference n-grams. ROUGE-L: the same with the length of the
 * longest common subsequence of the two whole token sequences (no sentence-level union LCS).
 * F1 = 2 overlap / (candidate + reference) = 2PR / (P + R), 0 when the overlap is 0. ROUGE-L takes
 * time (candidate tokens) x (reference tokens). Corpus scores average the per-document F1. */
lc_status lc_rouge_score(const char *candidate, const char *reference, lc_rouge *out);

/* ROUGE with stemming, as ROUGE-1.5.5's -m and Google's rouge-score (use_stemmer=True): the tokens above,
 * each of more than 3 characters replaced by its Porter stem (lc_porter_stem), then lc_rouge_score. */
lc_status lc_rouge_score_stem(const char *candidate, const char *reference, lc_rouge *out);

/* The Porter stem of word[0..len) (lower-case ASCII letters and digits) into out (at least len bytes; may
 * be word itself), its length returned (at most len). Porter (1980) as NLTK's PorterStemmer in its default
 * mode (NLTK_EXTENSIONS: irregular forms, words of 1 or 2 letters kept, and its rule changes; docs/results/summarization-protocol.md). */
int lc_porter_stem(const char *word, int len, char *out);

#ifdef __cplusplus
}
#endif
#endif
