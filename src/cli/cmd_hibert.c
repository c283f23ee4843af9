/* `longctx hibert pretrain|finetune`: HIBERT's masked-sentence pre-training on documents and its
 * fine-tuning for extractive summarization on a BBC News root (docs/guides/summarize.md). The flags (model shape or
 * --init, --resume and what it fixes), the checks of paths and of the processes training together under
 * mpirun, and the messages; the run itself (batches, validation, the best checkpoint, saves) is the
 * library's (models/hibert/hibert_fit.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/field_flags.h"
#include "cli/hibert_cli.h"
#include "cli/model_flags.h"
#include "cli/optim_flags.h"
#include "cli/same_settings.h"
#include "core/json.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"
#include "train/dist.h"
#include "train/checkpoint_meta.h"
#include "models/hibert/hibert_fields.h"
#include "models/hibert/hibert_fit.h"

#define MAX_SOURCES 16

#define CFG_TYPE lc_hibert_config
/* The configuration's flags: one per row of models/hibert/hibert_fields.h. */
static const lc_cli_field fields[] = {LC_HIBERT_FIELDS(LC_CLI_FIELD)};
#define N_FIELDS (int)(sizeof fields / sizeof *fields)

typedef struct {
    const char *docs[MAX_SOURCES], *data, *init, *out, *resume, *labels, *encoding, *log;
    int n_docs, threads, json, finetune, eval_docs;
    long save_every;
    float save_every_min, intruders, intruder_weight;
    lc_hibert_config cfg;
    lc_train_options o;
    lc_field_flags ff;
} hargs;

