/* Benchmark of an attention kind (full, or window: sliding window with per-head dilation), kept for what
 * `longctx bench attn` (src/cli/cmd_bench_attn.c: any spec string) does not do: relative positions
 * (--rel), the full kind's same_length window (--window) and GFLOP/s. Forward and backward time (median
 * of repetitions), achieved GFLOP/s, and memory per sequence length. Each length runs in a fresh child process (fork) so
 * its max RSS is its own. One JSON line per length on stdout:
 *   {"kind":"full","len":T,...,"rel":0|1,"window":W,"fwd_ms":..,"bwd_ms":..,"fwd_gflops":..,"bwd_gflops":..,
 *    "peak_bytes":..,"maxrss_bytes":..,"bytes_per_token":..}
 * peak_bytes counts what attention itself needs: q, k, v, out, lse, dout, dq, dk, dv, with --rel 1 also r, u, v
 * and their gradients, and the workspace.
 * FLOPs: 4*pairs*D*H*B for the forward, pairs = the visible (query, key) pairs (T*S; T*T/2 when causal;
 * sum over t of min(t+1, W) with a window W < T), 6*pairs*D*H*B with relative positions (the position
 * products counted like the content ones); 2.5 times that for the backward.
 * --rel 1: Transformer-XL relative positions (needs causal); --window W: query t sees the last W keys.
 * --kind window --w W --dilation d0,d1,...: the window kind (W keys per side, per-head dilations, repeated
 * cyclically over the heads; default all 1); its pairs are counted exactly, and its JSON line adds "w" and
 * "dilation".
 * usage: bench_attn [--kind full|window] [--len 1024,4096,16384] [--heads 8] [--head-dim 64] [--batch 1]
 *                   [--causal 0|1] [--rel 0|1] [--window W] [--w W] [--dilation d0,d1,..] [--threads N]
 *                   [--reps N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/attn.h"
#include "attn/window.h"
#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "core/timer.h"

#define MAX_LENS 32

typedef struct {
    int lens[MAX_LENS], n_lens;
    int heads, head_dim, batch, causal, rel, window, threads, reps;
    int is_window, w, dilation[MAX_LENS], n_dilation; /* --kind window */
} bench_options;

static void usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "bench_attn: error: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(2);
}

static int parse_positive(const char *flag, const char *text, int allow_zero) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < (allow_zero ? 0 : 1) || v > 1 << 24) usage_error("bad value for", flag);
    return (int)v;
}

static bench_options parse_options(int argc, char **argv) {
    bench_options o = {{1024, 4096, 16384}, 3, 8, 64, 1, 1, 0, 0, 0, 3, 0, 256, {1}, 1};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (i + 1 >= argc) usage_error("missing value after", flag);
        const char *value = argv[++i];
        if (strcmp(flag, "--len") == 0) {
            o.n_lens = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", value);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (o.n_lens == MAX_LENS) usage_error("too many lengths in", flag);
                o.lens[o.n_lens++] = parse_positive(flag, tok, 0);
            }
            if (o.n_lens == 0) usage_error("no lengths in", flag);
        } else if (strcmp(flag, "--kind") == 0) {
            if (strcmp(value, "full") == 0) o.is_window = 0;
            else if (strcmp(value, "window") == 0) o.is_window = 1;
            else usage_error("--kind takes full or window, not", value);
        } else if (strcmp(flag, "--w") == 0) {
            o.w = parse_positive(flag, value, 0);
        } else if (strcmp(flag, "--dilation") == 0) {
            o.n_dilation = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", value);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (o.n_dilation == MAX_LENS) usage_error("too many dilations in", flag);
                o.dilation[o.n_dilation++] = parse_positive(flag, tok, 0);
            }
            if (o.n_dilation == 0) usage_error("no dilations in", flag);
        } else if (strcmp(flag, "--heads") == 0) {
            o.heads = parse_positive(flag, value, 0);
        } else if (strcmp(flag, "--head-dim") == 0) {
            o.head_dim = parse_positive(flag, value, 0);
        } else if (strcmp(flag, "--batch") == 0) {
            o.batch = parse_positive(flag, value, 0);
        } else if (strcmp(flag, "--causal") == 0) {
            o.causal = parse_positive(flag, value, 1);
            if (o.causal > 1) usage_error("--causal takes 0 or 1", NULL);
        } else if (strcmp(flag, "--rel") == 0) {
            o.rel = parse_positive(flag, value, 1);
            if (o.rel > 1) usage_error("--rel takes 0 or 1", NULL);
        } else if (strcmp(flag, "--window") == 0) {
            o.window = parse_positive(flag, value, 1);
        } else if (strcmp(flag, "--threads") == 0) {
            o.threads = parse_positive(flag, value, 1);
        } else if (strcmp(flag, "--reps") == 0) {
            o.reps = parse_positive(flag, value, 0);
        } else {
            usage_error("unknown flag", flag);
        }
    }
    if ((o.rel || o.window) && !o.causal) usage_error("--rel and --window need --causal 1", NULL);
    if (o.is_window && (o.rel || o.window)) usage_error("--kind window takes --w and --dilation, not --rel or --window", NULL);
    return o;
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float *alloc_floats(size_t n, size_t *total_bytes) {
    float *p = lc_alloc_aligned(n * sizeof(float));
    if (!p) {
        fprintf(stderr, "bench_attn: error: out of memory allocating %zu floats\n", n);
        exit(1);
    }
    *total_bytes += n * sizeof(float);
    return p;
}

