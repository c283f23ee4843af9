/* One training loop for every model family (the language model, the classifier, HIBERT, seq2seq, and the
 * next one): the schedule, gradient accumulation, the sum of the gradients of the processes training
 * together (data parallelism, train/dist.h), non-finite detection, clipping and AdamW, the validation
 * cadence with the best checkpoint kept, periodic and final saves, stopping on request, and one report per
 * step for the progress line and the --log file.
 *
 * A family provides the few things only it knows (lc_fit_family): the forward and backward of one batch of
 * its data, a validation pass with its metrics, and how its state is saved. The loop owns the rest, so
 * every family gets the same cadence, the same resume rule and the same data parallelism. */
#ifndef LC_TRAIN_FIT_H
#define LC_TRAIN_FIT_H

#include <stddef.h>

#include "longctx.h"
#include "nn/tensors.h"

#define LC_FIT_MAX_METRICS 6

/* A validation pass's results: named numbers for the log ("valid_accuracy", "valid_rouge1", ...), the
 * score that selects the best checkpoint (higher is better; NaN: the family keeps no best), and what the
 * progress line shows (lc_progress's valid_bpc and valid_accuracy; NaN: nothing). */
typedef struct lc_fit_metrics {
    int n;
    struct {
        const char *key; /* a JSON key: a static string */
        double value;
    } m[LC_FIT_MAX_METRICS];
    double score;
    double bpc, accuracy;
} lc_fit_metrics;

/* Adds key = value to mx (ignored past LC_FIT_MAX_METRICS). */
void lc_fit_metrics_add(lc_fit_metrics *mx, const char *key, double value);

/* The run's record handed to save: where the loop stands. */
typedef struct {
    long step;         /* optimizer steps done */
    long best_step;    /* the step of the best validation score so far (0: none yet) */
    double best_score; /* NaN before the first validation */
    int best;          /* 1: this save is of the best state (to best_path) */
} lc_fit_record;

/* What the loop needs of a family's run. `run` is the family's own state (the model, its data, its
 * batch buffers). */
typedef struct lc_fit_family {
    /* The forward pass of this process's share of batch number `batch` (step * grad_accum + part; the
     * share: the family's split of one batch of `ranks` processes, so that R processes of batch B read what
     * one process of batch R*B reads), with dropout on: *loss_sum is the summed loss, *count the scored
     * units it is averaged over, *units what the batch read (tokens, bytes) for the throughput. */
    lc_status (*forward)(void *run, long batch, int rank, int ranks, double *loss_sum, long *count, long *units);
    /* Backward of the last forward's loss_sum times scale; gradients accumulate. */
    lc_status (*backward)(void *run, float scale);
    /* A validation pass after `step` steps (NULL: the family has none). */
    lc_status (*validate)(void *run, long step, lc_fit_metrics *out);
    /* Saves the run's whole state (weights, optimizer, step, record) to path, atomically (NULL: none).
     * Called on every process; the family writes on process 0 only. */
    lc_status (*save)(void *run, const char *path, const lc_fit_record *rec);
} lc_fit_family;

/* The parameters the loop updates, laid out by a tensor list (nn/tensors.h); *step counts the
 * optimizer steps done and is advanced by the loop. */
typedef struct lc_fit_params {
    const lc_tensor_list *tensors;
    const lc_table *ptab;
    float *params, *grads, *adam_m, *adam_v;
    long *step;
} lc_fit_params;

/* One step's report (progress line, --log). `extra` holds the step's JSON members beyond lc_progress's
 * ("" or members each starting with a comma: the validation metrics and "valid_seconds"). */
typedef void (*lc_fit_report_fn)(const lc_progress *p, const lc_fit_metrics *valid, const char *extra, void *user);

typedef struct {
    const lc_train_options *o; /* schedule, batch, accumulation, optimizer, eval_every, stop_after */
    long save_every;           /* also save to last_path every N steps (0: no) */
    float save_every_min;      /* and every M minutes (0: no) */
    const char *best_path;     /* where a new best validation score saves the state (NULL: none) */
    const char *last_path;     /* periodic saves, a stop and the end (NULL: none) */
    lc_fit_record record;      /* the best so far of a resumed run ({0, 0, NaN} for a new one) */
    int caller_validates_end;  /* 1: no validation at the run's last step (the caller scores the whole split
                                  then: the language model); 0: also after the schedule's last step */
    int (*should_stop)(void *user); /* polled after each step: non-zero stops the run (a signal) */
    lc_fit_report_fn report;        /* after each step (may be NULL) */
    void *user;
} lc_fit_options;

/* What the run did. */
typedef struct lc_fit_result {
    long first_step, steps_done;
    lc_fit_record record;   /* the best so far */
    double seconds;         /* wall time of the run */
    double valid_seconds;   /* of which validation passes */
    double comm_seconds;    /* of which summing gradients over the processes */
    double units;           /* units read by every process together */
    int stopped;            /* 1: should_stop ended the run early */
} lc_fit_result;

/* LC_ERR_NUMERIC ("training diverged at step N: loss is nan ...") when the loss or the gradient norm of
 * `step` (0-based) is not finite, else LC_OK. */
lc_status lc_fit_check_finite(long step, double loss, double norm);
/* Every process must start from the same parameters (the same seed, or the same checkpoint file):
 * collective; LC_ERR_ARG when they differ. */
lc_status lc_fit_check_same_parameters(const float *params, size_t n, long step);

/* Trains from *p->step to o->steps (or o->stop_after steps from there). Every process of lc_dist calls
 * it with the same options. Validation runs every o->eval_every steps and after the last step of the
 * schedule (see caller_validates_end); a higher score than the best so far saves to best_path. The state is saved to last_path when
 * due, when the run stops early, and at its end. A non-finite loss or gradient norm stops the run
 * before the update (LC_ERR_NUMERIC, the parameters as they were). */
lc_status lc_fit(const lc_fit_family *family, void *run, const lc_fit_params *p, const lc_fit_options *fo,
                 lc_fit_result *out);

#endif
