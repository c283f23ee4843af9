/* HIBERT's training run on the one training loop (hibert_fit.h): its batches of chunks, its forward and
 * backward (pre-training with or without intruders, fine-tuning), its validation shared from process 0, and
 * its saves of the model with the run record. */
#include "models/hibert/hibert_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "models/hibert/hibert.h"
#include "train/dist.h"

typedef struct {
    const lc_hibert_fit_options *o;
    int finetune, B;
    lc_hbatch h;
    int *perm, *idx;   /* the epoch's order of the training chunks; this process's chunks of a batch */
    long perm_epoch;
    double intruder_bce; /* of the last forward (NaN without intruders) */
    long end;          /* the schedule's last step */
    int stopping;      /* should_stop said so: the saves that follow are the run's last */
} hfit;

/* perm[0..N) = 0..N-1 shuffled (Fisher-Yates) from seed. */
static void shuffled(int *perm, int N, uint64_t seed) {
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int k = 0; k < N; k++) perm[k] = k;
    for (int k = N - 1; k > 0; k--) {
        const int j = (int)(lc_rng_next(&r) % (uint64_t)(k + 1)), s = perm[k];
        perm[k] = perm[j], perm[j] = s;
    }
}

/* This process's chunks of batch k: positions k*R*B + rank*B .. + B-1 of the epochs of the training chunks,
 * each epoch shuffled from the seed. */
static void chunks_of(hfit *r, long k, int rank, int ranks) {
    const int N = r->o->train->n_chunks, B = r->B;
    for (int i = 0; i < B; i++) {
        const long pos = (k * ranks + rank) * B + i, epoch = pos / N;
        if (epoch != r->perm_epoch) {
            shuffled(r->perm, N, lc_seed_mix(r->o->run->opts.seed, (uint64_t)epoch));
            r->perm_epoch = epoch;
        }
        r->idx[i] = r->perm[pos % N];
    }
}

static lc_status hibert_forward(void *run, long k, int rank, int ranks, double *loss_sum, long *count, long *units) {
    hfit *r = run;
    const lc_hibert_run *hr = r->o->run;
    chunks_of(r, k, rank, ranks);
    r->o->m->noise_rank = rank, r->o->m->noise_ranks = ranks; /* each process its own dropout */
    lc_status st = lc_hbatch_make(&r->h, r->o->train, r->idx, r->B);
    if (st) return st;
    *units = 0;
    for (int k2 = 0, n = 0; k2 < r->h.b.n_docs; n += r->h.b.n_sents[k2], k2++)
        for (int j = n; j < n + r->h.b.n_sents[k2]; j++) *units += r->h.len[j] + 1;
    if (r->finetune) return lc_hibert_extract_forward(r->o->m, &r->h.b, r->h.labels, 1, loss_sum, count);
    /* the masking rule's seed of document j of the whole batch is seed + j: this process's first is rank*B */
    const uint64_t seed = lc_seed_mix(hr->opts.seed ^ 0x6d61736bULL, (uint64_t)k) + (uint64_t)rank * (uint64_t)r->B;
    if (!(hr->intruders > 0)) return lc_hibert_pretrain_forward(r->o->m, &r->h.b, seed, 1, loss_sum, count);
    r->intruder_bce = 0;
    if (!(hr->intruder_weight > 0)) return lc_hibert_pretrain_forward(r->o->m, &r->h.b, seed, 1, loss_sum, count);
    return lc_hibert_pretrain_forward_intruders(r->o->m, &r->h.b, seed, hr->intruders, hr->intruder_weight, loss_sum,
                                              count, &r->intruder_bce);
}

static lc_status hibert_backward(void *run, float scale) { return lc_hibert_backward(((hfit *)run)->o->m, scale); }

