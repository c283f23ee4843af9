/* The optimizer's flags of the training commands (optim_flags.h): one table, with help lines that name the
 * defaults each command set, so train and train --task classify describe them alike; and the glue of the
 * family commands' tables (train --task classify|seq2seq). */
#include <stdio.h>
#include <string.h>

#include "cli/optim_flags.h"
#include "train/dist.h"

static const char *lr_scale_arg; /* --lr-scale as given (one command runs per process) */

int lc_optim_flags_add(lc_train_options *o, lc_opt *opts, int n) {
    static char help[LC_OPTIM_FLAG_COUNT][96]; /* one command runs per process */
    snprintf(help[0], sizeof help[0], "peak learning rate (default %g)", (double)o->lr);
    snprintf(help[1], sizeof help[1], "final learning rate of the cosine decay (default %g)", (double)o->min_lr);
    snprintf(help[2], sizeof help[2], "linear warm-up steps (default %ld)", o->warmup);
    snprintf(help[3], sizeof help[3], "AdamW decoupled weight decay on matrices (default %g)", (double)o->weight_decay);
    snprintf(help[4], sizeof help[4], "gradient clipping by global norm (default %g; 0: off)", (double)o->clip);
    const lc_opt add[LC_OPTIM_FLAG_COUNT] = {
        {"--lr", OPT_FLOAT, &o->lr, 1e-9, 10, help[0], 0},
        {"--min-lr", OPT_FLOAT, &o->min_lr, 0, 10, help[1], 0},
        {"--warmup", OPT_LONG, &o->warmup, 0, 1e12, help[2], 0},
        {"--weight-decay", OPT_FLOAT, &o->weight_decay, 0, 10, help[3], 0},
        {"--clip", OPT_FLOAT, &o->clip, 0, 1e9, help[4], 0},
        {"--lr-scale", OPT_STR, &lr_scale_arg, 0, 0,
         "PREFIX=F[@STEPS],...: parameters named PREFIX* train at F x the rate (for their first STEPS steps; F 0: frozen)", 0},
    };
    for (int i = 0; i < LC_OPTIM_FLAG_COUNT; i++) opts[n + i] = add[i];
    return n + LC_OPTIM_FLAG_COUNT;
}

int lc_optim_flags_apply(const char *cmd, lc_train_options *o) {
    if (!lr_scale_arg) return -1;
    lc_status st = lc_lr_scale_check(lr_scale_arg);
    if (st) {
        lc_cli_error("%s: --%s", cmd, lc_last_error());
        return LC_EXIT_USAGE;
    }
    strcpy(o->lr_scale, lr_scale_arg);
    return -1;
}

void lc_run_flags_default(lc_train_options *o) {
    lc_train_options_default(o);
    o->steps = 1000, o->batch = 16, o->lr = 1e-3f, o->warmup = 100, o->eval_every = 200;
}

int lc_run_flags_table(lc_opt *opts, const lc_opt *base, int n_base, lc_train_options *o, const lc_opt *extra,
                       lc_field_flags *ff, const lc_cli_field *rows, int n_rows, const char *why) {
    memcpy(opts, base, sizeof *base * (size_t)n_base);
    int n = lc_optim_flags_add(o, opts, n_base);
    if (extra) opts[n++] = *extra;
    return lc_field_flags_refuse_lm(opts, lc_field_flags_add(ff, rows, n_rows, opts, n), why);
}

int lc_run_flags_parse(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv,
                       const char *const *data, const char *what, lc_train_options *o) {
    int rc = lc_parse_opts(cmd, usage, opts, n, argc, argv);
    if (rc < 0 && !*data) {
        lc_cli_error("%s: --data is required (%s)", cmd, what);
        rc = LC_EXIT_USAGE;
    }
    return rc < 0 ? lc_optim_flags_apply(cmd, o) : rc;
}

int lc_run_flags_check_files(const char *cmd, const char *what, const char *data, const char *valid,
                             const char *init, const char *out, const char *log, char *last, size_t cap) {
    if (!valid) return lc_cli_error("%s: --valid is required (%s)", cmd, what), LC_EXIT_USAGE;
    if (!out) return lc_cli_error("%s: --out is required (the best checkpoint is written there)", cmd), LC_EXIT_USAGE;
    if (snprintf(last, cap, "%s.last", out) >= (int)cap)
        return lc_cli_error("train: --out %s: the path is too long", out), LC_EXIT_USAGE;
    const lc_cli_path outs[] = {{"--out", out}, {"--out", last}, {"--log", log}},
                      ins[] = {{"--data", data}, {"--valid", valid}, {"--init", init}};
    int rc = lc_cli_check_outputs(cmd, outs, 3, ins, 3);
    if (rc >= 0) return rc;
    lc_status st = LC_OK;
    if (lc_dist_rank() == 0 && ((st = lc_checkpoint_check_path(out)) || (st = lc_checkpoint_check_path(last))))
        return lc_cli_fail(st);
    return -1;
}
