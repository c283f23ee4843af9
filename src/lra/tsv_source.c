/* The bytes of a labelled TSV file as a stream: a regular file read in chunks, plain or gzip (through zlib
 * when built with it, recognised by the gzip magic bytes, every member as gunzip reads them), so that the
 * reader (lra/tsv.c) holds one chunk and one line at a time, never the whole decompressed file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef LC_USE_ZLIB
#include <zlib.h>
#endif

#include "core/files.h"
#include "core/status.h"
#include "lra/lra.h"

struct lc_tsv_source {
    const char *path;
    int fd;
#ifdef LC_USE_ZLIB
    gzFile z;
#endif
    size_t total; /* bytes yielded so far */
};

int lc_have_zlib(void) {
#ifdef LC_USE_ZLIB
    return 1;
#else
    return 0;
#endif
}

lc_status lc_tsv_source_open(const char *path, lc_tsv_source **out, int *gzip) {
    *out = NULL;
    *gzip = 0;
    struct stat sb;
    /* stat before open: opening a FIFO would wait for a writer */
    if (stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return lc_fail(LC_ERR_IO, "%s: is %s, expected a TSV file", path, lc_file_kind(sb.st_mode));
    int fd = open(path, O_RDONLY);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char magic[2];
    ssize_t k = pread(fd, magic, 2, 0);
    if (k < 0) {
        close(fd);
        return lc_fail(LC_ERR_IO, "%s: read error: %s", path, strerror(errno));
    }
    lc_tsv_source *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    }
    s->path = path, s->fd = fd;
    if (k == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        *gzip = 1;
#ifdef LC_USE_ZLIB
        s->fd = -1;
        if (!(s->z = gzdopen(fd, "rb"))) {
            close(fd);
            free(s);
            return lc_fail(LC_ERR_NOMEM, "%s: out of memory opening the gzip stream", path);
        }
#else
        close(fd);
        free(s);
        return lc_fail(LC_ERR_ARG, "%s: gzip-compressed, but this longctx was built without zlib: install zlib1g-dev "
                       "and rebuild (make clean && make), or gunzip the file", path);
#endif
    }
    *out = s;
    return LC_OK;
}

#ifdef LC_USE_ZLIB
/* zlib's message without the "<fd:N>: " it puts in front for a stream opened with gzdopen. */
static const char *gz_message(gzFile z, int *code) {
    const char *msg = gzerror(z, code);
    if (*code == Z_ERRNO) return strerror(errno);
    const char *colon = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ">: ") : NULL;
    return colon ? colon + 3 : msg;
}

static lc_status read_gzip(lc_tsv_source *s, char *buf, size_t cap, size_t *got) {
    const int k = gzread(s->z, buf, (unsigned)cap);
    int code;
    if (k < 0) {
        const char *msg = gz_message(s->z, &code);
        return lc_fail(code == Z_ERRNO ? LC_ERR_IO : LC_ERR_FORMAT, "%s: %s: %s", s->path,
                       code == Z_ERRNO ? "read error" : "damaged gzip data", msg);
    }
    if (k == 0) {
        const char *msg = gz_message(s->z, &code);
        /* a file cut short reads as a clean end followed by this error */
        if (code != Z_OK) return lc_fail(LC_ERR_FORMAT, "%s: damaged gzip data: %s", s->path, msg);
    }
    *got = (size_t)k;
    return LC_OK;
}
#endif

lc_status lc_tsv_source_read(lc_tsv_source *s, char *buf, size_t cap, size_t *got) {
    *got = 0;
#ifdef LC_USE_ZLIB
    if (s->z) {
        lc_status st = read_gzip(s, buf, cap, got);
        if (st) return st;
    } else
#endif
    {
        ssize_t k;
        while ((k = read(s->fd, buf, cap)) < 0 && errno == EINTR) continue;
        if (k < 0) return lc_fail(LC_ERR_IO, "%s: read error: %s", s->path, strerror(errno));
        *got = (size_t)k;
    }
    if (s->total + *got > LC_TSV_MAX_BYTES)
        return lc_fail(LC_ERR_FORMAT, "%s: more than %u bytes%s, the most a TSV file may have", s->path,
                       (unsigned)LC_TSV_MAX_BYTES, s->fd < 0 ? " once decompressed" : "");
    s->total += *got;
    return LC_OK;
}

void lc_tsv_source_close(lc_tsv_source *s) {
    if (!s) return;
#ifdef LC_USE_ZLIB
    if (s->z) gzclose(s->z);
#endif
    if (s->fd >= 0) close(s->fd);
    free(s);
}

lc_status lc_tsv_read_bytes(const char *path, char **buf, size_t *n, int *gzip) {
    *buf = NULL, *n = 0;
    lc_tsv_source *s;
    lc_status st = lc_tsv_source_open(path, &s, gzip);
    if (st) return st;
    lc_lra_buf b = {0};
    char chunk[1 << 16];
    for (size_t got = 1; !st && got;)
        if (!(st = lc_tsv_source_read(s, chunk, sizeof chunk, &got)) && got && lc_lra_buf_put(&b, chunk, got))
            st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    lc_tsv_source_close(s);
    if (!st && b.n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: file is empty", path);
    if (!st && lc_lra_buf_put(&b, "", 1)) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (st) {
        free(b.p);
        return st;
    }
    *buf = b.p, *n = b.n - 1; /* the NUL is not counted */
    return LC_OK;
}
