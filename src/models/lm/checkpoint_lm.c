/* Model checkpoints as safetensors: the tensors of the model's tensor list (nn/tensors.h) under their
 * names, AdamW moments under optim.m.<name> / optim.v.<name>, the XL memory, and the metadata of
 * train/checkpoint_meta.h. Loading checks the metadata and then the file's whole tensor table against
 * the list before the model is created, so nothing is allocated that the file's bytes do not back.
 * The layout is documented in docs/reference/checkpoint.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "kernels/fastmath.h"
#include "models/lm/lm.h"
#include "train/checkpoint_meta.h"
#include "train/checkpoint_tensors.h"
#include "train/safetensors.h"

#define NAME_CAP LC_CKPT_NAME_CAP

/* XL memory rows as contiguous [batch, rows, C] tensors "state.memory.<layer>" (so a resumed run
 * continues exactly); returns the buffer backing them (caller frees) and their count in *n_out
 * (-1 when out of memory). */
static float *memory_snapshot(const lc_model *m, lc_st_tensor *t, char (*names)[NAME_CAP], int *n_out) {
    *n_out = 0;
    if (m->cfg.model != LC_MODEL_XL || m->mem_rows == 0 || m->kv_mode) return NULL;
    int L = m->cfg.n_layer, B = m->mem_B, R = m->mem_rows, C = m->cfg.d_model;
    size_t per = (size_t)B * R * C;
    float *buf = malloc(sizeof(float) * per * (size_t)L);
    if (!buf) { *n_out = -1; return NULL; }
    for (int l = 0; l < L; l++) {
        for (int b = 0; b < B; b++)
            memcpy(buf + per * l + (size_t)b * R * C, m->mem[l] + (size_t)b * m->cap_M * C, sizeof(float) * R * C);
        snprintf(names[l], sizeof names[0], "state.memory.%d", l);
        t[l] = (lc_st_tensor){names[l], LC_DT_F32, 3, {B, R, C}, buf + per * l};
    }
    *n_out = L;
    return buf;
}

static lc_ckpt_tensors buffers(const lc_model *m) {
    return (lc_ckpt_tensors){&m->tensors, &m->ptab, &m->stab, m->params, m->adam_m, m->adam_v, m->state};
}

lc_status lc_checkpoint_save(const lc_model *m, const lc_train_options *o, const char *path) {
    lc_clear_error();
    /* Last line of defence (training already stops on a non-finite step): never write NaN or infinite
     * weights, least of all over a good checkpoint. lc_all_finite is in kernels/fastmath.h. */
    if (!lc_all_finite(m->params, m->ptab.total))
        return lc_fail(LC_ERR_NUMERIC, "%s: not saved: the weights hold NaN or infinity (training diverged)", path);
    const int n = m->ptab.n, L = m->cfg.n_layer;
    lc_st_tensor *t = calloc((size_t)3 * n + (size_t)L + (size_t)m->stab.n, sizeof *t);
    char(*names)[NAME_CAP] = calloc((size_t)2 * n + (size_t)L, sizeof *names);
    lc_ckpt_meta *h = calloc(1, sizeof *h);
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    if (!t || !names || !h || !meta) {
        free(t), free(names), free(h), free(meta);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    }
    const lc_ckpt_tensors bufs = buffers(m);
    int k = lc_ckpt_list_params(&bufs, t, names); /* parameters, first moments, second moments */
    int n_mem = 0;
    float *mem = memory_snapshot(m, t + k, names + 2 * n, &n_mem);
    k += n_mem > 0 ? n_mem : 0;
    k += lc_ckpt_list_state(&bufs, t + k); /* attention kinds' state (not trained) */
    h->cfg = m->cfg;
    h->opts = *o;
    h->step = m->step;
    h->seed = m->seed;
    if (m->cfg.model == LC_MODEL_XL && !m->kv_mode && m->mem_rows > 0) /* inference state is not saved */
        h->memory_rows = m->mem_rows, h->memory_batch = m->mem_B;
    lc_ckpt_meta_format(h, meta);
    lc_status st = n_mem < 0 ? lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the XL memory", path)
                             : lc_st_write(path, t, k, meta->items, meta->n);
    free(mem);
    free(t);
    free(names);
    free(h);
    free(meta);
    return st;
}

lc_status lc_checkpoint_check_path(const char *path) {
    lc_clear_error();
    return lc_st_check_path(path);
}

/* ---------------------------------------------------------------- the data record */

uint64_t lc_data_hash(const uint8_t *bytes, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ bytes[i]) * 1099511628211ULL;
    return h;
}

void lc_data_record_set(lc_data_record *r, const char *path, const lc_corpus *c) {
    memset(r, 0, sizeof *r);
    char *abs = path ? realpath(path, NULL) : NULL;
    if (abs && strlen(abs) < sizeof r->path && lc_utf8_valid(abs, strlen(abs))) strcpy(r->path, abs);
    free(abs);
    r->size = (long)c->size;
    r->hash = lc_data_hash(c->bytes, c->size);
    r->split = c->mode;
}

