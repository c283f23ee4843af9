/* The operations on any family's field table (longctx/fields.h): find a row by name or flag, set a value
 * from text with the row's range and choices, format a value, and the binding API's kind of a row. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/choice.h"
#include "core/status.h"
#include "longctx/fields.h"

/* Whether `flag` ("--seg-len") is `key` with its leading dashes dropped and '-' read as '_'. */
static int same_name(const char *flag, const char *key) {
    if (!flag) return 0;
    while (*flag == '-') flag++;
    while (*key == '-') key++;
    for (; *flag && *key; flag++, key++)
        if ((*flag == '-' ? '_' : *flag) != (*key == '-' ? '_' : *key)) return 0;
    return !*flag && !*key;
}

const lc_field *lc_field_find(const lc_field *t, int n, const char *key) {
    if (!key) return NULL;
    for (int i = 0; i < n; i++)
        if (same_name(t[i].name, key)) return &t[i];
    for (int i = 0; i < n; i++)
        if (same_name(t[i].flag, key)) return &t[i];
    return NULL;
}

int lc_field_parse_bool(const char *v, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(v, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

/* The range a set accepts: the flag's, else 0 .. file_hi. */
static void range_of(const lc_field *f, double *lo, double *hi) {
    *lo = f->lo, *hi = f->hi;
    if (f->lo == 0 && f->hi == 0) *hi = f->file_hi;
}

lc_status lc_field_set(const lc_field *f, void *cfg, const char *value) {
    char *at = (char *)cfg + f->offset, *end = NULL;
    double lo, hi;
    range_of(f, &lo, &hi);
    if (!value) return lc_fail(LC_ERR_ARG, "config %s: no value", f->name);
    errno = 0;
    switch (f->kind) {
    case LC_FIELD_INT:
    case LC_FIELD_LONG: {
        const long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || (double)v < lo || (double)v > hi)
            return lc_fail(LC_ERR_ARG, "config %s: '%.40s' is not an integer in %.0f..%.0f", f->name, value, lo, hi);
        if (f->kind == LC_FIELD_INT) *(int *)at = (int)v;
        else *(long *)at = (long)v;
        return LC_OK;
    }
    case LC_FIELD_FLOAT: {
        const double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v < lo || v > hi)
            return lc_fail(LC_ERR_ARG, "config %s: '%.40s' is not a number in %g..%g", f->name, value, lo, hi);
        *(float *)at = (float)v;
        return LC_OK;
    }
    case LC_FIELD_BOOL:
    case LC_FIELD_BOOL_OFF: {
        int v;
        if (!lc_field_parse_bool(value, &v)) return lc_fail(LC_ERR_ARG, "config %s: '%.40s' is not a boolean (0/1)", f->name, value);
        *(int *)at = v;
        return LC_OK;
    }
    case LC_FIELD_CHOICE: {
        const int i = lc_choice_index(f->text, value);
        if (i >= 0) return *(int *)at = i, LC_OK;
        char all[160];
        lc_choice_list(f->text, "", all, sizeof all);
        return lc_fail(LC_ERR_ARG, "config %s must be %s, got '%.40s'", f->name, all, value);
    }
    case LC_FIELD_TEXT:
        if (strlen(value) >= f->size)
            return lc_fail(LC_ERR_ARG, "config %s: longer than %zu characters", f->name, f->size - 1);
        strcpy(at, value);
        return LC_OK;
    }
    return lc_fail(LC_ERR_ARG, "config %s: unknown kind %d", f->name, (int)f->kind);
}

lc_status lc_field_set_key(const lc_field *t, int n, void *cfg, const char *key, const char *value) {
    const lc_field *f = lc_field_find(t, n, key);
    if (f) return lc_field_set(f, cfg, value);
    char names[1024];
    size_t len = 0;
    names[0] = 0;
    for (int i = 0; i < n && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", t[i].name);
    return lc_fail(LC_ERR_ARG, "unknown config key '%.60s' (known: %s)", key ? key : "(null)", names);
}

lc_status lc_field_format(const lc_field *f, const void *cfg, char *buf, size_t cap) {
    const char *at = (const char *)cfg + f->offset;
    if (!buf || cap == 0) return lc_fail(LC_ERR_ARG, "config %s: no buffer", f->name);
    int n = -1;
    switch (f->kind) {
    case LC_FIELD_INT: n = snprintf(buf, cap, "%d", *(const int *)at); break;
    case LC_FIELD_LONG: n = snprintf(buf, cap, "%ld", *(const long *)at); break;
    case LC_FIELD_FLOAT: n = snprintf(buf, cap, "%.9g", (double)*(const float *)at); break;
    case LC_FIELD_BOOL:
    case LC_FIELD_BOOL_OFF: n = snprintf(buf, cap, "%d", *(const int *)at != 0); break;
    case LC_FIELD_CHOICE: {
        char name[64];
        lc_choice_name(f->text, *(const int *)at, name, sizeof name);
        n = snprintf(buf, cap, "%s", name[0] ? name : "?");
        break;
    }
    case LC_FIELD_TEXT: n = snprintf(buf, cap, "%s", at); break;
    }
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(LC_ERR_ARG, "config %s: a buffer of %zu bytes is too small", f->name, cap);
    return LC_OK;
}

int lc_field_value_kind(const lc_field *f) {
    switch (f->kind) {
    case LC_FIELD_INT:
    case LC_FIELD_LONG: return 0;
    case LC_FIELD_FLOAT: return 1;
    case LC_FIELD_BOOL:
    case LC_FIELD_BOOL_OFF: return 2;
    default: return 3;
    }
}
