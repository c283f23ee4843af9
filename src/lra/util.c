/* Small helpers of the LRA data module: hashing, a string hash table for label sets, a growing buffer and the printable escaping with which
 * word vocabularies and label sets are stored as text (see lra.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "lra/lra.h"

uint64_t lc_lra_hash(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return lc_hash64(h ^ len);
}

int lc_str_index_init(lc_str_index *x, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    x->slot = calloc(cap, sizeof *x->slot);
    x->mask = cap - 1;
    return x->slot ? 0 : -1;
}

lc_str_slot *lc_str_index_slot(const lc_str_index *x, const char *s) {
    size_t i = (size_t)lc_lra_hash(s, strlen(s)) & x->mask;
    while (x->slot[i].s && strcmp(x->slot[i].s, s) != 0) i = (i + 1) & x->mask;
    return &x->slot[i];
}

int lc_str_index_of_set(lc_str_index *x, const lc_label_set *s) {
    if (lc_str_index_init(x, (size_t)s->n)) return -1;
    for (int i = 0; i < s->n; i++) {
        lc_str_slot *e = lc_str_index_slot(x, s->name[i]);
        if (!e->s) e->s = s->name[i], e->id = i;
    }
    return 0;
}

void lc_str_index_free(lc_str_index *x) {
    free(x->slot);
    x->slot = NULL;
}

static int buf_reserve(lc_lra_buf *b, size_t extra) {
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int lc_lra_buf_put(lc_lra_buf *b, const void *data, size_t len) {
    if (buf_reserve(b, len)) return -1;
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return 0;
}

int lc_lra_buf_printf(lc_lra_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || buf_reserve(b, (size_t)k)) return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
    return 0;
}

static int plain_byte(uint8_t c) { return c >= '!' && c <= '~' && c != '\\'; }

int lc_lra_buf_put_escaped(lc_lra_buf *b, const uint8_t *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, 4 * len)) return -1;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = s[i];
        if (plain_byte(c)) {
            b->p[b->n++] = (char)c;
        } else {
            b->p[b->n++] = '\\';
            b->p[b->n++] = 'x';
            b->p[b->n++] = hex[c >> 4];
            b->p[b->n++] = hex[c & 15];
        }
    }
    b->p[b->n] = '\0';
    return 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int lc_lra_unescape(const char *s, size_t len, uint8_t *out, size_t *out_len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '\\') {
            if (i + 3 >= len || s[i + 1] != 'x') return -1;
            int hi = hex_digit(s[i + 2]), lo = hex_digit(s[i + 3]);
            if (hi < 0 || lo < 0) return -1;
            uint8_t v = (uint8_t)(hi * 16 + lo);
            if (plain_byte(v)) return -1; /* one spelling per byte: round trips compare equal */
            out[n++] = v;
            i += 3;
        } else if (plain_byte(c)) {
            out[n++] = c;
        } else {
            return -1;
        }
    }
    *out_len = n;
    return 0;
}
