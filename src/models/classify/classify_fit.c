/* The sequence classifier as a family of the one training loop (models/classify/classify_fit.h): the epochs' order,
 * the forward and backward of a process's share of a batch for either objective, the validation pass
 * (batches shared among the processes, the counts summed) and the saves of the best and the last state. */
#include "models/classify/classify_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "models/classify/classify.h"
#include "train/dist.h"

typedef struct {
    lc_classifier *m;
    const lc_classify_data *d;
    const lc_classify_fit_options *fo;
    lc_classify_texts train, valid;
    int B, R, rank, n;       /* per-process batch, processes, this one, examples of a batch of all processes */
    long per_epoch, epoch;   /* batches per epoch; the epoch in order[] (-1: none yet) */
    long *order, *keys;      /* [train.n] this epoch's order; [64 * B * R] its sorting */
    int *labels, *pred;      /* [B] a batch's labels; [valid.n] predictions */
    lc_classify_buffers buf;
    /* masked tokens with several processes: the rows of the whole batch key the masks */
    int *all_len, *scratch_ids; /* [B * R] tokens of every example of a batch; [max_len] */
    long *all_keys, *scratch;   /* [B * R] each example's first row in the whole batch's packing; [B * R] */
    double last_acc;         /* the latest validation accuracy and its step */
    long last_step;
    double best_score;       /* the loop's best (mirrored for the reports), NaN: none */
    double best_acc;
    long best_step;
    int stop_signal;
} crun;

static int is_mlm(const crun *r) { return lc_classifier_config(r->m)->objective == LC_CLASSIFY_MLM; }

/* The order of epoch e: a seeded shuffle, then sorted by length in chunks of 64 batches of every process
 * (the batches of a chunk from the shortest examples to the longest). */
static void epoch_order(crun *r, long e) {
    const long N = r->train.n;
    lc_rng g;
    lc_rng_seed(&g, lc_seed_mix(r->fo->o->seed, (uint64_t)e));
    for (long i = 0; i < N; i++) r->order[i] = i;
    for (long i = N - 1; i > 0; i--) {
        const long j = (long)(lc_rng_uniform(&g) * (double)(i + 1)) % (i + 1), x = r->order[i];
        r->order[i] = r->order[j], r->order[j] = x;
    }
    const long chunk = 64L * r->B * r->R;
    for (long s = 0; s < N; s += chunk) {
        const long n = N - s < chunk ? N - s : chunk;
        lc_classify_sort_by_length(r->keys, r->order + s, n, r->train.len);
        memcpy(r->order + s, r->keys, sizeof(long) * (size_t)n);
    }
    r->epoch = e;
}

/* This process's share of a batch of every process (texts idx[0 .. N)): examples lo .. lo + b.n of it,
 * tokenized; with masked tokens and several processes, *key0 the first row of each of them in the whole
 * batch (NULL otherwise: the rows of this batch). */
static lc_classify_batch share(crun *r, const lc_classify_texts *t, const long *idx, int N, int *lo, const long **key0) {
    const int a = (int)((long)N * r->rank / r->R), z = (int)((long)N * (r->rank + 1) / r->R);
    const lc_classify_batch b = lc_classify_tokenize(r->m, r->d->vocab, t, idx + a, z - a, &r->buf);
    *lo = a, *key0 = NULL;
    if (!is_mlm(r) || r->R == 1) return b;
    const lc_classify_config *c = lc_classifier_config(r->m);
    for (int j = 0; j < N; j++) {
        if (j >= a && j < z) {
            r->all_len[j] = b.len[j - a];
            continue;
        }
        const long all = lc_classify_tokens(c, r->d->vocab, t->text[idx[j]], t->len[idx[j]], c->max_len, r->scratch_ids, NULL);
        r->all_len[j] = (int)(all < c->max_len ? all : c->max_len);
    }
    lc_classify_row_keys(r->m, r->all_len, N, r->scratch, r->all_keys);
    *key0 = r->all_keys + a;
    return b;
}

/* Batch k is epoch k / per_epoch, positions (k % per_epoch) * n ...; process `rank` takes its share. */
static lc_status cf_forward(void *run, long k, int rank, int ranks, double *loss_sum, long *count, long *units) {
    crun *r = run;
    (void)rank, (void)ranks; /* lc_dist's, as r->rank and r->R */
    if (k / r->per_epoch != r->epoch) epoch_order(r, k / r->per_epoch);
    const long *all = r->order + (k % r->per_epoch) * r->n, *key0;
    int lo;
    const lc_classify_batch b = share(r, &r->train, all, r->n, &lo, &key0);
    const int n = b.n;
    const long *idx = all + lo;
    *units = 0;
    for (int i = 0; i < n; i++) *units += b.len[i] + 1;
    if (is_mlm(r))
        return lc_classify_mlm_forward_keyed(r->m, &b, lc_seed_mix(r->m->seed ^ 0x6d6c6dULL, (uint64_t)r->m->step),
                                             key0, 1, loss_sum, count, NULL);
    for (int i = 0; i < n; i++) r->labels[i] = r->d->train->label[idx[i]];
    *count = n;
    return lc_classifier_forward(r->m, &b, r->labels, 1, loss_sum, NULL);
}

