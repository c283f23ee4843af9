/* longctx plot: the training loss and validation curves of one or more --log files (train, train --task
 * classify, hibert pretrain|finetune) against step or elapsed time, drawn as an SVG: one panel for the
 * training loss and one per validation measure the logs carry, each log in its own colour, a legend above
 * the panels. Every panel's <g> carries its axis mapping (data-x0/x1 to data-px0/px1, data-y0/y1 to
 * data-py0/py1), so the plotted points can be read back as the log's values. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/svg.h"
#include "core/files.h"

#define MAX_METRICS 12

typedef struct {
    double step, elapsed, value, bytes; /* bytes: valid_bytes of the line (-1: none) */
    int final;                          /* a final pass over the whole split (drawn apart) */
} point;

typedef struct {
    point *p;
    int n, cap;
} series;

typedef struct {
    const char *path;
    series s[MAX_METRICS + 1]; /* [0]: training loss; [1 + m]: metric m */
    int has_elapsed;
} log_data;

typedef struct {
    char names[MAX_METRICS][64];
    int n;
} metric_table;

/* The validation measures a log line may carry, with the panel title for the ones longctx writes. */
static const char *metric_title(const char *key) {
    static const char *const known[][2] = {
        {"valid_bpc", "validation bits per byte"},
        {"valid_masked_accuracy", "validation masked-byte accuracy"},
        {"valid_accuracy", "validation accuracy"},
        {"valid_bpb", "validation bits per byte of the masked sentences"},
        {"valid_intruder_bce", "validation intruder BCE"},
        {"valid_rouge1", "validation ROUGE-1"},
        {"valid_rouge2", "validation ROUGE-2"},
        {"valid_rougeL", "validation ROUGE-L"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(known[i][0], key)) return known[i][1];
    return key;
}

static int push(series *s, point p) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        point *q = realloc(s->p, sizeof *q * (size_t)cap);
        if (!q) return -1;
        s->p = q, s->cap = cap;
    }
    s->p[s->n++] = p;
    return 0;
}

static int is_number(const lc_json *v) { return v && v->type == LC_JSON_NUMBER; }

