/* A new model family defined entirely in this file, the way docs/design.md ("Add a model family") says a
 * family is added: "tiny", a bag-of-bytes linear classifier on a labelled TSV (lines "LABEL<TAB>TEXT"), with
 * its own X-macro field table and ONE registry row (lc_family_register). It trains through the library's one
 * loop (lc_family_fit -> lc_fit), saves and resumes (the resumed run equals the uninterrupted one bit for
 * bit), is loaded back through the registry by its checkpoint's metadata "model", and its fields are read and
 * set by name, a bad value refused with one line naming the field.
 *
 * Built with -DLC_TINY_FAMILY_ONLY it is the family alone, as a shared object that registers itself with
 * lc_tiny_family_register: python/tests/test_family_tiny.py loads it next to the package's library. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "longctx/family.h"
#include "nn/tensors.h"
#include "train/checkpoint_fields.h"
#include "train/fit.h"

/* ---------------------------------------------------------------- the family: its config and fields */
typedef struct {
    int classes;
    struct {
        int buckets; /* a byte counts in bucket (byte mod buckets) */
    } shape;
    int pool; /* 0 mean (counts over the text's length), 1 sum (counts / 16) */
    float init_scale;
    char note[32];
    float temperature; /* a run field: the softmax's temperature when predicting */
} tiny_config;

#define TINY_FIELDS(X)                                                                                               \
    X(classes, INT, "--classes", 2, 16, 64, LC_FIELD_REQUIRED, NULL, "classes (labels 0 .. N-1)")                    \
    X(shape.buckets, INT, "--buckets", 1, 256, 256, LC_FIELD_REQUIRED, NULL, "byte buckets (a byte counts in byte mod N)") \
    X(pool, CHOICE, "--pool", 0, 0, 0, LC_FIELD_REQUIRED, "mean|sum", "mean (default: counts over the length) or sum") \
    X(init_scale, FLOAT, "--init-scale", 0, 1, 10, LC_FIELD_REQUIRED, NULL, "initial weights' standard deviation")  \
    X(note, TEXT, "--note", 0, 0, 0, 0, "none", "free text kept in the checkpoint")                                  \
    X(temperature, FLOAT, "--temperature", 0.01, 100, 1000, LC_FIELD_RUN, NULL, "softmax temperature of predictions")

static LC_FIELD_TABLE(tiny_fields, tiny_config, TINY_FIELDS)

static void tiny_default(void *cfg) {
    tiny_config *c = cfg;
    memset(c, 0, sizeof *c);
    c->classes = 2, c->shape.buckets = 32, c->pool = 0, c->init_scale = 0.1f, c->temperature = 1;
}

/* ---------------------------------------------------------------- the model */
typedef struct {
    tiny_config cfg;
    lc_tensor_list tensors;
    lc_table ptab, stab;
    float *params, *grads, *adam_m, *adam_v, *state;
    long step;
    lc_train_options opts; /* of the run that saved it */
} tiny_model;

static lc_tensor_buffers tiny_buffers(tiny_model *m) {
    return (lc_tensor_buffers){&m->ptab, &m->stab, &m->params, &m->grads, &m->adam_m, &m->adam_v, &m->state};
}

static lc_ckpt_tensors tiny_ckpt_tensors(tiny_model *m) {
    return (lc_ckpt_tensors){&m->tensors, &m->ptab, &m->stab, m->params, m->adam_m, m->adam_v, m->state};
}

static void tiny_free(void *model) {
    tiny_model *m = model;
    if (!m) return;
    lc_tensor_buffers b = tiny_buffers(m);
    lc_tensors_release(&m->tensors, &b);
    free(m);
}

static lc_status tiny_create(const void *cfg, uint64_t seed, void **out) {
    tiny_model *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "tiny: out of memory");
    m->cfg = *(const tiny_config *)cfg;
    lc_train_options_default(&m->opts);
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, &m->tensors);
    lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 1, m->cfg.classes, m->cfg.shape.buckets, "head.weight");
    lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_HEAD_B, -1, 1, m->cfg.classes, 0, "head.bias");
    lc_tensor_buffers bufs = tiny_buffers(m);
    lc_status st = lc_tensor_list_finish(&b);
    if (!st) st = lc_tensors_allocate(&m->tensors, &bufs);
    if (st) {
        free(m);
        return st;
    }
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < m->cfg.classes * m->cfg.shape.buckets; i++)
        m->params[i] = m->cfg.init_scale * (float)lc_rng_normal(&rng);
    *out = m;
    return LC_OK;
}

