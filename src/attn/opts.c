/* Parsing helpers for the kinds' opts_set: integers, '/'-separated integer lists and floats from the
 * value half of a key=value option of the attention spec string, with one-line messages naming the key. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/attn.h"

static int parse_long(const char *s, long *out, const char **end) {
    errno = 0;
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || errno) return -1;
    *out = v;
    *end = e;
    return 0;
}

int lc_attn_opt_int(const char *key, const char *value, long lo, long hi, int *out, char *err, size_t errlen) {
    long v;
    const char *end;
    if (parse_long(value, &v, &end) || *end || v < lo || v > hi) {
        snprintf(err, errlen, "option %s=%s: expected an integer in [%ld, %ld]", key, value, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int lc_attn_opt_int_list(const char *key, const char *value, long lo, long hi, int *out, int max, char *err,
                         size_t errlen) {
    int n = 0;
    const char *p = value;
    for (;;) {
        long v;
        const char *end;
        if (parse_long(p, &v, &end) || (*end && *end != '/') || v < lo || v > hi) {
            snprintf(err, errlen, "option %s=%s: expected integers in [%ld, %ld] separated by '/'", key, value, lo,
                     hi);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "option %s=%s: more than %d values", key, value, max);
            return -1;
        }
        out[n++] = (int)v;
        if (!*end) return n;
        p = end + 1;
    }
}

int lc_attn_opt_float(const char *key, const char *value, double lo, double hi, float *out, char *err,
                      size_t errlen) {
    errno = 0;
    char *e;
    double v = strtod(value, &e);
    if (e == value || *e || errno || !(v >= lo && v <= hi)) {
        snprintf(err, errlen, "option %s=%s: expected a number in [%g, %g]", key, value, lo, hi);
        return -1;
    }
    *out = (float)v;
    return 0;
}

int lc_attn_opt_unknown(const lc_attn_kind *kind, const char *key, char *err, size_t errlen) {
    if (kind->options_help && *kind->options_help)
        snprintf(err, errlen, "kind %s has no option '%s' (options: %s)", kind->name, key, kind->options_help);
    else
        snprintf(err, errlen, "kind %s takes no options (got '%s')", kind->name, key);
    return -1;
}