/* Reads the whole file; NULL after an error line. */
static char *read_all(const char *path, size_t *len) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        lc_cli_error("plot: %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode)) {
        lc_cli_error("plot: %s: is %s, not a --log file", path, lc_file_kind(st.st_mode));
        fclose(f);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        lc_cli_error("plot: %s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int metric_index(metric_table *t, const char *key) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->names[i], key)) return i;
    if (t->n == MAX_METRICS || strlen(key) >= sizeof t->names[0]) return -1;
    snprintf(t->names[t->n], sizeof t->names[0], "%s", key);
    return t->n++;
}

/* One log line's points. -1 when fine, else an exit code after the error line. */
static int take_line(log_data *d, metric_table *t, const char *text, size_t len, long line, int *usable) {
    char what[600];
    snprintf(what, sizeof what, "%s line %ld", d->path, line);
    lc_json *j;
    if (lc_json_parse(text, len, what, &j)) {
        lc_cli_error("plot: %s (a --log file holds one JSON object per line)", lc_last_error());
        return LC_EXIT_RUNTIME;
    }
    int rc = -1;
    if (j->type != LC_JSON_OBJECT) {
        lc_cli_error("plot: %s: a JSON %s, not an object (a --log file holds one JSON object per line)", what,
                     lc_json_type_name(j->type));
        rc = LC_EXIT_RUNTIME;
    }
    const lc_json *step = lc_json_member(j, "step"), *loss = lc_json_member(j, "loss");
    const lc_json *el = lc_json_member(j, "elapsed_s"), *bytes = lc_json_member(j, "valid_bytes");
    if (rc < 0 && is_number(step) && loss) { /* loss is null when it was not finite */
        *usable = 1;
        point p = {step->number, is_number(el) ? el->number : NAN, 0, is_number(bytes) ? bytes->number : -1, 0};
        d->has_elapsed |= is_number(el);
        int oom = 0;
        if (is_number(loss)) p.value = loss->number, oom = push(&d->s[0], p);
        for (size_t i = 0; !oom && i < j->count; i++) {
            const char *k = j->keys[i];
            if (strncmp(k, "valid_", 6) || !strcmp(k, "valid_seconds") || !strcmp(k, "valid_bytes") ||
                !is_number(&j->items[i]))
                continue;
            const int m = metric_index(t, k);
            if (m < 0) continue; /* more measures than panels: the first ones are drawn */
            p.value = j->items[i].number;
            oom = push(&d->s[1 + m], p);
        }
        if (oom) lc_cli_error("plot: out of memory"), rc = LC_EXIT_RUNTIME;
    }
    lc_json_free(j);
    return rc;
}

/* Train's periodic passes read the first --eval-bytes of the split and the final one all of it: when the
 * passes read different amounts, those over the whole split are final passes, drawn apart. Logs written
 * before "valid_bytes" existed: the last valid_bpc line is the final pass. */
static void mark_final(log_data *d, const metric_table *t) {
    for (int m = 0; m < t->n; m++) {
        series *s = &d->s[1 + m];
        if (s->n < 2) continue;
        double whole = -1;
        int with_bytes = 0, partial = 0;
        for (int i = 0; i < s->n; i++)
            if (s->p[i].bytes >= 0) with_bytes++, whole = s->p[i].bytes > whole ? s->p[i].bytes : whole;
        for (int i = 0; i < s->n; i++) partial |= s->p[i].bytes >= 0 && s->p[i].bytes < whole;
        if (with_bytes && partial)
            for (int i = 0; i < s->n; i++) s->p[i].final = s->p[i].bytes == whole;
        else if (!with_bytes && !strcmp(t->names[m], "valid_bpc"))
            s->p[s->n - 1].final = 1;
    }
}

static int load_log(log_data *d, metric_table *t) {
    size_t len;
    char *buf = read_all(d->path, &len);
    if (!buf) return LC_EXIT_RUNTIME;
    int usable = 0, rc = -1;
    long line = 0;
    for (size_t i = 0; i < len && rc < 0;) {
        size_t e = i;
        while (e < len && buf[e] != '\n') e++;
        line++;
        size_t a = i;
        while (a < e && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r')) a++;
        if (a < e) rc = take_line(d, t, buf + a, e - a, line, &usable);
        i = e + 1;
    }
    free(buf);
    if (rc >= 0) return rc;
    if (!usable) {
        lc_cli_error("plot: %s: no training log lines (JSON objects with \"step\" and \"loss\", as --log writes them)",
                     d->path);
        return LC_EXIT_RUNTIME;
    }
    mark_final(d, t);
    return -1;
}

/* ---- drawing ---- */

typedef struct {
    int by_time;
    double unit;          /* seconds per x unit (time axis) */
    const char *x_label;
    double x_lo, x_hi;    /* data range over every panel */
} x_axis;

static double x_of(const x_axis *ax, const point *p) { return ax->by_time ? p->elapsed / ax->unit : p->step; }

/* One panel: the plot area (x0, y0, w, h); series index k of every log. */
static void panel(lc_strbuf *b, const x_axis *ax, const log_data *logs, int n_logs, int k, const char *key,
                  const char *title, double x0, double y0, double w, double h) {
    double lo = INFINITY, hi = -INFINITY;
    int finals = 0;
    for (int i = 0; i < n_logs; i++)
        for (int j = 0; j < logs[i].s[k].n; j++) {
            const double v = logs[i].s[k].p[j].value;
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
            finals += logs[i].s[k].p[j].final;
        }
    double xt[LC_SVG_MAX_TICKS], yt[LC_SVG_MAX_TICKS], xa, xz, xs, ya, yz, ys;
    const int nx = lc_svg_ticks_fit(ax->x_lo, ax->x_hi, w, 11, 14, xt, &xa, &xz, &xs);
    int max_y = (int)(h / 30) + 1;
    const double pad = hi > lo ? 0.04 * (hi - lo) : 0;
    const int ny = lc_svg_ticks(lo - pad, hi + pad, max_y < 3 ? 3 : max_y, yt, &ya, &yz, &ys);
    lc_strbuf_printf(b, "<g class=\"panel\" data-metric=\"%s\" data-x0=\"%.17g\" data-x1=\"%.17g\" data-px0=\"%.2f\" "
                     "data-px1=\"%.2f\" data-y0=\"%.17g\" data-y1=\"%.17g\" data-py0=\"%.2f\" data-py1=\"%.2f\">\n",
                     key, xa, xz, x0, x0 + w, ya, yz, y0 + h, y0);
#define PX(x) (x0 + w * ((x) - xa) / (xz - xa))
#define PY(y) (y0 + h - h * ((y) - ya) / (yz - ya))
    char label[64], t[256];
    for (int i = 0; i < ny; i++) {
        lc_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#e4e4e4\"/>\n", x0,
                         PY(yt[i]), x0 + w, PY(yt[i]));
        lc_svg_tick_label(label, sizeof label, yt[i], ys);
        lc_svg_text(b, x0 - 6, PY(yt[i]) + 4, 11, "end", "", label);
    }
    for (int i = 0; i < nx; i++) {
        lc_strbuf_printf(b, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", PX(xt[i]),
                         y0, PX(xt[i]), y0 + h);
        lc_svg_tick_label(label, sizeof label, xt[i], xs);
        lc_svg_text(b, PX(xt[i]), y0 + h + 16, 11, "middle", "", label);
    }
    lc_strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                     x0, y0, w, h);
    snprintf(t, sizeof t, "%s%s", title, finals ? " (hollow: the final pass over the whole split)" : "");
    lc_svg_text(b, x0, y0 - 8, 13, "start", "font-weight=\"bold\"", t);
    lc_svg_text(b, x0 + w / 2, y0 + h + 34, 12, "middle", "", ax->x_label);
    for (int i = 0; i < n_logs; i++) {
        const series *s = &logs[i].s[k];
        const char *color = lc_svg_colors[i % 8];
        const char *dash = i >= 8 ? " stroke-dasharray=\"6 3\"" : "";
        int joined = 0;
        for (int j = 0; j < s->n; j++) joined += !s->p[j].final;
        lc_strbuf_printf(b, "<polyline class=\"series\" data-log=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s "
                         "points=\"", i, color, dash);
        for (int j = 0, first = 1; j < s->n; j++) /* --x time: a line without elapsed_s has no place */
            if (!s->p[j].final && !isnan(x_of(ax, &s->p[j])))
                lc_strbuf_printf(b, "%s%.2f,%.2f", first ? "" : " ", PX(x_of(ax, &s->p[j])), PY(s->p[j].value)), first = 0;
        lc_strbuf_puts(b, "\"/>\n");
        const int dots = k > 0 || joined == 1; /* validation passes (few) and a lone loss point get markers */
        for (int j = 0; j < s->n; j++) {
            const point *p = &s->p[j];
            if (isnan(x_of(ax, p))) continue;
            if (p->final)
                lc_strbuf_printf(b, "<circle class=\"final\" data-log=\"%d\" cx=\"%.2f\" cy=\"%.2f\" r=\"4.5\" "
                                 "fill=\"white\" stroke=\"%s\" stroke-width=\"2\"/>\n", i, PX(x_of(ax, p)), PY(p->value), color);
            else if (dots && joined <= 400)
                lc_strbuf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n", PX(x_of(ax, p)),
                                 PY(p->value), color);
        }
    }
