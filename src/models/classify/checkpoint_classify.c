/* Classifier checkpoints (docs/reference/checkpoint.md, "Classification models"): the tensor list with AdamW moments
 * and kind state (train/checkpoint_tensors.h), metadata `model = classify` from one key table (the
 * encoder's shape, the tokens, the classes and the head, step, seed, the run and the training options
 * shared with the language model's table), the label set and the word vocabulary as two metadata texts;
 * and the start of an encoder from a masked-LM checkpoint. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/classify/classify.h"
#include "models/classify/classify_fields.h"
#include "train/checkpoint_tensors.h"
#include "train/meta_table.h"

typedef struct {
    lc_classify_config cfg;
    lc_classify_run run;
    long step;
    uint64_t seed;
} cmeta;

#define CFG(f) offsetof(cmeta, cfg.f)
#define CFG_TYPE lc_classify_config
_Static_assert(sizeof(lc_tokens) == sizeof(int) && sizeof(lc_pool) == sizeof(int) && LC_TOKENS_WORDS == 1 &&
                   LC_POOL_MEAN == 1 && LC_POOL_MAX == 2 && sizeof(lc_classify_objective) == sizeof(int) &&
                   LC_CLASSIFY_MLM == 1,
               "choice fields are read and written as int, names in enum order");

static const meta_key keys[] = {
    FAMILY_HEAD_KEYS("classify"),
    LC_CLASSIFY_FIELDS(FIELD_KEY)
    STEP_SEED_KEYS(cmeta),
    {"valid_accuracy", T_FLOAT, offsetof(cmeta, run.valid_accuracy), 0, 0, -1, 1, 0, NULL, 0},
    LONG("examples", offsetof(cmeta, run.examples), 0, 1LL << 62, 0),
    {"best.accuracy", T_FLOAT, offsetof(cmeta, run.best_accuracy), 0, 0, -1, 1, 0, NULL, 0},
    LONG("best.step", offsetof(cmeta, run.best_step), 0, 1LL << 62, 0),
    LONG("data.examples", offsetof(cmeta, run.train_examples), 0, 1LL << 62, 0),
};

LC_META_FAMILY(cmeta, lc_classify_meta_key)

void lc_classify_run_default(lc_classify_run *r) {
    memset(r, 0, sizeof *r);
    lc_train_options_default(&r->opts);
    r->valid_accuracy = -1, r->best_accuracy = -1;
}

/* What a checkpoint of m with the record run holds, in h. */
static void fill_meta(const lc_classifier *m, const lc_classify_run *run, cmeta *h) {
    LC_META_FILL(h, m, run);
    h->run.opts.batch = m->max_batch;
}

/* The metadata of m with the record run, in h (a scratch) and meta. */
static void format_meta(const lc_classifier *m, const lc_classify_run *run, cmeta *h, lc_ckpt_meta_strings *meta) {
    fill_meta(m, run, h);
    lc_meta_family_format(&family, h, meta);
}

lc_status lc_classify_meta_strings(const lc_classifier *m, const lc_classify_run *run, lc_ckpt_meta_strings *out) {
    cmeta *h = calloc(1, sizeof *h);
    if (!h) return lc_fail(LC_ERR_NOMEM, "out of memory listing the classifier's settings");
    format_meta(m, run, h, out);
    free(h);
    return LC_OK;
}

lc_status lc_classifier_save(const lc_classifier *m, const lc_classify_run *run, const lc_label_set *labels,
                             const lc_word_vocab *words, const char *path) {
    lc_clear_error();
    if (!labels || labels->n != m->cfg.n_classes)
        return lc_fail(LC_ERR_ARG, "%s: a label set of %d labels for a model of %d classes", path, labels ? labels->n : 0,
                       m->cfg.n_classes);
    if ((m->cfg.tokens == LC_TOKENS_WORDS) != (words != NULL) ||
        (words && lc_word_vocab_size(words) != m->cfg.vocab))
        return lc_fail(LC_ERR_ARG, "%s: a words model is saved with its vocabulary of %d ids (and only it)", path,
                       m->cfg.vocab);
    cmeta *h = calloc(1, sizeof *h);
    char *label_text = NULL, *word_text = NULL;
    lc_status st = h ? LC_OK : lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    if (!st) st = lc_label_set_save(labels, &label_text);
    if (!st && words) st = lc_word_vocab_save(words, &word_text, NULL);
    if (!st) {
        fill_meta(m, run, h);
        const lc_st_meta extra[2] = {{"classify.labels", label_text}, {"classify.words", word_text}};
        const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, &m->tensors);
        st = lc_ckpt_save_family(path, &bufs, &family, h, extra, word_text ? 2 : 1);
    }
    free(h), free(label_text), free(word_text);
    return st;
}