static lc_status cf_backward(void *run, float scale) {
    crun *r = run;
    return is_mlm(r) ? lc_classifier_mlm_backward(r->m, scale) : lc_classifier_backward(r->m, scale);
}

/* Masked-token accuracy over the validation texts (batches of every process in order of length, masks
 * from a fixed seed, so every pass masks the same tokens): this process's shares, counts into sums[0..1]. */
static lc_status validate_mlm(crun *r, double sums[2]) {
    long *keys = malloc(sizeof(long) * (size_t)(r->valid.n > 0 ? r->valid.n : 1));
    if (!keys) return lc_fail(LC_ERR_NOMEM, "out of memory validating");
    lc_classify_sort_by_length(keys, NULL, r->valid.n, r->valid.len);
    lc_status st = LC_OK;
    const long G = (long)r->B * r->R;
    for (long s = 0; s < r->valid.n && !st; s += G) {
        const long *key0;
        int lo;
        const lc_classify_batch b = share(r, &r->valid, keys + s, (int)(r->valid.n - s < G ? r->valid.n - s : G), &lo, &key0);
        long nm = 0, ok = 0;
        if (b.n > 0)
            st = lc_classify_mlm_forward_keyed(r->m, &b, lc_seed_mix(0x76616c6964ULL, (uint64_t)s), key0, 0, NULL, &nm, &ok);
        sums[0] += (double)nm, sums[1] += (double)ok;
    }
    free(keys);
    return st;
}

static lc_status cf_validate(void *run, long step, lc_fit_metrics *out) {
    crun *r = run;
    double sums[2] = {0, 0}; /* scored, right: this process's batches, then every process's */
    lc_status st;
    if (is_mlm(r)) {
        st = validate_mlm(r, sums);
    } else {
        long right = 0;
        st = lc_classify_texts_run(r->m, r->d->vocab, &r->valid, r->B, r->rank, r->R, r->pred, r->d->valid_labels,
                                   &right, NULL);
        sums[1] = (double)right;
    }
    if (st) return st; /* the caller ends the other processes (lc_dist_abort) */
    lc_dist_sum_doubles(sums, 2);
    if (!is_mlm(r)) sums[0] = (double)r->valid.n;
    const double acc = sums[0] > 0 ? sums[1] / sums[0] : 0;
    lc_fit_metrics_add(out, "valid_accuracy", acc);
    out->score = (float)acc; /* as the checkpoint records it: a resumed run compares the same numbers */
    out->accuracy = acc, out->bpc = NAN;
    r->last_acc = acc, r->last_step = step;
    return LC_OK;
}

/* Process 0 writes the checkpoint; valid_accuracy is the accuracy measured at the saved step (-1: none). */
static lc_status cf_save(void *run, const char *path, const lc_fit_record *rec) {
    crun *r = run;
    if (r->rank != 0) return LC_OK;
    lc_classify_run c = r->fo->run;
    c.best_accuracy = rec->best_step > 0 ? (float)rec->best_score : -1.0f, c.best_step = rec->best_step;
    c.valid_accuracy = r->last_step == rec->step ? (float)r->last_acc : -1.0f;
    c.examples = rec->step * (long)r->B * r->R;
    return lc_classifier_save(r->m, &c, r->d->labels, r->d->vocab, path);
}

static void cf_report(const lc_progress *p, const lc_fit_metrics *valid, const char *extra, void *user) {
    crun *r = user;
    lc_classify_progress c = {NAN, r->best_acc, r->best_step};
    if (valid) { /* the loop's rule for a new best */
        c.valid_accuracy = valid->accuracy;
        if (valid->score > r->best_score || (isnan(r->best_score) && !isnan(valid->score)))
            r->best_score = valid->score, r->best_acc = (float)valid->accuracy, r->best_step = p->step; /* as saved */
        c.best_accuracy = r->best_acc, c.best_step = r->best_step;
    }
    if (r->fo->report) r->fo->report(p, &c, extra, r->fo->user);
}

