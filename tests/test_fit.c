/* The one training loop (src/train/fit.h) driving a family defined here: softmax regression over
 * synthetic points, its parameters laid out by a tensor list as every family's are. Checks that it
 * learns, that accumulation of two half batches is one whole batch, that a run stopped and continued
 * from its saved state is bit-identical to one that was not, that the best state is kept by the
 * validation score and saved at the right steps, that a non-finite loss stops the run before the update,
 * and that a stop request ends the run after a save. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "harness.h"
#include "nn/tensors.h"
#include "train/fit.h"

#define CLASSES 3
#define FEATURES 4
#define EXAMPLES 240
#define HELD_OUT 120

/* ---- the family: a linear layer and softmax cross-entropy */
typedef struct {
    lc_tensor_list tensors;
    lc_table ptab, stab;
    float *params, *grads, *adam_m, *adam_v, *state;
    long step;
    float x[EXAMPLES + HELD_OUT][FEATURES];
    int y[EXAMPLES + HELD_OUT];
    int batch;            /* examples per batch of one process */
    double dprobs[64][CLASSES]; /* the last forward's d loss_sum / d logits */
    int last_rows[64], last_n;
    long nan_at_batch;    /* forward reports a NaN loss for this batch (-1: never) */
    /* the saved states, by path: "best" and "last" */
    struct saved {
        int used;
        char path[32];
        float params[CLASSES * FEATURES + CLASSES + 32], m[CLASSES * FEATURES + CLASSES + 32],
            v[CLASSES * FEATURES + CLASSES + 32];
        lc_fit_record rec;
        int saves;
    } saved[2];
    int validations;
    long stop_after_step; /* should_stop answers 1 once step reaches it (0: never) */
} tiny_run;

static lc_tensor_buffers buffers(tiny_run *r) {
    return (lc_tensor_buffers){&r->ptab, &r->stab, &r->params, &r->grads, &r->adam_m, &r->adam_v, &r->state};
}

/* Three clusters, one per class, with overlap; the same points for every seed of the parameters. */
static int tiny_create(tiny_run *r, int batch, uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->batch = batch, r->nan_at_batch = -1;
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, &r->tensors);
    lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 1, CLASSES, FEATURES, "head.weight");
    lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_HEAD_B, -1, 1, CLASSES, 0, "head.bias");
    lc_tensor_buffers bufs = buffers(r);
    if (lc_tensor_list_finish(&b) || lc_tensors_allocate(&r->tensors, &bufs)) return 0;
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < CLASSES * FEATURES; i++) r->params[i] = 0.1f * (float)lc_rng_normal(&rng);
    lc_rng_seed(&rng, 99);
    for (int e = 0; e < EXAMPLES + HELD_OUT; e++) {
        r->y[e] = e % CLASSES;
        for (int f = 0; f < FEATURES; f++)
            r->x[e][f] = (float)lc_rng_normal(&rng) + (f == r->y[e] ? 1.5f : f == (r->y[e] + 1) % CLASSES ? -1.0f : 0.0f);
    }
    return 1;
}

static void tiny_free(tiny_run *r) {
    lc_tensor_buffers bufs = buffers(r);
    lc_tensors_release(&r->tensors, &bufs);
}

static const float *weight(const tiny_run *r) { return r->params; }
static const float *bias(const tiny_run *r) { return r->params + r->ptab.slots[1].offset; }

static double logits_of(const tiny_run *r, int e, double z[CLASSES]) {
    double mx = -INFINITY;
    for (int c = 0; c < CLASSES; c++) {
        z[c] = bias(r)[c];
        for (int f = 0; f < FEATURES; f++) z[c] += (double)weight(r)[c * FEATURES + f] * r->x[e][f];
        if (z[c] > mx) mx = z[c];
    }
    double sum = 0;
    for (int c = 0; c < CLASSES; c++) sum += exp(z[c] - mx);
    return mx + log(sum);
}

