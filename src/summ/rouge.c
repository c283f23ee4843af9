/* ROUGE-1, ROUGE-2 and ROUGE-L F1 between a candidate and a reference text (Lin 2004, without stemming
 * or stop words): tokens are the runs of [a-z0-9] after mapping A-Z to a-z, n-gram overlaps use clipped
 * counts, ROUGE-L is the longest common subsequence of the two whole token sequences. Tokens become
 * dense ids first, so n-grams are integers and the LCS compares ints. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "summ/summ.h"

static int is_tok(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

static uint64_t tok_hash(const char *s, int len) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (int i = 0; i < len; i++) h = (h ^ lower((unsigned char)s[i])) * 1099511628211ULL;
    return h;
}

static int tok_equal(const char *a, const char *b, int len) {
    for (int i = 0; i < len; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return 0;
    return 1;
}

int lc_rouge_token_hashes(const char *text, uint64_t *out) {
    int n = 0;
    for (const char *p = text; *p;) {
        if (!is_tok((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *start = p;
        while (is_tok((unsigned char)*p)) p++;
        if (out) out[n] = tok_hash(start, (int)(p - start));
        n++;
    }
    return n;
}

void lc_vocab_free(lc_vocab *v) {
    free(v->start);
    free(v->len);
    free(v->id);
    memset(v, 0, sizeof *v);
}

/* Doubles the table (or creates it with 1024 slots). */
static lc_status vocab_grow(lc_vocab *v) {
    size_t cap = v->cap ? 2 * v->cap : 1024;
    const char **start = calloc(cap, sizeof *start);
    int *len = malloc(cap * sizeof *len), *id = malloc(cap * sizeof *id);
    if (!start || !len || !id) {
        free(start);
        free(len);
        free(id);
        return lc_fail(LC_ERR_NOMEM, "rouge: out of memory for the token table");
    }
    for (size_t i = 0; i < v->cap; i++) {
        if (!v->start[i]) continue;
        size_t j = tok_hash(v->start[i], v->len[i]) & (cap - 1);
        while (start[j]) j = (j + 1) & (cap - 1);
        start[j] = v->start[i];
        len[j] = v->len[i];
        id[j] = v->id[i];
    }
    free(v->start);
    free(v->len);
    free(v->id);
    v->start = start;
    v->len = len;
    v->id = id;
    v->cap = cap;
    return LC_OK;
}

/* The id of token s[0..len), a new one when unseen; -1 when out of memory. */
static int vocab_id(lc_vocab *v, const char *s, int len) {
    if (2 * (size_t)(v->n + 1) > v->cap && vocab_grow(v)) return -1;
    size_t j = tok_hash(s, len) & (v->cap - 1);
    while (v->start[j]) {
        if (v->len[j] == len && tok_equal(v->start[j], s, len)) return v->id[j];
        j = (j + 1) & (v->cap - 1);
    }
    v->start[j] = s;
    v->len[j] = len;
    v->id[j] = v->n;
    return v->n++;
}

