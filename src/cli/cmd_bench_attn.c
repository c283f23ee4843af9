/* `longctx bench attn`: forward and backward time and memory of one attention spec against sequence
 * length. The spec (src/attn/spec.h, e.g. `window:w=256`, `block:b=128`, `2xfull+strided:s=64`) is one
 * layer of H heads; each length runs the layer's head groups through their kinds' table rows on random
 * q, k, v and dout (B sequences, no memory rows), as the model does: views offset by h0*D per group, each
 * group its own slice of lse. Medians of --reps repetitions.
 *
 * Each length runs in a fresh child process (fork), so its max RSS is its own and a large length cannot
 * leave memory behind for the next one. The parent parses and checks everything first (spec, lengths,
 * the kinds' own checks at every length): usage errors are one line and exit 2 before any work.
 *
 * peak_bytes counts what the attention itself needs, all allocated and touched before timing:
 *   q, k, v, out, dout, dq, dk, dv   B*T*H*D floats each
 *   lse                              B*H*T floats
 *   the workspace                    lc_attn_layer_workspace() floats at the thread count in use
 *   with global=G                    qg, kg, vg, dqg, dkg, dvg (B*T*H*D each), the global rows' lse
 *                                    (B*H*G) and their positions
 *   kinds with parameters / state    params, their gradients, state
 * It leaves out the process itself (code, OpenMP stacks): maxrss_bytes, measured in the child, has both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/spec.h"
#include "cli/cli.h"
#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "core/timer.h"

#define BA_MAX_LENS 64
#define BA_MAX_REPS 1000

typedef struct {
    char spec[LC_ATTN_SPEC_MAX + 64]; /* as run (with --window applied) */
    lc_attn_layer layer;
    int lens[BA_MAX_LENS], n_lens;
    int heads, head_dim, batch, causal, threads, reps, json;
    double max_seconds;
} bench_attn_options;

/* One length's buffers; every one counted in `bytes`. */
typedef struct {
    size_t bytes;
    float *q, *k, *v, *out, *dout, *dq, *dk, *dv, *lse, *work;
    float *qg, *kg, *vg, *dqg, *dkg, *dvg, *lse_g; /* global tokens (NULL without) */
    int *global_pos;
    float *params[LC_ATTN_MAX_GROUPS], *dparams[LC_ATTN_MAX_GROUPS], *state[LC_ATTN_MAX_GROUPS];
} bench_buffers;

static void *take(bench_buffers *b, size_t bytes) {
    void *p = lc_alloc_aligned(bytes); /* zeroed: every page is touched before timing */
    if (!p) {
        lc_cli_error("bench attn: out of memory allocating %zu bytes (%zu allocated so far)", bytes, b->bytes);
        fflush(stderr);
        _exit(LC_EXIT_RUNTIME);
    }
    b->bytes += bytes;
    return p;
}

static float *take_floats(bench_buffers *b, size_t n) { return take(b, n * sizeof(float)); }

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --window W: w=W appended to every head group whose kind takes w (a later w= wins over the spec's). */
static int apply_window(const char *spec, int window, int H, char *out, size_t cap) {
    int accepted = 0;
    size_t at = 0;
    out[0] = 0;
    for (const char *p = spec;;) {
        const char *plus = strchr(p, '+');
        const size_t n = plus ? (size_t)(plus - p) : strlen(p);
        char group[LC_ATTN_SPEC_MAX];
        snprintf(group, sizeof group, "%.*s", (int)n, p);
        char name[LC_ATTN_SPEC_MAX];
        const char *kind = group;
        const char *x = strchr(group, 'x');
        if (x && x > group && strspn(group, "0123456789") == (size_t)(x - group)) kind = x + 1;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(kind, ":"), kind);
        const lc_attn_kind *k = lc_attn_kind_by_name(name);
        int takes_w = 0;
        if (k && k->opts_set && k->opts_size <= LC_ATTN_OPTS_BYTES) {
            _Alignas(16) unsigned char probe[LC_ATTN_OPTS_BYTES];
            char msg[256], value[32];
            snprintf(value, sizeof value, "%d", window);
            if (k->opts_init) k->opts_init(probe, H);
            takes_w = k->opts_set(probe, H, "w", value, msg, sizeof msg) == 0;
        }
        accepted += takes_w;
        char w_opt[40] = "";
        if (takes_w) snprintf(w_opt, sizeof w_opt, "%sw=%d", strchr(group, ':') ? "," : ":", window);
        at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s%s%s", p == spec ? "" : "+", group, w_opt);
        if (at >= cap) {
            lc_cli_error("bench attn: attention spec too long with --window");
            return -1;
        }
        if (!plus) break;
        p = plus + 1;
    }
    if (!accepted) {
        lc_cli_error("bench attn: --window %d: no kind in '%s' takes w=", window, spec);
        return -1;
    }
    return 0;
}