static const lc_ckpt_fields tiny_ckpt = {"tiny", "a tiny model", NULL, 0};

static lc_ckpt_fields tiny_ckpt_of(void) {
    lc_ckpt_fields c = tiny_ckpt;
    c.fields = tiny_fields(&c.n_fields);
    return c;
}

static lc_status tiny_save_model(void *model, const char *path) {
    tiny_model *m = model;
    const lc_ckpt_tensors c = tiny_ckpt_tensors(m);
    const lc_ckpt_fields fam = tiny_ckpt_of();
    return lc_ckpt_fields_save(path, &c, &fam, &m->cfg, m->step, &m->opts);
}

static lc_status tiny_load(const char *path, void **out) {
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    tiny_config cfg;
    tiny_default(&cfg);
    long step = 0;
    lc_train_options o;
    const lc_ckpt_fields fam = tiny_ckpt_of();
    tiny_model *m = NULL;
    st = lc_ckpt_fields_read(f, &fam, &cfg, &step, &o);
    if (!st) st = tiny_create(&cfg, 0, (void **)&m);
    if (!st) st = lc_ckpt_check_table(f, &m->tensors, 0, NULL, NULL);
    if (!st) {
        const lc_ckpt_tensors c = tiny_ckpt_tensors(m);
        st = lc_ckpt_read_tensors(f, &c, 1);
    }
    lc_st_close(f);
    if (st) {
        tiny_free(m);
        return st;
    }
    m->step = step, m->opts = o;
    *out = m;
    return LC_OK;
}

static void *tiny_config_of(void *model) { return &((tiny_model *)model)->cfg; }

/* ---------------------------------------------------------------- its batch source: a labelled TSV */
typedef struct {
    int n, cap;
    int *label;
    float *x; /* [n][buckets] */
} tiny_data;

static void tiny_data_free(tiny_data *d) { free(d->label), free(d->x); }

static lc_status tiny_data_read(const char *path, const tiny_config *c, tiny_data *d) {
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "r");
    if (!f) return lc_fail(LC_ERR_IO, "%s: cannot open", path);
    char line[4096];
    const int K = c->shape.buckets;
    lc_status st = LC_OK;
    for (long no = 1; !st && fgets(line, sizeof line, f); no++) {
        char *tab = strchr(line, '\t'), *end;
        const long y = strtol(line, &end, 10);
        if (!tab || end != tab || y < 0 || y >= c->classes) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: not LABEL<TAB>TEXT with a label in 0..%d", path, no, c->classes - 1);
            break;
        }
        if (d->n == d->cap) {
            d->cap = d->cap ? 2 * d->cap : 64;
            d->label = realloc(d->label, sizeof *d->label * (size_t)d->cap);
            d->x = realloc(d->x, sizeof *d->x * (size_t)d->cap * (size_t)K);
            if (!d->label || !d->x) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
            if (st) break;
        }
        float *x = d->x + (size_t)d->n * (size_t)K;
        memset(x, 0, sizeof *x * (size_t)K);
        const char *text = tab + 1;
        const size_t len = strcspn(text, "\n");
        for (size_t i = 0; i < len; i++) x[(unsigned char)text[i] % K] += 1;
        for (int k = 0; k < K; k++) x[k] /= c->pool == 0 ? (len ? (float)len : 1) : 16;
        d->label[d->n++] = (int)y;
    }
    fclose(f);
    if (!st && d->n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: no examples", path);
    if (st) tiny_data_free(d);
    return st;
}

/* ---------------------------------------------------------------- training through lc_fit */
typedef struct {
    tiny_model *m;
    tiny_data train, valid;
    int batch, last_n, rows[256];
    float dlogits[256][16]; /* the last forward's d loss_sum / d logits */
} tiny_run;

