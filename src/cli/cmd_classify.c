/* `longctx train --task classify` (docs/guides/classify.md): train a sequence classifier on a labelled TSV file with
 * periodic validation accuracy, keeping the best checkpoint in --out and the last state in OUT.last
 * (--resume continues from it); with --objective mlm, a masked-token pre-training of its encoder on the
 * same inputs (validation: masked-token accuracy), which --init of a classifier then reads. Batches are
 * bucketed by length (each epoch's shuffled examples sorted by length in chunks of 64 batches) and packed,
 * so cost follows the real lengths. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/field_flags.h"
#include "cli/model_flags.h"
#include "cli/optim_flags.h"
#include "cli/same_settings.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"
#include "models/classify/classify_fields.h"
#include "models/classify/classify_fit.h"
#include "train/dist.h"

#define CFG_TYPE lc_classify_config
/* The configuration's flags: one per row of models/classify/classify_fields.h. */
static const lc_cli_field fields[] = {LC_CLASSIFY_FIELDS(LC_CLI_FIELD)};

typedef struct {
    const char *task, *data, *valid, *label_col, *text_col, *init, *out, *resume, *log, *preset;
    int threads, json, max_words;
    long min_count, save_every, max_examples;
    float save_every_min;
    lc_train_options o;
    lc_field_flags ff;
} cargs;

