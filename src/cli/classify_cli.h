/* What the classification commands share (cmd_classify.c: train --task classify; classify_run.c: eval --task
 * classify; cmd_predict.c); the batches and the training run are the library's (models/classify/classify_texts.c,
 * models/classify/classify_fit.c). */
#ifndef LC_CLI_CLASSIFY_CLI_H
#define LC_CLI_CLASSIFY_CLI_H

#include "cli/cli.h"

/* Inputs of predict: text i is text[i][0 .. len[i]). */
typedef struct {
    long n;
    const uint8_t *const *text;
    const size_t *len;
} lc_cli_texts;

/* LC_ERR_FORMAT naming ckpt when m is a masked-token pre-training (objective mlm), whose head is untrained:
 * eval and predict refuse it. */
lc_status lc_cli_check_trained_head(const lc_classifier *m, const char *ckpt);

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