static int parse_lengths(const char *text, bench_attn_options *o) {
    o->n_lens = 0;
    for (const char *p = text;;) {
        char *end;
        const long L = strtol(p, &end, 10);
        if (end == p || L < 1 || L > (1L << 22) || (*end && *end != ',') || o->n_lens == BA_MAX_LENS) {
            lc_cli_error("bench attn: --len must be a comma-separated list of at most %d lengths in 1..%ld, got '%s'",
                         BA_MAX_LENS, 1L << 22, text);
            return -1;
        }
        o->lens[o->n_lens++] = (int)L;
        if (!*end) return 0;
        p = end + 1;
    }
}

static lc_attn_shape shape_for(const bench_attn_options *o, int len) {
    lc_attn_shape s = {o->batch, o->heads, len, 0, o->head_dim, o->causal,
                       (float)(1.0 / sqrt((double)o->head_dim)), 0, 0};
    s.threads = lc_threads_current();
    return s;
}

static lc_view view_at(float *p, const lc_attn_shape *s, int h0) {
    const long st = (long)s->H * s->D;
    const lc_view v = {p + (long)h0 * s->D, (long)s->T * st, st};
    return v;
}

static void fill_normal(float *p, size_t n, lc_rng *rng) {
    for (size_t i = 0; i < n; i++) p[i] = lc_rng_normal(rng);
}

