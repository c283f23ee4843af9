/* The table of model families (longctx/family.h): one row per built-in family, wrapping that family's own
 * calls, then the rows registered at run time (append-only, under a lock, as the attention kinds' table in
 * attn/kinds.c). Found by name (--task NAME) or by a checkpoint's metadata "model" (longctx.Model.load). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/choice.h"
#include "core/status.h"
#include "longctx/family.h"
#include "longctx/flat.h"
#include "longctx/seq2seq.h"
#include "models/classify/classify_fields.h"
#include "models/classify/classify_fit.h"
#include "models/hibert/hibert_fields.h"
#include "models/hibert/hibert_fit.h"
#include "models/lm/lm_fit.h"
#include "models/seq2seq/seq2seq_fields.h"
#include "models/seq2seq/seq2seq_fit.h"
#include "nn/lm_fields.h"

/* ---------------------------------------------------------------- the built-in rows */
static void lm_default(void *cfg) { lc_config_default(cfg); }
static lc_status lm_create(const void *cfg, uint64_t seed, void **model) {
    return lc_model_create(cfg, 1, seed, (lc_model **)model);
}
static lc_status lm_load(const char *path, void **model) { return lc_checkpoint_load(path, 0, (lc_model **)model, NULL); }
static void lm_free(void *model) { lc_model_free(model); }
static void *lm_config(void *model) { return (void *)lc_model_config(model); }
/* precision, the one run field, reaches the model through its own setter. */
static lc_status lm_set_run(void *model, const lc_field *f, const char *value) {
    lc_config c = *lc_model_config(model);
    lc_status st = lc_field_set(f, &c, value);
    return st ? st : lc_model_set_precision(model, c.precision);
}

static lc_status classify_load(const char *path, void **model) {
    return lc_text_classifier_load(path, 0, (lc_text_classifier **)model);
}
static void classify_free(void *model) { lc_text_classifier_free(model); }
static void *classify_config(void *model) { return (void *)lc_classifier_config(lc_text_classifier_model(model)); }

static lc_status hibert_load(const char *path, void **model) {
    return lc_hibert_load(path, NULL, (lc_hibert **)model, NULL);
}
static void hibert_free(void *model) { lc_hibert_free(model); }
static void *hibert_config(void *model) { return (void *)lc_hibert_get_config(model); }

static lc_status seq2seq_load(const char *path, void **model) {
    return lc_seq2seq_load(path, 0, (lc_seq2seq **)model, NULL);
}
static void seq2seq_free(void *model) { lc_seq2seq_free(model); }
static void *seq2seq_config(void *model) { return (void *)lc_seq2seq_get_config(model); }

static void classify_default(void *cfg) { lc_classify_config_default(cfg); }
static void hibert_default(void *cfg) { lc_hibert_config_default(cfg); }
static void seq2seq_default(void *cfg) { lc_seq2seq_config_default(cfg); }

/* The classifier's, HIBERT's and seq2seq's config fields, from their X-macro tables. */
static LC_FIELD_TABLE(classify_fields, lc_classify_config, LC_CLASSIFY_FIELDS)
static LC_FIELD_TABLE(hibert_fields, lc_hibert_config, LC_HIBERT_FIELDS)
static LC_FIELD_TABLE(seq2seq_fields, lc_seq2seq_config, LC_SEQ2SEQ_FIELDS)

static const lc_family builtin[] = {
    {.name = "lm", .models = "vanilla|xl", .what = "a language model", .data = "a byte stream (text file)",
     .fields = lc_lm_field_table, .config_size = sizeof(lc_config), .config_default = lm_default,
     .create = lm_create, .load = lm_load, .free = lm_free, .config = lm_config, .set_run = lm_set_run,
     .save = lc_lm_row_save, .run_open = lc_lm_row_run_open, .run_close = lc_lm_row_run_close,
     .evaluate = lc_lm_row_evaluate},
    {.name = "classify", .what = "a classifier", .data = "a labelled TSV (Source, Label)", .fields = classify_fields,
     .config_size = sizeof(lc_classify_config), .config_default = classify_default, .load = classify_load,
     .free = classify_free, .config = classify_config, .save = lc_classify_row_save,
     .run_open = lc_classify_row_run_open, .run_close = lc_classify_row_run_close, .evaluate = lc_classify_row_evaluate},
    {.name = "hibert", .what = "a HIBERT model", .data = "documents of sentences (one file each, or a TSV)",
     .fields = hibert_fields, .config_size = sizeof(lc_hibert_config), .config_default = hibert_default,
     .load = hibert_load, .free = hibert_free, .config = hibert_config, .save = lc_hibert_row_save,
     .run_open = lc_hibert_row_run_open, .run_close = lc_hibert_row_run_close, .evaluate = lc_hibert_row_evaluate},
    {.name = "seq2seq", .what = "a seq2seq model", .data = "a TSV of pairs (Source, Target)",
     .fields = seq2seq_fields, .config_size = sizeof(lc_seq2seq_config), .config_default = seq2seq_default,
     .load = seq2seq_load, .free = seq2seq_free, .config = seq2seq_config, .save = lc_seq2seq_row_save,
     .run_open = lc_seq2seq_row_run_open, .run_close = lc_seq2seq_row_run_close, .evaluate = lc_seq2seq_row_evaluate},
};
#define N_BUILTIN (int)(sizeof builtin / sizeof builtin[0])

