/* `longctx train --task classify` and `longctx eval --task classify` (docs/lra.md): train a sequence
 * classifier on a labelled TSV file with periodic validation accuracy, keeping the best checkpoint; score a
 * checkpoint on a labelled file. Batches are bucketed by length (each epoch's shuffled examples sorted by
 * length in chunks of 64 batches) and packed, so cost follows the real lengths. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/model_flags.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"

int lc_cli_task_is(int argc, char **argv, const char *name) {
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--task") == 0 && i + 1 < argc && strcmp(argv[i + 1], name) == 0) return 1;
        if (strncmp(argv[i], "--task=", 7) == 0 && strcmp(argv[i] + 7, name) == 0) return 1;
    }
    return 0;
}

static int cmp_long(const void *a, const void *b) {
    const long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Tokenizes examples idx[0 .. n) into buf (rows of max_len) and runs them as one batch. */
static lc_status run_batch(lc_classifier *m, const lc_word_vocab *v, const lc_cli_texts *t, const long *idx, int n,
                           int *buf, int *len, const int **ptr, const int *labels, int train, const lc_train_options *o,
                           double *loss) {
    const lc_classify_config *c = lc_classifier_config(m);
    int lab[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) {
        ptr[i] = buf + (size_t)i * c->max_len;
        const long all = lc_tokenize(c->tokens, v, t->text[idx[i]], t->len[idx[i]], c->max_len, buf + (size_t)i * c->max_len);
        len[i] = (int)(all < c->max_len ? all : c->max_len);
        lab[i] = labels ? labels[idx[i]] : 0;
    }
    const lc_classify_batch b = {n, ptr, len};
    if (train) return lc_classifier_step(m, o, &b, lab, loss);
    return lc_classifier_forward(m, &b, NULL, 0, NULL, NULL);
}

lc_status lc_cli_classify(lc_classifier *m, const lc_word_vocab *v, const lc_cli_texts *t, int batch, int *pred,
                          const int *labels, long *correct) {
    const lc_classify_config *c = lc_classifier_config(m);
    long *keys = malloc(sizeof(long) * (size_t)(t->n > 0 ? t->n : 1)), *idx = malloc(sizeof(long) * (size_t)batch);
    int *buf = malloc(sizeof(int) * (size_t)batch * (size_t)c->max_len), *len = malloc(sizeof(int) * (size_t)batch);
    const int **ptr = malloc(sizeof(*ptr) * (size_t)batch);
    lc_status st = keys && idx && buf && len && ptr ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory classifying");
    for (long i = 0; i < t->n && !st; i++) keys[i] = ((long)(t->len[i] < (1u << 30) ? t->len[i] : (1u << 30)) << 32) | i;
    if (!st) qsort(keys, (size_t)t->n, sizeof *keys, cmp_long);
    long right = 0;
    for (long s = 0; s < t->n && !st; s += batch) {
        const int n = (int)(t->n - s < batch ? t->n - s : batch);
        for (int i = 0; i < n; i++) idx[i] = keys[s + i] & 0xffffffffL;
        if ((st = run_batch(m, v, t, idx, n, buf, len, ptr, NULL, 0, NULL, NULL))) break;
        const float *z = lc_classifier_logits(m);
        for (int i = 0; i < n; i++) {
            int best = 0;
            for (int k = 1; k < c->n_classes; k++)
                if (z[(size_t)i * c->n_classes + k] > z[(size_t)i * c->n_classes + best]) best = k;
            pred[idx[i]] = best;
            if (labels) right += labels[idx[i]] == best;
        }
    }
    if (correct) *correct = right;
    free(keys), free(idx), free(buf), free(len), free(ptr);
    return st;
}

/* ---------------------------------------------------------------- train --task classify */

typedef struct {
    const char *task, *data, *valid, *tokens, *label_col, *text_col, *pool, *init, *out;
    int max_len, hidden, threads, json, max_words;
    long min_count;
    lc_train_options o;
    lc_model_flags mf;
} cargs;

