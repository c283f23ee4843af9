/* HIBERT checkpoints (docs/reference/checkpoint.md, "HIBERT models"): the model's tensor list with AdamW moments and
 * kind state (train/checkpoint_tensors.h), and metadata `model = hibert` from one key table (the three
 * stacks, max_sent_len, max_sents, norm, activation, dropout, stage, step, seed, the run record and the
 * training options shared with the language model's table). Language-model checkpoints are refused with
 * one line, as the language-model reader refuses these. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/hibert/hibert.h"
#include "models/hibert/hibert_fields.h"
#include "train/checkpoint_tensors.h"
#include "train/meta_table.h"

typedef struct {
    lc_hibert_config cfg;
    lc_hibert_run run;
    long step;
    uint64_t seed;
} hmeta;

#define CFG(f) offsetof(hmeta, cfg.f)
#define RUN(f) offsetof(hmeta, run.f)
#define CFG_TYPE lc_hibert_config

_Static_assert(sizeof(lc_hibert_stage) == sizeof(int) && LC_HIBERT_STAGE_FINETUNE == 1 && LC_LABELS_GREEDY == 1,
               "choice fields are read and written as int, names in enum order");

static const meta_key keys[] = {
    FAMILY_HEAD_KEYS("hibert"),
    CHOICE("stage", RUN(stage), "pretrain|finetune", REQUIRED),
    LC_HIBERT_FIELDS(FIELD_KEY)
    STEP_SEED_KEYS(hmeta),
    INT("limits.max_docs", RUN(limits.max_docs), 1, 1 << 20, REQUIRED),
    INT("limits.max_sents", RUN(limits.max_sents), 1, 1 << 24, REQUIRED),
    LONG("limits.max_bytes", RUN(limits.max_bytes), 1, 1L << 30, REQUIRED),
    LONG("limits.max_dec_rows", RUN(limits.max_dec_rows), 0, 1L << 31, 0),
    BOOL("limits.no_decoder", RUN(limits.no_decoder), 0),
    CHOICE("labels", RUN(labels), "contained|greedy", 0),
    BOOL("latin1", RUN(latin1), 0),
    STRING("data.sources", RUN(data), LC_HIBERT_DATA_CHARS, NULL, 0),
    LONG("data.documents", RUN(data_docs), 0, 1LL << 40, 0),
    LONG("data.bytes", RUN(data_bytes), 0, 1LL << 62, 0),
    U64("data.hash", RUN(data_hash), 0),
    {"pretrain.intruders", T_FLOAT, RUN(intruders), 0, 0, 0, 1, 0, NULL, 0},
    {"pretrain.intruder_weight", T_FLOAT, RUN(intruder_weight), 0, 0, 0, 1e6, 0, NULL, 0},
    {"best.score", T_FLOAT, RUN(best), 0, 0, -1, 100, 0, NULL, 0},
    LONG("best.step", RUN(best_step), 0, 1LL << 62, 0),
};

LC_META_FAMILY(hmeta, lc_hibert_meta_key)

void lc_hibert_run_default(lc_hibert_run *r) {
    memset(r, 0, sizeof *r);
    lc_train_options_default(&r->opts);
    r->best = -1;
}

lc_status lc_hibert_meta_format(const lc_hibert *m, const lc_hibert_run *run, lc_ckpt_meta_strings *out) {
    hmeta *h = calloc(1, sizeof *h);
    if (!h) return lc_fail(LC_ERR_NOMEM, "out of memory");
    LC_META_FILL(h, m, run);
    lc_meta_family_format(&family, h, out);
    free(h);
    return LC_OK;
}

lc_status lc_hibert_save(const lc_hibert *m, const lc_hibert_run *run, const char *path) {
    lc_clear_error();
    hmeta *h = calloc(1, sizeof *h);
    if (!h) return lc_fail(LC_ERR_NOMEM, "%s: out of memory saving the checkpoint", path);
    LC_META_FILL(h, m, run);
    const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, &m->tensors);
    lc_status st = lc_ckpt_save_family(path, &bufs, &family, h, NULL, 0);
    free(h);
    return st;
}

static lc_status validate_meta(const void *h) { return lc_hibert_config_validate(&((const hmeta *)h)->cfg); }

/* The metadata of an open file, checked: the kind of model first, then every key, then the config. */
static lc_status parse(const lc_st_file *f, hmeta *h) {
    memset(h, 0, sizeof *h);
    lc_hibert_run_default(&h->run);
    return lc_ckpt_parse_family(f, LC_FAMILY_HIBERT, "hibert", "a HIBERT model", &family, h, validate_meta);
}

/* The tensor list of the configuration the metadata describes against the file's table, before any
 * model is built (so nothing is allocated that the file's bytes do not back). */
static lc_status check_tensors(const lc_st_file *f, const hmeta *h) {
    lc_tensor_list list;
    return lc_ckpt_check_implied(f, lc_hibert_tensor_list(&h->cfg, &list), &list, 0, NULL, NULL);
}

/* The file, its metadata parsed and its tensor table checked against the model the metadata describes (so
 * that no caller builds a model the file does not back). */
