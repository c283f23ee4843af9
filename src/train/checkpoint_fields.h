/* The checkpoint of a family whose configuration is one field table (longctx/fields.h): its tensors (the
 * tensor list of train/checkpoint_tensors.h), the metadata "format", "format_version", "model", one key per
 * field row, "step" and the training options (train.*). What a new family gets without a key table of its
 * own: its rows are its checkpoint's keys. */
#ifndef LC_TRAIN_CHECKPOINT_FIELDS_H
#define LC_TRAIN_CHECKPOINT_FIELDS_H

#include "longctx/fields.h"
#include "train/checkpoint_tensors.h"

typedef struct {
    const char *model;     /* the metadata "model": "tiny" */
    const char *what;      /* the family in words, for messages: "a tiny model" */
    const lc_field *fields;
    int n_fields;
} lc_ckpt_fields;

/* Writes path atomically (lc_ckpt_save_items): the tensors of c and the metadata of cfg (a struct of the
 * table), step and the training options o. */
lc_status lc_ckpt_fields_save(const char *path, const lc_ckpt_tensors *c, const lc_ckpt_fields *fam, const void *cfg,
                              long step, const lc_train_options *o);
/* Reads the metadata of an open checkpoint into cfg, *step and *o (any may hold anything before): the
 * format, the model (another family's file is LC_ERR_FORMAT naming the file and both families), every
 * field row within its checkpoint range (absent optional rows keep cfg's values), the step and the
 * training options. LC_ERR_FORMAT naming the file and the key otherwise. */
lc_status lc_ckpt_fields_read(const lc_st_file *f, const lc_ckpt_fields *fam, void *cfg, long *step,
                              lc_train_options *o);

#endif
