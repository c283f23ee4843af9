/* A model's tensor list (nn/tensors.h) in a safetensors checkpoint, for every model kind (the
 * language model's models/lm/checkpoint_lm.c, HIBERT's models/hibert/checkpoint_hibert.c, the classifier's
 * models/classify/checkpoint_classify.c): parameters under their names, AdamW moments as optim.m.<name> / optim.v.<name>, kind state; the check of a file's whole
 * tensor table against the list before any model memory is allocated; and reading the values back. */
#ifndef LC_TRAIN_CHECKPOINT_TENSORS_H
#define LC_TRAIN_CHECKPOINT_TENSORS_H

#include "nn/tensors.h"
#include "train/safetensors.h"

#define LC_CKPT_NAME_CAP (LC_NAME_MAX + 16) /* a tensor name with an "optim.m." or "state.memory." prefix */

/* Where a model keeps what its list describes (laid out by ptab for parameters, stab for kind state). */
typedef struct {
    const lc_tensor_list *list;
    const lc_table *ptab, *stab;
    float *params, *adam_m, *adam_v, *state;
} lc_ckpt_tensors;
/* Those of a model whose members have these names (the classifier's, HIBERT's, seq2seq's), for its list `l`. */
#define LC_CKPT_TENSORS_OF(m, l) {(l), &(m)->ptab, &(m)->stab, (m)->params, (m)->adam_m, (m)->adam_v, (m)->state}

/* Parameters, then their first moments, then their second moments, in list order, into t[0 ..) (names
 * holds the moments' names: room for 2 x parameters); returns the count. */
int lc_ckpt_list_params(const lc_ckpt_tensors *c, lc_st_tensor *t, char (*names)[LC_CKPT_NAME_CAP]);
/* The kinds' state tensors in list order into t[0 ..); returns the count. */
int lc_ckpt_list_state(const lc_ckpt_tensors *c, lc_st_tensor *t);
/* Every tensor of the list must be in the file, F32, of exactly its shape (moments too when present),
 * and the file may hold nothing else but `extra` tensors that is_extra (may be NULL when extra is 0)
 * accepts; LC_ERR_FORMAT naming the file and the tensor otherwise. */
lc_status lc_ckpt_check_table(const lc_st_file *f, const lc_tensor_list *list, int extra,
                              int (*is_extra)(const char *name, const void *user), const void *user);
/* The tensor list a file's metadata implies (built by the caller, `built` the builder's status: its failure
 * becomes LC_ERR_FORMAT "bad model config" naming the file) against the file's table as lc_ckpt_check_table
 * does; frees the list. Every family calls this before it allocates the model, so that nothing is allocated
 * that the file's bytes do not back. */
lc_status lc_ckpt_check_implied(const lc_st_file *f, lc_status built, lc_tensor_list *list, int extra,
                                int (*is_extra)(const char *name, const void *user), const void *user);
/* Copy the checked tensors into the model (moments when `moments` and present); non-finite values and
 * negative second moments are damage (LC_ERR_FORMAT naming the tensor). */
lc_status lc_ckpt_read_tensors(const lc_st_file *f, const lc_ckpt_tensors *c, int moments);

#endif
