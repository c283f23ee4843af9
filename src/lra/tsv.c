/* Labelled TSV files for classification: read whole (plain, or gzip through zlib when built with it,
 * recognised by the gzip magic bytes), a header line naming the columns, one example per line; the label
 * column read as strings and collected into a sorted label set, the text column kept as bytes. Also the
 * label set as data: lookup, and a printable serialization for checkpoints. Formats: docs/lra.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef LC_USE_ZLIB
#include <zlib.h>
#endif

#include "core/files.h"
#include "core/status.h"
#include "lra/lra.h"

/* Appends everything fd yields to the buffer (plain files). */
static lc_status read_plain(const char *path, int fd, lc_lra_buf *b) {
    char chunk[1 << 16];
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0) {
            if (errno == EINTR) continue;
            return lc_fail(LC_ERR_IO, "%s: read error: %s", path, strerror(errno));
        }
        if (k == 0) return LC_OK;
        if (b->n + (size_t)k > LC_TSV_MAX_BYTES)
            return lc_fail(LC_ERR_FORMAT, "%s: larger than %u bytes, the most a TSV file may have", path,
                           (unsigned)LC_TSV_MAX_BYTES);
        if (lc_lra_buf_put(b, chunk, (size_t)k)) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    }
}

#ifdef LC_USE_ZLIB
/* zlib's message without the "<fd:N>: " it puts in front for a stream opened with gzdopen. */
static const char *gz_message(gzFile z, int *code) {
    const char *msg = gzerror(z, code);
    if (*code == Z_ERRNO) return strerror(errno);
    const char *colon = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ">: ") : NULL;
    return colon ? colon + 3 : msg;
}

