/* `longctx predict --ckpt CKPT [FILE|-]`: the label a classifier gives each input, one per line, in input
 * order (--probs: a JSON line with every class's probability); for a seq2seq checkpoint, the greedy output
 * of each input (cmd_seq2seq.c). Input: raw text, one example per line (the
 * line without its '\n' or "\r\n"); with --tsv, a TSV file with a header (plain or gzip, as eval --task
 * classify reads) whose --text-col column (default: the column eval reads, "Source" when the header has one,
 * else the last) holds each example. A regular file or standard input, at most LC_PREDICT_MAX_BYTES; a line
 * with a NUL byte or an input without examples is refused, naming the file (and the line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "core/threads.h"
#include "lra/lra.h"
#include "train/checkpoint_meta.h"

#define LC_PREDICT_MAX_BYTES ((size_t)LC_TSV_MAX_BYTES) /* the most predict reads, file or standard input */

/* Field `col` (0-based) of a line, in place. */
static char *field(char *line, int col, size_t *len) {
    for (int c = 0; c < col && line; c++) line = strchr(line, '\t'), line = line ? line + 1 : NULL;
    if (!line) return NULL;
    char *tab = strchr(line, '\t');
    *len = tab ? (size_t)(tab - line) : strlen(line);
    return line;
}

/* The text column of a header: --text-col by name or number from 1, else as lc_labelled_read chooses it
 * ("Source" when the header has it, else the last). */
static int column_of(char *header, const char *want) {
    int n = 1;
    for (const char *p = header; *p; p++) n += *p == '\t';
    const char *name = want ? want : "Source";
    for (int c = 0; c < n; c++) {
        size_t len = 0;
        const char *f = field(header, c, &len);
        if (len == strlen(name) && !memcmp(f, name, len)) return c;
    }
    if (!want) return n - 1;
    char *end;
    const long k = strtol(want, &end, 10);
    return !*end && k >= 1 && k <= n ? (int)k - 1 : -1;
}

/* The input's bytes: standard input or a regular file, bounded; with --tsv a file goes through the TSV reader
 * (gzip too). Standard input compressed with gzip is refused (only a file is decompressed). */
static lc_status read_input(const char *path, int tsv, char **buf, size_t *size) {
    const int std_in = strcmp(path, "-") == 0;
    int gzip = 0;
    lc_status st = tsv && !std_in ? lc_tsv_read_bytes(path, buf, size, &gzip)
                                  : lc_file_read_all(path, LC_PREDICT_MAX_BYTES, buf, size);
    if (!st && std_in && *size >= 2 && (unsigned char)(*buf)[0] == 0x1f && (unsigned char)(*buf)[1] == 0x8b)
        st = lc_fail(LC_ERR_FORMAT, "standard input: gzip-compressed data: give the file's path (or gunzip it)");
    if (!st && *size == 0) st = lc_fail(LC_ERR_FORMAT, "%s: empty input: no lines to classify", std_in ? "standard input" : path);
    if (st) free(*buf), *buf = NULL;
    return st;
}

/* One example's line: the predicted label, or with probs a JSON line {"label":..,"probs":{LABEL:P,..}}. */
static void print_prediction(const lc_label_set *labels, int pred, const double *probs) {
    if (!probs) {
        printf("%s\n", labels->name[pred]);
        return;
    }
    lc_strbuf line, *b = &line;
    lc_strbuf_init(b);
    lc_strbuf_puts(b, "{\"label\":");
    lc_strbuf_json_string(b, labels->name[pred]);
    lc_strbuf_puts(b, ",\"probs\":{");
    for (int k = 0; k < labels->n; k++) {
        if (k) lc_strbuf_puts(b, ",");
        lc_strbuf_json_string(b, labels->name[k]);
        lc_strbuf_printf(b, ":%s", lc_json_g(probs[k]));
    }
    lc_strbuf_puts(b, "}}");
    printf("%s\n", b->failed ? "{}" : b->data);
    lc_strbuf_free(b);
}