/* Runs one length in the current (child) process and prints its JSON line. */
static void bench_length(const bench_options *o, int len) {
    lc_threads_use(o->threads);
    lc_attn_shape s = {o->batch, o->heads, len, 0, o->head_dim, o->causal,
                       (float)(1.0 / sqrt((double)o->head_dim)), o->window, o->rel};
    s.threads = lc_threads_current(); /* the compute plan: the workspace is sized for these threads */
    const size_t n = (size_t)s.B * s.T * s.H * s.D; /* M = 0: S = T */
    const long st = (long)s.H * s.D, sb = (long)s.T * st;
    size_t bytes = 0;
    float *q = alloc_floats(n, &bytes), *k = alloc_floats(n, &bytes), *v = alloc_floats(n, &bytes);
    float *out = alloc_floats(n, &bytes), *dout = alloc_floats(n, &bytes);
    float *dq = alloc_floats(n, &bytes), *dk = alloc_floats(n, &bytes), *dv = alloc_floats(n, &bytes);
    float *lse = alloc_floats((size_t)s.B * s.H * s.T, &bytes);
    const size_t n_r = o->rel ? (size_t)s.T * s.H * s.D : 0, n_uv = o->rel ? (size_t)s.H * s.D : 0;
    float *rpos = NULL, *u = NULL, *vb = NULL, *dr = NULL, *du = NULL, *dvb = NULL;
    if (o->rel) {
        rpos = alloc_floats(n_r, &bytes), dr = alloc_floats(n_r, &bytes);
        u = alloc_floats(n_uv, &bytes), vb = alloc_floats(n_uv, &bytes);
        du = alloc_floats(n_uv, &bytes), dvb = alloc_floats(n_uv, &bytes);
    }
    const lc_attn_kind *kind = o->is_window ? &lc_attn_window : &lc_attn_full;
    lc_attn_window_opts wopts;
    memset(&wopts, 0, sizeof wopts);
    wopts.w = o->w;
    for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) wopts.dilation[h] = o->dilation[h % o->n_dilation];
    const void *opts = o->is_window ? (const void *)&wopts : NULL;
    const size_t work_floats = kind->workspace_floats(&s, opts);
    float *work = alloc_floats(work_floats, &bytes);

    lc_rng rng;
    lc_rng_seed(&rng, 42);
    for (size_t i = 0; i < n; i++)
        q[i] = lc_rng_normal(&rng), k[i] = lc_rng_normal(&rng), v[i] = lc_rng_normal(&rng),
        dout[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < n_r; i++) rpos[i] = lc_rng_normal(&rng);
    for (size_t i = 0; i < n_uv; i++) u[i] = 0.5f * lc_rng_normal(&rng), vb[i] = 0.5f * lc_rng_normal(&rng);
    const lc_attn_relpos rel = {rpos, u, vb, dr, du, dvb};
    lc_attn_tensors t = {.q = {q, sb, st}, .k = {k, sb, st}, .v = {v, sb, st}, .out = {out, sb, st},
                         .dout = {dout, sb, st}, .dq = {dq, sb, st}, .dk = {dk, sb, st}, .dv = {dv, sb, st},
                         .lse = lse, .rel = o->rel ? &rel : NULL};

    double fwd[64], bwd[64];
    const int reps = o->reps < 64 ? o->reps : 64;
    for (int r = 0; r < reps; r++) {
        double t0 = lc_now_seconds();
        kind->forward(&s, opts, &t, work);
        double t1 = lc_now_seconds();
        kind->backward(&s, opts, &t, work);
        double t2 = lc_now_seconds();
        fwd[r] = t1 - t0, bwd[r] = t2 - t1;
    }
    const double fwd_s = median(fwd, reps), bwd_s = median(bwd, reps);
    double pairs = (double)s.T * s.T * (s.causal ? 0.5 : 1.0);
    if (s.causal && s.window > 0 && s.window < s.T) { /* sum over t of min(t + 1, W) */
        const double W = s.window;
        pairs = W * (W + 1) / 2 + ((double)s.T - W) * W;
    }
    if (o->is_window) { /* exactly: visible keys of every query, per head, averaged over the heads */
        pairs = 0;
        for (int h = 0; h < s.H; h++)
            for (long p = 0; p < s.T; p++) {
                const long d = wopts.dilation[h], before = p / d < o->w ? p / d : o->w;
                const long after = (s.T - 1 - p) / d < o->w ? (s.T - 1 - p) / d : o->w;
                pairs += (double)(1 + before + (s.causal ? 0 : after)) / s.H;
            }
    }
    const double fwd_flops = (o->rel ? 6.0 : 4.0) * pairs * s.D * s.H * s.B, bwd_flops = 2.5 * fwd_flops;
    double checksum = 0; /* keeps the work observable */
    for (size_t i = 0; i < n; i += 97) checksum += out[i] + dq[i] + dk[i] + dv[i];

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char wdesc[600] = "";
    if (o->is_window) {
        int at = snprintf(wdesc, sizeof wdesc, ",\"w\":%d,\"dilation\":[", o->w);
        for (int h = 0; h < s.H && at < (int)sizeof wdesc - 16; h++)
            at += snprintf(wdesc + at, sizeof wdesc - (size_t)at, "%s%d", h ? "," : "", wopts.dilation[h]);
        snprintf(wdesc + at, sizeof wdesc - (size_t)at, "]");
    }
    printf("{\"kind\":\"%s\",\"len\":%d,\"batch\":%d,\"heads\":%d,\"head_dim\":%d,\"causal\":%d,\"rel\":%d,"
           "\"window\":%d,\"threads\":%d,\"reps\":%d,\"fwd_ms\":%.2f,\"bwd_ms\":%.2f,\"fwd_gflops\":%.1f,\"bwd_gflops\":%.1f,\"peak_bytes\":%zu,"
           "\"maxrss_bytes\":%ld,\"bytes_per_token\":%.1f,\"checksum\":%.6g%s}\n",
           kind->name, len, s.B, s.H, s.D, s.causal, o->rel, s.window, lc_threads_current(), reps, 1e3 * fwd_s, 1e3 * bwd_s, fwd_flops / fwd_s / 1e9,
           bwd_flops / bwd_s / 1e9, bytes, ru.ru_maxrss * 1024L, (double)bytes / ((double)s.B * s.T), checksum, wdesc);
    fflush(stdout);
    lc_free(q), lc_free(k), lc_free(v), lc_free(out), lc_free(dout);
    lc_free(dq), lc_free(dk), lc_free(dv), lc_free(lse), lc_free(work);
    if (o->rel) lc_free(rpos), lc_free(u), lc_free(vb), lc_free(dr), lc_free(du), lc_free(dvb);
}

int main(int argc, char **argv) {
    const bench_options o = parse_options(argc, argv);
    fflush(stdout);
    /* No OpenMP before fork: each child starts its own thread pool. */
    for (int i = 0; i < o.n_lens; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("bench_attn: error: fork");
            return 1;
        }
        if (pid == 0) {
            bench_length(&o, o.lens[i]);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "bench_attn: error: length %d failed\n", o.lens[i]);
            return 1;
        }
    }
    return 0;
}