/* Pre-training's validation: bits per byte on the held-out chunks (the first eval_docs of one fixed shuffled
 * order) and, with intruders, their mean BCE there. The order is shuffled because sorted order puts one topic
 * (a BBC folder) in every batch, and intruders swapped in from articles of the same topic are far harder to
 * find than in training's shuffled batches (experiments/hibert-plateau/README.md). */
static lc_status pretrain_validate(const hfit *r, double *bpb, double *ibce) {
    const lc_hdocs *valid = r->o->valid;
    const int B = r->B, n = r->o->eval_docs > 0 && r->o->eval_docs < valid->n_chunks ? r->o->eval_docs : valid->n_chunks;
    const float rate = r->o->run->intruders;
    int *order = malloc(sizeof(int) * (size_t)valid->n_chunks), *idx = malloc(sizeof(int) * (size_t)B);
    lc_hbatch h = {0};
    double sum = 0, isum = 0;
    long count = 0, icount = 0;
    lc_status st = order && idx ? LC_OK : lc_fail(LC_ERR_NOMEM, "hibert: out of memory");
    if (!st) shuffled(order, valid->n_chunks, 0x68656c64ULL);
    for (int c0 = 0; c0 < n && !st; c0 += B) {
        const int k = n - c0 < B ? n - c0 : B;
        for (int i = 0; i < k; i++) idx[i] = order[c0 + i];
        double s = 0;
        long c = 0;
        if (!(st = lc_hbatch_make(&h, valid, idx, k)) &&
            !(st = lc_hibert_pretrain_forward(r->o->m, &h.b, 0x76616c6964ULL + (uint64_t)c0, 0, &s, &c)))
            sum += s, count += c;
        if (!st && rate > 0 && !(st = lc_hibert_intruder_forward(r->o->m, &h.b, rate, 0x696e7472ULL + (uint64_t)c0, 0, &s, &c)))
            isum += s, icount += c;
    }
    lc_hbatch_free(&h);
    free(order), free(idx);
    *bpb = count ? sum / count / log(2.0) : NAN;
    *ibce = icount ? isum / icount : NAN;
    return st;
}

static const char *const rouge_keys[6] = {"valid_rouge1",      "valid_rouge2",      "valid_rougeL",
                                          "valid_rouge1_stem", "valid_rouge2_stem", "valid_rougeL_stem"};

/* Process 0 validates; every process gets its numbers (so all keep the same best). */
static lc_status hibert_validate(void *run, long step, lc_fit_metrics *out) {
    (void)step;
    hfit *r = run;
    if (!r->o->valid->n_chunks) return LC_OK;
    double v[7] = {0}; /* the numbers, then 1 when process 0 failed */
    lc_status st = LC_OK;
    if (lc_dist_rank() == 0) {
        st = r->finetune ? lc_hdocs_rouge(r->o->m, r->o->valid, r->B, v) : pretrain_validate(r, &v[0], &v[1]);
        v[6] = st != LC_OK;
    }
    lc_dist_sum_doubles(v, 7);
    if (st) return st;
    if (v[6] != 0) return lc_fail(LC_ERR_IO, "hibert: the validation of process 0 failed");
    if (r->finetune) {
        for (int i = 0; i < 6; i++) lc_fit_metrics_add(out, rouge_keys[i], v[i]);
        out->score = (float)((v[0] + v[1] + v[2]) / 3); /* the record keeps a float */
    } else {
        lc_fit_metrics_add(out, "valid_bpb", v[0]);
        if (r->o->run->intruders > 0) lc_fit_metrics_add(out, "valid_intruder_bce", v[1]);
        out->bpc = v[0];
    }
    return LC_OK;
}

/* Process 0 writes the model and the run with its record; a periodic save's failure is the caller's warning. */
static lc_status hibert_save(void *run, const char *path, const lc_fit_record *rec) {
    hfit *r = run;
    if (lc_dist_rank() != 0) return LC_OK;
    lc_hibert_run *hr = r->o->run;
    if (rec->best_step > 0) hr->best = (float)rec->best_score, hr->best_step = rec->best_step;
    lc_status st = lc_hibert_save(r->o->m, hr, path);
    if (!st || rec->best || r->stopping || rec->step >= r->end || !r->o->save_failed) return st;
    r->o->save_failed(rec->step, r->o->user);
    return LC_OK;
}

