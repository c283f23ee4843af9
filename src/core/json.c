/* The strict, bounded JSON parser and the JSON string builder declared in json.h. */
#include "core/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *text;
    size_t length, pos;
    const char *what;
} lc_json_parser;

static lc_status lc_json_error_at(const lc_json_parser *p, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static lc_status lc_json_error_at(const lc_json_parser *p, size_t offset, const char *fmt, ...) {
    char detail[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    const char *what = p->what ? p->what : "";
    return lc_fail(LC_ERR_FORMAT, "%s%sJSON error at byte %zu: %s", what, *what ? ": " : "", offset, detail);
}

static lc_status lc_json_nomem(const lc_json_parser *p) {
    const char *what = p->what ? p->what : "";
    return lc_fail(LC_ERR_NOMEM, "%s%sout of memory parsing JSON", what, *what ? ": " : "");
}

static int lc_json_peek(const lc_json_parser *p) { return p->pos < p->length ? p->text[p->pos] : -1; }

/* A printable description of the byte at the cursor, for messages. */
static const char *lc_json_describe_next(const lc_json_parser *p, char buf[16]) {
    int c = lc_json_peek(p);
    if (c < 0) return "end of input";
    if (c >= 0x20 && c < 0x7f) snprintf(buf, 16, "'%c'", c);
    else snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static void lc_json_skip_space(lc_json_parser *p) {
    while (p->pos < p->length) {
        unsigned char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* ---- UTF-8 ---- */

/* Length of the well-formed UTF-8 sequence at s (n bytes available), or 0 when malformed. */
static size_t lc_utf8_sequence_length(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* no UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
    } else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return len;
}

int lc_utf8_valid(const char *s, size_t length) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < length;) {
        size_t n = lc_utf8_sequence_length(u + i, length - i);
        if (!n) return 0;
        i += n;
    }
    return 1;
}

static size_t lc_utf8_encode(unsigned long cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* ---- strings ---- */

static int lc_hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Read the 4 hex digits of a \u escape (backslash, u, four hex digits) at p->pos; advances past it. */
static lc_status lc_json_read_hex4(lc_json_parser *p, unsigned long *out) {
    size_t start = p->pos;
    if (p->length - p->pos < 6) return lc_json_error_at(p, start, "truncated \\u escape");
    unsigned long v = 0;
    for (size_t i = 2; i < 6; i++) {
        int h = lc_hex_value(p->text[p->pos + i]);
        if (h < 0) return lc_json_error_at(p, start, "\\u escape needs 4 hex digits");
        v = v * 16 + (unsigned long)h;
    }
    p->pos += 6;
    *out = v;
    return LC_OK;
}

/* Decode a \u escape (or a surrogate pair of two) at p->pos into UTF-8 at out; *n gets its length. */
static lc_status lc_json_unicode_escape(lc_json_parser *p, char *out, size_t *n) {
    size_t start = p->pos;
    unsigned long cp, low;
    lc_status s = lc_json_read_hex4(p, &cp);
    if (s) return s;
    if (cp == 0) return lc_json_error_at(p, start, "\\u0000 is not allowed in strings");
    if (cp >= 0xdc00 && cp <= 0xdfff) return lc_json_error_at(p, start, "unpaired low surrogate \\u%04lx", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (p->length - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u')
            return lc_json_error_at(p, start, "high surrogate \\u%04lx not followed by a low one", cp);
        size_t low_start = p->pos;
        if ((s = lc_json_read_hex4(p, &low))) return s;
        if (low < 0xdc00 || low > 0xdfff)
            return lc_json_error_at(p, low_start, "expected a low surrogate after \\u%04lx", cp);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    *n = lc_utf8_encode(cp, out);
    return LC_OK;
}

/* Decode the escape whose backslash is at p->pos into out; *n gets the number of bytes written. */
static lc_status lc_json_escape(lc_json_parser *p, char *out, size_t *n) {
    if (p->pos + 1 >= p->length) return lc_json_error_at(p, p->pos, "unterminated string");
    char c = (char)p->text[p->pos + 1];
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) {
        *out = to[hit - from];
        *n = 1;
        p->pos += 2;
        return LC_OK;
    }
    if (c == 'u') return lc_json_unicode_escape(p, out, n);
    char buf[16];
    p->pos++;
    return lc_json_error_at(p, p->pos - 1, "invalid escape \\ followed by %s", lc_json_describe_next(p, buf));
}

/* Offset of the closing quote of the string whose opening quote is at p->pos, or 0 if unterminated. */
static size_t lc_json_string_end(const lc_json_parser *p) {
    for (size_t i = p->pos + 1; i < p->length; i++) {
        if (p->text[i] == '"') return i;
        if (p->text[i] == '\\') i++;
    }
    return 0;
}

/* Parse a string at p->pos (the opening quote) into a new NUL-terminated buffer. */
static lc_status lc_json_string(lc_json_parser *p, char **out, size_t *out_length) {
    size_t start = p->pos, end = lc_json_string_end(p);
    if (!end) return lc_json_error_at(p, start, "unterminated string");
    char *buf = malloc(end - start); /* decoding never grows: escapes are longer than what they make */
    if (!buf) return lc_json_nomem(p);
    size_t n = 0;
    p->pos++;
    while (p->pos < end) {
        unsigned char c = p->text[p->pos];
        lc_status s = LC_OK;
        size_t k = 0;
        if (c == '\\') s = lc_json_escape(p, buf + n, &k);
        else if (c < 0x20) s = lc_json_error_at(p, p->pos, "control character 0x%02x in string", c);
        else if (!(k = lc_utf8_sequence_length(p->text + p->pos, end - p->pos)))
            s = lc_json_error_at(p, p->pos, "invalid UTF-8 in string");
        else {
            memcpy(buf + n, p->text + p->pos, k);
            p->pos += k;
        }
        if (s) {
            free(buf);
            return s;
        }
        n += k;
    }
    buf[n] = '\0';
    p->pos = end + 1;
    *out = buf;
    *out_length = n;
    return LC_OK;
}

/* ---- numbers ---- */

static size_t lc_json_skip_digits(const lc_json_parser *p, size_t i) {
    while (i < p->length && p->text[i] >= '0' && p->text[i] <= '9') i++;
    return i;
}

/* End offset of the number starting at p->pos per the JSON grammar, or 0 when malformed;
 * *is_integer says whether it had neither fraction nor exponent. */
static size_t lc_json_number_end(const lc_json_parser *p, int *is_integer) {
    size_t i = p->pos;
    if (i < p->length && p->text[i] == '-') i++;
    if (i >= p->length || p->text[i] < '0' || p->text[i] > '9') return 0;
    i = p->text[i] == '0' ? i + 1 : lc_json_skip_digits(p, i);
    *is_integer = 1;
    if (i < p->length && p->text[i] == '.') {
        size_t j = lc_json_skip_digits(p, i + 1);
        if (j == i + 1) return 0;
        i = j;
        *is_integer = 0;
    }
    if (i < p->length && (p->text[i] == 'e' || p->text[i] == 'E')) {
        i++;
        if (i < p->length && (p->text[i] == '+' || p->text[i] == '-')) i++;
        size_t j = lc_json_skip_digits(p, i);
        if (j == i) return 0;
        i = j;
        *is_integer = 0;
    }
    return i;
}

/* Exact value of an integer literal text[begin..end); 0 when it does not fit in long long. */
static int lc_json_exact_integer(const unsigned char *text, size_t begin, size_t end, long long *out) {
    int negative = text[begin] == '-';
    long long v = 0;
    for (size_t i = begin + negative; i < end; i++) {
        int d = text[i] - '0';
        if (negative ? v < (LLONG_MIN + d) / 10 : v > (LLONG_MAX - d) / 10) return 0;
        v = negative ? v * 10 - d : v * 10 + d;
    }
    *out = v;
    return 1;
}

static lc_status lc_json_read_number(lc_json_parser *p, lc_json *node) {
    int is_integer = 0;
    size_t start = p->pos, end = lc_json_number_end(p, &is_integer);
    if (!end) return lc_json_error_at(p, start, "malformed number");
    char small[64], *copy = end - start < sizeof small ? small : malloc(end - start + 1); /* strtod needs a NUL */
    if (!copy) return lc_json_nomem(p);
    memcpy(copy, p->text + start, end - start);
    copy[end - start] = '\0';
    node->number = strtod(copy, NULL);
    if (copy != small) free(copy);
    if (isinf(node->number)) return lc_json_error_at(p, start, "number out of range");
    node->type = LC_JSON_NUMBER;
    node->is_integer = is_integer && lc_json_exact_integer(p->text, start, end, &node->integer);
    p->pos = end;
    return LC_OK;
}

/* ---- values ---- */

static lc_status lc_json_value(lc_json_parser *p, lc_json *node, int depth);

static int lc_json_match_word(lc_json_parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->length - p->pos < n || memcmp(p->text + p->pos, word, n) != 0) return 0;
    p->pos += n;
    return 1;
}

/* Make room for one more zeroed child (and key slot for objects) at node->items[node->count]. */
static lc_status lc_json_grow(lc_json_parser *p, lc_json *node, size_t *capacity) {
    if (node->count < *capacity) return LC_OK;
    size_t cap = *capacity ? 2 * *capacity : 4;
    lc_json *items = realloc(node->items, cap * sizeof *items);
    if (!items) return lc_json_nomem(p);
    node->items = items;
    if (node->type == LC_JSON_OBJECT) {
        char **keys = realloc(node->keys, cap * sizeof *keys);
        if (!keys) return lc_json_nomem(p);
        node->keys = keys;
    }
    *capacity = cap;
    return LC_OK;
}

/* Append a zeroed child; the tree stays freeable whatever happens while the child is parsed. */
static lc_status lc_json_new_child(lc_json_parser *p, lc_json *node, size_t *capacity, lc_json **child) {
    lc_status s = lc_json_grow(p, node, capacity);
    if (s) return s;
    *child = &node->items[node->count];
    memset(*child, 0, sizeof **child);
    if (node->type == LC_JSON_OBJECT) node->keys[node->count] = NULL;
    node->count++;
    return LC_OK;
}

/* After ',' or at the start of a container: expect `close` or loop on. Returns 1 when closed. */
static int lc_json_try_close(lc_json_parser *p, char close) {
    lc_json_skip_space(p);
    if (lc_json_peek(p) != close) return 0;
    p->pos++;
    return 1;
}

/* Expect ',' (returns 0) or `close` (returns 1); -1 with an error set otherwise. */
static int lc_json_separator(lc_json_parser *p, char close, lc_status *s) {
    lc_json_skip_space(p);
    int c = lc_json_peek(p);
    if (c == ',' || c == close) {
        p->pos++;
        return c == close;
    }
    char buf[16];
    *s = lc_json_error_at(p, p->pos, "expected ',' or '%c', found %s", close, lc_json_describe_next(p, buf));
    return -1;
}

static lc_status lc_json_array(lc_json_parser *p, lc_json *node, int depth) {
    size_t capacity = 0;
    node->type = LC_JSON_ARRAY;
    p->pos++;
    if (lc_json_try_close(p, ']')) return LC_OK;
    for (;;) {
        lc_json *child;
        lc_status s = lc_json_new_child(p, node, &capacity, &child);
        if (s || (s = lc_json_value(p, child, depth + 1))) return s;
        int closed = lc_json_separator(p, ']', &s);
        if (closed) return closed > 0 ? LC_OK : s;
    }
}

typedef struct {
    const char *key;
    size_t offset;
} lc_json_key_at;

static int lc_json_compare_keys(const void *a, const void *b) {
    const lc_json_key_at *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->offset > y->offset) - (x->offset < y->offset);
}

/* Reject an object with two members of the same name (sorting keeps this O(n log n)). */
static lc_status lc_json_check_duplicates(lc_json_parser *p, const lc_json *node) {
    if (node->count < 2) return LC_OK;
    lc_json_key_at *sorted = malloc(node->count * sizeof *sorted);
    if (!sorted) return lc_json_nomem(p);
    for (size_t i = 0; i < node->count; i++) sorted[i] = (lc_json_key_at){node->keys[i], node->items[i].offset};
    qsort(sorted, node->count, sizeof *sorted, lc_json_compare_keys);
    lc_status s = LC_OK;
    for (size_t i = 1; i < node->count && !s; i++)
        if (strcmp(sorted[i - 1].key, sorted[i].key) == 0)
            s = lc_json_error_at(p, sorted[i].offset, "duplicate key \"%.80s\"", sorted[i].key);
    free(sorted);
    return s;
}

static lc_status lc_json_member_key(lc_json_parser *p, lc_json *node) {
    char buf[16];
    lc_json_skip_space(p);
    if (lc_json_peek(p) != '"')
        return lc_json_error_at(p, p->pos, "expected a string key, found %s", lc_json_describe_next(p, buf));
    size_t length;
    lc_status s = lc_json_string(p, &node->keys[node->count - 1], &length);
    if (s) return s;
    lc_json_skip_space(p);
    if (lc_json_peek(p) != ':')
        return lc_json_error_at(p, p->pos, "expected ':' after key, found %s", lc_json_describe_next(p, buf));
    p->pos++;
    return LC_OK;
}

static lc_status lc_json_object(lc_json_parser *p, lc_json *node, int depth) {
    size_t capacity = 0;
    node->type = LC_JSON_OBJECT;
    p->pos++;
    if (lc_json_try_close(p, '}')) return LC_OK;
    for (;;) {
        lc_json *child;
        lc_status s = lc_json_new_child(p, node, &capacity, &child);
        if (s || (s = lc_json_member_key(p, node)) || (s = lc_json_value(p, child, depth + 1))) return s;
        int closed = lc_json_separator(p, '}', &s);
        if (closed < 0) return s;
        if (closed) return lc_json_check_duplicates(p, node);
    }
}

static lc_status lc_json_value(lc_json_parser *p, lc_json *node, int depth) {
    char buf[16];
    lc_json_skip_space(p);
    node->offset = p->pos;
    if (depth > LC_JSON_MAX_DEPTH)
        return lc_json_error_at(p, p->pos, "nesting deeper than %d levels", LC_JSON_MAX_DEPTH);
    int c = lc_json_peek(p);
    if (c == '{') return lc_json_object(p, node, depth);
    if (c == '[') return lc_json_array(p, node, depth);
    if (c == '"') {
        node->type = LC_JSON_STRING;
        return lc_json_string(p, &node->string, &node->count);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return lc_json_read_number(p, node);
    if (lc_json_match_word(p, "true") || lc_json_match_word(p, "false")) {
        node->type = LC_JSON_BOOL;
        node->boolean = p->text[node->offset] == 't';
        return LC_OK;
    }
    if (lc_json_match_word(p, "null")) return LC_OK; /* node is zeroed: LC_JSON_NULL */
    return lc_json_error_at(p, p->pos, "expected a value, found %s", lc_json_describe_next(p, buf));
}

static void lc_json_free_contents(lc_json *node) {
    for (size_t i = 0; i < node->count && node->items; i++) {
        lc_json_free_contents(&node->items[i]);
        if (node->keys) free(node->keys[i]);
    }
    free(node->items);
    free(node->keys);
    free(node->string);
}

void lc_json_free(lc_json *root) {
    if (!root) return;
    lc_json_free_contents(root);
    free(root);
}

lc_status lc_json_parse(const char *text, size_t length, const char *what, lc_json **out) {
    *out = NULL;
    lc_json_parser p = {(const unsigned char *)text, length, 0, what};
    lc_json *root = calloc(1, sizeof *root);
    if (!root) return lc_json_nomem(&p);
    lc_status s = lc_json_value(&p, root, 1);
    if (!s) {
        char buf[16];
        lc_json_skip_space(&p);
        if (p.pos < p.length)
            s = lc_json_error_at(&p, p.pos, "unexpected %s after the value", lc_json_describe_next(&p, buf));
    }
    if (s) {
        lc_json_free(root);
        return s;
    }
    *out = root;
    return LC_OK;
}

/* ---- accessors ---- */

const char *lc_json_type_name(lc_json_type type) {
    static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)type < sizeof names / sizeof *names ? names[type] : "unknown";
}

const lc_json *lc_json_member(const lc_json *object, const char *key) {
    if (!object || object->type != LC_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    return NULL;
}

lc_status lc_json_get_string(const lc_json *value, const char *what, const char **out) {
    if (!value) return lc_fail(LC_ERR_FORMAT, "%s: missing", what);
    if (value->type != LC_JSON_STRING)
        return lc_fail(LC_ERR_FORMAT, "%s: expected a string, found %s (JSON byte %zu)", what,
                       lc_json_type_name(value->type), value->offset);
    *out = value->string;
    return LC_OK;
}

lc_status lc_json_get_int(const lc_json *value, const char *what, long long min, long long max, long long *out) {
    if (!value) return lc_fail(LC_ERR_FORMAT, "%s: missing", what);
    if (value->type == LC_JSON_NUMBER && !value->is_integer)
        return lc_fail(LC_ERR_FORMAT, "%s: expected an integer in [%lld, %lld], found %.17g (JSON byte %zu)", what, min,
                       max, value->number, value->offset);
    if (value->type != LC_JSON_NUMBER)
        return lc_fail(LC_ERR_FORMAT, "%s: expected an integer, found %s (JSON byte %zu)", what,
                       lc_json_type_name(value->type), value->offset);
    if (value->integer < min || value->integer > max)
        return lc_fail(LC_ERR_FORMAT, "%s: %lld is outside [%lld, %lld] (JSON byte %zu)", what, value->integer, min,
                       max, value->offset);
    *out = value->integer;
    return LC_OK;
}

/* ---- string builder ---- */

void lc_strbuf_init(lc_strbuf *b) { memset(b, 0, sizeof *b); }

void lc_strbuf_free(lc_strbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int lc_strbuf_reserve(lc_strbuf *b, size_t extra) {
    if (b->failed) return 0;
    if (extra >= SIZE_MAX / 2 - b->length) return b->failed = 1, 0;
    size_t need = b->length + extra + 1;
    if (need <= b->capacity) return 1;
    size_t cap = b->capacity ? b->capacity : 64;
    while (cap < need) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) return b->failed = 1, 0;
    b->data = data;
    b->capacity = cap;
    return 1;
}

void lc_strbuf_append(lc_strbuf *b, const char *s, size_t n) {
    if (!lc_strbuf_reserve(b, n)) return;
    memcpy(b->data + b->length, s, n);
    b->length += n;
    b->data[b->length] = '\0';
}

void lc_strbuf_puts(lc_strbuf *b, const char *s) { lc_strbuf_append(b, s, strlen(s)); }

void lc_strbuf_printf(lc_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (!lc_strbuf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->length, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->length += (size_t)n;
}

void lc_strbuf_json_string(lc_strbuf *b, const char *s) {
    lc_strbuf_append(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        const char *short_form = *c == '"' ? "\\\"" : *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : *c == '\r' ? "\\r"
                                 : *c == '\t' ? "\\t" : *c == '\b' ? "\\b" : *c == '\f' ? "\\f" : NULL;
        if (short_form) lc_strbuf_puts(b, short_form);
        else if (*c < 0x20) lc_strbuf_printf(b, "\\u%04x", *c);
        else lc_strbuf_append(b, (const char *)c, 1);
    }
    lc_strbuf_append(b, "\"", 1);
}
