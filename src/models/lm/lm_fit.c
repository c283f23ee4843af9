/* The training loop: contiguous-stream batches, gradient accumulation, global-norm clipping, AdamW with
 * warm-up + cosine schedule, periodic validation, progress callbacks; data-parallel over the processes of
 * lc_dist (train/dist.h): each reads its own streams, and one sum of the gradient buffer per step makes the
 * update the same everywhere (docs/guides/distributed.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "models/lm/lm.h"
#include "models/lm/lm_fit.h"
#include "longctx/flat.h"
#include "train/dist.h"
#include "train/fit.h"
#include "train/optimizer.h"

static lc_status check_options(const lc_model *m, const lc_train_options *o) {
    lc_status st = lc_adamw_options_check(o);
    if (!st) st = lc_lr_scale_check(o->lr_scale);
    if (st) return st;
    if (o->stop_after < 0) return lc_fail(LC_ERR_ARG, "stop-after must be >= 0, got %ld", o->stop_after);
    if (o->batch < 1 || o->batch > m->max_B)
        return lc_fail(LC_ERR_ARG, "batch must be 1..%d, got %d", m->max_B, o->batch);
    if (o->grad_accum < 1) return lc_fail(LC_ERR_ARG, "grad-accum must be >= 1, got %d", o->grad_accum);
    return LC_OK;
}

/* The global gradient norm (fp64): it decides clipping and tells whether the step diverged. */
static double grad_norm(const lc_model *m) { return sqrt(lc_sum_squares(m->grads, m->ptab.total)); }

/* Global-norm clipping (norm from grad_norm) followed by one AdamW step on every parameter tensor.
 * Weight decay applies where the tensor list says (nn/tensors.c: matrices and embeddings; not biases,
 * LayerNorm parameters, the XL position biases u, v or kinds' parameters). */
static double optimizer_step(lc_model *m, const lc_train_options *o, long step, double norm) {
    lc_tensors_adamw(&m->tensors, &m->ptab, (float *[4]){m->params, m->grads, m->adam_m, m->adam_v}, o, step, norm);
    return norm;
}

static lc_status validate(lc_model *m, const lc_corpus *c, const lc_train_options *o, double *bpc, double *acc) {
    size_t begin = c->begin[LC_PART_VALID], n = c->end[LC_PART_VALID] - begin;
    if (o->eval_bytes > 0 && (size_t)o->eval_bytes < n) n = (size_t)o->eval_bytes;
    if (n < 2) { *bpc = NAN; return LC_OK; }
    return lc_evaluate_dist(m, c->bytes + begin, n, m->cfg.seq_len, m->max_B, bpc, acc, NULL);
}

/* One batch of the processes training together: R processes of B streams read the layout of R*B streams,
 * process r streams r*B .. r*B+B-1, so R x B sees the data of one process with batch R*B. Masked-LM masks
 * are drawn over the whole R*B batch (tok and tgt hold all of it then) and each process takes its rows. */
typedef struct {
    const uint8_t *train;
    size_t n_train;
    int B, T, R, rank, mlm;
    int *tok, *tgt; /* [R*B*T] with MLM, else [B*T] */
} lc_batch_plan;

lc_status lc_train_check_data(const lc_corpus *c, int batch, int seq_len) {
    const size_t n_train = c->end[LC_PART_TRAIN] - c->begin[LC_PART_TRAIN];
    const int R = lc_dist_size();
    if (batch < 1 || seq_len < 1) return lc_fail(LC_ERR_ARG, "batch and seg-len must be >= 1, got %d and %d", batch, seq_len);
    const size_t streams = (size_t)batch * (size_t)R;
    if (n_train / streams >= (size_t)seq_len + 1) return LC_OK; /* lc_stream_batch's condition */
    if (R == 1)
        return lc_fail(LC_ERR_ARG, "the training split has %zu bytes, too few for %d streams of one segment plus "
                                   "one byte (%d)", n_train, batch, seq_len + 1);
    return lc_fail(LC_ERR_ARG, "the training split has %zu bytes, too few for %zu streams (%d processes x batch "
                               "%d) of one segment plus one byte (%d)", n_train, streams, R, batch, seq_len + 1);
}

static lc_status plan_batch(lc_batch_plan *p, const lc_corpus *c, int B, int T, int mlm) {
    p->tok = p->tgt = NULL;
    p->train = c->bytes + c->begin[LC_PART_TRAIN];
    p->n_train = c->end[LC_PART_TRAIN] - c->begin[LC_PART_TRAIN];
    p->B = B, p->T = T, p->R = lc_dist_size(), p->rank = lc_dist_rank(), p->mlm = mlm;
    const size_t streams = (size_t)B * (size_t)p->R, rows = mlm ? streams : (size_t)B;
    lc_status st = lc_train_check_data(c, B, T); /* before any allocation */
    if (st) return st;
    p->tok = malloc(sizeof(int) * rows * (size_t)T);
    p->tgt = malloc(sizeof(int) * rows * (size_t)T);
    if (p->tok && p->tgt) return LC_OK;
    free(p->tok), free(p->tgt);
    return lc_fail(LC_ERR_NOMEM, "out of memory for a batch");
}

