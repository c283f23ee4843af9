/* The Reformer paper's duplication task (Kitaev et al. 2020, Table 2), scaled to a small CPU.
 *
 * A sequence is 0 w 0 w: w is |w| = len/2 - 1 random symbols from 1..127. A 1-layer causal model with
 * learned absolute positions (model vanilla) is trained on fresh random sequences, the cross-entropy
 * scored only on the second copy of w (targets -1 elsewhere), with lc_train_step. Each trained model is
 * then evaluated with other attention settings: lsh has no learned parameters, so a model built with
 * another number of hash rounds (or full attention) has the same parameter layout and gets a copy of the
 * trained parameters. Accuracy = the fraction of second-copy symbols whose argmax prediction is exact,
 * on a fixed set of fresh sequences (the same for every evaluation); "weak" counts the second-copy
 * positions predicted right in fewer than half of those sequences (a partly learned copy).
 *
 * Full attention is the Reformer's shared-QK attention without hashing: "full" is lsh with one chunk
 * holding the whole sequence (every earlier key visible, keys = normalised queries, the self mask), so
 * a model trained with it can be evaluated with LSH. "fullkv" is the library's full kind, whose keys
 * come from their own projection (which lsh ignores and leaves untrained): not comparable with LSH.
 *
 * Hashing: the Reformer draws new random rotations on every forward pass. The library's lsh kind fixes
 * its rotations per layer (tensors.seed) and mixes in the spec's `seed` option, so this program sets that
 * option to a new random value before every training step and every evaluation batch (--fixed-rotations
 * keeps the library's fixed rotations instead).
 *
 * usage: duplication [--len 128] [--steps 3000] [--batch 32] [--hashes-train 1,2,4] [--attn-eval 1,2,4,8]
 *                    [--buckets 16] [--chunk 16] [--d 128] [--heads 4] [--lr 1e-3] [--weight-decay 0.1]
 *                    [--warmup 100]
 *                    [--eval-seqs 1024] [--log-every 100] [--fixed-rotations] [--per-position] [--seed 1]
 *                    [--threads 0] [--json]
 * List items are rounds 1..8, "full" or "fullkv". --per-position prints each evaluation's accuracy per
 * second-copy symbol to stderr. Progress goes to stderr; results to stdout (a table, or one
 * JSON object per line with --json: one "train" line per trained model, one "eval" line per pair). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/lsh.h"
#include "core/rng.h"
#include "core/threads.h"
#include "core/timer.h"
#include "models/lm/lm.h"

#define MAX_ITEMS 16
#define FULL 0     /* a list item: dense shared-QK attention (lsh with one chunk holding the sequence) */
#define FULL_KV -1 /* a list item: the library's full kind (its own key projection) */

typedef struct {
    int per_position;
    int len, steps, batch, buckets, chunk, d, heads, warmup, eval_seqs, eval_batch, log_every, fixed, threads, json;
    float lr, wd;
    uint64_t seed;
    int train[MAX_ITEMS], n_train, eval[MAX_ITEMS], n_eval;
} options;

static void die(const char *what) {
    fprintf(stderr, "duplication: %s: %s\n", what, lc_last_error());
    exit(1);
}

static int parse_list(const char *s, int *out) {
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_ITEMS) return -1;
        if (strcmp(tok, "full") == 0) { out[n++] = FULL; continue; }
        if (strcmp(tok, "fullkv") == 0) { out[n++] = FULL_KV; continue; }
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 1 || v > LC_ATTN_LSH_MAX_HASHES) return -1;
        out[n++] = (int)v;
    }
    return n > 0 ? n : -1;
}

static void usage(void) {
    fprintf(stderr, "usage: duplication [--len L] [--steps N] [--batch B] [--hashes-train LIST] [--attn-eval LIST]\n"
                    "  [--buckets N] [--chunk N] [--d N] [--heads N] [--lr X] [--weight-decay X] [--warmup N]\n"
                    "  [--eval-seqs N] [--log-every N] [--fixed-rotations] [--per-position] [--seed N] [--threads N]\n"
                    "  [--json]\n"
                    "  LIST: comma-separated hash rounds 1..%d, 'full' (dense shared-QK) or 'fullkv' (full kind)\n",
            LC_ATTN_LSH_MAX_HASHES);
    exit(2);
}

