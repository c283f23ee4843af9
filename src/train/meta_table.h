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

/* The keys of a family's field table (models/<family>/<family>_fields.h, nn/stack_fields.h), one per row:
 * `LC_CLASSIFY_FIELDS(FIELD_KEY)` in a key table, the including file defining CFG(path) (the offset of the
 * config's member `path` in its record) and CFG_TYPE (the config's type). A numeric row's key is its `text`
 * when given, else its field's path; a required INT holds lo..file_hi, an optional one 0..file_hi. */
#define FIELD_KEY_NAME(field, text) ((text) ? (text) : #field)
#define FIELD_KEY_INT(field, at, lo, file_hi, need, text, cap) {FIELD_KEY_NAME(field, text), T_INT, at, (need) & REQUIRED ? (lo) : 0, file_hi, 0, 0, 0, NULL, need}
#define FIELD_KEY_BOOL(field, at, lo, file_hi, need, text, cap) {FIELD_KEY_NAME(field, text), T_BOOL, at, 0, 1, 0, 0, 0, NULL, need}
#define FIELD_KEY_BOOL_OFF FIELD_KEY_BOOL
#define FIELD_KEY_FLOAT(field, at, lo, file_hi, need, text, cap) {FIELD_KEY_NAME(field, text), T_FLOAT, at, 0, 0, 0, file_hi, OPEN_HI, NULL, need}
#define FIELD_KEY_CHOICE(field, at, lo, file_hi, need, text, cap) {#field, T_CHOICE, at, 0, 1, 0, 0, 0, text, need}
#define FIELD_KEY_TEXT(field, at, lo, file_hi, need, text, cap) {#field, T_STRING, at, 0, cap, 0, 0, 0, text, need}
#define FIELD_KEY(field, kind, flag, lo, hi, file_hi, need, text, help)                                              \
    FIELD_KEY_##kind(field, CFG(field), lo, file_hi, (need) & REQUIRED, text, sizeof(((CFG_TYPE *)0)->field)),

/* A family's metadata (the classifier's, HIBERT's, seq2seq's): its own keys, offsets from the start of its
 * record, then the training options (train.*) at offset opts_at of the same record. */
typedef struct {
    const meta_key *keys;
    int n;
    size_t opts_at;
} meta_family;

/* The first keys of every family's table (its model's name: "classify"), and its step and seed (of a record
 * type T with members step and seed). */
#define FAMILY_HEAD_KEYS(model) CONST("format", LC_CKPT_FORMAT), CONST("format_version", LC_CKPT_VERSION), CONST("model", model)
#define STEP_SEED_KEYS(T) LONG("step", offsetof(T, step), 0, 1LL << 62, REQUIRED), U64("seed", offsetof(T, seed), REQUIRED)

/* A family's `family` (its table keys[], of a record type T whose member run.opts holds the training options)
 * and its public lister of key names, const char *NAME(int i) (NULL past the end). */
#define LC_META_FAMILY(T, name)                                                                                    \
    static const meta_family family = {keys, (int)(sizeof keys / sizeof *keys), offsetof(T, run.opts)};          \
    const char *name(int i) { return lc_meta_family_key(&family, i); }

/* Fills a family's record h (members cfg, run, step, seed) from its model m and run record: the training
 * options without what a checkpoint does not keep (the data path, the hook). */
#define LC_META_FILL(h, m, run_)                                                                                   \
    ((h)->cfg = (m)->cfg, (h)->run = *(run_), (h)->step = (m)->step, (h)->seed = (m)->seed,                      \
     (h)->run.opts.data.path[0] = 0, (h)->run.opts.hook = NULL, (h)->run.opts.hook_user = NULL)

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
/* The tensors of c->list (checked against the file's table first: names, shapes, nothing missing or extra)
 * into a family's model built from the file's metadata, with their AdamW moments and kind state when
 * `moments`. */
lc_status lc_ckpt_read_family(const lc_st_file *f, const lc_ckpt_tensors *c, int moments);
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
