/* SVG helpers of the CLI's figures (svg.h). */
#include "cli/svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/files.h"

const char *const lc_svg_colors[8] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

void lc_svg_begin(lc_strbuf *b, int width, int height) {
    lc_strbuf_printf(b,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "font-family=\"DejaVu Sans, Arial, sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
                     "fill=\"white\"/>\n",
                     width, height, width, height);
}

void lc_svg_end(lc_strbuf *b) { lc_strbuf_puts(b, "</svg>\n"); }

void lc_svg_escaped(lc_strbuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '&') lc_strbuf_puts(b, "&amp;");
        else if (*s == '<') lc_strbuf_puts(b, "&lt;");
        else if (*s == '>') lc_strbuf_puts(b, "&gt;");
        else if (*s == '"') lc_strbuf_puts(b, "&quot;");
        else if ((unsigned char)*s < 0x20) lc_strbuf_puts(b, "?"); /* not allowed in XML 1.0 */
        else lc_strbuf_append(b, s, 1);
    }
}

void lc_svg_text(lc_strbuf *b, double x, double y, int size, const char *anchor, const char *extra, const char *s) {
    lc_strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\"%s%s>", x, y, size, anchor,
                     extra[0] ? " " : "", extra);
    lc_svg_escaped(b, s);
    lc_strbuf_puts(b, "</text>\n");
}

double lc_svg_text_width(const char *s, int size) {
    double w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) w += 0.62; /* one per UTF-8 character */
    return w * size;
}

/* 1, 2 or 5 times a power of ten, the smallest at least x (x > 0). */
static double nice_step(double x) {
    const double p = pow(10, floor(log10(x)));
    const double m = x / p;
    return (m <= 1 + 1e-9 ? 1 : m <= 2 + 1e-9 ? 2 : m <= 5 + 1e-9 ? 5 : 10) * p;
}

int lc_svg_ticks(double lo, double hi, int max_ticks, double *ticks, double *axis_lo, double *axis_hi, double *step) {
    if (max_ticks < 2) max_ticks = 2;
    if (max_ticks > LC_SVG_MAX_TICKS) max_ticks = LC_SVG_MAX_TICKS;
    if (!(hi > lo)) { /* one value: a small range around it */
        const double d = fabs(lo) > 0 ? fabs(lo) * 0.05 : 1;
        lo -= d, hi += d;
    }
    double s = nice_step((hi - lo) / (max_ticks - 1));
    double a = floor(lo / s + 1e-9) * s, z = ceil(hi / s - 1e-9) * s;
    while ((z - a) / s + 1.5 > max_ticks) { /* rounding out added a step: widen it */
        s = nice_step(s * 1.0001);
        a = floor(lo / s + 1e-9) * s, z = ceil(hi / s - 1e-9) * s;
    }
    int n = 0;
    for (double v = a; v <= z + s * 1e-6 && n < LC_SVG_MAX_TICKS; v = a + s * ++n) ticks[n] = fabs(v) < s * 1e-9 ? 0 : v;
    *axis_lo = a, *axis_hi = z, *step = s;
    return n;
}

void lc_svg_tick_label(char *buf, size_t n, double v, double step) {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 9) dec = 9;
    if (fabs(v) < step * 1e-6) v = 0;
    snprintf(buf, n, "%.*f", dec, v);
}

int lc_svg_ticks_fit(double lo, double hi, double width, int size, double gap, double *ticks, double *axis_lo,
                     double *axis_hi, double *step) {
    for (int max = 10; max > 2; max--) {
        const int n = lc_svg_ticks(lo, hi, max, ticks, axis_lo, axis_hi, step);
        double widest = 0;
        char label[64];
        for (int i = 0; i < n; i++) {
            lc_svg_tick_label(label, sizeof label, ticks[i], *step);
            const double w = lc_svg_text_width(label, size);
            if (w > widest) widest = w;
        }
        if (n < 2 || (width / (n - 1)) >= widest + gap) return n;
    }
    return lc_svg_ticks(lo, hi, 2, ticks, axis_lo, axis_hi, step);
}

static int write_doc(FILE *f, void *ctx) {
    const lc_strbuf *b = ctx;
    errno = 0;
    return fwrite(b->data, 1, b->length, f) == b->length ? 0 : errno ? errno : EIO;
}

int lc_svg_write(const char *cmd, const char *path, const lc_strbuf *b) {
    if (b->failed) {
        lc_cli_error("%s: out of memory building the figure", cmd);
        return LC_EXIT_RUNTIME;
    }
    lc_status st = lc_file_write_atomic(path, "a figure", write_doc, (void *)b);
    if (!st) return -1;
    lc_cli_error("%s: --out %s", cmd, lc_last_error());
    return st == LC_ERR_ARG ? LC_EXIT_USAGE : LC_EXIT_RUNTIME;
}
