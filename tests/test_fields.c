/* Each row of the language model's field table (src/nn/lm_fields.h) reaches every consumer: the flat API
 * names it, gets and sets it; the CLI has its flag, with the row's help, and the flag sets the field as the
 * flat API does; the checkpoint metadata writes its key and reads the value back. The test walks the rows,
 * so a new row is checked without a line here. The CLI's flag code is compiled into this program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cli/args.c"
#include "../src/cli/field_flags.c"
#include "../src/cli/model_flags.c"
#include "core/choice.h"
#include "harness.h"
#include "longctx/flat.h"
#include "nn/lm_fields.h"
#include "train/checkpoint_meta.h"
#include "train/meta_table.h"
#include "train/safetensors.h"
#include "test_files.h"

typedef struct {
    const char *name, *flag, *text, *help;
    int kind; /* 0 int, 1 float, 2 bool, 3 bool_off, 4 choice, 5 text */
    double lo, hi;
    unsigned need;
} row;

enum { K_INT, K_FLOAT, K_BOOL, K_BOOL_OFF, K_CHOICE, K_TEXT };
static const row rows[] = {
#define ROW(field, kind, flag, lo, hi, file_hi, need, text, help) {#field, flag, text, help, K_##kind, lo, hi, need},
    LC_LM_FIELDS(ROW)
#undef ROW
};
#define N_ROWS (int)(sizeof rows / sizeof rows[0])

TEST(every_row_is_a_flat_api_key) {
    CHECK(N_ROWS == LC_LM_FIELD_COUNT && lc_config_key(N_ROWS, NULL) == NULL, "%d rows", N_ROWS);
    for (int i = 0; i < N_ROWS; i++) {
        const row *r = &rows[i];
        lc_value_kind kind;
        const char *key = lc_config_key(i, &kind), *flag = NULL, *choices = NULL, *help = NULL;
        int xl = -1;
        CHECK(key && !strcmp(key, r->name), "key %d: %s, row %s", i, key ? key : "NULL", r->name);
        CHECK(lc_config_key_index(r->name) == i, "%s: index", r->name);
        CHECK(lc_config_key_about(i, &flag, &choices, &help, &xl) == LC_OK, "%s: about", r->name);
        CHECK((flag == r->flag || (flag && r->flag && !strcmp(flag, r->flag))) && xl == !!(r->need & LC_F_XL_ONLY),
              "%s: flag %s, xl %d", r->name, flag ? flag : "NULL", xl);
        CHECK(!r->flag || (help && !strcmp(help, r->help)), "%s: help", r->name);
        CHECK(r->kind == K_CHOICE ? choices && !strcmp(choices, r->text) : choices == NULL, "%s: choices", r->name);
        if (r->flag) CHECK(lc_config_key_index(r->flag) == i && lc_config_key_index(r->flag + 2) == i, "%s: by flag", r->flag);
        const lc_value_kind want = r->kind == K_INT ? LC_VALUE_INT : r->kind == K_FLOAT ? LC_VALUE_FLOAT
                                   : r->kind <= K_BOOL_OFF ? LC_VALUE_BOOL : LC_VALUE_STRING;
        CHECK(kind == want, "%s: kind %d", r->name, (int)kind);
    }
    CHECK(lc_config_key_about(N_ROWS, NULL, NULL, NULL, NULL) == LC_ERR_ARG, "past the end");
}

/* The texts a row's value is tried with: numbers across the flag's range, every choice, the text. */
static int candidates(const row *r, char out[][64]) {
    int n = 0;
    switch (r->kind) {
    case K_INT: {
        const long v[] = {(long)r->lo, (long)r->lo + 1, 2, 4, 8, 16, (long)r->hi};
        for (int i = 0; i < 7; i++) snprintf(out[n++], 64, "%ld", v[i]);
        break;
    }
    case K_FLOAT: snprintf(out[n++], 64, "%g", r->hi), snprintf(out[n++], 64, "%g", (r->lo + r->hi) / 2); break;
    case K_BOOL: snprintf(out[n++], 64, "1"); break;
    case K_BOOL_OFF: snprintf(out[n++], 64, "1"); break; /* the flag's sense: --untied 1 sets tied 0 */
    case K_CHOICE:
        for (int i = 0; i < lc_choice_count(r->text); i++) lc_choice_name(r->text, i, out[n++], 64);
        break;
    case K_TEXT: snprintf(out[n++], 64, "%s", r->text ? r->text : "x"); break;
    }
    return n;
}

