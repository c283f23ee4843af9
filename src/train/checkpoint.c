/* Model checkpoints as safetensors: parameters under their model names, AdamW moments under
 * optim.m.<name> / optim.v.<name>, and the config, step and training options as string metadata.
 * The layout is documented in docs/checkpoint.md. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fastmath.h"
#include "model/lm.h"
#include "train/safetensors.h"

#define LC_CKPT_FORMAT "longctx"
#define LC_CKPT_VERSION "1"
#define META_MAX 64

typedef struct {
    lc_st_meta items[META_MAX];
    char values[META_MAX][LC_ATTN_SPEC_CHARS]; /* the longest value is the attention spec */
    int n;
} meta_list;

static void meta_put(meta_list *l, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_put(meta_list *l, const char *key, const char *fmt, ...) {
    assert(l->n < META_MAX && "raise META_MAX");
    if (l->n >= META_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->values[l->n], sizeof l->values[0], fmt, ap);
    va_end(ap);
    l->items[l->n].key = key;
    l->items[l->n].value = l->values[l->n];
    l->n++;
}

static void describe(const lc_model *m, const lc_train_options *o, meta_list *l) {
    const lc_config *c = &m->cfg;
    meta_put(l, "format", LC_CKPT_FORMAT);
    meta_put(l, "format_version", LC_CKPT_VERSION);
    meta_put(l, "model", "%s", c->model == LC_MODEL_XL ? "xl" : "vanilla");
    meta_put(l, "vocab", "%d", c->vocab);
    meta_put(l, "n_layer", "%d", c->n_layer);
    meta_put(l, "d_model", "%d", c->d_model);
    meta_put(l, "n_head", "%d", c->n_head);
    meta_put(l, "d_ff", "%d", c->d_ff);
    meta_put(l, "seq_len", "%d", c->seq_len);
    meta_put(l, "norm", "%s", c->norm == LC_NORM_PRE ? "pre" : "post");
    meta_put(l, "activation", "%s", c->activation == LC_ACT_GELU ? "gelu" : "relu");
    meta_put(l, "tied", "%d", c->tied);
    meta_put(l, "dropout", "%.9g", (double)c->dropout);
    meta_put(l, "attn", "%s", c->attn[0] ? c->attn : "full");
    meta_put(l, "qk_share", "%d", c->qk_share);
    meta_put(l, "attn_share", "%d", c->attn_share);
    meta_put(l, "objective", "%s", c->objective == LC_OBJECTIVE_MLM ? "mlm" : "clm");
    meta_put(l, "reversible", "%d", c->reversible);
    meta_put(l, "ffn_chunk", "%d", c->ffn_chunk);
    meta_put(l, "extra_tokens", "%d", c->extra_tokens);
    if (c->model == LC_MODEL_XL) {
        meta_put(l, "mem_len", "%d", c->mem_len);
        meta_put(l, "clamp_len", "%d", c->clamp_len);
        meta_put(l, "same_length", "%d", c->same_length);
        meta_put(l, "shared_uv", "%d", c->shared_uv);
        int rows = m->kv_mode ? 0 : m->mem_rows; /* inference state is not saved */
        meta_put(l, "state.memory_rows", "%d", rows);
        meta_put(l, "state.memory_batch", "%d", rows ? m->mem_B : 0);
    }
    meta_put(l, "step", "%ld", m->step);
    meta_put(l, "seed", "%llu", (unsigned long long)m->seed);
    meta_put(l, "train.steps", "%ld", o->steps);
    meta_put(l, "train.batch", "%d", o->batch);
    meta_put(l, "train.grad_accum", "%d", o->grad_accum);
    meta_put(l, "train.lr", "%.9g", (double)o->lr);
    meta_put(l, "train.min_lr", "%.9g", (double)o->min_lr);
    meta_put(l, "train.warmup", "%ld", o->warmup);
    meta_put(l, "train.weight_decay", "%.9g", (double)o->weight_decay);
    meta_put(l, "train.beta1", "%.9g", (double)o->beta1);
    meta_put(l, "train.beta2", "%.9g", (double)o->beta2);
    meta_put(l, "train.eps", "%.9g", (double)o->eps);
    meta_put(l, "train.clip", "%.9g", (double)o->clip);
    meta_put(l, "train.eval_every", "%ld", o->eval_every);
    meta_put(l, "train.eval_bytes", "%ld", o->eval_bytes);
    meta_put(l, "train.seed", "%llu", (unsigned long long)o->seed);
}

/* XL memory rows as contiguous [batch, rows, C] tensors "state.memory.<layer>" (so a resumed run
 * continues exactly); returns the buffer backing them (caller frees) and their count in *n_out
 * (-1 when out of memory). */
static float *memory_snapshot(const lc_model *m, lc_st_tensor *t, char (*names)[LC_NAME_MAX + 16], int *n_out) {
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

lc_status lc_checkpoint_save(const lc_model *m, const lc_train_options *o, const char *path) {
    /* Last line of defence (training already stops on a non-finite step): never write NaN or infinite
     * weights, least of all over a good checkpoint. lc_all_finite is in kernels/fastmath.h. */
    if (!lc_all_finite(m->params, m->ptab.total))
        return lc_fail(LC_ERR_NUMERIC, "%s: not saved: the weights hold NaN or infinity (training diverged)", path);
    int n = m->ptab.n;
    int L = m->cfg.n_layer;
    lc_st_tensor *t = calloc((size_t)3 * n + (size_t)L + (size_t)m->stab.n, sizeof *t);
    char(*names)[LC_NAME_MAX + 16] = calloc((size_t)2 * n + (size_t)L, sizeof *names);
    meta_list *meta = calloc(1, sizeof *meta);
    if (!t || !names || !meta) {
        free(t); free(names); free(meta);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    }
    const float *bases[3] = {m->params, m->adam_m, m->adam_v};
    for (int which = 0; which < 3; which++)
        for (int i = 0; i < n; i++) {
            const lc_slot *s = &m->ptab.slots[i];
            lc_st_tensor *x = &t[which * n + i];
            if (which == 0) {
                x->name = s->name;
            } else {
                char *nm = names[(which - 1) * n + i];
                snprintf(nm, sizeof names[0], "optim.%s.%s", which == 1 ? "m" : "v", s->name);
                x->name = nm;
            }
            x->dtype = LC_DT_F32;
            x->ndim = s->ndim;
            for (int d = 0; d < s->ndim; d++) x->shape[d] = s->shape[d];
            x->data = bases[which] + s->offset;
        }
    describe(m, o, meta);
    int n_mem = 0;
    float *mem = memory_snapshot(m, t + 3 * n, names + 2 * n, &n_mem);
    int n_state = 0;
    for (int i = 0; i < m->stab.n && n_mem >= 0; i++, n_state++) { /* attention kinds' state (not trained) */
        const lc_slot *s = &m->stab.slots[i];
        t[3 * n + n_mem + i] = (lc_st_tensor){s->name, LC_DT_F32, s->ndim, {s->shape[0], s->shape[1]},
                                              m->state + s->offset};
    }
    lc_status st = n_mem < 0 ? lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the XL memory", path)
                             : lc_st_write(path, t, 3 * n + n_mem + n_state, meta->items, meta->n);
    free(mem);
    free(t);
    free(names);
    free(meta);
    return st;
}

/* ---------------------------------------------------------------- loading */

static lc_status meta_long(const lc_st_file *f, const char *key, long lo, long hi, long *out) {
    const char *v = lc_st_get_meta(f, key);
    if (!v) return lc_fail(LC_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", lc_st_path(f), key);
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%s' is not an integer in %ld..%ld", lc_st_path(f), key, v,
                       lo, hi);
    *out = x;
    return LC_OK;
}

static lc_status meta_float(const lc_st_file *f, const char *key, float *out) {
    const char *v = lc_st_get_meta(f, key);
    if (!v) return lc_fail(LC_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", lc_st_path(f), key);
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x))
        return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%s' is not a number", lc_st_path(f), key, v);
    *out = (float)x;
    return LC_OK;
}

static lc_status meta_choice(const lc_st_file *f, const char *key, const char *a, const char *b, int *out) {
    const char *v = lc_st_get_meta(f, key);
    if (v && strcmp(v, a) == 0) { *out = 0; return LC_OK; }
    if (v && strcmp(v, b) == 0) { *out = 1; return LC_OK; }
    return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' must be '%s' or '%s'", lc_st_path(f), key, a, b);
}

static lc_status read_config(const lc_st_file *f, lc_config *c, long *step, uint64_t *seed) {
    const char *fmt = lc_st_get_meta(f, "format");
    if (!fmt || strcmp(fmt, LC_CKPT_FORMAT) != 0)
        return lc_fail(LC_ERR_FORMAT, "%s: not a longctx checkpoint (metadata 'format' is not '%s')", lc_st_path(f),
                       LC_CKPT_FORMAT);
    const char *ver = lc_st_get_meta(f, "format_version");
    if (!ver || strcmp(ver, LC_CKPT_VERSION) != 0)
        return lc_fail(LC_ERR_FORMAT, "%s: unsupported checkpoint version '%s'", lc_st_path(f), ver ? ver : "");
    const char *model = lc_st_get_meta(f, "model");
    if (!model || (strcmp(model, "vanilla") != 0 && strcmp(model, "xl") != 0))
        return lc_fail(LC_ERR_FORMAT, "%s: unsupported model '%s'", lc_st_path(f), model ? model : "");
    long v[7];
    const char *keys[] = {"vocab", "n_layer", "d_model", "n_head", "d_ff", "seq_len", "tied"};
    for (int i = 0; i < 7; i++) {
        lc_status st = meta_long(f, keys[i], 0, 1L << 30, &v[i]);
        if (st) return st;
    }
    memset(c, 0, sizeof *c);
    c->vocab = (int)v[0], c->n_layer = (int)v[1], c->d_model = (int)v[2], c->n_head = (int)v[3];
    c->d_ff = (int)v[4], c->seq_len = (int)v[5], c->tied = v[6] != 0;
    int norm = 0, act = 0;
    lc_status st;
    if ((st = meta_choice(f, "norm", "pre", "post", &norm))) return st;
    if ((st = meta_choice(f, "activation", "gelu", "relu", &act))) return st;
    if ((st = meta_float(f, "dropout", &c->dropout))) return st;
    c->model = strcmp(model, "xl") == 0 ? LC_MODEL_XL : LC_MODEL_VANILLA;
    if (c->model == LC_MODEL_XL) {
        const char *xk[] = {"mem_len", "clamp_len", "same_length", "shared_uv"};
        long xv[4];
        for (int i = 0; i < 4; i++)
            if ((st = meta_long(f, xk[i], 0, 1L << 24, &xv[i]))) return st;
        c->mem_len = (int)xv[0], c->clamp_len = (int)xv[1], c->same_length = xv[2] != 0, c->shared_uv = xv[3] != 0;
    }
    c->norm = norm ? LC_NORM_POST : LC_NORM_PRE;
    c->activation = act ? LC_ACT_RELU : LC_ACT_GELU;
    /* attention layout and objective (absent from older checkpoints: full attention, causal LM) */
    const char *attn = lc_st_get_meta(f, "attn");
    if (attn) {
        if (strlen(attn) >= sizeof c->attn) return lc_fail(LC_ERR_FORMAT, "%s: attn spec too long", lc_st_path(f));
        strcpy(c->attn, attn);
    }
    long share;
    if (lc_st_get_meta(f, "qk_share")) {
        if ((st = meta_long(f, "qk_share", 0, 1 << 20, &share))) return st;
        c->qk_share = (int)share;
    }
    if (lc_st_get_meta(f, "attn_share")) {
        if ((st = meta_long(f, "attn_share", 0, 1 << 20, &share))) return st;
        c->attn_share = (int)share;
    }
    if (lc_st_get_meta(f, "reversible")) {
        if ((st = meta_long(f, "reversible", 0, 1, &share))) return st;
        c->reversible = (int)share;
    }
    if (lc_st_get_meta(f, "ffn_chunk")) {
        if ((st = meta_long(f, "ffn_chunk", 0, 1 << 30, &share))) return st;
        c->ffn_chunk = (int)share;
    }
    if (lc_st_get_meta(f, "extra_tokens")) {
        if ((st = meta_long(f, "extra_tokens", 0, 65536, &share))) return st;
        c->extra_tokens = (int)share;
    }
    if (lc_st_get_meta(f, "objective")) {
        int mlm = 0;
        if ((st = meta_choice(f, "objective", "clm", "mlm", &mlm))) return st;
        c->objective = mlm ? LC_OBJECTIVE_MLM : LC_OBJECTIVE_CLM;
    }
    if (lc_config_validate(c)) return lc_fail(LC_ERR_FORMAT, "%s: bad model config: %s", lc_st_path(f), lc_last_error());
    long sd;
    if ((st = meta_long(f, "step", 0, 1L << 62, step))) return st;
    if ((st = meta_long(f, "seed", 0, 1L << 62, &sd))) return st;
    *seed = (uint64_t)sd;
    return LC_OK;
}

static lc_status read_options(const lc_st_file *f, lc_train_options *o) {
    lc_train_options_default(o);
    long x;
    lc_status st;
#define L(key, field, lo, hi) if ((st = meta_long(f, key, lo, hi, &x))) return st; o->field = x
#define F(key, field) if ((st = meta_float(f, key, &o->field))) return st
    L("train.steps", steps, 0, 1L << 40);
    L("train.batch", batch, 1, 1 << 20);
    L("train.grad_accum", grad_accum, 1, 1 << 20);
    L("train.warmup", warmup, 0, 1L << 40);
    L("train.eval_every", eval_every, 0, 1L << 40);
    L("train.eval_bytes", eval_bytes, 0, 1L << 50);
    L("train.seed", seed, 0, 1L << 62);
    F("train.lr", lr);
    F("train.min_lr", min_lr);
    F("train.weight_decay", weight_decay);
    F("train.beta1", beta1);
    F("train.beta2", beta2);
    F("train.eps", eps);
    F("train.clip", clip);
#undef L
#undef F
    return LC_OK;
}

static lc_status read_tensors(const lc_st_file *f, lc_model *m) {
    char nm[LC_NAME_MAX + 16];
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        lc_status st = lc_st_read(f, s->name, LC_DT_F32, s->ndim, s->shape, m->params + s->offset);
        if (st) return st;
        for (int which = 0; which < 2; which++) { /* moments are optional (weights-only exports) */
            snprintf(nm, sizeof nm, "optim.%s.%s", which ? "v" : "m", s->name);
            if (!lc_st_find(f, nm)) continue;
            st = lc_st_read(f, nm, LC_DT_F32, s->ndim, s->shape, (which ? m->adam_v : m->adam_m) + s->offset);
            if (st) return st;
        }
    }
    for (int i = 0; i < m->stab.n; i++) { /* kinds' state */
        const lc_slot *s = &m->stab.slots[i];
        lc_status st = lc_st_read(f, s->name, LC_DT_F32, s->ndim, s->shape, m->state + s->offset);
        if (st) return st;
    }
    return LC_OK;
}