/* logits of example e of d into z; returns log-sum-exp */
static double tiny_logits(const tiny_model *m, const tiny_data *d, int e, double *z, double temperature) {
    const int K = m->cfg.shape.buckets, C = m->cfg.classes;
    const float *w = m->params, *b = m->params + m->ptab.slots[1].offset, *x = d->x + (size_t)e * (size_t)K;
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < C; c++) {
        z[c] = b[c];
        for (int k = 0; k < K; k++) z[c] += (double)w[c * K + k] * x[k];
        z[c] /= temperature;
        if (z[c] > mx) mx = z[c];
    }
    for (int c = 0; c < C; c++) sum += exp(z[c] - mx);
    return mx + log(sum);
}

/* batch k of `ranks` processes reads examples (k * ranks * batch + rank * batch + i) mod n */
static lc_status tiny_forward(void *user, long batch, int rank, int ranks, double *loss_sum, long *count, long *units) {
    tiny_run *r = user;
    double sum = 0, z[16];
    r->last_n = r->batch;
    for (int i = 0; i < r->batch; i++) {
        const int e = (int)((batch * ranks * r->batch + (long)rank * r->batch + i) % r->train.n);
        const double lse = tiny_logits(r->m, &r->train, e, z, 1);
        sum += lse - z[r->train.label[e]];
        for (int c = 0; c < r->m->cfg.classes; c++) r->dlogits[i][c] = (float)(exp(z[c] - lse) - (c == r->train.label[e]));
        r->rows[i] = e;
    }
    *loss_sum = sum, *count = r->batch, *units = r->batch;
    return LC_OK;
}

static lc_status tiny_backward(void *user, float scale) {
    tiny_run *r = user;
    const int K = r->m->cfg.shape.buckets;
    float *gw = r->m->grads, *gb = r->m->grads + r->m->ptab.slots[1].offset;
    for (int i = 0; i < r->last_n; i++)
        for (int c = 0; c < r->m->cfg.classes; c++) {
            const float g = scale * r->dlogits[i][c], *x = r->train.x + (size_t)r->rows[i] * (size_t)K;
            gb[c] += g;
            for (int k = 0; k < K; k++) gw[c * K + k] += g * x[k];
        }
    return LC_OK;
}

static double tiny_accuracy(const tiny_model *m, const tiny_data *d) {
    int right = 0;
    double z[16];
    for (int e = 0; e < d->n; e++) {
        tiny_logits(m, d, e, z, m->cfg.temperature);
        int best = 0;
        for (int c = 1; c < m->cfg.classes; c++)
            if (z[c] > z[best]) best = c;
        right += best == d->label[e];
    }
    return (double)right / d->n;
}

static lc_status tiny_validate(void *user, long step, lc_fit_metrics *out) {
    tiny_run *r = user;
    if (!r->valid.n) return LC_OK;
    const double acc = tiny_accuracy(r->m, &r->valid);
    lc_fit_metrics_add(out, "valid_accuracy", acc);
    out->score = out->accuracy = acc;
    return LC_OK;
}

static lc_status tiny_save(void *user, const char *path, const lc_fit_record *rec) {
    tiny_run *r = user;
    return tiny_save_model(r->m, path);
}

static const lc_fit_family tiny_hooks = {tiny_forward, tiny_backward, tiny_validate, tiny_save};

static void tiny_run_close(void *run) {
    tiny_run *r = run;
    tiny_data_free(&r->train), tiny_data_free(&r->valid);
    free(r);
}

static lc_status tiny_run_open(void *model, const lc_train_options *o, const char *train, const char *valid, void **out,
                               const lc_fit_family **hooks, lc_fit_params *p) {
    tiny_model *m = model;
    if (o->batch > 256) return lc_fail(LC_ERR_ARG, "tiny: batch %d exceeds 256", o->batch);
    tiny_run *r = calloc(1, sizeof *r);
    if (!r) return lc_fail(LC_ERR_NOMEM, "tiny: out of memory");
    r->m = m, r->batch = o->batch;
    lc_status st = tiny_data_read(train, &m->cfg, &r->train);
    if (!st && valid) st = tiny_data_read(valid, &m->cfg, &r->valid);
    if (st) {
        tiny_run_close(r);
        return st;
    }
    m->opts = *o;
    *p = (lc_fit_params){&m->tensors, &m->ptab, m->params, m->grads, m->adam_m, m->adam_v, &m->step};
    *hooks = &tiny_hooks, *out = r;
    return LC_OK;
}

