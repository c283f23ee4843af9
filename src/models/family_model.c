/* What the family table (longctx/family.h) gives every family: training through the one loop (lc_fit) and,
 * for bindings, the families and their fields by name and a model of any family loaded by its checkpoint's
 * metadata "model", its config read and its run fields set by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "longctx/family.h"
#include "train/fit.h"
#include "train/safetensors.h"

lc_status lc_family_fit(const lc_family *fam, void *model, const lc_train_options *o, const char *train,
                        const char *valid, const char *out_path) {
    lc_clear_error();
    if (!fam || !model || !o) return lc_fail(LC_ERR_ARG, "lc_family_fit: no family, model or options");
    if (!fam->run_open) return lc_fail(LC_ERR_ARG, "family '%s' does not train through lc_family_fit", fam->name);
    void *run = NULL;
    const lc_fit_family *hooks = NULL;
    lc_fit_params p;
    memset(&p, 0, sizeof p);
    lc_status st = fam->run_open(model, o, train, valid, &run, &hooks, &p);
    if (st) return st;
    lc_fit_options fo = {.o = o, .last_path = out_path, .record = {0, 0, NAN, 0}};
    lc_fit_result r;
    st = lc_fit(hooks, run, &p, &fo, &r);
    fam->run_close(run);
    return st;
}

/* ---------------------------------------------------------------- bindings */
const char *lc_family_name(int i) {
    const lc_family *f = lc_family_at(i);
    return f ? f->name : NULL;
}

static const lc_field *fields_of(const lc_family *f, int *n) {
    *n = 0;
    return f && f->fields ? f->fields(n) : NULL;
}

int lc_family_field_count(const char *family) {
    const lc_family *f = lc_family_find(family);
    int n;
    fields_of(f, &n);
    return f ? n : -1;
}

lc_status lc_family_field_about(const char *family, int i, const char **name, int *kind, const char **flag,
                                const char **choices, const char **help, char *dflt, size_t cap) {
    lc_clear_error();
    const lc_family *fam = lc_family_find(family);
    if (!fam) {
        char all[256];
        lc_family_names(all, sizeof all);
        return lc_fail(LC_ERR_ARG, "unknown family '%.40s' (known: %s)", family ? family : "(null)", all);
    }
    int n;
    const lc_field *t = fields_of(fam, &n);
    if (i < 0 || i >= n) return lc_fail(LC_ERR_ARG, "family %s: field %d outside 0..%d", fam->name, i, n - 1);
    const lc_field *f = &t[i];
    if (name) *name = f->name;
    if (kind) *kind = lc_field_value_kind(f);
    if (flag) *flag = f->flag;
    if (choices) *choices = f->kind == LC_FIELD_CHOICE ? f->text : NULL;
    if (help) *help = f->help;
    if (!dflt) return LC_OK;
    void *cfg = calloc(1, fam->config_size);
    if (!cfg) return lc_fail(LC_ERR_NOMEM, "family %s: out of memory", fam->name);
    fam->config_default(cfg);
    lc_status st = lc_field_format(f, cfg, dflt, cap);
    free(cfg);
    return st;
}

struct lc_family_model {
    const lc_family *fam;
    void *model;
};

lc_status lc_family_model_load(const char *path, lc_family_model **out) {
    lc_clear_error();
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    const char *model = lc_st_get_meta(f, "model");
    const lc_family *fam = lc_family_of_model(model);
    if (!fam) {
        char all[256];
        lc_family_names(all, sizeof all);
        st = model ? lc_fail(LC_ERR_FORMAT, "%s: metadata model '%.40s' is no family's (families: %s)", path, model, all)
                   : lc_fail(LC_ERR_FORMAT, "%s: a checkpoint without metadata 'model'", path);
    }
    lc_st_close(f);
    if (st) return st;
    lc_family_model *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    m->fam = fam;
    if ((st = fam->load(path, &m->model))) {
        free(m);
        return st;
    }
    *out = m;
    return LC_OK;
}

void lc_family_model_free(lc_family_model *m) {
    if (!m) return;
    m->fam->free(m->model);
    free(m);
}

const char *lc_family_model_family(const lc_family_model *m) { return m->fam->name; }
void *lc_family_model_handle(lc_family_model *m) { return m->model; }

/* The field named key of m's family, or NULL after LC_ERR_ARG naming it. */
static const lc_field *field_of(const lc_family_model *m, const char *key) {
    int n;
    const lc_field *t = fields_of(m->fam, &n), *f = lc_field_find(t, n, key);
    if (!f) lc_fail(LC_ERR_ARG, "family %s has no config field '%.60s'", m->fam->name, key ? key : "(null)");
    return f;
}

lc_status lc_family_model_get(const lc_family_model *m, const char *key, char *buf, size_t cap) {
    lc_clear_error();
    const lc_field *f = field_of(m, key);
    return f ? lc_field_format(f, m->fam->config(m->model), buf, cap) : LC_ERR_ARG;
}

lc_status lc_family_model_set(lc_family_model *m, const char *key, const char *value) {
    lc_clear_error();
    const lc_field *f = field_of(m, key);
    if (!f) return LC_ERR_ARG;
    if (!(f->need & LC_FIELD_RUN))
        return lc_fail(LC_ERR_ARG, "config %s is the shape of a loaded %s model: set it in a config before create",
                       f->name, m->fam->name);
    if (m->fam->set_run) return m->fam->set_run(m->model, f, value);
    return lc_field_set(f, m->fam->config(m->model), value);
}

lc_status lc_family_model_evaluate(lc_family_model *m, const char *path, const char **names, double *values, int cap,
                                   int *n) {
    lc_clear_error();
    *n = 0;
    if (!m->fam->evaluate)
        return lc_fail(LC_ERR_ARG, "family %s is evaluated by its command: longctx eval --task %s", m->fam->name,
                       m->fam->name);
    lc_fit_metrics mx = {0};
    lc_status st = m->fam->evaluate(m->model, path, &mx);
    for (int i = 0; !st && i < mx.n && i < cap; i++) names[i] = mx.m[i].key, values[i] = mx.m[i].value, (*n)++;
    return st;
}

lc_status lc_family_model_save(lc_family_model *m, const char *path) {
    lc_clear_error();
    if (!m->fam->save) return lc_fail(LC_ERR_ARG, "family %s saves from its own commands only", m->fam->name);
    return m->fam->save(m->model, path);
}
