/* A model family's configuration flags, generated from its field table (models/<family>/<family>_fields.h,
 * the columns of nn/lm_fields.h): one flag per row that has one, with the row's range and help line; the
 * values given are kept apart until lc_field_flags_apply writes them into a config (after the command has set
 * its defaults), so a command knows which were given. train --task classify|seq2seq and hibert use it. */
#ifndef LC_CLI_FIELD_FLAGS_H
#define LC_CLI_FIELD_FLAGS_H

#include <stddef.h>

#include "cli/cli.h"
#include "nn/lm_fields.h"

typedef enum { LC_FK_INT, LC_FK_FLOAT, LC_FK_BOOL, LC_FK_BOOL_OFF, LC_FK_CHOICE, LC_FK_TEXT } lc_field_kind;

/* One row: its flag (NULL: none), kind, where the member lies in the config and its size, the flag's range,
 * the row's text (CHOICE: the value names; TEXT: what "" means), help line and need bits (LC_F_*). */
typedef struct {
    const char *flag;
    lc_field_kind kind;
    size_t at, size;
    double lo, hi;
    const char *text, *help;
    unsigned need;
} lc_cli_field;

/* `static const lc_cli_field rows[] = {LC_CLASSIFY_FIELDS(LC_CLI_FIELD)};`, the including file defining
 * CFG_TYPE (the config's type). */
#define LC_CLI_FIELD(field, kind, flag, lo, hi, file_hi, need, text, help)                                         \
    {flag, LC_FK_##kind, offsetof(CFG_TYPE, field), sizeof(((CFG_TYPE *)0)->field), lo, hi, text, help, need},

#define LC_FIELD_FLAGS_MAX 48

/* The values the flags were given (the parser writes into v). */
typedef struct {
    const lc_cli_field *rows;
    int n_rows;
    union {
        int i;
        float f;
        const char *s;
    } v[LC_FIELD_FLAGS_MAX];
} lc_field_flags;

/* Appends a flag per row that has one to opts[n..] and returns the new count; ff must stay where it is
 * until the arguments are parsed. */
int lc_field_flags_add(lc_field_flags *ff, const lc_cli_field *rows, int n_rows, lc_opt *opts, int n);
/* Writes the value of every row given (whose need has a bit of `need`; 0: every row) into cfg, the config the
 * rows describe: -1, or LC_EXIT_USAGE after one error line "CMD: --flag ..." (a choice that is none of the
 * row's names, a text longer than the member holds). */
int lc_field_flags_apply(const lc_field_flags *ff, lc_opt *opts, int n, const char *cmd, void *cfg, unsigned need);
/* 1 when the flag of a row that shapes the model (not LC_F_RUN) was given, its name in *which. */
int lc_field_flags_any(const lc_field_flags *ff, lc_opt *opts, int n, const char **which);
/* Whether the row's member holds the same value in the configs a and b (TEXT: "" and the row's text alike). */
int lc_field_same(const lc_cli_field *row, const void *a, const void *b);
/* Appends, for each of the language model's shape flags (--preset and the rows of nn/lm_fields.h) that opts
 * lacks, a flag refused with `why` ("CMD: --seg-len WHY"). Returns the new count. */
int lc_field_flags_refuse_lm(lc_opt *opts, int n, const char *why);
/* A choice flag's value: its number among names ("pre|post"), or -1 after one error line
 * "CMD: FLAG must be pre or post, got 'VALUE'". */
int lc_cli_choice(const char *cmd, const char *flag, const char *names, const char *value);

#endif