static lc_status tiny_evaluate(void *model, const char *path, lc_fit_metrics *out) {
    tiny_model *m = model;
    tiny_data d;
    lc_status st = tiny_data_read(path, &m->cfg, &d);
    if (st) return st;
    lc_fit_metrics_add(out, "accuracy", tiny_accuracy(m, &d));
    tiny_data_free(&d);
    return LC_OK;
}

/* ---------------------------------------------------------------- its one row */
static const lc_family tiny_family = {
    .name = "tiny", .what = "a tiny model", .data = "a labelled TSV (LABEL<TAB>TEXT)", .fields = tiny_fields,
    .config_size = sizeof(tiny_config), .config_default = tiny_default, .create = tiny_create, .load = tiny_load,
    .save = tiny_save_model, .free = tiny_free, .config = tiny_config_of, .run_open = tiny_run_open,
    .run_close = tiny_run_close, .evaluate = tiny_evaluate,
};

int lc_tiny_family_register(void);
int lc_tiny_family_register(void) { return lc_family_register(&tiny_family); }

#ifdef LC_TINY_FAMILY_ONLY
/* For the Python test: a new model (default config, `note` as given) trained for `steps` steps on the TSV at
 * train, saved to out. */
lc_status lc_tiny_family_train(const char *train, const char *note, long steps, const char *out);
lc_status lc_tiny_family_train(const char *train, const char *note, long steps, const char *out) {
    tiny_config cfg;
    tiny_default(&cfg);
    int n;
    const lc_field *rows = tiny_fields(&n);
    lc_status st = lc_field_set_key(rows, n, &cfg, "note", note);
    void *m = NULL;
    if (!st) st = tiny_create(&cfg, 1, &m);
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.batch = 8, o.lr = 0.3f, o.warmup = 2, o.eval_every = 0;
    if (!st) st = lc_family_fit(&tiny_family, m, &o, train, NULL, out);
    tiny_free(m);
    return st;
}
#endif

#ifndef LC_TINY_FAMILY_ONLY
/* ---------------------------------------------------------------- the tests */
#include "harness.h"
#include "longctx/flat.h"
#include "nn/lm_fields.h"
#include "test_files.h"

/* Two classes told apart by their letters: class 0 writes a-m, class 1 n-z. */
static void write_tsv(const char *path, int n, uint64_t seed) {
    FILE *f = fopen(path, "w");
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        const int y = i % 2;
        fprintf(f, "%d\t", y);
        const int len = 8 + (int)(lc_rng_next(&rng) % 24);
        for (int j = 0; j < len; j++) fputc((y ? 'n' : 'a') + (int)(lc_rng_next(&rng) % 13), f);
        fputc('\n', f);
    }
    fclose(f);
}

static lc_train_options options(long steps) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.batch = 8, o.lr = 0.3f, o.min_lr = 0.03f, o.warmup = 2, o.weight_decay = 0, o.eval_every = 0;
    return o;
}

TEST(one_row_registers_the_family) {
    const int before = lc_family_count();
    CHECK(lc_family_find("tiny") == NULL, "not yet registered");
    CHECK(lc_family_register(&tiny_family) == 0, "%s", lc_last_error());
    CHECK(lc_family_count() == before + 1 && lc_family_find("tiny") == &tiny_family, "found by name");
    CHECK(lc_family_of_model("tiny") == &tiny_family, "found by its checkpoints' model");
    CHECK(lc_family_register(&tiny_family) == -1 && strstr(lc_last_error(), "'tiny' is already registered"), "%s",
          lc_last_error());
    lc_family bad = tiny_family;
    bad.name = "tiny2", bad.models = "xl";
    CHECK(lc_family_register(&bad) == -1 && strstr(lc_last_error(), "'lm'"), "another family's model: %s", lc_last_error());
    bad.name = "Tiny", bad.models = NULL;
    CHECK(lc_family_register(&bad) == -1 && strstr(lc_last_error(), "lower-case"), "%s", lc_last_error());
    char names[256];
    lc_family_names(names, sizeof names);
    CHECK(strcmp(names, "lm, classify, hibert, seq2seq or tiny") == 0, "%s", names);
    CHECK(lc_family_count() == before + 1, "refusals add nothing");
}

