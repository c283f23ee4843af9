/* The seq2seq commands (docs/seq2seq.md): `longctx train --task seq2seq` trains the encoder-decoder on a TSV
 * file of Source/Target pairs through the library's training loop (models/seq2seq/seq2seq_fit.h; data parallel under
 * mpirun), keeping the best checkpoint by validation exact match in --out and the last state in OUT.last;
 * `longctx eval --task seq2seq` scores a checkpoint's greedy outputs on a file of pairs; `longctx predict`
 * hands a seq2seq checkpoint's inputs to lc_cli_predict_seq2seq (one generated target per line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/field_flags.h"
#include "cli/optim_flags.h"
#include "cli/same_settings.h"
#include "core/threads.h"
#include "train/checkpoint_meta.h"
#include "train/dist.h"
#include "models/seq2seq/seq2seq_fields.h"
#include "models/seq2seq/seq2seq_fit.h"

#define CMD "train --task seq2seq"

#define CFG_TYPE lc_seq2seq_config
/* The configuration's flags: one per row of models/seq2seq/seq2seq_fields.h that has one (the encoder's
 * shape both stacks: the decoder's rows have none). */
static const lc_cli_field fields[] = {LC_SEQ2SEQ_FIELDS(LC_CLI_FIELD)};

typedef struct {
    const char *task, *data, *valid, *out, *resume, *log, *src_col, *tgt_col;
    int threads, json;
    long save_every, max_examples;
    float save_every_min;
    lc_train_options o;
    lc_field_flags ff;
} sargs;

/* Process 0 prints and writes; the others stay quiet unless they fail. */
static int quiet(void) { return lc_dist_rank() != 0; }

/* Every pair of d fits the model's lengths; -1, or LC_EXIT_RUNTIME after one line naming the file and line
 * (targets only when `targets`: an evaluation scores a longer target as generated wrong). */
static int check_lengths(const char *cmd, const char *flag, const char *path, const lc_pair_data *d, int max_src,
                         int max_tgt, int targets) {
    for (long i = 0; i < d->n; i++) {
        const int bad_src = d->src_len[i] > (size_t)max_src, bad_tgt = targets && d->tgt_len[i] > (size_t)max_tgt;
        if (!bad_src && !bad_tgt) continue;
        lc_cli_error("%s: %s %s:%ld: a %s of %zu bytes, longer than the model's %d (--max-%s-len)", cmd, flag, path,
                     d->line[i], bad_src ? "source" : "target", bad_src ? d->src_len[i] : d->tgt_len[i],
                     bad_src ? max_src : max_tgt, bad_src ? "src" : "tgt");
        return LC_EXIT_RUNTIME;
    }
    return -1;
}

static size_t longest(const size_t *len, long n) {
    size_t most = 0;
    for (long i = 0; i < n; i++) most = len[i] > most ? len[i] : most;
    return most;
}

/* The model's shape from the flags (the seq2seq defaults where a flag is not given; both stacks alike) and
 * the longest source and target of the two files (or --max-src-len / --max-tgt-len). */
static int build_config(sargs *a, lc_opt *opts, int n, const lc_pair_data *d, lc_seq2seq_config *c) {
    lc_seq2seq_config_default(c);
    int rc = lc_field_flags_apply(&a->ff, opts, n, "train", c, 0);
    if (rc >= 0) return rc;
    c->dec = c->enc;
    size_t src = longest(d[0].src_len, d[0].n), tgt = longest(d[0].tgt_len, d[0].n);
    const size_t src2 = longest(d[1].src_len, d[1].n), tgt2 = longest(d[1].tgt_len, d[1].n);
    src = src2 > src ? src2 : src, tgt = tgt2 > tgt ? tgt2 : tgt;
    if (!lc_opt_get(opts, n, "--max-src-len")->seen) c->max_src_len = (int)src;
    if (!lc_opt_get(opts, n, "--max-tgt-len")->seen) c->max_tgt_len = tgt > 0 ? (int)tgt : 1;
    lc_status st = lc_seq2seq_config_validate(c);
    return st ? lc_cli_fail(st) : -1;
}

/* The processes training together hold the same settings (what the checkpoint records, the data by size
 * and hash, when they save and stop): -1, or LC_EXIT_USAGE after one line on each. Collective. */
