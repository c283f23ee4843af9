/* `longctx train`: build (or resume) a model, train it on a byte corpus, report validation bpc, save.
 * Under mpirun the processes train together (docs/guides/distributed.md): process 0 alone prints and saves. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/classify_cli.h"
#include "cli/cli.h"
#include "cli/model_flags.h"
#include "cli/optim_flags.h"
#include "cli/same_settings.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "longctx/flat.h"
#include "train/checkpoint_meta.h"
#include "train/dist.h"

typedef struct {
    const char *data, *out, *resume, *splits, *loss_log, *log, *task;
    int threads, json;
    long save_every;      /* steps between saves during training (0: none) */
    float save_every_min; /* minutes between saves during training (0: none) */
    lc_train_options o;
    lc_model_flags mf;
} train_args;

static int build_opts(train_args *a, lc_opt *opts) {
    lc_train_options *o = &a->o;
    lc_opt base[] = {
        {"--data", OPT_STR, &a->data, 0, 0, "training text, read as bytes (default data/tinyshakespeare.txt, else the installed copy)", 0},
        {"--splits", OPT_STR, &a->splits, 0, 0, "auto (default), enwik8 (90/5/5) or nanogpt (90/10)", 0},
        {"--steps", OPT_LONG, &o->steps, 0, 1e12, "optimizer steps of the schedule (default 2000)", 0},
        {"--stop-after", OPT_LONG, &o->stop_after, 0, 1e12, "stop this run after N steps (resume later)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 1 << 16, "sequences (contiguous streams) per micro-batch (default 16)", 0},
        {"--grad-accum", OPT_INT, &o->grad_accum, 1, 1 << 16, "micro-batches per optimizer step (default 1)", 0},
        {"--eval-every", OPT_LONG, &o->eval_every, 0, 1e12, "steps between validation passes (default 250; 0: end only)", 0},
        {"--eval-bytes", OPT_LONG, &o->eval_bytes, 0, 1e15, "validation bytes per periodic pass (default 32768; 0: all)", 0},
        {"--seed", OPT_U64, &o->seed, 0, 0, "random seed, 0..2^64-1: initialisation, dropout (default 1337)", 0},
        {"--threads", OPT_INT, &a->threads, 0, 1024, "threads (0: all cores)", 0},
        {"--out", OPT_STR, &a->out, 0, 0, "write the trained model to this checkpoint (with --resume: default the resumed one)", 0},
        {"--resume", OPT_STR, &a->resume, 0, 0, "continue training from this checkpoint (and its recorded data)", 0},
        {"--save-every", OPT_LONG, &a->save_every, 0, 1e12, "also save the checkpoint every N steps (0: at the end only)", 0},
        {"--save-every-min", OPT_FLOAT, &a->save_every_min, 0, 1e7, "also save the checkpoint every N minutes (0: off)", 0},
        {"--json", OPT_FLAG, &a->json, 0, 0, "print a JSON summary as the last stdout line", 0},
        {"--log", OPT_STR, &a->log, 0, 0, "write one JSON line per step to this file (appended to with --resume)", 0},
        {"--loss-log", OPT_STR, &a->loss_log, 0, 0, "append each step's training loss to this file ('step loss')", 0},
        {"--task", OPT_STR, &a->task, 0, 0, "the model family: lm (default), classify, hibert or seq2seq (train --task NAME --help)", 0},
    };
    int n = (int)(sizeof base / sizeof base[0]);
    memcpy(opts, base, sizeof base);
    n = lc_optim_flags_add(o, opts, n);
    return lc_model_flags_add(&a->mf, opts, n);
}

/* Flags that describe a new model or its optimisation cannot change a resumed run. */
static int check_resume_flags(lc_opt *opts, int n) {
    const char *fixed[] = {"--batch", "--grad-accum", "--lr", "--min-lr", "--warmup", "--weight-decay",
                           "--clip", "--seed", "--splits"};
    const char *which;
    if (lc_model_flags_any(opts, n, &which)) {
        lc_cli_error("train: %s cannot be combined with --resume (the checkpoint fixes the model)", which);
        return LC_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (lc_opt_get(opts, n, fixed[i])->seen) {
            lc_cli_error("train: %s cannot be combined with --resume (the checkpoint fixes it)", fixed[i]);
            return LC_EXIT_USAGE;
        }
    return -1;
}

static int parse_splits(const char *s, lc_split_mode *mode) {
    if (!s || strcmp(s, "auto") == 0) *mode = LC_SPLIT_AUTO;
    else if (strcmp(s, "enwik8") == 0) *mode = LC_SPLIT_ENWIK8;
    else if (strcmp(s, "nanogpt") == 0) *mode = LC_SPLIT_NANOGPT;
    else return 0;
    return 1;
}

static void print_summary(const lc_model *m, const lc_train_options *o) {
    const lc_config *c = lc_model_config(m);
    char procs[96] = "";
    if (lc_dist_size() > 1)
        snprintf(procs, sizeof procs, " | %d processes (MPI): %d streams in all", lc_dist_size(),
                 o->batch * lc_dist_size());
    char xl[160] = "";
    if (c->model == LC_MODEL_XL)
        snprintf(xl, sizeof xl, "xl: mem-len %d, clamp-len %d%s%s\n", c->mem_len, c->clamp_len,
                 c->same_length ? ", same-length" : "", c->shared_uv ? ", shared u/v" : "");
    fprintf(stderr,
            "model: %s, %d layer%s, dim %d, %d head%s, ffn %d, seg-len %d, %s-LN, %s, %s | %.2fM params\n"
            "%s"
            "memory: parameters+gradients+AdamW %.1f MB, activations %.1f MB | gemm %s | %d thread%s%s\n"
            "training: %ld step%s, from step %ld to %ld, batch %d x %d, lr %.2g%s\n",
            c->model == LC_MODEL_XL ? "xl" : "vanilla", c->n_layer, lc_plural(c->n_layer), c->d_model, c->n_head,
            lc_plural(c->n_head), c->d_ff, c->seq_len, c->norm == LC_NORM_PRE ? "pre" : "post",
            c->activation == LC_ACT_GELU ? "gelu" : "relu", c->tied ? "tied" : "untied",
            (double)lc_model_num_params(m) / 1e6, xl, (double)lc_model_param_bytes(m) / 1e6,
            (double)lc_model_activation_bytes(m) / 1e6, lc_gemm_backend(), lc_threads_default(), lc_plural(lc_threads_default()),
            lc_precision_note(c->precision), o->steps - lc_model_step(m), lc_plural(o->steps - lc_model_step(m)),
            lc_model_step(m), o->steps, o->batch, c->seq_len, (double)o->lr, procs);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("longctx: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Process 0 prints; the others stay quiet unless they fail. */
static int quiet(void) { return lc_dist_rank() != 0; }

/* Process 0's progress: the bar, the --log lines, and training throughput without validation time (lc_train
 * times its validation passes and leaves them out of tokens_per_s). */
typedef struct {
    lc_progress_printer pp;
    lc_train_log log;
    double valid_s;      /* periodic validation so far */
    double tokens_per_s; /* of the latest step, validation excluded */
    long run_end;        /* the run's last step: its log line waits for the final validation */
    size_t valid_bytes;  /* what a periodic validation pass reads (--eval-bytes, at most the split) */
    lc_progress last;    /* that step, as reported */
    int mlm;
} lm_progress;

/* The validation members of a log line: bpc (and MLM accuracy), the bytes the pass read (periodic passes read
 * the split's first --eval-bytes, the final one all of it) and its seconds ("" without one). */
static void valid_fields(char *buf, size_t n, double bpc, double acc, size_t bytes, double seconds, int mlm) {
    if (isnan(bpc)) { buf[0] = 0; return; }
    snprintf(buf, n, ",\"valid_bpc\":%s%s%s,\"valid_bytes\":%zu,\"valid_seconds\":%.6f", lc_json_g(bpc),
             mlm ? ",\"valid_masked_accuracy\":" : "", mlm ? lc_json_g(acc) : "", bytes, seconds);
}

static void lm_progress_print(const lc_progress *p, void *user) {
    lm_progress *lp = user;
    lp->valid_s = p->valid_total_s;
    lp->tokens_per_s = p->tokens_per_s; /* the library leaves validation time out */
    lc_progress_print(p, &lp->pp);
    if (p->step == lp->run_end) { lp->last = *p; return; } /* written by finish, with the final validation */
    char extra[160];
    valid_fields(extra, sizeof extra, p->valid_bpc, p->valid_accuracy, lp->valid_bytes, p->valid_s, lp->mlm);
    lc_train_log_step(&lp->log, p, extra);
}

/* What the training hook needs: where to save, when it last did, the loss log, the last progress. */
typedef struct {
    train_args *a;
    const char *out;
    double last_save_s;
    FILE *loss_log;
    lc_progress last;
    int stopped_by; /* the signal that stopped the run, in any process (0: none) */
} saver;

/* Save now; a failure during training is a warning (the run goes on, the next save may work). */
static void periodic_save(saver *s, const lc_model *m) {
    lc_status st = lc_checkpoint_save_dist(m, &s->a->o, s->out);
    s->last_save_s = lc_now_seconds();
    if (st && !quiet()) warn("periodic save at step %ld failed: %s (training goes on)", lc_model_step(m), lc_last_error());
}

/* Processes training together stop at the same step and save together: a signal seen by any of them,
 * and process 0's clock for --save-every-min, are shared after every step. */
static int train_hook(const lc_model *m, const lc_progress *p, void *user) {
    saver *s = user;
    s->last = *p;
    if (s->loss_log) fprintf(s->loss_log, "%ld %.9g\n", p->step, p->loss);
    const train_args *a = s->a;
    long shared[2] = {lc_cli_stop_signal(), lc_dist_rank() == 0 && lc_cli_save_due(0, a->save_every_min, p->step,
                                                                                   s->last_save_s)};
    lc_dist_max_longs(shared, 2);
    if ((s->stopped_by = (int)shared[0])) return 1;
    if (!s->out || p->step >= p->steps) return 0; /* the final save follows */
    if ((a->save_every > 0 && p->step % a->save_every == 0) || shared[1]) periodic_save(s, m);
    return 0;
}

/* The allreduce share of a run of several processes, for the summary line and JSON. */
static double comm_per_step(const lc_progress *p) {
    const long steps = p->step - p->start_step;
    return steps > 0 ? p->comm_s / (double)steps : 0;
}

static int finish_run(train_args *a, lc_model *m, const lc_corpus *corpus, const char *out, lc_status st, saver *svp,
                      lm_progress *lp);

static int finish(train_args *a, lc_model *m, const lc_corpus *corpus, const char *out, FILE *loss_log,
                  lc_train_log *log) {
    lm_progress lp;
    memset(&lp, 0, sizeof lp);
    lc_progress_init(&lp.pp, a->o.steps);
    lp.log = *log;
    lp.mlm = lc_model_config(m)->objective == LC_OBJECTIVE_MLM;
    const long start = lc_model_step(m);
    lp.run_end = a->o.stop_after > 0 && start + a->o.stop_after < a->o.steps ? start + a->o.stop_after : a->o.steps;
    lp.last.step = -1;
    const size_t valid_n = corpus->end[LC_PART_VALID] - corpus->begin[LC_PART_VALID];
    lp.valid_bytes = a->o.eval_bytes > 0 && (size_t)a->o.eval_bytes < valid_n ? (size_t)a->o.eval_bytes : valid_n;
    saver sv = {a, out, lc_now_seconds(), loss_log, {0}, 0};
    a->o.hook = train_hook;
    a->o.hook_user = &sv;
    lc_status st = lc_train(m, corpus, &a->o, quiet() ? NULL : lm_progress_print, &lp);
    if (sv.loss_log) fclose(sv.loss_log);
    lc_progress_done(&lp.pp);
    int rc = finish_run(a, m, corpus, out, st, &sv, &lp);
    lc_train_log_close(&lp.log);
    return rc;
}

static int finish_run(train_args *a, lc_model *m, const lc_corpus *corpus, const char *out, lc_status st, saver *svp,
                      lm_progress *lp) {
    const saver sv = *svp;
    if (st) {
        int rc = lc_cli_fail(st);
        if (lc_dist_size() > 1 && st != LC_ERR_NUMERIC) lc_dist_abort(rc); /* others may wait for this one */
        return rc;
    }
    if (sv.stopped_by) {
        if (lp->last.step >= 0) lc_train_log_step(&lp->log, &lp->last, ""); /* stopped at the run's last step */
        const int sig = sv.stopped_by;
        const char *name = lc_cli_signal_name(sig);
        if (!out) {
            if (quiet()) return 128 + sig;
            fprintf(stderr, "longctx: interrupted by %s at step %ld of %ld: nothing saved (no --out)\n", name,
                    lc_model_step(m), a->o.steps);
            return 128 + sig;
        }
        if ((st = lc_checkpoint_save_dist(m, &a->o, out))) return quiet() ? LC_EXIT_RUNTIME : lc_cli_fail(st);
        if (quiet()) return 128 + sig;
        fprintf(stderr, "longctx: interrupted by %s at step %ld of %ld: saved %s (continue with: longctx train "
                        "--resume %s)\n", name, lc_model_step(m), a->o.steps, out, out);
        return 128 + sig;
    }
    double tok_s = 0;
    double bpc = NAN, acc = NAN;
    long tokens = 0;
    const int mlm = lc_model_config(m)->objective == LC_OBJECTIVE_MLM;
    size_t vb = corpus->begin[LC_PART_VALID], vn = corpus->end[LC_PART_VALID] - vb;
    const double tv = lc_now_seconds();
    if (vn >= 2 && (st = lc_evaluate_dist(m, corpus->bytes + vb, vn, lc_model_config(m)->seq_len, a->o.batch, &bpc,
                                          mlm ? &acc : NULL, &tokens))) {
        if (lp->last.step >= 0) lc_train_log_step(&lp->log, &lp->last, "");
        return lc_cli_fail(st);
    }
    const double final_valid_s = lc_now_seconds() - tv;
    if (lp->last.step >= 0) {
        char extra[160];
        valid_fields(extra, sizeof extra, vn >= 2 ? bpc : NAN, acc, vn, final_valid_s, mlm);
        lc_train_log_step(&lp->log, &lp->last, extra);
    }
    if (out && (st = lc_checkpoint_save_dist(m, &a->o, out))) return quiet() ? LC_EXIT_RUNTIME : lc_cli_fail(st);
    if (quiet()) return LC_EXIT_OK;
    tok_s = lp->tokens_per_s;
    const double valid_s = lp->valid_s + final_valid_s;
    if (lc_dist_size() > 1)
        fprintf(stderr, "data parallel: %d processes, gradient allreduce %.2f ms per step (%.1f%% of the step)\n",
                lc_dist_size(), 1e3 * comm_per_step(&sv.last),
                sv.last.elapsed_s > 0 ? 100.0 * sv.last.comm_s / sv.last.elapsed_s : 0.0);
    if (mlm)
        printf("valid bpc %.4f and accuracy %.4f over %ld masked bytes after %ld steps (%.0f tokens/s)\n", bpc, acc,
               tokens, lc_model_step(m), tok_s);
    else
        printf("valid bpc %.4f over %ld bytes after %ld steps (%.0f tokens/s)\n", bpc, tokens, lc_model_step(m), tok_s);
    if (out) printf("saved %s\n", out);
    if (a->json) {
        printf("{\"valid_bpc\":%s,", lc_json_number(bpc));
        if (mlm) printf("\"masked_accuracy\":%s,", lc_json_number(acc));
        printf("\"tokens_per_s\":%.1f,\"steps\":%ld,\"params\":%zu,\"valid_seconds\":%.3f", tok_s, lc_model_step(m),
               lc_model_num_params(m), valid_s);
        if (lc_dist_size() > 1) /* several processes: how many, and the gradient sum's share */
            printf(",\"processes\":%d,\"allreduce_s_per_step\":%.6f", lc_dist_size(), comm_per_step(&sv.last));
        printf("}\n");
    }
    return LC_EXIT_OK;
}

/* The training split must give every stream (--batch) one segment plus one byte; checked before the
 * model is built, so a file too small for the batch fails at once instead of after allocating for it. */
static int check_data_size(const train_args *a, const lc_corpus *corpus, int T) {
    size_t n_train = corpus->end[LC_PART_TRAIN] - corpus->begin[LC_PART_TRAIN];
    const size_t streams = (size_t)a->o.batch * (size_t)lc_dist_size(); /* every process's */
    if (n_train / streams >= (size_t)T + 1) return -1;
    lc_cli_error("train: --data %s: the training split has %zu bytes, too few for %zu streams (--batch x "
                 "processes) of one segment plus one byte (--seg-len %d + 1)",
                 a->data, n_train, streams, T);
    return LC_EXIT_RUNTIME;
}

/* Whether every parameter's AdamW moments are zero: a resumed export (longctx export leaves them out). */
static int moments_are_zero(lc_model *m) {
    long shape[2];
    const char *name;
    int ndim, trained;
    for (int i = 0; i < lc_model_tensor_count(m); i++) {
        if (lc_model_tensor_info(m, i, &name, &ndim, shape, &trained) || !trained) continue;
        const size_t n = (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1);
        const float *mv[2] = {lc_model_tensor_data(m, i, LC_TENSOR_ADAM_M), lc_model_tensor_data(m, i, LC_TENSOR_ADAM_V)};
        for (int w = 0; w < 2; w++)
            for (size_t j = 0; mv[w] && j < n; j++)
                if (mv[w][j] != 0) return 0;
    }
    return 1;
}

/* Settings that make a run useless or surprising get a warning line (those that cannot work are errors). */
static void warn_useless(const train_args *a, lc_model *m, const char *out, int stop_after_seen) {
    const lc_train_options *o = &a->o;
    const long start_step = lc_model_step(m);
    const long left = o->steps - start_step;
    if (left <= 0)
        warn("the run starts at step %ld of a %ld-step schedule: nothing to train (raise --steps)", start_step,
             o->steps);
    if (o->warmup > o->steps)
        warn("--warmup %ld is longer than the run (--steps %ld): the learning rate never reaches --lr", o->warmup,
             o->steps);
    if (o->eval_every > 0 && left > 0 && o->eval_every >= o->steps)
        warn("--eval-every %ld is not below --steps %ld: no validation before the end", o->eval_every, o->steps);
    if (o->min_lr > o->lr) warn("--min-lr %g exceeds --lr %g: the learning rate rises after warm-up", o->min_lr, o->lr);
    if (a->save_every > 0 && left > 0 && a->save_every >= left)
        warn("--save-every %ld is not below the %ld steps left: only the final save", a->save_every, left);
    if (stop_after_seen && o->stop_after > 0 && !out)
        warn("--stop-after without --out: the stopped run is not saved and cannot be resumed");
    else if (!out && left > 0)
        warn("no --out: the trained model will not be saved (give --out FILE to keep it)");
    if (a->resume && start_step > 0 && left > 0 && moments_are_zero(m))
        warn("%s has no optimizer state (an export): AdamW restarts from zero moments, so the first updates are "
             "larger than the saved run's (docs/reference/checkpoint.md)", a->resume);
}

/* A resumed run trains on the data its checkpoint records (lc_cli_load_recorded checks it), unless --data
 * names another file explicitly: then a warning says so when its bytes are not the recorded ones. */
static void warn_other_data(const train_args *a, const lc_data_record *rec, const lc_corpus *c) {
    if (!rec->path[0] || ((long)c->size == rec->size && lc_data_hash(c->bytes, c->size) == rec->hash)) return;
    warn("--data %s is not the data %s was trained on (%s, %ld bytes): continuing on %s", a->data, a->resume,
         rec->path, rec->size, a->data);
}

/* Collective: the processes training together hold the same settings (what the checkpoint would record,
 * the data by size and hash, and when they save and stop); -1, or LC_EXIT_USAGE after one line on each. */
static int same_run(const train_args *a, const lc_model *m, const char *out) {
    if (lc_dist_size() < 2) return -1;
    lc_ckpt_meta *h = calloc(1, sizeof *h);
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_cli_settings *s = calloc(1, sizeof *s);
    if (!h || !meta || !s) lc_dist_abort(LC_EXIT_RUNTIME); /* the others wait in the comparison */
    h->cfg = *lc_model_config(m);
    h->opts = a->o;
    h->step = lc_model_step(m);
    h->seed = a->o.seed;
    lc_ckpt_meta_format(h, meta);
    lc_cli_settings_add_meta(s, meta->items, meta->n);
    lc_cli_settings_add(s, "--data", "of %ld bytes (FNV-1a %016llx, split %d)", a->o.data.size,
                        (unsigned long long)a->o.data.hash, a->o.data.split);
    lc_cli_settings_add(s, "--stop-after", "%ld", a->o.stop_after);
    lc_cli_settings_add(s, "--save-every", "%ld", a->save_every);
    lc_cli_settings_add(s, "--save-every-min", "%.9g", (double)a->save_every_min);
    lc_cli_settings_add(s, "--out", "%s", out ? "given" : "not given");
    const int rc = lc_cli_same_settings("train", s);
    free(h), free(meta), free(s);
    return rc;
}

static int run(train_args *a, lc_opt *opts, int n) {
    lc_model *m = NULL;
    lc_status st;
    lc_split_mode mode;
    if (!parse_splits(a->splits, &mode)) {
        lc_cli_error("train: --splits must be auto, enwik8 or nanogpt, got '%s'", a->splits);
        return LC_EXIT_USAGE;
    }
    /* --resume without --out writes back to the resumed checkpoint */
    const char *out = a->out ? a->out : a->resume;
    if ((a->save_every > 0 || a->save_every_min > 0) && !out) {
        lc_cli_error("train: --save-every and --save-every-min need --out (or --resume)");
        return LC_EXIT_USAGE;
    }
    if (out && !quiet() && (st = lc_checkpoint_check_path(out))) return lc_cli_fail(st); /* process 0 writes */
    lc_threads_set_default(a->threads);
    const int explicit_data = lc_opt_get(opts, n, "--data")->seen;
    lc_data_record rec;
    memset(&rec, 0, sizeof rec);
    lc_config cfg;
    int rc;
    if (a->resume) {
        rc = check_resume_flags(opts, n);
        if (rc >= 0) return rc;
        lc_train_options saved;
        if ((st = lc_checkpoint_load_dist(a->resume, &m, &saved))) return lc_cli_fail(st); /* this process's share */
        if (lc_opt_get(opts, n, "--steps")->seen) saved.steps = a->o.steps;
        if (lc_opt_get(opts, n, "--eval-every")->seen) saved.eval_every = a->o.eval_every;
        if (lc_opt_get(opts, n, "--eval-bytes")->seen) saved.eval_bytes = a->o.eval_bytes;
        saved.stop_after = a->o.stop_after;
        a->o = saved;
        rec = saved.data;
        lc_precision prec = lc_model_config(m)->precision;
        rc = lc_model_flags_precision(&a->mf, "train", &prec);
        if (rc >= 0 || (st = lc_model_set_precision(m, prec))) {
            lc_model_free(m);
            return rc >= 0 ? rc : lc_cli_fail(st);
        }
        cfg = *lc_model_config(m);
        if (rec.path[0]) {
            mode = (lc_split_mode)rec.split; /* the split is part of the run, as --splits cannot change */
            if (!explicit_data) a->data = rec.path;
        } else if (!explicit_data) {
            lc_cli_error("train: %s does not record its training data (an older checkpoint): give --data", a->resume);
            lc_model_free(m);
            return LC_EXIT_USAGE;
        }
    } else {
        rc = lc_model_flags_apply(&a->mf, opts, n, "train", &cfg);
        if (rc >= 0) return rc;
        if (!explicit_data && !(a->data = lc_cli_default_data("train"))) return LC_EXIT_USAGE;
    }
    const lc_cli_path outs[] = {{"--out", out}, {"--log", a->log}, {"--loss-log", a->loss_log}},
                      ins[] = {{"training data", a->data}};
    rc = lc_cli_check_outputs("train", outs, 3, ins, 1);
    if (rc >= 0) {
        lc_model_free(m);
        return rc;
    }
    lc_corpus corpus;
    if (a->resume && !explicit_data) {
        if ((rc = lc_cli_load_recorded("train", a->resume, &rec, &corpus)) >= 0) {
            lc_model_free(m);
            return rc;
        }
    } else if ((st = lc_corpus_load(a->data, mode, &corpus))) {
        lc_model_free(m);
        return lc_cli_fail(st);
    } else if (a->resume) {
        warn_other_data(a, &rec, &corpus);
    }
    if (rc < 0) rc = check_data_size(a, &corpus, cfg.seq_len);
    if (rc < 0 && !m && (st = lc_model_create(&cfg, a->o.batch, a->o.seed, &m))) rc = lc_cli_fail(st);
    if (rc < 0) lc_data_record_set(&a->o.data, a->data, &corpus);
    /* every process gets the same answer from both (a failure anywhere, a setting that differs), so all of
     * them make the second readiness check below, or none */
    if ((rc = lc_cli_all_ready(rc)) < 0) rc = same_run(a, m, out); /* before any file is opened */
    const int agreed = rc < 0;
    FILE *loss_log = NULL; /* process 0's */
    if (rc < 0 && a->loss_log && !quiet() && !(loss_log = fopen(a->loss_log, "a"))) {
        lc_cli_error("train: --loss-log %s: cannot open for writing: %s", a->loss_log, strerror(errno));
        rc = LC_EXIT_RUNTIME;
    }
    lc_train_log log = {NULL, NULL};
    if (rc < 0 && !quiet()) rc = lc_train_log_open(&log, "train", a->log, a->resume != NULL);
    if (agreed && (rc = lc_cli_all_ready(rc)) < 0) {
        lc_cli_catch_stop_signals(); /* before the first line, which tells a watcher that the run is under way */
        if (!quiet()) print_summary(m, &a->o);
        if (!quiet()) warn_useless(a, m, out, lc_opt_get(opts, n, "--stop-after")->seen);
        rc = finish(a, m, &corpus, out, loss_log, &log);
    } else {
        if (loss_log) fclose(loss_log);
        lc_train_log_close(&log);
    }
    lc_corpus_free(&corpus);
    lc_model_free(m);
    return rc;
}

int lc_cmd_train(int argc, char **argv) {
    const int task_rc = lc_cli_task_run("train", "", argc, argv); /* another family's training */
    if (task_rc >= 0) return task_rc;
    lc_dist_init(&argc, &argv); /* several processes under mpirun, else one */
    train_args a;
    memset(&a, 0, sizeof a);
    lc_train_options_default(&a.o);
    lc_model_flags_init(&a.mf);
    lc_opt opts[40 + LC_MODEL_FLAG_COUNT];
    int n = build_opts(&a, opts);
    int rc = lc_parse_opts("train", "[options]   (train --task classify|hibert|seq2seq --help: another model family)", opts, n,
                           argc, argv);
    if (rc < 0) rc = lc_optim_flags_apply("train", &a.o);
    if (rc < 0) rc = run(&a, opts, n);
    lc_cli_all_ready_end(rc);
    return rc;
}
