/* A model's tensor list in a safetensors checkpoint (see checkpoint_tensors.h): listing for the writer,
 * the whole-table check and the reading, shared by the language model's and HIBERT's checkpoints. */
#include "train/checkpoint_tensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fastmath.h"

static float *tensor_at(const lc_ckpt_tensors *c, const lc_tensor *t, float *base) {
    return base + (lc_tensor_is_param(t) ? c->ptab->slots : c->stab->slots)[t->slot].offset;
}

int lc_ckpt_list_params(const lc_ckpt_tensors *c, lc_st_tensor *t, char (*names)[LC_CKPT_NAME_CAP]) {
    float *bases[3] = {c->params, c->adam_m, c->adam_v};
    int k = 0, n = c->ptab->n;
    for (int which = 0; which < 3; which++)
        for (int i = 0; i < c->list->n; i++) {
            const lc_tensor *x = &c->list->t[i];
            if (!lc_tensor_is_param(x)) continue;
            const char *name = x->name;
            if (which) {
                snprintf(names[k - n], LC_CKPT_NAME_CAP, "optim.%s.%s", which == 1 ? "m" : "v", x->name);
                name = names[k - n];
            }
            t[k++] = (lc_st_tensor){name, LC_DT_F32, x->ndim, {x->shape[0], x->shape[1]}, tensor_at(c, x, bases[which])};
        }
    return k;
}

int lc_ckpt_list_state(const lc_ckpt_tensors *c, lc_st_tensor *t) {
    int k = 0;
    for (int i = 0; i < c->list->n; i++) {
        const lc_tensor *x = &c->list->t[i];
        if (!lc_tensor_is_param(x))
            t[k++] = (lc_st_tensor){x->name, LC_DT_F32, x->ndim, {x->shape[0], x->shape[1]}, tensor_at(c, x, c->state)};
    }
    return k;
}

static int compare_tensors(const void *a, const void *b) {
    return strcmp((*(const lc_tensor *const *)a)->name, (*(const lc_tensor *const *)b)->name);
}

/* The first tensor of the file that the model does not have (the file holds more than it expects). */
static lc_status name_stray_tensor(const lc_st_file *f, const lc_tensor_list *list,
                                   int (*is_extra)(const char *, const void *), const void *user) {
    const lc_tensor **sorted = malloc(sizeof *sorted * (size_t)(list->n + 1));
    if (!sorted) return lc_fail(LC_ERR_NOMEM, "%s: out of memory checking the tensors", lc_st_path(f));
    for (int i = 0; i < list->n; i++) sorted[i] = &list->t[i];
    qsort(sorted, (size_t)list->n, sizeof *sorted, compare_tensors);
    const char *stray = NULL;
    for (int i = 0; i < lc_st_count(f) && !stray; i++) {
        const char *name = lc_st_at(f, i)->name;
        if (is_extra && is_extra(name, user)) continue;
        const int moment = strncmp(name, "optim.m.", 8) == 0 || strncmp(name, "optim.v.", 8) == 0;
        lc_tensor key;
        snprintf(key.name, sizeof key.name, "%s", moment ? name + 8 : name);
        const lc_tensor *key_ptr = &key;
        const lc_tensor **hit = bsearch(&key_ptr, sorted, (size_t)list->n, sizeof *sorted, compare_tensors);
        if (!hit || strlen(moment ? name + 8 : name) >= sizeof key.name || (moment && !lc_tensor_is_param(*hit)))
            stray = name;
    }
    free(sorted);
    if (!stray)
        return lc_fail(LC_ERR_FORMAT, "%s: the file holds %d tensors, not the number its metadata implies",
                       lc_st_path(f), lc_st_count(f));
    return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s is not part of the model the metadata describes", lc_st_path(f),
                   stray);
}

lc_status lc_ckpt_check_table(const lc_st_file *f, const lc_tensor_list *list, int extra,
                              int (*is_extra)(const char *name, const void *user), const void *user) {
    char nm[LC_CKPT_NAME_CAP];
    lc_status st;
    int expected = extra;
    for (int i = 0; i < list->n; i++) {
        const lc_tensor *t = &list->t[i];
        if ((st = lc_st_expect(f, t->name, LC_DT_F32, t->ndim, t->shape))) return st;
        expected++;
        for (int which = 0; which < 2 && lc_tensor_is_param(t); which++) { /* optional: weights-only exports */
            snprintf(nm, sizeof nm, "optim.%s.%s", which ? "v" : "m", t->name);
            if (!lc_st_find(f, nm)) continue;
            if ((st = lc_st_expect(f, nm, LC_DT_F32, t->ndim, t->shape))) return st;
            expected++;
        }
    }
    return lc_st_count(f) == expected ? LC_OK : name_stray_tensor(f, list, is_extra, user);
}

lc_status lc_ckpt_check_implied(const lc_st_file *f, lc_status built, lc_tensor_list *list, int extra,
                                int (*is_extra)(const char *name, const void *user), const void *user) {
    if (built) {
        char why[400];
        snprintf(why, sizeof why, "%s", lc_last_error());
        return lc_fail(built == LC_ERR_NOMEM ? built : LC_ERR_FORMAT, "%s: bad model config: %s", lc_st_path(f), why);
    }
    const lc_status st = lc_ckpt_check_table(f, list, extra, is_extra, user);
    lc_tensors_free(list);
    return st;
}

lc_status lc_ckpt_read_tensors(const lc_st_file *f, const lc_ckpt_tensors *c, int moments) {
    char nm[LC_CKPT_NAME_CAP];
    for (int i = 0; i < c->list->n; i++) {
        const lc_tensor *t = &c->list->t[i];
        const int param = lc_tensor_is_param(t);
        float *bases[3] = {param ? c->params : c->state, c->adam_m, c->adam_v};
        for (int which = 0; which < (param && moments ? 3 : 1); which++) {
            const char *name = t->name;
            if (which) {
                snprintf(nm, sizeof nm, "optim.%s.%s", which == 1 ? "m" : "v", t->name);
                if (!lc_st_find(f, nm)) continue;
                name = nm;
            }
            float *dst = tensor_at(c, t, bases[which]);
            lc_status st = lc_st_read(f, name, LC_DT_F32, t->ndim, t->shape, dst);
            if (st) return st;
            const size_t n = lc_tensor_count(t);
            if (!lc_all_finite(dst, n))
                return lc_fail(LC_ERR_FORMAT, "%s: tensor %s holds NaN or infinity", lc_st_path(f), name);
            for (size_t j = 0; which == 2 && j < n; j++)
                if (dst[j] < 0) return lc_fail(LC_ERR_FORMAT, "%s: tensor %s holds a negative second moment", lc_st_path(f), name);
        }
    }
    return LC_OK;
}
