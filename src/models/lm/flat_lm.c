/* The binding API (include/longctx/flat.h): configuration and training options by name, the model's
 * tensors by index, logits into the caller's buffer, byte-at-a-time generation, evaluation of a file and
 * training on a file with a callback that gets plain doubles. Nothing here computes anything new: every
 * call is a thin layer over the public API and the model's own tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/rng.h"
#include "core/status.h"
#include "kernels/fastmath.h"
#include "longctx/flat.h"
#include "models/lm/lm.h"

/* ---------------------------------------------------------------- named fields */
typedef enum { F_INT, F_LONG, F_U64, F_FLOAT, F_BOOL, F_SPEC, F_LR_SCALE, F_NORM, F_ACT, F_MODEL, F_OBJ, F_PREC } field_type;

typedef struct {
    const char *name;  /* the struct field */
    const char *alias; /* the CLI flag without "--" and with '_' for '-', or NULL */
    field_type type;
    size_t offset;
} field;

#define CFG(n, a, t) {#n, a, t, offsetof(lc_config, n)}
static const field config_fields[] = {
    CFG(vocab, NULL, F_INT),           CFG(n_layer, "layers", F_INT),      CFG(d_model, "dim", F_INT),
    CFG(n_head, "heads", F_INT),       CFG(d_ff, "ffn", F_INT),            CFG(seq_len, "seg_len", F_INT),
    CFG(norm, NULL, F_NORM),           CFG(activation, NULL, F_ACT),       CFG(tied, NULL, F_BOOL),
    CFG(dropout, NULL, F_FLOAT),       CFG(model, NULL, F_MODEL),          CFG(mem_len, NULL, F_INT),
    CFG(clamp_len, NULL, F_INT),       CFG(same_length, NULL, F_BOOL),     CFG(shared_uv, NULL, F_BOOL),
    CFG(attn, NULL, F_SPEC),           CFG(qk_share, "share_qk", F_INT),   CFG(attn_share, "share_attn", F_INT),
    CFG(objective, NULL, F_OBJ),       CFG(reversible, NULL, F_BOOL),      CFG(ffn_chunk, NULL, F_INT),
    CFG(extra_tokens, NULL, F_INT),    CFG(precision, NULL, F_PREC),
};
#define OPT(n, t) {#n, NULL, t, offsetof(lc_train_options, n)}
static const field option_fields[] = {
    OPT(steps, F_LONG),   OPT(stop_after, F_LONG), OPT(batch, F_INT),        OPT(grad_accum, F_INT),
    OPT(lr, F_FLOAT),     OPT(min_lr, F_FLOAT),    OPT(warmup, F_LONG),      OPT(weight_decay, F_FLOAT),
    OPT(beta1, F_FLOAT),  OPT(beta2, F_FLOAT),     OPT(eps, F_FLOAT),        OPT(clip, F_FLOAT),
    OPT(eval_every, F_LONG), OPT(eval_bytes, F_LONG), OPT(seed, F_U64),     OPT(lr_scale, F_LR_SCALE),
};
#define N_CONFIG (int)(sizeof config_fields / sizeof config_fields[0])
#define N_OPTIONS (int)(sizeof option_fields / sizeof option_fields[0])

/* The names of the enumerated fields' values, by value. */
static const char *const norm_names[] = {"pre", "post"}, *const act_names[] = {"gelu", "relu"},
                         *const model_names[] = {"vanilla", "xl"}, *const obj_names[] = {"clm", "mlm"},
                         *const prec_names[] = {"fp32", "bf16"};

static const char *const *enum_names(field_type t) {
    switch (t) {
    case F_NORM: return norm_names;
    case F_ACT: return act_names;
    case F_MODEL: return model_names;
    case F_OBJ: return obj_names;
    case F_PREC: return prec_names;
    default: return NULL;
    }
}

static lc_value_kind kind_of(field_type t) {
    switch (t) {
    case F_INT: case F_LONG: case F_U64: return LC_VALUE_INT;
    case F_FLOAT: return LC_VALUE_FLOAT;
    case F_BOOL: return LC_VALUE_BOOL;
    default: return LC_VALUE_STRING;
    }
}

/* key with any leading "--" removed and '-' turned into '_' into out[64]; 0 when too long. */
static int normalize(const char *key, char out[64]) {
    while (*key == '-') key++;
    size_t n = strlen(key);
    if (n >= 64) return 0;
    for (size_t i = 0; i <= n; i++) out[i] = key[i] == '-' ? '_' : key[i];
    return 1;
}

