/* Labelled TSV files for classification, and files of source/target pairs for seq2seq (the same reader, the
 * label column kept as a second text): read as a stream of lines (lra/tsv_source.c: plain, or gzip),
 * a header line naming the columns, one example per line, within limits on a line and on the examples
 * held; the label column read as strings and collected into a sorted label set, the text column kept as
 * bytes. Also the
 * label set as data: lookup, and a printable serialization for checkpoints. Formats: docs/guides/classify.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "lra/lra.h"

/* ------------------------------------------------------------------------------------------ labels */

/* A label that is a decimal integer written the canonical way ("0", "17", "-3"; no '+', no leading zero),
 * stored in *v. Such labels sort by value when every label of a set is one. */
static int canonical_int(const char *s, long long *v) {
    const char *p = s + (s[0] == '-');
    size_t n = strlen(p);
    if (n == 0 || n > 18 || (p[0] == '0' && (n > 1 || s[0] == '-'))) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return 0;
    *v = strtoll(s, NULL, 10);
    return 1;
}

/* Sort keys of a label: its value when every label of the set is a canonical integer, else its bytes. */
typedef struct {
    long long v;
    int numeric;
    char *s;
} label_key;

static int label_cmp(const void *a, const void *b) {
    const label_key *x = a, *y = b;
    if (x->numeric) return (x->v > y->v) - (x->v < y->v);
    return strcmp(x->s, y->s);
}

/* Sorts name[0..n) in place: by value when all are canonical integers, else bytewise (strcmp). */
static int sort_labels(char **name, int n) {
    label_key *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k) return -1;
    int numeric = 1;
    for (int i = 0; i < n; i++) {
        k[i].s = name[i];
        if (!canonical_int(name[i], &k[i].v)) numeric = 0;
    }
    for (int i = 0; i < n; i++) k[i].numeric = numeric;
    qsort(k, (size_t)n, sizeof *k, label_cmp);
    for (int i = 0; i < n; i++) name[i] = k[i].s;
    free(k);
    return 0;
}

void lc_label_set_free(lc_label_set *s) {
    if (!s->name) return;
    for (int i = 0; i < s->n; i++) free(s->name[i]);
    free(s->name);
    s->name = NULL;
    s->n = 0;
}

int lc_label_set_find(const lc_label_set *s, const char *label) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], label) == 0) return i;
    return -1;
}

lc_status lc_label_set_save(const lc_label_set *s, char **out) {
    lc_clear_error();
    *out = NULL;
    lc_lra_buf b = {0};
    int err = lc_lra_buf_printf(&b, "longctx-labels 1 %d\n", s->n);
    for (int i = 0; i < s->n && !err; i++)
        err = lc_lra_buf_put_escaped(&b, (const uint8_t *)s->name[i], strlen(s->name[i])) || lc_lra_buf_put(&b, "\n", 1);
    if (err) {
        free(b.p);
        return lc_fail(LC_ERR_NOMEM, "label set: out of memory");
    }
    *out = b.p;
    return LC_OK;
}

/* The next line of text[0..len) from *pos (the last line may lack its '\n'): its start and length without
 * the '\n'; 0 at the end. */
static long next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *line_len) {
    if (*pos >= len) return 0;
    const char *s = text + *pos;
    const char *e = memchr(s, '\n', len - *pos);
    size_t n = e ? (size_t)(e - s) : len - *pos;
    *line = s;
    *line_len = n;
    *pos += n + (e != NULL);
    return 1;
}

