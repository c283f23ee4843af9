/* `longctx predict --ckpt CKPT [FILE|-]`: the label a classifier gives each input, one per line, in input
 * order. Input: raw text, one example per line (the line without its '\n' or "\r\n"); with --tsv, a TSV
 * file with a header whose --text-col column (default: the last) holds each example. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "core/status.h"
#include "core/threads.h"

/* The whole input in memory, cut in place into lines (a "\r" before "\n" dropped). */
static char *read_all(FILE *f, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) { free(buf); return NULL; }
            buf = b, cap *= 2;
        }
    }
    if (buf) buf[len] = 0;
    *n = len;
    return buf;
}

/* Field `col` (0-based) of a line, in place. */
static char *field(char *line, int col, size_t *len) {
    for (int c = 0; c < col && line; c++) line = strchr(line, '\t'), line = line ? line + 1 : NULL;
    if (!line) return NULL;
    char *tab = strchr(line, '\t');
    *len = tab ? (size_t)(tab - line) : strlen(line);
    return line;
}

static int column_of(char *header, const char *want) {
    int n = 1;
    for (const char *p = header; *p; p++) n += *p == '\t';
    if (!want) return n - 1;
    char *end;
    const long k = strtol(want, &end, 10);
    if (!*end && k >= 1 && k <= n) return (int)k - 1;
    for (int c = 0; c < n; c++) {
        size_t len = 0;
        const char *f = field(header, c, &len);
        if (len == strlen(want) && !memcmp(f, want, len)) return c;
    }
    return -1;
}

int lc_cmd_predict(int argc, char **argv) {
    const char *ckpt = NULL, *text_col = NULL;
    int batch = 16, threads = 0, tsv = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "classifier checkpoint (required)", 0},
        {"--tsv", OPT_FLAG, &tsv, 0, 0, "the input is a TSV file with a header (default: one example per line)", 0},
        {"--text-col", OPT_STR, &text_col, 0, 0, "--tsv: the text column, name or number from 1 (default the last)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "examples per forward pass (default 16)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    const char *path = "-";
    if (argc > 0 && (argv[argc - 1][0] != '-' || !strcmp(argv[argc - 1], "-")) &&
        (argc < 2 || strncmp(argv[argc - 2], "--", 2) != 0 || !strcmp(argv[argc - 2], "--tsv")))
        path = argv[--argc];
    int rc = lc_parse_opts("predict", "--ckpt CKPT [options] [FILE|-]", opts, n_opts, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt) { lc_cli_error("predict: --ckpt is required"); return LC_EXIT_USAGE; }
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) { lc_cli_error("predict: cannot open %s", path); return LC_EXIT_RUNTIME; }
    size_t size;
    char *buf = read_all(f, &size);
    if (f != stdin) fclose(f);
    lc_set_threads(threads);
    lc_classifier *m = NULL;
    lc_label_set labels = {0, NULL};
    lc_word_vocab *v = NULL;
    lc_status st = buf ? lc_classifier_load(ckpt, batch, 0, &m, NULL, &labels, &v) : lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    long n = 0, cap = 0, line_no = 0;
    const uint8_t **text = NULL;
    size_t *len = NULL;
    int col = -1;
    for (char *line = buf, *next; !st && line && line < buf + size; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r') line[--ll] = 0;
        if (tsv && line_no++ == 0) {
            if ((col = column_of(line, text_col)) < 0) st = lc_fail(LC_ERR_ARG, "%s: no column '%s' in the header", path, text_col);
            continue;
        }
        size_t tl = ll;
        const char *t = tsv ? field(line, col, &tl) : line;
        if (!t) { st = lc_fail(LC_ERR_FORMAT, "%s:%ld: no column %d", path, line_no, col + 1); break; }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            text = realloc(text, sizeof *text * (size_t)cap), len = realloc(len, sizeof *len * (size_t)cap);
            if (!text || !len) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path); break; }
        }
        text[n] = (const uint8_t *)t, len[n++] = tl;
    }
    int *pred = !st && n ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (!st && n && !pred) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    const lc_cli_texts t = {n, text, len};
    if (!st && n) st = lc_cli_classify(m, v, &t, batch, pred, NULL, NULL);
    for (long i = 0; !st && i < n; i++) printf("%s\n", labels.name[pred[i]]);
    rc = st ? lc_cli_fail(st) : LC_EXIT_OK;
    free(pred), free(text), free(len), free(buf);
    lc_label_set_free(&labels);
    lc_word_vocab_free(v);
    lc_classifier_free(m);
    return rc;
}
