/* A model family's configuration flags from its field table (cli/field_flags.h). */
#include "cli/field_flags.h"

#include <string.h>

#include "core/choice.h"

int lc_cli_choice(const char *cmd, const char *flag, const char *names, const char *value) {
    const int i = lc_choice_index(names, value);
    if (i < 0) {
        char all[128];
        lc_choice_list(names, "", all, sizeof all);
        lc_cli_error("%s: %s must be %s, got '%s'", cmd, flag, all, value);
    }
    return i;
}

int lc_field_flags_add(lc_field_flags *ff, const lc_cli_field *rows, int n_rows, lc_opt *opts, int n) {
    ff->rows = rows, ff->n_rows = n_rows < LC_FIELD_FLAGS_MAX ? n_rows : LC_FIELD_FLAGS_MAX;
    static const lc_opt_type type[] = {OPT_INT, OPT_FLOAT, OPT_FLAG, OPT_FLAG, OPT_STR, OPT_STR};
    for (int i = 0; i < ff->n_rows; i++) {
        const lc_cli_field *r = &rows[i];
        if (!r->flag) continue;
        void *dst = r->kind == LC_FK_FLOAT ? (void *)&ff->v[i].f
                    : r->kind >= LC_FK_CHOICE ? (void *)&ff->v[i].s : (void *)&ff->v[i].i;
        opts[n++] = (lc_opt){r->flag, type[r->kind], dst, r->lo, r->hi, r->help, 0, NULL};
    }
    return n;
}

static int given(lc_opt *opts, int n, const lc_cli_field *r) {
    const lc_opt *o = r->flag ? lc_opt_get(opts, n, r->flag) : NULL;
    return o && o->seen;
}

int lc_field_flags_apply(const lc_field_flags *ff, lc_opt *opts, int n, const char *cmd, void *cfg, unsigned need) {
    for (int i = 0; i < ff->n_rows; i++) {
        const lc_cli_field *r = &ff->rows[i];
        if ((need && !(r->need & need)) || !given(opts, n, r)) continue;
        char *at = (char *)cfg + r->at;
        switch (r->kind) {
        case LC_FK_INT: *(int *)at = ff->v[i].i; break;
        case LC_FK_FLOAT: *(float *)at = ff->v[i].f; break;
        case LC_FK_BOOL: *(int *)at = 1; break;
        case LC_FK_BOOL_OFF: *(int *)at = 0; break;
        case LC_FK_CHOICE: {
            const int c = lc_cli_choice(cmd, r->flag, r->text, ff->v[i].s);
            if (c < 0) return LC_EXIT_USAGE;
            *(int *)at = c;
            break;
        }
        case LC_FK_TEXT:
            if (strlen(ff->v[i].s) >= r->size) {
                lc_cli_error("%s: %s is longer than %zu characters", cmd, r->flag, r->size - 1);
                return LC_EXIT_USAGE;
            }
            strcpy(at, ff->v[i].s);
            break;
        }
    }
    return -1;
}

int lc_field_flags_any(const lc_field_flags *ff, lc_opt *opts, int n, const char **which) {
    for (int i = 0; i < ff->n_rows; i++)
        if (!(ff->rows[i].need & LC_F_RUN) && given(opts, n, &ff->rows[i])) {
            *which = ff->rows[i].flag;
            return 1;
        }
    return 0;
}

int lc_field_same(const lc_cli_field *r, const void *a, const void *b) {
    const char *x = (const char *)a + r->at, *y = (const char *)b + r->at;
    if (r->kind != LC_FK_TEXT) return memcmp(x, y, r->size) == 0;
    return strcmp(*x ? x : r->text, *y ? y : r->text) == 0;
}

int lc_field_flags_refuse_lm(lc_opt *opts, int n, const char *why) {
    static int unused;
    static const char *const lm[] = {"--preset",
#define LM_FLAG(field, kind, flag, lo, hi, file_hi, need, ...) (need) & LC_F_RUN ? NULL : flag,
                                     LC_LM_FIELDS(LM_FLAG)
#undef LM_FLAG
    };
    for (size_t i = 0; i < sizeof lm / sizeof *lm; i++)
        if (lm[i] && !lc_opt_get(opts, n, lm[i])) opts[n++] = (lc_opt){lm[i], OPT_FLAG, &unused, 0, 0, "", 0, why};
    return n;
}