/* The CLI's config from `--preset tiny [--model M] FLAG VALUE`, or 0 when the flags are refused. */
static int cli_config(const row *r, const char *model, const char *value, lc_config *cfg) {
    lc_model_flags f;
    lc_opt opts[LC_MODEL_FLAG_COUNT];
    lc_model_flags_init(&f);
    const int n = lc_model_flags_add(&f, opts, 0);
    char *argv[8];
    int argc = 0;
    argv[argc++] = "--preset", argv[argc++] = "tiny";
    if (model) argv[argc++] = "--model", argv[argc++] = (char *)model;
    argv[argc++] = (char *)r->flag;
    if (r->kind != K_BOOL && r->kind != K_BOOL_OFF) argv[argc++] = (char *)value;
    fflush(stderr);
    FILE *saved = stderr; /* refusals print one line each: not wanted here */
    stderr = fopen("/dev/null", "w");
    int rc = lc_parse_opts("test", "", opts, n, argc, argv);
    if (rc < 0) rc = lc_model_flags_apply(&f, opts, n, "test", cfg);
    fclose(stderr);
    stderr = saved;
    return rc < 0;
}

/* The flat API's config from the same keys (as longctx.Model.create builds it), or 0 when refused. */
static int flat_config(const row *r, const char *model, const char *value, lc_config *cfg) {
    lc_config_preset(cfg, "tiny");
    uint64_t given = 0;
    if (model) lc_config_set_str(cfg, "model", model), given |= 1ull << lc_config_key_index("model");
    if (lc_config_set_str(cfg, r->flag, value)) return 0;
    given |= 1ull << lc_config_key_index(r->flag);
    return lc_config_derive(cfg, given) == LC_OK && lc_config_validate(cfg) == LC_OK;
}

/* Writes cfg's metadata into a file and reads it back. */
static int meta_round_trip(const lc_config *cfg, lc_config *back) {
    lc_ckpt_meta *h = calloc(1, sizeof *h), *g = calloc(1, sizeof *g);
    lc_ckpt_meta_strings *s = calloc(1, sizeof *s);
    if (!h || !g || !s) return free(h), free(g), free(s), 0;
    h->cfg = *cfg;
    lc_train_options_default(&h->opts);
    lc_ckpt_meta_format(h, s);
    const char *path = tmp_path("meta.st");
    float x = 0;
    lc_st_tensor t = {"x", LC_DT_F32, 1, {1}, &x};
    lc_st_file *f = NULL;
    int ok = lc_st_write(path, &t, 1, s->items, s->n) == LC_OK && lc_st_open(path, &f) == LC_OK &&
             lc_ckpt_meta_parse(f, g) == LC_OK;
    if (ok) *back = g->cfg;
    lc_st_close(f);
    free(h), free(g), free(s);
    return ok;
}

/* Whether every field of a and b reads the same by name (a TEXT field's "" and the text it is written as are
 * the same value: an empty attention spec is saved as "full"). */
static int same_values(const lc_config *a, const lc_config *b) {
    for (int i = 0; i < N_ROWS; i++) {
        char x[600], y[600];
        if (lc_config_get_str(a, rows[i].name, x, sizeof x) || lc_config_get_str(b, rows[i].name, y, sizeof y)) return 0;
        if (rows[i].kind == K_TEXT && !x[0]) snprintf(x, sizeof x, "%s", rows[i].text);
        if (rows[i].kind == K_TEXT && !y[0]) snprintf(y, sizeof y, "%s", rows[i].text);
        if (strcmp(x, y)) return 0;
    }
    return 1;
}