/* With --resume, every flag the checkpoint fixes is refused. */
static int refuse_flags(const cargs *a, lc_opt *opts, int n) {
    const char *fixed[] = {"--preset", "--min-count", "--max-words", "--init", "--batch", "--lr", "--min-lr",
                           "--warmup", "--weight-decay", "--clip", "--seed"};
    const char *which = NULL;
    for (size_t i = 0; a->resume && !which && i < sizeof fixed / sizeof *fixed; i++)
        if (lc_opt_get(opts, n, fixed[i])->seen) which = fixed[i];
    if (a->resume && (which || lc_field_flags_any(&a->ff, opts, n, &which))) {
        lc_cli_error("train --task classify: %s cannot be combined with --resume (the checkpoint fixes it)", which);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* Process 0 prints; the others stay quiet unless they fail. */
static int quiet(void) { return lc_dist_rank() != 0; }

typedef struct {
    cargs *a;
    lc_train_log log;
    lc_progress_printer pp;
    lc_classifier *m;
    lc_labelled_data train, valid;
    int *valid_labels;
    lc_word_vocab *vocab;
    lc_classify_run run; /* the record saved with each checkpoint: options, best so far */
    char last[4200];     /* OUT.last: the last state */
} crun;

/* Process 0's report of a step: the validation line, the progress bar, the --log line. */
static void report(const lc_progress *p, const lc_classify_progress *c, const char *extra, void *user) {
    crun *r = user;
    if (quiet()) return;
    if (!isnan(c->valid_accuracy))
        fprintf(stderr, "%sstep %ld: valid %saccuracy %.4f (best %.4f at step %ld)\n", r->pp.tty ? "\r" : "", p->step,
                lc_classifier_config(r->m)->objective == LC_CLASSIFY_MLM ? "masked-token " : "", c->valid_accuracy,
                c->best_accuracy, c->best_step);
    lc_progress_print(p, &r->pp);
    lc_train_log_step(&r->log, p, extra);
}

static int stop_requested(void *user) {
    (void)user;
    return lc_cli_stop_signal();
}

static int finish(crun *r, const lc_classify_fit_result *res) {
    const cargs *a = r->a;
    const long done = lc_classifier_steps_done(r->m), first = res->fit.first_step;
    const int sig = res->stop_signal;
    if (quiet()) return sig ? 128 + sig : LC_EXIT_OK;
    if (sig) {
        fprintf(stderr, "longctx: interrupted by %s at step %ld: the best checkpoint so far (step %ld) is %s, the last "
                        "state %s (continue with --resume %s)\n", lc_cli_signal_name(sig), done, res->best_step,
                a->out, r->last, r->last);
        return 128 + sig;
    }
    const double el = res->fit.seconds, valid_s = res->fit.valid_seconds, train_s = el - valid_s,
                 tok_s = res->fit.units / (train_s > 0 ? train_s : 1e-9);
    const long global = (long)a->o.batch * lc_dist_size();
    printf("best valid accuracy %.4f at step %ld of %ld over %ld examples (%.0f tokens/s)\n", res->best_accuracy,
           res->best_step, a->o.steps, r->valid.n, tok_s);
    printf("saved %s (the best checkpoint) and %s (the last state)\n", a->out, r->last);
    if (a->json)
        printf("{\"valid_accuracy\":%s,\"best_step\":%ld,\"steps\":%ld,\"run_steps\":%ld,\"examples\":%ld,"
               "\"seconds\":%.3f,\"valid_seconds\":%.3f,\"tokens_per_s\":%.1f,\"params\":%zu}\n",
               lc_json_number(res->best_accuracy), res->best_step, done, done - first,
               done * (r->train.n < global ? r->train.n : global), el, valid_s, tok_s, lc_classifier_num_params(r->m));
    return LC_EXIT_OK;
}

static int train_loop(crun *r) {
    cargs *a = r->a;
    lc_progress_init(&r->pp, a->o.steps);
    r->pp.bits = 0; /* a classification loss (cross-entropy over labels), not bits per byte */
    const lc_classify_data d = {&r->train, &r->valid, r->valid_labels, &r->train.labels, r->vocab};
    lc_classify_fit_options fo = {&a->o, r->run, a->out, r->last, a->save_every, a->save_every_min, stop_requested,
                                  report, r};
    lc_classify_fit_result res;
    lc_status st = lc_classify_fit(r->m, &d, &fo, &res);
    if (!quiet()) lc_progress_done(&r->pp);
    if (!st) return finish(r, &res);
    const int rc = lc_cli_fail(st);
    if (lc_dist_size() > 1 && st != LC_ERR_NUMERIC) lc_dist_abort(rc); /* the others may wait for this one */
    return rc;
}

/* --init of a words classifier's checkpoint: its vocabulary is the new model's. *v stays NULL for any other
 * file: a masked-LM or bytes checkpoint, or one that cannot be read, whose error --init then reports. */
static void init_vocab(const char *path, lc_word_vocab **v) {
    lc_classifier *m = NULL;
    lc_label_set labels = {0, NULL};
    if (lc_classifier_load(path, 1, 0, &m, NULL, &labels, v)) lc_clear_error();
    lc_classifier_free(m);
    lc_label_set_free(&labels);
}

/* The classifier's configuration: the encoder's shape from the language model's --preset, then the flags, and
 * the training data's classes. */
static int build_config(cargs *a, lc_opt *opts, int n, crun *r, lc_classify_config *c) {
    lc_config shape;
    if (lc_config_preset(&shape, a->preset)) {
        lc_cli_error("train: --preset: %s", lc_last_error());
        return LC_EXIT_USAGE;
    }
    lc_classify_config_default(c);
    c->n_layer = shape.n_layer, c->d_model = shape.d_model, c->n_head = shape.n_head, c->d_ff = shape.d_ff;
    c->dropout = shape.dropout;
    int rc = lc_field_flags_apply(&a->ff, opts, n, "train", c, 0);
    if (rc >= 0) return rc;
    lc_status st;
    if (!lc_opt_get(opts, n, "--max-len")->seen)
        c->max_len = c->tokens == LC_TOKENS_WORDS ? LC_LRA_LISTOPS_MAX_LEN : LC_LRA_TEXT_MAX_LEN;
    c->n_classes = r->train.labels.n;
    if (c->n_classes < 2) {
        lc_cli_error("train: --data %s has %d label%s: a classifier needs at least 2", a->data, c->n_classes,
                     c->n_classes == 1 ? "" : "s");
        return LC_EXIT_RUNTIME;
    }
    if (c->tokens == LC_TOKENS_WORDS && a->init) init_vocab(a->init, &r->vocab);
    if (c->tokens == LC_TOKENS_WORDS) {
        if (!r->vocab &&
            (st = lc_word_vocab_build(r->train.text, r->train.text_len, r->train.n, a->min_count, a->max_words, &r->vocab)))
            return lc_cli_fail(st);
        c->vocab = lc_word_vocab_size(r->vocab);
    }
    return -1;
}

/* --resume: the model, its vocabulary and run record; the training file must have its labels and size. */
static int resume(crun *r, lc_opt *opts, int n) {
    cargs *a = r->a;
    lc_label_set saved = {0, NULL};
    lc_status st = lc_classifier_load(a->resume, 0, 0, &r->m, &r->run, &saved, &r->vocab);
    if (st) return lc_cli_fail(st);
    int same = saved.n == r->train.labels.n;
    for (int i = 0; same && i < saved.n; i++) same = strcmp(saved.name[i], r->train.labels.name[i]) == 0;
    lc_label_set_free(&saved);
    if (!same || (r->run.train_examples && r->run.train_examples != r->train.n)) {
        lc_cli_error("train: --data %s is not the training file of %s (%s)", a->data, a->resume,
                     same ? "another number of examples" : "another label set");
        return LC_EXIT_RUNTIME;
    }
    /* the saved batch of every process together, divided among the processes now */
    const int R = lc_dist_size(), all = r->run.opts.batch * (r->run.opts.ranks > 1 ? r->run.opts.ranks : 1);
    if (all % R) {
        lc_cli_error("train: %s trained on batches of %d examples, which %d processes cannot share: run with a number "
                     "of processes dividing %d", a->resume, all, R, all);
        return LC_EXIT_USAGE;
    }
    if (all / R != r->run.opts.batch) { /* planned for this process's share */
        lc_classifier_free(r->m), lc_word_vocab_free(r->vocab);
        r->m = NULL, r->vocab = NULL;
        if ((st = lc_classifier_load(a->resume, all / R, 0, &r->m, &r->run, &saved, &r->vocab))) return lc_cli_fail(st);
        lc_label_set_free(&saved);
        r->run.opts.batch = all / R;
    }
    const long steps = a->o.steps, eval_every = a->o.eval_every, stop_after = a->o.stop_after;
    a->o = r->run.opts; /* the schedule and the optimizer as saved; --steps, --eval-every, --stop-after may change */
    if (lc_opt_get(opts, n, "--steps")->seen) a->o.steps = steps;
    if (lc_opt_get(opts, n, "--eval-every")->seen) a->o.eval_every = eval_every;
    a->o.stop_after = stop_after;
    lc_classify_config now = *lc_classifier_config(r->m); /* the checkpoint's precision, unless --precision is given */
    int rc = lc_field_flags_apply(&a->ff, opts, n, "train", &now, LC_F_RUN);
    if (rc >= 0) return rc;
    if ((st = lc_classifier_set_precision(r->m, now.precision))) return lc_cli_fail(st);
    if (lc_classifier_steps_done(r->m) >= a->o.steps) {
        lc_cli_error("train: %s has done %ld of its %ld steps: give a larger --steps to continue", a->resume,
                     lc_classifier_steps_done(r->m), a->o.steps);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* A labelled file's examples by count and hash (texts and labels), for the settings check. */
static uint64_t data_hash(const lc_labelled_data *d) {
    uint64_t h = (uint64_t)d->n;
    for (long i = 0; i < d->n; i++) h = lc_seed_mix(h ^ lc_data_hash(d->text[i], d->text_len[i]), (uint64_t)d->label[i]);
    for (int i = 0; i < d->labels.n; i++)
        h = lc_seed_mix(h ^ lc_data_hash((const uint8_t *)d->labels.name[i], strlen(d->labels.name[i])), 0);
    return h;
}

/* Collective: the processes training together hold the same settings (what the checkpoint would record,
 * the data by hash, and when they save and stop); -1, or LC_EXIT_USAGE after one line on each. */
static int same_run(const crun *r) {
    if (lc_dist_size() < 2) return -1;
    const cargs *a = r->a;
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_cli_settings *s = calloc(1, sizeof *s);
    if (!meta || !s || lc_classify_meta_strings(r->m, &r->run, meta)) lc_dist_abort(LC_EXIT_RUNTIME);
    lc_cli_settings_add_meta(s, meta->items, meta->n);
    lc_cli_settings_add(s, "--data", "of %ld examples (hash %016llx)", r->train.n, (unsigned long long)data_hash(&r->train));
    lc_cli_settings_add(s, "--valid", "of %ld examples (hash %016llx)", r->valid.n, (unsigned long long)data_hash(&r->valid));
    lc_cli_settings_add(s, "--stop-after", "%ld", a->o.stop_after);
    lc_cli_settings_add(s, "--save-every", "%ld", a->save_every);
    lc_cli_settings_add(s, "--save-every-min", "%.9g", (double)a->save_every_min);
    lc_cli_settings_add(s, "--out", "%s", a->out);
    const int rc = lc_cli_same_settings("train --task classify", s);
    free(meta), free(s);
    return rc;
}

static int train_run(cargs *a, lc_opt *opts, int n) {
    if (strcmp(a->task, "classify") != 0) {
        lc_cli_error("train: --task must be classify, got '%s'", a->task);
        return LC_EXIT_USAGE;
    }
    int rc = refuse_flags(a, opts, n);
    if (rc >= 0) return rc;
    crun r;
    memset(&r, 0, sizeof r);
    r.a = a;
    if ((rc = lc_run_flags_check_files("train --task classify", "a labelled TSV file", a->data, a->valid, a->init,
                                       a->out, a->log, r.last, sizeof r.last)) >= 0)
        return rc;
    lc_status st;
    lc_threads_set_default(a->threads);
    lc_classify_run_default(&r.run);
    lc_classify_config c;
    const lc_tsv_limits lim = {a->max_examples, 0};
    if ((st = lc_labelled_read_limited(a->data, a->label_col, a->text_col, &lim, &r.train))) rc = lc_cli_fail(st);
    if (rc < 0 && (st = lc_labelled_read_limited(a->valid, a->label_col, a->text_col, &lim, &r.valid)))
        rc = lc_cli_fail(st);
    if (rc < 0) rc = a->resume ? resume(&r, opts, n) : build_config(a, opts, n, &r, &c);
    long unseen = 0;
    if (rc < 0) {
        r.valid_labels = malloc(sizeof(int) * (size_t)r.valid.n);
        if (!r.valid_labels) rc = lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory"));
        else if ((st = lc_labelled_map(&r.valid, &r.train.labels, r.valid_labels, &unseen))) rc = lc_cli_fail(st);
    }
    if (rc < 0 && unseen && !quiet())
        fprintf(stderr, "longctx: warning: --valid %s: %ld examples have a label --data never has: counted wrong\n",
                a->valid, unseen);
    if (rc < 0 && !a->resume && (st = lc_classifier_create(&c, a->o.batch, 0, a->o.seed, &r.m))) rc = lc_cli_fail(st);
    if (rc < 0 && a->init && (st = lc_classifier_init_from_any(r.m, r.vocab, a->init))) rc = lc_cli_fail(st);
    if (rc < 0 && lc_dist_size() > 1 && r.train.n < (long)a->o.batch * lc_dist_size()) {
        lc_cli_error("train --task classify: --data %s has %ld examples, too few for %d processes x batch %d", a->data,
                     r.train.n, lc_dist_size(), a->o.batch);
        rc = LC_EXIT_USAGE;
    }
    if (rc < 0) a->o.ranks = lc_dist_size(), r.run.opts = a->o, r.run.train_examples = r.train.n;
    /* every process gets the same answer from both (a failure anywhere, a setting that differs) */
    if ((rc = lc_cli_all_ready(rc)) < 0) rc = same_run(&r);
    if (rc < 0 && !quiet()) rc = lc_train_log_open(&r.log, "train --task classify", a->log, a->resume != NULL);
    if ((rc = lc_cli_all_ready(rc)) < 0) {
        c = *lc_classifier_config(r.m);
        lc_cli_catch_stop_signals(); /* before the first line, which tells a watcher that the run is under way */
        if (!quiet()) fprintf(stderr, "classify%s: %d layers, dim %d, %d heads, ffn %d, attn %s, %s tokens (vocab %d), max-len %d, %d "
                        "classes, pool %s | %.2fM params | %ld training, %ld validation examples | %d thread%s%s%s\n",
                c.objective == LC_CLASSIFY_MLM ? " (masked-token pre-training)" : "", c.n_layer, c.d_model, c.n_head,
                c.d_ff, c.attn, lc_tokens_name(c.tokens), c.vocab, c.max_len, c.n_classes,
                lc_pool_name(c.pool), (double)lc_classifier_num_params(r.m) / 1e6, r.train.n, r.valid.n, lc_threads_default(),
                lc_plural(lc_threads_default()), lc_precision_note(c.precision), a->resume ? " | resumed" : "");
        if (lc_dist_size() > 1 && !quiet())
            fprintf(stderr, "data parallel: %d processes, gradient allreduce (batch %d each, %d in all)\n",
                    lc_dist_size(), a->o.batch, a->o.batch * lc_dist_size());
        rc = train_loop(&r);
    }
    lc_train_log_close(&r.log);
    lc_classifier_free(r.m);
    lc_word_vocab_free(r.vocab);
    free(r.valid_labels);
    lc_labelled_free(&r.train), lc_labelled_free(&r.valid);
    return rc;
}

int lc_cmd_train_classify(int argc, char **argv) {
    lc_dist_init(&argc, &argv); /* several processes under mpirun, else one */
    cargs a;
    memset(&a, 0, sizeof a);
    lc_run_flags_default(&a.o);
    a.preset = "small", a.min_count = 1;
    lc_train_options *o = &a.o;
    lc_opt base[] = {
        LC_DATA_FLAGS(a, "classify", "training examples: a labelled TSV file, plain or gzip (required)",
                      "validation examples, same format (required)", "examples"),
        {"--label-col", OPT_STR, &a.label_col, 0, 0, "label column: name or number from 1 (default Target, else the first)", 0},
        {"--text-col", OPT_STR, &a.text_col, 0, 0, "text column: name or number from 1 (default Source, else the last)", 0},
        {"--min-count", OPT_LONG, &a.min_count, 1, 1e12, "words: keep words seen at least N times (default 1)", 0},
        {"--max-words", OPT_INT, &a.max_words, 0, 1 << 24, "words: keep at most N words (default 0: all)", 0},
        {"--init", OPT_STR, &a.init, 0, 0, "start the encoder from this language model (vanilla, masked or causal) or classifier checkpoint", 0},
        {"--out", OPT_STR, &a.out, 0, 0, "the best checkpoint by validation accuracy (required; OUT.last: the last state)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 1 << 16, "examples per step (default 16)", 0},
        LC_RUN_FLAGS(a, o),
    };
    const lc_opt preset = {"--preset", OPT_STR, &a.preset, 0, 0, "model preset: tiny, small (default), base", 0, NULL};
    lc_opt opts[96];
    const int n = lc_run_flags_table(opts, base, (int)(sizeof base / sizeof *base), o, &preset, &a.ff, fields,
                                     (int)(sizeof fields / sizeof *fields), "does not apply to a classifier (its encoder "
                                     "is vanilla and bidirectional; --max-len sets the length)");
    int rc = lc_run_flags_parse("train --task classify", "--data TRAIN.tsv[.gz] --valid VALID.tsv[.gz] --out CKPT [options]",
                                opts, n, argc, argv, &a.data, "a labelled TSV file", o);
    if (rc < 0) rc = train_run(&a, opts, n);
    lc_cli_all_ready_end(rc);
    return rc;
}