/* ---------------------------------------------------------------- loading */

/* The XL memory tensors the metadata says were saved. */
static int is_memory(const char *name, const void *user) {
    const lc_ckpt_meta *h = user;
    int l = -1, used = 0;
    return sscanf(name, "state.memory.%d%n", &l, &used) == 1 && !name[used] && l >= 0 && l < h->cfg.n_layer &&
           h->memory_rows > 0;
}

/* The list's tensors, and the XL memory when the metadata says it was saved, and nothing else (frees the list). */
static lc_status check_tensor_table(const lc_st_file *f, const lc_ckpt_meta *h, lc_status built, lc_tensor_list *list) {
    char nm[NAME_CAP];
    lc_status st;
    const long mem_shape[3] = {h->memory_batch, h->memory_rows, h->cfg.d_model};
    for (int l = 0; l < h->cfg.n_layer && h->memory_rows > 0 && !built; l++) {
        snprintf(nm, sizeof nm, "state.memory.%d", l);
        if ((st = lc_st_expect(f, nm, LC_DT_F32, 3, mem_shape))) {
            lc_tensors_free(list);
            return st;
        }
    }
    return lc_ckpt_check_implied(f, built, list, h->memory_rows > 0 ? h->cfg.n_layer : 0, is_memory, h);
}

/* The tensor list of the configuration the metadata describes, checked against the file. */
static lc_status check_tensors(const lc_st_file *f, const lc_ckpt_meta *h) {
    const lc_config *c = &h->cfg;
    lc_attn_layer *layers = malloc(sizeof *layers * (size_t)c->n_layer);
    if (!layers) return lc_fail(LC_ERR_NOMEM, "%s: out of memory checking the tensors", lc_st_path(f));
    char err[400];
    lc_status st = LC_OK;
    lc_tensor_list list;
    if (lc_attn_spec_build(c->attn[0] ? c->attn : "full", c->n_layer, c->n_head, c->d_model / c->n_head,
                           lc_config_attn_keys(c), layers, err, sizeof err))
        st = lc_fail(LC_ERR_FORMAT, "%s: bad model config: %s", lc_st_path(f), err);
    else
        st = check_tensor_table(f, h, lc_tensors_build(c, layers, &list), &list);
    free(layers);
    return st;
}

lc_status lc_ckpt_read_memory(const lc_st_file *f, const lc_ckpt_meta *h, lc_model *m, long first, int count) {
    const int rows = h->memory_rows, C = m->cfg.d_model;
    if (m->cfg.model != LC_MODEL_XL || rows == 0 || rows > m->cap_M || count > m->max_B) return LC_OK;
    char nm[NAME_CAP];
    for (int l = 0; l < m->cfg.n_layer; l++) {
        snprintf(nm, sizeof nm, "state.memory.%d", l);
        /* present with shape [memory_batch, rows, C]: checked */
        const float *src = (const float *)lc_st_find(f, nm)->data + (size_t)first * (size_t)rows * (size_t)C;
        if (!lc_all_finite(src, (size_t)count * rows * C))
            return lc_fail(LC_ERR_FORMAT, "%s: tensor %s holds NaN or infinity", lc_st_path(f), nm);
        for (int b = 0; b < count; b++)
            memcpy(m->mem[l] + (size_t)b * m->cap_M * C, src + (size_t)b * rows * C, sizeof(float) * rows * C);
    }
    m->mem_rows = rows;
    m->mem_B = count;
    return LC_OK;
}

/* A model that the checked metadata describes but that cannot be built (an attention kind refusing the
 * shapes, or memory) is still a fault of the file: say which. */
static lc_status create_model(const lc_st_file *f, const lc_ckpt_meta *h, int max_batch, lc_model **m) {
    lc_status st = lc_model_create(&h->cfg, max_batch > 0 ? max_batch : h->opts.batch, h->seed, m);
    if (!st) return LC_OK;
    char why[400];
    snprintf(why, sizeof why, "%s", lc_last_error());
    if (st == LC_ERR_NOMEM) return lc_fail(st, "%s: %s", lc_st_path(f), why);
    return lc_fail(LC_ERR_FORMAT, "%s: cannot build the model it describes: %s", lc_st_path(f), why);
}

lc_status lc_checkpoint_load(const char *path, int max_batch, lc_model **out, lc_train_options *opts) {
    lc_clear_error();
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    lc_model *m = NULL;
    lc_ckpt_meta *h = malloc(sizeof *h);
    if (!h) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = lc_ckpt_meta_parse(f, h);
    if (!st) st = check_tensors(f, h);
    if (!st) st = create_model(f, h, max_batch, &m);
    if (!st) {
        const lc_ckpt_tensors bufs = buffers(m);
        st = lc_ckpt_read_tensors(f, &bufs, 1);
    }
    if (!st) st = lc_ckpt_read_memory(f, h, m, 0, h->memory_batch);
    if (!st) {
        m->step = h->step;
        if (opts) *opts = h->opts;
        *out = m;
    } else {
        lc_model_free(m);
    }
    free(h);
    lc_st_close(f);
    return st;
}
