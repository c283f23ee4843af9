/* The classifier's training run on the one training loop (src/models/classify/classify_fit.h), on a tiny labelled set
 * held in memory: a run stopped and continued equals one that was not, bit for bit, for either objective;
 * the validation accuracy it reports is the accuracy of lc_classifier_classify_texts's predictions; the
 * best is kept by strictly higher accuracy; missing inputs are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "models/classify/classify.h"
#include "models/classify/classify_fit.h"

#define TRAIN 24
#define VALID 9

static char train_text[TRAIN][40], valid_text[VALID][40];
static const uint8_t *train_ptr[TRAIN], *valid_ptr[VALID];
static size_t train_len[TRAIN], valid_len[VALID];
static int train_label[TRAIN], valid_label[VALID];
static char *names[3] = {"a", "b", "c"};

/* Example i of class i % 3: runs of one letter, of the two, or of the third, of lengths 3 .. 30. */
static void fill(char (*text)[40], const uint8_t **ptr, size_t *len, int *label, int n, int shift) {
    for (int i = 0; i < n; i++) {
        const int k = i % 3, l = 3 + (i * 7 + shift) % 28;
        for (int t = 0; t < l; t++) text[i][t] = k == 0 ? 'a' : k == 1 ? 'b' : (t % 2 ? 'a' : 'c');
        text[i][l] = 0;
        ptr[i] = (const uint8_t *)text[i], len[i] = (size_t)l, label[i] = k;
    }
}

static lc_labelled_data data_of(long n, const uint8_t **ptr, size_t *len, int *label) {
    lc_labelled_data d;
    memset(&d, 0, sizeof d);
    d.n = n, d.text = ptr, d.text_len = len, d.label = label;
    d.labels.n = 3, d.labels.name = names;
    return d;
}

static lc_classifier *tiny(lc_classify_objective objective, int batch) {
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.n_layer = 1, c.d_model = 16, c.n_head = 2, c.d_ff = 32, c.max_len = 32, c.n_classes = 3;
    c.objective = objective;
    lc_classifier *m = NULL;
    CHECK(lc_classifier_create(&c, batch, 0, 7, &m) == LC_OK, "create: %s", lc_last_error());
    return m;
}

typedef struct {
    lc_classify_progress last; /* the latest report's */
    long step, reports;
    double loss_sum;
} seen;

static void report(const lc_progress *p, const lc_classify_progress *c, const char *extra, void *user) {
    seen *s = user;
    (void)extra;
    s->last = *c, s->step = p->step, s->reports++, s->loss_sum += p->loss;
}

static lc_train_options options(long steps, long stop_after) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.stop_after = stop_after, o.batch = 4, o.lr = 3e-3f, o.warmup = 2, o.eval_every = 4;
    return o;
}

/* Trains m with o (from its step), the record of a resumed run in *rec (updated). */
static lc_classify_fit_result fit(lc_classifier *m, const lc_train_options *o, lc_classify_run *rec, seen *s) {
    static lc_labelled_data train, valid;
    fill(train_text, train_ptr, train_len, train_label, TRAIN, 0);
    fill(valid_text, valid_ptr, valid_len, valid_label, VALID, 5);
    train = data_of(TRAIN, train_ptr, train_len, train_label);
    valid = data_of(VALID, valid_ptr, valid_len, valid_label);
    const lc_classify_data d = {&train, &valid, valid_label, &train.labels, NULL};
    lc_classify_fit_options fo = {o, *rec, NULL, NULL, 0, 0, NULL, report, s};
    lc_classify_fit_result r;
    CHECK(lc_classify_fit(m, &d, &fo, &r) == LC_OK, "fit: %s", lc_last_error());
    rec->best_accuracy = (float)r.best_accuracy, rec->best_step = r.best_step;
    return r;
}

