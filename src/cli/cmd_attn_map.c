/* longctx attn-map: the attention weights one head of one layer gives over a text, drawn as an SVG matrix
 * (queries down, keys across; white = zero weight, darker = more of the row's largest), so the pattern of the head's kind shows
 * as the papers draw it. The weights are the model's own (lc_model_attention_map). The map's <g> carries
 * its geometry and every cell run its query and key range (data-t, data-s0..data-s1, data-p: the run's
 * largest weight), so tests read the pattern back. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/svg.h"
#include "core/files.h"
#include "core/threads.h"

#define LEVELS 24
#define MAX_LEN 1024

/* Reads up to len bytes of path from offset (len 0: up to MAX_LEN). NULL after an error line. */
static unsigned char *read_text(const char *path, long offset, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        lc_cli_error("attn-map: --text %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        lc_cli_error("attn-map: --text %s: is a directory", path);
        fclose(f);
        return NULL;
    }
    const long want = *len > 0 ? *len : MAX_LEN;
    unsigned char *buf = malloc((size_t)want);
    long got = 0;
    if (buf && offset > 0 && fseek(f, offset, SEEK_SET) != 0) got = -1;
    if (buf && got == 0) got = (long)fread(buf, 1, (size_t)want, f);
    const int bad = !buf || got < 0 || ferror(f);
    fclose(f);
    if (bad || got == 0) {
        lc_cli_error("attn-map: --text %s: %s", path,
                     !buf ? "out of memory" : bad ? "read error" : offset ? "no bytes at --offset" : "the file is empty");
        free(buf);
        return NULL;
    }
    if (*len > 0 && got < *len) {
        lc_cli_error("attn-map: --text %s: only %ld bytes from offset %ld, --len asks for %ld", path, got, offset, *len);
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
}

/* A light-to-dark blue ramp, level 1..LEVELS. */
static void level_color(char *buf, size_t n, int level) {
    const double f = (double)(level - 1) / (LEVELS - 1);
    const int lo[3] = {0xd6, 0xe6, 0xf5}, hi[3] = {0x08, 0x30, 0x6b};
    snprintf(buf, n, "#%02x%02x%02x", (int)(lo[0] + f * (hi[0] - lo[0])), (int)(lo[1] + f * (hi[1] - lo[1])),
             (int)(lo[2] + f * (hi[2] - lo[2])));
}

/* A position's label on an axis: its byte as a character (escaped by the writer), or the extra token. */
static void char_label(char *buf, size_t n, int pos, int G, const unsigned char *text) {
    if (pos < G) { snprintf(buf, n, "g%d", pos); return; }
    const unsigned char c = text[pos - G];
    if (c == ' ') snprintf(buf, n, "\xe2\x90\xa3"); /* open box: a visible space */
    else if (c == '\n') snprintf(buf, n, "\xe2\x86\xb5");
    else if (c < 0x20 || c >= 0x7f) snprintf(buf, n, "\xc2\xb7");
    else snprintf(buf, n, "%c", c);
}

static void draw(lc_strbuf *b, const float *p, int TT, int G, const unsigned char *text, const char *title,
                 const char *subtitle) {
    const double map = 640, left = 70, top = 92, cell = map / TT;
    const double W = left + map + 120, H = top + map + 60;
    float pmax = 0;
    for (long i = 0; i < (long)TT * TT; i++) pmax = p[i] > pmax ? p[i] : pmax;
    lc_svg_begin(b, (int)W, (int)H);
    lc_svg_text(b, left, 24, 15, "start", "font-weight=\"bold\"", title);
    lc_svg_text(b, left, 44, 12, "start", "", subtitle);
    lc_svg_text(b, left + map / 2, top - 30, 12, "middle", "", "keys (positions in the text)");
    lc_strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 "
                     "%.1f %.1f)\">queries</text>\n", left - 48, top + map / 2, left - 48, top + map / 2);
    const int chars = cell >= 9; /* the text itself along the axes when it is legible */
    char label[64];
    if (chars) {
        for (int i = 0; i < TT; i++) {
            char_label(label, sizeof label, i, G, text);
            lc_svg_text(b, left + (i + 0.5) * cell, top - 6, 10, "middle", "font-family=\"DejaVu Sans Mono, monospace\"", label);
            lc_svg_text(b, left - 5, top + (i + 0.5) * cell + 3.5, 10, "end", "font-family=\"DejaVu Sans Mono, monospace\"", label);
        }
    } else {
        double ticks[LC_SVG_MAX_TICKS], a, z, step;
        const int n = lc_svg_ticks_fit(0, TT - 1, map, 11, 18, ticks, &a, &z, &step);
        for (int i = 0; i < n; i++) {
            if (ticks[i] > TT - 1) continue;
            lc_svg_tick_label(label, sizeof label, ticks[i], step);
            lc_svg_text(b, left + (ticks[i] + 0.5) * cell, top - 6, 11, "middle", "", label);
            lc_svg_text(b, left - 5, top + (ticks[i] + 0.5) * cell + 4, 11, "end", "", label);
        }
    }
    lc_strbuf_printf(b, "<g id=\"map\" data-queries=\"%d\" data-keys=\"%d\" data-x0=\"%.1f\" data-y0=\"%.1f\" "
                     "data-cell=\"%.6f\" data-pmax=\"%.9g\" shape-rendering=\"crispEdges\">\n", TT, TT, left, top, cell, pmax);
    char color[16];
    for (int t = 0; t < TT; t++) {
        const float *row = p + (long)t * TT;
        float rmax = 0;
        for (int s = 0; s < TT; s++) rmax = row[s] > rmax ? row[s] : rmax;
#define LEVEL(x) ((x) > 0 ? (int)ceil(LEVELS * sqrt((x) / rmax)) : 0)
        for (int s = 0; s < TT;) {
            const int level = LEVEL(row[s]);
            int e = s + 1;
            float run_max = row[s];
            while (e < TT && LEVEL(row[e]) == level)
                run_max = row[e] > run_max ? row[e] : run_max, e++;
            if (level > 0) {
                level_color(color, sizeof color, level > LEVELS ? LEVELS : level);
                lc_strbuf_printf(b, "<rect data-t=\"%d\" data-s0=\"%d\" data-s1=\"%d\" data-p=\"%.6g\" x=\"%.3f\" "
                                 "y=\"%.3f\" width=\"%.3f\" height=\"%.3f\" fill=\"%s\"/>\n", t, s, e - 1, run_max,
                                 left + s * cell, top + t * cell, (e - s) * cell, cell, color);
            }
            s = e;
        }
#undef LEVEL
    }
    lc_strbuf_puts(b, "</g>\n");
    lc_strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                     left, top, map, map);
    /* the colour scale: the square root of the weight over its row's largest, so small weights still show */
    const double bx = left + map + 30, bh = 200;
    for (int l = 1; l <= LEVELS; l++) {
        level_color(color, sizeof color, l);
        lc_strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.2f\" width=\"16\" height=\"%.2f\" fill=\"%s\"/>\n", bx,
                         top + bh - l * bh / LEVELS, bh / LEVELS + 0.3, color);
    }
    lc_strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", bx,
                     top, bh);
    lc_svg_text(b, bx + 22, top + 9, 11, "start", "", "row's max");
    lc_svg_text(b, bx + 22, top + bh, 11, "start", "", "> 0");
    lc_svg_text(b, bx, top + bh + 20, 11, "start", "", "weight / its");
    lc_svg_text(b, bx, top + bh + 34, 11, "start", "", "row's largest");
    lc_svg_text(b, bx, top + bh + 48, 11, "start", "", "(sqrt scale;");
    lc_svg_text(b, bx, top + bh + 62, 11, "start", "", "white: 0)");
    snprintf(label, sizeof label, "largest: %.3g", pmax);
    lc_svg_text(b, bx, top + bh + 84, 11, "start", "", label);
    lc_svg_end(b);
}