/* The shape flags that do not describe a classifier's encoder. */
static int refuse_flags(lc_opt *opts, int n) {
    const char *no[] = {"--seg-len", "--model", "--mem-len", "--clamp-len", "--same-length", "--shared-uv", "--untied",
                        "--share-qk", "--reversible", "--ffn-chunk", "--extra-tokens", "--objective"};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (lc_opt_get(opts, n, no[i])->seen) {
            lc_cli_error("train --task classify: %s does not apply to a classifier (its encoder is vanilla and "
                         "bidirectional; --max-len sets the length)", no[i]);
            return LC_EXIT_USAGE;
        }
    return -1;
}

static lc_cli_texts texts_of(const lc_labelled_data *d) { return (lc_cli_texts){d->n, d->text, d->text_len}; }

/* The training order: batch k of an epoch; each epoch's shuffle (seeded) sorted by length in chunks of 64
 * batches, the batches of a chunk in shuffled order. */
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
        for (long i = 0; i < n; i++) keys[i] = ((long)(d->text_len[order[s + i]] < (1u << 30) ? d->text_len[order[s + i]] : (1u << 30)) << 32) | order[s + i];
        qsort(keys, (size_t)n, sizeof *keys, cmp_long);
        for (long i = 0; i < n; i++) order[s + i] = keys[i] & 0xffffffffL;
    }
}

typedef struct {
    cargs *a;
    lc_classifier *m;
    lc_labelled_data train, valid;
    int *valid_labels, *pred;
    lc_word_vocab *vocab;
    float best;
    long best_step;
} crun;

static lc_status validate(crun *r, double *acc) {
    long right = 0;
    const lc_cli_texts t = texts_of(&r->valid);
    lc_status st = lc_cli_classify(r->m, r->vocab, &t, r->a->o.batch, r->pred, r->valid_labels, &right);
    *acc = (double)right / (double)r->valid.n;
    return st;
}

static int train_loop(crun *r) {
    cargs *a = r->a;
    const lc_train_options *o = &a->o;
    const int B = a->o.batch, L = lc_classifier_config(r->m)->max_len;
    long *order = malloc(sizeof(long) * (size_t)r->train.n), *keys = malloc(sizeof(long) * 64 * (size_t)B);
    int *buf = malloc(sizeof(int) * (size_t)B * (size_t)L), *len = malloc(sizeof(int) * (size_t)B);
    const int **ptr = malloc(sizeof(*ptr) * (size_t)B);
    if (!order || !keys || !buf || !len || !ptr) {
        free(order), free(keys), free(buf), free(len), free(ptr);
        return lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory for the training batches"));
    }
    const lc_cli_texts t = texts_of(&r->train);
    lc_progress_printer pp;
    lc_progress_init(&pp, o->steps);
    const double t0 = lc_now_seconds();
    long rows = 0, pos = r->train.n, epoch = 0;
    lc_status st = LC_OK;
    lc_classify_run run;
    lc_classify_run_default(&run);
    run.opts = *o;
    for (long step = 0; step < o->steps && !st && !lc_cli_stop_signal(); step++) {
        if (pos + B > r->train.n) epoch_order(order, keys, &r->train, B, lc_seed_mix(o->seed, (uint64_t)epoch++)), pos = 0;
        const int n = (int)(r->train.n < B ? r->train.n : B);
        double loss = 0;
        if ((st = run_batch(r->m, r->vocab, &t, order + pos, n, buf, len, ptr, r->train.label, 1, o, &loss))) break;
        for (int i = 0; i < n; i++) rows += len[i] + 1;
        pos += n;
        const double el = lc_now_seconds() - t0;
        lc_progress pr = {step + 1, o->steps, 0, loss, lc_learning_rate(o, step), rows / (el > 0 ? el : 1e-9), el, NAN, NAN};
        const int check = (o->eval_every > 0 && (step + 1) % o->eval_every == 0) || step + 1 == o->steps;
        if (check) {
            double acc;
            if ((st = validate(r, &acc))) break;
            pr.valid_bpc = pr.loss / log(2.0), pr.valid_accuracy = acc;
            if (acc > r->best) {
                r->best = (float)acc, r->best_step = step + 1;
                run.valid_accuracy = (float)acc, run.examples = (step + 1) * (long)n;
                if (a->out && (st = lc_classifier_save(r->m, &run, &r->train.labels, r->vocab, a->out))) break;
            }
            fprintf(stderr, "%sstep %ld: valid accuracy %.4f (best %.4f at step %ld)\n", pp.tty ? "\r" : "", step + 1,
                    acc, (double)r->best, r->best_step);
            pr.valid_bpc = NAN;
        }
        lc_progress_print(&pr, &pp);
    }
    lc_progress_done(&pp);
    free(order), free(keys), free(buf), free(len), free(ptr);
    if (st) return lc_cli_fail(st);
    const int sig = lc_cli_stop_signal();
    if (sig) {
        fprintf(stderr, "longctx: interrupted by %s at step %ld: the best checkpoint so far (step %ld) is %s\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", lc_classifier_steps_done(r->m), r->best_step,
                a->out ? a->out : "not saved (no --out)");
        return 128 + sig;
    }
    const double el = lc_now_seconds() - t0;
    printf("best valid accuracy %.4f at step %ld of %ld over %ld examples (%.0f tokens/s)\n", (double)r->best,
           r->best_step, o->steps, r->valid.n, rows / (el > 0 ? el : 1e-9));
    if (a->out) printf("saved %s (the best checkpoint)\n", a->out);
    if (a->json)
        printf("{\"valid_accuracy\":%s,\"best_step\":%ld,\"steps\":%ld,\"examples\":%ld,\"seconds\":%.1f,"
               "\"tokens_per_s\":%.1f,\"params\":%zu}\n", lc_json_number(r->best), r->best_step, o->steps,
               o->steps * (long)(r->train.n < a->o.batch ? r->train.n : a->o.batch), el, rows / (el > 0 ? el : 1e-9),
               lc_classifier_num_params(r->m));
    return LC_EXIT_OK;
}

