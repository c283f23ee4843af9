/* What every model family's checkpoint shares (train/meta_table.h): writing the tensor list and a key
 * table's metadata in one atomic file, reading the metadata with the family check and the config's
 * validation, the one refusal of a model that the metadata describes but cannot be built, and the check
 * of a checkpoint's path before a run. The families' files (src/models/<family>/checkpoint_<family>.c)
 * keep only their key tables and what is theirs alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fastmath.h"
#include "train/meta_table.h"

/* The two parts of fam's table: its own keys, the training options. */
static void parts_of(const meta_family *fam, meta_part parts[2]) {
    lc_meta_parts_with_train(parts, fam->keys, fam->n, fam->opts_at);
}

const char *lc_meta_family_key(const meta_family *fam, int i) {
    meta_part parts[2];
    parts_of(fam, parts);
    return lc_meta_key_at(parts, 2, i, NULL);
}

void lc_meta_family_format(const meta_family *fam, const void *base, lc_ckpt_meta_strings *out) {
    meta_part parts[2];
    parts_of(fam, parts);
    lc_meta_format(parts, 2, base, NULL, out);
}

lc_status lc_ckpt_save_family(const char *path, const lc_ckpt_tensors *c, const meta_family *fam, const void *base,
                              const lc_st_meta *extra, int n_extra) {
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    if (!meta) return lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    lc_meta_family_format(fam, base, meta);
    lc_status st = lc_ckpt_save_items(path, c, meta, extra, n_extra);
    free(meta);
    return st;
}

lc_status lc_ckpt_save_items(const char *path, const lc_ckpt_tensors *c, const lc_ckpt_meta_strings *meta,
                             const lc_st_meta *extra, int n_extra) {
    if (!lc_all_finite(c->params, c->ptab->total))
        return lc_fail(LC_ERR_NUMERIC, "%s: not saved: the weights hold NaN or infinity (training diverged)", path);
    const int n = c->ptab->n;
    lc_st_tensor *t = calloc((size_t)3 * n + (size_t)c->stab->n + 1, sizeof *t);
    char(*names)[LC_CKPT_NAME_CAP] = calloc((size_t)2 * n + 1, sizeof *names);
    lc_st_meta *items = calloc(LC_CKPT_META_MAX + (size_t)n_extra, sizeof *items);
    lc_status st;
    if (!t || !names || !items) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    } else {
        int k = lc_ckpt_list_params(c, t, names);
        k += lc_ckpt_list_state(c, t + k);
        memcpy(items, meta->items, sizeof *items * (size_t)meta->n);
        if (n_extra > 0) memcpy(items + meta->n, extra, sizeof *items * (size_t)n_extra);
        st = lc_st_write(path, t, k, items, meta->n + (n_extra > 0 ? n_extra : 0));
    }
    free(t), free(names), free(items);
    return st;
}

lc_status lc_ckpt_parse_family(const lc_st_file *f, lc_ckpt_family family, const char *model, const char *what,
                               const meta_family *fam, void *base, lc_status (*validate)(const void *base)) {
    const char *path = lc_st_path(f), *format = lc_st_get_meta(f, "format"), *got = lc_st_get_meta(f, "model");
    lc_status st = lc_ckpt_check_family(f, family);
    if (st) return st;
    if (format && strcmp(format, LC_CKPT_FORMAT) == 0 && (!got || strcmp(got, model) != 0))
        return got ? lc_fail(LC_ERR_FORMAT, "%s: a checkpoint of model '%.40s', not %s (model = %s)", path, got, what,
                             model)
                   : lc_fail(LC_ERR_FORMAT, "%s: a checkpoint without metadata 'model', not %s", path, what);
    meta_part parts[2];
    parts_of(fam, parts);
    if ((st = lc_meta_parse(f, parts, 2, base, NULL))) return st;
    if (validate(base)) {
        char why[400];
        snprintf(why, sizeof why, "%s", lc_last_error());
        return lc_fail(LC_ERR_FORMAT, "%s: bad model config: %s", path, why);
    }
    return LC_OK;
}

lc_status lc_ckpt_read_family(const lc_st_file *f, const lc_ckpt_tensors *c, int moments) {
    const lc_status st = lc_ckpt_check_table(f, c->list, 0, NULL, NULL);
    return st ? st : lc_ckpt_read_tensors(f, c, moments);
}

lc_status lc_ckpt_build_failed(const char *path, lc_status st) {
    char why[400];
    snprintf(why, sizeof why, "%s", lc_last_error());
    return lc_fail(st == LC_ERR_NOMEM ? st : LC_ERR_FORMAT, "%s: cannot build the model it describes: %s", path, why);
}

int lc_ckpt_is_model(const char *path, const char *model) {
    lc_st_file *f;
    if (lc_st_open(path, &f)) {
        lc_clear_error();
        return 0;
    }
    const char *got = lc_st_get_meta(f, "model");
    const int yes = got && strcmp(got, model) == 0;
    lc_st_close(f);
    return yes;
}

lc_status lc_checkpoint_check_path(const char *path) {
    lc_clear_error();
    return lc_st_check_path(path);
}
