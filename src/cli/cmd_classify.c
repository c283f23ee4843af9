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
#include "cli/model_flags.h"
#include "cli/optim_flags.h"
#include "cli/same_settings.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"

typedef struct {
    const char *task, *data, *valid, *tokens, *label_col, *text_col, *pool, *init, *out, *resume, *log;
    int max_len, hidden, threads, json, max_words;
    long min_count, save_every, max_examples;
    float save_every_min;
    lc_train_options o;
    lc_model_flags mf;
} cargs;

/* The shape flags that do not describe a classifier's encoder: left out of --help, refused by the parser. */
static void refuse_lm_flags(lc_opt *opts, int n) {
    const char *no[] = {"--seg-len", "--model", "--mem-len", "--clamp-len", "--same-length", "--shared-uv", "--untied",
                        "--share-qk", "--reversible", "--ffn-chunk", "--extra-tokens"};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        lc_opt_refuse(opts, n, no[i], "does not apply to a classifier (its encoder is vanilla and bidirectional; "
                                      "--max-len sets the length)");
}

/* With --resume, every flag the checkpoint fixes is refused. */
static int refuse_flags(const cargs *a, lc_opt *opts, int n) {
    const char *fixed[] = {"--tokens", "--max-len", "--pool", "--hidden", "--min-count", "--max-words", "--init",
                           "--batch", "--lr", "--min-lr", "--warmup", "--weight-decay", "--clip", "--seed"};
    const char *which = NULL;
    for (size_t i = 0; a->resume && !which && i < sizeof fixed / sizeof *fixed; i++)
        if (lc_opt_get(opts, n, fixed[i])->seen) which = fixed[i];
    if (a->resume && (which || lc_model_flags_any(opts, n, &which))) {
        lc_cli_error("train --task classify: %s cannot be combined with --resume (the checkpoint fixes it)", which);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* The training order of one epoch: a seeded shuffle, then sorted by length in chunks of 64 batches (the
 * batches of a chunk from the shortest examples to the longest). */
static void epoch_order(long *order, long *keys, const lc_labelled_data *d, int batch, uint64_t seed) {
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (long i = 0; i < d->n; i++) order[i] = i;
    for (long i = d->n - 1; i > 0; i--) {
        const long j = (long)(lc_rng_uniform(&r) * (double)(i + 1)) % (i + 1), x = order[i];
        order[i] = order[j], order[j] = x;
    }
    const long chunk = 64L * batch;
    for (long s = 0; s < d->n; s += chunk) {
        const long n = d->n - s < chunk ? d->n - s : chunk;
        lc_cli_sort_by_length(keys, order + s, n, d->text_len);
        memcpy(order + s, keys, sizeof(long) * (size_t)n);
    }
}

typedef struct {
    cargs *a;
    double valid_s;      /* time spent in validation passes (left out of tokens/s) */
    lc_train_log log;
    lc_classifier *m;
    lc_labelled_data train, valid;
    int *valid_labels, *pred;
    lc_word_vocab *vocab;
    lc_classify_run run; /* the record saved with each checkpoint: options, best so far */
    char last[4200];     /* OUT.last: the last state */
} crun;

/* Masked-token accuracy over the validation texts (batches in order of length, masks from a fixed seed, so
 * every pass masks the same tokens). */
static lc_status validate_mlm(crun *r, double *acc) {
    const lc_classify_config *c = lc_classifier_config(r->m);
    const lc_cli_texts t = lc_cli_texts_of(&r->valid);
    const int B = r->a->o.batch;
    long *keys = malloc(sizeof(long) * (size_t)t.n);
    int *buf = malloc(sizeof(int) * (size_t)B * (size_t)c->max_len), *len = malloc(sizeof(int) * (size_t)B);
    const int **ptr = malloc(sizeof(*ptr) * (size_t)B);
    lc_status st = keys && buf && len && ptr ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory validating");
    if (!st) lc_cli_sort_by_length(keys, NULL, t.n, t.len);
    long masked = 0, right = 0;
    for (long s = 0; s < t.n && !st; s += B) {
        const int n = (int)(t.n - s < B ? t.n - s : B);
        for (int i = 0; i < n; i++) {
            const long k = keys[s + i];
            ptr[i] = buf + (size_t)i * c->max_len;
            const long all = lc_tokenize(c->tokens, r->vocab, t.text[k], t.len[k], c->max_len, buf + (size_t)i * c->max_len);
            len[i] = (int)(all < c->max_len ? all : c->max_len);
        }
        const lc_classify_batch b = {n, ptr, len};
        long nm = 0, ok = 0;
        st = lc_classifier_mlm_forward(r->m, &b, lc_seed_mix(0x76616c6964ULL, (uint64_t)s), 0, NULL, &nm, &ok);
        masked += nm, right += ok;
    }
    *acc = masked ? (double)right / (double)masked : 0;
    free(keys), free(buf), free(len), free(ptr);
    return st;
}

static lc_status validate(crun *r, double *acc) {
    const double t0 = lc_now_seconds();
    long right = 0;
    const lc_cli_texts t = lc_cli_texts_of(&r->valid);
    lc_status st;
    if (lc_classifier_config(r->m)->objective == LC_CLASSIFY_MLM) st = validate_mlm(r, acc);
    else {
        st = lc_cli_classify(r->m, r->vocab, &t, r->a->o.batch, r->pred, r->valid_labels, &right, NULL);
        *acc = (double)right / (double)r->valid.n;
    }
    r->valid_s += lc_now_seconds() - t0;
    return st;
}

/* The last state into OUT.last (valid_accuracy: acc, or -1 when not measured at this step). */
static lc_status save_last(crun *r, double acc) {
    lc_classify_run run = r->run;
    run.valid_accuracy = (float)acc, run.examples = lc_classifier_steps_done(r->m) * (long)r->a->o.batch;
    return lc_classifier_save(r->m, &run, &r->train.labels, r->vocab, r->last);
}

/* A validation pass after `step`; a new best is saved to --out. */
static lc_status check_point(crun *r, long step, double *acc, const lc_progress_printer *pp) {
    lc_status st = validate(r, acc);
    if (st) return st;
    if (*acc > r->run.best_accuracy) {
        r->run.best_accuracy = (float)*acc, r->run.best_step = step;
        lc_classify_run best = r->run;
        best.valid_accuracy = (float)*acc, best.examples = step * (long)r->a->o.batch;
        if ((st = lc_classifier_save(r->m, &best, &r->train.labels, r->vocab, r->a->out))) return st;
    }
    fprintf(stderr, "%sstep %ld: valid %saccuracy %.4f (best %.4f at step %ld)\n", pp->tty ? "\r" : "", step,
            lc_classifier_config(r->m)->objective == LC_CLASSIFY_MLM ? "masked-token " : "", *acc,
            (double)r->run.best_accuracy, r->run.best_step);
    return LC_OK;
}

static int finish(crun *r, long first, double t0, long rows) {
    const cargs *a = r->a;
    const long done = lc_classifier_steps_done(r->m);
    const int sig = lc_cli_stop_signal();
    if (sig) {
        fprintf(stderr, "longctx: interrupted by %s at step %ld: the best checkpoint so far (step %ld) is %s, the last "
                        "state %s (continue with --resume %s)\n", lc_cli_signal_name(sig), done, r->run.best_step,
                a->out, r->last, r->last);
        return 128 + sig;
    }
    const double el = lc_now_seconds() - t0, train_s = el - r->valid_s, tok_s = rows / (train_s > 0 ? train_s : 1e-9);
    printf("best valid accuracy %.4f at step %ld of %ld over %ld examples (%.0f tokens/s)\n", (double)r->run.best_accuracy,
           r->run.best_step, a->o.steps, r->valid.n, tok_s);
    printf("saved %s (the best checkpoint) and %s (the last state)\n", a->out, r->last);
    if (a->json)
        printf("{\"valid_accuracy\":%s,\"best_step\":%ld,\"steps\":%ld,\"run_steps\":%ld,\"examples\":%ld,"
               "\"seconds\":%.3f,\"valid_seconds\":%.3f,\"tokens_per_s\":%.1f,\"params\":%zu}\n",
               lc_json_number(r->run.best_accuracy), r->run.best_step, done, done - first,
               done * (long)(r->train.n < a->o.batch ? r->train.n : a->o.batch), el, r->valid_s, tok_s,
               lc_classifier_num_params(r->m));
    return LC_EXIT_OK;
}

static int train_loop(crun *r) {
    cargs *a = r->a;
    const lc_train_options *o = &a->o;
    const int B = a->o.batch, L = lc_classifier_config(r->m)->max_len, n = (int)(r->train.n < B ? r->train.n : B);
    long *order = malloc(sizeof(long) * (size_t)r->train.n), *keys = malloc(sizeof(long) * 64 * (size_t)B);
    int *buf = malloc(sizeof(int) * (size_t)B * (size_t)L), *len = malloc(sizeof(int) * (size_t)B);
    const int **ptr = malloc(sizeof(*ptr) * (size_t)B);
    if (!order || !keys || !buf || !len || !ptr) {
        free(order), free(keys), free(buf), free(len), free(ptr);
        return lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory for the training batches"));
    }
    const lc_cli_texts t = lc_cli_texts_of(&r->train);
    const long first = lc_classifier_steps_done(r->m), per_epoch = r->train.n / n;
    const long stop = o->stop_after > 0 && first + o->stop_after < o->steps ? first + o->stop_after : o->steps;
    /* where step `first` is in the epochs: a resumed run reads the batches the uninterrupted one would */
    long epoch = first / per_epoch, pos = r->train.n;
    if (first % per_epoch) {
        epoch_order(order, keys, &r->train, B, lc_seed_mix(o->seed, (uint64_t)epoch++));
        pos = first % per_epoch * n;
    }
    lc_progress_printer pp;
    lc_progress_init(&pp, o->steps);
    pp.bits = 0; /* a classification loss (cross-entropy over labels), not bits per byte */
    const double t0 = lc_now_seconds();
    double last_save = t0;
    long rows = 0;
    lc_status st = LC_OK;
    for (long step = first; step < stop && !st && !lc_cli_stop_signal(); step++) {
        if (pos + B > r->train.n) epoch_order(order, keys, &r->train, B, lc_seed_mix(o->seed, (uint64_t)epoch++)), pos = 0;
        double loss = 0, acc = NAN;
        if ((st = lc_cli_classify_batch(r->m, r->vocab, &t, order + pos, n, buf, len, ptr, r->train.label, 1, o, &loss)))
            break;
        for (int i = 0; i < n; i++) rows += len[i] + 1;
        pos += n;
        const double el = lc_now_seconds() - t0, train_s = el - r->valid_s; /* earlier validations left out */
        lc_progress pr = {step + 1, o->steps, first, loss, lc_learning_rate(o, step), rows / (train_s > 0 ? train_s : 1e-9),
                          el, NAN, NAN};
        char extra[96] = "";
        if ((o->eval_every > 0 && (step + 1) % o->eval_every == 0) || step + 1 == o->steps) {
            const double v0 = r->valid_s;
            if ((st = check_point(r, step + 1, &acc, &pp))) break;
            pr.valid_accuracy = acc;
            snprintf(extra, sizeof extra, ",\"valid_accuracy\":%s,\"valid_seconds\":%.6f", lc_json_g(acc), r->valid_s - v0);
        }
        lc_progress_print(&pr, &pp);
        lc_train_log_step(&r->log, &pr, extra);
        if (step + 1 < stop && !lc_cli_stop_signal() && lc_cli_save_due(a->save_every, a->save_every_min, step + 1, last_save)) {
            st = save_last(r, isnan(acc) ? -1 : acc); /* -1: no validation at this step */
            last_save = lc_now_seconds();
        }
    }
    lc_progress_done(&pp);
    free(order), free(keys), free(buf), free(len), free(ptr);
    if (!st) st = save_last(r, lc_classifier_steps_done(r->m) == r->run.best_step ? r->run.best_accuracy : -1);
    return st ? lc_cli_fail(st) : finish(r, first, t0, rows);
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

/* The classifier's configuration from the flags and the training data. */
static int build_config(cargs *a, lc_opt *opts, int n, crun *r, lc_classify_config *c) {
    lc_config shape;
    int rc = lc_model_flags_apply(&a->mf, opts, n, "train", &shape);
    if (rc >= 0) return rc;
    lc_classify_config_default(c);
    c->n_layer = shape.n_layer, c->d_model = shape.d_model, c->n_head = shape.n_head, c->d_ff = shape.d_ff;
    c->norm = shape.norm, c->activation = shape.activation, c->dropout = shape.dropout;
    c->attn_share = shape.attn_share, c->precision = shape.precision;
    memcpy(c->attn, shape.attn, sizeof c->attn);
    lc_status st;
    if ((st = lc_tokens_parse(a->tokens, &c->tokens)) || (st = lc_pool_parse(a->pool, &c->pool))) return lc_cli_fail(st);
    c->max_len = lc_opt_get(opts, n, "--max-len")->seen ? a->max_len
                 : c->tokens == LC_TOKENS_WORDS ? LC_LRA_LISTOPS_MAX_LEN : LC_LRA_TEXT_MAX_LEN;
    if ((st = lc_check_max_len(c->max_len, NULL))) return lc_cli_fail(st);
    c->n_classes = r->train.labels.n, c->d_hidden = a->hidden;
    if (a->mf.objective && strcmp(a->mf.objective, "mlm") != 0) {
        lc_cli_error("train --task classify: --objective must be mlm (masked-token pre-training) or left out, got '%s'",
                     a->mf.objective);
        return LC_EXIT_USAGE;
    }
    c->objective = a->mf.objective ? LC_CLASSIFY_MLM : LC_CLASSIFY_LABELS;
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
    const long steps = a->o.steps, eval_every = a->o.eval_every, stop_after = a->o.stop_after;
    a->o = r->run.opts; /* the schedule and the optimizer as saved; --steps, --eval-every, --stop-after may change */
    if (lc_opt_get(opts, n, "--steps")->seen) a->o.steps = steps;
    if (lc_opt_get(opts, n, "--eval-every")->seen) a->o.eval_every = eval_every;
    a->o.stop_after = stop_after;
    lc_precision prec = lc_classifier_config(r->m)->precision; /* the checkpoint's, unless --precision is given */
    int rc = lc_model_flags_precision(&a->mf, "train", &prec);
    if (rc >= 0) return rc;
    if ((st = lc_classifier_set_precision(r->m, prec))) return lc_cli_fail(st);
    if (lc_classifier_steps_done(r->m) >= a->o.steps) {
        lc_cli_error("train: %s has done %ld of its %ld steps: give a larger --steps to continue", a->resume,
                     lc_classifier_steps_done(r->m), a->o.steps);
        return LC_EXIT_USAGE;
    }
    return -1;
}

static int train_run(cargs *a, lc_opt *opts, int n) {
    if (strcmp(a->task, "classify") != 0) {
        lc_cli_error("train: --task must be classify, got '%s'", a->task);
        return LC_EXIT_USAGE;
    }
    int rc = refuse_flags(a, opts, n);
    if (rc >= 0) return rc;
    if (!a->valid) { lc_cli_error("train --task classify: --valid is required (a labelled TSV file)"); return LC_EXIT_USAGE; }
    if (!a->out) { lc_cli_error("train --task classify: --out is required (the best checkpoint is written there)"); return LC_EXIT_USAGE; }
    crun r;
    memset(&r, 0, sizeof r);
    r.a = a;
    if (snprintf(r.last, sizeof r.last, "%s.last", a->out) >= (int)sizeof r.last) {
        lc_cli_error("train: --out %s: the path is too long", a->out);
        return LC_EXIT_USAGE;
    }
    const lc_cli_path outs[] = {{"--out", a->out}, {"--out", r.last}, {"--log", a->log}},
                      ins[] = {{"--data", a->data}, {"--valid", a->valid}, {"--init", a->init}};
    if ((rc = lc_cli_check_outputs("train --task classify", outs, 3, ins, 3)) >= 0) return rc;
    lc_status st = lc_checkpoint_check_path(a->out);
    if (!st) st = lc_checkpoint_check_path(r.last);
    if (st) return lc_cli_fail(st);
    lc_set_threads(a->threads);
    lc_classify_run_default(&r.run);
    lc_classify_config c;
    const lc_tsv_limits lim = {a->max_examples, 0};
    if ((st = lc_labelled_read_limited(a->data, a->label_col, a->text_col, &lim, &r.train))) return lc_cli_fail(st);
    if ((st = lc_labelled_read_limited(a->valid, a->label_col, a->text_col, &lim, &r.valid))) rc = lc_cli_fail(st);
    if (rc < 0) rc = a->resume ? resume(&r, opts, n) : build_config(a, opts, n, &r, &c);
    long unseen = 0;
    if (rc < 0) {
        r.valid_labels = malloc(sizeof(int) * (size_t)r.valid.n), r.pred = malloc(sizeof(int) * (size_t)r.valid.n);
        if (!r.valid_labels || !r.pred) rc = lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory"));
        else if ((st = lc_labelled_map(&r.valid, &r.train.labels, r.valid_labels, &unseen))) rc = lc_cli_fail(st);
    }
    if (rc < 0 && unseen)
        fprintf(stderr, "longctx: warning: --valid %s: %ld examples have a label --data never has: counted wrong\n",
                a->valid, unseen);
    if (rc < 0 && !a->resume && (st = lc_classifier_create(&c, a->o.batch, 0, a->o.seed, &r.m))) rc = lc_cli_fail(st);
    if (rc < 0 && a->init && (st = lc_classifier_init_from_any(r.m, r.vocab, a->init))) rc = lc_cli_fail(st);
    if (rc < 0) rc = lc_train_log_open(&r.log, "train --task classify", a->log, a->resume != NULL);
    if (rc < 0) {
        c = *lc_classifier_config(r.m);
        r.run.opts = a->o, r.run.train_examples = r.train.n;
        fprintf(stderr, "classify%s: %d layers, dim %d, %d heads, ffn %d, attn %s, %s tokens (vocab %d), max-len %d, %d "
                        "classes, pool %s | %.2fM params | %ld training, %ld validation examples | %d thread%s%s%s\n",
                c.objective == LC_CLASSIFY_MLM ? " (masked-token pre-training)" : "", c.n_layer, c.d_model, c.n_head,
                c.d_ff, c.attn, lc_tokens_name(c.tokens), c.vocab, c.max_len, c.n_classes,
                lc_pool_name(c.pool), (double)lc_classifier_num_params(r.m) / 1e6, r.train.n, r.valid.n, lc_get_threads(),
                lc_plural(lc_get_threads()), lc_precision_note(c.precision), a->resume ? " | resumed" : "");
        lc_cli_catch_stop_signals();
        rc = train_loop(&r);
    }
    lc_train_log_close(&r.log);
    lc_classifier_free(r.m);
    lc_word_vocab_free(r.vocab);
    free(r.valid_labels), free(r.pred);
    lc_labelled_free(&r.train), lc_labelled_free(&r.valid);
    return rc;
}

int lc_cmd_train_classify(int argc, char **argv) {
    cargs a;
    memset(&a, 0, sizeof a);
    lc_train_options_default(&a.o);
    a.o.steps = 1000, a.o.batch = 16, a.o.lr = 1e-3f, a.o.warmup = 100, a.o.eval_every = 200;
    a.tokens = "bytes", a.pool = "cls", a.min_count = 1;
    lc_model_flags_init(&a.mf);
    lc_train_options *o = &a.o;
    lc_opt base[] = {
        {"--task", OPT_STR, &a.task, 0, 0, "classify (this command)", 0},
        {"--data", OPT_STR, &a.data, 0, 0, "training examples: a labelled TSV file, plain or gzip (required)", 0},
        {"--valid", OPT_STR, &a.valid, 0, 0, "validation examples, same format (required)", 0},
        {"--tokens", OPT_STR, &a.tokens, 0, 0, "bytes (default) or words (vocabulary from --data)", 0},
        {"--max-len", OPT_INT, &a.max_len, -1e9, 1e9, "tokens read per example (default 4000 bytes, 2000 words)", 0},
        {"--label-col", OPT_STR, &a.label_col, 0, 0, "label column: name or number from 1 (default Target, else the first)", 0},
        {"--text-col", OPT_STR, &a.text_col, 0, 0, "text column: name or number from 1 (default Source, else the last)", 0},
        {"--max-examples", OPT_LONG, &a.max_examples, 1, 1e12, "the most examples read from one TSV file (default 4194304)", 0},
        {"--pool", OPT_STR, &a.pool, 0, 0, "cls (default: the [CLS] state) or mean (over every position)", 0},
        {"--hidden", OPT_INT, &a.hidden, 0, 65536, "the head's hidden width (default: --dim)", 0},
        {"--min-count", OPT_LONG, &a.min_count, 1, 1e12, "words: keep words seen at least N times (default 1)", 0},
        {"--max-words", OPT_INT, &a.max_words, 0, 1 << 24, "words: keep at most N words (default 0: all)", 0},
        {"--init", OPT_STR, &a.init, 0, 0, "start the encoder from this masked-LM or classifier checkpoint", 0},
        {"--out", OPT_STR, &a.out, 0, 0, "the best checkpoint by validation accuracy (required; OUT.last: the last state)", 0},
        {"--resume", OPT_STR, &a.resume, 0, 0, "continue the run of this checkpoint (an OUT.last) with the same --data", 0},
        {"--steps", OPT_LONG, &o->steps, 1, 1e12, "optimizer steps of the schedule (default 1000)", 0},
        {"--stop-after", OPT_LONG, &o->stop_after, 0, 1e12, "stop this run after N steps (resume later)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 1 << 16, "examples per step (default 16)", 0},
        {"--eval-every", OPT_LONG, &o->eval_every, 0, 1e12, "steps between validation passes (default 200; 0: end only)", 0},
        {"--save-every", OPT_LONG, &a.save_every, 0, 1e12, "also save OUT.last every N steps (0: at the end only)", 0},
        {"--save-every-min", OPT_FLOAT, &a.save_every_min, 0, 1e7, "also save OUT.last every N minutes (0: off)", 0},
        {"--seed", OPT_U64, &o->seed, 0, 0, "random seed: initialisation, order, dropout (default 1337)", 0},
        {"--threads", OPT_INT, &a.threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &a.json, 0, 0, "print a JSON summary as the last stdout line", 0},
        {"--log", OPT_STR, &a.log, 0, 0, "write one JSON line per step to this file (appended to with --resume)", 0},
    };
    lc_opt opts[64];
    int n = (int)(sizeof base / sizeof *base);
    memcpy(opts, base, sizeof base);
    n = lc_optim_flags_add(o, opts, n);
    n = lc_model_flags_add(&a.mf, opts, n);
    refuse_lm_flags(opts, n);
    lc_opt_get(opts, n, "--objective")->help = "mlm: pre-train the encoder on masked tokens of --data (default: the labels)";
    int rc = lc_parse_opts("train --task classify", "--data TRAIN.tsv[.gz] --valid VALID.tsv[.gz] --out CKPT [options]",
                           opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!a.data) { lc_cli_error("train --task classify: --data is required (a labelled TSV file)"); return LC_EXIT_USAGE; }
    if ((rc = lc_optim_flags_apply("train --task classify", &a.o)) >= 0) return rc;
    if ((rc = lc_cli_refuse_processes("train --task classify")) >= 0) return rc;
    return train_run(&a, opts, n);
}
