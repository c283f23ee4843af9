/* What the classification commands share (cmd_classify.c: train --task classify; classify_run.c: eval --task
 * classify; cmd_predict.c): tokenizing texts in batches, packed by length, and running a classifier over them. */
#ifndef LC_CLI_CLASSIFY_CLI_H
#define LC_CLI_CLASSIFY_CLI_H

#include "cli/cli.h"

/* Examples to classify: text i is text[i][0 .. len[i]). */
typedef struct {
    long n;
    const uint8_t *const *text;
    const size_t *len;
} lc_cli_texts;

static inline lc_cli_texts lc_cli_texts_of(const lc_labelled_data *d) {
    return (lc_cli_texts){d->n, d->text, d->text_len};
}

/* Indexes idx[0 .. n) (NULL: 0 .. n-1) into keys[n], ordered by len[index] (stable: ties by index). */
void lc_cli_sort_by_length(long *keys, const long *idx, long n, const size_t *len);

/* Tokenizes texts idx[0 .. n) into buf (n rows of max_len ids; len[n], ptr[n] filled) and runs them as one
 * batch: with train, one optimizer step with options o (labels[idx[i]] the targets, mean loss in *loss);
 * otherwise a forward pass whose logits lc_classifier_logits gives. */
lc_status lc_cli_classify_batch(lc_classifier *m, const lc_word_vocab *v, const lc_cli_texts *t, const long *idx, int n,
                                int *buf, int *len, const int **ptr, const int *labels, int train,
                                const lc_train_options *o, double *loss);

/* LC_ERR_FORMAT naming ckpt when m is a masked-token pre-training (objective mlm), whose head is untrained:
 * eval and predict refuse it. */
lc_status lc_cli_check_trained_head(const lc_classifier *m, const char *ckpt);

/* The predicted class of every text into pred[n] (batches of up to `batch` examples, in order of length),
 * and, with labels (-1: a label the model lacks, counted wrong), the number of correct predictions; with
 * probs (n x n_classes), each text's class probabilities (the softmax of its logits). */
lc_status lc_cli_classify(lc_classifier *m, const lc_word_vocab *v, const lc_cli_texts *t, int batch, int *pred,
                          const int *labels, long *correct, double *probs);

/* cmd_predict.c, cmd_classify.c, classify_run.c */
int lc_cmd_predict(int argc, char **argv);
int lc_cmd_train_classify(int argc, char **argv);
int lc_cmd_eval_classify(int argc, char **argv);
/* cmd_seq2seq.c: train and eval --task seq2seq; predict with a seq2seq checkpoint: the greedy output of
 * every text, one per line, in order (batches of up to `batch`). */
int lc_cmd_train_seq2seq(int argc, char **argv);
int lc_cmd_eval_seq2seq(int argc, char **argv);
int lc_cli_predict_seq2seq(const char *ckpt, const lc_cli_texts *t, int batch);
/* 1 when argv has "--task NAME" or "--task=NAME". */
int lc_cli_task_is(int argc, char **argv, const char *name);

#endif