lc_status lc_label_set_load(const char *text, lc_label_set *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    size_t len = strlen(text), pos = 0, ll;
    const char *line;
    int n = -1, used = 0;
    if (!next_line(text, len, &pos, &line, &ll) || sscanf(line, "longctx-labels 1 %d", &n) != 1 || n < 1 ||
        n > LC_MAX_LABELS)
        return lc_fail(LC_ERR_FORMAT, "label set: not a longctx label set (expected 'longctx-labels 1 N', "
                       "1 <= N <= %d, on the first line)", LC_MAX_LABELS);
    out->name = calloc((size_t)n, sizeof *out->name);
    lc_str_index seen = {0};
    if (!out->name || lc_str_index_init(&seen, (size_t)n)) {
        free(out->name);
        out->name = NULL;
        return lc_fail(LC_ERR_NOMEM, "label set: out of memory");
    }
    lc_status st = LC_OK;
    for (int i = 0; i < n && !st; i++) {
        if (!next_line(text, len, &pos, &line, &ll)) {
            st = lc_fail(LC_ERR_FORMAT, "label set: %d labels announced, %d found", n, i);
            break;
        }
        char *name = malloc(ll + 1);
        size_t nl;
        if (!name) { st = lc_fail(LC_ERR_NOMEM, "label set: out of memory"); break; }
        out->name[used++] = name;
        out->n = used;
        if (lc_lra_unescape(line, ll, (uint8_t *)name, &nl) || nl == 0) {
            st = lc_fail(LC_ERR_FORMAT, "label set: label %d is empty or badly escaped", i + 1);
            break;
        }
        name[nl] = '\0';
        for (size_t k = 0; k < nl; k++)
            if ((uint8_t)name[k] < 0x20 || name[k] == 0x7f) {
                st = lc_fail(LC_ERR_FORMAT, "label set: label %d has a control byte", i + 1);
                break;
            }
        lc_str_slot *e = st ? NULL : lc_str_index_slot(&seen, name);
        if (e && e->s) st = lc_fail(LC_ERR_FORMAT, "label set: label %d ('%.40s') appears twice", i + 1, name);
        else if (e) e->s = name, e->id = i;
    }
    lc_str_index_free(&seen);
    if (!st && pos < len) st = lc_fail(LC_ERR_FORMAT, "label set: more lines than the %d labels announced", n);
    if (st) lc_label_set_free(out);
    return st;
}

/* ------------------------------------------------------------------------------------------ TSV */

void lc_labelled_free(lc_labelled_data *d) {
    free(d->text);
    free(d->text_len);
    free(d->label);
    free(d->line);
    free(d->buf_);
    lc_label_set_free(&d->labels);
    memset(d, 0, sizeof *d);
}

