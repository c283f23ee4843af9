/* Per-thread error messages behind lc_fail() / lc_last_error(). */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char lc_error_message[512];

/* Formats into a local buffer first: callers may pass lc_last_error() itself as an argument. */
lc_status lc_fail(lc_status code, const char *fmt, ...) {
    char message[sizeof lc_error_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(lc_error_message, message, sizeof message);
    return code;
}

void lc_clear_error(void) { lc_error_message[0] = '\0'; }

const char *lc_last_error(void) { return lc_error_message; }

const char *lc_status_name(lc_status s) {
    switch (s) {
    case LC_OK: return "ok";
    case LC_ERR_ARG: return "invalid argument";
    case LC_ERR_IO: return "i/o error";
    case LC_ERR_FORMAT: return "bad format";
    case LC_ERR_NOMEM: return "out of memory";
    case LC_ERR_NUMERIC: return "non-finite value";
    }
    return "unknown status";
}