static const field *find(const field *f, int n, const char *key) {
    char k[64];
    if (!key || !normalize(key, k)) return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(f[i].name, k) == 0 || (f[i].alias && strcmp(f[i].alias, k) == 0)) return &f[i];
    return NULL;
}

/* Comma-separated names of the keys, for messages. */
static void key_list(const field *f, int n, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", f[i].name);
}

static int parse_bool(const char *v, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(v, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

static lc_status set_field(void *base, const field *f, const char *what, const char *key, const char *value,
                           int invert) {
    char *p = (char *)base + f->offset, *end;
    if (!value) return lc_fail(LC_ERR_ARG, "%s %s: no value", what, key);
    errno = 0;
    switch (f->type) {
    case F_INT: case F_LONG: {
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || (f->type == F_INT && (v < -2147483647L - 1 || v > 2147483647L)))
            return lc_fail(LC_ERR_ARG, "%s %s: '%s' is not an integer", what, key, value);
        if (f->type == F_INT) *(int *)p = (int)v;
        else *(long *)p = v;
        return LC_OK;
    }
    case F_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end || value[strspn(value, " \t")] == '-')
            return lc_fail(LC_ERR_ARG, "%s %s: '%s' is not an integer 0..2^64-1", what, key, value);
        *(uint64_t *)p = (uint64_t)v;
        return LC_OK;
    }
    case F_FLOAT: {
        double v = strtod(value, &end);
        if (errno || end == value || *end) return lc_fail(LC_ERR_ARG, "%s %s: '%s' is not a number", what, key, value);
        *(float *)p = (float)v;
        return LC_OK;
    }
    case F_BOOL: {
        int v;
        if (!parse_bool(value, &v)) return lc_fail(LC_ERR_ARG, "%s %s: '%s' is not a boolean (0/1)", what, key, value);
        *(int *)p = invert ? !v : v;
        return LC_OK;
    }
    case F_SPEC:
        if (strlen(value) >= LC_ATTN_SPEC_CHARS)
            return lc_fail(LC_ERR_ARG, "%s %s: longer than %d characters", what, key, LC_ATTN_SPEC_CHARS - 1);
        strcpy(p, value);
        return LC_OK;
    case F_LR_SCALE: {
        lc_status st = lc_lr_scale_check(value);
        if (st) {
            char why[256];
            snprintf(why, sizeof why, "%s", lc_last_error()); /* lc_fail rewrites the message it would read */
            return lc_fail(st, "%s %s: %s", what, key, why);
        }
        strcpy(p, value);
        return LC_OK;
    }
    default: {
        const char *const *names = enum_names(f->type);
        for (int i = 0; i < 2; i++)
            if (strcmp(value, names[i]) == 0) return *(int *)p = i, LC_OK;
        return lc_fail(LC_ERR_ARG, "%s %s must be %s or %s, got '%s'", what, key, names[0], names[1], value);
    }
    }
}

static lc_status get_field(const void *base, const field *f, const char *key, char *buf, size_t cap, int invert) {
    const char *p = (const char *)base + f->offset;
    if (!buf || cap == 0) return lc_fail(LC_ERR_ARG, "%s: no buffer", key);
    int n;
    switch (f->type) {
    case F_INT: n = snprintf(buf, cap, "%d", *(const int *)p); break;
    case F_LONG: n = snprintf(buf, cap, "%ld", *(const long *)p); break;
    case F_U64: n = snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case F_FLOAT: n = snprintf(buf, cap, "%.9g", (double)*(const float *)p); break;
    case F_BOOL: n = snprintf(buf, cap, "%d", invert ? !*(const int *)p : *(const int *)p != 0); break;
    case F_SPEC:
    case F_LR_SCALE: n = snprintf(buf, cap, "%s", p); break;
    default: {
        int v = *(const int *)p;
        n = snprintf(buf, cap, "%s", v == 0 || v == 1 ? enum_names(f->type)[v] : "?");
    }
    }
    if (n < 0 || (size_t)n >= cap) return lc_fail(LC_ERR_ARG, "%s: a buffer of %zu bytes is too small", key, cap);
    return LC_OK;
}

lc_config *lc_config_new(void) {
    lc_config *c = malloc(sizeof *c);
    if (c) lc_config_default(c);
    return c;
}
void lc_config_free(lc_config *cfg) { free(cfg); }

