/* Shared pieces of the longctx command-line tool: exit codes, error printing, option tables. */
#ifndef LC_CLI_H
#define LC_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "longctx.h"

enum { LC_EXIT_OK = 0, LC_EXIT_RUNTIME = 1, LC_EXIT_USAGE = 2 };

/* Print "longctx: error: <message>" on stderr; returns the exit code for a status. */
int lc_cli_fail(lc_status st);
/* Before anything else in main: a short OpenMP spin before idle threads sleep, unless the user set one
 * (may execute the CLI again once; src/cli/wait_policy.c). */
void lc_cli_wait_policy(char **argv);
void lc_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef enum { OPT_INT, OPT_LONG, OPT_FLOAT, OPT_STR, OPT_FLAG, OPT_U64 } lc_opt_type;

typedef struct {
    const char *name;  /* "--steps" */
    lc_opt_type type;
    void *dst;         /* int*, long*, float*, const char**, int* (flag), uint64_t* (u64) */
    double lo, hi;     /* accepted range for numbers (u64: always 0..2^64-1, lo and hi unused) */
    const char *help;
    int seen;          /* set by the parser */
    const char *refuse; /* non-NULL: a flag this command does not use: left out of --help, and giving it is a
                         * usage error "CMD: --flag <refuse>" (lc_opt_refuse) */
} lc_opt;

/* Parses argv[first..argc) into opts. Returns -1 when parsing succeeded and the command should run,
 * LC_EXIT_OK after printing --help, or LC_EXIT_USAGE after printing one error line. */
int lc_parse_opts(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv);
/* lc_parse_opts for a command that also takes positional arguments (files, "-"): they may come before, between
 * or after the flags (one convention for every command), and every argument after "--" is one. They are put in
 * pos[0 .. *n_pos), at most max_pos of them (one more is a usage error naming it). */
int lc_parse_opts_args(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv, char **pos,
                       int max_pos, int *n_pos);
/* The option named `name` (which must exist in opts). */
lc_opt *lc_opt_get(lc_opt *opts, int n, const char *name);
/* Marks the option `name` (which must exist) as one this command does not use: --help leaves it out and
 * the parser refuses it with "CMD: NAME WHY". Shared tables (model flags, HIBERT's stages) stay whole, so
 * the code that reads them needs no special case. */
void lc_opt_refuse(lc_opt *opts, int n, const char *name, const char *why);
/* The --help lines of opts[0..n) that the command uses (each "  --name ARG  help\n"). */
void lc_opt_print(FILE *f, const lc_opt *opts, int n);

/* "s" unless n is 1: "%ld step%s" for English plurals. */
static inline const char *lc_plural(long n) { return n == 1 ? "" : "s"; }

/* A number formatted for JSON (%.6f, or null when not finite), in a static rotating buffer. */
const char *lc_json_number(double x);

/* Re-plan a loaded model for a command's batch, segment length (*seg_len 0: the trained one, set on
 * return) and XL memory options (mem_len/clamp_len -1: as trained). -1 on success, else an exit code
 * after printing the error. */
int lc_apply_runtime_lengths(lc_model *m, const char *cmd, int batch, int *seg_len, int mem_len, int clamp_len,
                             int same_length);
/* The rows of a command's table for the XL options lc_apply_runtime_lengths takes (ints; -1, -1, 0: as
 * trained). */
#define LC_XL_RUNTIME_FLAGS(mem_len, clamp_len, same_length)                                                  \
    {"--mem-len", OPT_INT, &(mem_len), 0, 1 << 24, "xl: memory rows per layer (default: as trained)", 0},          \
    {"--clamp-len", OPT_INT, &(clamp_len), 0, 1 << 24, "xl: clamp relative distances (default: as trained)", 0},   \
    {"--same-length", OPT_FLAG, &(same_length), 0, 0, "xl: every query sees exactly mem-len keys", 0}

/* The data a command reads without --data (data_path.c): ./data/tinyshakespeare.txt, else the copy installed
 * in LC_DATADIR; NULL after one error line saying to pass --data. */
const char *lc_cli_default_data(const char *cmd);
/* Loads the file a checkpoint `ckpt` records (its path and split): -1 when it holds the recorded bytes, else
 * an exit code after one error line (the file is gone, unreadable or changed; give --data). */
int lc_cli_load_recorded(const char *cmd, const char *ckpt, const lc_data_record *rec, lc_corpus *c);