static int hibert_should_stop(void *user) {
    hfit *r = user;
    if (r->o->should_stop && r->o->should_stop(r->o->user)) r->stopping = 1;
    return r->stopping;
}

static void hibert_report(const lc_progress *p, const lc_fit_metrics *valid, const char *extra, void *user) {
    (void)extra;
    hfit *r = user;
    if (r->o->report) r->o->report(p, valid, r->intruder_bce, r->o->user);
}

/* The run's state and the loop's parts for o: the setup lc_hibert_fit and the family row's run_open share;
 * hf_close frees what it took. */
static lc_status hf_open(hfit *r, const lc_hibert_fit_options *o, const lc_fit_family **hooks, lc_fit_params *p) {
    lc_hibert *m = o->m;
    lc_hibert_run *hr = o->run;
    const int finetune = hr->stage == LC_HIBERT_STAGE_FINETUNE;
    memset(r, 0, sizeof *r);
    if (!finetune && hr->intruders > 0 && lc_dist_size() > 1)
        return lc_fail(LC_ERR_ARG, "hibert pretrain: intruders swap sentences between the documents of one batch, "
                                   "which processes training together do not share: run it in one process");
    if (!o->train->n_chunks) return lc_fail(LC_ERR_ARG, "hibert: no training documents");
    r->o = o, r->finetune = finetune, r->B = hr->opts.batch, r->perm_epoch = -1, r->intruder_bce = NAN;
    r->end = hr->opts.steps;
    r->h.features = finetune ? lc_hibert_get_config(m)->head_features : 0;
    r->perm = malloc(sizeof(int) * (size_t)o->train->n_chunks), r->idx = malloc(sizeof(int) * (size_t)r->B);
    hr->opts.ranks = lc_dist_size();
    static const lc_fit_family family = {hibert_forward, hibert_backward, hibert_validate, hibert_save};
    *hooks = &family;
    *p = (lc_fit_params){&m->tensors, &m->ptab, m->params, m->grads, m->adam_m, m->adam_v, &m->step};
    return r->perm && r->idx ? LC_OK : lc_fail(LC_ERR_NOMEM, "hibert: out of memory");
}

static void hf_close(hfit *r) {
    if (r->o) r->o->m->noise_rank = 0, r->o->m->noise_ranks = 0; /* the step alone keys dropout again */
    lc_hbatch_free(&r->h);
    free(r->perm), free(r->idx);
}

lc_status lc_hibert_fit(const lc_hibert_fit_options *o, lc_fit_result *out) {
    lc_clear_error();
    lc_hibert_run *hr = o->run;
    hfit r;
    const lc_fit_family *family = NULL;
    lc_fit_params p;
    lc_status st = hf_open(&r, o, &family, &p);
    if (st && !r.o) return st;
    lc_fit_options fo = {0};
    fo.o = &hr->opts, fo.save_every = o->save_every, fo.save_every_min = o->save_every_min;
    fo.best_path = r.finetune ? o->best_path : NULL, fo.last_path = o->last_path;
    fo.record = (lc_fit_record){0, hr->best_step, hr->best_step > 0 ? hr->best : NAN, 0};
    fo.should_stop = hibert_should_stop, fo.report = hibert_report, fo.user = &r;
    lc_fit_result res = {0};
    if (!st) st = lc_fit(family, &r, &p, &fo, &res);
    if (res.record.best_step > 0) hr->best = (float)res.record.best_score, hr->best_step = res.record.best_step;
    if (!st && res.steps_done == res.first_step && o->last_path) { /* nothing left to train: saved as it is */
        const lc_fit_record rec = {res.steps_done, res.record.best_step, res.record.best_score, 0};
        st = hibert_save(&r, o->last_path, &rec);
    }
    hf_close(&r);
    if (out) *out = res;
    return st;
}

