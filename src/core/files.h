/* Small facts about files shared by every reader and writer of the library. */
#ifndef LC_CORE_FILES_H
#define LC_CORE_FILES_H

#include <stddef.h>
#include <sys/stat.h>

#include "core/status.h"

/* What a file of this mode is, for a refusal message: "a directory", "a character device", "a FIFO",
 * ..., or "not a regular file". */
const char *lc_file_kind(mode_t mode);

/* The whole of `path` into *buf (NUL-terminated; free() it) and *len. "-" is standard input, read up to the
 * bound like a file; any other path must be a regular file (checked before it is opened, so a FIFO cannot
 * block and a device such as /dev/zero is never read). More than `max` bytes is refused. Messages name
 * the path ("standard input" for "-"): "PATH: cannot open: REASON", "PATH: is a directory, not a regular
 * file", "PATH: more than MAX bytes, the most it may have", "PATH: read error: REASON". */
lc_status lc_file_read_all(const char *path, size_t max, char **buf, size_t *len);

#endif
