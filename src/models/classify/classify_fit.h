/* The sequence classifier's training run (train --task classify, docs/guides/classify.md) as a family of the one
 * training loop (train/fit.h): each epoch's examples shuffled from the seed and sorted by length in chunks
 * of 64 batches, batches tokenized and packed, either objective (the labels, or masked tokens of the same
 * texts), validation accuracy with the best checkpoint kept, the last state saved to its own path, and data
 * parallelism over the processes of lc_dist (R processes of batch B read what one process of batch R*B
 * reads). */
#ifndef LC_MODELS_CLASSIFY_FIT_H
#define LC_MODELS_CLASSIFY_FIT_H

#include "longctx.h"
#include "longctx/flat.h"
#include "train/checkpoint_meta.h"
#include "train/fit.h"

/* What the run reads. */
typedef struct {
    const lc_labelled_data *train, *valid;
    const int *valid_labels;     /* valid's labels as indexes into the model's label set (-1: one it lacks) */
    const lc_label_set *labels;  /* the model's label set, saved with every checkpoint */
    const lc_word_vocab *vocab;  /* a words model's vocabulary (NULL for bytes) */
} lc_classify_data;

/* Where the run stands at a report. */
typedef struct {
    double valid_accuracy; /* of this step's validation (NaN: none at this step) */
    double best_accuracy;  /* the best so far (-1: none yet) */
    long best_step;        /* its step (0: none) */
} lc_classify_progress;

typedef struct {
    const lc_train_options *o; /* schedule, batch (per process), optimizer, eval_every, stop_after, seed */
    lc_classify_run run;       /* the record of every save: opts, train_examples, and the best of a resumed run */
    const char *best_path;     /* a new best validation accuracy saves here */
    const char *last_path;     /* the last state: periodic saves, a stop and the end */
    long save_every;           /* also save last_path every N steps (0: no) */
    float save_every_min;      /* and every M minutes (0: no) */
    /* Polled after each step (may be NULL): non-zero (a signal number) stops the run; the largest value over
     * the processes is shared, so that every process stops at the same step. */
    int (*should_stop)(void *user);
    /* After each step, on every process (may be NULL); extra: the step's validation members for a JSON log
     * line ("" without a validation). */
    void (*report)(const lc_progress *p, const lc_classify_progress *c, const char *extra, void *user);
    void *user;
} lc_classify_fit_options;

typedef struct {
    lc_fit_result fit;
    double best_accuracy; /* -1: none */
    long best_step;
    int stop_signal;      /* what should_stop returned when it stopped the run (0: it did not) */
} lc_classify_fit_result;

/* Trains m (created for batches of o->batch examples) from its step to o->steps (or o->stop_after steps).
 * Collective over the processes of lc_dist, which must all call it with the same model, data and options.
 * LC_ERR_ARG when the processes cannot share the batch (fewer training examples than processes x batch). */
lc_status lc_classify_fit(lc_classifier *m, const lc_classify_data *d, const lc_classify_fit_options *fo,
                          lc_classify_fit_result *out);

/* The classify row of the family table (longctx/family.h, models/families.c) on labelled TSV files (the model
 * an lc_text_classifier, its tokens and vocabulary its own): run_open reads train (and valid, may be NULL),
 * takes the training labels as the model's classes (one it lacks is LC_ERR_ARG, but for a masked-token model)
 * and sets up the run lc_classify_fit sets up (o->batch within the model's planned batch: 16 for a model loaded
 * through the table), with a new run record of o; evaluate gives accuracy and
 * examples as eval --task classify counts them; save writes the model with a new run record. */
lc_status lc_classify_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                   void **run, const lc_fit_family **hooks, lc_fit_params *p);
void lc_classify_row_run_close(void *run);
lc_status lc_classify_row_evaluate(void *model, const char *path, lc_fit_metrics *out);
lc_status lc_classify_row_save(void *model, const char *path);
/* models/classify/flat_classify.c: a text classifier's label set and vocabulary (NULL for bytes). */
const lc_label_set *lc_text_classifier_labels(const lc_text_classifier *c);
const lc_word_vocab *lc_text_classifier_words(const lc_text_classifier *c);

/* models/classify/checkpoint_classify.c: the metadata a checkpoint of m with the record run would hold (the settings
 * processes training together must share). */
lc_status lc_classify_meta_strings(const lc_classifier *m, const lc_classify_run *run, lc_ckpt_meta_strings *out);

#endif
