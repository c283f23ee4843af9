/* Internal pieces shared by the Long Range Arena data module (src/lra): byte-string hashing and the
 * printable escaping used to store word vocabularies and label sets as text. The public API (ListOps,
 * labelled TSV files, tokenization) is in longctx.h; docs/guides/classify.md describes the formats. */
#ifndef LC_LRA_H
#define LC_LRA_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"

/* 64-bit FNV-1a of a byte string, finished with the splitmix64 mixer so that low bits index tables well. */
uint64_t lc_lra_hash(const void *data, size_t len);

/* The next whitespace-separated word of text[0 .. len) from *at: its length (0: none left), its first byte
 * at *start; *at moves past it. */
size_t lc_lra_next_word(const uint8_t *text, size_t len, size_t *at, size_t *start);

/* A growing byte buffer; every function returns 0 on success and -1 when out of memory. */
typedef struct {
    char *p;
    size_t n, cap;
} lc_lra_buf;

int lc_lra_buf_put(lc_lra_buf *b, const void *data, size_t len);
int lc_lra_buf_printf(lc_lra_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..len) with every byte outside '!'..'~' and every backslash written as \xHH (lower-case hex),
 * so the result is printable ASCII without spaces: safe in a line-based file and in a JSON string. */
int lc_lra_buf_put_escaped(lc_lra_buf *b, const uint8_t *s, size_t len);

/* Decodes one escaped field s[0..len) (the inverse of lc_lra_buf_put_escaped) into out (at least len
 * bytes); *out_len receives its length. -1 on a malformed escape or a byte that should have been escaped. */
int lc_lra_unescape(const char *s, size_t len, uint8_t *out, size_t *out_len);

/* A labelled TSV file's bytes, decompressed, as a stream (lra/tsv_source.c): open refuses what is not a
 * regular file; read yields up to cap bytes into *got (0 at the end), or an error for a read error,
 * damaged gzip data or more than LC_TSV_MAX_BYTES in all. */
typedef struct lc_tsv_source lc_tsv_source;
lc_status lc_tsv_source_open(const char *path, lc_tsv_source **out, int *gzip);
lc_status lc_tsv_source_read(lc_tsv_source *s, char *buf, size_t cap, size_t *got);
void lc_tsv_source_close(lc_tsv_source *s);

/* A hash table of NUL-terminated strings (not owned) with an int each, for label sets: lookups in O(1)
 * instead of a scan, so that a set of LC_MAX_LABELS labels is read and matched in linear time. */
typedef struct {
    const char *s; /* NULL: empty */
    int id;
} lc_str_slot;
typedef struct {
    lc_str_slot *slot;
    size_t mask;
} lc_str_index;

/* Room for n strings; -1 when out of memory. */
int lc_str_index_init(lc_str_index *x, size_t n);
/* The slot of s: where it is, or the empty slot (s NULL) where it goes (set its s and id to insert it). */
lc_str_slot *lc_str_index_slot(const lc_str_index *x, const char *s);
/* An index of every name of s (id: its position); -1 when out of memory. Names appearing twice keep the first. */
int lc_str_index_of_set(lc_str_index *x, const lc_label_set *s);
void lc_str_index_free(lc_str_index *x);

/* A whole TSV file's bytes from the stream above (predict --tsv): a regular file, decompressed when gzip (an
 * error without zlib), at most LC_TSV_MAX_BYTES, not empty; *buf NUL-terminated (free() it), *gzip 1 when it
 * was. */
lc_status lc_tsv_read_bytes(const char *path, char **buf, size_t *n, int *gzip);

#endif
