/* A model family's configuration fields as rows of one table (lc_field): each row names a member of the
 * family's config struct (the checkpoint's metadata key and the flat API's name), its kind, its CLI flag,
 * the ranges a flag and a checkpoint accept, and its help line. The CLI's flags and --help lines, the
 * checkpoint's keys and the binding API's description of a config all walk such a table, so adding a field
 * is one row. A family writes its rows once as an X-macro with the columns of the language model's table
 * (src/nn/lm_fields.h):
 *
 *   X(field, kind, flag, lo, hi, file_hi, need, text, help)
 *     field    the config struct's member, or a nested member path (enc.n_layer: key "enc.n_layer")
 *     kind     INT (int), LONG (long), FLOAT (float), BOOL (int 0/1; the flag sets 1), BOOL_OFF (int 0/1; the
 *              flag sets 0), CHOICE (an enum stored as int, values 0, 1, ... named by text), TEXT (a char array)
 *     flag     the CLI flag, "--layers" (NULL: none)
 *     lo, hi   the numbers a flag and a set by name accept (both 0: 0 .. file_hi)
 *     file_hi  the largest value a checkpoint may hold: a required INT/LONG lo..file_hi, an optional one
 *              0..file_hi (absent: 0); FLOAT [0, file_hi)
 *     need     LC_FIELD_REQUIRED, LC_FIELD_XL_ONLY, LC_FIELD_RUN bits
 *     text     CHOICE: the value names in enum order, "pre|post"; TEXT: what an empty value is written as;
 *              INT, LONG, FLOAT, BOOL: the key where it is not the field's path ("sent.words"), else NULL
 *     help     the flag's --help line
 *
 * and turns it into a table with LC_FIELD_TABLE(fn, its_config_type, ITS_FIELDS). */
#ifndef LONGCTX_FIELDS_H
#define LONGCTX_FIELDS_H

#include <stddef.h>

#include "longctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    LC_FIELD_INT = 0,
    LC_FIELD_LONG = 1,
    LC_FIELD_FLOAT = 2,
    LC_FIELD_BOOL = 3,
    LC_FIELD_BOOL_OFF = 4,
    LC_FIELD_CHOICE = 5,
    LC_FIELD_TEXT = 6
} lc_field_type;

/* need bits (the values of the language model's LC_F_* bits): REQUIRED in every checkpoint (else absent
 * in older files: 0 or ""); XL_ONLY: Transformer-XL language models only; RUN: a run setting, not the
 * model's shape (a loaded model may change it). */
enum { LC_FIELD_REQUIRED = 1, LC_FIELD_XL_ONLY = 2, LC_FIELD_RUN = 8 };

typedef struct {
    const char *name;   /* the checkpoint key and the flat API's name: "n_layer", "enc.n_layer" (a number's
                           row may name another key in its text column) */
    lc_field_type kind;
    size_t offset;      /* of the value in the config struct */
    size_t size;        /* of the value (TEXT: the array's capacity, terminator included) */
    const char *flag;   /* "--layers", or NULL */
    double lo, hi;      /* what a flag or a set by name accepts (both 0: 0 .. file_hi) */
    double file_hi;     /* what a checkpoint may hold */
    unsigned need;      /* LC_FIELD_* bits */
    const char *text;   /* CHOICE: "name0|name1"; TEXT: the spelling of an empty value (may be NULL) */
    const char *help;
} lc_field;

/* One row of X-macro columns as an lc_field of the struct type lc_field_struct (LC_FIELD_TABLE's). */
#define LC_FIELD_KEY_INT(field, text) ((text) ? (text) : #field)
#define LC_FIELD_KEY_LONG LC_FIELD_KEY_INT
#define LC_FIELD_KEY_FLOAT LC_FIELD_KEY_INT
#define LC_FIELD_KEY_BOOL LC_FIELD_KEY_INT
#define LC_FIELD_KEY_BOOL_OFF LC_FIELD_KEY_INT
#define LC_FIELD_KEY_CHOICE(field, text) #field
#define LC_FIELD_KEY_TEXT(field, text) #field
#define LC_FIELD_TABLE_ROW(field, kind, flag, lo, hi, file_hi, need, text, help)                                     \
    {LC_FIELD_KEY_##kind(field, text), LC_FIELD_##kind, offsetof(lc_field_struct, field),                            \
     sizeof(((lc_field_struct *)0)->field), flag, lo, hi, file_hi, need, text, help},

/* Defines `const lc_field *fn(int *n)`: the rows of the X-macro FIELDS over the struct `type` (its count in
 * *n; n may be NULL). Any number of tables may be defined in one file. */
#define LC_FIELD_TABLE(fn, type, FIELDS)                                                                             \
    const lc_field *fn(int *n) {                                                                                     \
        typedef type lc_field_struct;                                                                                \
        static const lc_field rows[] = {FIELDS(LC_FIELD_TABLE_ROW)};                                                      \
        if (n) *n = (int)(sizeof rows / sizeof rows[0]);                                                             \
        return rows;                                                                                                 \
    }

/* The row named key in t[0 .. n): by its name, or by its flag with or without the leading "--" and with '-'
 * or '_' ("layers", "--seg-len", "seg_len"); NULL when none. */
const lc_field *lc_field_find(const lc_field *t, int n, const char *key);
/* Sets the value of f in the struct at cfg from text: a number in the row's range, 0/1 (also true/false,
 * yes/no, on/off) for a bool, one of the names for a choice, text that fits. Nothing changes on failure:
 * LC_ERR_ARG with one message naming the field ("config n_layer: '0' is not an integer in 1..1024"). */
lc_status lc_field_set(const lc_field *f, void *cfg, const char *value);
/* lc_field_set by key (lc_field_find); an unknown key is LC_ERR_ARG listing the table's names. */
lc_status lc_field_set_key(const lc_field *t, int n, void *cfg, const char *key, const char *value);
/* The value of f in cfg as text into buf[cap] (numbers as a checkpoint writes them: %d, %.9g; a choice by
 * its name; TEXT as held, "" included); LC_ERR_ARG when buf is too small. */
lc_status lc_field_format(const lc_field *f, const void *cfg, char *buf, size_t cap);
/* 1 with *out = 1 for "1", "true", "yes", "on" and *out = 0 for "0", "false", "no", "off" (any case); else 0. */
int lc_field_parse_bool(const char *v, int *out);
/* The binding API's kind of f's values (0 int, 1 float, 2 bool, 3 string: lc_value_kind's numbers). */
int lc_field_value_kind(const lc_field *f);

#ifdef __cplusplus
}
#endif
#endif
