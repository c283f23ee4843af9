/* Small facts about files shared by every reader and writer of the library, the atomic writer and the
 * bounded reader. */
#ifndef LC_CORE_FILES_H
#define LC_CORE_FILES_H

#include <stdio.h>
#include <stddef.h>
#include <sys/stat.h>

#include "core/status.h"

/* What a file of this mode is, for a refusal message: "a directory", "a character device", "a FIFO",
 * ..., or "not a regular file". */
const char *lc_file_kind(mode_t mode);

/* The checks an atomic write makes before writing `path`: its directory exists and is writable, the name
 * fits with the temporary suffix (NAME_MAX, PATH_MAX), and path is absent or a regular file (refused:
 * "PATH: is a directory, not a regular file: refusing to replace it with WHAT"; what: "a checkpoint"). */
lc_status lc_file_check_out(const char *path, const char *what);

/* Write path atomically: write(f, ctx) fills PATH.tmp.PID.RANDOM (mkstemp: O_CREAT|O_EXCL, so never
 * through a symlink; the mode of the file it replaces, new files 0666 & ~umask) and returns 0 or an errno
 * value; then fsync, rename over path, fsync the directory. First removes path's temporary files whose
 * writer PID no longer runs. A failure leaves path as it was. */
lc_status lc_file_write_atomic(const char *path, const char *what, int (*write)(FILE *f, void *ctx), void *ctx);
/* The whole of `path` into *buf (NUL-terminated; free() it) and *len. "-" is standard input, read up to the
 * bound like a file; any other path must be a regular file (checked before it is opened, so a FIFO cannot
 * block and a device such as /dev/zero is never read). More than `max` bytes is refused. Messages name
 * the path ("standard input" for "-"): "PATH: cannot open: REASON", "PATH: is a directory, not a regular
 * file", "PATH: more than MAX bytes, the most it may have", "PATH: read error: REASON". */
lc_status lc_file_read_all(const char *path, size_t max, char **buf, size_t *len);

#endif