static int build_opts(hargs *a, lc_opt *opts) {
    lc_train_options *o = &a->o;
    const lc_opt files[] = {
        {"--docs", OPT_STR, &a->docs[0], 0, 0, "pretrain: a directory of .txt documents, a BBC root (train split) or a .tsv/.tsv.gz (last column); repeat for more", 0},
        {"--data", OPT_STR, &a->data, 0, 0, "finetune: the BBC News root (default data/bbc-news-summary)", 0},
        {"--labels", OPT_STR, &a->labels, 0, 0, "finetune: contained (default) or greedy sentence labels", 0},
        {"--init", OPT_STR, &a->init, 0, 0, "start from this checkpoint's weights (its shape)", 0},
        {"--out", OPT_STR, &a->out, 0, 0, "checkpoint to write (finetune: the best by valid ROUGE; OUT.last: the last state)", 0},
        {"--resume", OPT_STR, &a->resume, 0, 0, "continue this checkpoint's run (finetune: OUT.last)", 0},
        {"--encoding", OPT_STR, &a->encoding, 0, 0, "utf8 (default: refuse other files) or latin1", 0},
    };
    const lc_opt base[] = {
        {"--steps", OPT_LONG, &o->steps, 0, 1e12, "optimizer steps (default 2000)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 4096, "documents (chunks) per batch (default 8)", 0},
        {"--eval-every", OPT_LONG, &o->eval_every, 0, 1e12, "steps between validations (default 250; 0: end only)", 0},
        {"--intruders", OPT_FLOAT, &a->intruders, 0, 1, "pretrain: also train the head to find sentences swapped in from other documents of the batch, this share of the sentences (longctx's, not the paper's; default 0)", 0},
        {"--intruder-weight", OPT_FLOAT, &a->intruder_weight, 0, 1e6, "pretrain: the intruders' loss weight beside the masked-sentence loss (default 1)", 0},
        {"--eval-docs", OPT_INT, &a->eval_docs, 0, 1 << 30, "pretrain: held-out documents per validation (default 64; 0: all)", 0},
        {"--seed", OPT_U64, &o->seed, 0, 0, "seed: initialisation, shuffling, masking, dropout (default 1337)", 0},
        {"--threads", OPT_INT, &a->threads, 0, 1024, "threads (0: all cores)", 0},
        {"--save-every", OPT_LONG, &a->save_every, 0, 1e12, "also save every N steps", 0},
        {"--save-every-min", OPT_FLOAT, &a->save_every_min, 0, 1e7, "also save every N minutes", 0},
        {"--json", OPT_FLAG, &a->json, 0, 0, "print a JSON summary as the last stdout line", 0},
        {"--log", OPT_STR, &a->log, 0, 0, "write one JSON line per step to this file (appended to with --resume)", 0},
    };
    int n = (int)(sizeof files / sizeof files[0]);
    memcpy(opts, files, sizeof files);
    n = lc_field_flags_add(&a->ff, fields, N_FIELDS, opts, n);
    memcpy(opts + n, base, sizeof base);
    n = lc_optim_flags_add(o, opts, n + (int)(sizeof base / sizeof base[0]));
    /* each stage's own flags: the other stage's help leaves them out and its parser refuses them */
    static const char *pre_only[] = {"--docs", "--eval-docs", "--intruders", "--intruder-weight", "--dec-layers",
                                     "--dec-dim", "--dec-heads", "--dec-ffn", "--dec-attn"};
    static const char *fine_only[] = {"--data", "--labels", "--head-features"};
    if (a->finetune)
        for (size_t i = 0; i < sizeof pre_only / sizeof *pre_only; i++)
            lc_opt_refuse(opts, n, pre_only[i], i < 4 ? "belongs to hibert pretrain"
                                                      : "belongs to hibert pretrain (fine-tuning does not use the sentence decoder)");
    else
        for (size_t i = 0; i < sizeof fine_only / sizeof *fine_only; i++)
            lc_opt_refuse(opts, n, fine_only[i], "belongs to hibert finetune");
    return n;
}

/* The configuration's flags given (into the config) and the choices. */
static int apply_strings(hargs *a, lc_opt *opts, int n, const char *cmd) {
    const int rc = lc_field_flags_apply(&a->ff, opts, n, cmd, &a->cfg, 0);
    if (rc >= 0) return rc;
    if (a->cfg.head_features != 0 && a->cfg.head_features != 3 && a->cfg.head_features != LC_SUMMARY_FEATURES) {
        lc_cli_error("hibert: --head-features must be 0, 3 or %d, got %d", LC_SUMMARY_FEATURES, a->cfg.head_features);
        return LC_EXIT_USAGE;
    }
    if (a->encoding && strcmp(a->encoding, "utf8") && strcmp(a->encoding, "latin1")) {
        lc_cli_error("hibert: --encoding must be utf8 or latin1, got '%s'", a->encoding);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* With --init or --resume the checkpoint fixes the shape: a shape flag that disagrees is an error (--dropout and
 * --head-features have rules of their own, --precision is a run setting). */
static int check_shape_flags(lc_opt *opts, int n, const lc_hibert_config *want, const lc_hibert_config *ck, const char *path) {
    for (int i = 0; i < N_FIELDS; i++) {
        const lc_cli_field *r = &fields[i];
        if ((r->need & LC_F_RUN) || !strcmp(r->flag, "--dropout") || !strcmp(r->flag, "--head-features") ||
            !lc_opt_get(opts, n, r->flag)->seen)
            continue;
        if (!lc_field_same(r, want, ck)) {
            lc_cli_error("hibert: %s disagrees with %s (the checkpoint fixes the model's shape)", r->flag, path);
            return LC_EXIT_USAGE;
        }
    }
    return -1;
}

/* The data sources as the checkpoint records them (data.sources): the absolute paths, one a line, in buf.
 * -1, or an exit code after one line (a path the checkpoint cannot record: checked before the first step). */
static int sources_of(const char *cmd, const hargs *a, char *buf, size_t cap) {
    char *p = buf;
    const char *src[MAX_SOURCES];
    const int ns = a->finetune ? 1 : a->n_docs;
    for (int i = 0; i < ns; i++) src[i] = a->finetune ? (a->data ? a->data : "data/bbc-news-summary") : a->docs[i];
    *p = 0;
    for (int i = 0; i < ns; i++) {
        char *abs = realpath(src[i], NULL);
        const char *s = abs ? abs : src[i];
        if (strchr(s, '\n') || !lc_utf8_valid(s, strlen(s))) { /* the checkpoint records it: say so now, not after training */
            char shown[160]; /* the path on one line: control bytes as '?' */
            snprintf(shown, sizeof shown, "%s", src[i]);
            for (char *c = shown; *c; c++)
                if ((unsigned char)*c < 32) *c = '?';
            lc_cli_error("%s: %s %s: the checkpoint records this path, which must be UTF-8 without a newline: "
                         "rename it (or link it under such a name)", cmd, a->finetune ? "--data" : "--docs", shown);
            free(abs);
            return LC_EXIT_USAGE;
        }
        if ((size_t)(p - buf) + strlen(s) + 2 >= cap) { free(abs); lc_cli_error("%s: too many --docs paths", cmd); return LC_EXIT_USAGE; }
        p += sprintf(p, "%s%s", i ? "\n" : "", s);
        free(abs);
    }
    return -1;
}

/* With --resume the checkpoint fixes the run: its documents, the batch and the optimizer, the seed and what
 * the loss trains. A flag given with the recorded value is accepted, another value refused (as shape flags:
 * check_shape_flags); --steps, --eval-every, --eval-docs, --precision, --threads, the saves and the log
 * apply. dropout: the --dropout flag's value. */
static int refuse_resume_flags(const char *cmd, const hargs *a, lc_opt *opts, int n, const lc_hibert_run *run,
                               float dropout, float saved_dropout) {
    const lc_train_options *o = &a->o, *r = &run->opts;
    char given[4096 + 64] = "", saved[4096 + 64] = "";
    const char *which = NULL;
    if (a->n_docs > 0 || lc_opt_get(opts, n, "--data")->seen) {
        int rc = sources_of(cmd, a, given, sizeof given);
        if (rc >= 0) return rc;
        if (strcmp(given, run->data) != 0) which = a->finetune ? "--data" : "--docs";
        snprintf(saved, sizeof saved, "%s", run->data);
    }
#define FIXED(flag, differs, fmt, x, y)                                                                               \
    if (!which && lc_opt_get(opts, n, flag)->seen && (differs))                                                     \
        which = flag, snprintf(given, sizeof given, fmt, x), snprintf(saved, sizeof saved, fmt, y);
    FIXED("--batch", o->batch != r->batch, "%d", o->batch, r->batch)
    FIXED("--seed", o->seed != r->seed, "%llu", (unsigned long long)o->seed, (unsigned long long)r->seed)
    FIXED("--lr", o->lr != r->lr, "%.9g", (double)o->lr, (double)r->lr)
    FIXED("--min-lr", o->min_lr != r->min_lr, "%.9g", (double)o->min_lr, (double)r->min_lr)
    FIXED("--warmup", o->warmup != r->warmup, "%ld", o->warmup, r->warmup)
    FIXED("--weight-decay", o->weight_decay != r->weight_decay, "%.9g", (double)o->weight_decay, (double)r->weight_decay)
    FIXED("--clip", o->clip != r->clip, "%.9g", (double)o->clip, (double)r->clip)
    FIXED("--lr-scale", strcmp(o->lr_scale, r->lr_scale) != 0, "'%s'", o->lr_scale, r->lr_scale)
    FIXED("--dropout", dropout != saved_dropout, "%.9g", (double)dropout, (double)saved_dropout)
    const int latin1 = a->encoding && strcmp(a->encoding, "latin1") == 0, greedy = a->labels && strcmp(a->labels, "greedy") == 0;
    FIXED("--encoding", latin1 != run->latin1, "%s", latin1 ? "latin1" : "utf8", run->latin1 ? "latin1" : "utf8")
    FIXED("--labels", greedy != run->labels, "%s", greedy ? "greedy" : "contained", run->labels ? "greedy" : "contained")
    FIXED("--intruders", a->intruders != run->intruders, "%.9g", (double)a->intruders, (double)run->intruders)
    FIXED("--intruder-weight", a->intruder_weight != run->intruder_weight, "%.9g", (double)a->intruder_weight,
          (double)run->intruder_weight)
#undef FIXED
    if (!which) return -1;
    for (char *c = given; *c; c++)
        if (*c == '\n') *c = ' ';
    for (char *c = saved; *c; c++)
        if (*c == '\n') *c = ' ';
    lc_cli_error("%s: %s %.300s disagrees with --resume %s, which records %.300s (the checkpoint fixes it: leave the "
                 "flag out to continue its run)", cmd, which, given, a->resume, saved);
    return LC_EXIT_USAGE;
}

/* The command's side of a run (the run itself: models/hibert/hibert_fit.h): the model, its record and documents,
 * where the resumable state goes, the progress line and the log, and what the summary prints. */
typedef struct {
    hargs *a;
    lc_train_log log;
    lc_progress_printer pp;
    lc_hibert *m;
    lc_hibert_run run;
    lc_hdocs train, valid;
    const char *last; /* where the resumable state goes */
    char last_buf[4200];
    double v[LC_FIT_MAX_METRICS]; /* the last validation's numbers (hibert_fit.h's order; NaN before one) */
    int stopped_by;               /* the signal that stopped the run, in any process (0: none) */
} trainer;

/* Process 0 prints; the others stay quiet unless they fail. */
static int quiet(void) { return lc_dist_rank() != 0; }

/* A step: the ROUGE line after a fine-tuning validation, the progress line, the --log line. */
static void report(const lc_progress *p, const lc_fit_metrics *valid, double intruder_bce, void *user) {
    trainer *t = user;
    const hargs *a = t->a;
    for (int i = 0; valid && i < valid->n; i++) t->v[i] = valid->m[i].value;
    if (quiet()) return;
    const double *v = t->v;
    char extra[384] = "";
    int used = t->run.intruders > 0 && !a->finetune ? snprintf(extra, sizeof extra, ",\"intruder_bce\":%s", lc_json_g(intruder_bce)) : 0;
    if (valid && a->finetune) {
        snprintf(extra, sizeof extra, ",\"valid_rouge1\":%s,\"valid_rouge2\":%s,\"valid_rougeL\":%s,\"valid_seconds\":%.6f,"
                 "\"valid_rouge1_stem\":%s,\"valid_rouge2_stem\":%s,\"valid_rougeL_stem\":%s",
                 lc_json_g(v[0]), lc_json_g(v[1]), lc_json_g(v[2]), p->valid_s, lc_json_g(v[3]), lc_json_g(v[4]), lc_json_g(v[5]));
        fprintf(stderr, "%sstep %ld: valid ROUGE-1 %.2f ROUGE-2 %.2f ROUGE-L %.2f (stemmed %.2f / %.2f / %.2f)\n",
                t->pp.tty ? "\n" : "", p->step, v[0], v[1], v[2], v[3], v[4], v[5]);
    } else if (valid && t->run.intruders > 0) {
        snprintf(extra + used, sizeof extra - (size_t)used, ",\"valid_bpb\":%s,\"valid_intruder_bce\":%s,\"valid_seconds\":%.6f",
                 lc_json_g(v[0]), lc_json_g(v[1]), p->valid_s);
    } else if (valid) {
        snprintf(extra, sizeof extra, ",\"valid_bpb\":%s,\"valid_seconds\":%.6f", lc_json_g(v[0]), p->valid_s);
    }
    lc_progress_print(p, &t->pp);
    lc_train_log_step(&t->log, p, extra);
}

/* Processes training together stop at the same step: a signal seen by any of them. */
static int should_stop(void *user) {
    trainer *t = user;
    long sig = lc_cli_stop_signal();
    lc_dist_max_longs(&sig, 1);
    t->stopped_by = (int)sig;
    return sig != 0;
}

static void save_failed(long step, void *user) {
    (void)user;
    fprintf(stderr, "longctx: warning: save at step %ld failed: %s (training goes on)\n", step, lc_last_error());
}

static int fit(trainer *t) {
    hargs *a = t->a;
    const lc_train_options *o = &t->run.opts;
    lc_progress_init(&t->pp, o->steps);
    t->pp.bits = !a->finetune; /* fine-tuning's loss is a sentence-label BCE, not bits per byte */
    for (int i = 0; i < LC_FIT_MAX_METRICS; i++) t->v[i] = NAN;
    const lc_hibert_fit_options fo = {t->m, &t->run, &t->train, &t->valid, a->eval_docs, a->out, t->last,
                                      a->save_every, a->save_every_min, should_stop, report, save_failed, t};
    lc_fit_result res;
    lc_status st = lc_hibert_fit(&fo, &res);
    if (!quiet()) lc_progress_done(&t->pp);
    if (st) {
        const int rc = lc_cli_fail(st);
        if (lc_dist_size() > 1 && st != LC_ERR_NUMERIC) lc_dist_abort(rc); /* others may wait for this one */
        return rc;
    }
    if (t->stopped_by) {
        const int sig = t->stopped_by;
        if (!quiet())
            fprintf(stderr, "longctx: interrupted by %s at step %ld of %ld: %s%s\n", lc_cli_signal_name(sig),
                    lc_hibert_steps_done(t->m), o->steps, t->last ? "saved " : "nothing saved (no --out)", t->last ? t->last : "");
        return 128 + sig;
    }
    if (quiet()) return LC_EXIT_OK;
    const double *r = t->v;
    if (lc_dist_size() > 1)
        fprintf(stderr, "data parallel: %d processes, gradient allreduce %.2f ms per step\n", lc_dist_size(),
                res.steps_done > res.first_step ? 1e3 * res.comm_seconds / (double)(res.steps_done - res.first_step) : 0.0);
    if (a->finetune) {
        printf("valid ROUGE-1 %.2f ROUGE-2 %.2f ROUGE-L %.2f after %ld steps; best %.2f (mean F1) at step %ld%s%s\n", r[0], r[1],
               r[2], lc_hibert_steps_done(t->m), t->run.best, t->run.best_step, a->out ? " in " : "", a->out ? a->out : "");
        if (a->json)
            printf("{\"rouge1\":%s,\"rouge2\":%s,\"rougeL\":%s,\"best\":%s,\"best_step\":%ld,\"steps\":%ld,\"params\":%zu,"
                   "\"bytes_per_s\":%.1f,\"valid_seconds\":%.3f}\n",
                   lc_json_number(r[0]), lc_json_number(r[1]), lc_json_number(r[2]), lc_json_number(t->run.best),
                   t->run.best_step, lc_hibert_steps_done(t->m), lc_hibert_num_params(t->m), t->pp.tokens_per_s, res.valid_seconds);
    } else {
        const double bpb = r[0], ibce = r[1];
        char ib[64] = "";
        if (t->run.intruders > 0) snprintf(ib, sizeof ib, ", intruder BCE %.4f", ibce);
        printf("valid bits per byte %.4f%s after %ld steps (%.0f bytes/s)%s%s\n", bpb, ib, lc_hibert_steps_done(t->m),
               t->pp.tokens_per_s, t->last ? "; saved " : "", t->last ? t->last : "");
        if (t->run.intruders > 0) snprintf(ib, sizeof ib, "\"valid_intruder_bce\":%s,", lc_json_number(ibce));
        if (a->json)
            printf("{\"valid_bpb\":%s,%s\"bytes_per_s\":%.1f,\"steps\":%ld,\"params\":%zu,\"valid_seconds\":%.3f}\n",
                   lc_json_number(bpb), ib, t->pp.tokens_per_s, lc_hibert_steps_done(t->m), lc_hibert_num_params(t->m),
                   res.valid_seconds);
    }
    return LC_EXIT_OK;
}

/* The checkpoint (and fine-tuning's OUT.last) and the log are none of the documents read (sources: the
 * paths, one a line, recorded or given) nor inside their folders, nor the --init checkpoint. */
static int check_outputs(const char *cmd, const hargs *a, const char *sources) {
    char last[4200] = "";
    if (a->out && a->finetune) snprintf(last, sizeof last, "%s.last", a->out);
    const lc_cli_path outs[] = {{"--out", a->out}, {"--out", last[0] ? last : NULL}, {"--log", a->log}};
    lc_cli_path ins[MAX_SOURCES + 1] = {{"--init", a->init}};
    int n_in = 1;
    char *copy = strdup(sources);
    if (!copy) { lc_cli_error("%s: out of memory", cmd); return LC_EXIT_RUNTIME; }
    for (char *p = copy, *nl; p && *p && n_in <= MAX_SOURCES; p = nl ? nl + 1 : NULL) {
        if ((nl = strchr(p, '\n'))) *nl = 0;
        ins[n_in++] = (lc_cli_path){a->finetune ? "--data" : "--docs", p};
    }
    const int rc = lc_cli_check_outputs(cmd, outs, 3, ins, n_in);
    free(copy);
    return rc;
}

/* The run's plan on stderr: the model, the documents, the batch and what it is planned for. */
static void print_plan(const trainer *t) {
    const hargs *a = t->a;
    fprintf(stderr, "hibert %s: %d+%d+%d layers, dims %d/%d/%d | %.2fM params | %d train documents (%d chunks), %d held out | "
                    "batch %d, planned for %d sentences, %ld bytes, %ld decoder rows | %d thread%s%s\n", a->finetune ? "finetune" : "pretrain",
            a->cfg.sent.n_layer, a->cfg.doc.n_layer, a->cfg.dec.n_layer, a->cfg.sent.d_model, a->cfg.doc.d_model,
            a->cfg.dec.d_model, (double)lc_hibert_num_params(t->m) / 1e6, t->train.n_docs, t->train.n_chunks,
            t->valid.n_docs, t->run.opts.batch, t->run.limits.max_sents, t->run.limits.max_bytes,
            t->run.limits.no_decoder ? 0 : t->run.limits.max_dec_rows, lc_threads_default(), lc_plural(lc_threads_default()),
            lc_precision_note(a->cfg.precision));
    const int latin1 = t->train.latin1 + t->valid.latin1;
    if (latin1) fprintf(stderr, "%d file%s not UTF-8 and %s read as Latin-1\n", latin1, latin1 == 1 ? " was" : "s were",
                        latin1 == 1 ? "was" : "were");
}

/* Collective: the processes training together hold the same settings (the documents by size and hash, what
 * the checkpoint would record, and when they save); -1, or LC_EXIT_USAGE after one line on each. */
static int same_run(const char *cmd, const hargs *a, const trainer *t) {
    if (lc_dist_size() < 2) return -1;
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_cli_settings *s = calloc(1, sizeof *s);
    if (!meta || !s || lc_hibert_meta_format(t->m, &t->run, meta)) lc_dist_abort(LC_EXIT_RUNTIME); /* the others wait */
    lc_cli_settings_add(s, a->finetune ? "--data" : "--docs", "of %d chunks, %ld bytes (FNV-1a %016llx)", t->train.n_chunks,
                        t->train.bytes, (unsigned long long)t->train.hash);
    lc_cli_settings_add_meta(s, meta->items, meta->n);
    lc_cli_settings_add(s, "--eval-docs", "%d", a->eval_docs);
    lc_cli_settings_add(s, "--save-every", "%ld", a->save_every);
    lc_cli_settings_add(s, "--save-every-min", "%.9g", (double)a->save_every_min);
    lc_cli_settings_add(s, "--out", "%s", a->out ? "given" : "not given");
    const int rc = lc_cli_same_settings(cmd, s);
    free(meta), free(s);
    return rc;
}

static int run(hargs *a, lc_opt *opts, int n) {
    const char *cmd = a->finetune ? "hibert finetune" : "hibert pretrain";
    if (a->init && a->resume) { lc_cli_error("%s: --init and --resume exclude each other", cmd); return LC_EXIT_USAGE; }
    if (!a->out && !a->resume) { lc_cli_error("%s: --out is required", cmd); return LC_EXIT_USAGE; }
    if (a->finetune && a->n_docs > 0) { /* collected before parsing, so not refused by the parser */
        lc_cli_error("%s: --docs belongs to hibert pretrain", cmd);
        return LC_EXIT_USAGE;
    }
    if (!a->finetune && !a->resume && a->n_docs == 0) { lc_cli_error("%s: --docs is required", cmd); return LC_EXIT_USAGE; }
    lc_status st;
    if (a->out && !quiet() && (st = lc_checkpoint_check_path(a->out))) return lc_cli_fail(st); /* process 0 writes */
    lc_threads_set_default(a->threads);
    trainer t;
    memset(&t, 0, sizeof t);
    t.a = a;
    lc_hibert_run_default(&t.run);
    lc_hibert_config ck;
    const char *fixed = a->resume ? a->resume : a->init;
    const float dropout_flag = a->cfg.dropout; /* before the checkpoint's replaces it */
    if (fixed) {
        if ((st = lc_hibert_checkpoint_info(fixed, &ck, a->resume ? &t.run : NULL))) return lc_cli_fail(st);
        int rc = check_shape_flags(opts, n, &a->cfg, &ck, fixed);
        if (rc >= 0) return rc;
        if (!lc_opt_get(opts, n, "--dropout")->seen || a->resume) a->cfg.dropout = ck.dropout;
        const float dropout = a->cfg.dropout;
        /* --init may add head features to a checkpoint without them (lc_hibert_init_from) */
        const int features = lc_opt_get(opts, n, "--head-features")->seen && !a->resume && !ck.head_features
                           ? a->cfg.head_features : ck.head_features;
        if (lc_opt_get(opts, n, "--head-features")->seen && features != a->cfg.head_features) {
            lc_cli_error("hibert: --head-features disagrees with %s (the checkpoint fixes the model's shape)", fixed);
            return LC_EXIT_USAGE;
        }
        a->cfg = ck, a->cfg.dropout = dropout, a->cfg.head_features = features;
    }
    if (a->resume) {
        if ((int)t.run.stage != a->finetune) {
            lc_cli_error("%s: --resume %s is a %s checkpoint", cmd, a->resume, t.run.stage ? "finetune" : "pretrain");
            return LC_EXIT_USAGE;
        }
        /* the batch of every process together is the run's: the processes now share it */
        const long batch = (long)t.run.opts.batch * (t.run.opts.ranks > 1 ? t.run.opts.ranks : 1);
        if (batch % lc_dist_size()) {
            lc_cli_error("%s: --resume %s trained batches of %ld documents, which %d processes cannot share: run with a "
                         "number of processes dividing %ld", cmd, a->resume, batch, lc_dist_size(), batch);
            return LC_EXIT_USAGE;
        }
        t.run.opts.batch = (int)(batch / lc_dist_size());
        int rc = refuse_resume_flags(cmd, a, opts, n, &t.run, dropout_flag, ck.dropout);
        if (rc >= 0) return rc;
        if (lc_opt_get(opts, n, "--steps")->seen) t.run.opts.steps = a->o.steps;
        if (lc_opt_get(opts, n, "--eval-every")->seen) t.run.opts.eval_every = a->o.eval_every;
    } else {
        t.run.stage = a->finetune ? LC_HIBERT_STAGE_FINETUNE : LC_HIBERT_STAGE_PRETRAIN;
        t.run.opts = a->o;
        t.run.latin1 = a->encoding && strcmp(a->encoding, "latin1") == 0;
        t.run.intruders = a->intruders, t.run.intruder_weight = a->intruder_weight;
        t.run.labels = a->labels && strcmp(a->labels, "greedy") == 0;
        if (a->labels && strcmp(a->labels, "greedy") && strcmp(a->labels, "contained")) {
            lc_cli_error("%s: --labels must be contained or greedy, got '%s'", cmd, a->labels);
            return LC_EXIT_USAGE;
        }
        const int rc = sources_of(cmd, a, t.run.data, sizeof t.run.data);
        if (rc >= 0) return rc;
    }
    if (!a->finetune && t.run.intruders > 0 && lc_dist_size() > 1) {
        lc_cli_error("%s: --intruders swaps sentences between the documents of one batch, which processes training "
                     "together do not share: run it in one process", cmd);
        return LC_EXIT_USAGE;
    }
    int rc = check_outputs(cmd, a, t.run.data);
    if (rc >= 0) return rc;
    rc = lc_field_flags_apply(&a->ff, opts, n, cmd, &a->cfg, LC_F_RUN); /* --precision over the checkpoint's */
    if (rc >= 0) return rc;
    if ((st = lc_hibert_config_validate(&a->cfg))) return lc_cli_fail(st);
    /* a model of the shape first (its max_sents cuts documents), then the plan for the data */
    const lc_hibert_limits tiny = {1, 1, 1, 0, 1};
    if ((st = lc_hibert_create(&a->cfg, &tiny, t.run.opts.seed, &t.m))) return lc_cli_fail(st);
    if ((st = lc_hdocs_load_sources(&t.train, &t.valid, t.run.data, lc_hibert_get_config(t.m)->max_sents, t.run.latin1,
                                    a->finetune ? t.run.labels : -1)))
        rc = lc_cli_fail(st);
    if (rc < 0 && t.train.n_chunks == 0) { lc_cli_error("%s: no training documents in %s", cmd, t.run.data); rc = LC_EXIT_RUNTIME; }
    if (rc < 0 && a->resume && t.run.data_hash && (t.run.data_hash != t.train.hash || t.run.data_docs != t.train.n_chunks)) {
        lc_cli_error("%s: the training documents of %s have changed since it was saved", cmd, a->resume);
        rc = LC_EXIT_RUNTIME;
    }
    if (rc < 0) {
        t.run.data_hash = t.train.hash, t.run.data_docs = t.train.n_chunks, t.run.data_bytes = t.train.bytes;
        t.run.limits = lc_hdocs_limits(&t.train, &t.valid, t.run.opts.batch, &a->cfg, !a->finetune);
        lc_hibert_free(t.m);
        t.m = NULL;
        if (a->resume && !(st = lc_hibert_load(a->resume, &t.run.limits, &t.m, NULL)))
            st = lc_hibert_set_precision(t.m, a->cfg.precision);
        else if (!a->resume && !(st = lc_hibert_create(&a->cfg, &t.run.limits, t.run.opts.seed, &t.m)) && a->init)
            st = lc_hibert_init_from(t.m, a->init);
        if (st) rc = lc_cli_fail(st);
    }
    if (a->finetune && a->out) {
        snprintf(t.last_buf, sizeof t.last_buf, "%s.last", a->out);
        t.last = t.last_buf;
    } else {
        t.last = a->out ? a->out : a->resume;
    }
    if (a->resume && !a->out) t.last = a->resume;
    /* every process gets the same answers (a failure anywhere, a setting that differs), so all of them make
     * the second readiness check below, or none */
    if ((rc = lc_cli_all_ready(rc)) < 0) rc = same_run(cmd, a, &t); /* before any file is opened */
    const int agreed = rc < 0;
    if (rc < 0 && !quiet()) rc = lc_train_log_open(&t.log, cmd, a->log, a->resume != NULL);
    if (agreed && (rc = lc_cli_all_ready(rc)) < 0) {
        lc_cli_catch_stop_signals(); /* before the plan line, which tells a watcher that the run is under way */
        if (!quiet()) print_plan(&t);
        rc = fit(&t);
    }
    lc_train_log_close(&t.log);
    lc_hibert_free(t.m);
    lc_hdocs_free(&t.train), lc_hdocs_free(&t.valid);
    return rc;
}

/* The commands' defaults (before the flags). */
static void hargs_default(hargs *a, int finetune) {
    memset(a, 0, sizeof *a);
    a->finetune = finetune;
    a->eval_docs = 64;
    lc_hibert_config_default(&a->cfg);
    lc_train_options_default(&a->o);
    a->o.batch = 8, a->o.lr = 1e-3f;
    a->intruder_weight = 1;
}

/* `longctx hibert --help`: both subcommands, the options they share, then each one's own. */
static int help(void) {
    hargs pa, fa;
    hargs_default(&pa, 0), hargs_default(&fa, 1);
    lc_opt pre[64], fine[64], both[64], own[64];
    const int n = build_opts(&pa, pre);
    build_opts(&fa, fine); /* the same table, in the same order */
    printf("HIBERT (docs/guides/summarize.md), three stages chained by --init:\n"
           "  longctx hibert pretrain --docs PATH... --out CKPT   masked-sentence pre-training on documents (a directory\n"
           "                                                     of .txt files, a BBC News root's train split, a .tsv/.tsv.gz)\n"
           "  longctx hibert finetune --data BBC_ROOT --out CKPT  extractive summarization (the best checkpoint by valid\n"
           "                                                     ROUGE in CKPT, the resumable last state in CKPT.last)\n"
           "then `longctx summarize --ckpt CKPT FILE...` and `longctx eval --task summarize --ckpt CKPT --split test`.\n\n");
    int nb = 0;
    for (int i = 0; i < n; i++)
        if (!pre[i].refuse && !fine[i].refuse) both[nb++] = pre[i];
    printf("options of both stages:\n");
    lc_opt_print(stdout, both, nb);
    printf("  --help                 this text (hibert pretrain --help, hibert finetune --help: one stage's)\n");
    for (int stage = 0; stage < 2; stage++) {
        const lc_opt *mine = stage ? fine : pre, *other = stage ? pre : fine;
        int no = 0;
        for (int i = 0; i < n; i++)
            if (!mine[i].refuse && other[i].refuse) own[no++] = mine[i];
        printf("\n%s only:\n", stage ? "finetune" : "pretrain");
        lc_opt_print(stdout, own, no);
    }
    return LC_EXIT_OK;
}

int lc_cmd_hibert(int argc, char **argv) {
    const char *usage = "pretrain --docs PATH... --out CKPT | finetune --data BBC_ROOT --out CKPT [options]";
    if (argc < 1 || (strcmp(argv[0], "pretrain") && strcmp(argv[0], "finetune"))) {
        if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) return help();
        lc_cli_error("hibert: expected pretrain or finetune (usage: longctx hibert %s)", usage);
        return LC_EXIT_USAGE;
    }
    lc_dist_init(&argc, &argv); /* several processes under mpirun, else one */
    hargs a;
    hargs_default(&a, strcmp(argv[0], "finetune") == 0);
    lc_opt opts[64];
    const int n = build_opts(&a, opts);
    /* --docs may repeat and take several paths: collect them, parse the rest */
    char **rest = malloc(sizeof(char *) * (size_t)(argc + 1));
    int nr = 0, too_many = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--docs") == 0) {
            for (i++; i < argc && strncmp(argv[i], "--", 2) != 0; i++) {
                if (a.n_docs == MAX_SOURCES) { too_many = 1; break; }
                a.docs[a.n_docs++] = argv[i];
            }
            i--;
            continue;
        }
        rest[nr++] = argv[i];
    }
    const char *cmd = a.finetune ? "hibert finetune" : "hibert pretrain";
    int rc = -1;
    if (too_many) {
        lc_cli_error("hibert: at most %d --docs paths", MAX_SOURCES);
        rc = LC_EXIT_USAGE;
    }
    if (rc < 0) rc = lc_parse_opts(cmd, a.finetune ? "--data BBC_ROOT --out CKPT [options]" : "--docs PATH... --out CKPT [options]", opts, n, nr, rest);
    if (rc < 0) rc = apply_strings(&a, opts, n, cmd);
    if (rc < 0) rc = lc_optim_flags_apply(cmd, &a.o);
    if (rc < 0) rc = run(&a, opts, n);
    lc_cli_all_ready_end(rc); /* a process that stopped before the others' check meets them there */
    free(rest);
    return rc;
}