#undef PX
#undef PY
    lc_strbuf_puts(b, "</g>\n");
}

/* The legend: one entry per log (colour, path), wrapped to the width; returns its height. */
static double legend(lc_strbuf *b, const log_data *logs, int n_logs, double x0, double y0, double width, int draw) {
    double x = x0, y = y0;
    for (int i = 0; i < n_logs; i++) {
        const double w = 30 + lc_svg_text_width(logs[i].path, 12) + 24;
        if (x > x0 && x + w > x0 + width) x = x0, y += 20;
        if (draw) {
            lc_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"%s/>\n",
                             x, y - 4, x + 24, y - 4, lc_svg_colors[i % 8], i >= 8 ? " stroke-dasharray=\"6 3\"" : "");
            lc_svg_text(b, x + 30, y, 12, "start", "class=\"legend\"", logs[i].path);
        }
        x += w;
    }
    return y - y0 + 20;
}

static int draw(lc_strbuf *b, log_data *logs, int n_logs, const metric_table *t, int by_time, const char *title) {
    x_axis ax = {by_time, 1, "step", INFINITY, -INFINITY};
    double max_el = 0;
    for (int i = 0; i < n_logs; i++)
        for (int k = 0; k <= t->n; k++)
            for (int j = 0; j < logs[i].s[k].n; j++) {
                const point *p = &logs[i].s[k].p[j];
                if (by_time && !(p->elapsed >= 0)) continue;
                if (by_time && p->elapsed > max_el) max_el = p->elapsed;
            }
    if (by_time)
        ax.unit = max_el < 180 ? 1 : max_el < 3 * 3600 ? 60 : 3600,
        ax.x_label = max_el < 180 ? "elapsed time (seconds)" : max_el < 3 * 3600 ? "elapsed time (minutes)"
                                                                               : "elapsed time (hours)";
    for (int i = 0; i < n_logs; i++)
        for (int k = 0; k <= t->n; k++)
            for (int j = 0; j < logs[i].s[k].n; j++) {
                const double x = x_of(&ax, &logs[i].s[k].p[j]);
                if (isnan(x)) continue;
                ax.x_lo = x < ax.x_lo ? x : ax.x_lo, ax.x_hi = x > ax.x_hi ? x : ax.x_hi;
            }
    if (!by_time && ax.x_lo > 0 && ax.x_lo <= 0.2 * ax.x_hi) ax.x_lo = 0; /* a run from the start: from step 0 */
    const int panels = 1 + t->n, cols = panels >= 3 ? 2 : 1, rows = (panels + cols - 1) / cols;
    const double W = cols == 1 ? 860 : 1040, left = 70, right = 24, col_w = W / cols;
    const double pw = col_w - left - right, ph = cols == 1 ? 240 : 200, block = ph + 80;
    double top = 16;
    lc_strbuf head;
    lc_strbuf_init(&head);
    if (title) lc_svg_text(&head, W / 2, 26, 15, "middle", "", title), top = 44;
    const double leg_h = legend(NULL, logs, n_logs, left, top + 12, W - left - right, 0);
    legend(&head, logs, n_logs, left, top + 12, W - left - right, 1);
    top += leg_h + 30;
    lc_svg_begin(b, (int)W, (int)(top + rows * block));
    lc_strbuf_append(b, head.data ? head.data : "", head.length);
    const int head_failed = head.failed;
    lc_strbuf_free(&head);
    for (int k = 0; k < panels; k++) {
        const double x0 = (k % cols) * col_w + left, y0 = top + (k / cols) * block;
        panel(b, &ax, logs, n_logs, k, k ? t->names[k - 1] : "loss", k ? metric_title(t->names[k - 1]) : "training loss",
              x0, y0, pw, ph);
    }
    lc_svg_end(b);
    return head_failed ? -1 : 0;
}