/* Batch k of this process: its rows in *tok, *tgt. */
static lc_status read_batch(const lc_batch_plan *p, long k, uint64_t seed, int **tok, int **tgt) {
    const long streams = (long)p->B * p->R;
    *tok = p->tok, *tgt = p->tgt;
    if (!p->mlm) return lc_stream_batch_part(p->train, p->n_train, streams, (long)p->rank * p->B, p->B, p->T, k, p->tok, p->tgt);
    lc_status st = lc_stream_batch_part(p->train, p->n_train, streams, 0, (int)streams, p->T, k, p->tok, p->tgt);
    if (st) return st;
    lc_mlm_mask(p->tok, p->tgt, streams * p->T, lc_seed_mix(seed, (uint64_t)k)); /* predict masked bytes */
    const size_t mine = (size_t)p->rank * (size_t)p->B * (size_t)p->T;
    *tok = p->tok + mine, *tgt = p->tgt + mine;
    return LC_OK;
}

/* The language model as a family of the one training loop (train/fit.h). */
typedef struct {
    lc_model *m;
    const lc_corpus *c;
    const lc_train_options *o;
    lc_batch_plan plan;
    lc_progress_fn fn;
    void *user;
    lc_progress last; /* the latest step's report, for o->hook */
} lc_lm_run;

static lc_status lm_forward(void *run, long k, int rank, int ranks, double *loss_sum, long *count, long *units) {
    lc_lm_run *r = run;
    int *tok, *tgt;
    lc_status st = read_batch(&r->plan, k, r->o->seed, &tok, &tgt);
    if (st) return st;
    lc_model_set_noise_key(r->m, ranks == 1 ? k : k * ranks + rank); /* each process its own dropout */
    *units = (long)r->plan.B * r->plan.T;
    return lc_model_forward(r->m, tok, tgt, r->plan.B, r->plan.T, 1, loss_sum, count);
}

static lc_status lm_backward(void *run, float scale) { return lc_model_backward(((lc_lm_run *)run)->m, scale); }

static lc_status lm_validate(void *run, long step, lc_fit_metrics *out) {
    lc_lm_run *r = run;
    return validate(r->m, r->c, r->o, &out->bpc, &out->accuracy);
}

static void lm_report(const lc_progress *p, const lc_fit_metrics *valid, const char *extra, void *user) {
    lc_lm_run *r = user;
    r->last = *p;
    if (r->fn) r->fn(p, r->user);
}

static int lm_should_stop(void *user) {
    lc_lm_run *r = user;
    return r->o->hook && r->o->hook(r->m, &r->last, r->o->hook_user);
}

/* The run's state and the loop's parameters for m on c with o: the setup lc_train and the family row's
 * run_open share; lm_close frees what it took. */
static lc_status lm_open(lc_lm_run *r, lc_model *m, const lc_corpus *c, const lc_train_options *o, lc_progress_fn fn,
                         void *user, lc_fit_params *p) {
    *r = (lc_lm_run){m, c, o, {0}, fn, user, {0}};
    lc_status st = check_options(m, o);
    if (!st) st = plan_batch(&r->plan, c, o->batch, m->cfg.seq_len, m->cfg.objective == LC_OBJECTIVE_MLM);
    *p = (lc_fit_params){&m->tensors, &m->ptab, m->params, m->grads, m->adam_m, m->adam_v, &m->step};
    return st;
}

static void lm_close(lc_lm_run *r) { free(r->plan.tok), free(r->plan.tgt); }

lc_status lc_train(lc_model *m, const lc_corpus *c, const lc_train_options *o, lc_progress_fn fn, void *user) {
    lc_clear_error();
    lc_lm_run r;
    lc_fit_params p;
    lc_status st = lm_open(&r, m, c, o, fn, user, &p);
    if (st) return st;
    static const lc_fit_family lm = {lm_forward, lm_backward, lm_validate, NULL};
    lc_fit_options fo = {0};
    fo.o = o, fo.record.best_score = NAN, fo.caller_validates_end = 1;
    fo.should_stop = lm_should_stop, fo.report = lm_report, fo.user = &r;
    st = lc_fit(&lm, &r, &p, &fo, NULL);
    lm_close(&r);
    return st;
}

