/* The training loop of every model family (fit.h): per step, zero the gradients, forward and backward of
 * each accumulated part with the loss averaged over every process's scored units, one sum of the gradient
 * buffer over the processes, the global norm, the finite check, clipping and AdamW; then the validation,
 * the best checkpoint, the report and the periodic save when due. */
#include "train/fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "train/dist.h"
#include "train/optimizer.h"

void lc_fit_metrics_add(lc_fit_metrics *mx, const char *key, double value) {
    if (mx->n >= LC_FIT_MAX_METRICS) return;
    mx->m[mx->n].key = key, mx->m[mx->n].value = value;
    mx->n++;
}

lc_status lc_fit_check_finite(long step, double loss, double norm) {
    if (isfinite(loss) && isfinite(norm)) return LC_OK;
    const int bad_loss = !isfinite(loss);
    const double v = bad_loss ? loss : norm;
    return lc_fail(LC_ERR_NUMERIC, "training diverged at step %ld: %s is %s (try a lower --lr)", step + 1,
                   bad_loss ? "loss" : "gradient norm", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

lc_status lc_fit_check_same_parameters(const float *params, size_t n, long step) {
    if (lc_dist_size() == 1) return LC_OK;
    if (lc_dist_same_u64(lc_data_hash((const uint8_t *)params, n * sizeof(float)))) return LC_OK;
    return lc_fail(LC_ERR_ARG, "the %d processes hold different parameters at step %ld (different checkpoint files "
                               "or seeds?)", lc_dist_size(), step);
}

static lc_status check_options(const lc_fit_family *f, const lc_fit_params *p, const lc_fit_options *fo) {
    const lc_train_options *o = fo->o;
    if (!f || !f->forward || !f->backward || !p || !p->tensors || !p->ptab || !p->params || !p->grads || !p->adam_m ||
        !p->adam_v || !p->step || !o)
        return lc_fail(LC_ERR_ARG, "fit: a family's forward and backward, its parameters and the options are required");
    lc_status st = lc_adamw_options_check(o);
    if (!st) st = lc_lr_scale_check(o->lr_scale);
    if (st) return st;
    if (o->stop_after < 0) return lc_fail(LC_ERR_ARG, "stop-after must be >= 0, got %ld", o->stop_after);
    if (o->grad_accum < 1) return lc_fail(LC_ERR_ARG, "grad-accum must be >= 1, got %d", o->grad_accum);
    if (o->eval_every < 0) return lc_fail(LC_ERR_ARG, "eval-every must be >= 0, got %ld", o->eval_every);
    if (fo->save_every < 0 || !(fo->save_every_min >= 0))
        return lc_fail(LC_ERR_ARG, "save-every and save-every-min must be >= 0");
    return LC_OK;
}

/* Forward and backward of every accumulated part of `step`; *loss: the mean loss over every process's
 * scored units, *units: what this step read on every process. */
static lc_status accumulate(const lc_fit_family *f, void *run, const lc_train_options *o, long step, double *loss,
                            double *units) {
    const int rank = lc_dist_rank(), ranks = lc_dist_size();
    *loss = 0, *units = 0;
    for (int a = 0; a < o->grad_accum; a++) {
        double sums[3]; /* loss sum, count, units: summed over the processes */
        long count = 0, read = 0;
        lc_status st = f->forward(run, step * o->grad_accum + a, rank, ranks, &sums[0], &count, &read);
        if (st) return st;
        sums[1] = (double)count, sums[2] = (double)read;
        lc_dist_sum_doubles(sums, 3);
        if (!(sums[1] >= 1))
            return lc_fail(LC_ERR_ARG, "training step %ld: the batch has nothing to score", step + 1);
        if ((st = f->backward(run, 1.0f / (float)(sums[1] * o->grad_accum)))) return st;
        *loss += sums[0] / sums[1] / o->grad_accum;
        *units += sums[2];
    }
    return LC_OK;
}

/* The update of `step` (0-based) from the accumulated gradients: summed over the processes, checked,
 * clipped, AdamW. */
static lc_status update(const lc_fit_params *p, const lc_train_options *o, long step, double loss, double *comm_s) {
    const double t0 = lc_now_seconds();
    lc_dist_sum_floats(p->grads, p->ptab->total);
    *comm_s += lc_now_seconds() - t0;
    const double norm = sqrt(lc_sum_squares(p->grads, p->ptab->total));
    lc_status st = lc_fit_check_finite(step, loss, norm);
    if (st) return st;
    lc_tensors_adamw(p->tensors, p->ptab, (float *[4]){p->params, p->grads, p->adam_m, p->adam_v}, o, step, norm);
    *p->step = step + 1;
    return LC_OK;
}

/* The validation members of a log line: the metrics and valid_seconds. */
static void metrics_json(char *dst, size_t cap, const lc_fit_metrics *mx, double seconds) {
    size_t used = 0;
    dst[0] = '\0';
    for (int i = 0; i < mx->n && used < cap; i++) {
        const double v = mx->m[i].value;
        int w = isfinite(v) ? snprintf(dst + used, cap - used, ",\"%s\":%.9g", mx->m[i].key, v)
                            : snprintf(dst + used, cap - used, ",\"%s\":null", mx->m[i].key);
        if (w > 0) used += (size_t)w;
    }
    if (used < cap) snprintf(dst + used, cap - used, ",\"valid_seconds\":%.6f", seconds);
}

static int save_due(const lc_fit_options *fo, long step, double last_save_s) {
    return (fo->save_every > 0 && step % fo->save_every == 0) ||
           (fo->save_every_min > 0 && lc_now_seconds() - last_save_s >= 60.0 * fo->save_every_min);
}

lc_status lc_fit(const lc_fit_family *f, void *run, const lc_fit_params *p, const lc_fit_options *fo,
                 lc_fit_result *out) {
    lc_clear_error();
    lc_status st = check_options(f, p, fo);
    if (st) return st;
    const lc_train_options *o = fo->o;
    const long first = *p->step;
    long end = o->steps;
    if (o->stop_after > 0 && first + o->stop_after < end) end = first + o->stop_after;
    lc_fit_result r = {first, first, fo->record, 0, 0, 0, 0, 0};
    if (r.record.best_step <= 0) r.record.best_score = NAN;
    if ((st = lc_fit_check_same_parameters(p->params, p->ptab->total, first))) return st;
    const double t0 = lc_now_seconds();
    double last_save = t0;
    for (long step = first; step < end; step++) {
        memset(p->grads, 0, sizeof(float) * p->ptab->total);
        double loss, units;
        if ((st = accumulate(f, run, o, step, &loss, &units))) break;
        if ((st = update(p, o, step, loss, &r.comm_seconds))) break;
        const long done = step + 1;
        r.steps_done = done, r.units += units;
        lc_progress pr = {done, o->steps, first, loss, lc_learning_rate(o, step), 0, lc_now_seconds() - t0, NAN, NAN,
                          r.comm_seconds, lc_dist_size(), 0, 0};
        const double train_s = pr.elapsed_s - r.valid_seconds; /* earlier validation passes left out */
        pr.tokens_per_s = r.units / (train_s > 0 ? train_s : 1e-9);
        lc_fit_metrics mx = {0, {{0, 0}}, NAN, NAN, NAN};
        char extra[512] = "";
        const int periodic = o->eval_every > 0 && done % o->eval_every == 0;
        if (f->validate && (fo->caller_validates_end ? periodic && done < end : periodic || done == o->steps)) {
            const double v0 = lc_now_seconds();
            if ((st = f->validate(run, done, &mx))) break;
            pr.valid_s = lc_now_seconds() - v0;
            pr.valid_bpc = mx.bpc, pr.valid_accuracy = mx.accuracy;
            r.valid_seconds += pr.valid_s;
            metrics_json(extra, sizeof extra, &mx, pr.valid_s);
            if (mx.score > r.record.best_score || (isnan(r.record.best_score) && !isnan(mx.score))) {
                r.record.best_score = mx.score, r.record.best_step = done;
                if (fo->best_path && f->save) {
                    lc_fit_record rec = r.record;
                    rec.step = done, rec.best = 1;
                    if ((st = f->save(run, fo->best_path, &rec))) break;
                }
            }
        }
        pr.valid_total_s = r.valid_seconds;
        if (fo->report) fo->report(&pr, mx.n ? &mx : NULL, extra, fo->user);
        if (fo->should_stop && fo->should_stop(fo->user)) {
            r.stopped = done < end;
            break;
        }
        if (done < end && fo->last_path && f->save && save_due(fo, done, last_save)) {
            lc_fit_record rec = r.record;
            rec.step = done, rec.best = 0;
            if ((st = f->save(run, fo->last_path, &rec))) break;
            last_save = lc_now_seconds();
        }
    }
    if (!st && fo->last_path && f->save && r.steps_done > first) {
        lc_fit_record rec = r.record;
        rec.step = r.steps_done, rec.best = 0;
        st = f->save(run, fo->last_path, &rec);
    }
    r.seconds = lc_now_seconds() - t0;
    if (out) *out = r;
    return st;
}