static int same_run(const sargs *a, const lc_seq2seq *m, const lc_seq2seq_run *run, const lc_pair_data *d) {
    if (lc_dist_size() < 2) return -1;
    lc_ckpt_meta_strings *meta = calloc(1, sizeof *meta);
    lc_cli_settings *s = calloc(1, sizeof *s);
    if (!meta || !s) lc_dist_abort(LC_EXIT_RUNTIME); /* the others wait in the comparison */
    lc_seq2seq_meta_strings(m, run, meta);
    lc_cli_settings_add_meta(s, meta->items, meta->n);
    for (int f = 0; f < 2; f++) {
        uint64_t h = 0;
        size_t bytes = 0;
        for (long i = 0; i < d[f].n; i++) {
            h = h * 1099511628211ULL ^ lc_data_hash(d[f].src[i], d[f].src_len[i]);
            h = h * 1099511628211ULL ^ lc_data_hash(d[f].tgt[i], d[f].tgt_len[i]);
            bytes += d[f].src_len[i] + d[f].tgt_len[i];
        }
        lc_cli_settings_add(s, f ? "--valid" : "--data", "of %ld pairs, %zu bytes (hash %016llx)", d[f].n, bytes,
                            (unsigned long long)h);
    }
    lc_cli_settings_add(s, "--stop-after", "%ld", a->o.stop_after);
    lc_cli_settings_add(s, "--save-every", "%ld", a->save_every);
    const int rc = lc_cli_same_settings("train", s);
    free(meta), free(s);
    return rc;
}

/* --resume: the model planned for this process's share of the saved global batch, and its run record. */
static int resume(sargs *a, lc_opt *opts, int n, lc_seq2seq **m, lc_seq2seq_run *run, const lc_pair_data *train) {
    const char *fixed[] = {"--batch", "--grad-accum", "--lr", "--min-lr", "--warmup", "--weight-decay", "--clip", "--seed"};
    const char *which = NULL;
    for (size_t i = 0; !which && i < sizeof fixed / sizeof *fixed; i++)
        if (lc_opt_get(opts, n, fixed[i])->seen) which = fixed[i];
    if (which || lc_field_flags_any(&a->ff, opts, n, &which)) {
        lc_cli_error("%s: %s cannot be combined with --resume (the checkpoint fixes it)", CMD, which);
        return LC_EXIT_USAGE;
    }
    lc_seq2seq_run saved;
    lc_status st = lc_seq2seq_load(a->resume, 1, m, &saved); /* for its record; planned again below */
    if (st) return lc_cli_fail(st);
    lc_seq2seq_free(*m), *m = NULL;
    const long global = (long)saved.opts.batch * (saved.opts.ranks > 0 ? saved.opts.ranks : 1), R = lc_dist_size();
    if (global % R) {
        lc_cli_error("%s: %s was trained with %ld pairs per step, which %ld processes cannot share: run with a number "
                     "of processes dividing %ld", CMD, a->resume, global, R, global);
        return LC_EXIT_USAGE;
    }
    if ((st = lc_seq2seq_load(a->resume, (int)(global / R), m, run))) return lc_cli_fail(st);
    if (run->train_pairs && run->train_pairs != train->n) {
        lc_cli_error("%s: --data %s has %ld pairs, not the %ld of the training file of %s", CMD, a->data, train->n,
                     run->train_pairs, a->resume);
        return LC_EXIT_RUNTIME;
    }
    const long steps = a->o.steps, eval_every = a->o.eval_every, stop_after = a->o.stop_after;
    a->o = run->opts; /* the schedule and the optimizer as saved; --steps, --eval-every, --stop-after may change */
    a->o.batch = (int)(global / R);
    if (lc_opt_get(opts, n, "--steps")->seen) a->o.steps = steps;
    if (lc_opt_get(opts, n, "--eval-every")->seen) a->o.eval_every = eval_every;
    a->o.stop_after = stop_after;
    if (lc_seq2seq_steps_done(*m) >= a->o.steps) {
        lc_cli_error("%s: %s has done %ld of its %ld steps: give a larger --steps to continue", CMD, a->resume,
                     lc_seq2seq_steps_done(*m), a->o.steps);
        return LC_EXIT_USAGE;
    }
    return -1;
}

/* Process 0's progress line and --log; the stop signal of any process, shared after every step. */
typedef struct {
    lc_progress_printer pp;
    lc_train_log log;
    int stopped_by;
} sprogress;

static void report(const lc_progress *p, const lc_fit_metrics *valid, const char *extra, void *user) {
    sprogress *sp = user;
    if (quiet()) return;
    lc_progress_print(p, &sp->pp);
    if (valid)
        fprintf(stderr, "%sstep %ld: valid exact match %.4f, char accuracy %.4f\n", sp->pp.tty ? "\r" : "", p->step,
                valid->m[0].value, valid->m[1].value);
    lc_train_log_step(&sp->log, p, extra);
}