/* A file a command reads or writes, and what names it: {"--data", "t.tsv"} (out_check.c). */
typedef struct {
    const char *flag; /* "--data", "--out", "training data" (a word for the message) */
    const char *path; /* NULL: none */
} lc_cli_path;
/* Before any work: none of the outputs is an input file (same device and inode) or lies inside an input
 * directory tree. -1, or LC_EXIT_USAGE after one line naming both. */
int lc_cli_check_outputs(const char *cmd, const lc_cli_path *outs, int n_out, const lc_cli_path *ins, int n_in);

/* Stopping training on SIGINT / SIGTERM / SIGHUP / SIGUSR1 (stop.c): install the handler; the signal received (0: none);
 * its name; whether a periodic save is due after `step` (every N steps, or M minutes after the last save). */
void lc_cli_catch_stop_signals(void);
int lc_cli_stop_signal(void);
const char *lc_cli_signal_name(int sig);
int lc_cli_save_due(long save_every, float save_every_min, long step, double last_save_s);

/* Commands. */
int lc_cmd_train(int argc, char **argv);
int lc_cmd_eval(int argc, char **argv);
int lc_cmd_sample(int argc, char **argv);
int lc_cmd_bench(int argc, char **argv);
int lc_cmd_bench_attn(int argc, char **argv); /* bench attn (cmd_bench_attn.c) */
int lc_cmd_bench_hibert(int argc, char **argv); /* bench hibert (cmd_bench_hibert.c) */
int lc_cmd_bench_gemm(int argc, char **argv);   /* bench gemm (cmd_bench_gemm.c) */
int lc_cmd_hibert(int argc, char **argv);     /* hibert pretrain|finetune (cmd_hibert.c) */
int lc_cmd_summarize(int argc, char **argv);  /* summarize (cmd_summarize.c) */
int lc_cmd_eval_summary(int argc, char **argv); /* eval --task summarize (cmd_eval_summary.c) */
/* `CMD --task NAME` (cmd "train" or "eval"; tasks.c): NAME a family of the registry (longctx/family.h), run by
 * its command. -1 when there is no --task, or it is "lm" (the caller's own code); else the command's exit code.
 * An unknown NAME is one usage error listing `also` (other tasks, "summarize, ") and the families. */
int lc_cli_task_run(const char *cmd, const char *also, int argc, char **argv);
int lc_cmd_export(int argc, char **argv);     /* export (cmd_export.c) */
int lc_cmd_plot(int argc, char **argv);       /* plot: loss and validation curves of --log files (cmd_plot.c) */
int lc_cmd_attn_map(int argc, char **argv);   /* attn-map: one head's attention weights over a text (cmd_attn_map.c) */

/* Progress reporting for training on stderr (a live line on a terminal, periodic lines otherwise). */
typedef struct {
    int tty;
    long every;
    long last_printed;
    double tokens_per_s; /* of the latest step */
    int bits;            /* the loss is a byte-level NLL: also show it in bits per byte (lc_progress_init sets 1) */
} lc_progress_printer;

void lc_progress_init(lc_progress_printer *p, long steps);
void lc_progress_print(const lc_progress *pr, void *user);
void lc_progress_done(lc_progress_printer *p);

/* --log FILE of the training commands (progress.c): one JSON line per step, flushed as it goes:
 * {"step":..,"loss":..,"lr":..,"tokens_per_s":..,"elapsed_s":..} plus, on steps with a validation pass,
 * the command's validation fields and "valid_seconds". tokens_per_s excludes validation time. */
typedef struct {
    FILE *f;
    const char *path;
} lc_train_log;

/* Opens `path` (NULL: no log) for command `cmd`: appended to when `append` (a resumed run), else started
 * empty. -1 on success, else LC_EXIT_RUNTIME after one error line naming --log and the file. */
int lc_train_log_open(lc_train_log *l, const char *cmd, const char *path, int append);
/* Writes step p's line; `extra` is "" or more members, each starting with a comma (",\"valid_bpc\":1.5").
 * A failed write warns once and ends the log (training goes on). */
void lc_train_log_step(lc_train_log *l, const lc_progress *p, const char *extra);
void lc_train_log_close(lc_train_log *l);
/* A number for JSON with 9 significant digits, or null when not finite (static rotating buffer, as
 * lc_json_number). */
const char *lc_json_g(double x);

#endif