const char *lc_config_key(int i, lc_value_kind *kind) {
    if (i < 0 || i >= N_CONFIG) return NULL;
    if (kind) *kind = kind_of(config_fields[i].type);
    return config_fields[i].name;
}

/* "untied" is the CLI's flag for tied = 0. */
static int is_untied(const char *key) {
    char k[64];
    return key && normalize(key, k) && strcmp(k, "untied") == 0;
}

lc_status lc_config_set_str(lc_config *cfg, const char *key, const char *value) {
    lc_clear_error();
    int inv = is_untied(key);
    const field *f = inv ? find(config_fields, N_CONFIG, "tied") : find(config_fields, N_CONFIG, key);
    if (!f) {
        char names[1024];
        key_list(config_fields, N_CONFIG, names, sizeof names);
        return lc_fail(LC_ERR_ARG, "unknown config key '%s' (known: %s; or their CLI flag names)", key ? key : "(null)",
                       names);
    }
    return set_field(cfg, f, "config", key, value, inv);
}

lc_status lc_config_get_str(const lc_config *cfg, const char *key, char *buf, size_t cap) {
    lc_clear_error();
    int inv = is_untied(key);
    const field *f = inv ? find(config_fields, N_CONFIG, "tied") : find(config_fields, N_CONFIG, key);
    if (!f) return lc_fail(LC_ERR_ARG, "unknown config key '%s'", key ? key : "(null)");
    return get_field(cfg, f, key, buf, cap, inv);
}

lc_train_options *lc_train_options_new(void) {
    lc_train_options *o = malloc(sizeof *o);
    if (o) lc_train_options_default(o);
    return o;
}
void lc_train_options_free(lc_train_options *o) { free(o); }

const char *lc_train_options_key(int i, lc_value_kind *kind) {
    if (i < 0 || i >= N_OPTIONS) return NULL;
    if (kind) *kind = kind_of(option_fields[i].type);
    return option_fields[i].name;
}

lc_status lc_train_options_set_str(lc_train_options *o, const char *key, const char *value) {
    lc_clear_error();
    const field *f = find(option_fields, N_OPTIONS, key);
    if (!f) {
        char names[1024];
        key_list(option_fields, N_OPTIONS, names, sizeof names);
        return lc_fail(LC_ERR_ARG, "unknown training option '%s' (known: %s)", key ? key : "(null)", names);
    }
    return set_field(o, f, "training option", key, value, 0);
}

lc_status lc_train_options_get_str(const lc_train_options *o, const char *key, char *buf, size_t cap) {
    lc_clear_error();
    const field *f = find(option_fields, N_OPTIONS, key);
    if (!f) return lc_fail(LC_ERR_ARG, "unknown training option '%s'", key ? key : "(null)");
    return get_field(o, f, key, buf, cap, 0);
}

/* ---------------------------------------------------------------- tensors */
int lc_model_tensor_count(const lc_model *m) { return m->tensors.n; }

lc_status lc_model_tensor_info(const lc_model *m, int i, const char **name, int *ndim, long shape[2], int *trained) {
    lc_clear_error();
    if (i < 0 || i >= m->tensors.n) return lc_fail(LC_ERR_ARG, "tensor %d outside 0..%d", i, m->tensors.n - 1);
    const lc_tensor *t = &m->tensors.t[i];
    if (name) *name = t->name;
    if (ndim) *ndim = t->ndim;
    if (shape) shape[0] = t->shape[0], shape[1] = t->ndim > 1 ? t->shape[1] : 1;
    if (trained) *trained = lc_tensor_is_param(t);
    return LC_OK;
}

float *lc_model_tensor_data(lc_model *m, int i, lc_tensor_part part) {
    if (i < 0 || i >= m->tensors.n) return NULL;
    const lc_tensor *t = &m->tensors.t[i];
    if (!lc_tensor_is_param(t)) return part == LC_TENSOR_VALUE ? m->state + m->stab.slots[t->slot].offset : NULL;
    const size_t off = m->ptab.slots[t->slot].offset;
    switch (part) {
    case LC_TENSOR_VALUE: return m->params + off;
    case LC_TENSOR_GRAD: return m->grads + off;
    case LC_TENSOR_ADAM_M: return m->adam_m + off;
    case LC_TENSOR_ADAM_V: return m->adam_v + off;
    }
    return NULL;
}

