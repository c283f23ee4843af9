/* The binding API (include/longctx/flat.h): configuration and training options by name, the model's
 * tensors by index, logits into the caller's buffer, byte-at-a-time generation, evaluation of a file and
 * training on a file with a callback that gets plain doubles. Nothing here computes anything new: every
 * call is a thin layer over the public API and the model's own tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/choice.h"
#include "core/rng.h"
#include "core/status.h"
#include "kernels/fastmath.h"
#include "longctx/fields.h"
#include "longctx/flat.h"
#include "models/lm/lm.h"
#include "models/lm/lm_fit.h"
#include "nn/lm_fields.h"

/* ---------------------------------------------------------------- named fields */
typedef enum { F_INT, F_LONG, F_U64, F_FLOAT, F_BOOL, F_SPEC, F_LR_SCALE, F_CHOICE } field_type;

typedef struct {
    const char *name;  /* the struct field */
    const char *flag;  /* the CLI flag that sets it ("--seg-len": the key "seg_len" or "seg-len"), or NULL */
    field_type type;
    size_t offset;
    const char *names; /* F_CHOICE: the value names "pre|post" */
    int flag_inverts;  /* the flag sets the field to the opposite of its value (--untied) */
    unsigned need;     /* LC_F_* bits (nn/lm_fields.h) */
    const char *help;
} field;

/* The configuration's fields: one per row of nn/lm_fields.h. */
#define TYPE_INT F_INT
#define TYPE_FLOAT F_FLOAT
#define TYPE_BOOL F_BOOL
#define TYPE_BOOL_OFF F_BOOL
#define TYPE_CHOICE F_CHOICE
#define TYPE_TEXT F_SPEC
#define INVERTS_BOOL_OFF 1
#define INVERTS_INT 0
#define INVERTS_FLOAT 0
#define INVERTS_BOOL 0
#define INVERTS_CHOICE 0
#define INVERTS_TEXT 0
#define CFG(field, kind, flag, lo, hi, file_hi, need, text, help)                                                    \
    {#field, flag, TYPE_##kind, offsetof(lc_config, field), TYPE_##kind == F_CHOICE ? text : NULL, INVERTS_##kind,  \
     need, help},
static const field config_fields[] = {LC_LM_FIELDS(CFG)};
#define OPT(n, t) {#n, NULL, t, offsetof(lc_train_options, n), NULL, 0, 0, NULL}
static const field option_fields[] = {
    OPT(steps, F_LONG),   OPT(stop_after, F_LONG), OPT(batch, F_INT),        OPT(grad_accum, F_INT),
    OPT(lr, F_FLOAT),     OPT(min_lr, F_FLOAT),    OPT(warmup, F_LONG),      OPT(weight_decay, F_FLOAT),
    OPT(beta1, F_FLOAT),  OPT(beta2, F_FLOAT),     OPT(eps, F_FLOAT),        OPT(clip, F_FLOAT),
    OPT(eval_every, F_LONG), OPT(eval_bytes, F_LONG), OPT(seed, F_U64),     OPT(lr_scale, F_LR_SCALE),
};
#define N_CONFIG (int)(sizeof config_fields / sizeof config_fields[0])
#define N_OPTIONS (int)(sizeof option_fields / sizeof option_fields[0])
_Static_assert(N_CONFIG == LC_LM_FIELD_COUNT, "one field per row");

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

/* Whether the flag "--seg-len" is the normalized key k ("seg_len"). */
static int is_flag(const char *flag, const char *k) {
    if (!flag) return 0;
    while (*flag == '-') flag++;
    for (; *flag && *k; flag++, k++)
        if ((*flag == '-' ? '_' : *flag) != *k) return 0;
    return !*flag && !*k;
}

/* The field named key (its name or its flag's); *by_flag says which (may be NULL). */
static const field *find(const field *f, int n, const char *key, int *by_flag) {
    char k[64];
    if (!key || !normalize(key, k)) return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(f[i].name, k) == 0 || is_flag(f[i].flag, k)) {
            if (by_flag) *by_flag = strcmp(f[i].name, k) != 0;
            return &f[i];
        }
    return NULL;
}

