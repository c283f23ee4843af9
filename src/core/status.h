/* Status codes and the per-thread error message that every fallible function sets before returning. */
#ifndef LC_CORE_STATUS_H
#define LC_CORE_STATUS_H

#include "longctx.h"

/* Record a formatted one-line message for the current thread and return `code`. Usage:
 *   return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno)); */
lc_status lc_fail(lc_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear the current thread's message: the first statement of every public call that returns an
 * lc_status, so a successful call leaves lc_last_error() == "". */
void lc_clear_error(void);

#endif