/* ---------------------------------------------------------------- the table */
#define LC_FAMILY_MAX_REGISTERED 32
static const lc_family *registered[LC_FAMILY_MAX_REGISTERED];
static int n_registered;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

int lc_family_count(void) { return N_BUILTIN + __atomic_load_n(&n_registered, __ATOMIC_ACQUIRE); }

const lc_family *lc_family_at(int i) {
    if (i < 0 || i >= lc_family_count()) return NULL;
    return i < N_BUILTIN ? &builtin[i] : registered[i - N_BUILTIN];
}

const lc_family *lc_family_find(const char *name) {
    const int n = lc_family_count();
    for (int i = 0; name && i < n; i++)
        if (strcmp(lc_family_at(i)->name, name) == 0) return lc_family_at(i);
    return NULL;
}

const lc_family *lc_family_of_model(const char *model) {
    const int n = lc_family_count();
    for (int i = 0; model && i < n; i++) {
        const lc_family *f = lc_family_at(i);
        if (f->models ? lc_choice_index(f->models, model) >= 0 : strcmp(f->name, model) == 0) return f;
    }
    return NULL;
}

void lc_family_names(char *buf, size_t cap) {
    char names[512];
    size_t len = 0;
    names[0] = 0;
    const int n = lc_family_count();
    for (int i = 0; i < n && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? "|" : "", lc_family_at(i)->name);
    lc_choice_list(names, "", buf, cap);
}

static int good_name(const char *s) {
    if (!s || !*s || strlen(s) > 31) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

/* A model value of f that another family's files carry already, or NULL. */
static const char *taken_model(const lc_family *f) {
    const char *models = f->models ? f->models : f->name;
    char v[64];
    for (int i = 0; i < lc_choice_count(models); i++) {
        lc_choice_name(models, i, v, sizeof v);
        const lc_family *other = lc_family_of_model(v);
        if (other) return other->name;
    }
    return NULL;
}

int lc_family_register(const lc_family *f) {
    if (!f) return lc_fail(LC_ERR_ARG, "family registration: no row given"), -1;
    if (!good_name(f->name))
        return lc_fail(LC_ERR_ARG, "family '%s': a name is lower-case letters, digits or '_' (at most 31)",
                       f->name ? f->name : "(null)"), -1;
    if (!f->load || !f->free || !f->config || !f->what)
        return lc_fail(LC_ERR_ARG, "family '%s': what, load, free and config are required", f->name), -1;
    if (f->fields && (!f->config_size || !f->config_default))
        return lc_fail(LC_ERR_ARG, "family '%s': a field table needs config_size and config_default", f->name), -1;
    if (!f->run_open != !f->run_close)
        return lc_fail(LC_ERR_ARG, "family '%s': run_open and run_close come in pairs", f->name), -1;
    pthread_mutex_lock(&register_lock);
    const char *other = lc_family_find(f->name) ? f->name : taken_model(f);
    const int full = !other && n_registered == LC_FAMILY_MAX_REGISTERED;
    if (!other && !full) {
        registered[n_registered] = f;
        __atomic_store_n(&n_registered, n_registered + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&register_lock);
    if (other && strcmp(other, f->name) == 0) return lc_fail(LC_ERR_ARG, "family '%s' is already registered", f->name), -1;
    if (other) return lc_fail(LC_ERR_ARG, "family '%s': its checkpoints' model is family '%s''s", f->name, other), -1;
    if (full)
        return lc_fail(LC_ERR_ARG, "family '%s': %d families are registered already (the most)", f->name,
                       LC_FAMILY_MAX_REGISTERED), -1;
    return 0;
}