lc_status lc_train_step(lc_model *m, const lc_train_options *o, const int *tokens, const int *targets, int B, int T,
                        double *loss) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (!st) st = lc_lr_scale_check(o->lr_scale);
    if (st) return st;
    if (!tokens || !targets) return lc_fail(LC_ERR_ARG, "train step: tokens and targets are required");
    lc_model_zero_grad(m);
    lc_model_set_noise_key(m, m->step); /* lc_train's key for grad_accum 1 */
    double sum;
    long count;
    if ((st = lc_model_forward(m, tokens, targets, B, T, 1, &sum, &count))) return st;
    if (count < 1) return lc_fail(LC_ERR_ARG, "train step: no target is >= 0");
    if ((st = lc_model_backward(m, 1.0f / (float)count))) return st;
    if (loss) *loss = sum / (double)count;
    const double norm = grad_norm(m);
    if ((st = lc_fit_check_finite(m->step, sum / (double)count, norm))) return st;
    optimizer_step(m, o, m->step, norm);
    m->step++;
    return LC_OK;
}

lc_status lc_train_plan_data(lc_model *m, const char *path, const lc_corpus *c, lc_train_options *o) {
    lc_status st = lc_train_check_data(c, o->batch, m->cfg.seq_len); /* before the model is planned for the batch */
    if (!st && (o->batch > m->max_B || m->cap_T != m->cfg.seq_len))
        st = lc_model_resize(m, o->batch > m->max_B ? o->batch : m->max_B, m->cfg.seq_len, m->cap_M);
    if (!st) lc_data_record_set(&o->data, path, c);
    return st;
}

/* ---------------------------------------------------------------- the family row (models/families.c) */
/* A run of the row: its bytes and the options its saves record. */
typedef struct {
    lc_lm_run r;
    lc_corpus c;
    lc_train_options o;
} lm_row_run;

static lc_status lm_row_save_run(void *run, const char *path, const lc_fit_record *rec) {
    (void)rec;
    lm_row_run *w = run;
    return lc_checkpoint_save_dist(w->r.m, &w->o, path);
}

void lc_lm_row_run_close(void *run) {
    lm_row_run *w = run;
    if (!w) return;
    lm_close(&w->r);
    lc_corpus_free(&w->c);
    free(w);
}

/* train's bytes, then valid's: the training part is train whole, the validation (and test) part valid whole. */
static lc_status two_files(lc_corpus *c, const char *valid) {
    lc_corpus v;
    lc_status st = lc_corpus_load(valid, LC_SPLIT_AUTO, &v);
    if (st) return st;
    uint8_t *bytes = realloc(c->bytes, c->size + v.size);
    if (!bytes) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", valid);
    else memcpy(bytes + c->size, v.bytes, v.size), c->bytes = bytes;
    if (!st) {
        c->begin[LC_PART_TRAIN] = c->begin[LC_PART_ALL] = 0, c->end[LC_PART_TRAIN] = c->size;
        c->begin[LC_PART_VALID] = c->begin[LC_PART_TEST] = c->size;
        c->size += v.size;
        c->end[LC_PART_VALID] = c->end[LC_PART_TEST] = c->end[LC_PART_ALL] = c->size;
    }
    lc_corpus_free(&v);
    return st;
}

lc_status lc_lm_row_run_open(void *model, const lc_train_options *o, const char *train, const char *valid,
                             void **run, const lc_fit_family **hooks, lc_fit_params *p) {
    *run = NULL;
    lm_row_run *w = calloc(1, sizeof *w);
    if (!w) return lc_fail(LC_ERR_NOMEM, "out of memory for a language model run");
    w->o = *o, w->o.hook = NULL, w->o.hook_user = NULL;
    lc_status st = lc_corpus_load(train, LC_SPLIT_AUTO, &w->c);
    if (!st && valid) st = two_files(&w->c, valid);
    if (!st) st = lc_train_plan_data(model, train, &w->c, &w->o);
    if (!st) st = lm_open(&w->r, model, &w->c, &w->o, NULL, NULL, p);
    static const lc_fit_family lm_row = {lm_forward, lm_backward, lm_validate, lm_row_save_run};
    *hooks = &lm_row;
    if (st) return lc_lm_row_run_close(w), st;
    *run = w;
    return LC_OK;
}

lc_status lc_lm_row_evaluate(void *model, const char *path, lc_fit_metrics *out) {
    double bpc, acc;
    long tokens;
    lc_status st = lc_evaluate_file(model, path, LC_SPLIT_AUTO, LC_PART_ALL, 0, 0, &bpc, &acc, &tokens);
    if (st) return st;
    lc_fit_metrics_add(out, "bpc", bpc);
    if (!isnan(acc)) lc_fit_metrics_add(out, "accuracy", acc);
    lc_fit_metrics_add(out, "tokens", (double)tokens);
    out->score = -bpc, out->bpc = bpc, out->accuracy = acc;
    return LC_OK;
}

lc_status lc_lm_row_save(void *model, const char *path) {
    lc_train_options o;
    lc_train_options_default(&o);
    return lc_checkpoint_save(model, &o, path);
}