/* Column `spec` of the header: a column name first, else a 1-based number; -1 after setting the error. */
static int find_column(const char *path, char **names, int ncol, const char *spec, const char *role) {
    for (int c = 0; c < ncol; c++)
        if (strcmp(names[c], spec) == 0) return c;
    char *end;
    errno = 0;
    long v = spec[0] >= '0' && spec[0] <= '9' ? strtol(spec, &end, 10) : -1;
    if (v >= 0 && !errno && !*end) {
        if (v >= 1 && v <= ncol) return (int)v - 1;
        lc_fail(LC_ERR_FORMAT, "%s: no column %s for the %s (the header has %d column%s, numbered from 1)", path,
                spec, role, ncol, ncol == 1 ? "" : "s");
        return -1;
    }
    char list[160];
    size_t k = 0;
    list[0] = '\0';
    for (int c = 0; c < ncol && k < sizeof list - 8; c++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", c ? ", " : "", names[c]);
    if (k >= sizeof list - 8) snprintf(list + sizeof list - 8, 8, ", ...");
    lc_fail(LC_ERR_FORMAT, "%s: no column named '%.60s' for the %s (the header has: %s)", path, spec, role, list);
    return -1;
}

/* Lines of a source, one at a time, each into `line` (without its '\n'; the last may lack one). */
typedef struct {
    const char *path;
    lc_tsv_source *src;
    char *chunk;
    size_t pos, len, max_line;
    int eof;
    long lineno;
    lc_lra_buf line;
    lc_status err;
} line_reader;

#define CHUNK (1 << 16)

/* 1: the next line is in r->line; 0: the end; -1 with the error in r->err. */
static int read_line(line_reader *r) {
    r->line.n = 0;
    int any = 0;
    for (;;) {
        if (r->pos == r->len) {
            size_t k = 0;
            if (!r->eof && (r->err = lc_tsv_source_read(r->src, r->chunk, CHUNK, &k))) return -1;
            if (k == 0) {
                r->eof = 1;
                r->lineno += any;
                return any;
            }
            r->pos = 0, r->len = k;
        }
        const char *s = r->chunk + r->pos, *e = memchr(s, '\n', r->len - r->pos);
        const size_t n = e ? (size_t)(e - s) : r->len - r->pos;
        if (r->line.n + n > r->max_line) {
            r->err = lc_fail(LC_ERR_FORMAT, "%s:%ld: a line longer than %zu bytes, the most a line may have", r->path,
                             r->lineno + 1, r->max_line);
            return -1;
        }
        if (lc_lra_buf_put(&r->line, s, n)) {
            r->err = lc_fail(LC_ERR_NOMEM, "%s: out of memory", r->path);
            return -1;
        }
        any = 1;
        r->pos += n + (e != NULL);
        if (e) {
            r->lineno++;
            return 1;
        }
    }
}

/* The examples read so far: texts back to back (each NUL-terminated) in `texts` at off[i]. */
typedef struct {
    long n, cap;
    size_t *off, *len;
    int *label;
    long *line;
    lc_lra_buf texts;
} examples;

static int examples_add(examples *x, const char *txt, size_t txt_len, int label, long lineno) {
    if (x->n == x->cap) {
        const long cap = x->cap ? 2 * x->cap : 1024;
        size_t *off = realloc(x->off, (size_t)cap * sizeof *off);
        if (off) x->off = off;
        size_t *len = realloc(x->len, (size_t)cap * sizeof *len);
        if (len) x->len = len;
        int *lab = realloc(x->label, (size_t)cap * sizeof *lab);
        if (lab) x->label = lab;
        long *line = realloc(x->line, (size_t)cap * sizeof *line);
        if (line) x->line = line;
        if (!off || !len || !lab || !line) return -1;
        x->cap = cap;
    }
    x->off[x->n] = x->texts.n;
    if (lc_lra_buf_put(&x->texts, txt, txt_len) || lc_lra_buf_put(&x->texts, "", 1)) return -1;
    x->len[x->n] = txt_len, x->label[x->n] = label, x->line[x->n] = lineno;
    x->n++;
    return 0;
}

/* The header's columns: names[ncol] point into the line, cut in place. */
static lc_status read_header(const char *path, char *header, size_t ll, char ***names_out, int *ncol_out) {
    *names_out = NULL;
    int ncol = 1;
    for (size_t i = 0; i < ll; i++) ncol += header[i] == '\t';
    if (ncol > LC_TSV_MAX_COLUMNS)
        return lc_fail(LC_ERR_FORMAT, "%s:1: %d columns in the header; at most %d", path, ncol, LC_TSV_MAX_COLUMNS);
    if (memchr(header, '\0', ll)) return lc_fail(LC_ERR_FORMAT, "%s:1: a NUL byte in the header", path);
    char **names = malloc((size_t)ncol * sizeof *names);
    if (!names) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    *names_out = names;
    *ncol_out = ncol;
    for (int c = 0, start = 0; c < ncol; c++) {
        char *tab = memchr(header + start, '\t', ll - (size_t)start);
        if (tab) *tab = '\0';
        names[c] = header + start;
        start += (int)strlen(names[c]) + 1;
        if (!names[c][0])
            return lc_fail(LC_ERR_FORMAT, "%s:1: column %d of the header has no name (the first line must name the "
                           "columns)", path, c + 1);
        for (int p = 0; p < c; p++)
            if (strcmp(names[p], names[c]) == 0)
                return lc_fail(LC_ERR_FORMAT, "%s:1: the header names two columns '%.40s': is the header line missing?",
                               path, names[c]);
    }
    return LC_OK;
}

/* The label and text columns (defaults: LRA's ListOps names, Target and Source, when the header has them,
 * else the first and the last). */
static lc_status pick_columns(const char *path, char **names, int ncol, const char *label_col, const char *text_col,
                              int pairs, int *lc_out, int *tc_out) {
    lc_label_set header_names = {ncol, names};
    const char *role[2] = {pairs ? "target" : "label", pairs ? "source" : "text"};
    int lc, tc;
    if (label_col) lc = find_column(path, names, ncol, label_col, role[0]);
    else if ((lc = lc_label_set_find(&header_names, "Target")) < 0) lc = 0;
    if (lc < 0) return LC_ERR_FORMAT;
    if (text_col) tc = find_column(path, names, ncol, text_col, role[1]);
    else if ((tc = lc_label_set_find(&header_names, "Source")) < 0) tc = ncol - 1;
    if (tc < 0) return LC_ERR_FORMAT;
    if (lc == tc)
        return lc_fail(LC_ERR_FORMAT, "%s: the %s and the %s would both be column %d ('%.40s'); a %s file needs two "
                       "columns", path, role[0], role[1], lc + 1, names[lc], pairs ? "pairs" : "labelled");
    *lc_out = lc, *tc_out = tc;
    return LC_OK;
}

/* One example line (NUL-terminated at ll, cut in place): its label and text fields, the label checked
 * unless the file holds pairs (a target is text, and may be empty). */
static lc_status split_row(const char *path, long lineno, char *line, size_t ll, int ncol, int lc, int tc,
                           char **names, int pairs, char **lab, size_t *lab_out, char **txt, size_t *txt_len) {
    int got = 1;
    for (size_t i = 0; i < ll; i++) got += line[i] == '\t';
    if (got != ncol)
        return lc_fail(LC_ERR_FORMAT, "%s:%ld: %d column%s, the header has %d", path, lineno, got, got == 1 ? "" : "s",
                       ncol);
    /* fields found with memchr, not strchr: a text may hold NUL bytes (it is kept with its length) */
    char *field = line;
    size_t lab_len = 0;
    for (int c = 0; c < ncol; c++) {
        char *tab = c + 1 < ncol ? memchr(field, '\t', (size_t)(line + ll - field)) : line + ll;
        size_t fl = (size_t)(tab - field);
        *tab = '\0';
        if (c == lc) *lab = field, lab_len = fl;
        if (c == tc) *txt = field, *txt_len = fl;
        field = tab + 1;
    }
    *lab_out = lab_len;
    if (pairs) return LC_OK;
    if (lab_len == 0)
        return lc_fail(LC_ERR_FORMAT, "%s:%ld: empty label (column %d, '%.40s')", path, lineno, lc + 1, names[lc]);
    for (size_t k = 0; k < lab_len; k++)
        if ((unsigned char)(*lab)[k] < 0x20 || (*lab)[k] == 0x7f)
            return lc_fail(LC_ERR_FORMAT, "%s:%ld: control byte 0x%02x in the label", path, lineno,
                           (unsigned char)(*lab)[k]);
    return LC_OK;
}

/* The label set sorted, and every example's label (ids in order of first appearance) renumbered into it;
 * takes the strings of first[0..n) (the array stays the caller's). */
static lc_status sort_label_ids(const char *path, char **first, int n, examples *x, lc_label_set *out) {
    out->name = malloc((size_t)(n ? n : 1) * sizeof *out->name);
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    lc_str_index sorted = {0};
    lc_status st = LC_OK;
    if (!out->name || !order) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!out->name) {
        for (int i = 0; i < n; i++) free(first[i]);
    } else {
        memcpy(out->name, first, (size_t)n * sizeof *first);
        out->n = n;
    }
    if (!st && (sort_labels(out->name, n) || lc_str_index_of_set(&sorted, out)))
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n && !st; i++) order[i] = lc_str_index_slot(&sorted, first[i])->id;
    for (long i = 0; i < x->n && !st; i++) x->label[i] = order[x->label[i]];
    lc_str_index_free(&sorted);
    free(order);
    return st;
}

