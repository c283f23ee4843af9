/* The metadata keys of a language-model checkpoint (see checkpoint_meta.h), the training options and
 * data record shared with HIBERT's, and the one writer and reader of any key table (train/meta_table.h).
 * Values are strings: integers in decimal, floats with 9 significant digits (exact for fp32), choices by name. */
#include "train/checkpoint_meta.h"
#include "train/meta_table.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/choice.h"
#include "core/status.h"
#include "nn/lm_fields.h"

_Static_assert(sizeof(lc_model_kind) == sizeof(int) && sizeof(lc_norm) == sizeof(int) &&
                   sizeof(lc_activation) == sizeof(int) && sizeof(lc_objective) == sizeof(int) &&
                   sizeof(lc_precision) == sizeof(int),
               "choice fields are read and written as int");
_Static_assert(LC_MODEL_VANILLA == 0 && LC_MODEL_XL == 1 && LC_NORM_PRE == 0 && LC_NORM_POST == 1 &&
                   LC_ACT_GELU == 0 && LC_ACT_RELU == 1 && LC_OBJECTIVE_CLM == 0 && LC_OBJECTIVE_MLM == 1 &&
                   LC_PRECISION_FP32 == 0 && LC_PRECISION_BF16 == 1,
               "choice names are listed in enum order");

#define CFG(f) offsetof(lc_ckpt_meta, cfg.f)
#define OPT(f) offsetof(lc_train_options, f)
#define AT(f) offsetof(lc_ckpt_meta, f)
#define DATA_AT(f) offsetof(lc_train_options, data.f)

/* The configuration's keys, one per row of nn/lm_fields.h. */
_Static_assert((int)LC_F_REQUIRED == (int)REQUIRED && (int)LC_F_XL_ONLY == (int)XL_ONLY, "the rows' need bits are the keys'");
#define KEY_INT(k, at, file_hi, need, text, cap) {k, T_INT, at, 0, file_hi, 0, 0, 0, NULL, need}
#define KEY_BOOL(k, at, file_hi, need, text, cap) {k, T_BOOL, at, 0, 1, 0, 0, 0, NULL, need}
#define KEY_BOOL_OFF KEY_BOOL
#define KEY_FLOAT(k, at, file_hi, need, text, cap) {k, T_FLOAT, at, 0, 0, 0, file_hi, OPEN_HI, NULL, need}
#define KEY_CHOICE(k, at, file_hi, need, text, cap) {k, T_CHOICE, at, 0, 0, 0, 0, 0, text, need}
#define KEY_TEXT(k, at, file_hi, need, text, cap) {k, T_STRING, at, 0, cap, 0, 0, 0, text, need}
#define CONFIG_KEY(field, kind, flag, lo, hi, file_hi, need, text, help)                                              \
    KEY_##kind(#field, CFG(field), file_hi, (need) & (REQUIRED | XL_ONLY), text, sizeof(((lc_config *)0)->field)),

/* In the order they are written. Ranges are what a file may hold; lc_config_validate then checks the
 * configuration as a whole. Optional keys are absent from older files and default to 0 / "". */
static const meta_key keys[] = {
    {"format", T_CONST, 0, 0, 0, 0, 0, 0, LC_CKPT_FORMAT, REQUIRED},
    {"format_version", T_CONST, 0, 0, 0, 0, 0, 0, LC_CKPT_VERSION, REQUIRED},
    LC_LM_FIELDS(CONFIG_KEY)
    INT("state.memory_rows", AT(memory_rows), 0, 1 << 24, XL_ONLY),
    INT("state.memory_batch", AT(memory_batch), 0, 1 << 24, XL_ONLY),
    LONG("step", AT(step), 0, 1LL << 62, REQUIRED),
    U64("seed", AT(seed), REQUIRED),
};

