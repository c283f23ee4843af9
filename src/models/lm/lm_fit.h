/* The language model on the one training loop (lm_fit.c): what lc_train_file and the family table's "lm" row
 * (longctx/family.h, models/families.c) share beyond lc_train. */
#ifndef LC_MODELS_LM_FIT_H
#define LC_MODELS_LM_FIT_H

#include "longctx.h"

struct lc_fit_family;
struct lc_fit_params;
struct lc_fit_metrics;

/* Readies m for training on c read from path: checks the data against o->batch (lc_train_check_data), then,
 * when o->batch exceeds the planned batch or the planned segment is not seq_len, re-plans the model
 * (lc_model_resize, which resets the XL memory); records the data in o->data. */
lc_status lc_train_plan_data(lc_model *m, const char *path, const lc_corpus *c, lc_train_options *o);

/* The lm row on byte files: run_open reads train (valid NULL: its own split validates, as `longctx train
 * --data`; else train whole and valid whole) and sets up the run lc_train sets up, saving the model with o
 * (its data recorded) as lc_checkpoint_save; evaluate gives bpc (and a masked-token model's accuracy) on the
 * whole file at path; save writes the model with default options (a loaded model's options are not kept). */
lc_status lc_lm_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                             void **run, const struct lc_fit_family **hooks, struct lc_fit_params *p);
void lc_lm_row_run_close(void *run);
lc_status lc_lm_row_evaluate(void *model, const char *path, struct lc_fit_metrics *out);
lc_status lc_lm_row_save(void *model, const char *path);

#endif