static int cf_should_stop(void *user) {
    crun *r = user;
    long sig = r->fo->should_stop ? r->fo->should_stop(r->fo->user) : 0;
    lc_dist_max_longs(&sig, 1);
    r->stop_signal = (int)sig;
    return sig != 0;
}

static lc_status prepare(crun *r) {
    const lc_train_options *o = r->fo->o;
    r->B = o->batch, r->R = lc_dist_size(), r->rank = lc_dist_rank();
    const long N = r->train.n, G = (long)r->B * r->R;
    if (N < 1) return lc_fail(LC_ERR_ARG, "classify: no training examples");
    if (r->R > 1 && N < G)
        return lc_fail(LC_ERR_ARG, "classify: %ld training examples are too few for %d processes x batch %d", N, r->R,
                       r->B);
    r->n = (int)(N < G ? N : G), r->per_epoch = N / r->n, r->epoch = -1;
    r->order = malloc(sizeof(long) * (size_t)N), r->keys = malloc(sizeof(long) * 64 * (size_t)G);
    r->labels = malloc(sizeof(int) * (size_t)r->B);
    r->pred = malloc(sizeof(int) * (size_t)(r->valid.n > 0 ? r->valid.n : 1));
    if (!r->order || !r->keys || !r->labels || !r->pred) return lc_fail(LC_ERR_NOMEM, "out of memory for the training batches");
    if (is_mlm(r) && r->R > 1) {
        r->all_len = malloc(sizeof(int) * (size_t)G), r->all_keys = malloc(sizeof(long) * (size_t)G);
        r->scratch = malloc(sizeof(long) * (size_t)G);
        r->scratch_ids = malloc(sizeof(int) * (size_t)lc_classifier_config(r->m)->max_len);
        if (!r->all_len || !r->all_keys || !r->scratch || !r->scratch_ids)
            return lc_fail(LC_ERR_NOMEM, "out of memory for the training batches");
    }
    return lc_classify_buffers_alloc(&r->buf, r->B, lc_classifier_config(r->m));
}

/* The run's state and the loop's parts for m on d with fo (its record: a resumed run's best), the setup
 * lc_classify_fit and the family row's run_open share; cf_close frees what it took. Without validation
 * examples the loop's hooks validate nothing. */
static lc_status cf_open(crun *r, lc_classifier *m, const lc_classify_data *d, const lc_classify_fit_options *fo,
                         lc_fit_record *resumed, const lc_fit_family **hooks, lc_fit_params *p) {
    memset(r, 0, sizeof *r);
    r->m = m, r->d = d, r->fo = fo;
    r->train = (lc_classify_texts){d->train->n, d->train->text, d->train->text_len};
    r->valid = (lc_classify_texts){d->valid->n, d->valid->text, d->valid->text_len};
    r->last_step = -1;
    *resumed = (lc_fit_record){m->step, fo->run.best_step, fo->run.best_accuracy, 0};
    r->best_score = resumed->best_step > 0 ? resumed->best_score : NAN;
    r->best_acc = resumed->best_step > 0 ? fo->run.best_accuracy : -1, r->best_step = resumed->best_step;
    static const lc_fit_family with_valid = {cf_forward, cf_backward, cf_validate, cf_save},
                               without_valid = {cf_forward, cf_backward, NULL, cf_save};
    *hooks = r->valid.n > 0 ? &with_valid : &without_valid;
    *p = (lc_fit_params){&m->tensors, &m->ptab, m->params, m->grads, m->adam_m, m->adam_v, &m->step};
    return prepare(r);
}

static void cf_close(crun *r) {
    free(r->order), free(r->keys), free(r->labels), free(r->pred);
    free(r->all_len), free(r->all_keys), free(r->scratch), free(r->scratch_ids);
    lc_classify_buffers_free(&r->buf);
}

lc_status lc_classify_fit(lc_classifier *m, const lc_classify_data *d, const lc_classify_fit_options *fo,
                          lc_classify_fit_result *out) {
    lc_clear_error();
    if (!m || !d || !d->train || !d->valid || !d->labels || !fo || !fo->o)
        return lc_fail(LC_ERR_ARG, "classify fit: a model, its data and options are required");
    crun r;
    lc_fit_record resumed;
    const lc_fit_family *family = NULL;
    lc_fit_params p;
    lc_status st = cf_open(&r, m, d, fo, &resumed, &family, &p);
    lc_fit_result fr = {m->step, m->step, resumed, 0, 0, 0, 0, 0};
    if (!st) {
        lc_fit_options o = {0};
        o.o = fo->o, o.save_every = fo->save_every, o.save_every_min = fo->save_every_min;
        o.best_path = fo->best_path, o.last_path = fo->last_path, o.record = resumed;
        o.should_stop = cf_should_stop, o.report = cf_report, o.user = &r;
        st = lc_fit(family, &r, &p, &o, &fr);
    }
    if (out) *out = (lc_classify_fit_result){fr, r.best_acc, r.best_step, r.stop_signal};
    cf_close(&r);
    return st;
}

