/* Option parsing for the CLI: a table of typed flags per command, range checks, --help text and
 * one-line usage errors that name the flag at fault. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Formatted first and printed with one call (one write on unbuffered stderr), so the lines of processes
 * sharing a terminal under mpirun never interleave. */
void lc_cli_error(const char *fmt, ...) {
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "longctx: error: %s\n", line);
}

int lc_cli_fail(lc_status st) {
    lc_cli_error("%s", lc_last_error());
    return st == LC_ERR_ARG ? LC_EXIT_USAGE : LC_EXIT_RUNTIME;
}

void lc_opt_print(FILE *f, const lc_opt *opts, int n) {
    for (int i = 0; i < n; i++) {
        if (opts[i].refuse) continue;
        const char *arg = opts[i].type == OPT_FLAG ? "" : opts[i].type == OPT_STR ? " S" : " N";
        fprintf(f, "  %s%-*s %s\n", opts[i].name, (int)(22 - strlen(opts[i].name)), arg, opts[i].help);
    }
}

static void print_help(const char *cmd, const char *usage, const lc_opt *opts, int n) {
    printf("usage: longctx %s %s\n\n%s options:\n", cmd, usage, cmd);
    lc_opt_print(stdout, opts, n);
    printf("  --help                 this text\n");
}

lc_opt *lc_opt_get(lc_opt *opts, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(opts[i].name, name) == 0) return &opts[i];
    return NULL;
}

void lc_opt_refuse(lc_opt *opts, int n, const char *name, const char *why) {
    lc_opt *o = lc_opt_get(opts, n, name);
    if (o) o->refuse = why;
}

/* A 64-bit unsigned integer in decimal, the whole range (seeds): strtoull alone would accept "-1" as
 * 2^64-1 and leading blanks, so the text must start with a digit. */
static int parse_u64(const char *cmd, const lc_opt *o, const char *text) {
    char *end;
    errno = 0;
    unsigned long long v = text[0] >= '0' && text[0] <= '9' ? strtoull(text, &end, 10) : 0;
    if (!(text[0] >= '0' && text[0] <= '9') || errno || *end) {
        lc_cli_error("%s: %s expects an integer in 0..18446744073709551615, got '%s'", cmd, o->name, text);
        return 0;
    }
    *(uint64_t *)o->dst = (uint64_t)v;
    return 1;
}

static int parse_number(const char *cmd, const lc_opt *o, const char *text) {
    if (o->type == OPT_U64) return parse_u64(cmd, o, text);
    char *end;
    errno = 0;
    double x;
    if (o->type == OPT_FLOAT) {
        x = strtod(text, &end);
    } else {
        long long v = strtoll(text, &end, 10);
        x = (double)v;
    }
    if (errno || end == text || *end || !isfinite(x)) {
        lc_cli_error("%s: %s expects a number, got '%s'", cmd, o->name, text);
        return 0;
    }
    if (x < o->lo || x > o->hi) { /* an integer flag's range in integers ("0..1000000000000", not "0..1e+12") */
        if (o->type == OPT_FLOAT) lc_cli_error("%s: %s must be in %g..%g, got %s", cmd, o->name, o->lo, o->hi, text);
        else lc_cli_error("%s: %s must be in %.0f..%.0f, got %s", cmd, o->name, o->lo, o->hi, text);
        return 0;
    }
    if (o->type == OPT_INT) *(int *)o->dst = (int)x;
    else if (o->type == OPT_LONG) *(long *)o->dst = (long)x;
    else *(float *)o->dst = (float)x;
    return 1;
}

int lc_parse_opts(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv) {
    return lc_parse_opts_args(cmd, usage, opts, n, argc, argv, NULL, 0, NULL);
}

int lc_parse_opts_args(const char *cmd, const char *usage, lc_opt *opts, int n, int argc, char **argv, char **pos,
                       int max_pos, int *n_pos) {
    int flags_end = argc; /* "--": every later argument is positional */
    if (n_pos) *n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (i < flags_end && pos && strcmp(a, "--") == 0) {
            flags_end = i;
            continue;
        }
        if (i < flags_end && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            print_help(cmd, usage, opts, n);
            return LC_EXIT_OK;
        }
        if (i > flags_end || strncmp(a, "--", 2) != 0) {
            if (!pos || *n_pos >= max_pos) {
                lc_cli_error("%s: unexpected argument '%s' (see longctx %s --help)", cmd, a, cmd);
                return LC_EXIT_USAGE;
            }
            pos[(*n_pos)++] = argv[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        lc_opt *o = NULL;
        for (int k = 0; k < n; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0) o = &opts[k];
        if (!o) {
            lc_cli_error("%s: unknown flag %.*s (see longctx %s --help)", cmd, (int)len, a, cmd);
            return LC_EXIT_USAGE;
        }
        if (o->refuse) {
            lc_cli_error("%s: %s %s", cmd, o->name, o->refuse);
            return LC_EXIT_USAGE;
        }
        o->seen = 1;
        if (o->type == OPT_FLAG) {
            if (eq) { lc_cli_error("%s: %s takes no value", cmd, o->name); return LC_EXIT_USAGE; }
            *(int *)o->dst = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) { lc_cli_error("%s: %s needs a value", cmd, o->name); return LC_EXIT_USAGE; }
        if (o->type == OPT_STR) *(const char **)o->dst = val;
        else if (!parse_number(cmd, o, val)) return LC_EXIT_USAGE;
    }
    return -1;
}

/* x printed with fmt, or null when it is not finite, in one of 8 rotating buffers (so a printf may hold
 * several). */
static const char *json_format(double x, const char *fmt) {
    static char bufs[8][32];
    static int next;
    char *b = bufs[next++ % 8];
    if (isfinite(x)) snprintf(b, sizeof bufs[0], fmt, x);
    else snprintf(b, sizeof bufs[0], "null");
    return b;
}

const char *lc_json_number(double x) { return json_format(x, "%.6f"); }
const char *lc_json_g(double x) { return json_format(x, "%.9g"); }

int lc_apply_runtime_lengths(lc_model *m, const char *cmd, int batch, int *seg_len, int mem_len, int clamp_len,
                             int same_length) {
    const lc_config *c = lc_model_config(m);
    int xl = c->model == LC_MODEL_XL;
    if (!xl && (mem_len >= 0 || clamp_len >= 0 || same_length)) {
        lc_cli_error("%s: --mem-len, --clamp-len and --same-length need an xl checkpoint", cmd);
        return LC_EXIT_USAGE;
    }
    if (*seg_len == 0) *seg_len = c->seq_len;
    if (!xl && *seg_len > c->seq_len) {
        lc_cli_error("%s: --seg-len %d exceeds the model's segment length %d", cmd, *seg_len, c->seq_len);
        return LC_EXIT_USAGE;
    }
    lc_status st;
    if ((st = lc_model_resize(m, xl ? 1 : batch, *seg_len, xl ? (mem_len >= 0 ? mem_len : c->mem_len) : 0)))
        return lc_cli_fail(st);
    if (xl && (st = lc_model_set_xl_options(m, clamp_len >= 0 ? clamp_len : c->clamp_len,
                                            same_length || c->same_length)))
        return lc_cli_fail(st);
    return -1;
}
