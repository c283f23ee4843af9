/* Byte corpora: loading a file whole, the train/valid/test split, and contiguous-stream batches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "longctx.h"

static lc_split_mode resolve_mode(const char *path, lc_split_mode mode) {
    if (mode != LC_SPLIT_AUTO) return mode;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "tinyshakespeare", 15) == 0 ? LC_SPLIT_NANOGPT : LC_SPLIT_ENWIK8;
}

static void set_split(lc_corpus *c) {
    size_t n = c->size, a = n / 10 * 9 + (n % 10) * 9 / 10; /* floor(0.9 n) without overflow */
    c->begin[LC_PART_TRAIN] = 0;
    c->end[LC_PART_TRAIN] = a;
    c->begin[LC_PART_ALL] = 0;
    c->end[LC_PART_ALL] = n;
    if (c->mode == LC_SPLIT_NANOGPT) {
        c->begin[LC_PART_VALID] = c->begin[LC_PART_TEST] = a;
        c->end[LC_PART_VALID] = c->end[LC_PART_TEST] = n;
    } else {
        size_t b = a + (n - a) / 2;
        c->begin[LC_PART_VALID] = a;
        c->end[LC_PART_VALID] = b;
        c->begin[LC_PART_TEST] = b;
        c->end[LC_PART_TEST] = n;
    }
}

lc_status lc_corpus_load(const char *path, lc_split_mode mode, lc_corpus *out) {
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return lc_fail(LC_ERR_IO, "%s: is a directory, expected a data file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size : 4096, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) { fclose(f); return lc_fail(LC_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap); }
    for (;;) { /* read to EOF even when st_size is 0 or stale (pipes, /proc files) */
        if (n == cap) {
            uint8_t *b = realloc(buf, cap * 2);
            if (!b) { free(buf); fclose(f); return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path); }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return lc_fail(LC_ERR_IO, "%s: read error", path); }
    if (n == 0) { free(buf); return lc_fail(LC_ERR_FORMAT, "%s: file is empty", path); }
    out->bytes = buf;
    out->size = n;
    out->mode = resolve_mode(path, mode);
    set_split(out);
    return LC_OK;
}

void lc_corpus_free(lc_corpus *c) {
    free(c->bytes);
    memset(c, 0, sizeof *c);
}

lc_status lc_stream_batch(const uint8_t *data, size_t n, int B, int T, long k, int *tokens, int *targets) {
    size_t slice = n / (size_t)B;
    if (slice < (size_t)T + 1)
        return lc_fail(LC_ERR_ARG, "%zu bytes make %d streams of %zu bytes, shorter than one segment plus one (%d)",
                       n, B, slice, T + 1);
    size_t span = slice - (size_t)T; /* valid start offsets inside a slice: 0 .. span-1 */
    size_t pos = (size_t)((unsigned long long)k * (unsigned long long)T % span);
    for (int b = 0; b < B; b++) {
        const uint8_t *s = data + (size_t)b * slice + pos;
        for (int t = 0; t < T; t++) {
            tokens[b * T + t] = s[t];
            targets[b * T + t] = s[t + 1];
        }
    }
    return LC_OK;
}