/* Runs one length (in the child process) and prints its line. */
static void bench_length(const bench_attn_options *o, int len) {
    lc_threads_use(o->threads);
    const lc_attn_shape s = shape_for(o, len);
    lc_attn_layer planned = o->layer; /* length-dependent options (routing's clusters=auto) for this length */
    lc_attn_spec_plan(&planned, 1, s.D, len);
    const lc_attn_layer *layer = &planned;
    const size_t n = (size_t)s.B * s.T * s.H * s.D, rows = (size_t)s.B * s.H * s.T;
    bench_buffers b;
    memset(&b, 0, sizeof b);
    b.q = take_floats(&b, n), b.k = take_floats(&b, n), b.v = take_floats(&b, n);
    b.out = take_floats(&b, n), b.dout = take_floats(&b, n);
    b.dq = take_floats(&b, n), b.dk = take_floats(&b, n), b.dv = take_floats(&b, n);
    b.lse = take_floats(&b, rows);
    int most_global = 0; /* global tensors are the layer's; each group's global lse is its own slice */
    for (int g = 0; g < layer->n_groups; g++)
        most_global = layer->group[g].n_global > most_global ? layer->group[g].n_global : most_global;
    if (most_global) {
        b.qg = take_floats(&b, n), b.kg = take_floats(&b, n), b.vg = take_floats(&b, n);
        b.dqg = take_floats(&b, n), b.dkg = take_floats(&b, n), b.dvg = take_floats(&b, n);
        b.lse_g = take_floats(&b, (size_t)s.B * s.H * most_global);
        b.global_pos = take(&b, sizeof(int) * (size_t)most_global);
        for (int i = 0; i < most_global; i++) b.global_pos[i] = i;
    }
    const uint64_t seed = 0x5eed;
    for (int g = 0; g < layer->n_groups; g++) {
        const lc_attn_group *gr = &layer->group[g];
        const size_t np = gr->kind->param_floats ? gr->kind->param_floats(gr->opts, gr->heads, s.D, s.T) : 0;
        const size_t ns = gr->kind->state_floats ? gr->kind->state_floats(gr->opts, gr->heads, s.D) : 0;
        if (np) {
            b.params[g] = take_floats(&b, np), b.dparams[g] = take_floats(&b, np);
            if (gr->kind->param_init) gr->kind->param_init(b.params[g], gr->opts, gr->heads, s.D, s.T, seed + (uint64_t)g);
        }
        if (ns) {
            b.state[g] = take_floats(&b, ns);
            if (gr->kind->state_init) gr->kind->state_init(b.state[g], gr->opts, gr->heads, s.D, seed + (uint64_t)g);
        }
    }
    b.work = take_floats(&b, lc_attn_layer_workspace(layer, &s));

    lc_rng rng;
    lc_rng_seed(&rng, 42);
    fill_normal(b.q, n, &rng), fill_normal(b.k, n, &rng), fill_normal(b.v, n, &rng), fill_normal(b.dout, n, &rng);
    if (most_global) fill_normal(b.qg, n, &rng), fill_normal(b.kg, n, &rng), fill_normal(b.vg, n, &rng);

    lc_attn_tensors t[LC_ATTN_MAX_GROUPS];
    lc_attn_global glob[LC_ATTN_MAX_GROUPS];
    lc_attn_shape gs[LC_ATTN_MAX_GROUPS];
    for (int g = 0; g < layer->n_groups; g++) {
        const lc_attn_group *gr = &layer->group[g];
        const int h0 = gr->h0;
        gs[g] = lc_attn_group_shape(&s, gr);
        memset(&t[g], 0, sizeof t[g]);
        t[g].q = view_at(b.q, &s, h0), t[g].k = view_at(b.k, &s, h0), t[g].v = view_at(b.v, &s, h0);
        t[g].out = view_at(b.out, &s, h0), t[g].dout = view_at(b.dout, &s, h0);
        t[g].dq = view_at(b.dq, &s, h0), t[g].dk = view_at(b.dk, &s, h0), t[g].dv = view_at(b.dv, &s, h0);
        t[g].lse = b.lse + (size_t)s.B * h0 * s.T;
        t[g].params = b.params[g], t[g].dparams = b.dparams[g], t[g].state = b.state[g];
        t[g].seed = seed + (uint64_t)g, t[g].train = 1;
        if (gr->n_global) {
            memset(&glob[g], 0, sizeof glob[g]);
            glob[g].n = gr->n_global, glob[g].pos = b.global_pos;
            glob[g].qg = view_at(b.qg, &s, h0), glob[g].kg = view_at(b.kg, &s, h0), glob[g].vg = view_at(b.vg, &s, h0);
            glob[g].dqg = view_at(b.dqg, &s, h0), glob[g].dkg = view_at(b.dkg, &s, h0);
            glob[g].dvg = view_at(b.dvg, &s, h0);
            glob[g].lse = b.lse_g + (size_t)s.B * h0 * most_global;
            t[g].global = &glob[g];
        }
    }

    double fwd[BA_MAX_REPS], bwd[BA_MAX_REPS], spent = 0;
    int reps = 0;
    while (reps < o->reps && (reps == 0 || spent < o->max_seconds)) {
        const double t0 = lc_now_seconds();
        for (int g = 0; g < layer->n_groups; g++) layer->group[g].kind->forward(&gs[g], layer->group[g].opts, &t[g], b.work);
        const double t1 = lc_now_seconds();
        for (int g = 0; g < layer->n_groups; g++) layer->group[g].kind->backward(&gs[g], layer->group[g].opts, &t[g], b.work);
        const double t2 = lc_now_seconds();
        fwd[reps] = t1 - t0, bwd[reps] = t2 - t1, spent += t2 - t0;
        reps++;
    }
    const double fwd_ms = 1e3 * median(fwd, reps), bwd_ms = 1e3 * median(bwd, reps);
    const double tokens = (double)s.B * s.T;
    int finite = 1; /* a sample of the results, which also keeps the work observable */
    for (size_t i = 0; i < n; i += 61) finite &= isfinite(b.out[i] + b.dq[i] + b.dk[i] + b.dv[i]) != 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (o->json) {
        printf("{\"bench\":\"attn\",\"impl\":\"longctx\",\"kind\":\"");
        for (const char *c = o->spec; *c; c++) {
            if (*c == '"' || *c == '\\') putchar('\\');
            putchar(*c);
        }
        printf("\",\"len\":%d,\"batch\":%d,\"heads\":%d,\"head_dim\":%d,\"causal\":%d,\"threads\":%d,\"reps\":%d,"
               "\"fwd_ms\":%.3f,\"bwd_ms\":%.3f,\"us_per_token\":%.4f,\"peak_bytes\":%zu,\"bytes_per_token\":%.1f,"
               "\"maxrss_bytes\":%ld,\"finite\":%d}\n",
               len, s.B, s.H, s.D, s.causal, lc_threads_current(), reps, fwd_ms, bwd_ms, 1e3 * (fwd_ms + bwd_ms) / tokens,
               b.bytes, (double)b.bytes / tokens, ru.ru_maxrss * 1024L, finite);
    } else {
        printf("%9d %11.2f %11.2f %13.3f %11.1f %13.0f %11.1f %5d%s\n", len, fwd_ms, bwd_ms,
               1e3 * (fwd_ms + bwd_ms) / tokens, (double)b.bytes / 1e6, (double)b.bytes / tokens,
               (double)ru.ru_maxrss * 1024.0 / 1e6, reps, finite ? "" : "  (non-finite results!)");
    }
    fflush(stdout);
}