lc_status lc_labelled_read(const char *path, const char *label_col, const char *text_col, lc_labelled_data *out) {
    return lc_labelled_read_limited(path, label_col, text_col, NULL, out);
}

/* The pairs of x (source then target, two examples a row) into *p, which takes their buffers. */
static lc_status take_pairs(const char *path, examples *x, lc_pair_data *p) {
    const long n = x->n / 2;
    p->src = malloc(sizeof *p->src * (size_t)n), p->tgt = malloc(sizeof *p->tgt * (size_t)n);
    p->src_len = malloc(sizeof *p->src_len * (size_t)n), p->tgt_len = malloc(sizeof *p->tgt_len * (size_t)n);
    p->line = malloc(sizeof *p->line * (size_t)n);
    if (!p->src || !p->tgt || !p->src_len || !p->tgt_len || !p->line) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    for (long i = 0; i < n; i++) {
        p->src[i] = (const uint8_t *)x->texts.p + x->off[2 * i], p->src_len[i] = x->len[2 * i];
        p->tgt[i] = (const uint8_t *)x->texts.p + x->off[2 * i + 1], p->tgt_len[i] = x->len[2 * i + 1];
        p->line[i] = x->line[2 * i];
    }
    p->n = n, p->buf_ = x->texts.p, x->texts.p = NULL;
    return LC_OK;
}