static void parse_args(int argc, char **argv, options *o) {
    *o = (options){.len = 128, .steps = 3000, .batch = 32, .buckets = 16, .chunk = 16, .d = 128, .heads = 4,
                   .warmup = 100, .eval_seqs = 1024, .eval_batch = 32, .log_every = 100, .lr = 1e-3f, .wd = 0.1f,
                   .seed = 1};
    o->n_train = parse_list("1,2,4", o->train);
    o->n_eval = parse_list("1,2,4,8", o->eval);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) { o->json = 1; continue; }
        if (strcmp(a, "--fixed-rotations") == 0) { o->fixed = 1; continue; }
        if (strcmp(a, "--per-position") == 0) { o->per_position = 1; continue; }
        if (!v) usage();
        i++;
        if (strcmp(a, "--len") == 0) o->len = atoi(v);
        else if (strcmp(a, "--steps") == 0) o->steps = atoi(v);
        else if (strcmp(a, "--batch") == 0) o->batch = atoi(v);
        else if (strcmp(a, "--buckets") == 0) o->buckets = atoi(v);
        else if (strcmp(a, "--chunk") == 0) o->chunk = atoi(v);
        else if (strcmp(a, "--d") == 0) o->d = atoi(v);
        else if (strcmp(a, "--heads") == 0) o->heads = atoi(v);
        else if (strcmp(a, "--lr") == 0) o->lr = (float)atof(v);
        else if (strcmp(a, "--weight-decay") == 0) o->wd = (float)atof(v);
        else if (strcmp(a, "--warmup") == 0) o->warmup = atoi(v);
        else if (strcmp(a, "--eval-seqs") == 0) o->eval_seqs = atoi(v);
        else if (strcmp(a, "--log-every") == 0) o->log_every = atoi(v);
        else if (strcmp(a, "--seed") == 0) o->seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--threads") == 0) o->threads = atoi(v);
        else if (strcmp(a, "--hashes-train") == 0) { if ((o->n_train = parse_list(v, o->train)) < 0) usage(); }
        else if (strcmp(a, "--attn-eval") == 0) { if ((o->n_eval = parse_list(v, o->eval)) < 0) usage(); }
        else usage();
    }
    if (o->len < 4 || o->len % 2 || o->steps < 1 || o->batch < 1 || o->eval_seqs < 1 || o->log_every < 1 ||
        !(o->lr > 0) || !(o->wd >= 0) || o->warmup < 0)
        usage();
    if (o->eval_batch > o->eval_seqs) o->eval_batch = o->eval_seqs;
}

static void spec_for(const options *o, int rounds, char *spec, size_t n) {
    if (rounds == FULL) snprintf(spec, n, "lsh:buckets=2,hashes=1,chunk=%d", o->len);
    else if (rounds == FULL_KV) snprintf(spec, n, "full");
    else snprintf(spec, n, "lsh:buckets=%d,hashes=%d,chunk=%d", o->buckets, rounds, o->chunk);
}

static const char *name_of(int rounds) {
    static char buf[4][16];
    static int k;
    char *b = buf[k++ % 4];
    if (rounds == FULL) snprintf(b, sizeof buf[0], "full");
    else if (rounds == FULL_KV) snprintf(b, sizeof buf[0], "fullkv");
    else snprintf(b, sizeof buf[0], "lsh-%d", rounds);
    return b;
}

static lc_model *build(const options *o, int rounds, int max_batch) {
    lc_config c;
    lc_config_default(&c);
    c.n_layer = 1, c.d_model = o->d, c.n_head = o->heads, c.d_ff = 4 * o->d, c.seq_len = o->len;
    c.dropout = 0, c.model = LC_MODEL_VANILLA, c.mem_len = 0, c.objective = LC_OBJECTIVE_CLM;
    spec_for(o, rounds, c.attn, sizeof c.attn);
    lc_model *m = NULL;
    if (lc_model_create(&c, max_batch, o->seed, &m)) die(c.attn);
    return m;
}

/* The Reformer's fresh random hashing: a new rotation seed for every lsh head group of the model. */
static void set_rotation_seed(lc_model *m, uint64_t key) {
    for (int l = 0; l < m->cfg.n_layer; l++)
        for (int g = 0; g < m->layers[l].n_groups; g++) {
            lc_attn_group *gr = &m->layers[l].group[g];
            if (gr->kind != &lc_attn_lsh) continue;
            lc_attn_lsh_opts *lo = (lc_attn_lsh_opts *)(void *)gr->opts;
            lo->seed = (int)(lc_seed_mix(key, (uint64_t)(l * LC_ATTN_MAX_GROUPS + g)) & 0x7fffffff);
        }
}

