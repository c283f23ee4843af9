/* Small pieces for the figures the CLI draws by hand as SVG (plot, attn-map): text with XML escapes,
 * "nice" axis ticks (1, 2 or 5 times a power of ten), an approximate text width for layout, and the atomic
 * write of the finished document. */
#ifndef LC_CLI_SVG_H
#define LC_CLI_SVG_H

#include <stddef.h>

#include "core/json.h"
#include "longctx.h"

#define LC_SVG_MAX_TICKS 16

/* Eight colours that tell lines apart (Tableau's, colour-blind friendlier than primaries). */
extern const char *const lc_svg_colors[8];

/* <svg ...> with a white background, font-family sans-serif; and </svg>. */
void lc_svg_begin(lc_strbuf *b, int width, int height);
void lc_svg_end(lc_strbuf *b);
/* s with &, <, >, " escaped. */
void lc_svg_escaped(lc_strbuf *b, const char *s);
/* <text x y font-size text-anchor (start|middle|end) EXTRA>escaped s</text>; extra: more attributes or "". */
void lc_svg_text(lc_strbuf *b, double x, double y, int size, const char *anchor, const char *extra, const char *s);
/* Width in pixels of s at font size `size` (sans-serif, a generous average advance: layout never overlaps). */
double lc_svg_text_width(const char *s, int size);

/* Ticks covering [lo, hi] with at most max_ticks (>= 2) steps of 1, 2 or 5 times a power of ten: writes
 * the axis range [*axis_lo, *axis_hi] (multiples of the step that contain lo..hi), the ticks (from
 * *axis_lo to *axis_hi) and returns their count. lo == hi is widened first. */
int lc_svg_ticks(double lo, double hi, int max_ticks, double *ticks, double *axis_lo, double *axis_hi, double *step);
/* A tick's label: as many decimals as the step needs, never "-0". */
void lc_svg_tick_label(char *buf, size_t n, double v, double step);
/* The most ticks (from max_ticks down) whose labels, each `gap` pixels apart at least, fit side by side in
 * `width` pixels at font size `size`: fills ticks like lc_svg_ticks and returns their count. */
int lc_svg_ticks_fit(double lo, double hi, double width, int size, double gap, double *ticks, double *axis_lo,
                     double *axis_hi, double *step);

/* Write the document atomically to path (core/files.h: the output checks, a temporary file, rename).
 * `cmd` names the command in messages. -1 on success, else LC_EXIT_RUNTIME (usage problems of the path:
 * LC_EXIT_USAGE) after one error line. */
int lc_svg_write(const char *cmd, const char *path, const lc_strbuf *b);

#endif