/* The classifier's configuration from the flags and the training data. */
static int build_config(cargs *a, lc_opt *opts, int n, crun *r, lc_classify_config *c) {
    lc_config shape;
    int rc = lc_model_flags_apply(&a->mf, opts, n, "train", &shape);
    if (rc >= 0) return rc;
    lc_classify_config_default(c);
    c->n_layer = shape.n_layer, c->d_model = shape.d_model, c->n_head = shape.n_head, c->d_ff = shape.d_ff;
    c->norm = shape.norm, c->activation = shape.activation, c->dropout = shape.dropout;
    c->attn_share = shape.attn_share;
    memcpy(c->attn, shape.attn, sizeof c->attn);
    lc_status st;
    if ((st = lc_tokens_parse(a->tokens, &c->tokens)) || (st = lc_pool_parse(a->pool, &c->pool))) return lc_cli_fail(st);
    c->max_len = lc_opt_get(opts, n, "--max-len")->seen ? a->max_len
                 : c->tokens == LC_TOKENS_WORDS ? LC_LRA_LISTOPS_MAX_LEN : LC_LRA_TEXT_MAX_LEN;
    if ((st = lc_check_max_len(c->max_len, NULL))) return lc_cli_fail(st);
    c->n_classes = r->train.labels.n, c->d_hidden = a->hidden;
    if (c->n_classes < 2) {
        lc_cli_error("train: --data %s has %d label%s: a classifier needs at least 2", a->data, c->n_classes,
                     c->n_classes == 1 ? "" : "s");
        return LC_EXIT_RUNTIME;
    }
    if (c->tokens == LC_TOKENS_WORDS) {
        if ((st = lc_word_vocab_build(r->train.text, r->train.text_len, r->train.n, a->min_count, a->max_words, &r->vocab)))
            return lc_cli_fail(st);
        c->vocab = lc_word_vocab_size(r->vocab);
    }
    return -1;
}