/* B sequences 0 w 0 w of length T from rng; targets: the next symbol on the second copy of w, else -1. */
static void make_batch(lc_rng *rng, int B, int T, int *tok, int *tgt) {
    const int n = T / 2 - 1;
    for (int b = 0; b < B; b++) {
        int *x = tok + (long)b * T, *y = tgt + (long)b * T;
        x[0] = 0, x[n + 1] = 0;
        for (int i = 0; i < n; i++) x[1 + i] = x[n + 2 + i] = 1 + (int)lc_rng_below(rng, 127);
        for (int t = 0; t < T; t++) y[t] = t >= n + 1 && t < T - 1 ? x[t + 1] : -1;
    }
}

/* Exact argmax predictions among the scored positions of the last forward over B sequences of T; with
 * per_pos (may be NULL), also counted per position t. */
static long count_correct(const lc_model *m, const int *tgt, int B, int T, long *per_pos) {
    const float *logits = lc_model_logits(m);
    const int V = m->cfg.vocab;
    long ok = 0;
    for (long i = 0; i < (long)B * T; i++) {
        if (tgt[i] < 0) continue;
        const float *z = logits + i * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (z[v] > z[best]) best = v;
        ok += best == tgt[i];
        if (per_pos) per_pos[i % T] += best == tgt[i];
    }
    return ok;
}

typedef struct {
    double accuracy, loss;
    long scored;
    int weak_positions; /* second-copy positions predicted right in fewer than half of the sequences */
} eval_result;

static eval_result evaluate(const options *o, lc_model *m) {
    const int T = o->len, B = o->eval_batch;
    int *tok = malloc(sizeof(int) * (size_t)B * T), *tgt = malloc(sizeof(int) * (size_t)B * T);
    if (!tok || !tgt) { fprintf(stderr, "duplication: out of memory\n"); exit(1); }
    lc_rng rng;
    lc_rng_seed(&rng, lc_seed_mix(o->seed, 0x6576616cULL)); /* the same sequences for every evaluation */
    eval_result r = {0, 0, 0, 0};
    long correct = 0, *per_pos = calloc((size_t)T, sizeof(long));
    if (!per_pos) { fprintf(stderr, "duplication: out of memory\n"); exit(1); }
    double loss = 0;
    for (int done = 0, k = 0; done < o->eval_seqs; done += B, k++) {
        int nb = o->eval_seqs - done < B ? o->eval_seqs - done : B;
        make_batch(&rng, nb, T, tok, tgt);
        if (!o->fixed) set_rotation_seed(m, lc_seed_mix(o->seed ^ 0x65ULL, (uint64_t)k));
        double sum;
        long count;
        if (lc_model_forward(m, tok, tgt, nb, T, 0, &sum, &count)) die("evaluation forward");
        correct += count_correct(m, tgt, nb, T, per_pos);
        loss += sum;
        r.scored += count;
    }
    r.accuracy = (double)correct / (double)r.scored;
    r.loss = loss / (double)r.scored;
    for (int t = 0; t < T; t++) r.weak_positions += tgt[t] >= 0 && 2 * per_pos[t] < o->eval_seqs;
    if (o->per_position) { /* accuracy % of each second-copy symbol, in order */
        fprintf(stderr, "  per position:");
        for (int t = 0; t < T; t++)
            if (tgt[t] >= 0) fprintf(stderr, " %.0f", 100.0 * (double)per_pos[t] / o->eval_seqs);
        fprintf(stderr, "\n");
    }
    free(per_pos);
    free(tok);
    free(tgt);
    return r;
}

/* Train a model with `rounds` (or full attention) from scratch; returns it and its wall time. */
static lc_model *train(const options *o, int rounds, double *seconds, double *final_loss, double *final_acc) {
    lc_model *m = build(o, rounds, o->batch);
    lc_train_options to;
    lc_train_options_default(&to);
    to.steps = o->steps, to.batch = o->batch, to.lr = o->lr, to.min_lr = o->lr / 10, to.warmup = o->warmup;
    to.weight_decay = o->wd;
    to.seed = o->seed;
    const int T = o->len, B = o->batch;
    int *tok = malloc(sizeof(int) * (size_t)B * T), *tgt = malloc(sizeof(int) * (size_t)B * T);
    if (!tok || !tgt) { fprintf(stderr, "duplication: out of memory\n"); exit(1); }
    lc_rng rng;
    lc_rng_seed(&rng, lc_seed_mix(o->seed, 0x747261696eULL));
    double t0 = lc_now_seconds(), loss_acc = 0;
    long ok_acc = 0, n_acc = 0;
    int steps_acc = 0;
    for (int s = 0; s < o->steps; s++) {
        make_batch(&rng, B, T, tok, tgt);
        if (!o->fixed) set_rotation_seed(m, lc_seed_mix(o->seed ^ 0x74ULL, (uint64_t)s));
        double loss;
        if (lc_train_step(m, &to, tok, tgt, B, T, &loss)) die("train step");
        loss_acc += loss, steps_acc++;
        ok_acc += count_correct(m, tgt, B, T, NULL); /* logits of this step's forward (before the update) */
        n_acc += (long)B * (T / 2 - 1);
        if ((s + 1) % o->log_every == 0 || s + 1 == o->steps) {
            *final_loss = loss_acc / steps_acc, *final_acc = (double)ok_acc / (double)n_acc;
            fprintf(stderr, "  %s step %5d/%d  loss %.4f  train acc %5.1f%%  lr %.2e  %.0f s\n", name_of(rounds), s + 1,
                    o->steps, *final_loss, 100 * *final_acc, lc_learning_rate(&to, s), lc_now_seconds() - t0);
            loss_acc = 0, steps_acc = 0, ok_acc = 0, n_acc = 0;
        }
    }
    *seconds = lc_now_seconds() - t0;
    free(tok);
    free(tgt);
    return m;
}

