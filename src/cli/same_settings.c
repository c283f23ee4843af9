/* Processes training together under mpirun must agree on every setting that shapes the run: each process
 * lists its normalised settings (the checkpoint metadata the run would record, the data's size and hash,
 * and the flags that decide when processes meet: saves, stops), one 64-bit hash per setting, and one
 * collective compares them before the first step. On a difference every process stops with one line
 * naming the first setting that differs and its own value, exit 2, before anything is written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/same_settings.h"
#include "train/dist.h"

void lc_cli_settings_add(lc_cli_settings *s, const char *flag, const char *fmt, ...) {
    if (s->n >= LC_CLI_SETTINGS_MAX) return; /* a fixed count (the collective's length): callers stay below */
    char value[LC_DATA_PATH_CHARS + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    const int i = s->n++;
    snprintf(s->flag[i], sizeof s->flag[i], "%.*s", (int)sizeof s->flag[i] - 1, flag);
    snprintf(s->shown[i], sizeof s->shown[i], "%.*s", (int)sizeof s->shown[i] - 1, value);
    s->hash[i] = lc_data_hash((const uint8_t *)flag, strlen(flag)) ^ lc_data_hash((const uint8_t *)value, strlen(value));
}

/* The flag that sets a metadata key: "train.batch" -> "--batch", "mem_len" -> "--mem-len", the model
 * shape's own names, and those of a stack: HIBERT's "sent.n_layer" -> "--sent-layers", seq2seq's
 * "enc.n_layer" -> "--layers" (one set of flags shapes both of its stacks, and the encoder's keys come
 * first, so a difference is named by them). */
static void flag_of_key(const char *key, char *flag, size_t n) {
    static const char *named[][2] = {{"n_layer", "--layers"}, {"d_model", "--dim"}, {"n_head", "--heads"},
                                     {"d_ff", "--ffn"}, {"seq_len", "--seg-len"}, {"step", "the resumed step"},
                                     {"vocab", "the vocabulary"}, {"seed", "--seed"}, {"stage", "the stage"},
                                     {"head.features", "--head-features"}, {"latin1", "--encoding"},
                                     {"best.score", "the resumed best"}, {"best.step", "the resumed best"}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(key, named[i][0]) == 0) {
            snprintf(flag, n, "%s", named[i][1]);
            return;
        }
    static const char *stack_field[][2] = {{"n_layer", "layers"}, {"d_model", "dim"}, {"n_head", "heads"},
                                           {"d_ff", "ffn"}, {"attn", "attn"}, {"words", "words"}};
    const char *dot = strchr(key, '.');
    for (size_t i = 0; dot && i < sizeof stack_field / sizeof stack_field[0]; i++)
        if (strcmp(dot + 1, stack_field[i][0]) == 0) { /* HIBERT's stacks: "sent.n_layer" -> "--sent-layers" */
            if (dot - key == 3 && strncmp(key, "enc", 3) == 0) snprintf(flag, n, "--%s", stack_field[i][1]);
            else snprintf(flag, n, "--%.*s-%s", (int)(dot - key), key, stack_field[i][1]);
            return;
        }
    snprintf(flag, n, "--%s", dot ? dot + 1 : key);
    for (char *c = flag + 2; *c; c++)
        if (*c == '_') *c = '-';
}

void lc_cli_settings_add_meta(lc_cli_settings *s, const lc_st_meta *items, int n) {
    for (int i = 0; i < n; i++) {
        if (strncmp(items[i].key, "data.", 5) == 0) continue; /* the data: by size and hash (add it as --data) */
        char flag[48];
        flag_of_key(items[i].key, flag, sizeof flag);
        lc_cli_settings_add(s, flag, "%s", items[i].value);
    }
}

int lc_cli_same_settings(const char *cmd, const lc_cli_settings *s) {
    uint64_t v[LC_CLI_SETTINGS_MAX + 1] = {(uint64_t)s->n};
    memcpy(v + 1, s->hash, sizeof s->hash);
    const int d = lc_dist_first_difference(v, LC_CLI_SETTINGS_MAX + 1);
    if (d < 0) return -1;
    if (d == 0 || d > s->n)
        lc_cli_error("%s: process %d of %d was started with other settings than another process (%d settings "
                     "here): start every process with the same flags and data", cmd, lc_dist_rank(), lc_dist_size(),
                     s->n);
    else
        lc_cli_error("%s: process %d of %d has %s %.80s, which another process does not: start every process "
                     "with the same flags and data", cmd, lc_dist_rank(), lc_dist_size(), s->flag[d - 1],
                     s->shown[d - 1]);
    return LC_EXIT_USAGE;
}

static int readiness_shared;

int lc_cli_all_ready(int rc) {
    long worst = rc;
    readiness_shared = 1;
    lc_dist_max_longs(&worst, 1);
    return rc >= 0 ? rc : (int)worst;
}

void lc_cli_all_ready_end(int rc) {
    if (!readiness_shared) lc_cli_all_ready(rc);
    lc_dist_finalize();
}

int lc_cli_refuse_processes(const char *cmd) {
    const int n = lc_dist_init(NULL, NULL);
    lc_dist_finalize();
    if (n < 2) return -1;
    lc_cli_error("%s runs in one process (it is not data-parallel yet): start it without mpirun, or with -np 1 "
                 "(%d processes here)", cmd, n);
    return LC_EXIT_USAGE;
}