int lc_cmd_bench_attn(int argc, char **argv) {
    const char *kind = "full", *lens = "2048,8192,32768,65536";
    int window = 0, heads = 8, head_dim = 64, batch = 1, causal = 1, threads = 0, reps = 3, json = 0, max_seconds = 60,
        check_only = 0;
    lc_opt opts[] = {
        {"--kind", OPT_STR, &kind, 0, 0, "attention spec of one layer, e.g. window:w=256, block:b=128 (default full)", 0},
        {"--len", OPT_STR, &lens, 0, 0, "sequence lengths, comma separated (default 2048,8192,32768,65536)", 0},
        {"--window", OPT_INT, &window, 1, 1 << 24, "w=N for every head group whose kind takes w", 0},
        {"--heads", OPT_INT, &heads, 1, LC_ATTN_MAX_HEADS, "heads (default 8)", 0},
        {"--head-dim", OPT_INT, &head_dim, 1, 4096, "head dimension (default 64)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "sequences (default 1)", 0},
        {"--causal", OPT_INT, &causal, 0, 1, "1: causal (default), 0: bidirectional", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--reps", OPT_INT, &reps, 1, BA_MAX_REPS, "repetitions per length, median reported (default 3)", 0},
        {"--max-seconds", OPT_INT, &max_seconds, 1, 1 << 20,
         "stop repeating a length once its repetitions took this long (default 60)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "one JSON line per length", 0},
        {"--check", OPT_FLAG, &check_only, 0, 0, "check the spec at every length and exit (no timing)", 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("bench attn", "[options]", opts, n_opts, argc, argv);
    if (rc >= 0) return rc;

    static bench_attn_options o; /* the parsed layer is large */
    memset(&o, 0, sizeof o);
    o.heads = heads, o.head_dim = head_dim, o.batch = batch, o.causal = causal, o.threads = threads;
    o.reps = reps, o.json = json, o.max_seconds = max_seconds;
    if (strlen(kind) >= LC_ATTN_SPEC_MAX) {
        lc_cli_error("bench attn: --kind is longer than %d characters", LC_ATTN_SPEC_MAX - 1);
        return LC_EXIT_USAGE;
    }
    if (strchr(kind, ';')) {
        lc_cli_error("bench attn: --kind is the spec of one layer (no ';'), got '%s'", kind);
        return LC_EXIT_USAGE;
    }
    if (window) {
        if (apply_window(kind, window, heads, o.spec, sizeof o.spec)) return LC_EXIT_USAGE;
    } else {
        snprintf(o.spec, sizeof o.spec, "%s", kind);
    }
    char err[512];
    if (lc_attn_spec_parse(o.spec, 1, heads, &o.layer, err, sizeof err)) {
        lc_cli_error("bench attn: %s", err);
        return LC_EXIT_USAGE;
    }
    if (parse_lengths(lens, &o)) return LC_EXIT_USAGE;
    for (int i = 0; i < o.n_lens; i++) {
        const lc_attn_shape s = shape_for(&o, o.lens[i]);
        lc_attn_layer planned = o.layer;
        lc_attn_spec_plan(&planned, 1, s.D, o.lens[i]);
        if (lc_attn_layer_check(&planned, &s, err, sizeof err)) {
            lc_cli_error("bench attn: --len %d: %s", o.lens[i], err);
            return LC_EXIT_USAGE;
        }
    }
    if (check_only) return LC_EXIT_OK;
    if (!json) {
        printf("attention %s: batch %d, %d heads x %d, %s, median of up to %d repetitions\n", o.spec, batch, heads,
               head_dim, causal ? "causal" : "bidirectional", reps);
        printf("%9s %11s %11s %13s %11s %13s %11s %5s\n", "len", "fwd ms", "bwd ms", "us/token", "peak MB",
               "bytes/token", "maxrss MB", "reps");
    }
    fflush(stdout);
    /* No OpenMP in this process before fork: each child starts its own thread pool. */
    for (int i = 0; i < o.n_lens; i++) {
        const pid_t pid = fork();
        if (pid < 0) {
            lc_cli_error("bench attn: fork failed");
            return LC_EXIT_RUNTIME;
        }
        if (pid == 0) {
            bench_length(&o, o.lens[i]);
            _exit(LC_EXIT_OK);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                lc_cli_error("bench attn: length %d failed (signal %d)", o.lens[i], WTERMSIG(status));
            else if (WIFEXITED(status) && WEXITSTATUS(status) != LC_EXIT_RUNTIME)
                lc_cli_error("bench attn: length %d failed (exit %d)", o.lens[i], WEXITSTATUS(status));
            return LC_EXIT_RUNTIME;
        }
    }
    return LC_EXIT_OK;
}