lc_status lc_rouge_tokenize(const char *text, lc_vocab *v, int **ids, int *n) {
    *ids = NULL;
    *n = 0;
    long count = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (is_tok(*p) && (p == (const unsigned char *)text || !is_tok(p[-1]))) count++;
    if (count == 0) return LC_OK;
    if (count > 0x3fffffff) return lc_fail(LC_ERR_ARG, "rouge: text has more than 2^30 tokens");
    int *out = malloc((size_t)count * sizeof *out);
    if (!out) return lc_fail(LC_ERR_NOMEM, "rouge: out of memory for %ld tokens", count);
    int k = 0;
    for (const char *p = text; *p;) {
        if (!is_tok((unsigned char)*p)) { p++; continue; }
        const char *s = p;
        while (is_tok((unsigned char)*p)) p++;
        int id = vocab_id(v, s, (int)(p - s));
        if (id < 0) { free(out); return LC_ERR_NOMEM; }
        out[k++] = id;
    }
    *ids = out;
    *n = k;
    return LC_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The len - n + 1 n-gram keys of ids (0 when len < n), sorted, into keys. */
static int ngram_keys(const int *ids, int len, int n, uint64_t *keys) {
    int m = len - n + 1;
    if (m <= 0) return 0;
    for (int i = 0; i < m; i++)
        keys[i] = n == 1 ? (uint64_t)(uint32_t)ids[i] : (uint64_t)(uint32_t)ids[i] << 32 | (uint32_t)ids[i + 1];
    qsort(keys, (size_t)m, sizeof *keys, cmp_u64);
    return m;
}

lc_status lc_ngram_counts(const int *ids, int len, int n, uint64_t **keys, int **counts, int *m) {
    *keys = NULL;
    *counts = NULL;
    *m = 0;
    if (len < n) return LC_OK;
    uint64_t *k = malloc((size_t)len * sizeof *k);
    int *c = malloc((size_t)len * sizeof *c);
    if (!k || !c) {
        free(k);
        free(c);
        return lc_fail(LC_ERR_NOMEM, "rouge: out of memory for %d n-grams", len);
    }
    int total = ngram_keys(ids, len, n, k), distinct = 0;
    for (int i = 0; i < total; i++) {
        if (distinct && k[distinct - 1] == k[i]) { c[distinct - 1]++; continue; }
        k[distinct] = k[i];
        c[distinct++] = 1;
    }
    *keys = k;
    *counts = c;
    *m = distinct;
    return LC_OK;
}

long lc_ngram_overlap(const int *ids, int len, int n, const uint64_t *keys, const int *counts, int m,
                      uint64_t *scratch) {
    int total = ngram_keys(ids, len, n, scratch);
    long overlap = 0;
    int j = 0;
    for (int i = 0; i < total;) {
        int e = i;
        while (e < total && scratch[e] == scratch[i]) e++;
        while (j < m && keys[j] < scratch[i]) j++;
        if (j < m && keys[j] == scratch[i]) overlap += e - i < counts[j] ? e - i : counts[j];
        i = e;
    }
    return overlap;
}

lc_status lc_lcs_length(const int *a, int na, const int *b, int nb, long *out) {
    *out = 0;
    if (na == 0 || nb == 0) return LC_OK;
    int *row = calloc((size_t)nb + 1, sizeof *row); /* row[j]: LCS of a[0..i) and b[0..j) */
    if (!row) return lc_fail(LC_ERR_NOMEM, "rouge: out of memory for the LCS of %d tokens", nb);
    for (int i = 0; i < na; i++) {
        int diag = 0; /* row[j-1] of the previous i */
        for (int j = 1; j <= nb; j++) {
            int up = row[j];
            row[j] = a[i] == b[j - 1] ? diag + 1 : (up > row[j - 1] ? up : row[j - 1]);
            diag = up;
        }
    }
    *out = row[nb];
    free(row);
    return LC_OK;
}

lc_rouge_prf lc_rouge_prf_of(long overlap, long cand, long ref) {
    lc_rouge_prf s;
    s.precision = cand ? (double)overlap / (double)cand : 0;
    s.recall = ref ? (double)overlap / (double)ref : 0;
    s.f1 = overlap ? 2.0 * (double)overlap / ((double)cand + (double)ref) : 0;
    return s;
}

lc_status lc_rouge_score(const char *candidate, const char *reference, lc_rouge *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    if (!candidate || !reference) return lc_fail(LC_ERR_ARG, "rouge: candidate and reference must not be NULL");
    lc_vocab v = {0};
    int *c = NULL, *r = NULL, nc = 0, nr = 0;
    uint64_t *keys = NULL, *scratch = NULL;
    int *counts = NULL;
    lc_status st;
    if ((st = lc_rouge_tokenize(candidate, &v, &c, &nc)) || (st = lc_rouge_tokenize(reference, &v, &r, &nr))) goto done;
    if (nc && !(scratch = malloc((size_t)nc * sizeof *scratch))) {
        st = lc_fail(LC_ERR_NOMEM, "rouge: out of memory for %d tokens", nc);
        goto done;
    }
    lc_rouge_prf *rn[2] = {&out->r1, &out->r2};
    for (int n = 1; n <= 2; n++) {
        int m;
        if ((st = lc_ngram_counts(r, nr, n, &keys, &counts, &m))) goto done;
        long overlap = lc_ngram_overlap(c, nc, n, keys, counts, m, scratch);
        *rn[n - 1] = lc_rouge_prf_of(overlap, nc >= n ? nc - n + 1 : 0, nr >= n ? nr - n + 1 : 0);
        free(keys);
        free(counts);
        keys = NULL;
        counts = NULL;
    }
    long lcs;
    if ((st = lc_lcs_length(c, nc, r, nr, &lcs))) goto done;
    out->rl = lc_rouge_prf_of(lcs, nc, nr);
done:
    free(c);
    free(r);
    free(scratch);
    lc_vocab_free(&v);
    return st;
}