/* A labelled file into *out, or (pairs not NULL) a file of pairs into *pairs: the label column is the
 * target, kept as text. */
static lc_status read_tsv(const char *path, const char *label_col, const char *text_col, const lc_tsv_limits *limits,
                          lc_labelled_data *out, lc_pair_data *pairs) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    const long max_examples = limits && limits->max_examples > 0 ? limits->max_examples : LC_TSV_MAX_EXAMPLES;
    line_reader r = {path, NULL, NULL, 0, 0, limits && limits->max_line > 0 ? limits->max_line : LC_TSV_MAX_LINE,
                     0, 0, {0}, LC_OK};
    examples x = {0};
    char **names = NULL, **label_names = NULL;
    char *header = NULL;
    int ncol = 0, lc = 0, tc = 0, nlabels = 0, cap_labels = 0, got;
    lc_str_index labels = {0};
    lc_status st = lc_tsv_source_open(path, &r.src, &out->gzip);
    if (st) return st;
    if (!(r.chunk = malloc(CHUNK)) || lc_str_index_init(&labels, LC_MAX_LABELS)) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if ((got = read_line(&r)) <= 0) {
        st = got < 0 ? r.err : lc_fail(LC_ERR_FORMAT, "%s: file is empty", path);
        goto done;
    }
    size_t ll = r.line.n;
    if (ll && r.line.p[ll - 1] == '\r') ll--;
    if (!(header = malloc(ll + 1))) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    memcpy(header, r.line.p, ll);
    header[ll] = '\0';
    if ((st = read_header(path, header, ll, &names, &ncol)) ||
        (st = pick_columns(path, names, ncol, label_col, text_col, pairs != NULL, &lc, &tc)))
        goto done;
    out->n_cols = ncol, out->label_col = lc, out->text_col = tc;

    long blank_at = 0; /* first of a run of empty lines: an error unless only empty lines follow */
    while ((got = read_line(&r)) > 0) {
        char *line = r.line.p;
        ll = r.line.n;
        if (ll && line[ll - 1] == '\r') ll--;
        line[ll] = '\0';
        if (ll == 0) {
            if (!blank_at) blank_at = r.lineno;
            continue;
        }
        if (blank_at) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: empty line (the header has %d columns)", path, blank_at, ncol);
            goto done;
        }
        char *lab = NULL, *txt = NULL;
        size_t txt_len = 0, lab_len = 0;
        if ((st = split_row(path, r.lineno, line, ll, ncol, lc, tc, names, pairs != NULL, &lab, &lab_len, &txt, &txt_len)))
            goto done;
        if (x.n / (pairs ? 2 : 1) == max_examples) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: more than %ld examples, the most read from one file (--max-examples)",
                         path, r.lineno, max_examples);
            goto done;
        }
        if (pairs) {
            if (examples_add(&x, txt, txt_len, -1, r.lineno) || examples_add(&x, lab, lab_len, -1, r.lineno)) {
                st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
                goto done;
            }
            continue;
        }
        /* label id by first appearance */
        lc_str_slot *e = lc_str_index_slot(&labels, lab);
        if (!e->s) {
            if (nlabels == LC_MAX_LABELS) {
                st = lc_fail(LC_ERR_FORMAT, "%s:%ld: more than %d distinct labels (is the label column right?)", path,
                             r.lineno, LC_MAX_LABELS);
                goto done;
            }
            if (nlabels == cap_labels) {
                cap_labels = cap_labels ? 2 * cap_labels : 16;
                char **nn = realloc(label_names, (size_t)cap_labels * sizeof *nn);
                if (!nn) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path); goto done; }
                label_names = nn;
            }
            if (!(label_names[nlabels] = strdup(lab))) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path); goto done; }
            e->s = label_names[nlabels];
            e->id = nlabels++;
        }
        if (examples_add(&x, txt, txt_len, e->id, r.lineno)) {
            st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
    }
    if (got < 0) {
        st = r.err;
        goto done;
    }
    if (x.n == 0) {
        st = lc_fail(LC_ERR_FORMAT, "%s: no examples after the header line", path);
        goto done;
    }
    if (pairs) {
        st = take_pairs(path, &x, pairs);
        goto done;
    }
    /* a header that is really an example: its label column's name is one of the labels */
    const lc_str_slot *hit = lc_str_index_slot(&labels, names[lc]);
    if (hit->s) {
        long first = 0;
        while (x.label[first] != hit->id) first++;
        st = lc_fail(LC_ERR_FORMAT, "%s:1: the label column's name '%.40s' is also the label of line %ld: is "
                     "the header line missing? (the first line must name the columns)", path, names[lc], x.line[first]);
        goto done;
    }
    st = sort_label_ids(path, label_names, nlabels, &x, &out->labels);
    nlabels = 0; /* the strings are the label set's now */
    if (!st && !(out->text = malloc((size_t)x.n * sizeof *out->text))) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) {
        for (long i = 0; i < x.n; i++) out->text[i] = (const uint8_t *)x.texts.p + x.off[i];
        out->n = x.n;
        out->text_len = x.len, out->label = x.label, out->line = x.line, out->buf_ = x.texts.p;
        x.len = NULL, x.label = NULL, x.line = NULL, x.texts.p = NULL;
    }

