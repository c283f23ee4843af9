/* A family's CLI flags and their --help lines from its field table (longctx/fields.h): one flag per row that
 * names one. Numbers and a BOOL flag write the config struct directly (the parser checks the row's range); a
 * choice, a text and a BOOL_OFF flag are applied after parsing, a bad choice refused naming the flag. The
 * language model keeps its own generated flags (cli/model_flags.c: presets and the rules between fields). */
#ifndef LC_CLI_FIELD_FLAGS_H
#define LC_CLI_FIELD_FLAGS_H

#include "cli/cli.h"
#include "longctx/fields.h"

#define LC_FIELD_FLAGS_MAX 64

typedef struct {
    const lc_field *rows;
    int n;
    void *cfg;
    const char *text[LC_FIELD_FLAGS_MAX]; /* CHOICE and TEXT flags: the value given */
    int off[LC_FIELD_FLAGS_MAX];          /* BOOL_OFF flags: 1 when given */
} lc_field_flags;

/* Appends the rows' flags to opts[n_opts ..) (room for n rows) for the struct at cfg; returns the new count. */
int lc_field_flags_add(lc_field_flags *ff, const lc_field *rows, int n, void *cfg, lc_opt *opts, int n_opts);
/* After lc_parse_opts: the choices, texts and BOOL_OFF flags given into the struct. -1, or LC_EXIT_USAGE
 * after one error line naming cmd and the flag. */
int lc_field_flags_apply(lc_field_flags *ff, const char *cmd, lc_opt *opts, int n_opts);

#endif
