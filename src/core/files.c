/* Small facts about files shared by every reader and writer of the library (see files.h), and the one
 * bounded reader of a whole input file or standard input. */
#include "core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *lc_file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

lc_status lc_file_read_all(const char *path, size_t max, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    const int std_in = strcmp(path, "-") == 0;
    const char *name = std_in ? "standard input" : path;
    struct stat sb;
    /* stat before open (opening a FIFO would wait for a writer, opening a device may have effects), then the
     * descriptor itself, opened without blocking, so that a path swapped in between cannot slip by */
    if (!std_in && stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!std_in && !S_ISREG(sb.st_mode))
        return lc_fail(LC_ERR_IO, "%s: is %s, not a regular file", path, lc_file_kind(sb.st_mode));
    const int fd = std_in ? 0 : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!std_in) {
        lc_status bad = LC_OK;
        if (fstat(fd, &sb) != 0) bad = lc_fail(LC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        else if (!S_ISREG(sb.st_mode))
            bad = lc_fail(LC_ERR_IO, "%s: is %s, not a regular file", path, lc_file_kind(sb.st_mode));
        else if ((unsigned long long)sb.st_size > max)
            bad = lc_fail(LC_ERR_FORMAT, "%s: %lld bytes, more than %zu, the most it may have", path,
                          (long long)sb.st_size, max);
        if (bad) {
            close(fd);
            return bad;
        }
    }
    size_t cap = std_in ? 1 << 16 : (size_t)sb.st_size + 1, n = 0;
    char *b = malloc(cap + 1);
    lc_status st = b ? LC_OK : lc_fail(LC_ERR_NOMEM, "%s: out of memory", name);
    while (!st) {
        if (n == cap) { /* grow, but never past max + 1 bytes (one more than allowed shows the input is too long) */
            const size_t want = cap > max / 2 ? max + 1 : 2 * cap;
            char *g = want > cap ? realloc(b, want + 1) : NULL;
            if (!g) {
                st = want > cap ? lc_fail(LC_ERR_NOMEM, "%s: out of memory", name)
                                : lc_fail(LC_ERR_FORMAT, "%s: more than %zu bytes, the most it may have", name, max);
                break;
            }
            b = g, cap = want;
        }
        const ssize_t k = read(fd, b + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) st = lc_fail(LC_ERR_IO, "%s: read error: %s", name, strerror(errno));
        if (k <= 0) break;
        n += (size_t)k;
        if (n > max) st = lc_fail(LC_ERR_FORMAT, "%s: more than %zu bytes, the most it may have", name, max);
    }
    if (!std_in) close(fd);
    if (st) {
        free(b);
        return st;
    }
    b[n] = '\0';
    *buf = b, *len = n;
    return LC_OK;
}