static int should_stop(void *user) {
    sprogress *sp = user;
    long sig = lc_cli_stop_signal();
    lc_dist_max_longs(&sig, 1);
    return (sp->stopped_by = (int)sig) != 0;
}

static int finish(const sargs *a, const lc_seq2seq *m, const lc_seq2seq_run *run, const char *last,
                  const lc_fit_result *r, const sprogress *sp, long valid_n) {
    if (quiet()) return sp->stopped_by ? 128 + sp->stopped_by : LC_EXIT_OK;
    char best_at[4300] = "no validation yet";
    if (run->best_step > 0) snprintf(best_at, sizeof best_at, "the best checkpoint so far (step %ld) is %s", run->best_step, a->out);
    if (sp->stopped_by) {
        fprintf(stderr, "longctx: interrupted by %s at step %ld: %s, the last state %s (continue with --resume %s)\n",
                lc_cli_signal_name(sp->stopped_by), r->steps_done, best_at, last, last);
        return 128 + sp->stopped_by;
    }
    const double train_s = r->seconds - r->valid_seconds, bytes_s = r->units / (train_s > 0 ? train_s : 1e-9);
    const double best = run->best_step > 0 ? run->best_exact_match : NAN;
    if (lc_dist_size() > 1)
        fprintf(stderr, "data parallel: %d processes, gradient allreduce %.2f ms per step\n", lc_dist_size(),
                r->steps_done > r->first_step ? 1e3 * r->comm_seconds / (double)(r->steps_done - r->first_step) : 0.0);
    if (run->best_step > 0) {
        printf("best valid exact match %.4f at step %ld of %ld over %ld pairs (%.0f bytes/s)\n", best, run->best_step,
               a->o.steps, valid_n, bytes_s);
        printf("saved %s (the best checkpoint) and %s (the last state)\n", a->out, last);
    } else {
        printf("stopped at step %ld of %ld before any validation (%.0f bytes/s)\nsaved %s (the last state)\n",
               r->steps_done, a->o.steps, bytes_s, last);
    }
    if (a->json)
        printf("{\"valid_exact_match\":%s,\"best_step\":%ld,\"steps\":%ld,\"run_steps\":%ld,\"seconds\":%.3f,"
               "\"valid_seconds\":%.3f,\"bytes_per_s\":%.1f,\"params\":%zu,\"processes\":%d}\n",
               lc_json_number(best), run->best_step, r->steps_done, r->steps_done - r->first_step, r->seconds,
               r->valid_seconds, bytes_s, lc_seq2seq_num_params(m), lc_dist_size());
    return LC_EXIT_OK;
}

/* Every process reaches the same collective calls (lc_cli_all_ready, same_run), whatever fails where: a failure
 * before them sets rc and falls through. */
