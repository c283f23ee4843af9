/* The seq2seq model as a family of the one training loop (train/fit.h): batches of source/target pairs
 * (lc_pair_data) in a seeded order per epoch, teacher-forced NLL, validation by greedy decoding
 * (exact_match and char_accuracy), and saves as seq2seq checkpoints (lc_seq2seq_save). Data parallel:
 * R processes of batch B read what one process of batch R*B reads. */
#ifndef LC_MODELS_SEQ2SEQ_FIT_H
#define LC_MODELS_SEQ2SEQ_FIT_H

#include "longctx.h"
#include "train/fit.h"

/* Trains m from its step to fo->o->steps (or stop_after steps) on train, validating on valid (may be NULL:
 * none) every fo->o->eval_every steps and after the last step of the schedule; the score that keeps the
 * best checkpoint (fo->best_path) is exact_match + char_accuracy / (pairs + 1) (exact matches first, then
 * characters). *run: the resumed run's record (best so far) in, the run's record out; fo->record is taken
 * from it. fo's family-independent fields (paths, cadence, report, stop) as lc_fit's. Every process of
 * lc_dist calls it. */
lc_status lc_seq2seq_fit(lc_seq2seq *m, const lc_pair_data *train, const lc_pair_data *valid, lc_seq2seq_run *run,
                         lc_fit_options *fo, lc_fit_result *out);

/* The seq2seq row of the family table (longctx/family.h, models/families.c) on TSV files of Source/Target
 * pairs: run_open reads train (and valid, may be NULL) and sets up the run lc_seq2seq_fit sets up, with a new
 * run record of o; evaluate gives exact_match and char_accuracy (lc_seq2seq_evaluate); save writes the model
 * with a new run record (a loaded model's record is not kept). */
lc_status lc_seq2seq_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                  void **run, const lc_fit_family **hooks, lc_fit_params *p);
void lc_seq2seq_row_run_close(void *run);
lc_status lc_seq2seq_row_evaluate(void *model, const char *path, lc_fit_metrics *out);
lc_status lc_seq2seq_row_save(void *model, const char *path);

#endif