/* Restores the XL memory saved with a training run when it fits the model as built (a resume); an
 * evaluation or sampling model of another shape starts without memory instead. */
static lc_status read_memory(const lc_st_file *f, lc_model *m) {
    if (m->cfg.model != LC_MODEL_XL || !lc_st_get_meta(f, "state.memory_rows")) return LC_OK;
    long rows, batch;
    lc_status st;
    if ((st = meta_long(f, "state.memory_rows", 0, 1L << 24, &rows))) return st;
    if ((st = meta_long(f, "state.memory_batch", 0, 1L << 24, &batch))) return st;
    if (rows == 0 || rows > m->cap_M || batch > m->max_B) return LC_OK;
    int C = m->cfg.d_model;
    long shape[3] = {batch, rows, C};
    float *buf = malloc(sizeof(float) * (size_t)(batch * rows * C));
    if (!buf) return lc_fail(LC_ERR_NOMEM, "out of memory reading the XL memory");
    char nm[64];
    for (int l = 0; l < m->cfg.n_layer && !st; l++) {
        snprintf(nm, sizeof nm, "state.memory.%d", l);
        st = lc_st_read(f, nm, LC_DT_F32, 3, shape, buf);
        for (long b = 0; b < batch && !st; b++)
            memcpy(m->mem[l] + (size_t)b * m->cap_M * C, buf + (size_t)b * rows * C, sizeof(float) * rows * C);
    }
    free(buf);
    if (st) return st;
    m->mem_rows = (int)rows;
    m->mem_B = (int)batch;
    return LC_OK;
}

lc_status lc_checkpoint_load(const char *path, int max_batch, lc_model **out, lc_train_options *opts) {
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    lc_config cfg;
    long step = 0;
    uint64_t seed = 0;
    lc_model *m = NULL;
    if ((st = read_config(f, &cfg, &step, &seed))) goto done;
    lc_train_options saved;
    if ((st = read_options(f, &saved))) goto done;
    if (opts) *opts = saved;
    if ((st = lc_model_create(&cfg, max_batch > 0 ? max_batch : saved.batch, seed, &m))) goto done;
    if ((st = read_tensors(f, m))) goto done;
    if ((st = read_memory(f, m))) goto done;
    m->step = step;
done:
    lc_st_close(f);
    if (st) lc_model_free(m);
    else *out = m;
    return st;
}
