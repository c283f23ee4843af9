/* Tokenization of classification texts: bytes (each byte its own id) and words (whitespace-separated
 * tokens looked up in a vocabulary built from the training texts, with reserved ids for padding, [CLS],
 * unknown words and [MASK]); the vocabulary's printable serialization for checkpoints; the --max-len check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "lra/lra.h"

struct lc_word_vocab {
    int n;           /* words; word w has id LC_WORD_FIRST + w */
    uint8_t *bytes;  /* all words, back to back */
    size_t *off;     /* word w is bytes[off[w] .. off[w + 1]) */
    long *count;     /* occurrences in the texts it was built from (0 when loaded) */
    int *slot;       /* open-addressing table of word indices, -1 empty */
    size_t nslots;
};

static int is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

void lc_word_vocab_free(lc_word_vocab *v) {
    if (!v) return;
    free(v->bytes);
    free(v->off);
    free(v->count);
    free(v->slot);
    free(v);
}

int lc_word_vocab_size(const lc_word_vocab *v) { return LC_WORD_FIRST + v->n; }

const uint8_t *lc_word_vocab_word(const lc_word_vocab *v, int id, size_t *len) {
    if (id < LC_WORD_FIRST || id >= LC_WORD_FIRST + v->n) return NULL;
    int w = id - LC_WORD_FIRST;
    *len = v->off[w + 1] - v->off[w];
    return v->bytes + v->off[w];
}

long lc_word_vocab_count(const lc_word_vocab *v, int id) {
    return id >= LC_WORD_FIRST && id < LC_WORD_FIRST + v->n ? v->count[id - LC_WORD_FIRST] : 0;
}

/* Slot of word s[0..len) in the table: where it is, or the empty slot where it would go. */
static size_t find_slot(const lc_word_vocab *v, const uint8_t *s, size_t len) {
    size_t mask = v->nslots - 1, i = (size_t)lc_lra_hash(s, len) & mask;
    for (; v->slot[i] >= 0; i = (i + 1) & mask) {
        int w = v->slot[i];
        if (v->off[w + 1] - v->off[w] == len && memcmp(v->bytes + v->off[w], s, len) == 0) break;
    }
    return i;
}

int lc_word_vocab_id(const lc_word_vocab *v, const uint8_t *word, size_t len) {
    int w = v->slot[find_slot(v, word, len)];
    return w < 0 ? LC_WORD_UNK : LC_WORD_FIRST + w;
}

/* Indexes words 0..n-1 (their bytes and offsets already in place) in a fresh table; -1 when out of memory
 * or when a word appears twice (then *dup is its index). */
