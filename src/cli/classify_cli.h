/* What the classification commands share (cmd_classify.c: train and eval --task classify; cmd_predict.c):
 * tokenizing texts in batches, packed by length, and running a classifier over them. */
#ifndef LC_CLI_CLASSIFY_CLI_H
#define LC_CLI_CLASSIFY_CLI_H

#include "cli/cli.h"

/* Examples to classify: text i is text[i][0 .. len[i]). */
typedef struct {
    long n;
    const uint8_t *const *text;
    const size_t *len;
} lc_cli_texts;

/* The predicted class of every text into pred[n] (batches of up to `batch` examples, in order of length),
 * and, with labels (-1: a label the model lacks, counted wrong), the number of correct predictions. */
lc_status lc_cli_classify(lc_classifier *m, const lc_word_vocab *v, const lc_cli_texts *t, int batch, int *pred,
                          const int *labels, long *correct);

/* cmd_predict.c, cmd_classify.c */
int lc_cmd_predict(int argc, char **argv);
int lc_cmd_train_classify(int argc, char **argv);
int lc_cmd_eval_classify(int argc, char **argv);
/* 1 when argv has "--task NAME" or "--task=NAME". */
int lc_cli_task_is(int argc, char **argv, const char *name);
/* cmd_train.c's stop-signal machinery: catch SIGINT/SIGTERM (a flag read after each step; a second signal
 * ends at once), and the signal caught (0: none). */
void lc_cli_catch_stop_signals(void);
int lc_cli_stop_signal(void);

#endif
