/* Model families as rows of one table, as attention kinds are: a family (the language model "lm", the
 * classifier "classify", HIBERT "hibert", seq2seq "seq2seq", or one registered at run time) is an lc_family
 * row naming its config's field table (longctx/fields.h), how a model is created, loaded, saved and freed,
 * and how it trains through the library's one training loop (src/train/fit.h: lc_fit) and is evaluated.
 * Every place that takes "any family" (the CLI's --task NAME, longctx.Model.load in Python, the binding calls
 * below) finds the family here by name or by its checkpoint's metadata "model". Adding a family is its own
 * folder (src/models/<family>) and one row: a built-in one in src/models/families.c, an outside one through
 * lc_family_register (docs/design.md, "Add a model family"; tests/test_family_tiny.c does it in one file). */
#ifndef LONGCTX_FAMILY_H
#define LONGCTX_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"
#include "longctx/fields.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The training loop's parts a family fills (src/train/fit.h; opaque to the public API). */
struct lc_fit_family;
struct lc_fit_params;
struct lc_fit_metrics;

typedef struct lc_family {
    const char *name;   /* the registry's name and --task NAME: lower-case letters, digits, '_' */
    const char *models; /* the checkpoint metadata "model" values of its files, "xl|vanilla" (NULL: name) */
    const char *what;   /* the family in words for messages: "a classifier" */
    const char *data;   /* its batch source in words: "a labelled TSV (Source, Label)" */
    /* Its config: a struct of config_size bytes whose fields the table describes (fields NULL: none
     * described yet), holding config_default's values for a new model. */
    const lc_field *(*fields)(int *n);
    size_t config_size;
    void (*config_default)(void *cfg);
    /* A new model of cfg with parameters drawn from seed (NULL: models come from checkpoints only). */
    lc_status (*create)(const void *cfg, uint64_t seed, void **model);
    /* The model of a checkpoint of this family, its step and training state restored (a resume). */
    lc_status (*load)(const char *path, void **model);
    /* Saves the model's whole state to path, atomically (NULL: not from here). */
    lc_status (*save)(void *model, const char *path);
    void (*free)(void *model);
    /* The model's config (a struct of the table). Fields with LC_FIELD_RUN may change on a loaded model: by
     * set_run when given, else written there; the others are its shape. */
    void *(*config)(void *model);
    lc_status (*set_run)(void *model, const lc_field *f, const char *value);
    /* Training (NULL: not through lc_family_fit): opens a run on the model for the data at train (and valid,
     * may be NULL) with the options o: the loop's hooks, its state *run and the parameters it updates. */
    lc_status (*run_open)(void *model, const lc_train_options *o, const char *train, const char *valid, void **run,
                          const struct lc_fit_family **hooks, struct lc_fit_params *params);
    void (*run_close)(void *run);
    /* Scores the model on the data at path into *out (its named metrics; NULL: evaluated from the CLI only). */
    lc_status (*evaluate)(void *model, const char *path, struct lc_fit_metrics *out);
} lc_family;

/* The families: the built-in rows, then those registered, in order; NULL past the end. */
int lc_family_count(void);
const lc_family *lc_family_at(int i);
/* The family named name, or NULL. */
const lc_family *lc_family_find(const char *name);
/* The family whose checkpoints carry metadata "model" = model ("xl" is "lm"), or NULL. */
const lc_family *lc_family_of_model(const char *model);
/* The names, "lm, classify, hibert or seq2seq", into buf[cap] (for messages). */
void lc_family_names(char *buf, size_t cap);
/* Adds a row (kept by pointer: it must outlive its use) under a lock, so that threads may register at
 * once. 0, or -1 with LC_ERR_ARG (a name taken or malformed, a row without load, free or config, a model
 * value another family has) (or the table is full: 32 registered). */
int lc_family_register(const lc_family *f);

/* Trains the model through lc_fit (src/train/fit.h) on the family's data: from the model's step to o->steps,
 * saving the whole state to out_path at the end, when a run stops early and every o->save_every steps (out_path
 * NULL: no saves). LC_ERR_ARG for a family without run_open. */
lc_status lc_family_fit(const lc_family *fam, void *model, const lc_train_options *o, const char *train,
                        const char *valid, const char *out_path);

/* ---------------------------------------------------------------- for bindings: any family by name */
/* Name of family i (NULL past the end). */
const char *lc_family_name(int i);
/* The number of config fields of the family named family (-1: no such family). */
int lc_family_field_count(const char *family);
/* Field i of a family's config: its name (the checkpoint key), kind (lc_value_kind's numbers: 0 int, 1 float,
 * 2 bool, 3 string), CLI flag (NULL: none), choice names ("pre|post"; NULL: not a choice), help, and its
 * default as text into dflt[cap] (dflt may be NULL). Any output pointer may be NULL; LC_ERR_ARG for an
 * unknown family or i outside its fields. */
lc_status lc_family_field_about(const char *family, int i, const char **name, int *kind, const char **flag,
                                const char **choices, const char **help, char *dflt, size_t cap);

/* A model of any family, loaded from a checkpoint by its metadata "model" through the registry. */
typedef struct lc_family_model lc_family_model;
/* LC_ERR_FORMAT naming the file and the registry's families when no family has its "model"; the
 * family's own load errors otherwise. */
lc_status lc_family_model_load(const char *path, lc_family_model **out);
void lc_family_model_free(lc_family_model *m);
/* Its family's name, and the family's own model handle (an lc_model *, lc_text_classifier *, ...). */
const char *lc_family_model_family(const lc_family_model *m);
void *lc_family_model_handle(lc_family_model *m);
/* A config field by name (or its flag's) as text into buf[cap]; LC_ERR_ARG for an unknown key. */
lc_status lc_family_model_get(const lc_family_model *m, const char *key, char *buf, size_t cap);
/* Sets a run field (LC_FIELD_RUN) from text; a shape field is LC_ERR_ARG naming it, a bad value LC_ERR_ARG
 * naming the field and what it accepts (the model unchanged). */
lc_status lc_family_model_set(lc_family_model *m, const char *key, const char *value);
/* Scores it on the data at path (its family's evaluate): its named metrics, at most cap of them, into names[]
 * and values[], their count in *n. LC_ERR_ARG for a family evaluated by its commands only. */
lc_status lc_family_model_evaluate(lc_family_model *m, const char *path, const char **names, double *values, int cap,
                                   int *n);
/* Saves it (the family's save); LC_ERR_ARG when its family saves from elsewhere only. */
lc_status lc_family_model_save(lc_family_model *m, const char *path);

#ifdef __cplusplus
}
#endif
#endif
