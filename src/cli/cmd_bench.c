/* `longctx bench`: benchmarks, printed as a table, or as JSON lines (one per measurement) with --json.
 * `bench train` times full training steps
 * (forward, backward, AdamW) of a model shape on random bytes: medians of repeated steps.
 * `bench xl-eval` compares Transformer-XL generation with state reuse against a vanilla model that
 * recomputes its window for every byte. `bench attn` (cmd_bench_attn.c) times one attention spec against
 * sequence length; `bench hibert` (cmd_bench_hibert.c) HIBERT's sentence encoder against the LM; `bench gemm`
 * (cmd_bench_gemm.c) fp32 against bf16 matrix products at a model's linear-layer shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_flags.h"
#include "core/rng.h"
#include "core/status.h"
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

/* What `bench train` and `bench xl-eval` share: after the command's own n flags in opts, --threads, --json
 * and the model-shape flags (those named in `unused`, NULL-terminated, refused with `why`); parses them,
 * applies the shape to cfg and sets the thread count. Returns -1 to go on, else the exit code. */
static int bench_setup(const char *cmd, lc_opt *opts, int n, int argc, char **argv, lc_config *cfg, int *json,
                       const char *const *unused, const char *why) {
    int threads = 0;
    lc_model_flags mf;
    lc_model_flags_init(&mf);
    opts[n++] = (lc_opt){"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0};
    opts[n++] = (lc_opt){"--json", OPT_FLAG, json, 0, 0, "one JSON line per measurement instead of the table", 0};
    n = lc_model_flags_add(&mf, opts, n);
    for (int i = 0; unused && unused[i]; i++) lc_opt_refuse(opts, n, unused[i], why);
    int rc = lc_parse_opts(cmd, "[options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if ((rc = lc_model_flags_apply(&mf, opts, n, cmd, cfg)) >= 0) return rc;
    lc_threads_set_default(threads);
    return -1;
}

static int bench_train(int argc, char **argv) {
    int batch = 16, steps = 10, warmup = 2, json = 0;
    lc_opt opts[8 + LC_MODEL_FLAG_COUNT] = {
        {"--batch", OPT_INT, &batch, 1, 4096, "sequences per step (default 16)", 0},
        {"--steps", OPT_INT, &steps, 1, 100000, "timed steps (default 10)", 0},
        {"--warmup", OPT_INT, &warmup, 0, 100000, "untimed steps first (default 2)", 0},
    };
    lc_config cfg;
    int rc = bench_setup("bench train", opts, 3, argc, argv, &cfg, &json, NULL, NULL);
    if (rc >= 0) return rc;
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
    /* wall and CPU (all threads) milliseconds of each timed step: spinning threads show as CPU > wall x 1 */
    double *ms = calloc(2 * (size_t)steps, sizeof *ms), *cpu_ms = ms + steps, total = 0;
    for (int s = 0; s < warmup + steps && !st; s++) {
        o.stop_after = 1;
        if (s == warmup) lc_gemm_profile(1);
        double t0 = lc_now_seconds(), c0 = lc_cpu_seconds();
        st = lc_train(m, &corpus, &o, NULL, NULL);
        if (s >= warmup) {
            total += ms[s - warmup] = 1e3 * (lc_now_seconds() - t0);
            cpu_ms[s - warmup] = 1e3 * (lc_cpu_seconds() - c0);
        }
    }
    double gemm_flops, gemm_s;
    lc_gemm_profile_totals(&gemm_flops, &gemm_s);
    lc_gemm_profile(0);
    if (!st) {
        qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
        qsort(cpu_ms, (size_t)steps, sizeof *cpu_ms, cmp_double);
        double med = ms[steps / 2], cpu_med = cpu_ms[steps / 2], lin, att;
        step_flops(&cfg, batch, &lin, &att);
        double tok_s = (double)batch * cfg.seq_len / (med / 1e3);
        const double step_gflops = (lin + att) / (med / 1e3) / 1e9, gemm_gflops = gemm_flops / gemm_s / 1e9;
        if (!json) {
            printf("bench train: %s, %d layers, dim %d, %d heads, ffn %d, attn %s%s%s | batch %d x %d | %.2fM params | "
                   "gemm %s%s | %d thread%s | median of %d steps\n",
                   cfg.model == LC_MODEL_XL ? "xl" : "vanilla", cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff,
                   cfg.attn[0] ? cfg.attn : "full", cfg.reversible ? ", reversible" : "", cfg.ffn_chunk ? ", ffn chunks" : "",
                   batch, cfg.seq_len, (double)lc_model_num_params(m) / 1e6, lc_gemm_backend(), lc_precision_note(cfg.precision),
                   lc_threads_default(), lc_plural(lc_threads_default()), steps);
            printf("%11s %11s %11s %12s %12s %11s %10s %14s\n", "ms/step", "tokens/s", "CPU ms/step", "step GFLOP/s",
                   "gemm GFLOP/s", "gemm share", "params MB", "activations MB");
            printf("%11.2f %11.0f %11.2f %12.2f %12.2f %11.3f %10.1f %14.1f\n", med, tok_s, cpu_med, step_gflops, gemm_gflops,
                   gemm_s * 1e3 / total, (double)lc_model_param_bytes(m) / 1e6, (double)lc_model_activation_bytes(m) / 1e6);
        } else {
            printf("{\"bench\":\"train\",\"impl\":\"longctx\",\"model\":\"%s\",\"gemm\":\"%s\",\"precision\":\"%s\",\"threads\":%d,\"layers\":%d,\"dim\":%d,"
                   "\"heads\":%d,\"ffn\":%d,\"seg_len\":%d,\"batch\":%d,\"params\":%zu,\"ms_per_step_median\":%.3f,"
                   "\"tokens_per_s\":%.1f,\"cpu_ms_per_step_median\":%.3f,\"step_gflops\":%.2f,\"gemm_gflops\":%.2f,\"gemm_time_share\":%.3f,"
                   "\"attn\":\"%s\",\"reversible\":%d,\"ffn_chunk\":%d,\"param_bytes\":%zu,\"activation_bytes\":%zu}\n",
                   cfg.model == LC_MODEL_XL ? "xl" : "vanilla", lc_gemm_backend(),
                   lc_precision_path(cfg.precision),
                   lc_threads_default(), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff, cfg.seq_len, batch,
                   lc_model_num_params(m), med, tok_s, cpu_med, step_gflops, gemm_gflops,
                   gemm_s * 1e3 / total, cfg.attn[0] ? cfg.attn : "full", cfg.reversible, cfg.ffn_chunk,
                   lc_model_param_bytes(m), lc_model_activation_bytes(m));
        }
    }
    free(ms);
    free(corpus.bytes);
    lc_model_free(m);
    return st ? lc_cli_fail(st) : LC_EXIT_OK;
}

/* Milliseconds per predicted byte at attention length L. Transformer-XL evaluates consecutive segments
 * of `seg` bytes, each attending to a memory of L - seg states (state reuse: per byte, one segment's
 * forward divided by its length); it also generates byte by byte against a memory of L - 1 states
 * (gen_ms). The vanilla model re-reads a whole window of L bytes for every predicted byte (timed on
 * `reps` windows, median). Same shape, random weights: only speed is measured. */
typedef struct {
    double xl_ms, gen_ms, van_ms;
} xl_eval_times;

static lc_status time_xl(const lc_config *shape, int L, int seg, int segments, int tokens, const int *tok,
                         xl_eval_times *out) {
    lc_config xc = *shape;
    xc.model = LC_MODEL_XL, xc.seq_len = seg, xc.mem_len = L - seg, xc.same_length = 0;
    lc_model *m = NULL;
    lc_status st = lc_model_create(&xc, 1, 3, &m);
    int fill = (L - seg + seg - 1) / seg; /* segments that fill the memory before timing */
    for (int i = 0; !st && i < fill; i++) st = lc_model_forward(m, tok + (size_t)i * seg, NULL, 1, seg, 0, NULL, NULL);
    double t0 = lc_now_seconds();
    for (int i = 0; !st && i < segments; i++)
        st = lc_model_forward(m, tok + (size_t)(fill + i) * seg, NULL, 1, seg, 0, NULL, NULL);
    out->xl_ms = 1e3 * (lc_now_seconds() - t0) / ((double)segments * seg);
    if (!st) st = lc_model_resize(m, 1, seg, L - 1); /* generation: memory of L - 1, filled by segments */
    for (int i = 0; !st && i * seg < L; i++) st = lc_model_forward(m, tok + (size_t)i * seg, NULL, 1, seg, 0, NULL, NULL);
    t0 = lc_now_seconds();
    for (int i = 0; !st && i < tokens; i++) st = lc_model_forward(m, tok + 2 * L + i, NULL, 1, 1, 0, NULL, NULL);
    out->gen_ms = 1e3 * (lc_now_seconds() - t0) / tokens;
    lc_model_free(m);
    return st;
}

static lc_status time_vanilla(const lc_config *shape, int L, int reps, const int *tok, double *ms) {
    lc_config vc = *shape;
    vc.model = LC_MODEL_VANILLA, vc.seq_len = L, vc.mem_len = 0, vc.same_length = 0, vc.clamp_len = 0;
    lc_model *m = NULL;
    lc_status st = lc_model_create(&vc, 1, 3, &m);
    double *v = calloc((size_t)reps, sizeof *v);
    for (int r = 0; !st && r < reps; r++) {
        double t0 = lc_now_seconds();
        st = lc_model_forward(m, tok + r, NULL, 1, L, 0, NULL, NULL);
        v[r] = 1e3 * (lc_now_seconds() - t0);
    }
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    *ms = v[reps / 2];
    free(v);
    lc_model_free(m);
    return st;
}

static lc_status xl_eval_point(const lc_config *shape, int L, int seg, int segments, int tokens, int reps,
                               xl_eval_times *out) {
    size_t n = (size_t)L * 3 + (size_t)(segments + 2) * seg + (size_t)tokens + (size_t)reps;
    int *tok = malloc(sizeof(int) * n);
    if (!tok) return lc_fail(LC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) tok[i] = (int)((i * 131 + 7) % 256);
    lc_status st = time_xl(shape, L, seg, segments, tokens, tok, out);
    if (!st) st = time_vanilla(shape, L, reps, tok, &out->van_ms);
    free(tok);
    return st;
}

static int bench_xl_eval(int argc, char **argv) {
    const char *lens = "800,1800,2800,3800";
    int tokens = 64, reps = 3, seg = 0, segments = 8, json = 0;
    /* both models are built from the shape: these describe one of them, or training */
    static const char *const unused[] = {"--model", "--mem-len", "--same-length", "--dropout", "--objective", NULL};
    lc_opt opts[8 + LC_MODEL_FLAG_COUNT] = {
        {"--attn-len", OPT_STR, &lens, 0, 0, "attention lengths, comma separated (default 800,1800,2800,3800)", 0},
        {"--eval-seg", OPT_INT, &seg, 1, 1 << 20, "XL evaluation segment length (default: the model's --seg-len)", 0},
        {"--segments", OPT_INT, &segments, 1, 1 << 20, "XL segments timed per length (default 8)", 0},
        {"--tokens", OPT_INT, &tokens, 1, 1 << 20, "bytes generated one at a time by XL per length (default 64)", 0},
        {"--reps", OPT_INT, &reps, 1, 1000, "vanilla windows timed per length (median; default 3)", 0},
    };
    lc_config cfg;
    int rc = bench_setup("bench xl-eval", opts, 5, argc, argv, &cfg, &json, unused,
                         "does not apply to bench xl-eval (it times an xl model, memory --attn-len minus --eval-seg, "
                         "against a vanilla one, forward only)");
    if (rc >= 0) return rc;
    if (seg == 0) seg = cfg.seq_len;
    for (const char *p = lens; *p;) { /* every length checked before any work */
        char *end;
        long L = strtol(p, &end, 10);
        if (end == p || L < 2 || L > 1 << 20 || (*end && *end != ',')) {
            lc_cli_error("bench xl-eval: --attn-len must be a comma-separated list of lengths >= 2, got '%s'", lens);
            return LC_EXIT_USAGE;
        }
        if (L <= seg) {
            lc_cli_error("bench xl-eval: --attn-len %ld must exceed --eval-seg %d", L, seg);
            return LC_EXIT_USAGE;
        }
        p = *end ? end + 1 : end;
    }
    if (!json) {
        printf("bench xl-eval: %d layers, dim %d, %d heads, ffn %d, attn %s | xl segments of %d | %d thread%s | "
               "ms per predicted byte\n", cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff, cfg.attn[0] ? cfg.attn : "full",
               seg, lc_threads_default(), lc_plural(lc_threads_default()));
        printf("%9s %10s %12s %8s %13s %10s\n", "attn len", "xl eval", "vanilla", "speedup", "xl generate", "speedup");
        fflush(stdout);
    }
    for (const char *p = lens; *p;) {
        char *end;
        const long L = strtol(p, &end, 10);
        xl_eval_times tm = {0, 0, 0};
        lc_status st = xl_eval_point(&cfg, (int)L, seg, segments, tokens, reps, &tm);
        if (st) return lc_cli_fail(st);
        if (!json) {
            printf("%9ld %10.4f %12.3f %7.1fx %13.4f %9.1fx\n", L, tm.xl_ms, tm.van_ms, tm.van_ms / tm.xl_ms, tm.gen_ms,
                   tm.van_ms / tm.gen_ms);
        } else {
            printf("{\"attn_len\":%ld,\"xl_ms_per_token\":%.4f,\"vanilla_ms_per_token\":%.3f,\"speedup\":%.1f,"
                   "\"xl_eval_seg\":%d,\"xl_generate_ms_per_token\":%.4f,\"generate_speedup\":%.1f,"
                   "\"layers\":%d,\"dim\":%d,\"threads\":%d}\n",
                   L, tm.xl_ms, tm.van_ms, tm.van_ms / tm.xl_ms, seg, tm.gen_ms, tm.van_ms / tm.gen_ms, cfg.n_layer,
                   cfg.d_model, lc_threads_default());
        }
        fflush(stdout);
        p = *end ? end + 1 : end;
    }
    return LC_EXIT_OK;
}

int lc_cmd_bench(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "train") == 0) return bench_train(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "xl-eval") == 0) return bench_xl_eval(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "attn") == 0) return lc_cmd_bench_attn(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "hibert") == 0) return lc_cmd_bench_hibert(argc - 1, argv + 1);
    if (argc >= 1 && strcmp(argv[0], "gemm") == 0) return lc_cmd_bench_gemm(argc - 1, argv + 1);
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        puts("usage: longctx bench train [options]     training tokens/s of a model shape\n"
             "       longctx bench xl-eval [options]   XL state reuse vs vanilla recomputation, ms per byte\n"
             "       longctx bench attn [options]      time and memory of an attention kind against length\n"
             "       longctx bench hibert [options]    HIBERT sentence-encoder bytes/s next to the LM's tokens/s\n"
             "       longctx bench gemm [options]      fp32 vs bf16 matrix products at a model's linear-layer shapes\n\n"
             "Each prints a table; --json prints one JSON line per measurement instead.\n"
             "`longctx bench NAME --help` lists a benchmark's options.");
        return LC_EXIT_OK;
    }
    if (argc >= 1 && argv[0][0] != '-')
        lc_cli_error("bench: unknown benchmark '%s' (benchmarks: train, xl-eval, attn, hibert, gemm; see longctx bench --help)",
                     argv[0]);
    else lc_cli_error("bench: expected a benchmark name: train, xl-eval, attn, hibert or gemm (see longctx bench --help)");
    return LC_EXIT_USAGE;
}