int lc_cmd_attn_map(int argc, char **argv) {
    const char *ckpt = NULL, *text_path = NULL, *out = NULL;
    int layer = 0, head = 0, threads = 0;
    long len = 0, offset = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "required: a language-model checkpoint (train: xl or vanilla)", 0, 0},
        {"--text", OPT_STR, &text_path, 0, 0, "required: the text file whose bytes the model reads", 0, 0},
        {"--layer", OPT_INT, &layer, 0, 1000, "the layer, from 0 (default 0)", 0, 0},
        {"--head", OPT_INT, &head, 0, 1000, "the head, from 0 (default 0)", 0, 0},
        {"--len", OPT_LONG, &len, 1, MAX_LEN, "bytes of the text (default: the model's segment length, at most 128)", 0, 0},
        {"--offset", OPT_LONG, &offset, 0, 1e15, "the first byte of the text to read (default 0)", 0, 0},
        {"--out", OPT_STR, &out, 0, 0, "required: the SVG file to write", 0, 0},
        {"--threads", OPT_INT, &threads, 0, 4096, "threads (default: the cores this process may use)", 0, 0},
    };
    const int nopt = (int)(sizeof opts / sizeof opts[0]);
    const char *usage = "--ckpt CKPT --text FILE --layer L [--head H] [--len N] [--offset B] --out FILE.svg";
    int rc = lc_parse_opts("attn-map", usage, opts, nopt, argc, argv);
    if (rc >= 0) return rc;
    const char *missing = !ckpt ? "--ckpt" : !text_path ? "--text" : !out ? "--out" : NULL;
    if (missing) {
        lc_cli_error("attn-map: %s is required (usage: longctx attn-map %s)", missing, usage);
        return LC_EXIT_USAGE;
    }
    lc_status st = lc_file_check_output(out, "a figure");
    if (st) {
        lc_cli_error("attn-map: --out %s", lc_last_error());
        return st == LC_ERR_ARG ? LC_EXIT_USAGE : LC_EXIT_RUNTIME;
    }
    struct stat so, si;
    if (stat(out, &so) == 0 && ((stat(text_path, &si) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino) ||
                                (stat(ckpt, &si) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino))) {
        lc_cli_error("attn-map: --out %s is one of its inputs: refusing to replace it with a figure", out);
        return LC_EXIT_USAGE;
    }
    lc_threads_set_default(threads);
    lc_model *m;
    if ((st = lc_checkpoint_load(ckpt, 1, &m, NULL))) return lc_cli_fail(st);
    const lc_config *c = lc_model_config(m);
    const int xl = c->model == LC_MODEL_XL;
    if (layer >= c->n_layer || head >= c->n_head) {
        lc_cli_error("attn-map: --%s %d: %s has %s 0..%d", layer >= c->n_layer ? "layer" : "head",
                     layer >= c->n_layer ? layer : head, ckpt, layer >= c->n_layer ? "layers" : "heads",
                     (layer >= c->n_layer ? c->n_layer : c->n_head) - 1);
        lc_model_free(m);
        return LC_EXIT_USAGE;
    }
    if (len > 0 && !xl && len > c->seq_len) {
        lc_cli_error("attn-map: --len %ld exceeds the model's segment length %d", len, c->seq_len);
        lc_model_free(m);
        return LC_EXIT_USAGE;
    }
    if (!len) len = c->seq_len < 128 ? c->seq_len : 128;
    unsigned char *text = read_text(text_path, offset, &len);
    if (!text) { lc_model_free(m); return LC_EXIT_RUNTIME; }
    int seg = (int)len;
    if ((rc = lc_apply_runtime_lengths(m, "attn-map", 1, &seg, -1, -1, 0)) >= 0) {
        free(text), lc_model_free(m);
        return rc;
    }
    const int G = c->extra_tokens, TT = (int)len + G;
    int *tokens = malloc(sizeof(int) * (size_t)len);
    float *p = malloc(sizeof(float) * (size_t)TT * (size_t)TT);
    if (!tokens || !p) st = lc_fail(LC_ERR_NOMEM, "attn-map: out of memory for a %d x %d map", TT, TT);
    for (long i = 0; !st && i < len; i++) tokens[i] = text[i];
    if (!st) st = lc_model_attention_map(m, tokens, (int)len, layer, head, p);
    if (!st) {
        char title[256], sub[768];
        snprintf(title, sizeof title, "attention weights of layer %d, head %d", layer, head);
        snprintf(sub, sizeof sub, "%s model, attention %s; %s, bytes %ld..%ld%s", xl ? "Transformer-XL" : "vanilla",
                 c->attn[0] ? c->attn : "full", text_path, offset, offset + len - 1,
                 G ? " after the extra tokens g0.." : "");
        lc_strbuf b;
        lc_strbuf_init(&b);
        draw(&b, p, TT, G, text, title, sub);
        rc = lc_svg_write("attn-map", out, &b);
        lc_strbuf_free(&b);
        if (rc < 0) printf("wrote %s: layer %d, head %d over %d positions\n", out, layer, head, TT), rc = LC_EXIT_OK;
    } else {
        rc = lc_cli_fail(st);
    }
    free(tokens), free(p), free(text);
    lc_model_free(m);
    return rc;
}