/* The training options, shared with HIBERT's table (models/hibert/checkpoint_hibert.c). */
static const meta_key train_keys[] = {
    LONG("train.steps", OPT(steps), 0, 1LL << 40, REQUIRED),
    INT("train.batch", OPT(batch), 1, 1 << 20, REQUIRED),
    INT("train.grad_accum", OPT(grad_accum), 1, 1 << 20, REQUIRED),
    FLOAT("train.lr", OPT(lr), 0, HUGE_VAL, OPEN_LO),
    FLOAT("train.min_lr", OPT(min_lr), 0, HUGE_VAL, 0),
    LONG("train.warmup", OPT(warmup), 0, 1LL << 40, REQUIRED),
    FLOAT("train.weight_decay", OPT(weight_decay), 0, HUGE_VAL, 0),
    FLOAT("train.beta1", OPT(beta1), 0, 1, OPEN_HI),
    FLOAT("train.beta2", OPT(beta2), 0, 1, OPEN_HI),
    FLOAT("train.eps", OPT(eps), 0, HUGE_VAL, OPEN_LO),
    FLOAT("train.clip", OPT(clip), 0, HUGE_VAL, 0),
    LONG("train.eval_every", OPT(eval_every), 0, 1LL << 40, REQUIRED),
    LONG("train.eval_bytes", OPT(eval_bytes), 0, 1LL << 50, REQUIRED),
    U64("train.seed", OPT(seed), REQUIRED),
    INT("train.ranks", OPT(ranks), 0, 1 << 24, 0), /* processes that trained together (absent: 1) */
    {"train.lr_scale", T_STRING, OPT(lr_scale), 0, LC_LR_SCALE_CHARS, 0, 0, 0, NULL, 0, lc_lr_scale_check}, /* absent: "" */
};

/* The language model's data record (one byte file). */
static const meta_key data_keys[] = {
    {"data.path", T_STRING, DATA_AT(path), 0, LC_DATA_PATH_CHARS, 0, 0, 0, NULL, DATA},
    LONG("data.size", DATA_AT(size), 0, 1LL << 62, DATA),
    {"data.hash", T_U64, DATA_AT(hash), 0, 0, 0, 0, 0, NULL, DATA},
    {"data.split", T_CHOICE, DATA_AT(split), LC_SPLIT_ENWIK8, LC_SPLIT_NANOGPT, 0, 0, 0, "enwik8|nanogpt", DATA},
};
#define N_OF(a) (int)(sizeof a / sizeof *a)

const meta_part lc_meta_train_part = {train_keys, N_OF(train_keys), 0};
const meta_part lc_meta_data_part = {data_keys, N_OF(data_keys), 0};

void lc_meta_parts_with_train(meta_part out[2], const meta_key *own, int n, size_t opts_at) {
    out[0] = (meta_part){own, n, 0};
    out[1] = lc_meta_train_part;
    out[1].at = opts_at;
}
/* The language model's metadata: its keys, then the training options and the data record (in its opts). */
static const meta_part lm_parts[] = {{keys, N_OF(keys), 0},
                                     {train_keys, N_OF(train_keys), offsetof(lc_ckpt_meta, opts)},
                                     {data_keys, N_OF(data_keys), offsetof(lc_ckpt_meta, opts)}};
#define N_PARTS N_OF(lm_parts)

const char *lc_meta_key_at(const meta_part *parts, int n_parts, int i, unsigned *need) {
    for (int p = 0; p < n_parts && i >= 0; i -= parts[p].n, p++)
        if (i < parts[p].n) {
            if (need) *need = parts[p].keys[i].need;
            return parts[p].keys[i].key;
        }
    return NULL;
}

const char *lc_ckpt_meta_key(int i, int *xl_only) {
    unsigned need = 0;
    const char *k = lc_meta_key_at(lm_parts, N_PARTS, i, &need);
    if (k && xl_only) *xl_only = (need & XL_ONLY) != 0;
    return k;
}

/* XL keys for xl models only; the data record only when it holds a path (read when present). */
static int lm_skip(const meta_key *k, const void *base, int writing) {
    const lc_ckpt_meta *h = base;
    if ((k->need & XL_ONLY) && h->cfg.model != LC_MODEL_XL) return 1;
    return writing && (k->need & DATA) && !h->opts.data.path[0];
}

void lc_meta_format(const meta_part *parts, int n_parts, const void *base, meta_skip_fn skip,
                    lc_ckpt_meta_strings *out) {
    out->n = 0;
    lc_meta_format_append(parts, n_parts, base, skip, out);
}