static int index_words(lc_word_vocab *v, int *dup) {
    free(v->slot);
    v->nslots = 64;
    while (v->nslots < 2 * (size_t)v->n) v->nslots *= 2;
    v->slot = malloc(v->nslots * sizeof *v->slot);
    if (!v->slot) return -1;
    for (size_t i = 0; i < v->nslots; i++) v->slot[i] = -1;
    for (int w = 0; w < v->n; w++) {
        size_t i = find_slot(v, v->bytes + v->off[w], v->off[w + 1] - v->off[w]);
        if (v->slot[i] >= 0) {
            *dup = w;
            return -2;
        }
        v->slot[i] = w;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ building */

/* Word counting during the build: words point into the texts, which outlive the build. */
typedef struct {
    const uint8_t *s;
    size_t len;
    long count;
} counted;

static int by_count(const void *a, const void *b) {
    const counted *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

lc_status lc_word_vocab_build(const uint8_t *const *text, const size_t *len, long n, long min_count, int max_words,
                              lc_word_vocab **out) {
    lc_clear_error();
    *out = NULL;
    if (n < 0 || min_count < 1 || max_words < 0)
        return lc_fail(LC_ERR_ARG, "word vocabulary: needs n >= 0, min_count >= 1 and max_words >= 0 (got %ld, %ld, %d)",
                       n, min_count, max_words);
    size_t cap = 1024, used = 0;
    counted *tab = calloc(cap, sizeof *tab);
    if (!tab) return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    for (long t = 0; t < n; t++) {
        const uint8_t *s = text[t];
        size_t b, wl;
        for (size_t i = 0; (wl = lc_lra_next_word(s, len[t], &i, &b)) > 0;) {
            size_t k = (size_t)lc_lra_hash(s + b, wl) & (cap - 1);
            while (tab[k].s && !(tab[k].len == wl && memcmp(tab[k].s, s + b, wl) == 0)) k = (k + 1) & (cap - 1);
            if (tab[k].s) {
                tab[k].count++;
                continue;
            }
            tab[k] = (counted){s + b, wl, 1};
            if (++used * 2 > cap) { /* grow: keep the load under one half */
                counted *t2 = calloc(cap * 2, sizeof *t2);
                if (!t2) {
                    free(tab);
                    return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory at %zu distinct words", used);
                }
                for (size_t j = 0; j < cap; j++) {
                    if (!tab[j].s) continue;
                    size_t m = (size_t)lc_lra_hash(tab[j].s, tab[j].len) & (2 * cap - 1);
                    while (t2[m].s) m = (m + 1) & (2 * cap - 1);
                    t2[m] = tab[j];
                }
                free(tab);
                tab = t2;
                cap *= 2;
            }
        }
    }
    /* most frequent first, ties in byte order; then the count and size limits */
    size_t m = 0;
    for (size_t j = 0; j < cap; j++)
        if (tab[j].s && tab[j].count >= min_count) tab[m++] = tab[j];
    qsort(tab, m, sizeof *tab, by_count);
    if (max_words && m > (size_t)max_words) m = (size_t)max_words;
    if (m > (size_t)LC_WORD_VOCAB_LIMIT) {
        free(tab);
        return lc_fail(LC_ERR_ARG, "word vocabulary: %zu words; at most %d (set a maximum size)", m, LC_WORD_VOCAB_LIMIT);
    }
    lc_word_vocab *v = calloc(1, sizeof *v);
    size_t total = 0;
    for (size_t j = 0; j < m; j++) total += tab[j].len;
    if (v) {
        v->n = (int)m;
        v->bytes = malloc(total ? total : 1);
        v->off = malloc((m + 1) * sizeof *v->off);
        v->count = malloc((m ? m : 1) * sizeof *v->count);
    }
    int dup;
    if (!v || !v->bytes || !v->off || !v->count) {
        free(tab);
        lc_word_vocab_free(v);
        return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    }
    size_t o = 0;
    for (size_t j = 0; j < m; j++) {
        v->off[j] = o;
        memcpy(v->bytes + o, tab[j].s, tab[j].len);
        o += tab[j].len;
        v->count[j] = tab[j].count;
    }
    v->off[m] = o;
    free(tab);
    if (index_words(v, &dup)) {
        lc_word_vocab_free(v);
        return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    }
    *out = v;
    return LC_OK;
}

/* ------------------------------------------------------------------------------------------ text form */

lc_status lc_word_vocab_save(const lc_word_vocab *v, char **out, size_t *out_len) {
    lc_clear_error();
    *out = NULL;
    lc_lra_buf b = {0};
    int err = lc_lra_buf_printf(&b, "longctx-words 1 %d %d\n", LC_WORD_FIRST, v->n);
    for (int w = 0; w < v->n && !err; w++)
        err = lc_lra_buf_put_escaped(&b, v->bytes + v->off[w], v->off[w + 1] - v->off[w]) || lc_lra_buf_put(&b, "\n", 1);
    if (err) {
        free(b.p);
        return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    }
    *out = b.p;
    if (out_len) *out_len = b.n;
    return LC_OK;
}

lc_status lc_word_vocab_load(const char *text, size_t len, lc_word_vocab **out) {
    lc_clear_error();
    *out = NULL;
    const char *nl = memchr(text, '\n', len);
    int first = -1, n = -1, used = 0;
    char head[64];
    size_t hl = nl ? (size_t)(nl - text) : 0;
    if (!nl || hl >= sizeof head) return lc_fail(LC_ERR_FORMAT, "word vocabulary: not a longctx word vocabulary");
    memcpy(head, text, hl);
    head[hl] = '\0';
    if (sscanf(head, "longctx-words 1 %d %d%n", &first, &n, &used) != 2 || (size_t)used != hl)
        return lc_fail(LC_ERR_FORMAT, "word vocabulary: not a longctx word vocabulary (first line '%.40s')", head);
    if (first != LC_WORD_FIRST)
        return lc_fail(LC_ERR_FORMAT, "word vocabulary: %d reserved ids, this longctx reserves %d", first, LC_WORD_FIRST);
    if (n < 0 || n > LC_WORD_VOCAB_LIMIT)
        return lc_fail(LC_ERR_FORMAT, "word vocabulary: %d words; at most %d", n, LC_WORD_VOCAB_LIMIT);
    lc_word_vocab *v = calloc(1, sizeof *v);
    if (!v) return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    v->n = n;
    v->bytes = malloc(len ? len : 1); /* decoded words are never longer than their text */
    v->off = malloc(((size_t)n + 1) * sizeof *v->off);
    v->count = calloc((size_t)(n ? n : 1), sizeof *v->count);
    if (!v->bytes || !v->off || !v->count) {
        lc_word_vocab_free(v);
        return lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    }
    size_t pos = hl + 1, o = 0;
    lc_status st = LC_OK;
    for (int w = 0; w < n && !st; w++) {
        const char *s = text + pos;
        const char *e = pos < len ? memchr(s, '\n', len - pos) : NULL;
        if (!e) {
            st = lc_fail(LC_ERR_FORMAT, "word vocabulary: %d words announced, %d found", n, w);
            break;
        }
        size_t wl;
        v->off[w] = o;
        if (lc_lra_unescape(s, (size_t)(e - s), v->bytes + o, &wl) || wl == 0) {
            st = lc_fail(LC_ERR_FORMAT, "word vocabulary: word %d is empty or badly escaped", w + 1);
            break;
        }
        for (size_t k = 0; k < wl; k++)
            if (is_space(v->bytes[o + k])) st = lc_fail(LC_ERR_FORMAT, "word vocabulary: word %d has a space", w + 1);
        o += wl;
        pos += (size_t)(e - s) + 1;
    }
    if (!st && pos != len) st = lc_fail(LC_ERR_FORMAT, "word vocabulary: more text than the %d words announced", n);
    int dup = -1, r = st ? 0 : (v->off[n] = o, index_words(v, &dup));
    if (!st && r == -1) st = lc_fail(LC_ERR_NOMEM, "word vocabulary: out of memory");
    if (!st && r == -2) st = lc_fail(LC_ERR_FORMAT, "word vocabulary: word %d appears twice", dup + 1);
    if (st) {
        lc_word_vocab_free(v);
        return st;
    }
    *out = v;
    return LC_OK;
}

/* ------------------------------------------------------------------------------------------ tokenizing */

lc_status lc_tokens_parse(const char *name, lc_tokens *out) {
    lc_clear_error();
    if (strcmp(name, "bytes") == 0) *out = LC_TOKENS_BYTES;
    else if (strcmp(name, "words") == 0) *out = LC_TOKENS_WORDS;
    else return lc_fail(LC_ERR_ARG, "--tokens must be bytes or words, got '%s'", name);
    return LC_OK;
}

const char *lc_tokens_name(lc_tokens t) { return t == LC_TOKENS_WORDS ? "words" : "bytes"; }

long lc_tokenize(lc_tokens kind, const lc_word_vocab *v, const uint8_t *text, size_t len, long max_len, int *ids) {
    if (kind == LC_TOKENS_BYTES) {
        if (ids)
            for (size_t i = 0; i < len && (long)i < max_len; i++) ids[i] = text[i];
        return (long)len;
    }
    long n = 0;
    size_t at = 0, start, wl;
    while ((wl = lc_lra_next_word(text, len, &at, &start)) > 0) {
        if (ids && n < max_len) ids[n] = v ? lc_word_vocab_id(v, text + start, wl) : LC_WORD_UNK;
        n++;
    }
    return n;
}

size_t lc_lra_next_word(const uint8_t *text, size_t len, size_t *at, size_t *start) {
    size_t i = *at;
    while (i < len && is_space(text[i])) i++;
    *start = i;
    while (i < len && !is_space(text[i])) i++;
    *at = i;
    return i - *start;
}

lc_status lc_check_max_len(long max_len, const char *what) {
    lc_clear_error();
    if (max_len < 1 || max_len > LC_MAX_LEN_LIMIT)
        return lc_fail(LC_ERR_ARG, "%s must be in 1..%d, got %ld", what ? what : "--max-len", LC_MAX_LEN_LIMIT, max_len);
    return LC_OK;
}
