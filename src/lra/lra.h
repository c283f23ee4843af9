/* Internal pieces shared by the Long Range Arena data module (src/lra): byte-string hashing and the
 * printable escaping used to store word vocabularies and label sets as text. The public API (ListOps,
 * labelled TSV files, tokenization) is in longctx.h; docs/lra.md describes the formats. */
#ifndef LC_LRA_H
#define LC_LRA_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"

/* 64-bit FNV-1a of a byte string, finished with the splitmix64 mixer so that low bits index tables well. */
uint64_t lc_lra_hash(const void *data, size_t len);

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

/* A TSV file's bytes as lc_labelled_read reads them (tsv.c): a regular file, decompressed when gzip (an error
 * without zlib), at most LC_TSV_MAX_BYTES, not empty; *buf NUL-terminated (free() it), *gzip 1 when it was. */
lc_status lc_tsv_read_bytes(const char *path, char **buf, size_t *n, int *gzip);

#endif