void lc_meta_format_append(const meta_part *parts, int n_parts, const void *base, meta_skip_fn skip,
                           lc_ckpt_meta_strings *out) {
    for (int p = 0; p < n_parts; p++)
        for (int i = 0; i < parts[p].n; i++) {
            const meta_key *k = &parts[p].keys[i];
            if (skip && skip(k, base, 1)) continue;
            const void *at = (const char *)base + parts[p].at + k->at;
            if (k->type == T_STRING && !k->text && !*(const char *)at) continue; /* "" with no default: absent */
            if (out->n == LC_CKPT_META_MAX) break; /* asserted by the tables' tests */
            char *v = out->values[out->n];
            const size_t cap = sizeof out->values[0];
            switch (k->type) {
            case T_CONST: snprintf(v, cap, "%s", k->text); break;
            case T_CHOICE: lc_choice_name(k->text, *(const int *)at - (int)k->lo, v, cap); break;
            case T_INT: snprintf(v, cap, "%d", *(const int *)at); break;
            case T_BOOL: snprintf(v, cap, "%d", *(const int *)at != 0); break;
            case T_LONG: snprintf(v, cap, "%ld", *(const long *)at); break;
            case T_U64: snprintf(v, cap, "%llu", (unsigned long long)*(const uint64_t *)at); break;
            case T_FLOAT: snprintf(v, cap, "%.9g", (double)*(const float *)at); break;
            case T_STRING: snprintf(v, cap, "%s", *(const char *)at || !k->text ? (const char *)at : k->text); break;
            }
            out->items[out->n].key = k->key;
            out->items[out->n].value = v;
            out->n++;
        }
}

void lc_ckpt_meta_format(const lc_ckpt_meta *h, lc_ckpt_meta_strings *out) {
    lc_meta_format(lm_parts, N_PARTS, h, lm_skip, out);
}

/* Decimal digits only (a leading '-' when negative allowed): no spaces, signs, hex or exponents. */
static int is_decimal(const char *v, int negative_ok) {
    if (negative_ok && *v == '-') v++;
    if (!*v) return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9') return 0;
    return 1;
}

static lc_status parse_value(const lc_st_file *f, const meta_key *k, const char *v, void *at) {
    const char *path = lc_st_path(f);
    switch (k->type) {
    case T_CONST:
        if (strcmp(v, k->text) == 0) return LC_OK;
        if (strcmp(k->key, "format") == 0)
            return lc_fail(LC_ERR_FORMAT, "%s: not a longctx checkpoint (metadata 'format' is not '%s')", path,
                           k->text);
        return lc_fail(LC_ERR_FORMAT, "%s: unsupported checkpoint %s '%.40s' (this build reads %s)", path, k->key, v,
                       k->text);
    case T_CHOICE: {
        const int i = lc_choice_index(k->text, v);
        if (i >= 0) {
            *(int *)at = (int)k->lo + i;
            return LC_OK;
        }
        char all[128];
        lc_choice_list(k->text, "'", all, sizeof all);
        return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%.40s' must be %s", path, k->key, v, all);
    }
    case T_INT:
    case T_BOOL:
    case T_LONG: {
        errno = 0;
        const long long x = is_decimal(v, 1) ? strtoll(v, NULL, 10) : 0;
        if (!is_decimal(v, 1) || errno || x < k->lo || x > k->hi)
            return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%.40s' is not an integer in %lld..%lld", path, k->key,
                           v, k->lo, k->hi);
        if (k->type == T_LONG) *(long *)at = (long)x;
        else *(int *)at = (int)x;
        return LC_OK;
    }
    case T_U64: {
        errno = 0;
        const unsigned long long x = is_decimal(v, 0) ? strtoull(v, NULL, 10) : 0;
        if (!is_decimal(v, 0) || errno)
            return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%.40s' is not an integer in 0..%llu", path, k->key, v,
                           (unsigned long long)UINT64_MAX);
        *(uint64_t *)at = (uint64_t)x;
        return LC_OK;
    }
    case T_FLOAT: {
        char *end = NULL;
        const double x = (*v == '-' || *v == '.' || (*v >= '0' && *v <= '9')) ? strtod(v, &end) : NAN;
        const int ok = end && end != v && !*end && isfinite(x) && isfinite((float)x) &&
                       (k->open & OPEN_LO ? x > k->flo : x >= k->flo) && (k->open & OPEN_HI ? x < k->fhi : x <= k->fhi);
        if (!ok)
            return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' = '%.40s' is not a number in %c%g, %g%c", path, k->key, v,
                           k->open & OPEN_LO ? '(' : '[', k->flo, k->fhi, k->open & OPEN_HI ? ')' : ']');
        *(float *)at = (float)x;
        return LC_OK;
    }
    case T_STRING:
        if (strlen(v) >= (size_t)k->hi)
            return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s' is longer than %lld characters", path, k->key, k->hi - 1);
        if (k->check && k->check(v)) {
            char why[300];
            snprintf(why, sizeof why, "%s", lc_last_error());
            return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s': %s", path, k->key, why);
        }
        strcpy((char *)at, v);
        return LC_OK;
    }
    return lc_fail(LC_ERR_FORMAT, "%s: metadata '%s': unknown type", path, k->key);
}

