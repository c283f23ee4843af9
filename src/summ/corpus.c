/* The BBC News Summary layout (ROOT/articles/<topic>/<name>.txt with ROOT/summaries/<topic>/<name>.txt):
 * listing its documents in sorted path order with the test / valid / train split, and reading one
 * document (title line, body sentences, reference summary). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "summ/summ.h"

typedef struct {
    char **rel; /* paths under articles/ */
    int n, cap;
} name_list;

static void names_free(name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->rel[i]);
    free(l->rel);
}

static lc_status names_add(name_list *l, const char *prefix, const char *name) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        char **r = realloc(l->rel, (size_t)cap * sizeof *r);
        if (!r) return lc_fail(LC_ERR_NOMEM, "documents: out of memory for %d names", cap);
        l->rel = r;
        l->cap = cap;
    }
    size_t a = strlen(prefix), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) return lc_fail(LC_ERR_NOMEM, "documents: out of memory for a name");
    if (a) {
        memcpy(s, prefix, a);
        s[a] = '/';
        memcpy(s + a + 1, name, b + 1);
    } else memcpy(s, name, b + 1);
    l->rel[l->n++] = s;
    return LC_OK;
}

static char *join3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lcn = c ? strlen(c) : 0;
    char *s = malloc(la + lb + lcn + 3);
    if (!s) return NULL;
    sprintf(s, c ? "%s/%s/%s" : "%s/%s", a, b, c);
    return s;
}

static int has_txt_suffix(const char *name) {
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".txt") == 0;
}

/* Adds the .txt files of dir (named `prefix` under articles/) and, when depth > 0, of its
 * subdirectories. Hidden entries (a leading '.') are skipped. */
static lc_status scan(const char *dir, const char *prefix, int depth, name_list *l) {
    DIR *d = opendir(dir);
    if (!d) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    lc_status st = LC_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *full = join3(dir, e->d_name, NULL);
        if (!full) { st = lc_fail(LC_ERR_NOMEM, "documents: out of memory for a path"); break; }
        struct stat sb;
        if (stat(full, &sb) != 0) {
            st = lc_fail(LC_ERR_IO, "%s: cannot open: %s", full, strerror(errno));
        } else if (S_ISDIR(sb.st_mode) && depth > 0) {
            st = scan(full, e->d_name, depth - 1, l);
        } else if (S_ISREG(sb.st_mode) && has_txt_suffix(e->d_name)) {
            st = names_add(l, prefix, e->d_name);
        }
        free(full);
    }
    closedir(d);
    return st;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

lc_part lc_doc_part(int index) {
    return index % 10 == 0 ? LC_PART_TEST : index % 10 == 5 ? LC_PART_VALID : LC_PART_TRAIN;
}

lc_status lc_doc_list_open(const char *root, lc_part part, lc_doc_list *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(root, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", root, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return lc_fail(LC_ERR_IO, "%s: not a directory (expected ROOT/articles/ and ROOT/summaries/)", root);
    char *adir = join3(root, "articles", NULL), *sdir = join3(root, "summaries", NULL);
    name_list l = {0};
    lc_status st = LC_OK;
    if (!adir || !sdir) {
        st = lc_fail(LC_ERR_NOMEM, "documents: out of memory for a path");
    } else if (!is_dir(adir)) {
        st = lc_fail(LC_ERR_FORMAT, "%s: no articles/ directory (expected ROOT/articles/<topic>/<name>.txt)", root);
    } else if (!is_dir(sdir)) {
        st = lc_fail(LC_ERR_FORMAT, "%s: no summaries/ directory (expected ROOT/summaries/<topic>/<name>.txt)", root);
    } else if (!(st = scan(adir, "", 1, &l)) && l.n == 0) {
        st = lc_fail(LC_ERR_FORMAT, "%s: no .txt documents", adir);
    }
    if (!st) {
        qsort(l.rel, (size_t)l.n, sizeof *l.rel, cmp_str);
        int want = 0;
        for (int i = 0; i < l.n; i++) want += part == LC_PART_ALL || lc_doc_part(i) == part;
        out->total = l.n;
        out->article = calloc((size_t)want + 1, sizeof *out->article);
        out->summary = calloc((size_t)want + 1, sizeof *out->summary);
        out->index = calloc((size_t)want + 1, sizeof *out->index);
        if (!out->article || !out->summary || !out->index) st = lc_fail(LC_ERR_NOMEM, "documents: out of memory");
        for (int i = 0; i < l.n && !st; i++) {
            if (part != LC_PART_ALL && lc_doc_part(i) != part) continue;
            int k = out->n;
            out->article[k] = join3(adir, l.rel[i], NULL);
            out->summary[k] = join3(sdir, l.rel[i], NULL);
            out->index[k] = i;
            out->n++;
            if (!out->article[k] || !out->summary[k]) { st = lc_fail(LC_ERR_NOMEM, "documents: out of memory"); break; }
            struct stat ss;
            if (stat(out->summary[k], &ss) != 0)
                st = lc_fail(LC_ERR_IO, "%s: cannot open: %s (the summary of %s)", out->summary[k], strerror(errno),
                             out->article[k]);
        }
    }
    names_free(&l);
    free(adir);
    free(sdir);
    if (st) lc_doc_list_free(out);
    return st;
}

void lc_doc_list_free(lc_doc_list *l) {
    for (int i = 0; i < l->n; i++) {
        if (l->article) free(l->article[i]);
        if (l->summary) free(l->summary[i]);
    }
    free(l->article);
    free(l->summary);
    free(l->index);
    memset(l, 0, sizeof *l);
}

lc_status lc_document_read(const char *article_path, const char *summary_path, lc_document *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    char *text;
    int latin1;
    lc_status st = lc_text_read(article_path, &text, NULL, &latin1);
    if (st) return st;
    out->latin1 = latin1;
    /* Line 1 is the title; the body is everything after it. */
    char *nl = strchr(text, '\n');
    char *body = nl ? nl + 1 : text + strlen(text);
    if (nl) *nl = '\0';
    if (!(out->title = lc_collapse_whitespace(text))) {
        st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", article_path);
        goto fail;
    }
    if ((st = lc_sentences_split(body, &out->sents))) goto fail;
    if (out->sents.n == 0) {
        st = lc_fail(LC_ERR_FORMAT, "%s: empty document: no text after the title line", article_path);
        goto fail;
    }
    free(text);
    text = NULL;
    if (summary_path) {
        if ((st = lc_text_read(summary_path, &out->reference, NULL, &latin1))) goto fail;
        out->latin1 |= latin1 << 1;
        const char *p = out->reference;
        while (*p == ' ' || (*p >= '\t' && *p <= '\r')) p++;
        if (!*p) {
            st = lc_fail(LC_ERR_FORMAT, "%s: empty summary", summary_path);
            goto fail;
        }
    }
    return LC_OK;
fail:
    free(text);
    lc_document_free(out);
    return st;
}

void lc_document_free(lc_document *d) {
    free(d->title);
    lc_sentences_free(&d->sents);
    free(d->reference);
    memset(d, 0, sizeof *d);
}