TEST(every_flag_sets_its_field_as_the_flat_api_does_and_the_checkpoint_keeps_it) {
    lc_config base;
    lc_config_preset(&base, "tiny");
    for (int i = 0; i < N_ROWS; i++) {
        const row *r = &rows[i];
        if (!r->flag) continue;
        char values[16][64], want[600], got[600];
        const int nv = candidates(r, values);
        int changed = 0;
        for (int v = 0; v < nv; v++)
            for (int m = 0; m < 2; m++) {
                const char *model = i == LC_LM_F_model ? NULL : m ? "vanilla" : NULL;
                lc_config a, b, c;
                memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
                const int by_cli = cli_config(r, model, values[v], &a), by_flat = flat_config(r, model, values[v], &b);
                CHECK(by_cli == by_flat, "%s %s (model %s): CLI %d, flat API %d", r->flag, values[v],
                      model ? model : "xl", by_cli, by_flat);
                if (!by_cli || !by_flat) continue;
                CHECK(!memcmp(&a, &b, sizeof a), "%s %s: the CLI and the flat API build different configs", r->flag,
                      values[v]);
                lc_config_get_str(&a, r->name, got, sizeof got);
                lc_config_get_str(&base, r->name, want, sizeof want);
                if (strcmp(got, want)) changed = 1;
                memset(&c, 0, sizeof c);
                CHECK(meta_round_trip(&a, &c) && same_values(&a, &c), "%s %s: the checkpoint's metadata: %s",
                      r->name, values[v], lc_last_error());
                if (!(r->need & LC_F_XL_ONLY) || a.model == LC_MODEL_XL) {
                    lc_ckpt_meta h = {.cfg = a};
                    lc_ckpt_meta_strings *s = calloc(1, sizeof *s);
                    lc_train_options_default(&h.opts);
                    lc_ckpt_meta_format(&h, s);
                    int found = 0;
                    for (int k = 0; k < s->n; k++) found |= !strcmp(s->items[k].key, r->name);
                    CHECK(found, "%s: no metadata key", r->name);
                    free(s);
                }
            }
        CHECK(changed, "%s: no value tried changed the field from the preset's", r->flag);
    }
}

/* Both NULL, or the same text. */
static int same_text(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* The rows as a generic field table (longctx/fields.h) say what the language model's own code derives by
 * hand: the same names, flags, help and need bits, values set by name as the flat API sets them, and the
 * checkpoint's keys (lc_meta_keys_of_fields) in the order and with the need bits of its key table. */
TEST(the_generic_table_derives_the_same_fields_and_keys) {
    int n;
    const lc_field *t = lc_lm_field_table(&n);
    CHECK(n == N_ROWS, "%d rows", n);
    meta_key keys[LC_LM_FIELD_COUNT];
    lc_meta_keys_of_fields(t, n, keys);
    for (int i = 0; i < n && i < N_ROWS; i++) {
        const row *r = &rows[i];
        CHECK(!strcmp(t[i].name, r->name) && same_text(t[i].flag, r->flag) && same_text(t[i].help, r->help) &&
                  same_text(t[i].text, r->text) && t[i].need == r->need &&
                  (int)t[i].kind == (r->kind <= K_INT ? 0 : r->kind + 1),
              "%s", r->name);
        int xl = -1;
        const char *key = lc_ckpt_meta_key(i + 2, &xl); /* after format and format_version */
        CHECK(key && !strcmp(keys[i].key, key) && xl == !!(keys[i].need & XL_ONLY), "%s: key %s", r->name, key);
        char values[16][64];
        const int nv = candidates(r, values);
        for (int v = 0; v < nv && r->kind != K_BOOL_OFF; v++) { /* BOOL_OFF: by name the value, by flag its opposite */
            lc_config a, b;
            lc_config_preset(&a, "tiny"), lc_config_preset(&b, "tiny");
            CHECK(lc_field_set(&t[i], &a, values[v]) == LC_OK, "%s %s: %s", r->name, values[v], lc_last_error());
            CHECK(lc_config_set_str(&b, r->name, values[v]) == LC_OK, "%s", lc_last_error());
            CHECK(!memcmp(&a, &b, sizeof a), "%s %s: the table and the flat API differ", r->name, values[v]);
            char x[600], y[600];
            CHECK(lc_field_format(&t[i], &a, x, sizeof x) == LC_OK && lc_config_get_str(&a, r->name, y, sizeof y) == LC_OK &&
                      !strcmp(x, y), "%s: %s vs %s", r->name, x, y);
        }
    }
    lc_config c;
    lc_config_preset(&c, "tiny");
    CHECK(lc_field_set(&t[LC_LM_F_n_layer], &c, "0") == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "config n_layer: '0' is not an integer in 1..1024") && c.n_layer == 2,
          "%s", lc_last_error());
    CHECK(lc_field_set(&t[LC_LM_F_norm], &c, "mid") == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "config norm must be pre or post, got 'mid'"), "%s", lc_last_error());
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_fields_XXXXXX")) return 1;
    RUN(every_row_is_a_flat_api_key);
    RUN(every_flag_sets_its_field_as_the_flat_api_does_and_the_checkpoint_keeps_it);
    RUN(the_generic_table_derives_the_same_fields_and_keys);
    tmpdir_remove();
    return test_summary("test_fields");
}