TEST(fields_by_name_with_ranges_and_choices) {
    int n;
    const lc_field *t = tiny_fields(&n);
    CHECK(n == 6 && !strcmp(t[1].name, "shape.buckets") && t[1].offset == offsetof(tiny_config, shape.buckets),
          "a nested member is one row: %s", t[1].name);
    tiny_config c;
    tiny_default(&c);
    CHECK(lc_field_set_key(t, n, &c, "buckets", "64") == LC_OK && c.shape.buckets == 64, "by its flag's name");
    CHECK(lc_field_set_key(t, n, &c, "shape.buckets", "48") == LC_OK && c.shape.buckets == 48, "by its key");
    CHECK(lc_field_set_key(t, n, &c, "--init-scale", "0.25") == LC_OK && c.init_scale == 0.25f, "a float");
    CHECK(lc_field_set_key(t, n, &c, "pool", "sum") == LC_OK && c.pool == 1, "a choice");
    CHECK(lc_field_set_key(t, n, &c, "note", "hello") == LC_OK && !strcmp(c.note, "hello"), "a text");
    const tiny_config before = c;
    CHECK(lc_field_set_key(t, n, &c, "buckets", "0") == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "config shape.buckets: '0' is not an integer in 1..256"),
          "%s", lc_last_error());
    CHECK(lc_field_set_key(t, n, &c, "pool", "max") == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "config pool must be mean or sum, got 'max'"),
          "%s", lc_last_error());
    CHECK(lc_field_set_key(t, n, &c, "init_scale", "nan") == LC_ERR_ARG && strstr(lc_last_error(), "init_scale"), "%s",
          lc_last_error());
    CHECK(lc_field_set_key(t, n, &c, "note", "a note longer than thirty-one characters") == LC_ERR_ARG &&
              strstr(lc_last_error(), "longer than 31"), "%s", lc_last_error());
    CHECK(lc_field_set_key(t, n, &c, "width", "3") == LC_ERR_ARG &&
              strstr(lc_last_error(), "unknown config key 'width' (known: classes, shape.buckets, pool"),
          "%s", lc_last_error());
    CHECK(memcmp(&before, &c, sizeof c) == 0, "refusals change nothing");
    char buf[64];
    CHECK(lc_field_format(&t[2], &c, buf, sizeof buf) == LC_OK && !strcmp(buf, "sum"), "%s", buf);
    CHECK(lc_field_format(&t[3], &c, buf, sizeof buf) == LC_OK && !strcmp(buf, "0.25"), "%s", buf);
    CHECK(lc_field_format(&t[3], &c, buf, 3) == LC_ERR_ARG, "a buffer too small");
    /* the binding API describes the registered family from the same rows */
    const char *name, *flag, *choices, *help;
    int kind;
    CHECK(lc_family_field_count("tiny") == 6 && lc_family_field_count("nope") == -1, "counts");
    CHECK(lc_family_field_about("tiny", 2, &name, &kind, &flag, &choices, &help, buf, sizeof buf) == LC_OK &&
              !strcmp(name, "pool") && kind == 3 && !strcmp(flag, "--pool") && !strcmp(choices, "mean|sum") &&
              !strcmp(buf, "mean") && !strcmp(help, t[2].help),
          "about pool: %s", lc_last_error());
    CHECK(lc_family_field_about("tiny", 6, NULL, NULL, NULL, NULL, NULL, NULL, 0) == LC_ERR_ARG, "past the end");
}

