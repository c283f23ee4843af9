/* Small facts about files shared by every reader and writer of the library, the one atomic writer every
 * file the library and the CLI write goes through (checkpoints, ListOps splits, figures), and the one
 * bounded reader of whole input files. */
#ifndef LC_CORE_FILES_H
#define LC_CORE_FILES_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "longctx.h"

/* What a file of this mode is, for a refusal message: "a directory", "a character device", "a FIFO",
 * ..., or "not a regular file". */
const char *lc_file_kind(mode_t mode);

/* The checks lc_file_write_atomic makes before writing, for a command to make before any work: the
 * directory exists and is writable, the name fits with the temporary suffix (NAME_MAX, PATH_MAX), path is
 * absent or a regular file (`what`, "a checkpoint", names what would replace it in the refusal). */
lc_status lc_file_check_output(const char *path, const char *what);

/* Writes path atomically: fill(f, user) fills a temporary file PATH.tmp.PID.RANDOM made beside it with
 * O_EXCL (a symlink at that name is never followed), returning 0, an errno value, or -st after lc_fail; the
 * file is flushed, fsynced and renamed over path, which keeps its mode (new files: 0666 & ~umask). A
 * device, FIFO or directory at path is refused, never replaced; on any failure the temporary file is
 * removed and path is untouched. Temporary files of this path whose writer no longer runs (a kill -9) are
 * removed first, so they never pile up. */
lc_status lc_file_write_atomic(const char *path, const char *what, int (*fill)(FILE *f, void *user), void *user);

/* For commands that do not stop at a step boundary (ListOps): SIGINT, SIGTERM and SIGHUP remove the
 * temporary file of a write in progress, then end the process as the signal would. */
void lc_file_clean_up_on_signals(void);

/* The whole of `path` into *buf (NUL-terminated; free() it) and *len. "-" is standard input, read up to the
 * bound like a file; any other path must be a regular file (checked before it is opened, so a FIFO cannot
 * block and a device such as /dev/zero is never read). More than `max` bytes is refused. Messages name
 * the path ("standard input" for "-"): "PATH: cannot open: REASON", "PATH: is a directory, not a regular
 * file", "PATH: more than MAX bytes, the most it may have", "PATH: read error: REASON". */
lc_status lc_file_read_all(const char *path, size_t max, char **buf, size_t *len);

#endif