static lc_status validate_meta(const void *h) { return lc_classify_config_validate(&((const cmeta *)h)->cfg); }

/* The metadata of an open file: the kind of model first, then every key, the config, the labels, the words. */
static lc_status parse(const lc_st_file *f, cmeta *h, lc_label_set *labels, lc_word_vocab **words) {
    memset(h, 0, sizeof *h);
    lc_classify_run_default(&h->run);
    const char *path = lc_st_path(f);
    lc_status st = lc_ckpt_parse_family(f, LC_FAMILY_CLASSIFY, "classify", "a classifier", &family, h, validate_meta);
    if (st) return st;
    char why[400];
    const char *lt = lc_st_get_meta(f, "classify.labels"), *wt = lc_st_get_meta(f, "classify.words");
    if (!lt) return lc_fail(LC_ERR_FORMAT, "%s: checkpoint metadata lacks 'classify.labels'", path);
    int announced = 0; /* the count first: no set of another size is parsed */
    if (sscanf(lt, "longctx-labels 1 %d", &announced) == 1 && announced != h->cfg.n_classes)
        return lc_fail(LC_ERR_FORMAT, "%s: 'classify.labels' announces %d labels for n_classes %d", path, announced,
                       h->cfg.n_classes);
    if (lc_label_set_load(lt, labels)) {
        snprintf(why, sizeof why, "%s", lc_last_error());
        return lc_fail(LC_ERR_FORMAT, "%s: metadata 'classify.labels': %s", path, why);
    }
    if (labels->n != h->cfg.n_classes) {
        const int n = labels->n;
        lc_label_set_free(labels);
        return lc_fail(LC_ERR_FORMAT, "%s: %d labels in 'classify.labels' for n_classes %d", path, n, h->cfg.n_classes);
    }
    if (h->cfg.tokens != LC_TOKENS_WORDS || !words) return LC_OK;
    if (!wt) st = lc_fail(LC_ERR_FORMAT, "%s: a words model without metadata 'classify.words'", path);
    else if (lc_word_vocab_load(wt, strlen(wt), words)) {
        snprintf(why, sizeof why, "%s", lc_last_error());
        st = lc_fail(LC_ERR_FORMAT, "%s: metadata 'classify.words': %s", path, why);
    } else if (lc_word_vocab_size(*words) != h->cfg.vocab) {
        st = lc_fail(LC_ERR_FORMAT, "%s: 'classify.words' has %d ids, vocab says %d", path, lc_word_vocab_size(*words),
                     h->cfg.vocab);
        lc_word_vocab_free(*words);
        *words = NULL;
    }
    if (st) lc_label_set_free(labels);
    return st;
}

/* The tensor list of the configuration the metadata describes against the file's table, before the model
 * is built. */
static lc_status check_tensors(const lc_st_file *f, const lc_classify_config *c) {
    lc_attn_layer *layers = malloc(sizeof *layers * (size_t)c->n_layer);
    if (!layers) return lc_fail(LC_ERR_NOMEM, "%s: out of memory checking the tensors", lc_st_path(f));
    char err[400];
    lc_tensor_list list;
    lc_status st;
    if (lc_classify_layers(c, layers, err, sizeof err))
        st = lc_fail(LC_ERR_FORMAT, "%s: bad model config: attn: %s", lc_st_path(f), err);
    else
        st = lc_ckpt_check_implied(f, lc_classify_tensors(c, layers, &list), &list, 0, NULL, NULL);
    free(layers);
    return st;
}

lc_status lc_classifier_load(const char *path, int max_batch, long max_rows, lc_classifier **out, lc_classify_run *run,
                             lc_label_set *labels, lc_word_vocab **words) {
    lc_clear_error();
    *out = NULL;
    memset(labels, 0, sizeof *labels);
    if (words) *words = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    cmeta *h = malloc(sizeof *h);
    lc_classifier *m = NULL;
    st = h ? parse(f, h, labels, words) : lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = check_tensors(f, &h->cfg);
    if (!st && (st = lc_classifier_create(&h->cfg, max_batch > 0 ? max_batch : h->run.opts.batch, max_rows, h->seed, &m)))
        st = lc_ckpt_build_failed(path, st);
    if (!st) {
        const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, &m->tensors);
        st = lc_ckpt_read_family(f, &bufs, 1);
    }
    if (!st && run) *run = h->run;
    if (!st) m->step = h->step, *out = m;
    else {
        lc_classifier_free(m);
        if (h && labels->name) lc_label_set_free(labels);
        if (words && *words) lc_word_vocab_free(*words), *words = NULL;
    }
    lc_st_close(f);
    free(h);
    return st;
}
