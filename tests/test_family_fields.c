/* Each row of the classifier's, HIBERT's and seq2seq's field tables (models/<family>/<family>_fields.h) reaches
 * the places that know it: the checkpoint's metadata has its key, in the table's order, with the model's value;
 * a row with a flag gets that flag from the table's CLI generator (cli/field_flags.c), which writes the value
 * given into that field and no other. The test walks the rows, so a new row is checked without a line here, and
 * a key table or flag written by hand beside the table fails it, as does a command whose --help (the CLI beside
 * this program, or LONGCTX_CLI) lacks a row's flag or help line. The CLI's flag code is compiled in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cli/args.c"
#include "../src/cli/field_flags.c"
#include "core/choice.h"
#include "harness.h"
#include "models/classify/classify.h"
#include "models/classify/classify_fields.h"
#include "models/classify/classify_fit.h"
#include "models/hibert/hibert_fields.h"
#include "models/seq2seq/seq2seq_fields.h"
#include "train/checkpoint_meta.h"

/* A row as the test reads it: the generator's description, its key and the field's path. */
typedef struct {
    lc_cli_field f;
    const char *key;
} row;

#define ROW(field, kind, flag, lo, hi, file_hi, need, text, help)                                                  \
    {LC_CLI_FIELD(field, kind, flag, lo, hi, file_hi, need, text, help) LC_FK_##kind <= LC_FK_BOOL_OFF && (text)   \
                                                                           ? (const char *)(text) : #field},
/* LC_CLI_FIELD ends in a comma: the row's key follows it as the struct's second member. */
#define CFG_TYPE lc_classify_config
static const row classify_rows[] = {LC_CLASSIFY_FIELDS(ROW)};
#undef CFG_TYPE
#define CFG_TYPE lc_hibert_config
static const row hibert_rows[] = {LC_HIBERT_FIELDS(ROW)};
#undef CFG_TYPE
#define CFG_TYPE lc_seq2seq_config
static const row seq2seq_rows[] = {LC_SEQ2SEQ_FIELDS(ROW)};
#undef CFG_TYPE
#define N_OF(a) (int)(sizeof a / sizeof *a)

/* The value of the row's member in cfg as the checkpoint writes it. */
static void value_text(const row *r, const void *cfg, char *out, size_t cap) {
    const char *at = (const char *)cfg + r->f.at;
    switch (r->f.kind) {
    case LC_FK_INT: case LC_FK_BOOL: case LC_FK_BOOL_OFF: snprintf(out, cap, "%d", *(const int *)at); break;
    case LC_FK_FLOAT: snprintf(out, cap, "%.9g", (double)*(const float *)at); break;
    case LC_FK_CHOICE: lc_choice_name(r->f.text, *(const int *)at, out, cap); break;
    case LC_FK_TEXT: snprintf(out, cap, "%s", *at ? at : r->f.text); break;
    }
}

/* The metadata (keys after the first `skip`: format, format_version, model[, stage]) holds one key per row in
 * the table's order, each with the config's value. */
static void check_keys(const char *family, const row *rows, int n, const char *(*key_at)(int), int skip,
                       const lc_ckpt_meta_strings *meta, const void *cfg) {
    for (int i = 0; i < n; i++) {
        const char *key = key_at(skip + i);
        CHECK(key && !strcmp(key, rows[i].key), "%s: key %d is %s, row %d %s", family, skip + i, key ? key : "NULL", i,
              rows[i].key);
        char want[LC_ATTN_SPEC_CHARS + 32];
        value_text(&rows[i], cfg, want, sizeof want);
        const char *got = NULL;
        for (int k = 0; k < meta->n; k++)
            if (!strcmp(meta->items[k].key, rows[i].key)) got = meta->items[k].value;
        CHECK(got && !strcmp(got, want), "%s: metadata %s = %s, the model's %s", family, rows[i].key, got ? got : "absent",
              want);
    }
    CHECK(!strcmp(key_at(skip + n), "step"), "%s: the key after the rows is %s, not step", family, key_at(skip + n));
}

/* The flag of every row that has one, given the value `target` holds, turns a config that differs from target
 * in that member only into target; rows without a flag are no flag. */
static void check_flags(const char *family, const row *rows, int n, const void *target, size_t size) {
    lc_cli_field f[LC_FIELD_FLAGS_MAX];
    for (int i = 0; i < n; i++) f[i] = rows[i].f;
    for (int i = 0; i < n; i++) {
        const lc_cli_field *r = &f[i];
        if (!r->flag) continue;
        lc_field_flags ff;
        lc_opt opts[LC_FIELD_FLAGS_MAX];
        memset(&ff, 0, sizeof ff);
        const int no = lc_field_flags_add(&ff, f, n, opts, 0);
        CHECK(lc_opt_get(opts, no, r->flag) && !strcmp(lc_opt_get(opts, no, r->flag)->help, r->help), "%s %s: help",
              family, r->flag);
        char value[LC_ATTN_SPEC_CHARS + 32];
        value_text(&rows[i], target, value, sizeof value);
        char *argv[2] = {(char *)r->flag, value};
        const int argc = r->kind == LC_FK_BOOL || r->kind == LC_FK_BOOL_OFF ? 1 : 2;
        unsigned char *cfg = malloc(size);
        memcpy(cfg, target, size);
        /* the member changed: another number, another choice, another text, the flag's opposite */
        unsigned char *at = cfg + r->at;
        if (r->kind == LC_FK_FLOAT) *(float *)at += 0.25f;
        else if (r->kind == LC_FK_TEXT) *at = 'x';
        else *(int *)at = r->kind == LC_FK_CHOICE ? !*(int *)at : *(int *)at + 1;
        CHECK(lc_parse_opts("test", "", opts, no, argc, argv) == -1, "%s %s %s: refused", family, r->flag, value);
        CHECK(lc_field_flags_apply(&ff, opts, no, "test", cfg, 0) == -1, "%s %s %s: not applied", family, r->flag, value);
        CHECK(!memcmp(cfg, target, size), "%s %s %s: the config is not the one given", family, r->flag, value);
        free(cfg);
    }
}

/* The CLI beside this program (build/VARIANT/longctx; LONGCTX_CLI overrides), for the commands' --help. */
static char cli[4096];

/* The --help of the command `args` lists the flag of every row that has one with the row's help line: the
 * command's flags are the table's, not a copy of it. */
static void check_help(const char *family, const row *rows, int n, const char *args) {
    char cmd[4300], line[2048];
    snprintf(cmd, sizeof cmd, "%s %s --help 2>&1", cli, args);
    FILE *p = popen(cmd, "r");
    CHECK(p, "%s: cannot run %s", family, cmd);
    if (!p) return;
    static char out[1 << 16];
    size_t len = 0;
    while (len + 1 < sizeof out && fgets(line, sizeof line, p)) len += (size_t)snprintf(out + len, sizeof out - len, "%s", line);
    CHECK(pclose(p) == 0, "%s: %s failed", family, cmd);
    for (int i = 0; i < n; i++) {
        if (!rows[i].f.flag) continue;
        char want[1024];
        snprintf(want, sizeof want, "\n  %s ", rows[i].f.flag);
        const char *at = strstr(out, want), *end = at ? strchr(at + 1, '\n') : NULL;
        const size_t h = strlen(rows[i].f.help);
        CHECK(at && end && (size_t)(end - at) > h && !strncmp(end - h, rows[i].f.help, h), "%s: `longctx %s --help` "
              "lacks %s with the help line \"%s\"", family, args, rows[i].f.flag, rows[i].f.help);
    }
}

/* A family: its name, rows, key lister and the keys before the rows, the command whose --help lists its flags. */
typedef struct {
    const char *name;
    const row *rows;
    int n;
    const char *(*key_at)(int);
    int skip;
    const char *help_args;
} family;

/* Every check of the family's rows: keys and values of the metadata of a model of config `cfg` (the model's
 * own config: built), the flags, the --help. */
static void check_family(const family *f, const lc_ckpt_meta_strings *meta, const void *built, const void *cfg,
                         size_t size) {
    check_keys(f->name, f->rows, f->n, f->key_at, f->skip, meta, built);
    check_flags(f->name, f->rows, f->n, cfg, size);
    check_help(f->name, f->rows, f->n, f->help_args);
}

TEST(classifier) {
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.n_layer = 1, c.d_model = 16, c.n_head = 2, c.d_ff = 32, c.max_len = 16, c.n_classes = 3, c.d_hidden = 8;
    c.tokens = LC_TOKENS_WORDS, c.vocab = 12, c.dropout = 0.125f, c.pool = LC_POOL_MEAN, c.attn_share = 1;
    c.objective = LC_CLASSIFY_MLM;
    lc_classifier *m = NULL;
    CHECK(lc_classifier_create(&c, 2, 0, 1, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    lc_classify_run run;
    lc_classify_run_default(&run);
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    CHECK(lc_classify_meta_strings(m, &run, meta) == LC_OK, "%s", lc_last_error());
    const family f = {"classify", classify_rows, N_OF(classify_rows), lc_classify_meta_key, 3, "train --task classify"};
    check_family(&f, meta, lc_classifier_config(m), &c, sizeof c);
    free(meta);
    lc_classifier_free(m);
}

TEST(hibert) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    const lc_hibert_stack s = {1, 16, 2, 32, "full"};
    c.sent = s, c.doc = s, c.dec = s;
    c.doc.d_model = 8, c.doc.d_ff = 24, c.dec.n_layer = 2, c.max_sent_len = 12, c.max_sents = 6, c.sent_words = 5;
    c.head_features = 3, c.norm = LC_NORM_POST, c.activation = LC_ACT_RELU, c.dropout = 0.25f;
    const lc_hibert_limits lim = {1, 6, 72, 0, 0};
    lc_hibert *m = NULL;
    CHECK(lc_hibert_create(&c, &lim, 1, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    lc_hibert_run run;
    lc_hibert_run_default(&run);
    run.limits = lim;
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    CHECK(lc_hibert_meta_format(m, &run, meta) == LC_OK, "%s", lc_last_error());
    const family f = {"hibert", hibert_rows, N_OF(hibert_rows), lc_hibert_meta_key, 4, "hibert"}; /* + stage */
    check_family(&f, meta, lc_hibert_get_config(m), &c, sizeof c);
    free(meta);
    lc_hibert_free(m);
}

TEST(seq2seq) {
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    c.enc = (lc_seq2seq_stack){1, 16, 2, 32, "full"};
    c.dec = (lc_seq2seq_stack){2, 8, 2, 24, "full"};
    c.max_src_len = 5, c.max_tgt_len = 7, c.tied = 0, c.dropout = 0.5f, c.norm = LC_NORM_POST;
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, 2, 1, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    lc_seq2seq_run run;
    lc_seq2seq_run_default(&run);
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_seq2seq_meta_strings(m, &run, meta);
    const family f = {"seq2seq", seq2seq_rows, N_OF(seq2seq_rows), lc_seq2seq_meta_key, 3, "train --task seq2seq"};
    check_family(&f, meta, lc_seq2seq_get_config(m), &c, sizeof c);
    free(meta);
    lc_seq2seq_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    const char *env = getenv("LONGCTX_CLI"), *slash = strrchr(argv[0], '/');
    if (env) snprintf(cli, sizeof cli, "%s", env);
    else snprintf(cli, sizeof cli, "%.*s/../longctx", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    RUN(classifier);
    RUN(hibert);
    RUN(seq2seq);
    return test_summary("test_family_fields");
}
