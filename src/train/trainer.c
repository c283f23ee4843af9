/* The training loop: contiguous-stream batches, gradient accumulation, global-norm clipping, AdamW with
 * warm-up + cosine schedule, periodic validation, progress callbacks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "model/lm.h"

void lc_train_options_default(lc_train_options *o) {
    memset(o, 0, sizeof *o);
    o->steps = 2000;
    o->batch = 16;
    o->grad_accum = 1;
    o->lr = 2e-3f;
    o->min_lr = 1e-4f;
    o->warmup = 100;
    o->weight_decay = 0.1f;
    o->beta1 = 0.9f;
    o->beta2 = 0.99f;
    o->eps = 1e-8f;
    o->clip = 1.0f;
    o->eval_every = 250;
    o->eval_bytes = 32768;
    o->seed = 1337;
}

double lc_learning_rate(const lc_train_options *o, long step) {
    if (o->warmup > 0 && step < o->warmup) return o->lr * (double)(step + 1) / (double)o->warmup;
    long decay = o->steps - o->warmup;
    if (decay <= 0) return o->lr;
    double progress = (double)(step - o->warmup) / (double)decay;
    if (progress > 1) progress = 1;
    return o->min_lr + 0.5 * (1.0 + cos(M_PI * progress)) * (o->lr - o->min_lr);
}

static lc_status check_options(const lc_model *m, const lc_train_options *o) {
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    if (o->stop_after < 0) return lc_fail(LC_ERR_ARG, "stop-after must be >= 0, got %ld", o->stop_after);
    if (o->batch < 1 || o->batch > m->max_B)
        return lc_fail(LC_ERR_ARG, "batch must be 1..%d, got %d", m->max_B, o->batch);
    if (o->grad_accum < 1) return lc_fail(LC_ERR_ARG, "grad-accum must be >= 1, got %d", o->grad_accum);
    return LC_OK;
}

/* The global gradient norm (fp64): it decides clipping and tells whether the step diverged. */
static double grad_norm(const lc_model *m) { return sqrt(lc_sum_squares(m->grads, m->ptab.total)); }

/* A step whose loss or gradient norm is NaN or infinite has diverged: its update would write NaN into
 * the parameters, so it is refused (LC_ERR_NUMERIC) before anything changes. step is 0-based. */