/* The language model's rows as a generic table: the same names, flags and defaults as its flat API. */
TEST(the_language_model_row_reads_its_table) {
    const lc_family *lm = lc_family_find("lm");
    CHECK(lm && lc_family_of_model("xl") == lm && lc_family_of_model("vanilla") == lm, "lm by its models");
    CHECK(lc_family_field_count("lm") == LC_LM_FIELD_COUNT, "%d rows", lc_family_field_count("lm"));
    lc_config *cfg = lc_config_new();
    for (int i = 0; i < LC_LM_FIELD_COUNT; i++) {
        const char *name, *flag, *flat_flag;
        char dflt[128], flat[128];
        CHECK(lc_family_field_about("lm", i, &name, NULL, &flag, NULL, NULL, dflt, sizeof dflt) == LC_OK, "%d", i);
        CHECK(!strcmp(name, lc_config_key(i, NULL)), "%s", name);
        lc_config_key_about(i, &flat_flag, NULL, NULL, NULL);
        CHECK(flag == flat_flag || (flag && flat_flag && !strcmp(flag, flat_flag)), "%s: flag", name);
        CHECK(lc_config_get_str(cfg, name, flat, sizeof flat) == LC_OK && !strcmp(flat, dflt), "%s: %s vs %s", name,
              dflt, flat);
    }
    lc_config_free(cfg);
}

static int same_params(const char *a, const char *b) {
    lc_family_model *ma, *mb;
    if (lc_family_model_load(a, &ma)) return 0;
    if (lc_family_model_load(b, &mb)) return lc_family_model_free(ma), 0;
    const tiny_model *x = lc_family_model_handle(ma), *y = lc_family_model_handle(mb);
    const size_t n = x->ptab.total;
    const int same = n == y->ptab.total && x->step == y->step && !memcmp(x->params, y->params, n * sizeof(float)) &&
                     !memcmp(x->adam_m, y->adam_m, n * sizeof(float)) && !memcmp(x->adam_v, y->adam_v, n * sizeof(float));
    lc_family_model_free(ma), lc_family_model_free(mb);
    return same;
}

TEST(trains_saves_resumes_and_loads_through_the_registry) {
    const char *train = tmp_path("train.tsv"), *valid = tmp_path("valid.tsv"), *whole = tmp_path("whole.ckpt"),
               *parts = tmp_path("parts.ckpt");
    write_tsv(train, 200, 1), write_tsv(valid, 60, 2);
    const lc_family *fam = lc_family_find("tiny");
    CHECK(fam == &tiny_family, "registered by the first test");
    if (!fam) return;
    tiny_config cfg;
    fam->config_default(&cfg);
    CHECK(lc_field_set_key(fam->fields(NULL), 6, &cfg, "note", "resumed") == LC_OK, "note");
    lc_train_options o = options(40);
    /* the uninterrupted run */
    void *m;
    CHECK(fam->create(&cfg, 7, &m) == LC_OK, "%s", lc_last_error());
    lc_fit_metrics before = {0}, after = {0};
    CHECK(fam->evaluate(m, valid, &before) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_fit(fam, m, &o, train, valid, whole) == LC_OK, "%s", lc_last_error());
    CHECK(fam->evaluate(m, valid, &after) == LC_OK, "%s", lc_last_error());
    CHECK(after.m[0].value >= 0.95 && after.m[0].value > before.m[0].value, "accuracy %.3f -> %.3f",
          before.m[0].value, after.m[0].value);
    fam->free(m);
    /* the same run stopped after 15 steps, loaded back by its metadata "model", and continued */
    CHECK(fam->create(&cfg, 7, &m) == LC_OK, "%s", lc_last_error());
    lc_train_options first = o;
    first.stop_after = 15;
    CHECK(lc_family_fit(fam, m, &first, train, valid, parts) == LC_OK, "%s", lc_last_error());
    fam->free(m);
    lc_family_model *loaded;
    CHECK(lc_family_model_load(parts, &loaded) == LC_OK, "%s", lc_last_error());
    if (!loaded) return;
    CHECK(!strcmp(lc_family_model_family(loaded), "tiny") && ((tiny_model *)lc_family_model_handle(loaded))->step == 15,
          "family %s", lc_family_model_family(loaded));
    char buf[64];
    CHECK(lc_family_model_get(loaded, "note", buf, sizeof buf) == LC_OK && !strcmp(buf, "resumed"), "%s", buf);
    CHECK(lc_family_fit(fam, lc_family_model_handle(loaded), &o, train, valid, parts) == LC_OK, "%s", lc_last_error());
    lc_family_model_free(loaded);
    CHECK(same_params(whole, parts), "the resumed run equals the uninterrupted one: %s", lc_last_error());
}

