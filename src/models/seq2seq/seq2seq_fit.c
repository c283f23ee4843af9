/* The seq2seq family of lc_fit (models/seq2seq/seq2seq_fit.h): forward and backward of this process's share of a
 * batch of pairs, validation by greedy decoding shared among the processes, and saves by process 0. */
#include "models/seq2seq/seq2seq_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "models/seq2seq/seq2seq.h"
#include "train/dist.h"

/* The order of epoch e: a seeded Fisher-Yates shuffle of 0 .. n-1. */
static void epoch_order(long *order, long n, uint64_t seed, long e) {
    lc_rng r;
    lc_rng_seed(&r, lc_seed_mix(seed, (uint64_t)e));
    for (long i = 0; i < n; i++) order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        const long j = (long)(lc_rng_uniform(&r) * (double)(i + 1)) % (i + 1), x = order[i];
        order[i] = order[j], order[j] = x;
    }
}

typedef struct {
    lc_seq2seq *m;
    const lc_pair_data *train, *valid;
    lc_seq2seq_run *run;
    const lc_train_options *o;
    long *order, epoch; /* the cached order of `epoch` (-1: none yet) */
    const uint8_t **src, **tgt;
    int *src_len, *tgt_len;
    long valid_step;    /* the step of the last validation, and its scores */
    double exact, chars;
    double best;        /* the best score so far, as lc_fit keeps it (NaN: none) */
} s2s_run;

/* The pair at position p of the endless sequence of epochs. */
static long pair_at(s2s_run *r, long p) {
    const long n = r->train->n, e = p / n;
    if (e != r->epoch) epoch_order(r->order, n, r->o->seed, e), r->epoch = e;
    return r->order[p % n];
}

static lc_status s2s_forward(void *run, long k, int rank, int ranks, double *loss_sum, long *count, long *units) {
    s2s_run *r = run;
    const int B = r->o->batch;
    long read = 0;
    for (int j = 0; j < B; j++) {
        const long i = pair_at(r, (k * ranks + rank) * B + j);
        r->src[j] = r->train->src[i], r->src_len[j] = (int)r->train->src_len[i];
        r->tgt[j] = r->train->tgt[i], r->tgt_len[j] = (int)r->train->tgt_len[i];
        read += r->src_len[j] + r->tgt_len[j] + 2;
    }
    const lc_seq2seq_batch b = {B, r->src, r->src_len, r->tgt, r->tgt_len};
    *units = read;
    return lc_seq2seq_forward(r->m, &b, 1, loss_sum, count);
}

static lc_status s2s_backward(void *run, float scale) { return lc_seq2seq_backward(((s2s_run *)run)->m, scale); }

static lc_status s2s_validate(void *run, long step, lc_fit_metrics *out) {
    s2s_run *r = run;
    double t[4];
    lc_status st = lc_seq2seq_tally(r->m, r->valid, lc_dist_rank(), lc_dist_size(), t);
    long failed = st != LC_OK;
    lc_dist_max_longs(&failed, 1); /* every process meets in the sum below, or none */
    if (failed) return st ? st : lc_fail(LC_ERR_ARG, "validation failed on another process");
    lc_dist_sum_doubles(t, 4);
    r->valid_step = step, r->exact = t[1] / t[0], r->chars = t[2] / t[3];
    lc_fit_metrics_add(out, "valid_exact_match", r->exact);
    lc_fit_metrics_add(out, "valid_char_accuracy", r->chars);
    out->score = (float)(r->exact + r->chars / (t[0] + 1)); /* a float: the checkpoint records it exactly */
    if (isnan(r->best) || out->score > r->best) r->best = out->score, r->run->best_exact_match = (float)r->exact;
    out->accuracy = r->exact;
    return LC_OK;
}

static lc_status s2s_save(void *run, const char *path, const lc_fit_record *rec) {
    s2s_run *r = run;
    lc_seq2seq_run saved = *r->run;
    saved.opts = *r->o;
    saved.opts.ranks = lc_dist_size();
    const int now = r->valid_step == rec->step;
    saved.exact_match = now ? (float)r->exact : -1, saved.char_accuracy = now ? (float)r->chars : -1;
    saved.best_score = rec->best_step > 0 ? (float)rec->best_score : -1, saved.best_step = rec->best_step;
    long st = lc_dist_rank() == 0 ? lc_seq2seq_save(r->m, &saved, path) : LC_OK;
    char why[400] = "";
    if (st) snprintf(why, sizeof why, "%s", lc_last_error());
    lc_dist_max_longs(&st, 1); /* every process returns process 0's status */
    if (st && !why[0]) return lc_fail((lc_status)st, "%s: process 0 could not save it", path);
    if (st) return lc_fail((lc_status)st, "%s", why);
    return LC_OK;
}

/* The run's state and the loop's parts for m on train (and valid, may be NULL) with the record *run: the
 * setup lc_seq2seq_fit and the family row's run_open share; s2s_close frees what it took. */