static void stopped_and_continued(lc_classify_objective objective) {
    lc_classifier *a = tiny(objective, 4), *b = tiny(objective, 4);
    lc_classify_run ra, rb;
    lc_classify_run_default(&ra), lc_classify_run_default(&rb);
    seen sa = {0}, sb = {0};
    lc_train_options o = options(10, 0);
    const lc_classify_fit_result whole = fit(a, &o, &ra, &sa);
    o.stop_after = 5; /* stops after a validation (step 4) and before the next (8) */
    fit(b, &o, &rb, &sb);
    CHECK(lc_classifier_steps_done(b) == 5, "the first part ends at step 5, got %ld", lc_classifier_steps_done(b));
    o.stop_after = 0;
    const lc_classify_fit_result rest = fit(b, &o, &rb, &sb);
    CHECK(lc_classifier_steps_done(a) == 10 && lc_classifier_steps_done(b) == 10, "both end at step 10");
    CHECK(memcmp(a->params, b->params, sizeof(float) * a->ptab.total) == 0, "stopped and continued: other weights");
    CHECK(memcmp(a->adam_v, b->adam_v, sizeof(float) * a->ptab.total) == 0, "stopped and continued: other moments");
    CHECK(sa.loss_sum == sb.loss_sum && sa.reports == 10 && sb.reports == 10, "the same losses: %.9g %.9g",
          sa.loss_sum, sb.loss_sum);
    CHECK(whole.best_step == rest.best_step && whole.best_accuracy == rest.best_accuracy,
          "the same best: step %ld %.4f, continued %ld %.4f", whole.best_step, whole.best_accuracy, rest.best_step,
          rest.best_accuracy);
    CHECK(whole.best_step == 4 || whole.best_step == 8 || whole.best_step == 10, "a validated step: %ld", whole.best_step);
    CHECK(rest.fit.first_step == 5 && rest.fit.steps_done == 10, "the continued run: %ld .. %ld", rest.fit.first_step,
          rest.fit.steps_done);
    lc_classifier_free(a), lc_classifier_free(b);
}

TEST(stopped_and_continued_equals_uninterrupted_labels) { stopped_and_continued(LC_CLASSIFY_LABELS); }
TEST(stopped_and_continued_equals_uninterrupted_masked_tokens) { stopped_and_continued(LC_CLASSIFY_MLM); }

TEST(the_validation_accuracy_is_that_of_the_predictions) {
    lc_classifier *m = tiny(LC_CLASSIFY_LABELS, 4);
    lc_classify_run rec;
    lc_classify_run_default(&rec);
    seen s = {0};
    const lc_train_options o = options(12, 0);
    const lc_classify_fit_result r = fit(m, &o, &rec, &s);
    CHECK(s.step == 12 && !isnan(s.last.valid_accuracy), "validated at the last step");
    int pred[VALID];
    CHECK(lc_classifier_classify_texts(m, NULL, VALID, valid_ptr, valid_len, 4, pred, NULL) == LC_OK, "classify: %s",
          lc_last_error());
    long right = 0;
    for (int i = 0; i < VALID; i++) right += pred[i] == valid_label[i];
    CHECK(s.last.valid_accuracy == (double)right / VALID, "reported %.6f, predictions %ld of %d",
          s.last.valid_accuracy, right, VALID);
    CHECK(r.best_accuracy >= s.last.valid_accuracy - 1e-6, "the best is at least the last: %.4f", r.best_accuracy);
    CHECK(r.fit.units > 0 && r.stop_signal == 0, "units read, not stopped");
    lc_classifier_free(m);
}

TEST(missing_inputs_are_refused) {
    lc_classifier *m = tiny(LC_CLASSIFY_LABELS, 4);
    const lc_train_options o = options(2, 0);
    lc_classify_fit_options fo;
    memset(&fo, 0, sizeof fo);
    fo.o = &o;
    const lc_classify_data none = {NULL, NULL, NULL, NULL, NULL};
    CHECK(lc_classify_fit(m, &none, &fo, NULL) == LC_ERR_ARG, "no data: LC_ERR_ARG");
    CHECK(lc_classify_fit(NULL, &none, &fo, NULL) == LC_ERR_ARG, "no model: LC_ERR_ARG");
    lc_classifier_free(m);
}

int main(void) {
    RUN(stopped_and_continued_equals_uninterrupted_labels);
    RUN(stopped_and_continued_equals_uninterrupted_masked_tokens);
    RUN(the_validation_accuracy_is_that_of_the_predictions);
    RUN(missing_inputs_are_refused);
    return test_summary("test_classify_fit");
}
