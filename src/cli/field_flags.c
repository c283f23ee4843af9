/* A family's CLI flags from its field table (cli/field_flags.h). */
#include <string.h>

#include "cli/field_flags.h"

int lc_field_flags_add(lc_field_flags *ff, const lc_field *rows, int n, void *cfg, lc_opt *opts, int n_opts) {
    memset(ff, 0, sizeof *ff);
    ff->rows = rows, ff->n = n < LC_FIELD_FLAGS_MAX ? n : LC_FIELD_FLAGS_MAX, ff->cfg = cfg;
    for (int i = 0; i < ff->n; i++) {
        const lc_field *f = &rows[i];
        if (!f->flag) continue;
        void *at = (char *)cfg + f->offset;
        const int whole = f->lo == 0 && f->hi == 0;
        lc_opt o = {f->flag, OPT_STR, &ff->text[i], f->lo, whole ? f->file_hi : f->hi, f->help, 0, NULL};
        switch (f->kind) {
        case LC_FIELD_INT: o.type = OPT_INT, o.dst = at; break;
        case LC_FIELD_LONG: o.type = OPT_LONG, o.dst = at; break;
        case LC_FIELD_FLOAT: o.type = OPT_FLOAT, o.dst = at; break;
        case LC_FIELD_BOOL: o.type = OPT_FLAG, o.dst = at; break;
        case LC_FIELD_BOOL_OFF: o.type = OPT_FLAG, o.dst = &ff->off[i]; break;
        case LC_FIELD_CHOICE:
        case LC_FIELD_TEXT: break;
        }
        opts[n_opts++] = o;
    }
    return n_opts;
}

int lc_field_flags_apply(lc_field_flags *ff, const char *cmd, lc_opt *opts, int n_opts) {
    for (int i = 0; i < ff->n; i++) {
        const lc_field *f = &ff->rows[i];
        if (f->kind == LC_FIELD_BOOL_OFF && ff->off[i]) *(int *)((char *)ff->cfg + f->offset) = 0;
        if (!ff->text[i]) continue;
        if (lc_field_set(f, ff->cfg, ff->text[i])) {
            lc_cli_error("%s: %s: %s", cmd, f->flag, lc_last_error());
            return LC_EXIT_USAGE;
        }
    }
    return -1;
}