lc_status lc_meta_parse(const lc_st_file *f, const meta_part *parts, int n_parts, void *base, meta_skip_fn skip) {
    for (int p = 0; p < n_parts; p++)
        for (int i = 0; i < parts[p].n; i++) {
            const meta_key *k = &parts[p].keys[i];
            if (skip && skip(k, base, 0)) continue;
            const char *v = lc_st_get_meta(f, k->key);
            if (!v && !(k->need & REQUIRED)) continue;
            if (!v && p == 0 && i == 0)
                return lc_fail(LC_ERR_FORMAT, "%s: not a longctx checkpoint (no metadata 'format')", lc_st_path(f));
            if (!v) return lc_fail(LC_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", lc_st_path(f), k->key);
            lc_status st = parse_value(f, k, v, (char *)base + parts[p].at + k->at);
            if (st) return st;
        }
    return LC_OK;
}

lc_status lc_ckpt_check_family(const lc_st_file *f, lc_ckpt_family want) {
    static const struct {
        const char *model, *name, *commands;
        lc_ckpt_family family;
    } kinds[] = {
        {"vanilla", "language model", "longctx eval, sample or train --resume", LC_FAMILY_LM},
        {"xl", "language model", "longctx eval, sample or train --resume", LC_FAMILY_LM},
        {"classify", "classifier", "longctx predict, eval --task classify or train --task classify --resume",
         LC_FAMILY_CLASSIFY},
        {"hibert", "HIBERT", "longctx summarize, eval --task summarize or hibert finetune --init", LC_FAMILY_HIBERT},
        {"seq2seq", "seq2seq", "longctx predict, eval --task seq2seq or train --task seq2seq --resume",
         LC_FAMILY_SEQ2SEQ},
    };
    static const char *wanted[] = {"a language model", "a classifier", "a HIBERT model", "a seq2seq model"};
    const char *format = lc_st_get_meta(f, "format"), *model = lc_st_get_meta(f, "model");
    if (!format || strcmp(format, LC_CKPT_FORMAT) != 0 || !model) return LC_OK;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(model, kinds[i].model) == 0 && kinds[i].family != want)
            return lc_fail(LC_ERR_FORMAT, "%s: a %s checkpoint (model = %s), not %s: use it with %s", lc_st_path(f),
                           kinds[i].name, model, wanted[want], kinds[i].commands);
    return LC_OK;
}

lc_status lc_ckpt_meta_parse(const lc_st_file *f, lc_ckpt_meta *h) {
    memset(h, 0, sizeof *h);
    lc_train_options_default(&h->opts);
    lc_status st = lc_ckpt_check_family(f, LC_FAMILY_LM);
    if (st) return st;
    st = lc_meta_parse(f, lm_parts, N_PARTS, h, lm_skip); /* "model" comes before every XL_ONLY key */
    if (st) return st;
    if (lc_config_validate(&h->cfg)) {
        char why[400];
        snprintf(why, sizeof why, "%s", lc_last_error());
        return lc_fail(LC_ERR_FORMAT, "%s: bad model config: %s", lc_st_path(f), why);
    }
    if ((h->memory_rows == 0) != (h->memory_batch == 0))
        return lc_fail(LC_ERR_FORMAT, "%s: metadata state.memory_rows = %d and state.memory_batch = %d disagree",
                       lc_st_path(f), h->memory_rows, h->memory_batch);
    return LC_OK;
}
