/* The settings check of processes training together (same_settings.c): every process lists what shapes
 * its run, and one collective finds the first setting on which they differ. */
#ifndef LC_CLI_SAME_SETTINGS_H
#define LC_CLI_SAME_SETTINGS_H

#include <stdint.h>

#include "train/safetensors.h"

#define LC_CLI_SETTINGS_MAX 96

typedef struct {
    int n;
    char flag[LC_CLI_SETTINGS_MAX][48];  /* what sets it: "--batch" */
    char shown[LC_CLI_SETTINGS_MAX][96]; /* its value here, for the message (perhaps cut) */
    uint64_t hash[LC_CLI_SETTINGS_MAX];  /* of the flag and the whole value */
} lc_cli_settings;

/* One setting: the flag that sets it and its value (printf format). */
void lc_cli_settings_add(lc_cli_settings *s, const char *flag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Every key of checkpoint metadata (lc_ckpt_meta_format's items) except data.*, named by its flag. */
void lc_cli_settings_add_meta(lc_cli_settings *s, const lc_st_meta *items, int n);
/* Collective: -1 when every process holds the same settings; else LC_EXIT_USAGE on every process, each
 * after one error line naming the first setting that differs and its value there. */
int lc_cli_same_settings(const char *cmd, const lc_cli_settings *s);
/* Collective: processes training together start only when every one is ready. rc: -1 (ready) or this
 * process's exit code; returns -1, or the code of a process that failed (it printed why). */
int lc_cli_all_ready(int rc);
/* Whether this process has made lc_cli_all_ready (a command calls it once more at its end when not, so that
 * a process that stopped early meets the others). */
int lc_cli_ready_shared(void);
/* A command that runs in one process only: -1 without mpirun or with one process; else LC_EXIT_USAGE after
 * one error line (on every process). */
int lc_cli_refuse_processes(const char *cmd);

#endif
