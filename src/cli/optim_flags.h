/* The optimizer's flags that the training commands share (train, train --task classify). */
#ifndef LC_CLI_OPTIM_FLAGS_H
#define LC_CLI_OPTIM_FLAGS_H

#include "cli/cli.h"

#define LC_OPTIM_FLAG_COUNT 6

/* Appends --lr --min-lr --warmup --weight-decay --clip (into o) and --lr-scale to opts[n..], each help
 * line naming the default o holds now (set the command's defaults first); returns n + LC_OPTIM_FLAG_COUNT. */
int lc_optim_flags_add(lc_train_options *o, lc_opt *opts, int n);
/* After parsing: checks --lr-scale and copies it into o (left as it is when the flag was not given).
 * Returns -1 to go on, or LC_EXIT_USAGE after one error line "CMD: --lr-scale: ...". */
int lc_optim_flags_apply(const char *cmd, lc_train_options *o);

#endif