static int train_run(cargs *a, lc_opt *opts, int n) {
    if (strcmp(a->task, "classify") != 0) {
        lc_cli_error("train: --task must be classify, got '%s'", a->task);
        return LC_EXIT_USAGE;
    }
    int rc = refuse_flags(opts, n);
    if (rc >= 0) return rc;
    if (!a->valid) { lc_cli_error("train --task classify: --valid is required (a labelled TSV file)"); return LC_EXIT_USAGE; }
    if (!a->out) { lc_cli_error("train --task classify: --out is required (the best checkpoint is written there)"); return LC_EXIT_USAGE; }
    lc_status st = lc_checkpoint_check_path(a->out);
    if (st) return lc_cli_fail(st);
    lc_set_threads(a->threads);
    crun r;
    memset(&r, 0, sizeof r);
    r.a = a, r.best = -1;
    lc_classify_config c;
    if ((st = lc_labelled_read(a->data, a->label_col, a->text_col, &r.train))) return lc_cli_fail(st);
    if ((st = lc_labelled_read(a->valid, a->label_col, a->text_col, &r.valid))) rc = lc_cli_fail(st);
    if (rc < 0) rc = build_config(a, opts, n, &r, &c);
    long unseen = 0;
    if (rc < 0) {
        r.valid_labels = malloc(sizeof(int) * (size_t)r.valid.n), r.pred = malloc(sizeof(int) * (size_t)r.valid.n);
        if (!r.valid_labels || !r.pred) rc = lc_cli_fail(lc_fail(LC_ERR_NOMEM, "out of memory"));
        else if ((st = lc_labelled_map(&r.valid, &r.train.labels, r.valid_labels, &unseen))) rc = lc_cli_fail(st);
    }
    if (rc < 0 && unseen)
        fprintf(stderr, "longctx: warning: --valid %s: %ld examples have a label --data never has: counted wrong\n",
                a->valid, unseen);
    if (rc < 0 && (st = lc_classifier_create(&c, a->o.batch, 0, a->o.seed, &r.m))) rc = lc_cli_fail(st);
    if (rc < 0 && a->init && (st = lc_classifier_init_from(r.m, a->init))) rc = lc_cli_fail(st);
    if (rc < 0) {
        fprintf(stderr, "classify: %d layers, dim %d, %d heads, ffn %d, attn %s, %s tokens (vocab %d), max-len %d, %d "
                        "classes, pool %s | %.2fM params | %ld training, %ld validation examples | %d threads\n",
                c.n_layer, c.d_model, c.n_head, c.d_ff, c.attn, lc_tokens_name(c.tokens), c.vocab, c.max_len, c.n_classes,
                lc_pool_name(c.pool), (double)lc_classifier_num_params(r.m) / 1e6, r.train.n, r.valid.n, lc_get_threads());
        lc_cli_catch_stop_signals();
        rc = train_loop(&r);
    }
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
        {"--task", OPT_STR, &a.task, 0, 0, "classify", 0},
        {"--data", OPT_STR, &a.data, 0, 0, "training examples: a labelled TSV file, plain or gzip (required)", 0},
        {"--valid", OPT_STR, &a.valid, 0, 0, "validation examples, same format (required)", 0},
        {"--tokens", OPT_STR, &a.tokens, 0, 0, "bytes (default) or words (vocabulary from --data)", 0},
        {"--max-len", OPT_INT, &a.max_len, -1e9, 1e9, "tokens read per example (default 4000 bytes, 2000 words)", 0},
        {"--label-col", OPT_STR, &a.label_col, 0, 0, "label column: name or number from 1 (default Target, else the first)", 0},
        {"--text-col", OPT_STR, &a.text_col, 0, 0, "text column: name or number from 1 (default Source, else the last)", 0},
        {"--pool", OPT_STR, &a.pool, 0, 0, "cls (default: the [CLS] state) or mean (over every position)", 0},
        {"--hidden", OPT_INT, &a.hidden, 0, 65536, "the head's hidden width (default: --dim)", 0},
        {"--min-count", OPT_LONG, &a.min_count, 1, 1e12, "words: keep words seen at least N times (default 1)", 0},
        {"--max-words", OPT_INT, &a.max_words, 0, 1 << 24, "words: keep at most N words (default 0: all)", 0},
        {"--init", OPT_STR, &a.init, 0, 0, "start the encoder from this masked-LM checkpoint", 0},
        {"--out", OPT_STR, &a.out, 0, 0, "the best checkpoint by validation accuracy (required)", 0},
        {"--steps", OPT_LONG, &o->steps, 1, 1e12, "optimizer steps (default 1000)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 1 << 16, "examples per step (default 16)", 0},
        {"--lr", OPT_FLOAT, &o->lr, 1e-9, 10, "peak learning rate (default 0.001)", 0},
        {"--min-lr", OPT_FLOAT, &o->min_lr, 0, 10, "final learning rate of the cosine decay (default 0.0001)", 0},
        {"--warmup", OPT_LONG, &o->warmup, 0, 1e12, "linear warm-up steps (default 100)", 0},
        {"--weight-decay", OPT_FLOAT, &o->weight_decay, 0, 10, "AdamW weight decay on matrices (default 0.1)", 0},
        {"--clip", OPT_FLOAT, &o->clip, 0, 1e9, "gradient clipping by global norm (default 1; 0: off)", 0},
        {"--eval-every", OPT_LONG, &o->eval_every, 0, 1e12, "steps between validation passes (default 200; 0: end only)", 0},
        {"--seed", OPT_U64, &o->seed, 0, 0, "random seed: initialisation, order, dropout (default 1337)", 0},
        {"--threads", OPT_INT, &a.threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &a.json, 0, 0, "print a JSON summary as the last stdout line", 0},
    };
    lc_opt opts[64];
    int n = (int)(sizeof base / sizeof *base);
    memcpy(opts, base, sizeof base);
    n = lc_model_flags_add(&a.mf, opts, n);
    int rc = lc_parse_opts("train", "--task classify --data TRAIN.tsv[.gz] --valid VALID.tsv[.gz] --out CKPT [options]",
                           opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!a.data) { lc_cli_error("train --task classify: --data is required (a labelled TSV file)"); return LC_EXIT_USAGE; }
    return train_run(&a, opts, n);
}