int lc_cmd_plot(int argc, char **argv) {
    const char *out = NULL, *x = "step", *title = NULL;
    lc_opt opts[] = {
        {"--out", OPT_STR, &out, 0, 0, "required: the SVG file to write", 0, 0},
        {"--x", OPT_STR, &x, 0, 0, "step (default) or time: the x axis (elapsed_s, validation included)", 0, 0},
        {"--title", OPT_STR, &title, 0, 0, "a title above the legend", 0, 0},
    };
    const int nopt = (int)(sizeof opts / sizeof opts[0]);
    const char *usage = "LOG.jsonl [LOG2.jsonl ...] --out FILE.svg [--x step|time] [--title TEXT]";
    /* the log files are the arguments that are neither flags nor their values */
    char **logs_arg = malloc(sizeof(char *) * (size_t)(argc + 1)), **rest = malloc(sizeof(char *) * (size_t)(argc + 1));
    int nl = 0, nr = 0;
    if (!logs_arg || !rest) {
        free(logs_arg), free(rest);
        lc_cli_error("plot: out of memory");
        return LC_EXIT_RUNTIME;
    }
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) && strcmp(argv[i], "-h")) { logs_arg[nl++] = argv[i]; continue; }
        rest[nr++] = argv[i];
        for (int k = 0; k < nopt; k++)
            if (!strcmp(argv[i], opts[k].name) && opts[k].type != OPT_FLAG && i + 1 < argc) rest[nr++] = argv[++i];
    }
    int rc = lc_parse_opts("plot", usage, opts, nopt, nr, rest);
    if (rc < 0 && !nl) lc_cli_error("plot: no log file given (usage: longctx plot %s)", usage), rc = LC_EXIT_USAGE;
    if (rc < 0 && !out) lc_cli_error("plot: --out is required (usage: longctx plot %s)", usage), rc = LC_EXIT_USAGE;
    if (rc < 0 && strcmp(x, "step") && strcmp(x, "time"))
        lc_cli_error("plot: --x must be step or time, got '%s'", x), rc = LC_EXIT_USAGE;
    if (rc < 0) {
        lc_status st = lc_file_check_output(out, "a figure");
        if (st) lc_cli_error("plot: --out %s", lc_last_error()), rc = st == LC_ERR_ARG ? LC_EXIT_USAGE : LC_EXIT_RUNTIME;
    }
    struct stat so, sl;
    for (int i = 0; rc < 0 && i < nl; i++)
        if (stat(out, &so) == 0 && stat(logs_arg[i], &sl) == 0 && so.st_dev == sl.st_dev && so.st_ino == sl.st_ino)
            lc_cli_error("plot: --out %s is the log %s: refusing to replace it with a figure", out, logs_arg[i]),
                rc = LC_EXIT_USAGE;
    log_data *logs = rc < 0 ? calloc((size_t)(nl > 0 ? nl : 1), sizeof *logs) : NULL;
    metric_table t = {.n = 0};
    if (rc < 0 && !logs) lc_cli_error("plot: out of memory"), rc = LC_EXIT_RUNTIME;
    for (int i = 0; rc < 0 && i < nl; i++) {
        logs[i].path = logs_arg[i];
        rc = load_log(&logs[i], &t);
        if (rc < 0 && !strcmp(x, "time") && !logs[i].has_elapsed)
            lc_cli_error("plot: %s: no \"elapsed_s\" in its lines: use --x step", logs[i].path), rc = LC_EXIT_RUNTIME;
    }
    if (rc < 0) {
        lc_strbuf b;
        lc_strbuf_init(&b);
        if (draw(&b, logs, nl, &t, !strcmp(x, "time"), title)) b.failed = 1;
        rc = lc_svg_write("plot", out, &b);
        lc_strbuf_free(&b);
        if (rc < 0) {
            printf("wrote %s: %d log%s, %d panel%s\n", out, nl, nl == 1 ? "" : "s", 1 + t.n, t.n ? "s" : "");
            rc = LC_EXIT_OK;
        }
    }
    for (int i = 0; logs && i < nl; i++)
        for (int k = 0; k <= MAX_METRICS; k++) free(logs[i].s[k].p);
    free(logs), free(logs_arg), free(rest);
    return rc;
}
