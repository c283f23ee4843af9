/* Model-shape flags shared by the train and bench commands. */
#ifndef LC_CLI_MODEL_FLAGS_H
#define LC_CLI_MODEL_FLAGS_H

#include "cli/cli.h"
#include "nn/lm_fields.h"

/* The flags are generated from the language model's field table (nn/lm_fields.h): --preset, then one
 * flag per row that has one, each stored in the member named as the row's field (a choice or text: the
 * string given; a flag: 1 when given). At most this many: */
#define LC_MODEL_FLAG_COUNT (1 + LC_LM_FIELD_COUNT)

#define LC_MF_TYPE_INT int
#define LC_MF_TYPE_FLOAT float
#define LC_MF_TYPE_BOOL int
#define LC_MF_TYPE_BOOL_OFF int
#define LC_MF_TYPE_CHOICE const char *
#define LC_MF_TYPE_TEXT const char *
#define LC_MF_MEMBER(field, kind, ...) LC_MF_TYPE_##kind field;
typedef struct {
    const char *preset;
    LC_LM_FIELDS(LC_MF_MEMBER)
} lc_model_flags;

void lc_model_flags_init(lc_model_flags *f);
/* Appends the flags to opts[n..] (room for LC_MODEL_FLAG_COUNT); returns the new count. */
int lc_model_flags_add(lc_model_flags *f, lc_opt *opts, int n);
/* Builds cfg from the preset and the flags given; -1 on success, else an exit code (error printed). */
int lc_model_flags_apply(const lc_model_flags *f, lc_opt *opts, int n, const char *cmd, lc_config *cfg);
/* The value of a --precision flag (NULL: not given): -1 with *p set (unchanged for NULL), else an exit code
 * (error printed, naming cmd). */
int lc_precision_flag(const char *cmd, const char *value, lc_precision *p);
/* --precision (not a shape flag: a resumed or loaded model takes it too): -1 with *p set (unchanged when the
 * flag was not given), else an exit code (error printed). */
int lc_model_flags_precision(const lc_model_flags *f, const char *cmd, lc_precision *p);
/* eval and sample: a loaded model takes --precision VALUE (NULL: keeps the checkpoint's); -1 on success, else
 * an exit code (error printed). */
int lc_apply_precision_flag(lc_model *m, const char *cmd, const char *value);
/* "" at fp32; at bf16 ", bf16 products" and how they run (the vector kernel, the portable emulation, or
 * fp32 where the CPU has no AVX512_BF16), for the lines that describe a run. */
const char *lc_precision_note(lc_precision p);
/* 1 when any model-shape flag was given (its name in *which); --precision is not one. */
int lc_model_flags_any(lc_opt *opts, int n, const char **which);

#endif