/* batch k of `ranks` processes reads examples (k * ranks * batch + rank * batch + i) mod EXAMPLES */
static lc_status tiny_forward(void *user, long batch, int rank, int ranks, double *loss_sum, long *count, long *units) {
    tiny_run *r = user;
    double sum = 0;
    r->last_n = r->batch;
    for (int i = 0; i < r->batch; i++) {
        const int e = (int)((batch * ranks * r->batch + (long)rank * r->batch + i) % EXAMPLES);
        double z[CLASSES];
        const double lse = logits_of(r, e, z);
        sum += lse - z[r->y[e]];
        for (int c = 0; c < CLASSES; c++) r->dprobs[i][c] = exp(z[c] - lse) - (c == r->y[e]);
        r->last_rows[i] = e;
    }
    *loss_sum = batch == r->nan_at_batch ? NAN : sum;
    *count = r->batch, *units = r->batch;
    return LC_OK;
}

static lc_status tiny_backward(void *user, float scale) {
    tiny_run *r = user;
    float *gw = r->grads, *gb = r->grads + r->ptab.slots[1].offset;
    for (int i = 0; i < r->last_n; i++)
        for (int c = 0; c < CLASSES; c++) {
            const float d = scale * (float)r->dprobs[i][c];
            gb[c] += d;
            for (int f = 0; f < FEATURES; f++) gw[c * FEATURES + f] += d * r->x[r->last_rows[i]][f];
        }
    return LC_OK;
}

static double accuracy(const tiny_run *r) {
    int right = 0;
    for (int e = EXAMPLES; e < EXAMPLES + HELD_OUT; e++) {
        double z[CLASSES];
        logits_of(r, e, z);
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (z[c] > z[best]) best = c;
        right += best == r->y[e];
    }
    return (double)right / HELD_OUT;
}

static lc_status tiny_validate(void *user, long step, lc_fit_metrics *out) {
    tiny_run *r = user;
    r->validations++;
    const double acc = accuracy(r);
    lc_fit_metrics_add(out, "valid_accuracy", acc);
    out->score = acc;
    return LC_OK;
}

static lc_status tiny_save(void *user, const char *path, const lc_fit_record *rec) {
    tiny_run *r = user;
    struct saved *s = &r->saved[strcmp(path, "best") == 0 ? 0 : 1];
    const size_t n = r->ptab.total;
    s->used = 1;
    snprintf(s->path, sizeof s->path, "%s", path);
    memcpy(s->params, r->params, sizeof(float) * n);
    memcpy(s->m, r->adam_m, sizeof(float) * n);
    memcpy(s->v, r->adam_v, sizeof(float) * n);
    s->rec = *rec;
    s->saves++;
    return LC_OK;
}

/* a run continued from its saved "last" state */
static void tiny_restore(tiny_run *r, const struct saved *s) {
    const size_t n = r->ptab.total;
    memcpy(r->params, s->params, sizeof(float) * n);
    memcpy(r->adam_m, s->m, sizeof(float) * n);
    memcpy(r->adam_v, s->v, sizeof(float) * n);
    r->step = s->rec.step;
}

static int tiny_should_stop(void *user) {
    tiny_run *r = user;
    return r->stop_after_step > 0 && r->step >= r->stop_after_step;
}

static const lc_fit_family tiny_family = {tiny_forward, tiny_backward, tiny_validate, tiny_save};

static lc_fit_params params_of(tiny_run *r) {
    return (lc_fit_params){&r->tensors, &r->ptab, r->params, r->grads, r->adam_m, r->adam_v, &r->step};
}

static lc_train_options options(long steps, long eval_every) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.eval_every = eval_every, o.lr = 0.05f, o.min_lr = 0.005f, o.warmup = 5, o.weight_decay = 0;
    return o;
}

static lc_fit_options fit_options(tiny_run *r, const lc_train_options *o) {
    lc_fit_options fo = {0};
    fo.o = o, fo.best_path = "best", fo.last_path = "last", fo.record.best_score = NAN;
    fo.should_stop = tiny_should_stop, fo.user = r;
    return fo;
}

