/* longctx public API: status codes, model configuration, model lifetime, training, evaluation,
 * sampling and checkpoint I/O. This is the only header a program using the library includes. */
#ifndef LONGCTX_H
#define LONGCTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible call returns one of these; lc_last_error() holds a one-line message. */
typedef enum {
    LC_OK = 0,
    LC_ERR_ARG,    /* invalid argument or configuration (a usage error at the CLI) */
    LC_ERR_IO,     /* a file could not be opened, read, written or renamed */
    LC_ERR_FORMAT, /* a file exists but its contents are not what was expected */
    LC_ERR_NOMEM   /* an allocation failed */
} lc_status;

/* The message of the last failure on this thread ("" if none). */
const char *lc_last_error(void);
/* A short name for a status code. */
const char *lc_status_name(lc_status s);

#ifdef __cplusplus
}
#endif
#endif
