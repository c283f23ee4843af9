/* HIBERT's document sets (hibert_data.c): directories of .txt files, the BBC layout and TSV files read into
 * sentences cut into model-sized chunks, batches of chunks, sentence scores and the top-k extractive
 * summaries' ROUGE. The training run (models/hibert/hibert_fit.h) and the HIBERT commands read them. */
#ifndef LC_TRAIN_HIBERT_DATA_H
#define LC_TRAIN_HIBERT_DATA_H

#include <stdint.h>

#include "longctx.h"

/* Documents split into sentences; a document of more than max_sents sentences is cut into consecutive
 * chunks of max_sents (the model sees chunks; doc_of maps a chunk back to its document). */
typedef struct {
    int n_docs, n_chunks, n_sents;
    char **name;       /* [n_docs] where each document came from (file, or file:line) */
    char **reference;  /* [n_docs] reference summaries (BBC), else NULL */
    int *doc_first;    /* [n_docs + 1] first sentence of each document */
    int *chunk_first;  /* [n_chunks + 1] first sentence of each chunk */
    int *chunk_doc;    /* [n_chunks] */
    const char **sent; /* [n_sents] */
    int *len;          /* [n_sents] bytes */
    uint8_t *label;    /* [n_sents] fine-tuning labels (NULL otherwise) */
    char **bufs;       /* owned sentence buffers */
    int n_bufs, cap_docs, cap_sents, cap_bufs;
    int max_sents;
    long bytes;        /* sentence bytes in all */
    uint64_t hash;     /* FNV-1a 64 of every sentence followed by a newline */
    int latin1;        /* files read as Latin-1 */
} lc_hdocs;

void lc_hdocs_init(lc_hdocs *d, int max_sents);
void lc_hdocs_free(lc_hdocs *d);
/* Add the documents of PATH: a directory of .txt files (each one document, its whole text), a BBC News
 * root (articles/ and summaries/: its `part`'s article bodies, with their references), or a .tsv/.tsv.gz
 * with a header whose last column is the text (`<br />` tags become spaces). held_out: for a directory or
 * TSV, 0 keeps documents i % 20 != 19, 1 keeps i % 20 == 19 (a deterministic held-out slice); ignored for
 * BBC (part decides). Non-UTF-8 user files are refused unless latin1. */
lc_status lc_hdocs_add(lc_hdocs *d, const char *path, lc_part part, int held_out, int latin1);
/* Add one document's text (sentence rule; an empty text is an error naming `name`). */
lc_status lc_hdocs_add_text(lc_hdocs *d, const char *text, const char *name, const char *reference);
/* The documents of a run: for each source (paths one a line), its training part into train and its held-out
 * part into valid (lc_hdocs_add), both cut into max_sents; fine-tuning (labels >= 0) then labels both by
 * that lc_label_rule. */
lc_status lc_hdocs_load_sources(lc_hdocs *train, lc_hdocs *valid, const char *sources, int max_sents, int latin1,
                                int labels);
/* 1 when PATH is a BBC-style root (has articles/). */
int lc_hdocs_is_bbc(const char *path);
/* Labels of every document against its reference (rule: lc_label_rule). */
lc_status lc_hdocs_label(lc_hdocs *d, int rule);

/* The limits of batches of up to `batch` chunks for cfg: of train (may be NULL; shuffled epochs, so a batch
 * may repeat a chunk) and of held (may be NULL; sequential batches): the largest chunks' sentences and
 * bytes; with pretrain, also the bytes of the worst replacements and the sentence decoder's rows (the
 * masking rule's selected sentences), else no decoder (limits.no_decoder). */
lc_hibert_limits lc_hdocs_limits(const lc_hdocs *train, const lc_hdocs *held, int batch, const lc_hibert_config *cfg,
                                 int pretrain);

/* A batch of chunks idx[0..n) (storage for up to `cap` sentences kept in b_). */
typedef struct {
    lc_hibert_batch b;
    int *n_sents, *len;
    const uint8_t **sent;
    uint8_t *labels;
    int features;      /* set by the caller: the model's cfg.head_features (0 or LC_SUMMARY_FEATURES): each
                          chunk's lc_summary_features into feat, b.features */
    float *feat;
    int cap;
} lc_hbatch;
lc_status lc_hbatch_make(lc_hbatch *h, const lc_hdocs *d, const int *idx, int n);
void lc_hbatch_free(lc_hbatch *h);

/* Scores of every sentence of d (batches of `batch` chunks), into scores[d->n_sents]. */
lc_status lc_hdocs_scores(lc_hibert *m, const lc_hdocs *d, int batch, float *scores);
/* Extractive summaries of d's documents: top k scored sentences in document order, k = the number of
 * sentences contained in the reference; the mean ROUGE-1/2/L F1 in percent in r[0..3), and with stemming
 * (lc_rouge_score_stem) in r[3..6). */
lc_status lc_hdocs_rouge(lc_hibert *m, const lc_hdocs *d, int batch, double r[6]);
/* pick[i] = 1 for the k highest scores of n (ties: the earlier sentence). */
void lc_top_k(const float *scores, int n, int k, uint8_t *pick);

/* Summarizing one text (`longctx summarize`, the binding API's lc_hibert_summarizer): */
/* The text to summarize: with title, all after line 1; with no_title, all of it; else the BBC layout's rule: a
 * first line that is followed by a blank line and does not end a sentence ('.', '!' or '?', a closing quote
 * allowed after it) is a title, not part of the text. A pointer into text. */
const char *lc_summary_body(const char *text, int title, int no_title);
/* Add the body (lc_summary_body) of text as one document named `name`; LC_ERR_FORMAT naming it when the body
 * has fewer than 2 sentences (the sentence rule). */
lc_status lc_hdocs_add_summary_text(lc_hdocs *d, const char *text, const char *name, int title, int no_title);
/* A checkpoint's model for scoring sentences, planned for batches of `batch` chunks of d (NULL: any `batch`
 * chunks the checkpoint takes). A pre-training checkpoint scores with its intruder head
 * (experiments/hibert-intruders/README.md; *intruder_head, may be NULL, set to 1); one pre-trained without
 * intruders has a head that was never trained, and is LC_ERR_ARG naming the file. */
lc_status lc_hdocs_load_scorer(const char *ckpt, const lc_hdocs *d, int batch, lc_hibert **m, int *intruder_head);

#endif
