/* The machinery behind checkpoint metadata (train/checkpoint_meta.c for language models,
 * models/hibert/checkpoint_hibert.c for HIBERT): a key table says, for each key, its type, range, where its value
 * lives in a C struct and whether it is required; one writer and one reader walk any such table, so a
 * model's writer and reader cannot drift apart. Values are strings: integers in decimal, floats with 9
 * significant digits (exact for fp32), choices by name. Private to src/train. */
#ifndef LC_TRAIN_META_TABLE_H
#define LC_TRAIN_META_TABLE_H

#include <stddef.h>

#include "longctx/fields.h"
#include "nn/lm_fields.h" /* the value names the families share: LC_NORM_CHOICES, ... */
#include "train/checkpoint_meta.h"
#include "train/checkpoint_tensors.h"

typedef enum {
    T_CONST,  /* a fixed string (text) */
    T_CHOICE, /* an enum field stored as the name of its value: text = "name0|name1|..." (values lo, lo+1, ...) */
    T_INT,    /* int */
    T_BOOL,   /* int, 0 or 1 */
    T_LONG,   /* long */
    T_U64,    /* uint64_t, any value */
    T_FLOAT,  /* float, finite, within [flo, fhi] (ends excluded per `open`) */
    T_STRING  /* char[hi]; written as `text` when empty (text NULL: written only when not empty) */
} meta_type;

/* need: REQUIRED keys must be present; XL_ONLY keys exist for xl language models only; DATA keys are
 * written only when the data record holds a path. */
enum { REQUIRED = 1, XL_ONLY = 2, DATA = 4 };
enum { OPEN_LO = 1, OPEN_HI = 2 };

typedef struct {
    const char *key;
    meta_type type;
    size_t at; /* offset of the value inside the part's struct */
    long long lo, hi;
    double flo, fhi;
    unsigned open;
    const char *text;
    unsigned need;
    /* T_STRING: a check of the value read (NULL: any string that fits); its error, after the file's and the
     * key's names, is the refusal (a --lr-scale spec that does not parse, say) */
    lc_status (*check)(const char *value);
} meta_key;

#define INT(k, at, lo, hi, need) {k, T_INT, at, lo, hi, 0, 0, 0, NULL, need}
#define LONG(k, at, lo, hi, need) {k, T_LONG, at, lo, hi, 0, 0, 0, NULL, need}
#define BOOL(k, at, need) {k, T_BOOL, at, 0, 1, 0, 0, 0, NULL, need}
#define FLOAT(k, at, flo, fhi, open) {k, T_FLOAT, at, 0, 0, flo, fhi, open, NULL, REQUIRED}
#define CHOICE(k, at, names, need) {k, T_CHOICE, at, 0, 1, 0, 0, 0, names, need}
#define U64(k, at, need) {k, T_U64, at, 0, 0, 0, 0, 0, NULL, need}
#define STRING(k, at, cap, dflt, need) {k, T_STRING, at, 0, cap, 0, 0, 0, dflt, need}
#define CONST(k, text) {k, T_CONST, 0, 0, 0, 0, 0, 0, text, REQUIRED}

/* A table of keys whose values live at base + at (base: the struct the whole metadata is read into). */
typedef struct {
    const meta_key *keys;
    int n;
    size_t at;
} meta_part;

/* Whether key k is left out (writing: not written; reading: not read) for the values at base. */
typedef int (*meta_skip_fn)(const meta_key *k, const void *base, int writing);

/* The training options (lc_train_options: train.*) and the language model's data record (data.*),
 * offsets relative to lc_train_options: parts of both models' tables. */
extern const meta_part lc_meta_train_part, lc_meta_data_part;
/* A model's table: its own keys (out[0], offsets from the record's start) then the training options
 * (out[1]) at offset opts_at of the same record (the classifier's and HIBERT's checkpoints). */
void lc_meta_parts_with_train(meta_part out[2], const meta_key *keys, int n, size_t opts_at);

/* The keys of one encoder or decoder stack (lc_hibert_stack, which lc_seq2seq_stack is) lying at offset `at`:
 * PREFIX.n_layer, .d_model, .n_head, .d_ff, .attn (HIBERT's three stacks, seq2seq's two). */