/* Decompresses a gzip file (every member, as gunzip does). Takes ownership of fd. */
static lc_status read_gzip(const char *path, int fd, lc_lra_buf *b) {
    gzFile z = gzdopen(fd, "rb");
    if (!z) {
        close(fd);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory opening the gzip stream", path);
    }
    char chunk[1 << 16];
    lc_status st = LC_OK;
    for (;;) {
        int k = gzread(z, chunk, sizeof chunk);
        if (k < 0) {
            int code;
            const char *msg = gz_message(z, &code);
            st = lc_fail(code == Z_ERRNO ? LC_ERR_IO : LC_ERR_FORMAT, "%s: %s: %s", path,
                         code == Z_ERRNO ? "read error" : "damaged gzip data", msg);
            break;
        }
        if (k == 0) {
            int code;
            const char *msg = gz_message(z, &code);
            /* a file cut short reads as a clean end followed by this error */
            if (code != Z_OK) st = lc_fail(LC_ERR_FORMAT, "%s: damaged gzip data: %s", path, msg);
            break;
        }
        if (b->n + (size_t)k > LC_TSV_MAX_BYTES) {
            st = lc_fail(LC_ERR_FORMAT, "%s: more than %u bytes once decompressed, the most a TSV file may have",
                         path, (unsigned)LC_TSV_MAX_BYTES);
            break;
        }
        if (lc_lra_buf_put(b, chunk, (size_t)k)) {
            st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
    }
    gzclose(z);
    return st;
}
#endif

int lc_have_zlib(void) {
#ifdef LC_USE_ZLIB
    return 1;
#else
    return 0;
#endif
}

/* The file's bytes (decompressed), NUL-terminated, into *buf (free() it). */
static lc_status read_file(const char *path, char **buf, size_t *n, int *gzip) {
    *buf = NULL;
    *n = 0;
    *gzip = 0;
    struct stat sb;
    /* stat before open: opening a FIFO would wait for a writer */
    if (stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return lc_fail(LC_ERR_IO, "%s: is %s, expected a TSV file", path, lc_file_kind(sb.st_mode));
    int fd = open(path, O_RDONLY);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char magic[2];
    ssize_t k = pread(fd, magic, 2, 0);
    if (k < 0) {
        close(fd);
        return lc_fail(LC_ERR_IO, "%s: read error: %s", path, strerror(errno));
    }
    lc_lra_buf b = {0};
    lc_status st;
    if (k == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        *gzip = 1;
#ifdef LC_USE_ZLIB
        st = read_gzip(path, fd, &b);
#else
        close(fd);
        return lc_fail(LC_ERR_ARG, "%s: gzip-compressed, but this longctx was built without zlib: install zlib1g-dev "
                       "and rebuild (make clean && make), or gunzip the file", path);
#endif
    } else {
        st = read_plain(path, fd, &b);
        close(fd);
    }
    if (!st && b.n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: file is empty", path);
    if (st) {
        free(b.p);
        return st;
    }
    *buf = b.p;
    *n = b.n;
    return LC_OK;
}

lc_status lc_tsv_read_bytes(const char *path, char **buf, size_t *n, int *gzip) { return read_file(path, buf, n, gzip); }

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
    if (!out->name) return lc_fail(LC_ERR_NOMEM, "label set: out of memory");
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
        if (!st && lc_label_set_find(&(lc_label_set){i, out->name}, name) >= 0)
            st = lc_fail(LC_ERR_FORMAT, "label set: label %d ('%.40s') appears twice", i + 1, name);
    }
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

/* Label ids are first handed out in order of appearance through this table of (label, id). */
typedef struct {
    const char *s;
    int id;
} label_slot;

lc_status lc_labelled_read(const char *path, const char *label_col, const char *text_col, lc_labelled_data *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    char *buf;
    size_t size;
    int gzip;
    lc_status st = read_file(path, &buf, &size, &gzip);
    if (st) return st;
    out->buf_ = buf;
    out->gzip = gzip;

    /* Lines: count them, then cut the buffer into NUL-terminated lines and fields in place. */
    long nlines = 1;
    for (size_t i = 0; i < size; i++) nlines += buf[i] == '\n';
    char **names = NULL;
    label_slot *slots = NULL;
    size_t nslots = 1;
    while (nslots < 2 * (size_t)(nlines < 1024 ? 1024 : nlines)) nslots *= 2;
    int nlabels = 0, cap_labels = 0;
    char **label_names = NULL;

    size_t pos = 0, ll = 0;
    const char *cline = buf;
    next_line(buf, size, &pos, &cline, &ll); /* size > 0: there is a first line */
    char *header = (char *)cline;
    if (ll && header[ll - 1] == '\r') ll--;
    header[ll] = '\0';
    int ncol = 1;
    for (size_t i = 0; i < ll; i++) ncol += header[i] == '\t';
    if (ncol > LC_TSV_MAX_COLUMNS) {
        st = lc_fail(LC_ERR_FORMAT, "%s:1: %d columns in the header; at most %d", path, ncol, LC_TSV_MAX_COLUMNS);
        goto done;
    }
    names = malloc((size_t)ncol * sizeof *names);
    slots = calloc(nslots, sizeof *slots);
    out->text = malloc((size_t)nlines * sizeof *out->text);
    out->text_len = malloc((size_t)nlines * sizeof *out->text_len);
    out->label = malloc((size_t)nlines * sizeof *out->label);
    out->line = malloc((size_t)nlines * sizeof *out->line);
    if (!names || !slots || !out->text || !out->text_len || !out->label || !out->line) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (memchr(header, '\0', ll)) {
        st = lc_fail(LC_ERR_FORMAT, "%s:1: a NUL byte in the header", path);
        goto done;
    }
    for (int c = 0, start = 0; c < ncol; c++) {
        char *tab = memchr(header + start, '\t', ll - (size_t)start);
        if (tab) *tab = '\0';
        names[c] = header + start;
        start += (int)strlen(names[c]) + 1;
        if (!names[c][0]) {
            st = lc_fail(LC_ERR_FORMAT, "%s:1: column %d of the header has no name (the first line must name the "
                         "columns)", path, c + 1);
            goto done;
        }
        for (int p = 0; p < c; p++)
            if (strcmp(names[p], names[c]) == 0) {
                st = lc_fail(LC_ERR_FORMAT, "%s:1: the header names two columns '%.40s': is the header line missing?",
                             path, names[c]);
                goto done;
            }
    }
    /* defaults: LRA's ListOps names (Target, Source) when the header has them, else the first and the last */
    lc_label_set header_names = {ncol, names};
    int lc, tc;
    if (label_col) lc = find_column(path, names, ncol, label_col, "label");
    else if ((lc = lc_label_set_find(&header_names, "Target")) < 0) lc = 0;
    if (lc < 0) { st = LC_ERR_FORMAT; goto done; }
    if (text_col) tc = find_column(path, names, ncol, text_col, "text");
    else if ((tc = lc_label_set_find(&header_names, "Source")) < 0) tc = ncol - 1;
    if (tc < 0) { st = LC_ERR_FORMAT; goto done; }
    if (lc == tc) {
        st = lc_fail(LC_ERR_FORMAT, "%s: the label and the text would both be column %d ('%.40s'); a labelled file "
                     "needs two columns", path, lc + 1, names[lc]);
        goto done;
    }
    out->n_cols = ncol;
    out->label_col = lc;
    out->text_col = tc;

    long lineno = 1, n = 0;
    long blank_at = 0; /* first of a run of empty lines: an error unless only empty lines follow */
    while (next_line(buf, size, &pos, &cline, &ll)) {
        lineno++;
        char *line = (char *)cline;
        if (ll && line[ll - 1] == '\r') ll--;
        line[ll] = '\0';
        if (ll == 0) {
            if (!blank_at) blank_at = lineno;
            continue;
        }
        if (blank_at) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: empty line (the header has %d columns)", path, blank_at, ncol);
            goto done;
        }
        int got = 1;
        for (size_t i = 0; i < ll; i++) got += line[i] == '\t';
        if (got != ncol) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: %d column%s, the header has %d", path, lineno, got,
                         got == 1 ? "" : "s", ncol);
            goto done;
        }
        /* fields found with memchr, not strchr: a text may hold NUL bytes (it is kept with its length) */
        char *field = line, *lab = NULL, *txt = NULL;
        size_t txt_len = 0, lab_len = 0;
        for (int c = 0; c < ncol; c++) {
            char *tab = c + 1 < ncol ? memchr(field, '\t', (size_t)(line + ll - field)) : line + ll;
            size_t fl = (size_t)(tab - field);
            *tab = '\0';
            if (c == lc) {
                lab = field;
                lab_len = fl;
            }
            if (c == tc) {
                txt = field;
                txt_len = fl;
            }
            field = tab + 1;
        }
        if (lab_len == 0) {
            st = lc_fail(LC_ERR_FORMAT, "%s:%ld: empty label (column %d, '%.40s')", path, lineno, lc + 1, names[lc]);
            goto done;
        }
        for (size_t k = 0; k < lab_len; k++)
            if ((unsigned char)lab[k] < 0x20 || lab[k] == 0x7f) {
                st = lc_fail(LC_ERR_FORMAT, "%s:%ld: control byte 0x%02x in the label", path, lineno,
                             (unsigned char)lab[k]);
                goto done;
            }
        /* label id by first appearance */
        uint64_t h = lc_lra_hash(lab, strlen(lab));
        size_t s = (size_t)h & (nslots - 1);
        while (slots[s].s && strcmp(slots[s].s, lab) != 0) s = (s + 1) & (nslots - 1);
        if (!slots[s].s) {
            if (nlabels == LC_MAX_LABELS) {
                st = lc_fail(LC_ERR_FORMAT, "%s:%ld: more than %d distinct labels (is the label column right?)", path,
                             lineno, LC_MAX_LABELS);
                goto done;
            }
            if (nlabels == cap_labels) {
                cap_labels = cap_labels ? 2 * cap_labels : 16;
                char **nn = realloc(label_names, (size_t)cap_labels * sizeof *nn);
                if (!nn) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path); goto done; }
                label_names = nn;
            }
            slots[s].s = lab;
            slots[s].id = nlabels;
            label_names[nlabels++] = lab;
        }
        out->text[n] = (const uint8_t *)txt;
        out->text_len[n] = txt_len;
        out->label[n] = slots[s].id;
        out->line[n] = lineno;
        n++;
    }
    out->n = n;
    if (n == 0) {
        st = lc_fail(LC_ERR_FORMAT, "%s: no examples after the header line", path);
        goto done;
    }
    /* a header that is really an example: its label column's name is one of the labels */
    for (int i = 0; i < nlabels; i++)
        if (strcmp(label_names[i], names[lc]) == 0) {
            long first = 0;
            while (out->label[first] != i) first++;
            st = lc_fail(LC_ERR_FORMAT, "%s:1: the label column's name '%.40s' is also the label of line %ld: is "
                         "the header line missing? (the first line must name the columns)", path, names[lc],
                         out->line[first]);
            goto done;
        }

    /* the sorted label set, and every example's label renumbered into it */
    size_t nl = nlabels > 0 ? (size_t)nlabels : 1; /* n > 0, so nlabels > 0 */
    out->labels.name = calloc(nl, sizeof *out->labels.name);
    int *order = malloc(nl * sizeof *order);
    if (!out->labels.name || !order) {
        free(order);
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < nlabels; i++) {
        out->labels.name[i] = strdup(label_names[i]);
        if (!out->labels.name[i]) {
            free(order);
            out->labels.n = i;
            st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
    }
    out->labels.n = nlabels;
    if (sort_labels(out->labels.name, nlabels)) {
        free(order);
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < nlabels; i++) order[i] = lc_label_set_find(&out->labels, label_names[i]);
    for (long i = 0; i < n; i++) out->label[i] = order[out->label[i]];
    free(order);

done:
    free(names);
    free(slots);
    free(label_names);
    if (st) lc_labelled_free(out);
    return st;
}

lc_status lc_labelled_map(const lc_labelled_data *d, const lc_label_set *s, int *ids, long *unseen) {
    lc_clear_error();
    int *map = malloc((size_t)(d->labels.n ? d->labels.n : 1) * sizeof *map);
    if (!map) return lc_fail(LC_ERR_NOMEM, "labels: out of memory");
    for (int i = 0; i < d->labels.n; i++) map[i] = lc_label_set_find(s, d->labels.name[i]);
    long u = 0;
    for (long i = 0; i < d->n; i++) {
        ids[i] = map[d->label[i]];
        u += ids[i] < 0;
    }
    free(map);
    if (unseen) *unseen = u;
    return LC_OK;
}