int main(int argc, char **argv) {
    options o;
    parse_args(argc, argv, &o);
    lc_set_threads(o.threads);
    const int n = o.len / 2 - 1;
    fprintf(stderr, "duplication: length %d (|w| %d), 1 layer, d %d, %d heads, ffn %d, buckets %d, chunk %d, "
                    "batch %d, %d steps, lr %g, %s rotations, %d threads\n",
            o.len, n, o.d, o.heads, 4 * o.d, o.buckets, o.chunk, o.batch, o.steps, (double)o.lr,
            o.fixed ? "fixed" : "fresh", lc_get_threads());
    if (!o.json) printf("%-8s %-8s %9s %9s %5s\n", "train", "eval", "accuracy", "loss", "weak");
    double t_all = lc_now_seconds();
    for (int i = 0; i < o.n_train; i++) {
        double secs = 0, loss = 0, acc = 0;
        lc_model *m = train(&o, o.train[i], &secs, &loss, &acc);
        if (o.json)
            printf("{\"bench\":\"duplication\",\"kind\":\"train\",\"train\":\"%s\",\"len\":%d,\"w\":%d,\"d\":%d,"
                   "\"heads\":%d,\"buckets\":%d,\"chunk\":%d,\"batch\":%d,\"steps\":%d,\"lr\":%g,\"weight_decay\":%g,\"warmup\":%d,\"rotations\":\"%s\","
                   "\"seed\":%llu,\"threads\":%d,\"params\":%zu,\"train_s\":%.1f,\"last_loss\":%.4f,"
                   "\"last_train_accuracy\":%.4f}\n",
                   name_of(o.train[i]), o.len, n, o.d, o.heads, o.buckets, o.chunk, o.batch, o.steps, (double)o.lr,
                   (double)o.wd, o.warmup, o.fixed ? "fixed" : "fresh", (unsigned long long)o.seed, lc_get_threads(), lc_model_num_params(m),
                   secs, loss, acc);
        fflush(stdout);
        for (int j = 0; j < o.n_eval; j++) {
            lc_model *e = build(&o, o.eval[j], o.eval_batch);
            if (e->ptab.total != m->ptab.total) {
                fprintf(stderr, "duplication: %s and %s models differ in parameter layout\n", name_of(o.train[i]),
                        name_of(o.eval[j]));
                return 1;
            }
            memcpy(e->params, m->params, e->ptab.total * sizeof(float));
            double t0 = lc_now_seconds();
            eval_result r = evaluate(&o, e);
            double es = lc_now_seconds() - t0;
            if (o.json)
                printf("{\"bench\":\"duplication\",\"kind\":\"eval\",\"train\":\"%s\",\"eval\":\"%s\",\"len\":%d,"
                       "\"w\":%d,\"buckets\":%d,\"chunk\":%d,\"steps\":%d,\"sequences\":%d,\"scored\":%ld,"
                       "\"accuracy\":%.5f,\"loss\":%.4f,\"weak_positions\":%d,\"eval_s\":%.1f}\n",
                       name_of(o.train[i]), name_of(o.eval[j]), o.len, n, o.buckets, o.chunk, o.steps, o.eval_seqs,
                       r.scored, r.accuracy, r.loss, r.weak_positions, es);
            else
                printf("%-8s %-8s %8.2f%% %9.4f %5d\n", name_of(o.train[i]), name_of(o.eval[j]), 100 * r.accuracy, r.loss,
                       r.weak_positions);
            fflush(stdout);
            lc_model_free(e);
        }
        lc_model_free(m);
    }
    fprintf(stderr, "duplication: total %.0f s\n", lc_now_seconds() - t_all);
    return 0;
}