done:
    lc_tsv_source_close(r.src);
    free(r.chunk);
    free(r.line.p);
    free(header);
    free(names);
    for (int i = 0; i < nlabels; i++) free(label_names[i]);
    free(label_names);
    lc_str_index_free(&labels);
    free(x.off), free(x.len), free(x.label), free(x.line), free(x.texts.p);
    if (st) lc_labelled_free(out);
    if (st && pairs) lc_pairs_free(pairs);
    return st;
}

lc_status lc_labelled_read_limited(const char *path, const char *label_col, const char *text_col,
                                   const lc_tsv_limits *limits, lc_labelled_data *out) {
    return read_tsv(path, label_col, text_col, limits, out, NULL);
}

lc_status lc_pairs_read(const char *path, const char *src_col, const char *tgt_col, const lc_tsv_limits *limits,
                        lc_pair_data *out) {
    lc_labelled_data unused;
    memset(out, 0, sizeof *out);
    return read_tsv(path, tgt_col, src_col, limits, &unused, out);
}

void lc_pairs_free(lc_pair_data *d) {
    free(d->src), free(d->tgt), free(d->src_len), free(d->tgt_len), free(d->line), free(d->buf_);
    memset(d, 0, sizeof *d);
}

lc_status lc_labelled_map(const lc_labelled_data *d, const lc_label_set *s, int *ids, long *unseen) {
    lc_clear_error();
    int *map = malloc((size_t)(d->labels.n ? d->labels.n : 1) * sizeof *map);
    lc_str_index x = {0};
    if (!map || lc_str_index_of_set(&x, s)) {
        free(map);
        return lc_fail(LC_ERR_NOMEM, "labels: out of memory");
    }
    for (int i = 0; i < d->labels.n; i++) {
        const lc_str_slot *e = lc_str_index_slot(&x, d->labels.name[i]);
        map[i] = e->s ? e->id : -1;
    }
    lc_str_index_free(&x);
    long u = 0;
    for (long i = 0; i < d->n; i++) {
        ids[i] = map[d->label[i]];
        u += ids[i] < 0;
    }
    free(map);
    if (unseen) *unseen = u;
    return LC_OK;
}