static lc_status s2s_open(s2s_run *r, lc_seq2seq *m, const lc_pair_data *train, const lc_pair_data *valid,
                          lc_seq2seq_run *run, const lc_train_options *o, const lc_fit_family **hooks, lc_fit_params *p) {
    *r = (s2s_run){m, train, valid && valid->n > 0 ? valid : NULL, run, o, NULL, -1, NULL, NULL, NULL, NULL,
                   -1, NAN, NAN, run->best_step > 0 ? run->best_score : NAN};
    if (!train || train->n < 1) return lc_fail(LC_ERR_ARG, "seq2seq training: no training pairs");
    if (o->batch < 1 || o->batch > m->max_pairs)
        return lc_fail(LC_ERR_ARG, "batch must be 1..%d (the model's planned pairs), got %d", m->max_pairs, o->batch);
    const size_t B = (size_t)o->batch;
    r->order = malloc(sizeof(long) * (size_t)train->n);
    r->src = malloc(sizeof *r->src * B), r->tgt = malloc(sizeof *r->tgt * B);
    r->src_len = malloc(sizeof(int) * B), r->tgt_len = malloc(sizeof(int) * B);
    if (!r->order || !r->src || !r->tgt || !r->src_len || !r->tgt_len)
        return lc_fail(LC_ERR_NOMEM, "out of memory for the batches");
    static const lc_fit_family with_valid = {s2s_forward, s2s_backward, s2s_validate, s2s_save},
                               without_valid = {s2s_forward, s2s_backward, NULL, s2s_save};
    *hooks = r->valid ? &with_valid : &without_valid;
    *p = (lc_fit_params){&m->tensors, &m->ptab, m->params, m->grads, m->adam_m, m->adam_v, &m->step};
    return LC_OK;
}

static void s2s_close(s2s_run *r) { free(r->order), free(r->src), free(r->tgt), free(r->src_len), free(r->tgt_len); }

lc_status lc_seq2seq_fit(lc_seq2seq *m, const lc_pair_data *train, const lc_pair_data *valid, lc_seq2seq_run *run,
                         lc_fit_options *fo, lc_fit_result *out) {
    lc_clear_error();
    const lc_train_options *o = fo->o;
    s2s_run r;
    const lc_fit_family *f = NULL;
    lc_fit_params p;
    lc_status st = s2s_open(&r, m, train, valid, run, o, &f, &p);
    if (!st) {
        fo->record = (lc_fit_record){m->step, run->best_step, run->best_step > 0 ? run->best_score : NAN, 0};
        lc_fit_result res;
        st = lc_fit(f, &r, &p, fo, &res);
        run->opts = *o;
        run->best_step = res.record.best_step;
        run->best_score = res.record.best_step > 0 ? (float)res.record.best_score : -1;
        if (out) *out = res;
    }
    s2s_close(&r);
    return st;
}

/* ---------------------------------------------------------------- the family row (models/families.c) */
/* A run of the row: its pairs read from TSV files and a new run record of the options. */
typedef struct {
    s2s_run r;
    lc_pair_data train, valid;
    lc_seq2seq_run record;
} s2s_row_run;

void lc_seq2seq_row_run_close(void *run) {
    s2s_row_run *w = run;
    if (!w) return;
    s2s_close(&w->r);
    lc_pairs_free(&w->train), lc_pairs_free(&w->valid);
    free(w);
}

lc_status lc_seq2seq_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                  void **run, const lc_fit_family **hooks, lc_fit_params *p) {
    *run = NULL;
    s2s_row_run *w = calloc(1, sizeof *w);
    if (!w) return lc_fail(LC_ERR_NOMEM, "out of memory for a seq2seq run");
    lc_seq2seq_run_default(&w->record);
    w->record.opts = *o, w->record.opts.ranks = lc_dist_size();
    lc_status st = lc_pairs_read(train, NULL, NULL, NULL, &w->train);
    if (!st && valid) st = lc_pairs_read(valid, NULL, NULL, NULL, &w->valid);
    w->record.train_pairs = w->train.n;
    if (!st) st = s2s_open(&w->r, model, &w->train, &w->valid, &w->record, o, hooks, p);
    if (st) return lc_seq2seq_row_run_close(w), st;
    *run = w;
    return LC_OK;
}

lc_status lc_seq2seq_row_evaluate(void *model, const char *path, lc_fit_metrics *out) {
    lc_pair_data d;
    lc_status st = lc_pairs_read(path, NULL, NULL, NULL, &d);
    if (st) return st;
    double exact, chars;
    st = lc_seq2seq_evaluate(model, &d, &exact, &chars);
    lc_pairs_free(&d);
    if (st) return st;
    lc_fit_metrics_add(out, "exact_match", exact);
    lc_fit_metrics_add(out, "char_accuracy", chars);
    out->score = exact, out->accuracy = exact, out->bpc = NAN;
    return LC_OK;
}

lc_status lc_seq2seq_row_save(void *model, const char *path) {
    lc_seq2seq_run run;
    lc_seq2seq_run_default(&run);
    return lc_seq2seq_save(model, &run, path);
}