TEST(learns_and_keeps_the_best_by_validation) {
    tiny_run r;
    CHECK(tiny_create(&r, 8, 1), "create: %s", lc_last_error());
    const double before = accuracy(&r);
    lc_train_options o = options(120, 20);
    lc_fit_options fo = fit_options(&r, &o);
    lc_fit_result res;
    lc_fit_params p = params_of(&r);
    lc_status st = lc_fit(&tiny_family, &r, &p, &fo, &res);
    CHECK(st == LC_OK, "%s", lc_last_error());
    CHECK(r.step == 120 && res.steps_done == 120 && res.first_step == 0, "steps %ld %ld", r.step, res.steps_done);
    CHECK(accuracy(&r) > 0.8 && accuracy(&r) > before + 0.2, "accuracy %.3f from %.3f", accuracy(&r), before);
    CHECK(r.validations == 6, "validations every 20 steps and at the end: %d", r.validations);
    CHECK(r.saved[0].used && r.saved[0].rec.best && r.saved[0].rec.step == res.record.best_step, "best saved at its step");
    CHECK(res.record.best_score >= accuracy(&r), "the best score %.3f is the highest seen", res.record.best_score);
    CHECK(r.saved[1].used && r.saved[1].saves == 1 && r.saved[1].rec.step == 120 && !r.saved[1].rec.best,
          "the last state saved once, at the end (%d saves)", r.saved[1].saves);
    CHECK(res.units == 120 * 8, "units %.0f", res.units);
    tiny_free(&r);
}