#define STACK_KEYS(prefix, at)                                                                                     \
    INT(prefix ".n_layer", (at) + offsetof(lc_hibert_stack, n_layer), 1, 4096, REQUIRED),                          \
    INT(prefix ".d_model", (at) + offsetof(lc_hibert_stack, d_model), 1, 1 << 20, REQUIRED),                       \
    INT(prefix ".n_head", (at) + offsetof(lc_hibert_stack, n_head), 1, 1 << 16, REQUIRED),                         \
    INT(prefix ".d_ff", (at) + offsetof(lc_hibert_stack, d_ff), 1, 1 << 24, REQUIRED),                             \
    STRING(prefix ".attn", (at) + offsetof(lc_hibert_stack, attn), LC_ATTN_SPEC_CHARS, "full", REQUIRED)

/* A family's metadata (the classifier's, HIBERT's, seq2seq's): its own keys, offsets from the start of its
 * record, then the training options (train.*) at offset opts_at of the same record. */
typedef struct {
    const meta_key *keys;
    int n;
    size_t opts_at;
} meta_family;

/* What every family's checkpoint does (train/checkpoint_family.c), on the tensor list of
 * train/checkpoint_tensors.h and its key table: */
/* Key i of the family's metadata (NULL past the end). */
const char *lc_meta_family_key(const meta_family *fam, int i);
/* The metadata of the record at base, as strings. */
void lc_meta_family_format(const meta_family *fam, const void *base, lc_ckpt_meta_strings *out);
/* Writes path atomically: the parameters, their AdamW moments and the kind state of c, the metadata of the
 * record at base, then the `extra` items (texts such as a label set). Refuses weights holding NaN or
 * infinity (LC_ERR_NUMERIC naming the file). */
lc_status lc_ckpt_save_family(const char *path, const lc_ckpt_tensors *c, const meta_family *fam, const void *base,
                              const lc_st_meta *extra, int n_extra);
/* Reads a family's metadata into base: the family check (lc_ckpt_check_family; `model` the metadata's
 * value, `what` the family in words: "a classifier"), every key of fam, then validate(base) (a
 * failure: "bad model config: ..."). LC_ERR_FORMAT naming the file otherwise. */
lc_status lc_ckpt_parse_family(const lc_st_file *f, lc_ckpt_family family, const char *model, const char *what,
                               const meta_family *fam, void *base, lc_status (*validate)(const void *base));
/* A model that the checked metadata describes but that cannot be built (memory, limits): the error of st,
 * after the file's name; LC_ERR_NOMEM stays itself, anything else is LC_ERR_FORMAT. */
lc_status lc_ckpt_build_failed(const char *path, lc_status st);

void lc_meta_format(const meta_part *parts, int n_parts, const void *base, meta_skip_fn skip,
                    lc_ckpt_meta_strings *out);
/* lc_meta_format after the items out already holds (metadata of values in several structs). */
void lc_meta_format_append(const meta_part *parts, int n_parts, const void *base, meta_skip_fn skip,
                           lc_ckpt_meta_strings *out);
/* Reads every key of the parts in order (a key only read when skip says so after the keys before it);
 * LC_ERR_FORMAT naming the file and the key for a missing required key or a bad value. */
lc_status lc_meta_parse(const lc_st_file *f, const meta_part *parts, int n_parts, void *base, meta_skip_fn skip);
/* Key i of the parts (NULL past the end), its `need` in *need (may be NULL). */
const char *lc_meta_key_at(const meta_part *parts, int n_parts, int i, unsigned *need);

/* The keys of a family's field table (longctx/fields.h) into out[n]: each row's name, kind and checkpoint
 * range (a required INT/LONG lo..file_hi, an optional one 0..file_hi, FLOAT [0, file_hi), CHOICE by name,
 * TEXT in its array, written as the row's text when empty), its REQUIRED and XL_ONLY bits; offsets as the
 * rows'. */
void lc_meta_keys_of_fields(const lc_field *f, int n, meta_key *out);
/* Writes path atomically: the tensors of c, the metadata items, then the `extra` items; refuses weights
 * holding NaN or infinity (LC_ERR_NUMERIC naming the file). */
lc_status lc_ckpt_save_items(const char *path, const lc_ckpt_tensors *c, const lc_ckpt_meta_strings *meta,
                             const lc_st_meta *extra, int n_extra);

#endif