static lc_status open_parsed(const char *path, lc_st_file **f, hmeta **h) {
    *h = NULL;
    lc_status st = lc_st_open(path, f);
    if (st) return st;
    if (!(*h = malloc(sizeof **h))) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = parse(*f, *h);
    if (!st) st = check_tensors(*f, *h);
    if (st) {
        lc_st_close(*f);
        free(*h);
        *h = NULL;
    }
    return st;
}

lc_status lc_hibert_checkpoint_info(const char *path, lc_hibert_config *cfg, lc_hibert_run *run) {
    lc_clear_error();
    lc_st_file *f;
    hmeta *h;
    lc_status st = open_parsed(path, &f, &h);
    if (st) return st;
    if (cfg) *cfg = h->cfg;
    if (run) *run = h->run;
    lc_st_close(f);
    free(h);
    return LC_OK;
}

/* A list of the model's tensors against the file, then their values (moments when asked). */
static lc_status read_list(const lc_st_file *f, lc_hibert *m, const lc_tensor_list *list, int moments) {
    const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, list);
    return lc_ckpt_read_family(f, &bufs, moments);
}

/* The model's whole list. */
static lc_status read_into(const lc_st_file *f, lc_hibert *m, int moments) { return read_list(f, m, &m->tensors, moments); }


lc_status lc_hibert_load(const char *path, const lc_hibert_limits *limits, lc_hibert **out, lc_hibert_run *run) {
    lc_clear_error();
    *out = NULL;
    lc_st_file *f;
    hmeta *h;
    lc_status st = open_parsed(path, &f, &h);
    if (st) return st;
    lc_hibert *m = NULL;
    if ((st = lc_hibert_create(&h->cfg, limits ? limits : &h->run.limits, h->seed, &m))) st = lc_ckpt_build_failed(path, st);
    if (!st) st = read_into(f, m, 1);
    if (!st) {
        m->step = h->step;
        if (run) *run = h->run;
        *out = m;
    } else {
        lc_hibert_free(m);
    }
    lc_st_close(f);
    free(h);
    return st;
}

static int stack_differs(const lc_hibert_stack *a, const lc_hibert_stack *b) {
    const char *x = a->attn[0] ? a->attn : "full", *y = b->attn[0] ? b->attn : "full";
    return a->n_layer != b->n_layer || a->d_model != b->d_model || a->n_head != b->n_head || a->d_ff != b->d_ff ||
           strcmp(x, y) != 0;
}

lc_status lc_hibert_init_from(lc_hibert *m, const char *path) {
    lc_clear_error();
    lc_st_file *f;
    hmeta *h;
    lc_status st = open_parsed(path, &f, &h);
    if (st) return st;
    const lc_hibert_config *a = &h->cfg, *b = &m->cfg;
    const lc_hibert_stack *sa[3] = {&a->sent, &a->doc, &a->dec}, *sb[3] = {&b->sent, &b->doc, &b->dec};
    const char *what[3] = {"sentence encoder", "document encoder", "sentence decoder"};
    for (int i = 0; i < 3 && !st; i++)
        if (stack_differs(sa[i], sb[i]))
            st = lc_fail(LC_ERR_ARG, "%s: its %s (%d layers, dim %d, %d heads, ffn %d, attn %s) is not the model's "
                                     "(%d, %d, %d, %d, %s)", path, what[i], sa[i]->n_layer, sa[i]->d_model,
                         sa[i]->n_head, sa[i]->d_ff, sa[i]->attn, sb[i]->n_layer, sb[i]->d_model, sb[i]->n_head,
                         sb[i]->d_ff, sb[i]->attn);
    if (!st && (a->max_sent_len != b->max_sent_len || a->max_sents != b->max_sents || a->norm != b->norm ||
                a->activation != b->activation || a->sent_words != b->sent_words))
        st = lc_fail(LC_ERR_ARG, "%s: max-sent-len %d, max-sents %d, %s-LN, %s, sent-words %d: not the model's "
                                 "(%d, %d, %s-LN, %s, %d)",
                     path, a->max_sent_len, a->max_sents, a->norm ? "post" : "pre", a->activation ? "relu" : "gelu",
                     a->sent_words, b->max_sent_len, b->max_sents, b->norm ? "post" : "pre",
                     b->activation ? "relu" : "gelu", b->sent_words);
    if (!st && a->head_features != b->head_features && a->head_features)
        st = lc_fail(LC_ERR_ARG, "%s: head-features %d: not the model's (%d)", path, a->head_features, b->head_features);
    /* a checkpoint whose head reads no features (pre-training, the paper's head) starts a model whose head does:
     * every tensor but head.features, which keeps its initial zeros */
    lc_tensor_list only = m->tensors;
    if (!st && a->head_features != b->head_features && !(only.t = malloc(sizeof *only.t * (size_t)m->tensors.n)))
        st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st && only.t != m->tensors.t) {
        only.n = 0;
        for (int i = 0; i < m->tensors.n; i++)
            if (strcmp(m->tensors.t[i].name, "head.features") != 0) only.t[only.n++] = m->tensors.t[i];
        only.cap = only.n;
    }
    if (!st) st = read_list(f, m, &only, 0);
    if (only.t != m->tensors.t) free(only.t);
    lc_st_close(f);
    free(h);
    return st;
}
