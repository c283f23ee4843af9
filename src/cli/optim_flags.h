/* The optimizer's flags that the training commands share (train, train --task classify|seq2seq), and the
 * run flags of the family commands. */
#ifndef LC_CLI_OPTIM_FLAGS_H
#define LC_CLI_OPTIM_FLAGS_H

#include "cli/cli.h"
#include "cli/field_flags.h"
#include "cli/model_flags.h"

#define LC_OPTIM_FLAG_COUNT 6

/* Appends --lr --min-lr --warmup --weight-decay --clip (into o) and --lr-scale to opts[n..], each help
 * line naming the default o holds now (set the command's defaults first); returns n + LC_OPTIM_FLAG_COUNT. */
int lc_optim_flags_add(lc_train_options *o, lc_opt *opts, int n);
/* After parsing: checks --lr-scale and copies it into o (left as it is when the flag was not given).
 * Returns -1 to go on, or LC_EXIT_USAGE after one error line "CMD: --lr-scale: ...". */
int lc_optim_flags_apply(const char *cmd, lc_train_options *o);

/* The rows of a training run's flags that the family commands share (train --task classify|seq2seq), for a
 * command's table: `a` a struct with the fields resume, log (const char *), save_every (long),
 * save_every_min (float), threads, json (int); `o` its lc_train_options. Each command adds its own --out
 * and --batch (what "best" and a batch are differs). */
#define LC_RUN_FLAGS(a, o)                                                                                          \
    {"--resume", OPT_STR, &(a).resume, 0, 0, "continue the run of this checkpoint (an OUT.last) with the same --data", 0}, \
    {"--steps", OPT_LONG, &(o)->steps, 1, 1e12, "optimizer steps of the schedule (default 1000)", 0},               \
    {"--stop-after", OPT_LONG, &(o)->stop_after, 0, 1e12, "stop this run after N steps (resume later)", 0},           \
    {"--eval-every", OPT_LONG, &(o)->eval_every, 0, 1e12, "steps between validation passes (default 200; 0: end only)", 0}, \
    {"--save-every", OPT_LONG, &(a).save_every, 0, 1e12, "also save OUT.last every N steps (0: at the end only)", 0},  \
    {"--save-every-min", OPT_FLOAT, &(a).save_every_min, 0, 1e7, "also save OUT.last every N minutes (0: off)", 0},  \
    {"--seed", OPT_U64, &(o)->seed, 0, 0, "random seed: initialisation, order, dropout (default 1337)", 0},          \
    {"--threads", OPT_INT, &(a).threads, 0, 1024, "threads (0: all cores)", 0},                                      \
    {"--json", OPT_FLAG, &(a).json, 0, 0, "print a JSON summary as the last stdout line", 0},                        \
    {"--log", OPT_STR, &(a).log, 0, 0, "write one JSON line per step to this file (appended to with --resume)", 0}

/* The family commands' schedule: 1000 steps of batch 16 at a peak rate of 1e-3 after 100 warm-up steps,
 * validation every 200 steps (the rest lc_train_options_default's). */
void lc_run_flags_default(lc_train_options *o);
/* The data rows of a family command's table: --task, --data, --valid (help lines data_help, valid_help) and
 * --max-examples (`unit`: what a file holds, "pairs"), into `a`'s members task, data, valid (const char *) and
 * max_examples (long). */
#define LC_DATA_FLAGS(a, task_, data_help, valid_help, unit)                                                      \
    {"--task", OPT_STR, &(a).task, 0, 0, task_ " (this command)", 0},                                             \
    {"--data", OPT_STR, &(a).data, 0, 0, data_help, 0}, {"--valid", OPT_STR, &(a).valid, 0, 0, valid_help, 0},    \
    {"--max-examples", OPT_LONG, &(a).max_examples, 1, 1e12, "the most " unit " read from one TSV file (default 4194304)", 0}

/* A family command's table in opts (room for 96): its own rows base[0..n_base), the optimizer's flags (into o),
 * `extra` (NULL: none), a flag per row of the model's field table (rows, into ff: cli/field_flags.h), then the
 * language model's shape flags it has none of, refused with `why`; returns the count. */
int lc_run_flags_table(lc_opt *opts, const lc_opt *base, int n_base, lc_train_options *o, const lc_opt *extra,
                       lc_field_flags *ff, const lc_cli_field *rows, int n_rows, const char *why);
/* Parses argv against the table, then requires --data (*data after parsing; `what`: the file it names) and
 * applies --lr-scale: -1 to go on, or the exit code after one error line "CMD: ...". */
int lc_run_flags_parse(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv,
                       const char *const *data, const char *what, lc_train_options *o);
/* The files of the run: --valid and --out given (`what`: the file --valid names), OUT.last (written into
 * last[cap]) not too long, no output (--out, OUT.last, --log) naming an input (--data, --valid, --init: NULL
 * when the command has none), and OUT and OUT.last writable where process 0 writes them. -1 to go on, or
 * the exit code after one error line. */
int lc_run_flags_check_files(const char *cmd, const char *what, const char *data, const char *valid,
                             const char *init, const char *out, const char *log, char *last, size_t cap);

#endif