/* ---------------------------------------------------------------- the family row (models/families.c) */
/* A run of the row: its labelled files, their labels as the model's classes, and a new run record of o. */
typedef struct {
    crun r;
    lc_labelled_data train, valid;
    int *valid_labels;
    lc_classify_data d;
    lc_classify_fit_options fo;
} cf_row_run;

void lc_classify_row_run_close(void *run) {
    cf_row_run *w = run;
    if (!w) return;
    cf_close(&w->r);
    lc_labelled_free(&w->train), lc_labelled_free(&w->valid);
    free(w->valid_labels);
    free(w);
}

lc_status lc_classify_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                                   void **run, const lc_fit_family **hooks, lc_fit_params *p) {
    *run = NULL;
    lc_text_classifier *tc = model;
    lc_classifier *m = lc_text_classifier_model(tc);
    const lc_label_set *labels = lc_text_classifier_labels(tc);
    if (o->batch < 1 || o->batch > m->max_batch)
        return lc_fail(LC_ERR_ARG, "classify: batch must be 1..%d (the model's planned batch), got %d", m->max_batch,
                       o->batch);
    cf_row_run *w = calloc(1, sizeof *w);
    if (!w) return lc_fail(LC_ERR_NOMEM, "out of memory for a classify run");
    lc_status st = lc_labelled_read(train, NULL, NULL, &w->train);
    if (!st && valid) st = lc_labelled_read(valid, NULL, NULL, &w->valid);
    w->valid_labels = malloc(sizeof(int) * (size_t)(w->valid.n > 0 ? w->valid.n : 1));
    if (!st && !w->valid_labels) st = lc_fail(LC_ERR_NOMEM, "out of memory for a classify run");
    long unseen = 0; /* the training labels become the model's classes; validation's unknown ones count wrong */
    if (!st) st = lc_labelled_map(&w->train, labels, w->train.label, &unseen);
    if (!st && unseen && lc_classifier_config(m)->objective != LC_CLASSIFY_MLM)
        st = lc_fail(LC_ERR_ARG, "%s: %ld training examples have a label the model's classes lack", train, unseen);
    if (!st && valid) st = lc_labelled_map(&w->valid, labels, w->valid_labels, NULL);
    w->d = (lc_classify_data){&w->train, &w->valid, w->valid_labels, labels, lc_text_classifier_words(tc)};
    lc_classify_run_default(&w->fo.run);
    w->fo.o = o, w->fo.run.opts = *o, w->fo.run.opts.ranks = lc_dist_size(), w->fo.run.train_examples = w->train.n;
    lc_fit_record resumed;
    if (!st) st = cf_open(&w->r, m, &w->d, &w->fo, &resumed, hooks, p);
    if (st) return lc_classify_row_run_close(w), st;
    *run = w;
    return LC_OK;
}

lc_status lc_classify_row_evaluate(void *model, const char *path, lc_fit_metrics *out) {
    lc_text_classifier *tc = model;
    lc_labelled_data d;
    lc_status st = lc_labelled_read(path, NULL, NULL, &d);
    if (st) return st;
    int *ids = malloc(sizeof(int) * (size_t)d.n), *pred = malloc(sizeof(int) * (size_t)d.n);
    if (!ids || !pred) st = lc_fail(LC_ERR_NOMEM, "out of memory evaluating");
    if (!st) st = lc_labelled_map(&d, lc_text_classifier_labels(tc), ids, NULL);
    if (!st) st = lc_text_classifier_predict(tc, d.n, (const char *const *)d.text, d.text_len, pred, NULL);
    long right = 0;
    for (long i = 0; !st && i < d.n; i++) right += pred[i] == ids[i]; /* -1: a label the model lacks, wrong */
    if (!st) {
        lc_fit_metrics_add(out, "accuracy", (double)right / (double)d.n);
        lc_fit_metrics_add(out, "examples", (double)d.n);
        out->score = out->accuracy = (double)right / (double)d.n, out->bpc = NAN;
    }
    free(ids), free(pred);
    lc_labelled_free(&d);
    return st;
}

lc_status lc_classify_row_save(void *model, const char *path) {
    lc_text_classifier *tc = model;
    lc_classify_run run;
    lc_classify_run_default(&run);
    return lc_classifier_save(lc_text_classifier_model(tc), &run, lc_text_classifier_labels(tc),
                              lc_text_classifier_words(tc), path);
}