/* ---------------------------------------------------------------- the family row (models/families.c) */
/* A fine-tuning run of the row: the documents of its sources and a new run record of the options. */
typedef struct {
    hfit r;
    lc_hibert_run run;
    lc_hdocs train, valid;
    lc_hibert_fit_options fo;
} hf_row_run;

void lc_hibert_row_run_close(void *run) {
    hf_row_run *w = run;
    if (!w) return;
    hf_close(&w->r);
    lc_hdocs_free(&w->train), lc_hdocs_free(&w->valid);
    free(w);
}

lc_status lc_hibert_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                 void **run, const lc_fit_family **hooks, lc_fit_params *p) {
    *run = NULL;
    lc_hibert *m = model;
    if (valid)
        return lc_fail(LC_ERR_ARG, "hibert: %s: the validation documents are the held-out part of the training "
                                   "sources (give no validation file)", valid);
    if (strlen(train) >= LC_HIBERT_DATA_CHARS) return lc_fail(LC_ERR_ARG, "hibert: the sources' paths are too long");
    hf_row_run *w = calloc(1, sizeof *w);
    if (!w) return lc_fail(LC_ERR_NOMEM, "out of memory for a HIBERT run");
    lc_status st = lc_hibert_row_run_prepare(&w->run, o, train, m, &w->train, &w->valid);
    w->fo = (lc_hibert_fit_options){m, &w->run, &w->train, &w->valid, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL};
    if (!st) st = hf_open(&w->r, &w->fo, hooks, p);
    if (st) return lc_hibert_row_run_close(w), st;
    *run = w;
    return LC_OK;
}

lc_status lc_hibert_row_run_prepare(lc_hibert_run *run, const lc_train_options *o, const char *sources,
                                    const lc_hibert *m, lc_hdocs *train, lc_hdocs *valid) {
    const lc_hibert_config *cfg = lc_hibert_get_config(m);
    lc_hibert_run_default(run);
    run->stage = LC_HIBERT_STAGE_FINETUNE, run->opts = *o;
    snprintf(run->data, sizeof run->data, "%s", sources);
    lc_status st = lc_hdocs_load_sources(train, valid, run->data, cfg->max_sents, 0, run->labels);
    if (st) return st;
    run->data_hash = train->hash, run->data_docs = train->n_chunks, run->data_bytes = train->bytes;
    run->limits = lc_hdocs_limits(train, valid, o->batch, cfg, 0);
    return LC_OK;
}

lc_status lc_hibert_row_evaluate(void *model, const char *path, lc_fit_metrics *out) {
    lc_hibert *m = model;
    lc_hdocs train, valid;
    lc_status st = lc_hdocs_load_sources(&train, &valid, path, lc_hibert_get_config(m)->max_sents, 0, 0);
    double r[6];
    if (!st && !valid.n_chunks) st = lc_fail(LC_ERR_ARG, "hibert: %s has no held-out documents", path);
    if (!st) st = lc_hdocs_rouge(m, &valid, m->lim.max_docs, r);
    for (int i = 0; !st && i < 6; i++) lc_fit_metrics_add(out, rouge_keys[i] + 6, r[i]); /* without "valid_" */
    if (!st) out->score = (r[0] + r[1] + r[2]) / 3, out->bpc = out->accuracy = NAN;
    lc_hdocs_free(&train), lc_hdocs_free(&valid);
    return st;
}

lc_status lc_hibert_row_save(void *model, const char *path) {
    lc_hibert *m = model;
    lc_hibert_run run;
    lc_hibert_run_default(&run);
    run.limits = m->lim;
    return lc_hibert_save(m, &run, path);
}