static int train_run(sargs *a, lc_opt *opts, int n) {
    int rc = -1;
    char last[4200] = "";
    if (a->save_every_min > 0 && lc_dist_size() > 1)
        lc_cli_error("%s: --save-every-min needs one process (processes save at the same step: use --save-every)", CMD),
            rc = LC_EXIT_USAGE;
    else
        rc = lc_run_flags_check_files(CMD, "a TSV file of pairs", a->data, a->valid, NULL, a->out, a->log, last,
                                      sizeof last);
    lc_status st;
    lc_threads_set_default(a->threads);
    lc_pair_data d[2];
    memset(d, 0, sizeof d);
    const lc_tsv_limits lim = {a->max_examples, 0};
    if (rc < 0 && (st = lc_pairs_read(a->data, a->src_col, a->tgt_col, &lim, &d[0]))) rc = lc_cli_fail(st);
    if (rc < 0 && (st = lc_pairs_read(a->valid, a->src_col, a->tgt_col, &lim, &d[1]))) rc = lc_cli_fail(st);
    lc_seq2seq *m = NULL;
    lc_seq2seq_run run;
    lc_seq2seq_run_default(&run);
    lc_seq2seq_config c;
    if (rc < 0) rc = a->resume ? resume(a, opts, n, &m, &run, &d[0]) : build_config(a, opts, n, d, &c);
    if (rc < 0 && !m && (st = lc_seq2seq_create(&c, a->o.batch, a->o.seed, &m))) rc = lc_cli_fail(st);
    if (rc < 0) c = *lc_seq2seq_get_config(m);
    for (int f = 0; f < 2 && rc < 0; f++)
        rc = check_lengths(CMD, f ? "--valid" : "--data", f ? a->valid : a->data, &d[f], c.max_src_len, c.max_tgt_len, 1);
    if (rc < 0) run.opts = a->o, run.opts.ranks = lc_dist_size(), run.train_pairs = d[0].n;
    if ((rc = lc_cli_all_ready(rc)) < 0) rc = same_run(a, m, &run, d);
    const int agreed = rc < 0; /* the same on every process: both calls above answer alike everywhere */
    sprogress sp;
    memset(&sp, 0, sizeof sp);
    if (rc < 0 && !quiet()) rc = lc_train_log_open(&sp.log, CMD, a->log, a->resume != NULL);
    if (agreed && (rc = lc_cli_all_ready(rc)) < 0) {
        if (!quiet())
            fprintf(stderr, "seq2seq: %d+%d layers, dim %d, %d heads, ffn %d, attn %s, max source %d, max target %d, "
                            "%s-LN, %s, %s | %.2fM params | %ld training, %ld validation pairs | batch %d x %d "
                            "process%s | %d thread%s%s\n", c.enc.n_layer, c.dec.n_layer, c.enc.d_model, c.enc.n_head,
                    c.enc.d_ff, c.enc.attn[0] ? c.enc.attn : "full", c.max_src_len, c.max_tgt_len,
                    c.norm == LC_NORM_PRE ? "pre" : "post", c.activation == LC_ACT_GELU ? "gelu" : "relu",
                    c.tied ? "tied" : "untied", (double)lc_seq2seq_num_params(m) / 1e6, d[0].n, d[1].n, a->o.batch,
                    lc_dist_size(), lc_dist_size() == 1 ? "" : "es", lc_threads_default(), lc_plural(lc_threads_default()),
                    a->resume ? " | resumed" : "");
        lc_progress_init(&sp.pp, a->o.steps);
        lc_fit_options fo;
        memset(&fo, 0, sizeof fo);
        fo.o = &a->o, fo.save_every = a->save_every, fo.save_every_min = a->save_every_min;
        fo.best_path = a->out, fo.last_path = last;
        fo.should_stop = should_stop, fo.report = report, fo.user = &sp;
        lc_cli_catch_stop_signals();
        lc_fit_result r;
        memset(&r, 0, sizeof r);
        st = lc_seq2seq_fit(m, &d[0], &d[1], &run, &fo, &r);
        if (!quiet()) lc_progress_done(&sp.pp);
        rc = st ? lc_cli_fail(st) : finish(a, m, &run, last, &r, &sp, d[1].n);
        if (st && lc_dist_size() > 1 && st != LC_ERR_NUMERIC) lc_dist_abort(rc); /* others may wait for this one */
    }
    lc_train_log_close(&sp.log);
    lc_seq2seq_free(m);
    lc_pairs_free(&d[0]), lc_pairs_free(&d[1]);
    return rc;
}

int lc_cmd_train_seq2seq(int argc, char **argv) {
    lc_dist_init(&argc, &argv); /* several processes under mpirun, else one */
    sargs a;
    memset(&a, 0, sizeof a);
    lc_run_flags_default(&a.o);
    lc_train_options *o = &a.o;
    lc_opt base[] = {
        LC_DATA_FLAGS(a, "seq2seq", "training pairs: a TSV file with Source and Target columns, plain or gzip (required)",
                      "validation pairs, same format (required)", "pairs"),
        {"--src-col", OPT_STR, &a.src_col, 0, 0, "source column: name or number from 1 (default Source, else the last)", 0},
        {"--tgt-col", OPT_STR, &a.tgt_col, 0, 0, "target column: name or number from 1 (default Target, else the first)", 0},
        {"--out", OPT_STR, &a.out, 0, 0, "the best checkpoint by validation exact match (required; OUT.last: the last state)", 0},
        {"--batch", OPT_INT, &o->batch, 1, 1 << 16, "pairs per batch and process (default 16)", 0},
        {"--grad-accum", OPT_INT, &o->grad_accum, 1, 1 << 16, "batches per optimizer step (default 1)", 0},
        LC_RUN_FLAGS(a, o),
    };
    lc_opt opts[96];
    const int n = lc_run_flags_table(opts, base, (int)(sizeof base / sizeof *base), o, NULL, &a.ff, fields,
                                     (int)(sizeof fields / sizeof *fields), "does not apply to seq2seq (an encoder and a "
                                     "decoder of the shape --layers, --dim, --heads, --ffn, --attn give)");
    lc_opt_get(opts, n, "--save-every-min")->help = "also save OUT.last every N minutes (0: off; one process)";
    int rc = lc_run_flags_parse(CMD, "--data TRAIN.tsv --valid VALID.tsv --out CKPT [options]", opts, n, argc, argv,
                                &a.data, "a TSV file of pairs", o);
    if (rc < 0) rc = train_run(&a, opts, n);
    lc_cli_all_ready_end(rc); /* a process that stopped before train_run's first meeting meets the others there */
    return rc;
}

