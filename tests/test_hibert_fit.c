/* HIBERT's training run from the library (src/models/hibert/hibert_fit.h) on documents made here: a fine-tuning run
 * reports every step and validates at its cadence, keeps the best state by ROUGE and saves it, and a run
 * stopped (should_stop) and resumed from its last state ends bit-identical to one that was not (weights,
 * moments, the best); pre-training with intruders reports their BCE every step. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/threads.h"
#include "harness.h"
#include "models/hibert/hibert.h"
#include "test_files.h"
#include "models/hibert/hibert_fit.h"

static const char *words[] = {"markets", "rose", "after", "the", "bank", "cut", "rates", "while", "players",
                              "won", "a", "late", "match", "and", "voters", "chose", "new", "leaders"};

/* n documents of 5 sentences, each referenced by its first two sentences. */
static void documents(lc_hdocs *d, int n, int first) {
    lc_hdocs_init(d, 8);
    for (int i = first; i < first + n; i++) {
        char text[1024] = "", ref[512] = "", name[32];
        for (int s = 0; s < 5; s++) {
            char sent[160];
            snprintf(sent, sizeof sent, "%s %s %s %s number %d. ", words[(i + s) % 18], words[(3 * i + s) % 18],
                     words[(i * s + 5) % 18], words[(7 * s + i) % 18], i * 5 + s);
            strcat(text, sent);
            if (s < 2) strcat(ref, sent);
        }
        snprintf(name, sizeof name, "doc%d", i);
        CHECK(lc_hdocs_add_text(d, text, name, ref) == LC_OK, "%s", lc_last_error());
    }
}

typedef struct {
    int steps, validations;
    long last_step;
    double bce;     /* the last step's intruder BCE */
    int stop_after; /* should_stop says so after this many steps (0: never) */
} seen;

static int stop(void *user) {
    const seen *s = user;
    return s->stop_after && s->steps >= s->stop_after;
}

static void report(const lc_progress *p, const lc_fit_metrics *valid, double intruder_bce, void *user) {
    seen *s = user;
    s->steps++, s->last_step = p->step, s->bce = intruder_bce;
    if (valid) {
        s->validations++;
        CHECK(valid->n == 6 || valid->n == 2, "%d metrics", valid->n);
    }
}

typedef struct {
    lc_hdocs train, valid;
    lc_hibert *m;
    lc_hibert_run run;
} setup;

static void make(setup *s, int finetune, float intruders) {
    documents(&s->train, 12, 0), documents(&s->valid, 3, 100);
    if (finetune) CHECK(lc_hdocs_label(&s->train, 0) == LC_OK && lc_hdocs_label(&s->valid, 0) == LC_OK, "labels");
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.sent = c.doc = c.dec = (lc_hibert_stack){1, 16, 2, 32, ""}; /* every stack one small layer */
    c.max_sent_len = 48, c.max_sents = 8;
    lc_hibert_run_default(&s->run);
    s->run.stage = finetune ? LC_HIBERT_STAGE_FINETUNE : LC_HIBERT_STAGE_PRETRAIN;
    s->run.opts.steps = 6, s->run.opts.batch = 3, s->run.opts.warmup = 1, s->run.opts.eval_every = 2;
    s->run.opts.lr = 3e-3f, s->run.intruders = intruders, s->run.intruder_weight = 1;
    s->run.limits = lc_hdocs_limits(&s->train, &s->valid, 3, &c, !finetune);
    s->m = NULL;
    CHECK(lc_hibert_create(&c, &s->run.limits, 5, &s->m) == LC_OK, "%s", lc_last_error());
}

static void done(setup *s) {
    lc_hibert_free(s->m);
    lc_hdocs_free(&s->train), lc_hdocs_free(&s->valid);
}

static lc_status fit(setup *s, const char *best, const char *last, seen *w) {
    const lc_hibert_fit_options o = {s->m, &s->run, &s->train, &s->valid, 0, best, last, 0, 0, stop, report, NULL, w};
    return lc_hibert_fit(&o, NULL);
}

TEST(finetune_keeps_the_best_and_resumes_bit_identically) {
    setup a;
    seen w = {0};
    make(&a, 1, 0);
    CHECK(fit(&a, tmp_path("best.st"), tmp_path("a.last"), &w) == LC_OK, "%s", lc_last_error());
    CHECK(w.steps == 6 && w.last_step == 6 && w.validations == 3, "%d steps, %d validations", w.steps, w.validations);
    CHECK(a.run.best_step >= 2 && a.run.best_step % 2 == 0 && a.run.best >= 0, "best %g at %ld", a.run.best, a.run.best_step);
    lc_hibert_run saved;
    lc_hibert *b = NULL;
    CHECK(lc_hibert_load(tmp_path("best.st"), NULL, &b, &saved) == LC_OK && lc_hibert_steps_done(b) == a.run.best_step &&
              saved.best_step == a.run.best_step, "the best state is saved at its step");
    lc_hibert_free(b);

    setup h; /* the same run stopped after 3 steps, then resumed from its last state */
    make(&h, 1, 0);
    seen half = {0};
    half.stop_after = 3;
    CHECK(fit(&h, tmp_path("h.st"), tmp_path("h.last"), &half) == LC_OK && half.steps == 3, "%s", lc_last_error());
    lc_hibert_free(h.m);
    h.m = NULL;
    CHECK(lc_hibert_load(tmp_path("h.last"), &h.run.limits, &h.m, &h.run) == LC_OK && lc_hibert_steps_done(h.m) == 3,
          "%s", lc_last_error());
    CHECK(fit(&h, tmp_path("h.st"), tmp_path("h.last"), &(seen){0}) == LC_OK, "%s", lc_last_error());
    CHECK(h.run.best == a.run.best && h.run.best_step == a.run.best_step, "best %g at %ld, resumed %g at %ld",
          a.run.best, a.run.best_step, h.run.best, h.run.best_step);
    const size_t bytes = sizeof(float) * a.m->ptab.total;
    CHECK(lc_hibert_steps_done(h.m) == 6 && !memcmp(a.m->params, h.m->params, bytes) &&
              !memcmp(a.m->adam_m, h.m->adam_m, bytes) && !memcmp(a.m->adam_v, h.m->adam_v, bytes),
          "3 steps + 3 resumed differ from 6");
    done(&a), done(&h);
}

TEST(pretraining_reports_the_intruders) {
    setup a;
    seen w = {0};
    make(&a, 0, 0.4f);
    CHECK(fit(&a, NULL, NULL, &w) == LC_OK, "%s", lc_last_error());
    CHECK(w.steps == 6 && w.validations == 3 && isfinite(w.bce) && w.bce > 0, "%d steps, BCE %g", w.steps, w.bce);
    done(&a);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_hibert_fit_XXXXXX")) return 1;
    lc_set_threads(1);
    RUN(finetune_keeps_the_best_and_resumes_bit_identically);
    RUN(pretraining_reports_the_intruders);
    tmpdir_remove();
    return test_summary("test_hibert_fit");
}
