/* Seq2seq checkpoints (docs/seq2seq.md, "Checkpoints"): the model's tensor list with AdamW moments and kind
 * state, and metadata `model = seq2seq` from one key table (both stacks, the longest source and target,
 * norm, activation, dropout, tied, step, seed, the run record and the training options shared with the
 * other families' tables); written and read through train/checkpoint_family.c, the tensors checked
 * against the metadata's model before it is built. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "models/seq2seq/seq2seq.h"
#include "models/seq2seq/seq2seq_fields.h"
#include "train/meta_table.h"

typedef struct {
    lc_seq2seq_config cfg;
    lc_seq2seq_run run;
    long step;
    uint64_t seed;
} smeta;

#define CFG(f) offsetof(smeta, cfg.f)
#define CFG_TYPE lc_seq2seq_config
#define RUN(f) offsetof(smeta, run.f)
#define SCORE(k, at, lo, hi) {k, T_FLOAT, at, 0, 0, lo, hi, 0, NULL, 0}

static const meta_key keys[] = {
    FAMILY_HEAD_KEYS("seq2seq"),
    LC_SEQ2SEQ_FIELDS(FIELD_KEY)
    STEP_SEED_KEYS(smeta),
    SCORE("valid.exact_match", RUN(exact_match), -1, 1),
    SCORE("valid.char_accuracy", RUN(char_accuracy), -1, 1),
    SCORE("best.score", RUN(best_score), -1, 2),
    LONG("best.step", RUN(best_step), 0, 1LL << 62, 0),
    SCORE("best.exact_match", RUN(best_exact_match), -1, 1),
    LONG("data.pairs", RUN(train_pairs), 0, 1LL << 62, 0),
};

LC_META_FAMILY(smeta, lc_seq2seq_meta_key)

void lc_seq2seq_run_default(lc_seq2seq_run *r) {
    memset(r, 0, sizeof *r);
    lc_train_options_default(&r->opts);
    r->exact_match = r->char_accuracy = r->best_score = r->best_exact_match = -1;
}

void lc_seq2seq_meta_strings(const lc_seq2seq *m, const lc_seq2seq_run *run, lc_ckpt_meta_strings *out) {
    smeta h;
    memset(&h, 0, sizeof h);
    LC_META_FILL(&h, m, run);
    lc_meta_family_format(&family, &h, out);
}

lc_status lc_seq2seq_save(const lc_seq2seq *m, const lc_seq2seq_run *run, const char *path) {
    lc_clear_error();
    smeta h;
    memset(&h, 0, sizeof h);
    LC_META_FILL(&h, m, run);
    const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, &m->tensors);
    return lc_ckpt_save_family(path, &bufs, &family, &h, NULL, 0);
}

static lc_status validate_meta(const void *h) { return lc_seq2seq_config_validate(&((const smeta *)h)->cfg); }

lc_status lc_seq2seq_load(const char *path, int max_pairs, lc_seq2seq **out, lc_seq2seq_run *run) {
    lc_clear_error();
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    smeta *h = calloc(1, sizeof *h);
    lc_seq2seq *m = NULL;
    if (!h) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) lc_seq2seq_run_default(&h->run);
    if (!st) st = lc_ckpt_parse_family(f, LC_FAMILY_SEQ2SEQ, "seq2seq", "a seq2seq model", &family, h, validate_meta);
    lc_tensor_list list;
    if (!st) st = lc_ckpt_check_implied(f, lc_seq2seq_tensor_list(&h->cfg, &list), &list, 0, NULL, NULL);
    if (!st && (st = lc_seq2seq_create(&h->cfg, max_pairs > 0 ? max_pairs : h->run.opts.batch, h->seed, &m)))
        st = lc_ckpt_build_failed(path, st);
    if (!st) {
        const lc_ckpt_tensors bufs = LC_CKPT_TENSORS_OF(m, &m->tensors);
        st = lc_ckpt_read_family(f, &bufs, 1);
    }
    if (!st && run) *run = h->run;
    if (!st) m->step = h->step, *out = m;
    else lc_seq2seq_free(m);
    lc_st_close(f);
    free(h);
    return st;
}
