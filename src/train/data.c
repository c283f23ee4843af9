/* Byte corpora: loading a file whole, the train/valid/test split, contiguous-stream batches, and the record
 * of the data that checkpoints keep. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/json.h"
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

/* Only regular files are read, and only the size fstat reported: a device (/dev/zero) or a FIFO would
 * otherwise be read until memory runs out, or block forever. The file is opened without blocking (a FIFO
 * with no writer), then checked on the descriptor itself, so a path swapped after a stat cannot slip by. */
lc_status lc_corpus_load(const char *path, lc_split_mode mode, lc_corpus *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        lc_status st = lc_fail(LC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return lc_fail(LC_ERR_IO, "%s: is %s, expected a data file (a regular file)", path, lc_file_kind(sb.st_mode));
    }
    if (sb.st_size <= 0) {
        close(fd);
        return lc_fail(LC_ERR_FORMAT, "%s: file is empty", path);
    }
    if ((uintmax_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return lc_fail(LC_ERR_NOMEM, "%s: too large to load (%jd bytes)", path, (intmax_t)sb.st_size);
    }
    size_t cap = (size_t)sb.st_size, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap);
    }
    while (n < cap) { /* at most the stat'ed size; a file that shrank meanwhile ends early */
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            lc_status st = lc_fail(LC_ERR_IO, "%s: read error: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return st;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
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
    return lc_stream_batch_part(data, n, B, 0, B, T, k, tokens, targets);
}

lc_status lc_stream_batch_part(const uint8_t *data, size_t n, long streams, long first, int count, int T, long k,
                               int *tokens, int *targets) {
    lc_clear_error();
    if (streams < 1 || first < 0 || count < 0 || first + count > streams)
        return lc_fail(LC_ERR_ARG, "streams %ld..%ld are not among the %ld streams", first, first + count - 1, streams);
    size_t slice = n / (size_t)streams;
    if (slice < (size_t)T + 1)
        return lc_fail(LC_ERR_ARG, "%zu bytes make %ld streams of %zu bytes, shorter than one segment plus one (%d)",
                       n, streams, slice, T + 1);
    size_t span = slice - (size_t)T; /* valid start offsets inside a slice: 0 .. span-1 */
    size_t pos = (size_t)((unsigned long long)k * (unsigned long long)T % span);
    for (int b = 0; b < count; b++) {
        const uint8_t *s = data + (size_t)(first + b) * slice + pos;
        for (int t = 0; t < T; t++) {
            tokens[b * T + t] = s[t];
            targets[b * T + t] = s[t + 1];
        }
    }
    return LC_OK;
}

/* The data record a checkpoint keeps (longctx/train.h): the FNV-1a 64 hash of the bytes, the path, the split. */
uint64_t lc_data_hash(const uint8_t *bytes, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ bytes[i]) * 1099511628211ULL;
    return h;
}

void lc_data_record_set(lc_data_record *r, const char *path, const lc_corpus *c) {
    memset(r, 0, sizeof *r);
    char *abs = path ? realpath(path, NULL) : NULL;
    if (abs && strlen(abs) < sizeof r->path && lc_utf8_valid(abs, strlen(abs))) strcpy(r->path, abs);
    free(abs);
    r->size = (long)c->size;
    r->hash = lc_data_hash(c->bytes, c->size);
    r->split = c->mode;
}
