/* The optimisation step over a model's tensor list (nn/tensors.h), shared by every family and by the one
 * training loop (train/fit.h): clipping, the schedule, per-tensor factors and AdamW (train/optimizer.c;
 * the schedule and the factors themselves are public: longctx/train.h). */
#ifndef LC_TRAIN_OPTIMIZER_H
#define LC_TRAIN_OPTIMIZER_H

#include "longctx.h"
#include "nn/tensors.h"

/* One optimisation step (train/optimizer.c): the mean loss sum / n and the gradient norm must be finite
 * (LC_ERR_NUMERIC, nothing changed, otherwise), clipping by the global norm (o->clip), AdamW on every
 * parameter at lc_learning_rate(o, *step) with weight decay where the list says; *step advances and
 * *loss (may be NULL) gets the mean. */
lc_status lc_tensors_update(const lc_tensor_list *l, const lc_tensor_buffers *b, const lc_train_options *o,
                            long *step, double sum, long n, double *loss);
/* One optimisation step of a family's model (the classifier's, seq2seq's): the options checked, the gradients
 * zeroed, pass(model, batch, &sum, &n) (a forward with dropout and the backward of the mean loss, sum over the
 * n units it returns), then lc_tensors_update. */
typedef lc_status (*lc_step_pass)(void *model, const void *batch, double *sum, long *n);
lc_status lc_tensors_step(const lc_tensor_list *l, const lc_tensor_buffers *b, const lc_train_options *o, long *step,
                          lc_step_pass pass, void *model, const void *batch, double *loss);
/* The update itself, shared with the LM trainer: gradients scaled by o->clip / norm when norm (their
 * global norm) exceeds o->clip, then AdamW step `step` (0-based) on every parameter tensor of the list at
 * lc_learning_rate(o, step) times its lc_lr_scale_factor, weight decay where the list says; buffers are
 * params, grads, adam_m, adam_v laid out by ptab. */
void lc_tensors_adamw(const lc_tensor_list *l, const lc_table *ptab, float *const buffers[4],
                      const lc_train_options *o, long step, double norm);

#endif