/* ---------------------------------------------------------------- eval --task seq2seq */

int lc_cmd_eval_seq2seq(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *task = NULL, *src_col = NULL, *tgt_col = NULL;
    int batch = 16, threads = 0, json = 0;
    long max_examples = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "seq2seq checkpoint (required)", 0},
        {"--task", OPT_STR, &task, 0, 0, "seq2seq", 0},
        {"--data", OPT_STR, &data, 0, 0, "TSV file of Source/Target pairs, plain or gzip (required)", 0},
        {"--src-col", OPT_STR, &src_col, 0, 0, "source column (default Source, else the last)", 0},
        {"--tgt-col", OPT_STR, &tgt_col, 0, 0, "target column (default Target, else the first)", 0},
        {"--max-examples", OPT_LONG, &max_examples, 1, 1e12, "the most pairs read from the file (default 4194304)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "pairs decoded together (default 16)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print {\"exact_match\":..,\"char_accuracy\":..,\"n\":..} as the last stdout line", 0},
    };
    const int n = (int)(sizeof opts / sizeof *opts);
    int rc = lc_parse_opts("eval", "--ckpt CKPT --task seq2seq --data FILE [options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt || !data) { lc_cli_error("eval --task seq2seq: --ckpt and --data are required"); return LC_EXIT_USAGE; }
    lc_threads_set_default(threads);
    lc_seq2seq *m = NULL;
    lc_pair_data d;
    memset(&d, 0, sizeof d);
    const lc_tsv_limits lim = {max_examples, 0};
    lc_status st = lc_seq2seq_load(ckpt, batch, &m, NULL);
    if (!st) st = lc_pairs_read(data, src_col, tgt_col, &lim, &d);
    double exact = 0, chars = 0;
    if (st) {
        rc = lc_cli_fail(st);
    } else if ((rc = check_lengths("eval --task seq2seq", "--data", data, &d, lc_seq2seq_get_config(m)->max_src_len, 0,
                                   0)) < 0) {
        if ((st = lc_seq2seq_evaluate(m, &d, &exact, &chars))) {
            rc = lc_cli_fail(st);
        } else {
            printf("exact match %.4f, char accuracy %.4f over %ld pairs of %s\n", exact, chars, d.n, data);
            if (json)
                printf("{\"exact_match\":%s,\"char_accuracy\":%s,\"n\":%ld}\n", lc_json_number(exact),
                       lc_json_number(chars), d.n);
            rc = LC_EXIT_OK;
        }
    }
    lc_pairs_free(&d);
    lc_seq2seq_free(m);
    return rc;
}

/* ---------------------------------------------------------------- predict */

int lc_cli_predict_seq2seq(const char *ckpt, const lc_cli_texts *t, int batch) {
    lc_seq2seq *m = NULL;
    lc_status st = lc_seq2seq_load(ckpt, batch, &m, NULL);
    int max_src = 0, max_tgt = 0;
    if (!st) lc_seq2seq_max_lengths(m, &max_src, &max_tgt);
    for (long i = 0; !st && i < t->n; i++)
        if (t->len[i] > (size_t)max_src)
            st = lc_fail(LC_ERR_FORMAT, "predict: input %ld has %zu bytes, longer than the longest source of %s (%d)", i + 1,
                         t->len[i], ckpt, max_src);
    uint8_t *out = st ? NULL : malloc((size_t)max_tgt * (size_t)(t->n > 0 ? t->n : 1));
    int *len = st ? NULL : malloc(sizeof(int) * (size_t)(t->n > 0 ? t->n : 1));
    if (!st && (!out || !len)) st = lc_fail(LC_ERR_NOMEM, "predict: out of memory");
    if (!st) st = lc_seq2seq_generate_set(m, t->n, t->text, t->len, out, len);
    for (long i = 0; !st && i < t->n; i++) {
        fwrite(out + (size_t)i * (size_t)max_tgt, 1, (size_t)len[i], stdout);
        putchar('\n');
    }
    free(out), free(len);
    lc_seq2seq_free(m);
    return st ? lc_cli_fail(st) : LC_EXIT_OK;
}
