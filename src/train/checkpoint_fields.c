/* The checkpoint of a family described by a field table (train/checkpoint_fields.h): the rows become
 * metadata keys (lc_meta_keys_of_fields), written and read by the one key-table writer and reader. */
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint_fields.h"
#include "train/meta_table.h"

void lc_meta_keys_of_fields(const lc_field *f, int n, meta_key *out) {
    for (int i = 0; i < n; i++) {
        meta_key *k = &out[i];
        memset(k, 0, sizeof *k);
        k->key = f[i].name, k->at = f[i].offset, k->need = f[i].need & (REQUIRED | XL_ONLY);
        switch (f[i].kind) {
        case LC_FIELD_INT:
        case LC_FIELD_LONG:
            k->type = f[i].kind == LC_FIELD_INT ? T_INT : T_LONG, k->hi = (long long)f[i].file_hi;
            k->lo = k->need & REQUIRED ? (long long)f[i].lo : 0;
            break;
        case LC_FIELD_FLOAT: k->type = T_FLOAT, k->fhi = f[i].file_hi, k->open = OPEN_HI; break;
        case LC_FIELD_BOOL:
        case LC_FIELD_BOOL_OFF: k->type = T_BOOL, k->hi = 1; break;
        case LC_FIELD_CHOICE: k->type = T_CHOICE, k->text = f[i].text; break;
        case LC_FIELD_TEXT: k->type = T_STRING, k->hi = (long long)f[i].size, k->text = f[i].text; break;
        }
    }
}

static const meta_key head_keys[] = {CONST("format", LC_CKPT_FORMAT), CONST("format_version", LC_CKPT_VERSION)};
static const meta_key step_key[] = {LONG("step", 0, 0, 1LL << 62, REQUIRED)};

/* The model key of fam (a constant: its name). */
static meta_part model_part(const lc_ckpt_fields *fam, meta_key *k) {
    *k = (meta_key)CONST("model", fam->model);
    return (meta_part){k, 1, 0};
}

lc_status lc_ckpt_fields_save(const char *path, const lc_ckpt_tensors *c, const lc_ckpt_fields *fam, const void *cfg,
                              long step, const lc_train_options *o) {
    meta_key *keys = calloc((size_t)fam->n_fields + 1, sizeof *keys), model;
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_status st;
    if (!keys || !meta) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    } else {
        lc_meta_keys_of_fields(fam->fields, fam->n_fields, keys);
        const meta_part head[] = {{head_keys, 2, 0}, model_part(fam, &model)}, own = {keys, fam->n_fields, 0},
                        steps = {step_key, 1, 0};
        lc_meta_format(head, 2, &step, NULL, meta); /* constants: the base is not read */
        lc_meta_format_append(&own, 1, cfg, NULL, meta);
        lc_meta_format_append(&steps, 1, &step, NULL, meta);
        lc_meta_format_append(&lc_meta_train_part, 1, o, NULL, meta);
        st = lc_ckpt_save_items(path, c, meta, NULL, 0);
    }
    free(keys), free(meta);
    return st;
}

lc_status lc_ckpt_fields_read(const lc_st_file *f, const lc_ckpt_fields *fam, void *cfg, long *step,
                              lc_train_options *o) {
    const meta_part head = {head_keys, 2, 0};
    char none = 0; /* constants: the base is not written */
    lc_status st = lc_meta_parse(f, &head, 1, &none, NULL);
    if (st) return st;
    const char *got = lc_st_get_meta(f, "model");
    if (!got || strcmp(got, fam->model) != 0)
        return got ? lc_fail(LC_ERR_FORMAT, "%s: a checkpoint of model '%.40s', not %s (model = %s)", lc_st_path(f),
                             got, fam->what, fam->model)
                   : lc_fail(LC_ERR_FORMAT, "%s: a checkpoint without metadata 'model', not %s", lc_st_path(f),
                             fam->what);
    meta_key *keys = calloc((size_t)fam->n_fields + 1, sizeof *keys);
    if (!keys) return lc_fail(LC_ERR_NOMEM, "%s: out of memory reading the metadata", lc_st_path(f));
    lc_meta_keys_of_fields(fam->fields, fam->n_fields, keys);
    const meta_part own = {keys, fam->n_fields, 0}, steps = {step_key, 1, 0};
    lc_train_options_default(o);
    st = lc_meta_parse(f, &own, 1, cfg, NULL);
    if (!st) st = lc_meta_parse(f, &steps, 1, step, NULL);
    if (!st) st = lc_meta_parse(f, &lc_meta_train_part, 1, o, NULL);
    free(keys);
    return st;
}
