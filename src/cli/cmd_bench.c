/* `longctx bench`: benchmarks printed as JSON lines. `bench train` times full training steps
 * (forward, backward, AdamW) of a model shape on random bytes: medians of repeated steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_flags.h"
#include "core/rng.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Floating-point operations of one training step (forward + backward = 3x forward) in the matrix
 * products of the linear layers and of attention (causal: half the score matrix). */
static void step_flops(const lc_config *c, int B, double *linear, double *attention) {
    double N = (double)B * c->seq_len, C = c->d_model, F = c->d_ff, T = c->seq_len;
    double per_token = c->n_layer * (4 * C * C + 2 * C * F) + 256.0 * C;
    *linear = 6.0 * N * per_token;
    *attention = 3.0 * c->n_layer * B * (2.0 * 2.0 * T * T * C / 2.0);
}

static int bench_train(int argc, char **argv) {
    int batch = 16, steps = 10, warmup = 2, threads = 0, json = 0;
    lc_model_flags mf;
    lc_model_flags_init(&mf);
    lc_opt opts[32] = {
        {"--batch", OPT_INT, &batch, 1, 4096, "sequences per step (default 16)", 0},
        {"--steps", OPT_INT, &steps, 1, 100000, "timed steps (default 10)", 0},
        {"--warmup", OPT_INT, &warmup, 0, 100000, "untimed steps first (default 2)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "JSON lines only", 0},
    };
    int n = lc_model_flags_add(&mf, opts, 5);
    int rc = lc_parse_opts("bench train", "[options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    lc_config cfg;
    if ((rc = lc_model_flags_apply(&mf, opts, n, "bench train", &cfg)) >= 0) return rc;
    lc_set_threads(threads);
    lc_model *m;
    lc_status st = lc_model_create(&cfg, batch, 1, &m);
    if (st) return lc_cli_fail(st);
    lc_train_options o;
    lc_train_options_default(&o);
    o.batch = batch;
    o.steps = warmup + steps;
    o.eval_every = 0;
    o.warmup = 1;
    size_t nbytes = (size_t)batch * (size_t)(cfg.seq_len + 1) * (size_t)(warmup + steps + 1) + 1;
    lc_corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    corpus.bytes = malloc(nbytes);
    if (!corpus.bytes) { lc_model_free(m); return lc_cli_fail(LC_ERR_NOMEM); }
    lc_rng rng;
    lc_rng_seed(&rng, 7);
    for (size_t i = 0; i < nbytes; i++) corpus.bytes[i] = (uint8_t)(lc_rng_next(&rng) >> 56);
    corpus.size = nbytes;
    corpus.end[LC_PART_TRAIN] = corpus.end[LC_PART_ALL] = nbytes;
    double *ms = calloc((size_t)steps, sizeof *ms);
    for (int s = 0; s < warmup + steps && !st; s++) {
        o.stop_after = 1;
        double t0 = lc_now_seconds();
        st = lc_train(m, &corpus, &o, NULL, NULL);
        if (s >= warmup) ms[s - warmup] = 1e3 * (lc_now_seconds() - t0);
    }
    if (!st) {
        qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
        double med = ms[steps / 2], lin, att;
        step_flops(&cfg, batch, &lin, &att);
        double tok_s = (double)batch * cfg.seq_len / (med / 1e3);
        printf("{\"bench\":\"train\",\"impl\":\"longctx\",\"gemm\":\"%s\",\"threads\":%d,\"layers\":%d,\"dim\":%d,"
               "\"heads\":%d,\"ffn\":%d,\"seg_len\":%d,\"batch\":%d,\"params\":%zu,\"ms_per_step_median\":%.3f,"
               "\"tokens_per_s\":%.1f,\"step_gflops\":%.2f}\n",
               lc_gemm_backend(), lc_get_threads(), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff, cfg.seq_len, batch,
               lc_model_num_params(m), med, tok_s, (lin + att) / (med / 1e3) / 1e9);
        (void)json;
    }
    free(ms);
    free(corpus.bytes);
    lc_model_free(m);
    return st ? lc_cli_fail(st) : LC_EXIT_OK;
}

int lc_cmd_bench(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "train") == 0) return bench_train(argc - 1, argv + 1);
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        puts("usage: longctx bench train [options]   training tokens/s of a model shape (JSON lines)");
        return LC_EXIT_OK;
    }
    lc_cli_error("bench: expected a benchmark name: train (see longctx bench --help)");
    return LC_EXIT_USAGE;
}
