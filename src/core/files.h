/* Small facts about files shared by every reader and writer of the library. */
#ifndef LC_CORE_FILES_H
#define LC_CORE_FILES_H

#include <sys/stat.h>

/* What a file of this mode is, for a refusal message: "a directory", "a character device", "a FIFO",
 * ..., or "not a regular file". */
const char *lc_file_kind(mode_t mode);

#endif