/* Comma-separated names of the keys, for messages. */
static void key_list(const field *f, int n, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", f[i].name);
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
        if (!lc_field_parse_bool(value, &v)) return lc_fail(LC_ERR_ARG, "%s %s: '%s' is not a boolean (0/1)", what, key, value);
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
    case F_CHOICE: {
        const int i = lc_choice_index(f->names, value);
        if (i >= 0) return *(int *)p = i, LC_OK;
        char all[128];
        lc_choice_list(f->names, "", all, sizeof all);
        return lc_fail(LC_ERR_ARG, "%s %s must be %s, got '%s'", what, key, all, value);
    }
    }
    return lc_fail(LC_ERR_ARG, "%s %s: unknown type", what, key);
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
    case F_CHOICE: {
        char name[64];
        lc_choice_name(f->names, *(const int *)p, name, sizeof name);
        n = snprintf(buf, cap, "%s", name[0] ? name : "?");
        break;
    }
    default: n = -1;
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

lc_status lc_config_set_str(lc_config *cfg, const char *key, const char *value) {
    lc_clear_error();
    int by_flag = 0;
    const field *f = find(config_fields, N_CONFIG, key, &by_flag);
    if (!f) {
        char names[1024];
        key_list(config_fields, N_CONFIG, names, sizeof names);
        return lc_fail(LC_ERR_ARG, "unknown config key '%s' (known: %s; or their CLI flag names)", key ? key : "(null)",
                       names);
    }
    return set_field(cfg, f, "config", key, value, by_flag && f->flag_inverts);
}

lc_status lc_config_get_str(const lc_config *cfg, const char *key, char *buf, size_t cap) {
    lc_clear_error();
    int by_flag = 0;
    const field *f = find(config_fields, N_CONFIG, key, &by_flag);
    if (!f) return lc_fail(LC_ERR_ARG, "unknown config key '%s'", key ? key : "(null)");
    return get_field(cfg, f, key, buf, cap, by_flag && f->flag_inverts);
}

int lc_config_key_index(const char *key) {
    const field *f = find(config_fields, N_CONFIG, key, NULL);
    return f ? (int)(f - config_fields) : -1;
}

lc_status lc_config_key_about(int i, const char **flag, const char **choices, const char **help, int *xl_only) {
    lc_clear_error();
    if (i < 0 || i >= N_CONFIG) return lc_fail(LC_ERR_ARG, "config key %d outside 0..%d", i, N_CONFIG - 1);
    const field *f = &config_fields[i];
    if (flag) *flag = f->flag;
    if (choices) *choices = f->names;
    if (help) *help = f->flag ? f->help : NULL;
    if (xl_only) *xl_only = (f->need & LC_F_XL_ONLY) != 0;
    return LC_OK;
}

lc_status lc_config_derive(lc_config *cfg, uint64_t given) {
    lc_clear_error();
    const int bad = lc_config_derive_rows(cfg, given);
    if (bad >= 0) return lc_fail(LC_ERR_ARG, "config %s needs model 'xl'", config_fields[bad].name);
    return LC_OK;
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
    const field *f = find(option_fields, N_OPTIONS, key, NULL);
    if (!f) {
        char names[1024];
        key_list(option_fields, N_OPTIONS, names, sizeof names);
        return lc_fail(LC_ERR_ARG, "unknown training option '%s' (known: %s)", key ? key : "(null)", names);
    }
    return set_field(o, f, "training option", key, value, 0);
}

lc_status lc_train_options_get_str(const lc_train_options *o, const char *key, char *buf, size_t cap) {
    lc_clear_error();
    const field *f = find(option_fields, N_OPTIONS, key, NULL);
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
    if ((st = lc_train_plan_data(m, path, &c, o))) {
        lc_corpus_free(&c);
        return st;
    }
    const lc_train_hook_fn hook = o->hook;
    void *hook_user = o->hook_user;
    train_call call = {fn, user};
    if (fn) o->hook = train_hook, o->hook_user = &call;
    st = lc_train(m, &c, o, NULL, NULL);
    o->hook = hook, o->hook_user = hook_user;
    lc_corpus_free(&c);
    return st;
}
