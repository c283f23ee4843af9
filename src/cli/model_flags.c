/* The model-shape flags shared by `train` and `bench`: a preset, then per-field overrides, one flag per row of
 * the language model's field table (nn/lm_fields.h). */
#include <string.h>

#include "cli/model_flags.h"
#include "cli/field_flags.h"
#include "core/choice.h"
#include "kernels/kernels.h"

void lc_model_flags_init(lc_model_flags *f) {
    memset(f, 0, sizeof *f);
    f->preset = "small";
}

#define OPT_TYPE_INT OPT_INT
#define OPT_TYPE_FLOAT OPT_FLOAT
#define OPT_TYPE_BOOL OPT_FLAG
#define OPT_TYPE_BOOL_OFF OPT_FLAG
#define OPT_TYPE_CHOICE OPT_STR
#define OPT_TYPE_TEXT OPT_STR

int lc_model_flags_add(lc_model_flags *f, lc_opt *opts, int n) {
#define FLAG_OPT(field, kind, flag, lo, hi, file_hi, need, text, help) {flag, OPT_TYPE_##kind, &f->field, lo, hi, help, 0},
    const lc_opt add[] = {
        {"--preset", OPT_STR, &f->preset, 0, 0, "model preset: tiny, small (default), base", 0},
        LC_LM_FIELDS(FLAG_OPT)
    };
#undef FLAG_OPT
    for (size_t i = 0; i < sizeof add / sizeof add[0]; i++)
        if (add[i].name) opts[n++] = add[i]; /* rows without a flag (vocab) have none */
    return n;
}

/* A choice flag's value: its number among names, or -1 after one error line. */
static int choice_flag(const char *cmd, const char *flag, const char *names, const char *value) {
    return lc_cli_choice(cmd, flag, names, value);
}

int lc_precision_flag(const char *cmd, const char *value, lc_precision *p) {
    if (!value) return -1;
    const int i = choice_flag(cmd, "--precision", LC_PRECISION_CHOICES, value);
    if (i < 0) return LC_EXIT_USAGE;
    *p = (lc_precision)i;
    return -1;
}

int lc_model_flags_precision(const lc_model_flags *f, const char *cmd, lc_precision *p) {
    return lc_precision_flag(cmd, f->precision, p);
}

int lc_apply_precision_flag(lc_model *m, const char *cmd, const char *value) {
    lc_precision p = lc_model_config(m)->precision;
    int rc = lc_precision_flag(cmd, value, &p);
    if (rc >= 0) return rc;
    lc_status st = lc_model_set_precision(m, p);
    return st ? lc_cli_fail(st) : -1;
}

const char *lc_precision_note(lc_precision p) {
    if (p != LC_PRECISION_BF16) return "";
    const char *path = lc_precision_path(p);
    if (!strcmp(path, "fp32")) return " | bf16 asked: fp32 products (no AVX512_BF16 here, or LC_BF16=off)";
    return !strcmp(path, "bf16/portable") ? " | bf16 products (portable: emulated, slow)" : " | bf16 products (avx512bf16)";
}

static int seen(lc_opt *opts, int n, const char *name) { return name && lc_opt_get(opts, n, name)->seen; }

int lc_model_flags_any(lc_opt *opts, int n, const char **which) {
    const char *shape[] = {"--preset",
#define SHAPE_FLAG(field, kind, flag, lo, hi, file_hi, need, ...) (need) & LC_F_RUN ? NULL : flag,
                           LC_LM_FIELDS(SHAPE_FLAG)
#undef SHAPE_FLAG
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
        if (seen(opts, n, shape[i])) { *which = shape[i]; return 1; }
    return 0;
}

/* The value of a flag given into the config field, by the row's kind; 0, or -1 after one error line. */
#define SET_INT(cmd, flag, text, dst, v) (*(dst) = (v), 0)
#define SET_FLOAT SET_INT
#define SET_BOOL(cmd, flag, text, dst, v) (*(dst) = 1, 0)
#define SET_BOOL_OFF(cmd, flag, text, dst, v) (*(dst) = 0, 0)
#define SET_CHOICE(cmd, flag, text, dst, v) set_choice(cmd, flag, text, (int *)(dst), v)
#define SET_TEXT(cmd, flag, text, dst, v) set_text(cmd, flag, *(dst), sizeof *(dst), v)

static int set_choice(const char *cmd, const char *flag, const char *names, int *dst, const char *value) {
    const int i = choice_flag(cmd, flag, names, value);
    return i < 0 ? -1 : (*dst = i, 0);
}

static int set_text(const char *cmd, const char *flag, char *dst, size_t cap, const char *value) {
    if (strlen(value) >= cap) {
        lc_cli_error("%s: %s is longer than %zu characters", cmd, flag, cap - 1);
        return -1;
    }
    strcpy(dst, value);
    return 0;
}

int lc_model_flags_apply(const lc_model_flags *f, lc_opt *opts, int n, const char *cmd, lc_config *cfg) {
    if (lc_config_preset(cfg, f->preset)) {
        lc_cli_error("%s: --preset: %s", cmd, lc_last_error());
        return LC_EXIT_USAGE;
    }
    static const char *const flags[] = {
#define ROW_FLAG(field, kind, flag, ...) flag,
        LC_LM_FIELDS(ROW_FLAG)
#undef ROW_FLAG
    };
    uint64_t given = 0;
#define APPLY(field, kind, flag, lo, hi, file_hi, need, text, help)                                                   \
    if (seen(opts, n, flag)) {                                                                                       \
        if (SET_##kind(cmd, flag, text, &cfg->field, f->field)) return LC_EXIT_USAGE;                                \
        given |= 1ull << LC_LM_F_##field;                                                                            \
    }
    LC_LM_FIELDS(APPLY)
#undef APPLY
    const int bad = lc_config_derive_rows(cfg, given);
    if (bad >= 0) {
        lc_cli_error("%s: %s needs --model xl", cmd, flags[bad]);
        return LC_EXIT_USAGE;
    }
    if (cfg->d_model % cfg->n_head) {
        lc_cli_error("%s: --dim %d is not divisible by --heads %d", cmd, cfg->d_model, cfg->n_head);
        return LC_EXIT_USAGE;
    }
    if (lc_config_validate(cfg)) {
        lc_cli_error("%s: %s", cmd, lc_last_error());
        return LC_EXIT_USAGE;
    }
    return -1;
}
