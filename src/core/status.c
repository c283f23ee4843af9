/* Per-thread error messages behind lc_fail() / lc_last_error(). */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char lc_error_message[512];

lc_status lc_fail(lc_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lc_error_message, sizeof lc_error_message, fmt, ap);
    va_end(ap);
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