TEST(accumulating_two_halves_is_one_batch) {
    tiny_run whole, halves;
    tiny_create(&whole, 8, 3), tiny_create(&halves, 4, 3);
    lc_train_options o = options(10, 0), oh = o;
    oh.grad_accum = 2;
    lc_fit_options fw = fit_options(&whole, &o), fh = fit_options(&halves, &oh);
    fw.last_path = fh.last_path = NULL;
    lc_fit_params pw = params_of(&whole), ph = params_of(&halves);
    CHECK(lc_fit(&tiny_family, &whole, &pw, &fw, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_fit(&tiny_family, &halves, &ph, &fh, NULL) == LC_OK, "%s", lc_last_error());
    double worst = 0;
    for (size_t i = 0; i < whole.ptab.total; i++) worst = fmax(worst, fabs(whole.params[i] - halves.params[i]));
    CHECK(worst < 1e-5, "accumulated parameters differ by %g", worst);
    tiny_free(&whole), tiny_free(&halves);
}

TEST(stopped_and_continued_equals_uninterrupted) {
    tiny_run a, b;
    tiny_create(&a, 8, 5), tiny_create(&b, 8, 5);
    lc_train_options o = options(40, 10);
    lc_fit_options fa = fit_options(&a, &o);
    lc_fit_params pa = params_of(&a);
    CHECK(lc_fit(&tiny_family, &a, &pa, &fa, NULL) == LC_OK, "%s", lc_last_error());
    /* b: stopped by request after step 17 (a save of the last state), then continued from that save */
    b.stop_after_step = 17;
    lc_fit_options fb = fit_options(&b, &o);
    lc_fit_params pb = params_of(&b);
    lc_fit_result res;
    CHECK(lc_fit(&tiny_family, &b, &pb, &fb, &res) == LC_OK, "%s", lc_last_error());
    CHECK(res.stopped && b.step == 17 && b.saved[1].rec.step == 17, "stopped at %ld, saved at %ld", b.step,
          b.saved[1].rec.step);
    tiny_run c;
    tiny_create(&c, 8, 12345); /* other initial weights: the saved state must replace them */
    tiny_restore(&c, &b.saved[1]);
    lc_fit_options fc = fit_options(&c, &o);
    fc.record = b.saved[1].rec;
    lc_fit_params pc = params_of(&c);
    CHECK(lc_fit(&tiny_family, &c, &pc, &fc, &res) == LC_OK, "%s", lc_last_error());
    CHECK(res.first_step == 17 && c.step == 40, "continued from %ld to %ld", res.first_step, c.step);
    CHECK(memcmp(a.params, c.params, sizeof(float) * a.ptab.total) == 0 &&
              memcmp(a.adam_v, c.adam_v, sizeof(float) * a.ptab.total) == 0,
          "the continued run's parameters and moments equal the uninterrupted run's bit for bit");
    CHECK(res.record.best_step == a.saved[0].rec.step && res.record.best_score == a.saved[0].rec.best_score,
          "the same best (step %ld vs %ld)", res.record.best_step, a.saved[0].rec.step);
    tiny_free(&a), tiny_free(&b), tiny_free(&c);
}

TEST(stop_after_and_periodic_saves) {
    tiny_run r;
    tiny_create(&r, 8, 7);
    lc_train_options o = options(50, 0);
    o.stop_after = 12;
    lc_fit_options fo = fit_options(&r, &o);
    fo.save_every = 5;
    lc_fit_params p = params_of(&r);
    lc_fit_result res;
    CHECK(lc_fit(&tiny_family, &r, &p, &fo, &res) == LC_OK, "%s", lc_last_error());
    CHECK(r.step == 12 && !res.stopped, "stop-after 12: at %ld", r.step);
    CHECK(r.saved[1].saves == 3 && r.saved[1].rec.step == 12, "saves at 5, 10 and the end: %d, last at %ld",
          r.saved[1].saves, r.saved[1].rec.step);
    CHECK(r.validations == 0 && !r.saved[0].used, "no validation before the schedule's end with eval-every 0");
    tiny_free(&r);
}

TEST(a_non_finite_loss_stops_before_the_update) {
    tiny_run r;
    tiny_create(&r, 8, 9);
    r.nan_at_batch = 6; /* step 7 (1-based) */
    lc_train_options o = options(20, 0);
    lc_fit_options fo = fit_options(&r, &o);
    fo.last_path = NULL;
    lc_fit_params p = params_of(&r);
    tiny_run ref;
    tiny_create(&ref, 8, 9);
    lc_train_options o6 = o;
    o6.stop_after = 6;
    lc_fit_options f6 = fit_options(&ref, &o6);
    f6.last_path = NULL;
    lc_fit_params p6 = params_of(&ref);
    lc_fit(&tiny_family, &ref, &p6, &f6, NULL);
    lc_status st = lc_fit(&tiny_family, &r, &p, &fo, NULL);
    CHECK(st == LC_ERR_NUMERIC && strstr(lc_last_error(), "training diverged at step 7: loss is nan"), "%d %s", (int)st,
          lc_last_error());
    CHECK(r.step == 6 && memcmp(r.params, ref.params, sizeof(float) * r.ptab.total) == 0,
          "the parameters are those after step 6 (step %ld)", r.step);
    tiny_free(&r), tiny_free(&ref);
}

TEST(bad_options_are_refused) {
    tiny_run r;
    tiny_create(&r, 8, 1);
    lc_train_options o = options(10, 0);
    lc_fit_options fo = fit_options(&r, &o);
    lc_fit_params p = params_of(&r);
    o.grad_accum = 0;
    CHECK(lc_fit(&tiny_family, &r, &p, &fo, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "grad-accum"), "%s",
          lc_last_error());
    o.grad_accum = 1, o.stop_after = -1;
    CHECK(lc_fit(&tiny_family, &r, &p, &fo, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "stop-after"), "%s",
          lc_last_error());
    o.stop_after = 0;
    lc_fit_family no_backward = tiny_family;
    no_backward.backward = NULL;
    CHECK(lc_fit(&no_backward, &r, &p, &fo, NULL) == LC_ERR_ARG, "a family without backward");
    CHECK(r.step == 0, "nothing trained");
    tiny_free(&r);
}

int main(void) {
    RUN(learns_and_keeps_the_best_by_validation);
    RUN(accumulating_two_halves_is_one_batch);
    RUN(stopped_and_continued_equals_uninterrupted);
    RUN(stop_after_and_periodic_saves);
    RUN(a_non_finite_loss_stops_before_the_update);
    RUN(bad_options_are_refused);
    return test_summary("test_fit");
}