TEST(a_loaded_model_sets_run_fields_and_refuses_the_rest) {
    const char *path = tmp_path("whole.ckpt");
    lc_family_model *m;
    CHECK(lc_family_model_load(path, &m) == LC_OK, "%s", lc_last_error());
    if (!m) return;
    char buf[64];
    CHECK(lc_family_model_set(m, "temperature", "2.5") == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_model_get(m, "--temperature", buf, sizeof buf) == LC_OK && !strcmp(buf, "2.5"), "%s", buf);
    CHECK(lc_family_model_set(m, "temperature", "0") == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "config temperature: '0' is not a number in 0.01..100"),
          "%s", lc_last_error());
    CHECK(lc_family_model_set(m, "buckets", "8") == LC_ERR_ARG && strstr(lc_last_error(), "shape.buckets is the shape"),
          "%s", lc_last_error());
    CHECK(lc_family_model_get(m, "shape.buckets", buf, sizeof buf) == LC_OK && !strcmp(buf, "32"), "%s", buf);
    CHECK(lc_family_model_get(m, "temperature", buf, sizeof buf) == LC_OK && !strcmp(buf, "2.5"), "unchanged: %s", buf);
    CHECK(lc_family_model_get(m, "depth", buf, sizeof buf) == LC_ERR_ARG &&
              !strcmp(lc_last_error(), "family tiny has no config field 'depth'"), "%s", lc_last_error());
    const char *names[4];
    double values[4];
    int n = -1;
    CHECK(lc_family_model_evaluate(m, tmp_path("valid.tsv"), names, values, 4, &n) == LC_OK && n == 1 &&
              !strcmp(names[0], "accuracy") && values[0] >= 0.95,
          "evaluated: %d %s", n, lc_last_error());
    CHECK(lc_family_model_evaluate(m, tmp_path("none.tsv"), names, values, 4, &n) == LC_ERR_IO && n == 0 &&
              strstr(lc_last_error(), "none.tsv: cannot open"), "%s", lc_last_error());
    CHECK(lc_family_model_save(m, tmp_path("again.ckpt")) == LC_OK, "%s", lc_last_error());
    lc_family_model_free(m);
    CHECK(same_params(path, tmp_path("again.ckpt")), "saved again: the same state");
}

TEST(bad_metadata_is_refused_naming_the_file_and_key) {
    const char *path = tmp_path("whole.ckpt"), *bad = tmp_path("bad.ckpt");
    lc_family_model *m = NULL;
    file_edit(path, bad, "\"pool\":\"mean\"", "\"pool\":\"maxx\"");
    char want[512];
    snprintf(want, sizeof want, "%s: metadata 'pool' = 'maxx' must be 'mean' or 'sum'", bad);
    CHECK(lc_family_model_load(bad, &m) == LC_ERR_FORMAT && !strcmp(lc_last_error(), want) && !m, "%s",
          lc_last_error());
    file_edit(path, bad, "\"model\":\"tiny\"", "\"model\":\"tinz\"");
    snprintf(want, sizeof want, "%s: metadata model 'tinz' is no family's (families: lm, classify, hibert, seq2seq or tiny)",
             bad);
    CHECK(lc_family_model_load(bad, &m) == LC_ERR_FORMAT && !strcmp(lc_last_error(), want) && !m, "%s",
          lc_last_error());
    file_edit(path, bad, "\"shape.buckets\":\"32\"", "\"shape.buckets\":\"31\"");
    CHECK(lc_family_model_load(bad, &m) == LC_ERR_FORMAT && strstr(lc_last_error(), "head.weight") && !m,
          "a table that is not the metadata's: %s", lc_last_error());
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_family_tiny_XXXXXX")) return 1;
    RUN(one_row_registers_the_family);
    RUN(fields_by_name_with_ranges_and_choices);
    RUN(the_language_model_row_reads_its_table);
    RUN(trains_saves_resumes_and_loads_through_the_registry);
    RUN(a_loaded_model_sets_run_fields_and_refuses_the_rest);
    RUN(bad_metadata_is_refused_naming_the_file_and_key);
    tmpdir_remove();
    return test_summary("test_family_tiny");
}
#endif
