/* HIBERT's training run, a family of the one training loop (train/fit.h): masked-sentence pre-training (with
 * sentence intruders, longctx's) or fine-tuning on sentence labels, over document sets (models/hibert/hibert_data.h).
 * Batch k is the window k of epochs of the training chunks, each epoch shuffled from the seed; processes
 * training together (train/dist.h) each take their share of it, so R processes of batch B train as one of
 * batch R*B. Validation (pre-training: bits per byte on held-out chunks; fine-tuning: ROUGE, keeping the best
 * checkpoint) runs on process 0 and its numbers are shared; process 0 saves the model with its run record. */
#ifndef LC_MODELS_HIBERT_FIT_H
#define LC_MODELS_HIBERT_FIT_H

#include "train/fit.h"
#include "models/hibert/hibert_data.h"

/* The validation metrics, in order: pre-training valid_bpb (also lc_fit_metrics.bpc) and, with intruders,
 * valid_intruder_bce; fine-tuning valid_rouge1, valid_rouge2, valid_rougeL (F1 in percent) and the same
 * stemmed (valid_rouge1_stem, ...), the score their mean of the first three. */
typedef struct {
    lc_hibert *m;
    lc_hibert_run *run;            /* the record saved with the model: stage, opts (the schedule, the batch of
                                      one process, the seed), intruders; the run sets opts.ranks and the best */
    const lc_hdocs *train, *valid; /* valid may hold no chunk (no validation) */
    int eval_docs;                 /* pre-training: held-out chunks a validation reads (0: all) */
    const char *best_path;         /* fine-tuning: where a new best validation score saves (NULL: none) */
    const char *last_path;         /* periodic saves, a stop and the end (NULL: none) */
    long save_every;               /* also save every N steps (0: no) */
    float save_every_min;          /* and every M minutes (0: no) */
    int (*should_stop)(void *user); /* polled after each step (may be NULL) */
    /* After each step: its report, its validation (NULL: none) and, pre-training with intruders, the
     * intruders' mean BCE of the step (NaN otherwise). */
    void (*report)(const lc_progress *p, const lc_fit_metrics *valid, double intruder_bce, void *user);
    /* A periodic save failed (lc_last_error says why); the run goes on (NULL: it stops with the error). */
    void (*save_failed)(long step, void *user);
    void *user;
} lc_hibert_fit_options;

/* Trains o->m from its step to o->run->opts.steps. The state is saved to last_path when due, when the run
 * stops and at its end (also when no step was left); the best and the ranks are recorded in o->run. A
 * non-finite loss or gradient stops the run before its update (LC_ERR_NUMERIC). Collective over lc_dist. */
lc_status lc_hibert_fit(const lc_hibert_fit_options *o, lc_fit_result *out);

/* The hibert row of the family table (longctx/family.h, models/families.c): fine-tuning on document sources
 * (paths one a line, as `hibert finetune --data`: a BBC News root, whose references label the sentences).
 * run_open reads their training part (the held-out part validates: a validation file is LC_ERR_ARG) and sets
 * up the run lc_hibert_fit sets up, with the record lc_hibert_row_run_prepare makes; evaluate gives the ROUGE
 * of the held-out part of the sources at path (rouge1, rouge2, rougeL and their _stem); save writes the model
 * with a new run record (a loaded model's record is not kept). */
lc_status lc_hibert_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                 void **run, const lc_fit_family **hooks, lc_fit_params *p);
void lc_hibert_row_run_close(void *run);
lc_status lc_hibert_row_evaluate(void *model, const char *path, lc_fit_metrics *out);
lc_status lc_hibert_row_save(void *model, const char *path);
/* A fine-tuning run's record of o on sources for m (the labels contained, UTF-8), its documents read into
 * train and valid (lc_hdocs_load_sources) and the limits of their batches recorded. */
lc_status lc_hibert_row_run_prepare(lc_hibert_run *run, const lc_train_options *o, const char *sources,
                                    const lc_hibert *m, lc_hdocs *train, lc_hdocs *valid);

#endif