/* ---------------------------------------------------------------- inference */
void lc_model_capacity(const lc_model *m, int *max_batch, int *seg_len, int *mem_len) {
    if (max_batch) *max_batch = m->max_B;
    if (seg_len) *seg_len = m->cap_T;
    if (mem_len) *mem_len = m->cap_M;
}

lc_status lc_model_forward_logits(lc_model *m, const int *tokens, int B, int T, float *out) {
    lc_status st = lc_model_forward(m, tokens, NULL, B, T, 0, NULL, NULL);
    if (st) return st;
    memcpy(out, lc_model_logits(m), sizeof(float) * (size_t)B * (size_t)T * 256);
    return LC_OK;
}

lc_status lc_evaluate_file(lc_model *m, const char *path, lc_split_mode mode, lc_part part, int seg_len, int batch,
                           double *bpc, double *accuracy, long *tokens) {
    lc_clear_error();
    if ((int)part < LC_PART_TRAIN || (int)part > LC_PART_ALL) return lc_fail(LC_ERR_ARG, "unknown part %d", (int)part);
    lc_corpus c;
    lc_status st = lc_corpus_load(path, mode, &c);
    if (st) return st;
    const size_t begin = part == LC_PART_ALL ? 0 : c.begin[part], end = part == LC_PART_ALL ? c.size : c.end[part];
    double b = NAN, acc = NAN;
    long n = 0;
    if (seg_len <= 0) seg_len = m->cap_T;
    if (batch <= 0) batch = m->max_B;
    if (end - begin < 2) st = lc_fail(LC_ERR_ARG, "%s: the part has %zu bytes; at least 2 are needed", path, end - begin);
    else if (m->cfg.objective == LC_OBJECTIVE_MLM)
        st = lc_evaluate_mlm(m, c.bytes + begin, end - begin, seg_len, batch, LC_MLM_EVAL_SEED, &b, &acc, &n);
    else
        st = lc_evaluate(m, c.bytes + begin, end - begin, seg_len, batch, &b, &n);
    lc_corpus_free(&c);
    if (st) return st;
    if (bpc) *bpc = b;
    if (accuracy) *accuracy = acc;
    if (tokens) *tokens = n;
    return LC_OK;
}

/* ---------------------------------------------------------------- training on a file */
static const char *const progress_keys[LC_PROGRESS_VALUES] = {
    "step", "steps", "start_step", "loss", "lr", "tokens_per_s", "elapsed_s", "valid_bpc", "valid_accuracy",
    "comm_s", "processes", "valid_s", "valid_total_s"};

const char *lc_progress_key(int i) { return i >= 0 && i < LC_PROGRESS_VALUES ? progress_keys[i] : NULL; }

typedef struct {
    lc_train_callback fn;
    void *user;
} train_call;

static int train_hook(const lc_model *m, const lc_progress *p, void *user) {
    const train_call *c = user;
    const double v[LC_PROGRESS_VALUES] = {(double)p->step,   (double)p->steps,   (double)p->start_step, p->loss,
                                          p->lr,             p->tokens_per_s,    p->elapsed_s,          p->valid_bpc,
                                          p->valid_accuracy, p->comm_s,          (double)p->processes,
                                          p->valid_s,        p->valid_total_s};
    return c->fn(v, LC_PROGRESS_VALUES, c->user);
}

lc_status lc_train_file(lc_model *m, const char *path, lc_split_mode mode, lc_train_options *o, lc_train_callback fn,
                        void *user) {
    lc_clear_error();
    lc_corpus c;
    lc_status st = lc_corpus_load(path, mode, &c);
    if (st) return st;
    st = lc_train_check_data(&c, o->batch, m->cfg.seq_len); /* before the model is planned for the batch */
    if (!st && (o->batch > m->max_B || m->cap_T != m->cfg.seq_len))
        st = lc_model_resize(m, o->batch > m->max_B ? o->batch : m->max_B, m->cfg.seq_len, m->cap_M);
    if (st) {
        lc_corpus_free(&c);
        return st;
    }
    lc_data_record_set(&o->data, path, &c);
    const lc_train_hook_fn hook = o->hook;
    void *hook_user = o->hook_user;
    train_call call = {fn, user};
    if (fn) o->hook = train_hook, o->hook_user = &call;
    st = lc_train(m, &c, o, NULL, NULL);
    o->hook = hook, o->hook_user = hook_user;
    lc_corpus_free(&c);
    return st;
}