static lc_status check_finite_step(long step, double loss, double norm) {
    if (isfinite(loss) && isfinite(norm)) return LC_OK;
    const int bad_loss = !isfinite(loss);
    const double v = bad_loss ? loss : norm;
    return lc_fail(LC_ERR_NUMERIC, "training diverged at step %ld: %s is %s (try a lower --lr)", step + 1,
                   bad_loss ? "loss" : "gradient norm", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/* Global-norm clipping (norm from grad_norm) followed by one AdamW step on every parameter tensor.
 * Weight decay applies where the tensor list says (model/tensors.c: matrices and embeddings; not biases,
 * LayerNorm parameters, the XL position biases u, v or kinds' parameters). */
static double optimizer_step(lc_model *m, const lc_train_options *o, long step, double norm) {
    if (o->clip > 0 && norm > o->clip) lc_scale(m->grads, m->ptab.total, (float)(o->clip / norm));
    float lr = (float)lc_learning_rate(o, step);
    for (int i = 0; i < m->tensors.n; i++) { /* decay as the tensor list says (matrices, embeddings) */
        const lc_tensor *t = &m->tensors.t[i];
        if (!lc_tensor_is_param(t)) continue;
        const lc_slot *s = &m->ptab.slots[t->slot];
        const float wd = t->decay ? o->weight_decay : 0.0f;
        lc_adamw_update(m->params + s->offset, m->grads + s->offset, m->adam_m + s->offset, m->adam_v + s->offset,
                        s->count, lr, o->beta1, o->beta2, o->eps, wd, (int)(step + 1));
    }
    return norm;
}

static lc_status validate(lc_model *m, const lc_corpus *c, const lc_train_options *o, double *bpc, double *acc) {
    size_t begin = c->begin[LC_PART_VALID], n = c->end[LC_PART_VALID] - begin;
    if (o->eval_bytes > 0 && (size_t)o->eval_bytes < n) n = (size_t)o->eval_bytes;
    if (n < 2) { *bpc = NAN; return LC_OK; }
    if (m->cfg.objective == LC_OBJECTIVE_MLM)
        return lc_evaluate_mlm(m, c->bytes + begin, n, m->cfg.seq_len, m->max_B, LC_MLM_EVAL_SEED, bpc, acc, NULL);
    return lc_evaluate(m, c->bytes + begin, n, m->cfg.seq_len, m->max_B, bpc, NULL);
}

lc_status lc_train(lc_model *m, const lc_corpus *c, const lc_train_options *o, lc_progress_fn fn, void *user) {
    lc_clear_error();
    lc_status st = check_options(m, o);
    if (st) return st;
    int B = o->batch, T = m->cfg.seq_len;
    const uint8_t *train = c->bytes + c->begin[LC_PART_TRAIN];
    size_t n_train = c->end[LC_PART_TRAIN] - c->begin[LC_PART_TRAIN];
    if (n_train / (size_t)B < (size_t)T + 1) /* before any allocation; lc_stream_batch's condition */
        return lc_fail(LC_ERR_ARG, "the training split has %zu bytes, too few for %d streams of one segment plus one "
                                   "byte (%d)", n_train, B, T + 1);
    int *tok = malloc(sizeof(int) * (size_t)B * (size_t)T), *tgt = malloc(sizeof(int) * (size_t)B * (size_t)T);
    if (!tok || !tgt) { free(tok); free(tgt); return lc_fail(LC_ERR_NOMEM, "out of memory for a batch"); }
    long start = m->step, end = o->steps;
    if (o->stop_after > 0 && start + o->stop_after < end) end = start + o->stop_after;
    double t0 = lc_now_seconds();
    for (long step = start; step < end && !st; step++) {
        lc_model_zero_grad(m);
        double loss = 0;
        for (int a = 0; a < o->grad_accum && !st; a++) {
            long k = step * o->grad_accum + a;
            st = lc_stream_batch(train, n_train, B, T, k, tok, tgt);
            if (st) break;
            if (m->cfg.objective == LC_OBJECTIVE_MLM) /* predict masked bytes of the segment itself */
                lc_mlm_mask(tok, tgt, (long)B * T, lc_seed_mix(o->seed, (uint64_t)k));
            lc_model_set_noise_key(m, k);
            double sum;
            long count;
            st = lc_model_forward(m, tok, tgt, B, T, 1, &sum, &count);
            if (!st) st = lc_model_backward(m, 1.0f / (float)(count * o->grad_accum));
            if (st) break;
            loss += sum / (double)count / o->grad_accum;
        }
        if (st) break;
        const double norm = grad_norm(m);
        if ((st = check_finite_step(step, loss, norm))) break;
        optimizer_step(m, o, step, norm);
        m->step = step + 1;
        lc_progress p = {m->step, o->steps, start, loss, lc_learning_rate(o, step), 0, lc_now_seconds() - t0, NAN, NAN};
        p.tokens_per_s = (double)(step + 1 - start) * B * T * o->grad_accum / p.elapsed_s;
        if (o->eval_every > 0 && m->step % o->eval_every == 0 && m->step < end) st = validate(m, c, o, &p.valid_bpc, &p.valid_accuracy);
        if (fn && !st) fn(&p, user);
        if (o->hook && !st && o->hook(m, &p, o->hook_user)) break; /* the caller asked to stop here */
    }
    free(tok);
    free(tgt);
    return st;
}

lc_status lc_train_step(lc_model *m, const lc_train_options *o, const int *tokens, const int *targets, int B, int T,
                        double *loss) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
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
    if ((st = check_finite_step(m->step, sum / (double)count, norm))) return st;
    optimizer_step(m, o, m->step, norm);
    m->step++;
    return LC_OK;
}