int lc_cmd_predict(int argc, char **argv) {
    const char *ckpt = NULL, *text_col = NULL;
    int batch = 16, threads = 0, tsv = 0, want_probs = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "classifier or seq2seq checkpoint (required)", 0},
        {"--tsv", OPT_FLAG, &tsv, 0, 0, "the input is a TSV file with a header, plain or gzip (default: one example per line)", 0},
        {"--text-col", OPT_STR, &text_col, 0, 0, "--tsv: the text column, name or number from 1 (default Source, else the last)", 0},
        {"--probs", OPT_FLAG, &want_probs, 0, 0, "print {\"label\":..,\"probs\":{LABEL:P,..}} per input (JSON lines)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "examples per forward pass (default 16)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    char *pos[1];
    int n_pos = 0;
    int rc = lc_parse_opts_args("predict", "--ckpt CKPT [options] [FILE|-]", opts, n_opts, argc, argv, pos, 1, &n_pos);
    if (rc >= 0) return rc;
    const char *path = n_pos ? pos[0] : "-";
    if (!ckpt) { lc_cli_error("predict: --ckpt is required"); return LC_EXIT_USAGE; }
    if (text_col && !tsv) { lc_cli_error("predict: --text-col needs --tsv"); return LC_EXIT_USAGE; }
    const char *name = strcmp(path, "-") ? path : "standard input";
    char *buf = NULL;
    size_t size = 0;
    lc_status st = read_input(path, tsv, &buf, &size);
    lc_threads_set_default(threads);
    const int seq2seq = !st && lc_ckpt_is_model(ckpt, "seq2seq");
    if (seq2seq && want_probs) st = lc_fail(LC_ERR_ARG, "predict: --probs is for classifiers: %s is a seq2seq model", ckpt);
    lc_classifier *m = NULL;
    lc_label_set labels = {0, NULL};
    lc_word_vocab *v = NULL;
    if (!st && !seq2seq) st = lc_classifier_load(ckpt, batch, 0, &m, NULL, &labels, &v);
    if (!st && !seq2seq) st = lc_cli_check_trained_head(m, ckpt);
    long n = 0, cap = 0, line_no = 0;
    const uint8_t **text = NULL;
    size_t *len = NULL;
    int col = -1;
    for (char *line = buf, *next; !st && line < buf + size; line = next) {
        char *end = memchr(line, '\n', (size_t)(buf + size - line));
        next = end ? end + 1 : buf + size;
        if (end) *end = 0;
        else end = buf + size; /* already a NUL */
        size_t ll = strlen(line);
        line_no++;
        if (line + ll != end) { /* a NUL before the line's end: refused, not cut short */
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: a NUL byte at column %zu: the input must be text", name, line_no, ll + 1);
            break;
        }
        if (ll && line[ll - 1] == '\r') line[--ll] = 0;
        if (tsv && line_no == 1) {
            if ((col = column_of(line, text_col)) < 0) st = lc_fail(LC_ERR_ARG, "%s: no column '%s' in the header", name, text_col);
            continue;
        }
        size_t tl = ll;
        const char *t = tsv ? field(line, col, &tl) : line;
        if (!t) { st = lc_fail(LC_ERR_FORMAT, "%s:%ld: no column %d", name, line_no, col + 1); break; }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            const uint8_t **t2 = realloc(text, sizeof *text * (size_t)cap);
            size_t *l2 = t2 ? realloc(len, sizeof *len * (size_t)cap) : NULL;
            if (t2) text = t2;
            if (l2) len = l2;
            if (!t2 || !l2) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", name); break; }
        }
        text[n] = (const uint8_t *)t, len[n++] = tl;
    }
    if (!st && n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: no examples after the header", name); /* --tsv: a header only */
    if (!st && seq2seq) {
        const lc_cli_texts all = {n, text, len};
        rc = lc_cli_predict_seq2seq(ckpt, &all, batch);
        free(text), free(len), free(buf);
        return rc;
    }
    const int classes = labels.n;
    int *pred = st ? NULL : malloc(sizeof(int) * (size_t)n);
    double *probs = st || !want_probs ? NULL : malloc(sizeof(double) * (size_t)n * (size_t)classes);
    if (!st && (!pred || (want_probs && !probs))) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st) st = lc_classifier_classify_texts(m, v, n, text, len, batch, pred, probs);
    for (long i = 0; !st && i < n; i++) print_prediction(&labels, pred[i], probs ? probs + (size_t)i * classes : NULL);
    rc = st ? lc_cli_fail(st) : LC_EXIT_OK;
    free(pred), free(probs), free(text), free(len), free(buf);
    lc_label_set_free(&labels);
    lc_word_vocab_free(v);
    lc_classifier_free(m);
    return rc;
}