/* ---------------------------------------------------------------- eval --task classify */

int lc_cmd_eval_classify(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *task = NULL, *label_col = NULL, *text_col = NULL;
    int batch = 16, threads = 0, json = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "classifier checkpoint (required)", 0},
        {"--task", OPT_STR, &task, 0, 0, "classify", 0},
        {"--data", OPT_STR, &data, 0, 0, "labelled TSV file, plain or gzip (required)", 0},
        {"--label-col", OPT_STR, &label_col, 0, 0, "label column (default Target, else the first)", 0},
        {"--text-col", OPT_STR, &text_col, 0, 0, "text column (default Source, else the last)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "examples per forward pass (default 16)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print {\"accuracy\":..,\"examples\":..} as the last stdout line", 0},
    };
    const int n = (int)(sizeof opts / sizeof *opts);
    int rc = lc_parse_opts("eval", "--ckpt CKPT --task classify --data FILE [options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt || !data) { lc_cli_error("eval --task classify: --ckpt and --data are required"); return LC_EXIT_USAGE; }
    lc_set_threads(threads);
    lc_classifier *m = NULL;
    lc_label_set labels = {0, NULL};
    lc_word_vocab *v = NULL;
    lc_labelled_data d;
    memset(&d, 0, sizeof d);
    lc_status st = lc_classifier_load(ckpt, batch, 0, &m, NULL, &labels, &v);
    if (!st) st = lc_labelled_read(data, label_col, text_col, &d);
    int *ids = st ? NULL : malloc(sizeof(int) * (size_t)d.n), *pred = st ? NULL : malloc(sizeof(int) * (size_t)d.n);
    long unseen = 0, right = 0;
    if (!st && (!ids || !pred)) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st) st = lc_labelled_map(&d, &labels, ids, &unseen);
    const lc_cli_texts t = texts_of(&d);
    if (!st) st = lc_cli_classify(m, v, &t, batch, pred, ids, &right);
    if (st) {
        rc = lc_cli_fail(st);
    } else {
        if (unseen)
            fprintf(stderr, "longctx: warning: --data %s: %ld examples have a label the checkpoint was not trained on: "
                            "counted wrong\n", data, unseen);
        printf("accuracy %.4f over %ld examples of %s (%ld correct)\n", (double)right / (double)d.n, d.n, data, right);
        if (json) printf("{\"accuracy\":%s,\"examples\":%ld}\n", lc_json_number((double)right / (double)d.n), d.n);
        rc = LC_EXIT_OK;
    }
    free(ids), free(pred);
    lc_labelled_free(&d);
    lc_label_set_free(&labels);
    lc_word_vocab_free(v);
    lc_classifier_free(m);
    return rc;
}
