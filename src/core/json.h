/* A small, strict JSON (RFC 8259) reader into a tree, and a string builder for writing JSON.
 * Used for file headers (safetensors) and configs, where input may be hostile: the parser is bounded
 * (nesting depth LC_JSON_MAX_DEPTH, never reads past `length`), validates UTF-8, rejects duplicate
 * object keys, trailing commas, bad escapes and anything after the value, and reports every error
 * as LC_ERR_FORMAT with a message giving the byte offset. Strings are decoded to NUL-terminated
 * UTF-8; "\u0000" is rejected so that every string is a plain C string. */
#ifndef LC_CORE_JSON_H
#define LC_CORE_JSON_H

#include <stddef.h>

#include "core/status.h"

#define LC_JSON_MAX_DEPTH 64

typedef enum { LC_JSON_NULL, LC_JSON_BOOL, LC_JSON_NUMBER, LC_JSON_STRING, LC_JSON_ARRAY, LC_JSON_OBJECT } lc_json_type;

typedef struct lc_json lc_json;
struct lc_json {
    lc_json_type type;
    size_t offset;      /* byte offset of the value's first character in the parsed text */
    int boolean;        /* LC_JSON_BOOL: 0 or 1 */
    double number;      /* LC_JSON_NUMBER */
    int is_integer;     /* LC_JSON_NUMBER written without fraction or exponent, fitting in long long */
    long long integer;  /* its exact value when is_integer */
    char *string;       /* LC_JSON_STRING: decoded UTF-8, NUL-terminated */
    size_t count;       /* LC_JSON_STRING: bytes; LC_JSON_ARRAY: items; LC_JSON_OBJECT: members */
    lc_json *items;     /* LC_JSON_ARRAY: elements; LC_JSON_OBJECT: member values, in document order */
    char **keys;        /* LC_JSON_OBJECT: member names, parallel to items */
};

/* Parse text[0..length) (no NUL terminator needed) as exactly one JSON value, optionally surrounded
 * by whitespace. `what` names the source in messages ("model.safetensors: header"; may be NULL).
 * On success *out owns the tree (free with lc_json_free); on failure *out is NULL and the status is
 * LC_ERR_FORMAT ("<what>: JSON error at byte 17: expected ',' or ']'") or LC_ERR_NOMEM. */
lc_status lc_json_parse(const char *text, size_t length, const char *what, lc_json **out);
void lc_json_free(lc_json *root);

/* "null", "boolean", "number", "string", "array", "object". */
const char *lc_json_type_name(lc_json_type type);
/* The value of member `key` of an object, or NULL when absent or when `object` is NULL or not an object. */
const lc_json *lc_json_member(const lc_json *object, const char *key);
/* Checked getters: `what` describes the value for the message ("ckpt: tensor w: shape[1]").
 * A NULL value reads as missing. LC_ERR_FORMAT with the byte offset when the type or range is wrong. */
lc_status lc_json_get_string(const lc_json *value, const char *what, const char **out);
lc_status lc_json_get_int(const lc_json *value, const char *what, long long min, long long max, long long *out);

/* 1 when s[0..length) is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF). */
int lc_utf8_valid(const char *s, size_t length);

/* A growable NUL-terminated string for writing JSON. A failed allocation sets `failed` and makes
 * later appends no-ops, so a writer checks once at the end. */
typedef struct {
    char *data;
    size_t length, capacity;
    int failed;
} lc_strbuf;

void lc_strbuf_init(lc_strbuf *b);
void lc_strbuf_free(lc_strbuf *b);
void lc_strbuf_append(lc_strbuf *b, const char *s, size_t n);
void lc_strbuf_puts(lc_strbuf *b, const char *s);
void lc_strbuf_printf(lc_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a quoted JSON string: '"' and '\\' escaped, control characters as \n, \t, ... or \u00XX;
 * other bytes (UTF-8) copied as they are. */
void lc_strbuf_json_string(lc_strbuf *b, const char *s);

#endif
